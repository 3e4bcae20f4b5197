//! `/api/v1/templates`: the boot templates (iPXE scripts, installer answer files) an admin
//! overrides at run time, with a preview for one machine. A save is checked (parses, renders
//! for a sample machine in strict mode) before it is stored, then the shared renderer is rebuilt,
//! so the next boot script uses it on HTTP and HTTPS alike.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::boot::BootState;
use super::{ApiError, ApiState};
use crate::cmdb::{Caller, TemplateOverride};
use crate::planner::{self, BootPlan};
use crate::render::ScriptVars;
use crate::templates::{TemplateError, NAMES};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(show, save, reset)).routes(routes!(preview))
}

/// One boot template and whether an override replaces its default.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct TemplateSummary {
    pub name: String,
    /// `override` (stored in the CMDB) or `default` (embedded, or the `boot.templates` file).
    pub source: String,
    pub changed_by: Option<String>,
    /// Seconds since the Unix epoch.
    pub changed_at: Option<u64>,
}

/// Every editable boot template.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct TemplateList {
    pub templates: Vec<TemplateSummary>,
}

/// One template: the text in use and the default it replaces.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct TemplateView {
    #[serde(flatten)]
    pub summary: TemplateSummary,
    /// The text boots use now.
    pub text: String,
    /// The text a reset goes back to.
    pub default_text: String,
}

/// A new text for a template.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct TemplateText {
    pub text: String,
}

/// A text to try on one machine.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct PreviewRequest {
    pub text: String,
    /// The machine (one not in the CMDB gets the discovery plan).
    #[schema(pattern = r"^[:-]*([0-9A-Fa-f][:-]*){12}$")]
    pub mac: String,
}

/// What the machine would get.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct PreviewResult {
    /// The rendered script or answer file.
    pub output: String,
    /// For an iPXE template: the plan the machine gets (`profile <name>` or `local-disk`); its
    /// script comes from `localboot.ipxe` or `profile.ipxe` accordingly.
    pub plan: Option<String>,
}

fn boot(s: &ApiState) -> Result<&BootState, ApiError> {
    s.boot.as_deref().ok_or_else(|| ApiError::not_found("the boot service is off (no [tftp] root)"))
}

fn refused(e: TemplateError) -> ApiError {
    match e {
        TemplateError::Unknown(_) => ApiError::not_found(e.to_string()),
        TemplateError::TooLarge(_) => ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, e.to_string()),
        TemplateError::Render(_) => ApiError::field("text", e.to_string()),
        TemplateError::Cmdb(c) => c.into(),
    }
}

fn summary(name: &str, o: Option<&TemplateOverride>) -> TemplateSummary {
    TemplateSummary {
        name: name.into(),
        source: if o.is_some() { "override" } else { "default" }.into(),
        changed_by: o.map(|o| o.changed_by.clone()),
        changed_at: o.map(|o| o.changed_at),
    }
}

/// Every editable boot template and where its text comes from.
#[utoipa::path(get, path = "/templates", tag = "templates",
    responses((status = 200, description = "Every template", body = TemplateList)))]
async fn list(State(s): State<ApiState>) -> Result<Json<TemplateList>, ApiError> {
    let stored = s.cmdb.template_override_list().await?;
    let templates = NAMES.iter().map(|(n, _)| summary(n, stored.iter().find(|o| o.name == *n))).collect();
    Ok(Json(TemplateList { templates }))
}

/// One template: its text in use and its default.
#[utoipa::path(get, path = "/templates/{name}", tag = "templates",
    params(("name" = String, Path, description = "profile.ipxe, localboot.ipxe, profile.grub, localboot.grub, kickstart, preseed or autoinstall")),
    responses((status = 200, description = "The template", body = TemplateView),
        (status = 404, description = "No such template", body = super::Problem, content_type = "application/problem+json")))]
async fn show(State(s): State<ApiState>, Path(name): Path<String>) -> Result<Json<TemplateView>, ApiError> {
    let default_text = boot(&s)?.renderer.default_text(&name).map_err(refused)?;
    let stored = s.cmdb.template_override(name.clone()).await?;
    let text = stored.as_ref().map_or_else(|| default_text.clone(), |o| o.text.clone());
    Ok(Json(TemplateView { summary: summary(&name, stored.as_ref()), text, default_text }))
}

/// Saves an override once it parses and renders for a sample machine; boots use it at once.
#[utoipa::path(put, path = "/templates/{name}", tag = "templates", request_body = TemplateText,
    params(("name" = String, Path, description = "Template name")),
    responses((status = 200, description = "Stored and in use", body = TemplateView),
        (status = 400, description = "Does not parse or render (the detail names the line)", body = super::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such template", body = super::Problem, content_type = "application/problem+json"),
        (status = 413, description = "Larger than 64 KiB", body = super::Problem, content_type = "application/problem+json")))]
async fn save(
    State(s): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    body: Result<Json<TemplateText>, JsonRejection>,
) -> Result<Json<TemplateView>, ApiError> {
    let Json(TemplateText { text }) = body?;
    let templates = &boot(&s)?.renderer;
    let mut stored = s.cmdb.template_overrides().await?;
    stored.remove(&name);
    templates.check_blocking(stored, name.clone(), text.clone()).await.map_err(refused)?;
    let o = TemplateOverride { name: name.clone(), text, changed_by: caller.user, changed_at: crate::cmdb::now_secs() };
    s.cmdb.put_template_override(o).await?;
    templates.reload(&s.cmdb).await.map_err(refused)?;
    tracing::info!(template = %name, "boot template override saved");
    show(State(s), Path(name)).await
}

/// Deletes the override: the default is used again.
#[utoipa::path(delete, path = "/templates/{name}", tag = "templates",
    params(("name" = String, Path, description = "Template name")),
    responses((status = 200, description = "Back to the default", body = TemplateView),
        (status = 404, description = "No such template", body = super::Problem, content_type = "application/problem+json")))]
async fn reset(State(s): State<ApiState>, Path(name): Path<String>) -> Result<Json<TemplateView>, ApiError> {
    let templates = &boot(&s)?.renderer;
    templates.default_text(&name).map_err(refused)?;
    if s.cmdb.delete_template_override(name.clone()).await? {
        templates.reload(&s.cmdb).await.map_err(refused)?;
        tracing::info!(template = %name, "boot template override deleted");
    }
    show(State(s), Path(name)).await
}

/// Renders `text` for one machine as its boot would (the iPXE script of its plan; an answer
/// file with its MAC and name and made-up rest), saving nothing and handing out no nonce or token.
#[utoipa::path(post, path = "/templates/{name}/preview", tag = "templates", request_body = PreviewRequest,
    params(("name" = String, Path, description = "Template name")),
    responses((status = 200, description = "What the machine would get", body = PreviewResult),
        (status = 400, description = "Does not parse or render, or a bad MAC", body = super::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such template", body = super::Problem, content_type = "application/problem+json")))]
async fn preview(
    State(s): State<ApiState>,
    Path(name): Path<String>,
    body: Result<Json<PreviewRequest>, JsonRejection>,
) -> Result<Json<PreviewResult>, ApiError> {
    let Json(PreviewRequest { text, mac }) = body?;
    let boot = boot(&s)?;
    let mac: crate::mac::Mac =
        mac.trim().parse().map_err(|e: crate::mac::ParseMacError| ApiError::field("mac", e.to_string()))?;
    let mut stored = s.cmdb.template_overrides().await?;
    stored.remove(&name);
    let renderer = boot.renderer.check_blocking(stored, name.clone(), text).await.map_err(refused)?;
    let machine = s.cmdb.machine_by_mac(mac).await.ok();
    let hostname = machine.as_ref().and_then(|m| m.hostname.clone());
    if name == "unattend" {
        let profiles = super::profiles::all_profiles(&s).await?;
        let pinned = crate::windows::pinned_media(&profiles, machine.as_ref().and_then(|m| m.boot_profile.as_deref()));
        // The share's address is the one firmware reaches the appliance at.
        let host = boot.http_base.trim_start_matches("http://").split([':', '/']).next().unwrap_or("");
        let media = pinned.as_deref().unwrap_or("sample");
        let vars = crate::windows::unattend::vars(mac, hostname.as_deref(), media, host.parse().ok());
        let output = renderer.unattend(&vars).map_err(|e| ApiError::field("text", e.to_string()))?;
        return Ok(Json(PreviewResult { output, plan: None }));
    }
    let Some(loader) = crate::templates::loader_of(&name) else {
        let vars =
            crate::templates::sample_answer(&boot.http_base, &mac.to_string(), hostname.as_deref().unwrap_or("sample"));
        let output = renderer.answer(&name, &vars).map_err(|e| ApiError::field("text", e.to_string()))?;
        return Ok(Json(PreviewResult { output, plan: None }));
    };
    let profiles = super::profiles::all_profiles(&s).await?;
    let ctx = planner::PlanContext {
        http_base: &boot.http_base,
        discovery_profile: &boot.discovery_profile,
        profiles: &profiles,
    };
    let plan = planner::plan_boot(mac, machine.as_ref(), &ctx).map_err(|e| ApiError::internal(e.to_string()))?;
    let vars = ScriptVars {
        mac: mac.to_string(),
        hostname,
        uefi: machine.as_ref().and_then(|m| m.last_arch.as_deref()).is_some_and(|a| a != "bios"),
        http_base: boot.http_base.clone(),
        boot_nonce: None,
        agent_url: boot.agent_url.clone(),
        ca_pin: boot.ca_pin.clone(),
    };
    let output = renderer.script(loader, &plan, &vars).map_err(|e| ApiError::field("text", e.to_string()))?;
    let plan = match &plan {
        BootPlan::Profile(p) => format!("profile {}", p.name),
        BootPlan::LocalDisk => "local-disk".into(),
        BootPlan::Windows { profile, .. } => format!("windows profile {profile}"),
    };
    Ok(Json(PreviewResult { output, plan: Some(plan) }))
}
