//! `/api/v1/enrollments`: servers enrolled before they boot (from Plinth's or Ironic's enrollment
//! files), released to a new agent key, deleted. BMC passwords go in and never come out.

use super::auth::Operator;
use super::error::{ApiError, Json, Query};
use crate::clock::now_ms;
use crate::enrollment::file::{self, Format};
use crate::enrollment::StoredBmcError;
use crate::power::{self, PowerError};
use crate::state::AppState;
use crate::store::{BootTarget, EnrollmentRecord};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_api::enrollment::{
    BootDevice, BootDeviceRequest, BootMode, EnrollAnswer, PowerAction, PowerAnswer, PowerRequest,
};
use serde::Deserialize;
use std::sync::Arc;

/// `?format=` of `POST /enrollments`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrollQuery {
    /// `plinth` or `ironic`; guessed from the file when absent.
    #[serde(default)]
    pub format: Option<String>,
}

/// `POST /api/v1/enrollments`: the body is an enrollment file, YAML or JSON, in Plinth's format or
/// Ironic's. All of its servers are enrolled, or none.
#[utoipa::path(
    post,
    path = "/enrollments/",
    tag = "enrollments",
    params(("format" = Option<String>, Query, description = "plinth or ironic; guessed when absent")),
    request_body(content = String, description = "an enrollment file (YAML or JSON)"),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 201, description = "enrolled", body = plinth_api::enrollment::EnrollAnswer),
        (status = "4XX", description = "refused: the error names the node and field", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn enroll(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Query(q): Query<EnrollQuery>,
    body: Bytes,
) -> Result<(StatusCode, Json<EnrollAnswer>), ApiError> {
    let format = match q.format.as_deref() {
        None => None,
        Some(name) => Some(Format::parse(name).ok_or_else(|| {
            ApiError::bad_request(format!("format {name:?} is not plinth or ironic"))
        })?),
    };
    let text = std::str::from_utf8(&body)
        .map_err(|_| ApiError::bad_request("the enrollment file is not UTF-8 text"))?;
    let (format, nodes) = file::read(text, format).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_enrollment",
            e.to_string(),
        )
    })?;
    state
        .blocking(move |s| {
            let sealer = s.keys.sealer();
            let now = now_ms();
            let new = nodes
                .into_iter()
                .map(|n| crate::enrollment::to_new(n, &sealer, now))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ApiError::internal(e.to_string()))?;
            let enrolled = s.store.enroll(&new)?;
            let names: Vec<&str> = enrolled.iter().map(|e| e.name.as_str()).collect();
            tracing::info!(by = %op.name, format = format.as_str(), servers = ?names, "servers enrolled");
            Ok((
                StatusCode::CREATED,
                Json(EnrollAnswer {
                    format: format.as_str().to_string(),
                    enrolled,
                }),
            ))
        })
        .await
}

/// `GET /api/v1/enrollments`.
#[utoipa::path(
    get,
    path = "/enrollments/",
    tag = "enrollments",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "every enrolled server", body = Vec<plinth_api::enrollment::EnrollmentRecord>),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Vec<EnrollmentRecord>>, ApiError> {
    state
        .blocking(|s| Ok(Json(s.store.list_enrollments()?)))
        .await
}

/// `GET /api/v1/enrollments/{name}`.
#[utoipa::path(
    get,
    path = "/enrollments/{name}/",
    tag = "enrollments",
    params(("name" = String, Path, description = "the enrolled server's name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "the enrolled server", body = plinth_api::enrollment::EnrollmentRecord),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(name): Path<String>,
) -> Result<Json<EnrollmentRecord>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.get_enrollment(&name)?)))
        .await
}

/// `DELETE /api/v1/enrollments/{name}`: the server is forgotten (with its BMC password); its node, if
/// an agent became one, stays.
#[utoipa::path(
    delete,
    path = "/enrollments/{name}/",
    tag = "enrollments",
    params(("name" = String, Path, description = "the enrolled server's name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "deleted"),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn delete(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .blocking(move |s| {
            s.store.delete_enrollment(&name)?;
            tracing::info!(by = %op.name, server = %name, "enrollment deleted");
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}

/// `POST /api/v1/enrollments/{name}/release`: the next agent that claims the server takes its node,
/// with a new key (a server reinstalled, or booted into a fresh discovery image by hand).
#[utoipa::path(
    post,
    path = "/enrollments/{name}/release/",
    tag = "enrollments",
    params(("name" = String, Path, description = "the enrolled server's name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "released", body = plinth_api::enrollment::EnrollmentRecord),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn release(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Path(name): Path<String>,
) -> Result<Json<EnrollmentRecord>, ApiError> {
    state
        .blocking(move |s| {
            let e = s.store.set_enrollment_boot(&name, true, None)?;
            tracing::info!(by = %op.name, server = %name, "enrolled server released to a new agent key");
            Ok(Json(e))
        })
        .await
}

/// A failed power action or read as an answer: the BMC's own failures are 502 (its kind in the code),
/// 504 when it did not answer in time; a server enrolled without a BMC is 409.
fn power_error(e: PowerError) -> ApiError {
    use plinth_bmc::BmcError;
    match e {
        PowerError::Store(e) => e.into(),
        PowerError::Stored(e @ StoredBmcError::NoBmc(_)) => ApiError::conflict(e.to_string()),
        PowerError::Stored(e) => ApiError::internal(e.to_string()),
        PowerError::Bmc(e) => {
            let (status, code) = match &e {
                BmcError::Timeout { .. } => (StatusCode::GATEWAY_TIMEOUT, "bmc_timeout"),
                BmcError::Credentials { .. } => (StatusCode::BAD_GATEWAY, "bmc_credentials"),
                BmcError::Unreachable { .. } => (StatusCode::BAD_GATEWAY, "bmc_unreachable"),
                _ => (StatusCode::BAD_GATEWAY, "bmc_failed"),
            };
            ApiError::new(status, code, e.to_string())
        }
    }
}

/// Reads the server's power state from its BMC now, records it (or the failure), and answers it.
async fn read_and_record(
    state: &Arc<AppState>,
    e: &EnrollmentRecord,
    bmc: &plinth_bmc::Bmc,
) -> Result<PowerAnswer, ApiError> {
    let read = power::read_state(bmc).await;
    let reading = power::reading(
        e.id,
        read.as_ref().map(|s| *s).map_err(|e| e.to_string()),
        now_ms(),
    );
    let power = reading.power.clone();
    state
        .blocking(move |s| Ok(s.store.record_power(&[reading])?))
        .await?;
    read.map_err(|e| power_error(e.into()))?;
    Ok(PowerAnswer {
        name: e.name.clone(),
        power,
    })
}

async fn connected(
    state: &Arc<AppState>,
    name: String,
) -> Result<(EnrollmentRecord, plinth_bmc::Bmc), ApiError> {
    state
        .blocking(move |s| {
            let timeout = s.config().power.timeout;
            power::connect(s.store.as_ref(), &s.keys.sealer(), timeout, &name).map_err(power_error)
        })
        .await
}

/// `GET /api/v1/enrollments/{name}/power`: the power state read from the BMC now.
#[utoipa::path(
    get,
    path = "/enrollments/{name}/power/",
    tag = "enrollments",
    params(("name" = String, Path, description = "the enrolled server's name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "its power state now", body = plinth_api::enrollment::PowerAnswer),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody),
        (status = "5XX", description = "the BMC failed or did not answer", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn power_status(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(name): Path<String>,
) -> Result<Json<PowerAnswer>, ApiError> {
    let (e, bmc) = connected(&state, name).await?;
    Ok(Json(read_and_record(&state, &e, &bmc).await?))
}

/// `PUT /api/v1/enrollments/{name}/power`: power on, off, soft off or reset through the BMC.
#[utoipa::path(
    put,
    path = "/enrollments/{name}/power/",
    tag = "enrollments",
    params(("name" = String, Path, description = "the enrolled server's name")),
    request_body = plinth_api::enrollment::PowerRequest,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "done; its power state read after", body = plinth_api::enrollment::PowerAnswer),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody),
        (status = "5XX", description = "the BMC failed or did not answer", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn power_action(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Path(name): Path<String>,
    Json(req): Json<PowerRequest>,
) -> Result<Json<PowerAnswer>, ApiError> {
    let (e, bmc) = connected(&state, name).await?;
    let action = match req.action {
        PowerAction::On => plinth_bmc::PowerAction::On,
        PowerAction::Off => plinth_bmc::PowerAction::Off,
        PowerAction::SoftOff => plinth_bmc::PowerAction::SoftOff,
        PowerAction::Reset => plinth_bmc::PowerAction::Reset,
    };
    if let Err(err) = bmc.power(action).await {
        tracing::warn!(by = %op.name, server = %e.name, action = ?req.action, error = %err, "power action failed");
        return Err(power_error(err.into()));
    }
    tracing::info!(by = %op.name, server = %e.name, action = ?req.action, "power action sent");
    Ok(Json(read_and_record(&state, &e, &bmc).await?))
}

/// `PUT /api/v1/enrollments/{name}/boot-device`: the device it boots from next (or from now on), set
/// in its BMC and in what the boot listener answers it. Set to the network, the server is open to a
/// new agent key: the discovery image it boots makes one.
#[utoipa::path(
    put,
    path = "/enrollments/{name}/boot-device/",
    tag = "enrollments",
    params(("name" = String, Path, description = "the enrolled server's name")),
    request_body = plinth_api::enrollment::BootDeviceRequest,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "set", body = plinth_api::enrollment::EnrollmentRecord),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody),
        (status = "5XX", description = "the BMC failed or did not answer", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn boot_device(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Path(name): Path<String>,
    Json(req): Json<BootDeviceRequest>,
) -> Result<Json<EnrollmentRecord>, ApiError> {
    let (e, bmc) = connected(&state, name).await?;
    let e = set_boot(&state, e, Some(bmc), &req).await?;
    tracing::info!(by = %op.name, server = %e.name, device = ?req.device, once = req.once, "boot device set");
    Ok(Json(e))
}

/// Sets where an enrolled server boots next: in its BMC (when given), and in what the boot listener
/// answers it. Set to the network, the server is open to a new agent key: the discovery image it boots
/// makes one.
async fn set_boot(
    state: &Arc<AppState>,
    e: EnrollmentRecord,
    bmc: Option<plinth_bmc::Bmc>,
    req: &BootDeviceRequest,
) -> Result<EnrollmentRecord, ApiError> {
    if let Some(bmc) = bmc {
        let device = match req.device {
            BootDevice::Pxe => plinth_bmc::BootDevice::Pxe,
            BootDevice::Disk => plinth_bmc::BootDevice::Disk,
        };
        let mode = req.mode.or(e.profile.boot_mode).map(|m| match m {
            BootMode::Uefi => plinth_bmc::BootMode::Uefi,
            BootMode::Legacy => plinth_bmc::BootMode::Legacy,
        });
        bmc.set_boot_device(device, req.once, mode)
            .await
            .map_err(|err| power_error(err.into()))?;
    }
    let (rekey, target) = match req.device {
        BootDevice::Pxe => (true, BootTarget::Discovery),
        BootDevice::Disk => (e.rekey, BootTarget::Disk),
    };
    let name = e.name.clone();
    state
        .blocking(move |s| Ok(s.store.set_enrollment_boot(&name, rekey, Some(target))?))
        .await
}

/// `POST /agent/v1/boot`: a node's agent asks that its server boot from the network or its disk next
/// (`boot_device` and `move_to_bootstrap` tasks). The server is the enrollment bound to the node; its
/// BMC is set when it has one, and the boot listener's answer always. A node that is no enrolled
/// server is refused (404): the controller cannot choose how it boots.
pub async fn agent_boot(
    State(state): State<Arc<AppState>>,
    agent: crate::api::auth::Agent,
    Json(req): Json<plinth_common::wire::BootRequest>,
) -> Result<Json<plinth_common::wire::BootAnswer>, ApiError> {
    let node_id = agent.node.id;
    let e = state
        .blocking(move |s| Ok(s.store.node_enrollment(node_id)?))
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "node {} is no enrolled server: the controller cannot choose how it boots (enroll it \
                 with `plinthctl nodes enroll`, or boot it from the network first)",
                agent.node.id
            ))
        })?;
    let bmc = match e.bmc {
        Some(_) => Some(connected(&state, e.name.clone()).await?.1),
        None => None,
    };
    let has_bmc = bmc.is_some();
    let device = match req.device {
        plinth_common::wire::NextBoot::Pxe => BootDevice::Pxe,
        plinth_common::wire::NextBoot::Disk => BootDevice::Disk,
    };
    let request = BootDeviceRequest {
        device,
        once: req.once,
        mode: None,
    };
    let e = set_boot(&state, e, bmc, &request).await?;
    let what = match req.device {
        plinth_common::wire::NextBoot::Pxe => "the network (its discovery image)",
        plinth_common::wire::NextBoot::Disk => "its disk",
    };
    let how = if has_bmc {
        "through its BMC and the boot listener"
    } else {
        "through the boot listener's answer (no BMC enrolled)"
    };
    let once = if req.once { " for the next boot" } else { "" };
    tracing::info!(node = node_id, server = %e.name, device = ?req.device, once = req.once, bmc = has_bmc, "a node's agent set its boot device");
    Ok(Json(plinth_common::wire::BootAnswer {
        bmc: has_bmc,
        message: format!("{} boots from {what}{once}, set {how}", e.name),
    }))
}
