//! `/api/v1/machines/{id}/firmware`: what the machine's BMC (Redfish) says of its firmware: the
//! BIOS's attributes and those pending a reboot, the BIOS version and the firmware inventory,
//! each where the BMC offers it. `POST` reads it now (an operator's); `GET` shows the last read.

use axum::extract::{Path, State};
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::bmc::{power_error, service};
use super::machines::resolve;
use super::{ApiError, ApiState};
use rackboot_model::firmware::FirmwareReport;

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(show, read))
}

/// The last firmware read of the machine's BMC.
#[utoipa::path(get, path = "/machines/{id}/firmware", tag = "power",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The last read", body = FirmwareReport),
        (status = 404, description = "No such machine, no BMC, or never read", body = super::Problem, content_type = "application/problem+json")))]
async fn show(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<FirmwareReport>, ApiError> {
    let m = resolve(&s, &key).await?;
    let b = s.cmdb.bmc(m.id).await?.ok_or_else(|| ApiError::not_found(format!("machine {} has no BMC", m.id)))?;
    let never = || ApiError::not_found(format!("machine {}'s firmware was never read: POST to read it", m.id));
    b.firmware.map(Json).ok_or_else(never)
}

/// Reads the machine's firmware through its BMC now (Redfish: `Bios`, its settings object and
/// `UpdateService/FirmwareInventory`), keeps it and answers it. A part the BMC does not offer
/// is absent; IPMI offers none (409).
#[utoipa::path(post, path = "/machines/{id}/firmware", tag = "power",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "Read now", body = FirmwareReport),
        (status = 409, description = "No BMC, or an IPMI one", body = super::Problem, content_type = "application/problem+json"),
        (status = 502, description = "The BMC refused or failed", body = super::Problem, content_type = "application/problem+json"),
        (status = 504, description = "The BMC did not answer in time", body = super::Problem, content_type = "application/problem+json")))]
async fn read(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<FirmwareReport>, ApiError> {
    let power = service(&s)?;
    let m = resolve(&s, &key).await?;
    if let Some(b) = s.cmdb.bmc(m.id).await? {
        if b.protocol == crate::bmc::Protocol::Ipmi {
            return Err(ApiError::conflict(
                "IPMI has no BIOS attributes or firmware inventory to read: set the machine's BMC as Redfish",
            ));
        }
    }
    power.firmware(m.id).await.map(Json).map_err(|e| power_error(e, m.id))
}
