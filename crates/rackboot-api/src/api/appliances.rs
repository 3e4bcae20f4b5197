//! `/api/v1/appliances`: the appliances of the estate (one, or all those sharing the store).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::cmdb::ApplianceView;

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// The appliances of the estate.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ApplianceList {
    pub appliances: Vec<ApplianceView>,
}

/// Every appliance sharing this CMDB (on PostgreSQL): where each answers, its version, when it
/// last beat, and its DHCP pair role; on the embedded store, this appliance alone.
#[utoipa::path(get, path = "/appliances", tag = "appliances",
    responses((status = 200, description = "The appliances", body = ApplianceList)))]
async fn list(State(s): State<ApiState>) -> Result<Json<ApplianceList>, ApiError> {
    Ok(Json(ApplianceList { appliances: s.cmdb.appliances().await? }))
}
