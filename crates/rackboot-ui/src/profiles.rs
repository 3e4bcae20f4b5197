//! Boot profiles: `/ui/profiles` lists every profile (the config's are read-only) with a form
//! for a new one; `/ui/profiles/{name}` shows one. "Preview" renders the iPXE script a sample
//! machine would get from what is in the form, with the same template checks as a boot, and
//! saves nothing; "Save" sends the form to `PUT /api/v1/profiles/{name}`, so the API's
//! validation, role table and audit decide. A refused save keeps what was typed and says why.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value as V;
use serde::Serialize;
use serde_json::json;

use super::form::Form;
use super::session::{self, Session};
use super::view::{message, urlencode};
use super::{forward, UiState};
use rackboot_config::Profile;

pub fn routes() -> Router<UiState> {
    Router::new()
        .route("/ui/profiles", get(list).post(post_new))
        .route("/ui/profiles/{name}", get(show).post(post_existing))
}

/// What the form shows.
#[derive(Debug, Default, Serialize)]
struct Fields {
    name: String,
    kernel: String,
    initrd: String,
    cmdline: String,
    answer: String,
    /// A Windows profile's media (config-defined only); empty otherwise.
    windows: String,
    /// Defined in the config file: shown, never edited here.
    config: bool,
}

impl Fields {
    fn of(p: &Profile, config: bool) -> Fields {
        Fields {
            name: p.name.clone(),
            kernel: p.kernel.clone(),
            initrd: p.initrd.clone(),
            cmdline: p.cmdline.clone(),
            answer: p.answer.clone().unwrap_or_default(),
            windows: p.windows.clone().unwrap_or_default(),
            config,
        }
    }

    fn from_form(name: &str, f: &Form) -> Fields {
        let text = |k: &str| f.get(k).unwrap_or("").trim().to_string();
        Fields {
            name: name.trim().to_string(),
            kernel: text("kernel"),
            initrd: text("initrd"),
            cmdline: text("cmdline"),
            answer: text("answer"),
            windows: String::new(),
            config: false,
        }
    }

    fn profile(&self) -> Profile {
        Profile {
            name: self.name.clone(),
            kernel: self.kernel.clone(),
            initrd: self.initrd.clone(),
            cmdline: self.cmdline.clone(),
            answer: (!self.answer.is_empty()).then(|| self.answer.clone()),
            windows: None,
            arm64: None,
        }
    }
}

/// Every profile, the config's first marked read-only.
async fn profiles(s: &UiState) -> Result<Vec<Fields>, String> {
    let all = rackboot_api::api::profiles::all_profiles(&s.api).await.map_err(|e| e.detail)?;
    let config = s.api.boot.as_ref().map(|b| b.profiles.clone()).unwrap_or_default();
    Ok(all.values().map(|p| Fields::of(p, config.contains_key(&p.name))).collect())
}

struct Page<'a> {
    fields: Fields,
    is_new: bool,
    preview: Option<String>,
    error: Option<String>,
    notice: Option<&'a str>,
}

async fn render(s: &UiState, session: &Session, page: Page<'_>, status: StatusCode) -> Response {
    let list = match profiles(s).await {
        Ok(l) => l,
        Err(e) => return message(&s.views, StatusCode::SERVICE_UNAVAILABLE, "Boot profiles", &e, session),
    };
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), profiles => V::from(Serde(&list)), f => V::from(Serde(&page.fields)),
        is_new => page.is_new, preview => page.preview, error => page.error, notice => page.notice,
        answers => rackboot_boot::render::ANSWER_KINDS,
    };
    let mut resp = s.views.page("profiles.html", ctx);
    *resp.status_mut() = status;
    resp
}

async fn list(State(s): State<UiState>, session: Session) -> Response {
    let page = Page { fields: Fields::default(), is_new: true, preview: None, error: None, notice: None };
    render(&s, &session, page, StatusCode::OK).await
}

async fn show(
    State(s): State<UiState>,
    session: Session,
    Path(name): Path<String>,
    q: axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    let found = profiles(&s).await.ok().and_then(|l| l.into_iter().find(|p| p.name == name));
    let Some(fields) = found else {
        return message(&s.views, StatusCode::NOT_FOUND, "Boot profile", "no such profile", &session);
    };
    let preview = preview(&s, &fields).unwrap_or_else(|e| format!("does not render: {e}"));
    let notice = q.get("saved").map(|_| "Saved.");
    let page = Page { fields, is_new: false, preview: Some(preview), error: None, notice };
    render(&s, &session, page, StatusCode::OK).await
}

/// The iPXE script of `fields` for a sample machine, or why it does not render.
fn preview(s: &UiState, fields: &Fields) -> Result<String, String> {
    let boot = s.api.boot.as_ref().ok_or("the boot service is off (no [tftp] root)")?;
    if fields.kernel.is_empty() || fields.initrd.is_empty() {
        return Err("kernel and initrd are required".into());
    }
    boot.renderer
        .current()
        .check_cmdline(&fields.cmdline, !fields.answer.is_empty())
        .map_err(|e| format!("cmdline: {e}"))?;
    boot.renderer.current().preview(&fields.profile(), &boot.http_base, &boot.agent_url).map_err(|e| e.to_string())
}

async fn post_new(State(s): State<UiState>, session: Session, headers: HeaderMap, body: axum::body::Body) -> Response {
    submit(s, session, headers, body, None).await
}

async fn post_existing(
    State(s): State<UiState>,
    session: Session,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: axum::body::Body,
) -> Response {
    submit(s, session, headers, body, Some(name)).await
}

/// "Preview" or "Save" from the form; a new profile's name comes from the form.
async fn submit(
    s: UiState,
    session: Session,
    headers: HeaderMap,
    body: axum::body::Body,
    name: Option<String>,
) -> Response {
    let f = match Form::read(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    if let Err(why) = session::check_post(&session, &headers, f.get("csrf")) {
        return session::refuse(why);
    }
    let is_new = name.is_none();
    let name = name.unwrap_or_else(|| f.get("name").unwrap_or("").to_string());
    let fields = Fields::from_form(&name, &f);
    if fields.name.is_empty() {
        let error = Some("The profile needs a name.".to_string());
        return render(
            &s,
            &session,
            Page { fields, is_new, preview: None, error, notice: None },
            StatusCode::BAD_REQUEST,
        )
        .await;
    }
    if f.get("action") == Some("preview") {
        let (preview, error, status) = match preview(&s, &fields) {
            Ok(p) => (Some(p), None, StatusCode::OK),
            Err(e) => (None, Some(format!("The preview failed: {e}")), StatusCode::BAD_REQUEST),
        };
        return render(&s, &session, Page { fields, is_new, preview, error, notice: None }, status).await;
    }
    let spec = json!({"kernel": fields.kernel, "initrd": fields.initrd, "cmdline": fields.cmdline,
        "answer": (!fields.answer.is_empty()).then_some(&fields.answer)});
    let path = format!("/profiles/{}", urlencode(&fields.name));
    let answer = forward::as_session(&s, &session, Method::PUT, &path, Some(spec)).await;
    if answer.status.is_success() {
        return Redirect::to(&format!("/ui/profiles/{}?saved=1", urlencode(&fields.name))).into_response();
    }
    if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
        return message(&s.views, answer.status, "Boot profiles", &answer.message(), &session);
    }
    let error = Some(format!("The profile was not saved: {}", answer.message()));
    render(&s, &session, Page { fields, is_new, preview: None, error, notice: None }, StatusCode::BAD_REQUEST).await
}
