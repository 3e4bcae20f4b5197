//! `/api/v1/quarantine` (admin): records that did not decode at a start, moved aside with their
//! bytes kept so the rest of the appliance could start (see `cmdb::quarantine`).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::cmdb::quarantine::Quarantined;

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list, clear))
}

/// The quarantine (at most 1,000 records shown).
#[derive(Serialize, Deserialize, ToSchema)]
pub struct QuarantineList {
    pub records: Vec<Quarantined>,
}

/// How many records a clear dropped.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct Cleared {
    pub cleared: u64,
}

/// Records that did not decode at a start and were moved aside (table, key, size).
#[utoipa::path(get, path = "/quarantine", tag = "quarantine",
    responses((status = 200, description = "The quarantined records", body = QuarantineList),
        (status = 403, description = "Needs role admin", body = super::Problem, content_type = "application/problem+json")))]
async fn list(State(s): State<ApiState>) -> Result<Json<QuarantineList>, ApiError> {
    Ok(Json(QuarantineList { records: s.cmdb.quarantine().await? }))
}

/// Drops every quarantined record (once an admin has dealt with them, e.g. from a backup);
/// `/healthz` stops reporting them.
#[utoipa::path(delete, path = "/quarantine", tag = "quarantine",
    responses((status = 200, description = "The quarantine is empty", body = Cleared),
        (status = 403, description = "Needs role admin", body = super::Problem, content_type = "application/problem+json")))]
async fn clear(State(s): State<ApiState>) -> Result<Json<Cleared>, ApiError> {
    Ok(Json(Cleared { cleared: s.cmdb.clear_quarantine().await? }))
}
