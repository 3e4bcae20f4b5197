//! `/api/v1/machines/{id}/placement`: an operator says which rack slot a machine is in (over
//! every other evidence: it is named, addressed and, with `auto_provision`, provisioned as that
//! slot), or withdraws it. This is how a node's own claim (its LLDP neighbour, its serial in a
//! rack's CSV), shown on the rack page, becomes a placement in a rack that does not trust LLDP.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::machines::resolve;
use super::{ApiError, ApiState};
use crate::cmdb::Machine;
use crate::racks::place::Claim;
use crate::racks::{self, MAX_SLOTS};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(confirm, withdraw))
}

/// Where the operator says the machine is.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlacementBody {
    /// A rack's name.
    #[schema(pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")]
    pub rack: String,
    /// Its slot (U1-U64).
    #[schema(minimum = 1, maximum = 64)]
    pub slot: u32,
}

/// Places the machine in the rack's slot, as the operator says: it takes the slot's hostname
/// and address (where no other machine holds them) and the rack's user-data and provisioning.
#[utoipa::path(put, path = "/machines/{id}/placement", tag = "racks", request_body = PlacementBody,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The machine as now placed", body = Machine),
        (status = 400, description = "A bad rack name or slot", body = super::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such machine or rack", body = super::Problem, content_type = "application/problem+json")))]
async fn confirm(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<PlacementBody>, JsonRejection>,
) -> Result<Json<Machine>, ApiError> {
    let Json(PlacementBody { rack, slot }) = body?;
    racks::check_name(&rack).map_err(|e| ApiError::field("rack", e))?;
    if !(1..=MAX_SLOTS).contains(&slot) {
        return Err(ApiError::field("slot", format!("slot {slot} is not in 1-{MAX_SLOTS}")));
    }
    let m = resolve(&s, &key).await?;
    Ok(Json(confirm_placement(&s, m.id, Some(Claim { rack, slot, port: None })).await?))
}

/// Withdraws what an operator said: the machine's evidence places it again (or nothing does).
#[utoipa::path(delete, path = "/machines/{id}/placement", tag = "racks",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The machine as now placed", body = Machine)))]
async fn withdraw(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<Machine>, ApiError> {
    let m = resolve(&s, &key).await?;
    Ok(Json(confirm_placement(&s, m.id, None).await?))
}

/// Stores the operator's word and, now that the machine is placed, queues its rack's
/// provisioning if it is due. The web UI's confirm button calls this too.
pub async fn confirm_placement(s: &ApiState, id: u64, at: Option<Claim>) -> Result<Machine, ApiError> {
    let m = s.cmdb.confirm_placement(id, at).await?;
    // The rack's pool, which the machine joins.
    super::scope::touched(&m.pool);
    if let Err(error) = crate::racks::provision::queue_if_due(&s.hub.cmdb, s.engine.as_deref(), id).await {
        tracing::warn!(machine = id, %error, "rack provisioning not queued");
    }
    Ok(s.cmdb.machine(m.id).await?)
}
