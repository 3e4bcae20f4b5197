//! `/api/v1/machines/{id}/pool`: an admin moves a machine to another resource pool (a rack's
//! pool is its machines' at placement; see `rackboot_model::pools`).

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

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(move_machine))
}

/// The pool to move a machine to.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PoolMove {
    /// A lowercase DNS label of 1 to 32 characters.
    #[schema(pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")]
    pool: String,
}

/// Moves a machine to another resource pool (admin). Placing it in a rack later moves it to
/// the rack's pool.
#[utoipa::path(put, path = "/machines/{id}/pool", tag = "machines", request_body = PoolMove,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The machine in its pool", body = Machine),
        (status = 400, description = "Not a pool name", body = super::Problem, content_type = "application/problem+json")))]
async fn move_machine(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<PoolMove>, JsonRejection>,
) -> Result<Json<Machine>, ApiError> {
    let Json(PoolMove { pool }) = body?;
    rackboot_model::pools::check(&pool).map_err(|e| ApiError::field("pool", e))?;
    let m = resolve(&s, &key).await?;
    super::scope::touched(&pool);
    Ok(Json(s.cmdb.set_machine_pool(m.id, pool).await?.shown()))
}
