//! `/api/v1/machines/{id}/bmc` (a machine's BMC; the password goes in, never out) and
//! `/api/v1/machines/{id}/power` (power actions through it, verified by reading back).

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use std::sync::Arc;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::machines::resolve;
use super::{ApiError, ApiState};
use crate::bmc::power::{Caller, PowerError};
use crate::bmc::{Bmc, BmcError, BmcInput, BmcView, Power, PowerAction, PowerOutcome};
use crate::cmdb::{now_ms, now_secs};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(show, set, remove)).routes(routes!(power)).routes(routes!(inband))
}

pub(super) fn service(s: &ApiState) -> Result<&Arc<Power>, ApiError> {
    s.power.as_ref().ok_or_else(|| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "power control is not running"))
}

/// A machine's BMC: everything but the password, with the last power state and its age.
#[utoipa::path(get, path = "/machines/{id}/bmc", tag = "power",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The BMC", body = BmcView),
        (status = 404, description = "No such machine, or it has no BMC", body = super::Problem, content_type = "application/problem+json")))]
async fn show(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<BmcView>, ApiError> {
    let m = resolve(&s, &key).await?;
    let b = s.cmdb.bmc(m.id).await?.ok_or_else(|| ApiError::not_found(format!("machine {} has no BMC", m.id)))?;
    Ok(Json(b.view(now_ms())))
}

/// Sets a machine's BMC. The password is sealed at rest and never shown; left out, the stored
/// one is kept. TLS (Redfish): `fingerprint` pins the certificate, `insecure` accepts any (shown
/// as a warning), neither requires one from the appliance CA.
#[utoipa::path(put, path = "/machines/{id}/bmc", tag = "power", request_body = BmcInput,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The BMC as stored", body = BmcView),
        (status = 400, description = "A field is out of bounds", body = super::Problem, content_type = "application/problem+json")))]
async fn set(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<BmcInput>, JsonRejection>,
) -> Result<Json<BmcView>, ApiError> {
    let Json(input) = body?;
    let tls = input.validate().map_err(|(field, why)| ApiError::field(field, why))?;
    let power = service(&s)?;
    let m = resolve(&s, &key).await?;
    let sealed = match &input.password {
        Some(p) => power.seal(m.id, p).map_err(|e| ApiError::internal(format!("sealing the password: {e}")))?,
        None => String::new(),
    };
    let b = Bmc {
        machine_id: m.id,
        address: input.address,
        protocol: input.protocol,
        username: input.username,
        password_sealed: sealed,
        tls,
        system_id: input.system_id,
        boot_mode: input.boot_mode,
        power: None,
        updated_at: now_secs(),
        firmware: None,
        inband: None,
        boot_via: input.boot_via,
    };
    let stored = s.cmdb.put_bmc(b, input.password.is_none()).await.map_err(|e| match e {
        crate::cmdb::CmdbError::Invalid(why) => ApiError::field("password", why),
        e => e.into(),
    })?;
    Ok(Json(stored.view(now_ms())))
}

/// Removes a machine's BMC (and its sealed password).
#[utoipa::path(delete, path = "/machines/{id}/bmc", tag = "power",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 204, description = "Removed"),
        (status = 404, description = "No such machine, or it has no BMC", body = super::Problem, content_type = "application/problem+json")))]
async fn remove(State(s): State<ApiState>, Path(key): Path<String>) -> Result<StatusCode, ApiError> {
    let m = resolve(&s, &key).await?;
    s.cmdb.delete_bmc(m.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sets up, or gives a new password to, the appliance's own account on the machine's BMC, in
/// band: queues a `bmc_account` job for its agent (BootOS has ipmitool), which makes a random
/// password, sets the user up (`bmc.inband_username`, administrator on `bmc.inband_channel`)
/// and reports it to the appliance alone; sealed, it makes that account the machine's BMC
/// (`bmc.inband` on the timeline). The password is never shown.
#[utoipa::path(post, path = "/machines/{id}/bmc/inband", tag = "power",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 202, description = "Queued: the job", body = crate::jobs::Job),
        (status = 404, description = "No such machine", body = super::Problem, content_type = "application/problem+json"),
        (status = 503, description = "Power control is not running", body = super::Problem, content_type = "application/problem+json")))]
async fn inband(
    State(s): State<ApiState>,
    Path(key): Path<String>,
) -> Result<(StatusCode, Json<crate::jobs::Job>), ApiError> {
    let power = service(&s)?;
    let m = resolve(&s, &key).await?;
    let job = crate::bmc::inband::queue(&s.cmdb, power.config(), m.id).await?;
    s.hub.wake(m.id);
    Ok((StatusCode::ACCEPTED, Json(job)))
}

/// A power action.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PowerRequest {
    pub action: PowerAction,
    /// For `pxe-once`: boot in UEFI mode (else legacy BIOS).
    #[serde(default)]
    pub uefi: bool,
}

/// Runs a power action through the machine's BMC and verifies it by reading the state back
/// (`off`: graceful, then forced after `bmc.soft_off_timeout_secs`; `cycle`: the BMC's restart,
/// or off + on where that fails). Waits for the result. Refused credentials fail at once and
/// are not tried again for `bmc.auth_hold_secs` unless the BMC record changes.
#[utoipa::path(post, path = "/machines/{id}/power", tag = "power", request_body = PowerRequest,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "Done and verified", body = PowerOutcome),
        (status = 409, description = "The machine has no BMC", body = super::Problem, content_type = "application/problem+json"),
        (status = 502, description = "The BMC refused or failed (the detail says how)", body = super::Problem, content_type = "application/problem+json"),
        (status = 504, description = "The BMC did not answer in time", body = super::Problem, content_type = "application/problem+json")))]
async fn power(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<PowerRequest>, JsonRejection>,
) -> Result<Json<PowerOutcome>, ApiError> {
    let Json(req) = body?;
    let power = service(&s)?;
    let m = resolve(&s, &key).await?;
    power.act(m.id, req.action, req.uefi, Caller::Operator).await.map(Json).map_err(|e| power_error(e, m.id))
}

/// A power service error as the API answers it: no BMC or a password that does not open 409,
/// the BMC's refusal or failure 502, its silence 504.
pub(super) fn power_error(e: PowerError, id: u64) -> ApiError {
    match e {
        PowerError::NoBmc(_) => ApiError::conflict(format!("{e}: set one with PUT /api/v1/machines/{id}/bmc")),
        PowerError::Cmdb(c) => c.into(),
        PowerError::Sealed(_) => ApiError::conflict(e.to_string()),
        PowerError::Bmc { error: BmcError::Timeout(_), .. } => {
            ApiError::new(StatusCode::GATEWAY_TIMEOUT, e.to_string())
        }
        PowerError::Bmc { .. } => ApiError::new(StatusCode::BAD_GATEWAY, e.to_string()),
    }
}
