//! `/api/v1/profiles`: boot profiles, from the config (read-only) and defined through the API.

use std::collections::BTreeMap;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::cmdb::model::valid_hostname;
use crate::cmdb::StoredProfile;
use crate::config::Profile;

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(upsert, remove))
}

/// A boot profile and where it is defined.
#[derive(Serialize, ToSchema)]
pub struct ProfileView {
    pub name: String,
    pub kernel: String,
    pub initrd: String,
    pub cmdline: String,
    /// The installer answer file it reads: kickstart, preseed or autoinstall.
    pub answer: Option<String>,
    /// A Windows profile's imported media (config-defined profiles only).
    pub windows: Option<String>,
    /// What arm64 machines boot instead (config-defined profiles only).
    pub arm64: Option<crate::config::ArchBoot>,
    /// `config` (read-only) or `api`.
    pub source: String,
    /// The resource pool whose machines and tasks may use it; absent: every pool's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
}

/// Every boot profile.
#[derive(Serialize, ToSchema)]
pub struct ProfileList {
    pub profiles: Vec<ProfileView>,
}

/// Config profiles plus API ones (a config profile cannot be shadowed).
pub async fn all_profiles(s: &ApiState) -> Result<BTreeMap<String, Profile>, ApiError> {
    let mut out = s.boot.as_ref().map(|b| b.profiles.clone()).unwrap_or_default();
    for p in s.cmdb.profiles().await? {
        let StoredProfile { name, kernel, initrd, cmdline, answer, pool: _ } = p;
        out.entry(name.clone()).or_insert(Profile {
            name,
            kernel,
            initrd,
            cmdline,
            answer,
            windows: None,
            arm64: None,
        });
    }
    Ok(out)
}

/// The pools of the API's profiles that belong to one (the config's, and the others, are every
/// pool's).
pub async fn profile_pools(s: &ApiState) -> Result<BTreeMap<String, String>, ApiError> {
    let stored = s.cmdb.profiles().await?;
    Ok(stored.into_iter().filter(|p| !is_config(s, &p.name)).filter_map(|p| Some((p.name, p.pool?))).collect())
}

/// Refuses profile `name` for something of `pool` when the profile is another pool's.
pub async fn usable_in(s: &ApiState, name: &str, pool: &str) -> Result<(), ApiError> {
    match profile_pools(s).await?.get(name) {
        Some(own) if own != pool => {
            Err(ApiError::field("boot_profile", format!("boot profile {name} is pool {own}'s; this is in pool {pool}")))
        }
        _ => Ok(()),
    }
}

fn is_config(s: &ApiState, name: &str) -> bool {
    s.boot.as_ref().is_some_and(|b| b.profiles.contains_key(name))
}

/// Every boot profile: the config's (read-only) and those defined through the API.
#[utoipa::path(get, path = "/profiles", tag = "profiles",
    responses((status = 200, description = "Every profile", body = ProfileList)))]
async fn list(State(s): State<ApiState>) -> Result<Json<ProfileList>, ApiError> {
    let pools = profile_pools(&s).await?;
    // A pool-scoped caller sees the shared profiles and their pools' own.
    let scope = super::scope::current();
    let profiles = all_profiles(&s)
        .await?
        .into_values()
        .filter(|p| pools.get(&p.name).is_none_or(|own| scope.as_ref().is_none_or(|sc| sc.pools.contains_key(own))))
        .map(|p| {
            let source = if is_config(&s, &p.name) { "config" } else { "api" };
            let pool = pools.get(&p.name).cloned();
            let Profile { name, kernel, initrd, cmdline, answer, windows, arm64 } = p;
            ProfileView { name, kernel, initrd, cmdline, answer, windows, arm64, source: source.into(), pool }
        })
        .collect();
    Ok(Json(ProfileList { profiles }))
}

/// Creates or replaces a boot profile (the name in the path wins over one in the body).
#[utoipa::path(put, path = "/profiles/{name}", tag = "profiles", request_body = StoredProfile,
    params(("name" = String, Path, description = "Profile name: letters, digits and '-'", pattern = r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")),
    responses((status = 200, description = "The stored profile", body = StoredProfile),
        (status = 409, description = "The config file defines this profile", body = super::Problem, content_type = "application/problem+json")))]
async fn upsert(
    State(s): State<ApiState>,
    Path(name): Path<String>,
    body: Result<Json<StoredProfile>, JsonRejection>,
) -> Result<Json<StoredProfile>, ApiError> {
    let Json(mut p) = body?;
    if !valid_hostname(&name) {
        return Err(ApiError::field("name", format!("profile name {name:?} must be letters, digits and '-'")));
    }
    if is_config(&s, &name) {
        return Err(ApiError::conflict(format!("profile {name} is defined in the config file")));
    }
    if p.kernel.trim().is_empty() {
        return Err(ApiError::field("kernel", "kernel and initrd are required"));
    }
    if p.initrd.trim().is_empty() {
        return Err(ApiError::field("initrd", "kernel and initrd are required"));
    }
    if let Some(pool) = &p.pool {
        rackboot_model::pools::check(pool).map_err(|e| ApiError::field("pool", e))?;
    }
    if let Some(a) = p.answer.as_deref().filter(|a| !crate::render::ANSWER_KINDS.contains(a)) {
        return Err(ApiError::field("answer", format!("answer {a:?} is not one of {:?}", crate::render::ANSWER_KINDS)));
    }
    if let Some(boot) = &s.boot {
        // Off the async workers: an operator's command line is a template.
        let (renderer, cmdline, answer) = (boot.renderer.current(), p.cmdline.clone(), p.answer.is_some());
        tokio::task::spawn_blocking(move || renderer.check_cmdline(&cmdline, answer))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(|e| ApiError::field("cmdline", format!("cmdline: {e}")))?;
    }
    p.name = name;
    Ok(Json(s.cmdb.put_profile(p).await?))
}

/// Deletes an API-defined profile that no machine is pinned to.
#[utoipa::path(delete, path = "/profiles/{name}", tag = "profiles",
    params(("name" = String, Path, description = "Profile name", pattern = r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")),
    responses((status = 204, description = "Deleted"),
        (status = 409, description = "The config file defines it, or machines are pinned to it", body = super::Problem, content_type = "application/problem+json")))]
async fn remove(State(s): State<ApiState>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    if is_config(&s, &name) {
        return Err(ApiError::conflict(format!("profile {name} is defined in the config file")));
    }
    s.cmdb.delete_profile(name).await?;
    Ok(StatusCode::NO_CONTENT)
}
