//! Probes for load balancers, orchestrators and service managers, on the TLS port, with no token and no
//! data in the answer:
//! - `GET /healthz`: the process answers (200, `ok`);
//! - `GET /readyz`: it can serve: its database answers a read within [`READY_WITHIN`] and has exactly
//!   the migrations this controller knows (200), else 503 naming which check failed. The answer also
//!   says whether this controller sequences deployments (several controllers share the work: each one
//!   serves agents and operators, only the lease holder sequences, so this does not change readiness).

use crate::state::AppState;
use crate::store::Store;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// How long the database may take to answer a readiness check.
pub const READY_WITHIN: Duration = Duration::from_secs(5);

/// `GET /healthz`.
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// What `/readyz` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Readiness {
    /// Every check passed.
    pub ready: bool,
    /// The database: `ok`, `unreachable` or `slow` (no answer within [`READY_WITHIN`]).
    pub database: &'static str,
    /// The migrations: `applied`, `pending` (the database is older), `newer` (a newer controller
    /// migrated it) or `unknown` (the database did not answer).
    pub migrations: &'static str,
    /// Whether this controller sequences deployments now.
    pub sequencing: bool,
}

/// The checks `/readyz` makes, with the store's answer (blocking: run it off the async threads).
pub fn readiness(store: &dyn Store, sequencing: bool) -> Readiness {
    let (database, migrations) = match store.schema_versions() {
        Ok(v) if v.database == v.controller => ("ok", "applied"),
        Ok(v) if v.database < v.controller => ("ok", "pending"),
        Ok(_) => ("ok", "newer"),
        Err(e) => {
            tracing::warn!(error = %e, "readiness: the database does not answer");
            ("unreachable", "unknown")
        }
    };
    Readiness {
        ready: database == "ok" && migrations == "applied",
        database,
        migrations,
        sequencing,
    }
}

/// `GET /readyz`.
pub async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let sequencing = state.engine.is_sequencing();
    // On the workers, as every request that reads the database: a flood of probes queues behind the
    // rest instead of adding threads, and a controller whose workers are all busy is not ready.
    let check = state.blocking(move |s| Ok(readiness(s.store.as_ref(), sequencing)));
    let answer = match tokio::time::timeout(READY_WITHIN, check).await {
        Ok(Ok(r)) => r,
        _ => Readiness {
            ready: false,
            database: "slow",
            migrations: "unknown",
            sequencing,
        },
    };
    let status = if answer.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(answer)).into_response()
}
