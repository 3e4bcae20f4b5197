//! `/api/v1/profiles`: boot profiles, from the config (read-only) and defined through the API.

use std::collections::BTreeMap;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::{ApiError, ApiState};
use crate::cmdb::model::valid_hostname;
use crate::cmdb::StoredProfile;
use crate::config::Profile;

pub fn routes() -> Router<ApiState> {
    Router::new().route("/profiles", get(list)).route("/profiles/{name}", put(upsert).delete(remove))
}

/// Config profiles plus API ones (a config profile cannot be shadowed).
pub async fn all_profiles(s: &ApiState) -> Result<BTreeMap<String, Profile>, ApiError> {
    let mut out = s.boot.as_ref().map(|b| b.profiles.clone()).unwrap_or_default();
    for p in s.cmdb.profiles().await? {
        let StoredProfile { name, kernel, initrd, cmdline, answer } = p;
        out.entry(name.clone()).or_insert(Profile { name, kernel, initrd, cmdline, answer });
    }
    Ok(out)
}

fn is_config(s: &ApiState, name: &str) -> bool {
    s.boot.as_ref().is_some_and(|b| b.profiles.contains_key(name))
}

async fn list(State(s): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let profiles: Vec<Value> = all_profiles(&s)
        .await?
        .into_values()
        .map(|p| {
            let source = if is_config(&s, &p.name) { "config" } else { "api" };
            json!({"name": p.name, "kernel": p.kernel, "initrd": p.initrd, "cmdline": p.cmdline, "answer": p.answer, "source": source})
        })
        .collect();
    Ok(Json(json!({ "profiles": profiles })))
}

async fn upsert(
    State(s): State<ApiState>,
    Path(name): Path<String>,
    body: Result<Json<StoredProfile>, JsonRejection>,
) -> Result<Json<StoredProfile>, ApiError> {
    let Json(mut p) = body.map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.body_text()))?;
    let bad = |m: String| ApiError(StatusCode::BAD_REQUEST, m);
    if !valid_hostname(&name) {
        return Err(bad(format!("profile name {name:?} must be letters, digits and '-'")));
    }
    if is_config(&s, &name) {
        return Err(ApiError(StatusCode::CONFLICT, format!("profile {name} is defined in the config file")));
    }
    if p.kernel.trim().is_empty() || p.initrd.trim().is_empty() {
        return Err(bad("kernel and initrd are required".into()));
    }
    if let Some(a) = p.answer.as_deref().filter(|a| !crate::render::ANSWER_KINDS.contains(a)) {
        return Err(bad(format!("answer {a:?} is not one of {:?}", crate::render::ANSWER_KINDS)));
    }
    if let Some(boot) = &s.boot {
        boot.renderer.check_cmdline(&p.cmdline, p.answer.is_some()).map_err(|e| bad(format!("cmdline: {e}")))?;
    }
    p.name = name;
    Ok(Json(s.cmdb.put_profile(p).await?))
}

async fn remove(State(s): State<ApiState>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    if is_config(&s, &name) {
        return Err(ApiError(StatusCode::CONFLICT, format!("profile {name} is defined in the config file")));
    }
    s.cmdb.delete_profile(name).await?;
    Ok(StatusCode::NO_CONTENT)
}
