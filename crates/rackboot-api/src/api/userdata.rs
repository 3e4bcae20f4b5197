//! cloud-init user-data of a machine (`/machines/{id}/user-data`) or a rack
//! (`/racks/{name}/user-data`); a task's comes with the task (`user_data`). Stored apart from
//! the records, read back only by an operator (the role table) and by the machine itself
//! (`/boot/cloud-init/`); the audit log records the call, never the text.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::machines::resolve;
use super::{ApiError, ApiState};
use crate::cmdb::userdata::Owner;
use rackboot_model::cloudinit::check_user_data;

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(machine_get, machine_put, machine_delete)).routes(routes!(
        rack_get,
        rack_put,
        rack_delete
    ))
}

/// User-data: `#cloud-config`, a `#!` script, `#include`, `#cloud-boothook` or MIME multipart;
/// at most 64 KiB.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserDataBody {
    #[schema(max_length = 65536)]
    pub text: String,
    /// Unix seconds of the last save (answers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<u64>,
}

async fn get(s: &ApiState, owner: Owner) -> Result<Json<UserDataBody>, ApiError> {
    match s.cmdb.user_data(owner).await? {
        Some(u) => Ok(Json(UserDataBody { text: u.text, changed_at: Some(u.changed_at) })),
        None => Err(ApiError::not_found("no user-data set")),
    }
}

async fn put(s: &ApiState, owner: Owner, body: UserDataBody) -> Result<StatusCode, ApiError> {
    check_user_data(&body.text).map_err(|e| ApiError::field("text", e))?;
    s.cmdb.set_user_data(owner, Some(body.text)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn delete(s: &ApiState, owner: Owner) -> Result<StatusCode, ApiError> {
    match s.cmdb.set_user_data(owner, None).await? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::not_found("no user-data set")),
    }
}

async fn rack_owner(s: &ApiState, name: String) -> Result<Owner, ApiError> {
    Ok(Owner::Rack(s.cmdb.rack(name).await?.name))
}

/// A machine's cloud-init user-data (wins over its task's and its rack's).
#[utoipa::path(get, path = "/machines/{id}/user-data", tag = "cloud-init",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The user-data", body = UserDataBody),
        (status = 404, description = "None set", body = super::Problem, content_type = "application/problem+json")))]
async fn machine_get(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<UserDataBody>, ApiError> {
    let m = resolve(&s, &key).await?;
    get(&s, Owner::Machine(m.id)).await
}

/// Sets a machine's user-data; its next install's cloud-init gets it.
#[utoipa::path(put, path = "/machines/{id}/user-data", tag = "cloud-init", request_body = UserDataBody,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 204, description = "Stored"),
        (status = 400, description = "Too long, or not a cloud-init format", body = super::Problem, content_type = "application/problem+json")))]
async fn machine_put(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<UserDataBody>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let Json(body) = body?;
    let m = resolve(&s, &key).await?;
    put(&s, Owner::Machine(m.id), body).await
}

/// Removes a machine's user-data (its task's or rack's applies).
#[utoipa::path(delete, path = "/machines/{id}/user-data", tag = "cloud-init",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 204, description = "Removed"),
        (status = 404, description = "None set", body = super::Problem, content_type = "application/problem+json")))]
async fn machine_delete(State(s): State<ApiState>, Path(key): Path<String>) -> Result<StatusCode, ApiError> {
    let m = resolve(&s, &key).await?;
    delete(&s, Owner::Machine(m.id)).await
}

/// A rack's user-data: what its machines get when neither they nor their task have any.
#[utoipa::path(get, path = "/racks/{name}/user-data", tag = "cloud-init",
    params(("name" = String, Path, description = "Rack name")),
    responses((status = 200, description = "The user-data", body = UserDataBody),
        (status = 404, description = "No such rack, or none set", body = super::Problem, content_type = "application/problem+json")))]
async fn rack_get(State(s): State<ApiState>, Path(name): Path<String>) -> Result<Json<UserDataBody>, ApiError> {
    let owner = rack_owner(&s, name).await?;
    get(&s, owner).await
}

/// Sets a rack's user-data.
#[utoipa::path(put, path = "/racks/{name}/user-data", tag = "cloud-init", request_body = UserDataBody,
    params(("name" = String, Path, description = "Rack name")),
    responses((status = 204, description = "Stored"),
        (status = 400, description = "Too long, or not a cloud-init format", body = super::Problem, content_type = "application/problem+json")))]
async fn rack_put(
    State(s): State<ApiState>,
    Path(name): Path<String>,
    body: Result<Json<UserDataBody>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let Json(body) = body?;
    let owner = rack_owner(&s, name).await?;
    put(&s, owner, body).await
}

/// Removes a rack's user-data.
#[utoipa::path(delete, path = "/racks/{name}/user-data", tag = "cloud-init",
    params(("name" = String, Path, description = "Rack name")),
    responses((status = 204, description = "Removed"),
        (status = 404, description = "No such rack, or none set", body = super::Problem, content_type = "application/problem+json")))]
async fn rack_delete(State(s): State<ApiState>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    let owner = rack_owner(&s, name).await?;
    delete(&s, owner).await
}
