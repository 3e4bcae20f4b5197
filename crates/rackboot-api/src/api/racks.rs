//! `/api/v1/racks`: racks to bring up (switch, port -> slot map, hostname pattern, address
//! plan, profiles, or a CSV of machines), each shown with its elevation and flags. The rules
//! live in `racks` and the CMDB; this module gathers what the config knows and maps errors.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::cmdb::now_secs;
use crate::racks::flags::RackView;
use crate::racks::{self, Catalog, Rack, RackSpec, MAX_SLOTS};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, replace, remove))
        .routes(routes!(import_csv))
}

/// Every rack.
#[derive(Serialize, ToSchema)]
pub struct RackList {
    pub racks: Vec<Rack>,
}

/// A CSV of the rack's machines.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RackCsv {
    /// Rows `mac-or-serial,hostname,ip,slot` (hostname and ip may be empty: the rack's pattern
    /// and plan fill them); at most 64 rows and 64 KiB. Replaces the rack's list.
    #[schema(max_length = 65536)]
    pub csv: String,
}

/// What the config and the CMDB know that a rack's names must match.
pub async fn catalog(s: &ApiState, spec: &RackSpec) -> Result<Catalog, ApiError> {
    let profiles = super::profiles::all_profiles(s).await?;
    let plain = |n: &str| !n.starts_with('.') && n.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    let images = match (&s.engine, spec.os_profile.as_deref()) {
        (Some(e), Some(os)) if plain(os) && e.cfg.images_dir.join(os).is_file() => vec![os.to_string()],
        _ => vec![],
    };
    Ok(Catalog {
        networks: s.cmdb.provisioning_networks(),
        hardware_profiles: s.engine.as_ref().map(|e| e.cfg.hardware_profiles.keys().cloned().collect()),
        installers: profiles.into_values().filter(|p| p.answer.is_some()).map(|p| p.name).collect(),
        images,
        named_networks: super::network::named(s),
    })
}

fn name_in_path(name: &str) -> Result<(), ApiError> {
    racks::check_name(name).map_err(|e| ApiError::field("name", e))
}

/// Every rack (their elevations: `GET /racks/{name}`).
#[utoipa::path(get, path = "/racks", tag = "racks",
    responses((status = 200, description = "Every rack", body = RackList)))]
async fn list(State(s): State<ApiState>) -> Result<Json<RackList>, ApiError> {
    let scope = super::scope::current();
    let racks =
        s.cmdb.racks().await?.into_iter().filter(|r| scope.as_ref().is_none_or(|sc| sc.pools.contains_key(&r.pool)));
    Ok(Json(RackList { racks: racks.map(Rack::shown).collect() }))
}

/// The rack as the caller may see it: a pool-scoped caller sees only their pools' racks
/// (another's is not there: 404 as a missing one), and in them only their pools' machines (one
/// an admin moved elsewhere is left out, with the flags that concern only such machines).
pub async fn visible_view(s: &ApiState, name: String) -> Result<RackView, ApiError> {
    let mut view = s.cmdb.rack_view(name.clone()).await?;
    let Some(scope) = super::scope::current() else { return Ok(view) };
    if !scope.pools.contains_key(&view.rack.pool) {
        return Err(crate::cmdb::CmdbError::NotFound(format!("rack {name}")).into());
    }
    view.keep_machines(|id| s.cmdb.machine_pool(id).is_some_and(|p| scope.pools.contains_key(&p)));
    Ok(view)
}

/// Creates a rack. Machines already seen are placed at once; others as they boot.
#[utoipa::path(post, path = "/racks", tag = "racks", request_body = RackSpec,
    responses((status = 201, description = "Created, with its elevation", body = RackView),
        (status = 409, description = "The name is taken, or another rack has these addresses, switch ports or machines (or there are 256 racks)", body = super::Problem, content_type = "application/problem+json")))]
async fn create(
    State(s): State<ApiState>,
    body: Result<Json<RackSpec>, JsonRejection>,
) -> Result<(StatusCode, Json<RackView>), ApiError> {
    let Json(spec) = body?;
    Ok((StatusCode::CREATED, Json(create_rack(&s, spec).await?)))
}

/// Checks and stores a new rack (or, `replace`, the rack of its name); its elevation. The web
/// form calls this too.
pub async fn store_rack(s: &ApiState, spec: RackSpec, replace: bool) -> Result<RackView, ApiError> {
    super::scope::touched(&spec.pool);
    if replace {
        if let Ok(old) = s.cmdb.rack(spec.name.clone()).await {
            super::scope::touched(&old.pool);
        }
    }
    let cat = catalog(s, &spec).await?;
    let rack = racks::validate(spec, &cat, now_secs()).map_err(ApiError::bad)?;
    let rack = s.cmdb.put_rack(rack, replace).await?;
    Ok(s.cmdb.rack_view(rack.name).await?)
}

/// Creates a rack: see [`store_rack`].
pub async fn create_rack(s: &ApiState, spec: RackSpec) -> Result<RackView, ApiError> {
    store_rack(s, spec, false).await
}

/// Replaces the rack's machine list from CSV text; its elevation. The web form calls this too.
pub async fn import_machines(s: &ApiState, name: String, csv: &str) -> Result<RackView, ApiError> {
    name_in_path(&name)?;
    super::scope::touched(&s.cmdb.rack(name.clone()).await?.pool);
    let rows = racks::csv::parse(csv, MAX_SLOTS as usize).map_err(|e| ApiError::field("csv", e))?;
    let networks = s.cmdb.provisioning_networks();
    let outside = |ip: &std::net::Ipv4Addr| !networks.is_empty() && !networks.iter().any(|n| n.contains(ip));
    if let Some(ip) = rows.iter().filter_map(|r| r.ip).find(outside) {
        return Err(ApiError::field("csv", format!("{ip} is outside the provisioning networks")));
    }
    s.cmdb.set_rack_machines(name.clone(), rows).await?;
    Ok(s.cmdb.rack_view(name).await?)
}

/// A rack with its elevation (slot -> machines, top first) and its flags: mis-cabling, a slot
/// claimed twice, an expected slot silent, a failed machine.
#[utoipa::path(get, path = "/racks/{name}", tag = "racks",
    params(("name" = String, Path, description = "Rack name", pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")),
    responses((status = 200, description = "The rack, its elevation and flags", body = RackView)))]
async fn show(State(s): State<ApiState>, Path(name): Path<String>) -> Result<Json<RackView>, ApiError> {
    name_in_path(&name)?;
    Ok(Json(visible_view(&s, name).await?))
}

/// Replaces a rack's description (the body's name must be the path's); its machines are
/// placed again.
#[utoipa::path(put, path = "/racks/{name}", tag = "racks", request_body = RackSpec,
    params(("name" = String, Path, description = "Rack name", pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")),
    responses((status = 200, description = "The rack, its elevation and flags", body = RackView),
        (status = 409, description = "Another rack has these addresses, switch ports or machines", body = super::Problem, content_type = "application/problem+json")))]
async fn replace(
    State(s): State<ApiState>,
    Path(name): Path<String>,
    body: Result<Json<RackSpec>, JsonRejection>,
) -> Result<Json<RackView>, ApiError> {
    name_in_path(&name)?;
    let Json(spec) = body?;
    if spec.name != name {
        return Err(ApiError::field("name", "the body's name must be the rack's (racks are not renamed)"));
    }
    Ok(Json(store_rack(&s, spec, true).await?))
}

/// Deletes a rack; its machines leave it and keep their names and reservations.
#[utoipa::path(delete, path = "/racks/{name}", tag = "racks",
    params(("name" = String, Path, description = "Rack name", pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")),
    responses((status = 204, description = "Deleted")))]
async fn remove(State(s): State<ApiState>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    name_in_path(&name)?;
    super::scope::touched(&s.cmdb.rack(name.clone()).await?.pool);
    s.cmdb.delete_rack(name.clone()).await?;
    // Its user-data goes with it.
    s.cmdb.set_user_data(crate::cmdb::userdata::Owner::Rack(name), None).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Replaces the rack's machine list from CSV (racks without managed switches): machines are
/// placed by MAC or serial, named and given their address.
#[utoipa::path(post, path = "/racks/{name}/csv", tag = "racks", request_body = RackCsv,
    params(("name" = String, Path, description = "Rack name", pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")),
    responses((status = 200, description = "The rack, its elevation and flags", body = RackView),
        (status = 409, description = "Another rack has these addresses or machines", body = super::Problem, content_type = "application/problem+json")))]
async fn import_csv(
    State(s): State<ApiState>,
    Path(name): Path<String>,
    body: Result<Json<RackCsv>, JsonRejection>,
) -> Result<Json<RackView>, ApiError> {
    let Json(RackCsv { csv }) = body?;
    Ok(Json(import_machines(&s, name, &csv).await?))
}
