//! Firmware baselines: `/api/v1/firmware/images` (uploaded images, kept by SHA-256),
//! `/api/v1/firmware/baselines`, a machine's drift and update
//! (`/api/v1/machines/{id}/firmware/drift`, `.../update`) and a rack's
//! (`/api/v1/racks/{name}/firmware`, `.../update`).

use axum::body::Body;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::machines::resolve;
use super::{ApiError, ApiState};
use crate::firmware::{By, Firmware, Image, ImageError, Restart, UpdateError};
use rackboot_model::baseline::{Baseline, Drift, Standing};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(images, upload))
        .routes(routes!(remove))
        .routes(routes!(baselines))
        .routes(routes!(drift))
        .routes(routes!(update))
        .routes(routes!(rack))
        .routes(routes!(rack_update))
}

/// The route whose body may be as large as `firmware.max_image_mb`.
pub const IMAGE_UPLOAD: &str = "/api/v1/firmware/images";

fn service(s: &ApiState) -> Result<&Arc<Firmware>, ApiError> {
    s.firmware
        .as_ref()
        .ok_or_else(|| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "firmware updates are not running"))
}

/// A kept image and the baselines that name it.
#[derive(Serialize, ToSchema)]
struct ImageView {
    #[serde(flatten)]
    image: Image,
    used_by: Vec<String>,
}

#[derive(Serialize, ToSchema)]
struct ImageList {
    images: Vec<ImageView>,
    /// The most an upload may hold (bytes).
    max_bytes: u64,
}

/// The uploaded firmware images.
#[utoipa::path(get, path = "/firmware/images", tag = "firmware",
    responses((status = 200, description = "The images, by SHA-256", body = ImageList)))]
async fn images(State(s): State<ApiState>) -> Result<Json<ImageList>, ApiError> {
    let f = service(&s)?;
    let list = f.images.list().map_err(|e| ApiError::internal(e.to_string()))?;
    let images = list.into_iter().map(|image| ImageView { used_by: f.used_by(&image.sha256), image }).collect();
    Ok(Json(ImageList { images, max_bytes: f.images.max_bytes() }))
}

/// Uploads a firmware image (the body, as is). Kept by its SHA-256, which a baseline's
/// component names; BMCs fetch it from `/boot/files/firmware/<sha256>`. A body past
/// `firmware.max_image_mb`, empty or cut off is refused and leaves nothing.
#[utoipa::path(put, path = "/firmware/images", tag = "firmware",
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 201, description = "Stored", body = Image),
        (status = 200, description = "This image was stored already", body = Image),
        (status = 413, description = "Larger than firmware.max_image_mb", body = super::Problem, content_type = "application/problem+json"),
        (status = 503, description = "Other uploads are running", body = super::Problem, content_type = "application/problem+json")))]
async fn upload(State(s): State<ApiState>, body: Body) -> Result<(StatusCode, Json<Image>), ApiError> {
    let f = service(&s)?;
    let _permit = f.images.try_upload().ok_or_else(|| {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "other uploads are running; try again shortly")
    })?;
    // Past the route's body limit is too large, not cut off.
    let stream = body.into_data_stream().map_err(|e| {
        let inner = e.into_inner();
        match inner.downcast_ref::<http_body_util::LengthLimitError>() {
            Some(_) => std::io::Error::new(std::io::ErrorKind::FileTooLarge, inner),
            None => std::io::Error::other(inner),
        }
    });
    let reader = tokio_util::io::StreamReader::new(stream);
    let (image, new) = f.images.put(reader).await.map_err(image_error)?;
    Ok((if new { StatusCode::CREATED } else { StatusCode::OK }, Json(image)))
}

fn image_error(e: ImageError) -> ApiError {
    match e {
        ImageError::TooLarge(_) => ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, e.to_string()),
        ImageError::Empty | ImageError::Body(_) => ApiError::bad(e.to_string()),
        ImageError::Full(_) => ApiError::conflict(e.to_string()),
        ImageError::NotFound(_) => ApiError::not_found(e.to_string()),
        ImageError::Io(_) => ApiError::internal(e.to_string()),
    }
}

/// Removes an image no baseline names.
#[utoipa::path(delete, path = "/firmware/images/{sha256}", tag = "firmware",
    params(("sha256" = String, Path, description = "The image's SHA-256", pattern = r"^[0-9a-fA-F]{64}$")),
    responses((status = 204, description = "Removed"),
        (status = 404, description = "No such image", body = super::Problem, content_type = "application/problem+json"),
        (status = 409, description = "A baseline names it", body = super::Problem, content_type = "application/problem+json")))]
async fn remove(State(s): State<ApiState>, Path(sha256): Path<String>) -> Result<StatusCode, ApiError> {
    let f = service(&s)?;
    let used = f.used_by(&sha256);
    if !used.is_empty() {
        return Err(ApiError::conflict(format!("firmware baselines {} name this image", used.join(", "))));
    }
    f.images.remove(&sha256).map_err(image_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// A baseline and the images of it not uploaded yet.
#[derive(Serialize, ToSchema)]
struct BaselineView {
    #[serde(flatten)]
    baseline: Baseline,
    missing_images: Vec<String>,
}

#[derive(Serialize, ToSchema)]
struct BaselineList {
    baselines: Vec<BaselineView>,
}

/// The firmware baselines (`[[firmware.baselines]]`) and which of their images are missing.
#[utoipa::path(get, path = "/firmware/baselines", tag = "firmware",
    responses((status = 200, description = "The baselines", body = BaselineList)))]
async fn baselines(State(s): State<ApiState>) -> Result<Json<BaselineList>, ApiError> {
    let f = service(&s)?;
    let baselines = f
        .baselines()
        .values()
        .map(|b| BaselineView { missing_images: f.missing_images(b), baseline: b.clone() })
        .collect();
    Ok(Json(BaselineList { baselines }))
}

/// A machine's drift from its hardware profile's firmware baseline, from its BMC's last
/// firmware read (`POST /machines/{id}/firmware` reads it now).
#[utoipa::path(get, path = "/machines/{id}/firmware/drift", tag = "firmware",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "Each component: wanted, found, standing", body = Drift),
        (status = 404, description = "No such machine, or no baseline for it", body = super::Problem, content_type = "application/problem+json")))]
async fn drift(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<Drift>, ApiError> {
    let f = service(&s)?;
    let m = resolve(&s, &key).await?;
    let d = f.drift(&m).await?;
    d.map(Json).ok_or_else(|| ApiError::not_found(UpdateError::NoBaseline(m.id).to_string()))
}

/// What an update asks.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct UpdateRequest {
    /// Restart the machine (only if it is on) where a component waits for a restart; default
    /// true. False: the versions show after its next restart.
    #[serde(default)]
    restart: Option<bool>,
}

/// An update started.
#[derive(Serialize, ToSchema)]
struct Started {
    machine_id: u64,
    baseline: String,
}

/// Brings a machine to its firmware baseline through its BMC, in the background: its firmware
/// read, each drifting component flashed (`UpdateService.SimpleUpdate`, the BMC fetching the
/// image from this appliance), a restart where allowed, the versions read back. The course is
/// on the machine's timeline (`firmware.updating`, `.progress`, `.updated`, `.failed`).
#[utoipa::path(post, path = "/machines/{id}/firmware/update", tag = "firmware", request_body = UpdateRequest,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 202, description = "Started", body = Started),
        (status = 404, description = "No such machine, or no baseline for it", body = super::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Being updated, no BMC, or an image of the baseline not uploaded", body = super::Problem, content_type = "application/problem+json")))]
async fn update(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<UpdateRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let Json(req) = body?;
    let f = service(&s)?;
    let m = resolve(&s, &key).await?;
    let started = start(&s, f, m.id, req.restart.unwrap_or(true)).await?;
    Ok((StatusCode::ACCEPTED, Json(started)))
}

async fn start(s: &ApiState, f: &Arc<Firmware>, id: u64, restart: bool) -> Result<Started, ApiError> {
    if s.cmdb.bmc(id).await?.is_none() {
        return Err(ApiError::conflict(format!("machine {id} has no BMC to update its firmware through")));
    }
    let restart = if restart { Restart::IfOn } else { Restart::Never };
    match f.start(id, restart, By::Operator).await {
        Ok(b) => Ok(Started { machine_id: id, baseline: b.name }),
        Err(e @ UpdateError::NoBaseline(_)) => Err(ApiError::not_found(e.to_string())),
        Err(UpdateError::Cmdb(e)) => Err(e.into()),
        Err(e) => Err(ApiError::conflict(e.to_string())),
    }
}

/// One machine of a rack against its baseline.
#[derive(Serialize, ToSchema)]
struct RackMachine {
    slot: u32,
    machine_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    hostname: Option<String>,
    /// Absent: no baseline for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    drift: Option<Drift>,
    /// An update of it runs now.
    updating: bool,
}

#[derive(Serialize, ToSchema)]
struct RackFirmware {
    rack: String,
    /// The worst standing of its machines (drift, unknown, current).
    #[serde(skip_serializing_if = "Option::is_none")]
    standing: Option<Standing>,
    machines: Vec<RackMachine>,
}

/// A rack's machines against their firmware baselines, slot by slot (top first).
#[utoipa::path(get, path = "/racks/{name}/firmware", tag = "firmware",
    params(("name" = String, Path, description = "Rack name", pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")),
    responses((status = 200, description = "Drift per machine", body = RackFirmware),
        (status = 404, description = "No such rack", body = super::Problem, content_type = "application/problem+json")))]
async fn rack(State(s): State<ApiState>, Path(name): Path<String>) -> Result<Json<RackFirmware>, ApiError> {
    let f = service(&s)?;
    crate::racks::check_name(&name).map_err(|e| ApiError::field("name", e))?;
    let view = s.cmdb.rack_view(name.clone()).await?;
    let mut machines = Vec::new();
    for slot in &view.slots {
        for summary in &slot.machines {
            let m = match s.cmdb.machine(summary.id).await {
                Ok(m) => m,
                Err(crate::cmdb::CmdbError::NotFound(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            let drift = f.drift(&m).await?;
            let (machine_id, hostname) = (m.id, m.hostname.clone());
            machines.push(RackMachine { slot: slot.slot, machine_id, hostname, drift, updating: f.updating(m.id) });
        }
    }
    let standing = machines.iter().filter_map(|m| m.drift.as_ref().map(|d| d.standing)).max();
    Ok(Json(RackFirmware { rack: name, standing, machines }))
}

/// What a rack's update started, and what it could not.
#[derive(Serialize, ToSchema)]
struct RackStarted {
    started: Vec<Started>,
    /// Machines not started and why (no baseline, no BMC, being updated, an image missing).
    refused: Vec<Refused>,
}

#[derive(Serialize, ToSchema)]
struct Refused {
    machine_id: u64,
    error: String,
}

/// Brings every machine of a rack that has a baseline and a BMC to it (each as
/// `POST /machines/{id}/firmware/update`, all at once; the BMC calls are capped by `bmc`'s
/// global limit).
#[utoipa::path(post, path = "/racks/{name}/firmware/update", tag = "firmware", request_body = UpdateRequest,
    params(("name" = String, Path, description = "Rack name", pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")),
    responses((status = 202, description = "What started and what did not", body = RackStarted),
        (status = 404, description = "No such rack", body = super::Problem, content_type = "application/problem+json")))]
async fn rack_update(
    State(s): State<ApiState>,
    Path(name): Path<String>,
    body: Result<Json<UpdateRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<RackStarted>), ApiError> {
    let Json(req) = body?;
    let f = service(&s)?;
    crate::racks::check_name(&name).map_err(|e| ApiError::field("name", e))?;
    let view = s.cmdb.rack_view(name).await?;
    let (mut started, mut refused) = (Vec::new(), Vec::new());
    for summary in view.slots.iter().flat_map(|slot| &slot.machines) {
        match start(&s, f, summary.id, req.restart.unwrap_or(true)).await {
            Ok(st) => started.push(st),
            Err(e) => refused.push(Refused { machine_id: summary.id, error: e.detail }),
        }
    }
    Ok((StatusCode::ACCEPTED, Json(RackStarted { started, refused })))
}
