//! `/api/v1/plugins`: upload (multipart: bundle + signature), list, show, activate, roll back,
//! delete. Trusted keys are in `plugin_keys`; agents fetch bundles at `/agent/v1/plugins`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::cmdb::Caller;
use crate::plugins::{PluginError, PluginVersion, Store, TrustedKey};

pub fn routes() -> OpenApiRouter<ApiState> {
    // The upload's size is bounded by `api::bounded` (plugins.max_bundle_bytes), not the
    // default limit every other extractor keeps.
    OpenApiRouter::new()
        .routes(routes!(list, upload))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .routes(routes!(show))
        .routes(routes!(show_version, remove))
        .routes(routes!(activate))
        .routes(routes!(rollback))
}

/// The multipart form of an upload.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The `.tar.gz` bundle.
    #[schema(value_type = String, format = Binary)]
    bundle: Vec<u8>,
    /// Its detached minisign signature (`minisign -S`: the `.minisig` file).
    #[schema(value_type = String, format = Binary)]
    signature: Vec<u8>,
    /// "true": store a version below the newest stored one.
    allow_downgrade: Option<bool>,
}

/// A version as listed: what it is, who signed it, whether it may run.
#[derive(Serialize, ToSchema)]
pub struct VersionView {
    #[serde(flatten)]
    pub version: PluginVersion,
    pub active: bool,
    /// The signing key (vendor, revoked or not).
    pub signer: Option<TrustedKey>,
    /// Why agents are not given it (its key is revoked or gone); absent when usable.
    pub disabled: Option<String>,
}

/// One plugin: its versions (newest first) and the active one.
#[derive(Serialize, ToSchema)]
pub struct PluginView {
    pub name: String,
    pub vendor: String,
    pub active: Option<String>,
    pub versions: Vec<VersionView>,
}

/// Every plugin.
#[derive(Serialize, ToSchema)]
pub struct PluginList {
    pub plugins: Vec<PluginView>,
}

/// What an upload did.
#[derive(Serialize, ToSchema)]
pub struct Uploaded {
    /// False: this exact bundle was already stored.
    pub created: bool,
    /// It became the active version (the first, or above the active one).
    pub activated: bool,
    pub plugin: VersionView,
}

/// Which version to activate.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Activate {
    pub version: String,
}

/// The answer to activate and roll back.
#[derive(Serialize, ToSchema)]
pub struct Activated {
    pub name: String,
    pub active: String,
}

fn store(s: &ApiState) -> Result<&Arc<Store>, ApiError> {
    s.plugins.as_ref().ok_or_else(|| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the plugin store is not running"))
}

impl From<PluginError> for ApiError {
    fn from(e: PluginError) -> Self {
        match e {
            PluginError::Refused(why) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, format!("refused: {why}")),
            PluginError::TooLarge(why) => ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, why),
            PluginError::Cmdb(e) => e.into(),
            PluginError::Io(e) => ApiError::internal(e),
        }
    }
}

/// Every plugin with its versions; `disabled` says why a version will not be delivered.
pub async fn views(s: &ApiState) -> Result<Vec<PluginView>, ApiError> {
    let keys: BTreeMap<String, TrustedKey> =
        s.cmdb.plugin_keys().await?.into_iter().map(|k| (k.key_id.clone(), k)).collect();
    let active = s.cmdb.active_plugins().await?;
    let mut by_name: BTreeMap<String, Vec<PluginVersion>> = BTreeMap::new();
    for v in s.cmdb.plugin_versions().await? {
        by_name.entry(v.name.clone()).or_default().push(v);
    }
    Ok(by_name
        .into_iter()
        .map(|(name, mut versions)| {
            versions.sort_by_key(|v| std::cmp::Reverse(semver::Version::parse(&v.version).ok()));
            let act = active.get(&name).cloned();
            let vendor = versions[0].vendor.clone();
            let versions = versions.into_iter().map(|v| view(v, &keys, act.as_deref())).collect();
            PluginView { name, vendor, active: act, versions }
        })
        .collect())
}

fn view(v: PluginVersion, keys: &BTreeMap<String, TrustedKey>, active: Option<&str>) -> VersionView {
    let signer = keys.get(&v.key_id).cloned();
    let disabled = match &signer {
        None => Some(format!("its signing key {} is no longer trusted", v.key_id)),
        Some(k) if k.revoked_at.is_some() => Some(format!("its signing key {} is revoked", v.key_id)),
        Some(_) => None,
    };
    VersionView { active: active == Some(v.version.as_str()), version: v, signer, disabled }
}

async fn find(s: &ApiState, name: &str) -> Result<PluginView, ApiError> {
    views(s).await?.into_iter().find(|p| p.name == name).ok_or_else(|| ApiError::not_found(format!("plugin {name}")))
}

/// Every plugin, its versions and the active one.
#[utoipa::path(get, path = "/plugins", tag = "plugins",
    responses((status = 200, description = "Every plugin", body = PluginList)))]
async fn list(State(s): State<ApiState>) -> Result<Json<PluginList>, ApiError> {
    Ok(Json(PluginList { plugins: views(&s).await? }))
}

/// Uploads a signed bundle. Checked before anything is stored: the signature over the bundle's
/// bytes by a trusted, unrevoked key of the manifest's vendor, every entry (paths, types, caps),
/// the manifest, and the version rules (immutable; a downgrade needs `allow_downgrade`).
#[utoipa::path(post, path = "/plugins", tag = "plugins",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 201, description = "Stored", body = Uploaded),
        (status = 200, description = "This exact bundle was already stored", body = Uploaded),
        (status = 409, description = "The version exists with other content, is a downgrade, or the name is another vendor's", body = super::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Refused: signature, key, vendor, entries or manifest (the detail says which)", body = super::Problem, content_type = "application/problem+json")))]
async fn upload(
    State(s): State<ApiState>,
    Extension(caller): Extension<Caller>,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<(StatusCode, Json<Uploaded>), ApiError> {
    let store = store(&s)?.clone();
    let _permit = store.uploads.clone().try_acquire_owned().map_err(|_| {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "other uploads are being verified; try again shortly")
    })?;
    let mut multipart = multipart.map_err(|e| ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, e.body_text()))?;
    let max = store.limits.max_bundle_bytes;
    let (mut bundle, mut sig, mut downgrade) = (None, None, false);
    while let Some(mut field) = multipart.next_field().await.map_err(|e| ApiError::bad(format!("multipart: {e}")))? {
        let name = field.name().unwrap_or_default().to_string();
        let cap = match name.as_str() {
            "bundle" => max,
            "signature" => crate::plugins::verify::MAX_SIG_BYTES as u64,
            "allow_downgrade" => 16,
            other => return Err(ApiError::field(other, format!("unknown form field {other:?}"))),
        };
        let mut buf = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(|e| ApiError::bad(format!("multipart: {e}")))? {
            if (buf.len() + chunk.len()) as u64 > cap {
                return Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("{name} larger than {cap} bytes")));
            }
            buf.extend_from_slice(&chunk);
        }
        match name.as_str() {
            "bundle" => bundle = Some(buf),
            "signature" => sig = Some(buf),
            _ => downgrade = buf.trim_ascii() == b"true",
        }
    }
    let bundle = bundle.ok_or_else(|| ApiError::field("bundle", "no bundle in the form"))?;
    let sig = sig.unwrap_or_default();
    let done = store.ingest(bundle, sig, downgrade, &caller.user).await.inspect_err(|e| {
        tracing::warn!(user = %caller.user, error = %e, "plugin upload refused");
    })?;
    let v = &done.version;
    tracing::info!(plugin = %v.name, version = %v.version, sha256 = %v.sha256, key = %v.key_id, created = done.created, "plugin stored");
    let plugin = find(&s, &v.name).await?;
    let plugin = plugin
        .versions
        .into_iter()
        .find(|x| x.version.version == v.version)
        .ok_or_else(|| ApiError::internal("stored version vanished"))?;
    let status = if done.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(Uploaded { created: done.created, activated: done.activated, plugin })))
}

/// One plugin: its versions (newest first), the active one, each signer.
#[utoipa::path(get, path = "/plugins/{name}", tag = "plugins",
    params(("name" = String, Path, description = "Plugin name")),
    responses((status = 200, description = "The plugin", body = PluginView)))]
async fn show(State(s): State<ApiState>, Path(name): Path<String>) -> Result<Json<PluginView>, ApiError> {
    Ok(Json(find(&s, &name).await?))
}

/// One version: manifest, files with their SHA-256, signer, whether it is active or disabled.
#[utoipa::path(get, path = "/plugins/{name}/versions/{version}", tag = "plugins",
    params(("name" = String, Path, description = "Plugin name"), ("version" = String, Path, description = "Version")),
    responses((status = 200, description = "The version", body = VersionView)))]
async fn show_version(
    State(s): State<ApiState>,
    Path((name, version)): Path<(String, String)>,
) -> Result<Json<VersionView>, ApiError> {
    find(&s, &name)
        .await?
        .versions
        .into_iter()
        .find(|v| v.version.version == version)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("plugin {name} version {version}")))
}

/// Deletes a version (and its blob when no other version has the same bytes). The active
/// version only goes when it is the last.
#[utoipa::path(delete, path = "/plugins/{name}/versions/{version}", tag = "plugins",
    params(("name" = String, Path, description = "Plugin name"), ("version" = String, Path, description = "Version")),
    responses((status = 204, description = "Deleted"),
        (status = 409, description = "It is the active version and others exist", body = super::Problem, content_type = "application/problem+json")))]
async fn remove(
    State(s): State<ApiState>,
    Path((name, version)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    store(&s)?.delete(&name, &version).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Makes a stored version the active one (agents are given the active version unless a
/// hardware profile names another).
#[utoipa::path(post, path = "/plugins/{name}/activate", tag = "plugins", request_body = Activate,
    params(("name" = String, Path, description = "Plugin name")),
    responses((status = 200, description = "Activated", body = Activated),
        (status = 409, description = "Its signing key is revoked", body = super::Problem, content_type = "application/problem+json")))]
async fn activate(
    State(s): State<ApiState>,
    Path(name): Path<String>,
    body: Result<Json<Activate>, JsonRejection>,
) -> Result<Json<Activated>, ApiError> {
    let Json(a) = body?;
    let active = s.cmdb.activate_plugin(name.clone(), Some(a.version)).await?;
    Ok(Json(Activated { name, active }))
}

/// Rolls back: activates the highest stored version below the active one.
#[utoipa::path(post, path = "/plugins/{name}/rollback", tag = "plugins",
    params(("name" = String, Path, description = "Plugin name")),
    responses((status = 200, description = "Rolled back", body = Activated),
        (status = 409, description = "No version below the active one, or its key is revoked", body = super::Problem, content_type = "application/problem+json")))]
async fn rollback(State(s): State<ApiState>, Path(name): Path<String>) -> Result<Json<Activated>, ApiError> {
    let active = s.cmdb.activate_plugin(name.clone(), None).await?;
    Ok(Json(Activated { name, active }))
}
