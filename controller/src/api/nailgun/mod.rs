//! Nailgun's operator API, enough of it that Fuel's `fuel2` (python-fuelclient 11.0.0) works unchanged.
//! Served only on the opt-in plain-HTTP listener (`nailgun_listen`, see [`listener`]): Nailgun's paths
//! and record shapes are translated here to Plinth's store and engine, and every path this module does
//! not answer falls through to Plinth's own operator API (never to the agent API). See `docs/FUEL.md`.

pub mod catalog;
pub mod clusters;
pub mod facts;
pub mod graphs;
pub mod keystone;
pub mod listener;
pub mod nodes;
pub mod provisioning_facts;
pub mod records;
pub mod release_data;
pub mod roles;
pub mod transactions;
pub mod unsupported;

use super::error::ApiError;
use super::{body, MAX_OPERATOR_REQUEST_BYTES, OPERATOR_BODY_TIMEOUT};
use crate::state::AppState;
use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{any, get, post, put, MethodRouter};
use axum::Router;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A request's query, every parameter tolerated (Nailgun ignores the ones it does not know).
pub type Params = HashMap<String, String>;

/// Reads a Nailgun boolean parameter: `1`/`0`, `true`/`false`, `yes`/`no` (any case).
pub fn flag(params: &Params, name: &str) -> Result<bool, ApiError> {
    match params.get(name).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) => match v.as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" | "" => Ok(false),
            _ => Err(ApiError::bad_request(format!(
                "`{name}`: {v:?} is not a boolean (1 or 0, true or false)"
            ))),
        },
    }
}

/// Reads an id parameter, if given.
pub fn id_param(params: &Params, name: &str) -> Result<Option<u64>, ApiError> {
    match params.get(name).map(|v| v.trim()) {
        None | Some("") => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("`{name}`: {v:?} is not an id"))),
    }
}

/// Reads a list of ids (`1,2,3`), if given; an empty list is an error naming the parameter.
pub fn node_ids_param(params: &Params, name: &str) -> Result<Option<Vec<u64>>, ApiError> {
    let Some(text) = params.get(name).map(|v| v.trim()) else {
        return Ok(None);
    };
    let ids = text
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("`{name}`: {t:?} is not a node id")))
        })
        .collect::<Result<Vec<u64>, ApiError>>()?;
    if ids.is_empty() {
        return Err(ApiError::bad_request(format!("`{name}` names no node")));
    }
    Ok(Some(ids))
}

fn both(
    router: Router<Arc<AppState>>,
    path: &str,
    route: MethodRouter<Arc<AppState>>,
) -> Router<Arc<AppState>> {
    let trimmed = format!("/api/v1{}", path.trim_end_matches('/'));
    router
        .route(&trimmed, route.clone())
        .route(&format!("{trimmed}/"), route)
}

/// Nailgun's error bodies carry `message` at the top; Plinth's carry it in `error`. Both are kept.
async fn nailgun_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    if !(response.status().is_client_error() || response.status().is_server_error()) {
        return response;
    }
    let json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_OPERATOR_REQUEST_BYTES).await else {
        return Response::from_parts(parts, axum::body::Body::empty());
    };
    let rewritten = match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(mut map)) => {
            let message = map
                .get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map(str::to_string);
            if let (Some(m), false) = (message, map.contains_key("message")) {
                map.insert("message".into(), Value::String(m));
            }
            serde_json::to_vec(&Value::Object(map)).unwrap_or_else(|_| bytes.to_vec())
        }
        _ => bytes.to_vec(),
    };
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(rewritten))
}

/// The router of the `nailgun_listen` port.
pub fn router(state: Arc<AppState>) -> Router {
    let mut r: Router<Arc<AppState>> = Router::new();
    r = both(r, "/version", get(keystone::version));
    r = both(r, "/clusters", get(clusters::list).post(clusters::create));
    r = both(
        r,
        "/clusters/{id}",
        get(clusters::show)
            .put(clusters::update)
            .delete(clusters::delete),
    );
    r = both(r, "/clusters/{id}/reset", put(clusters::reset));
    r = both(
        r,
        "/clusters/{id}/orchestrator/{fact_type}",
        get(facts::uploaded)
            .put(facts::upload)
            .delete(facts::delete),
    );
    r = both(
        r,
        "/clusters/{id}/orchestrator/{fact_type}/defaults",
        get(facts::defaults),
    );
    r = both(
        r,
        "/clusters/{id}/stop_deployment",
        put(clusters::stop_deployment),
    );
    r = both(r, "/clusters/{id}/deploy", put(clusters::deploy_nodes));
    r = both(
        r,
        "/clusters/{id}/provision",
        put(clusters::provision_nodes),
    );
    r = both(
        r,
        "/clusters/{id}/changes/redeploy",
        put(clusters::redeploy),
    );
    // Nailgun's attributes: read in its shape (plugins marked as fuel2 looks for them), changed and
    // defaulted by the operator API's own handlers, so both ports check a change the same way.
    r = both(
        r,
        "/clusters/{id}/attributes",
        get(clusters::attributes)
            .put(super::attributes::replace)
            .patch(super::attributes::patch),
    );
    r = both(
        r,
        "/clusters/{id}/attributes/defaults",
        get(super::attributes::defaults),
    );
    r = both(r, "/clusters/{id}/assignment", post(clusters::assignment));
    r = both(
        r,
        "/clusters/{id}/unassignment",
        post(clusters::unassignment),
    );
    r = both(r, "/clusters/{id}/changes", put(clusters::changes));
    r = both(
        r,
        "/clusters/{id}/deployment_tasks",
        get(graphs::merged_tasks),
    );
    r = both(
        r,
        "/clusters/{id}/deployment_tasks/{level}",
        get(graphs::level_tasks),
    );
    r = both(r, "/nodes", get(nodes::list).delete(nodes::undiscover));
    r = both(r, "/nodes/{id}", get(nodes::show).put(nodes::update));
    r = both(r, "/releases", get(catalog::releases));
    r = both(r, "/releases/{id}", get(catalog::release));
    r = both(
        r,
        "/releases/{id}/attributes_metadata",
        get(release_data::attributes_metadata).put(release_data::put_attributes_metadata),
    );
    r = both(
        r,
        "/releases/{id}/components",
        get(release_data::components),
    );
    r = both(r, "/extensions", get(release_data::extensions));
    r = both(
        r,
        "/clusters/{id}/extensions",
        get(release_data::cluster_extensions),
    );
    for (path, offered) in unsupported::PATHS {
        r = both(r, path, any(move || unsupported::answer(offered)));
    }
    r = both(r, "/plugins", get(catalog::plugins));
    r = both(r, "/plugins/sync", post(crate::api::plugin_sync::sync));
    r = both(r, "/{kind}/{id}/deployment_graphs", get(graphs::list));
    r = both(
        r,
        "/{kind}/{id}/deployment_graphs/{graph_type}",
        get(graphs::show)
            .post(graphs::create)
            .put(graphs::update)
            .delete(graphs::delete),
    );
    r = both(r, "/graphs", get(graphs::all));
    r = both(r, "/graphs/execute", post(graphs::execute));
    r = both(r, "/transactions", get(transactions::list));
    r = both(r, "/transactions/{id}", get(transactions::show));
    r = both(
        r,
        "/transactions/{id}/deployment_history",
        get(transactions::history),
    );
    r = both(
        r,
        "/transactions/{id}/deployment_info",
        get(transactions::deployment_info),
    );
    r = both(
        r,
        "/transactions/{id}/settings",
        get(transactions::settings),
    );
    r = both(
        r,
        "/{kind}/{id}/tags",
        get(catalog::tags).post(catalog::create_tag),
    );
    r = both(
        r,
        "/{kind}/{id}/tags/{name}",
        get(catalog::tag)
            .put(catalog::update_tag)
            .delete(catalog::delete_tag),
    );
    r = both(
        r,
        "/{kind}/{id}/roles",
        get(catalog::roles).post(roles::create),
    );
    r = both(
        r,
        "/{kind}/{id}/roles/{name}",
        get(catalog::role).put(roles::update).delete(roles::delete),
    );
    let r = r.route_layer(middleware::from_fn(|req, next| {
        body::read_whole(req, next, MAX_OPERATOR_REQUEST_BYTES, OPERATOR_BODY_TIMEOUT)
    }));
    let (ostf, offered) = unsupported::OSTF;
    let r = r
        .route(ostf, any(move || unsupported::answer(offered)))
        .route("/keystone/v2.0/tokens", post(keystone::tokens))
        .route("/keystone/v2.0/tokens/", post(keystone::tokens));
    let plinth = Router::new()
        .nest("/api/v1", super::operator_api())
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .with_state(state.clone());
    r.fallback_service(plinth)
        .layer(middleware::from_fn(nailgun_errors))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_read_as_nailgun_writes_them() {
        let p: Params = [("a", "1"), ("b", "0"), ("c", "True"), ("d", "maybe")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(flag(&p, "a").unwrap());
        assert!(!flag(&p, "b").unwrap());
        assert!(flag(&p, "c").unwrap());
        assert!(!flag(&p, "missing").unwrap());
        let err = flag(&p, "d").unwrap_err();
        assert!(err.message.contains("`d`"), "{}", err.message);
    }
}
