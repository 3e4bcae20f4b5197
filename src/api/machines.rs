//! `/api/v1/machines`, `/api/v1/machines/{id}/events` and `/api/v1/leases`.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{ApiError, ApiState};
use crate::cmdb::{now_secs, LeaseState, Machine, MachineFilter, MachinePatch, NewMachine};
use crate::mac::Mac;

pub fn routes() -> Router<ApiState> {
    Router::new()
        .route("/machines", get(list).post(create))
        .route("/machines/{id}", get(show).patch(update).delete(remove))
        .route("/machines/{id}/events", get(events))
        .route("/leases", get(leases))
}

fn bad_json(e: JsonRejection) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, e.body_text())
}

/// Resolves `{id}`: a numeric machine id or any of the machine's MACs.
pub(super) async fn resolve(s: &ApiState, key: &str) -> Result<Machine, ApiError> {
    if let Ok(id) = key.parse::<u64>() {
        return Ok(s.cmdb.machine(id).await?);
    }
    let mac: Mac =
        key.parse().map_err(|e: crate::mac::ParseMacError| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    Ok(s.cmdb.machine_by_mac(mac).await?)
}

async fn list(
    State(s): State<ApiState>,
    q: Result<Query<MachineFilter>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(filter) = q.map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.body_text()))?;
    let (machines, total) = s.cmdb.list_machines(filter).await?;
    let machines: Vec<Machine> = machines.into_iter().map(Machine::shown).collect();
    Ok(Json(json!({ "machines": machines, "total": total })))
}

async fn create(
    State(s): State<ApiState>,
    body: Result<Json<NewMachine>, JsonRejection>,
) -> Result<(StatusCode, Json<Machine>), ApiError> {
    let Json(new) = body.map_err(bad_json)?;
    Ok((StatusCode::CREATED, Json(s.cmdb.create_machine(new).await?)))
}

async fn show(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<Machine>, ApiError> {
    Ok(Json(resolve(&s, &key).await?.shown()))
}

async fn update(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<MachinePatch>, JsonRejection>,
) -> Result<Json<Machine>, ApiError> {
    let Json(patch) = body.map_err(bad_json)?;
    if let Some(Some(name)) = &patch.boot_profile {
        let all = super::profiles::all_profiles(&s).await?;
        if !all.contains_key(name) {
            let known: Vec<&String> = all.keys().collect();
            return Err(ApiError(StatusCode::BAD_REQUEST, format!("no boot profile {name:?}; known: {known:?}")));
        }
    }
    let m = resolve(&s, &key).await?;
    Ok(Json(s.cmdb.update_machine(m.id, patch).await?.shown()))
}

async fn remove(State(s): State<ApiState>, Path(key): Path<String>) -> Result<StatusCode, ApiError> {
    let m = resolve(&s, &key).await?;
    s.cmdb.delete_machine(m.id).await?;
    s.hub.forget(m.id);
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct EventQuery {
    after: Option<u64>,
    limit: Option<usize>,
}

async fn events(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    q: Result<Query<EventQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.body_text()))?;
    let m = resolve(&s, &key).await?;
    let events = s.cmdb.events(m.id, q.after.unwrap_or(0), q.limit.unwrap_or(1000).min(10_000)).await?;
    Ok(Json(json!({ "machine_id": m.id, "events": events })))
}

async fn leases(State(s): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let now = now_secs();
    let leases: Vec<Value> = s
        .cmdb
        .leases()
        .await?
        .into_iter()
        .map(|l| {
            let active = l.state == LeaseState::Active && l.expires_at > now;
            let mut v = serde_json::to_value(&l).expect("lease serializes");
            v["active"] = json!(active);
            v
        })
        .collect();
    Ok(Json(json!({ "leases": leases })))
}
