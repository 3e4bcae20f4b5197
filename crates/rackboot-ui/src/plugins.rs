//! `/ui/plugins`: the signed vendor hardware plugins (each version with its signer, hash and
//! whether agents get it) and, for an admin, the upload form: a bundle and its minisign
//! signature, sent on as `POST /api/v1/plugins`, so the API verifies, refuses with its reason and
//! audits exactly as for the CLI. The form is multipart; it is read here field by field with
//! caps (the CSRF token first), then forwarded as a new multipart body.

use axum::extract::{DefaultBodyLimit, Multipart, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value as V;

use super::form::NoticeQuery;
use super::session::{self, Session};
use super::view::{message, urlencode};
use super::{forward, UiState};

/// The most the form's small fields (CSRF token, the downgrade box) may hold.
const SMALL_FIELD: usize = 256;

pub fn routes(max_bundle: u64) -> Router<UiState> {
    let limit = usize::try_from(max_bundle).unwrap_or(usize::MAX).saturating_add(64 << 10);
    Router::new().route("/ui/plugins", get(list).post(upload).layer(DefaultBodyLimit::max(limit)))
}

async fn list(
    State(s): State<UiState>,
    session: Session,
    q: Result<Query<NoticeQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    page(&s, &session, NoticeQuery::notice(q), None, StatusCode::OK).await
}

async fn page(
    s: &UiState,
    session: &Session,
    notice: Option<String>,
    error: Option<String>,
    status: StatusCode,
) -> Response {
    let answer = forward::as_session(s, session, Method::GET, "/plugins", None).await;
    if !answer.status.is_success() {
        return message(&s.views, answer.status, "Plugins", &answer.message(), session);
    }
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), admin => session.caller.role == rackboot_control::auth::Role::Admin,
        plugins => V::from(Serde(&answer.body["plugins"])), notice, error,
    };
    let mut resp = s.views.page("plugins.html", ctx);
    *resp.status_mut() = status;
    resp
}

/// The form's fields, each read with its cap.
#[derive(Default)]
struct Upload {
    csrf: Option<String>,
    bundle: Option<Vec<u8>>,
    signature: Option<Vec<u8>>,
    downgrade: bool,
}

async fn read(mut form: Multipart, max_bundle: usize) -> Result<Upload, String> {
    let mut up = Upload::default();
    while let Some(mut field) = form.next_field().await.map_err(|e| format!("the form could not be read: {e}"))? {
        let name = field.name().unwrap_or_default().to_string();
        let cap = match name.as_str() {
            "bundle" => max_bundle,
            "signature" => rackboot_control::plugins::verify::MAX_SIG_BYTES,
            "csrf" | "allow_downgrade" => SMALL_FIELD,
            other => return Err(format!("the form has an unknown field {other:?}")),
        };
        let mut buf = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(|e| format!("the form could not be read: {e}"))? {
            if buf.len() + chunk.len() > cap {
                return Err(format!("{name} is larger than {cap} bytes"));
            }
            buf.extend_from_slice(&chunk);
        }
        match name.as_str() {
            "bundle" => up.bundle = Some(buf),
            "signature" => up.signature = Some(buf),
            "csrf" => up.csrf = Some(String::from_utf8_lossy(&buf).into_owned()),
            _ => up.downgrade = !buf.is_empty(),
        }
    }
    Ok(up)
}

/// The API's multipart body: the bundle, the signature and the downgrade flag.
fn multipart(up: Upload) -> Result<(String, Vec<u8>), String> {
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).map_err(|e| format!("no randomness: {e}"))?;
    let boundary = format!("rackboot-{}", raw.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let mut body = Vec::new();
    let parts = [("bundle", up.bundle.unwrap_or_default()), ("signature", up.signature.unwrap_or_default())]
        .into_iter()
        .chain(up.downgrade.then(|| ("allow_downgrade", b"true".to_vec())));
    for (name, bytes) in parts {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes(),
        );
        body.extend_from_slice(&bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Ok((format!("multipart/form-data; boundary={boundary}"), body))
}

async fn upload(State(s): State<UiState>, session: Session, headers: HeaderMap, form: Multipart) -> Response {
    let Some(store) = s.api.plugins.clone() else {
        return message(&s.views, StatusCode::NOT_FOUND, "Plugins", "plugins are off on this appliance", &session);
    };
    let max = usize::try_from(store.limits.max_bundle_bytes).unwrap_or(usize::MAX);
    let up = match read(form, max).await {
        Ok(up) => up,
        Err(why) => {
            return page(&s, &session, None, Some(format!("Nothing was uploaded: {why}")), StatusCode::BAD_REQUEST)
                .await
        }
    };
    if let Err(why) = session::check_post(&session, &headers, up.csrf.as_deref()) {
        return session::refuse(why);
    }
    if up.bundle.as_ref().is_none_or(Vec::is_empty) || up.signature.as_ref().is_none_or(Vec::is_empty) {
        let why = "Nothing was uploaded: choose the bundle (.tar.gz) and its signature (.minisig)".to_string();
        return page(&s, &session, None, Some(why), StatusCode::BAD_REQUEST).await;
    }
    let (content_type, body) = match multipart(up) {
        Ok(m) => m,
        Err(why) => return message(&s.views, StatusCode::INTERNAL_SERVER_ERROR, "Plugins", &why, &session),
    };
    let answer = forward::as_session_raw(&s, &session, Method::POST, "/plugins", &content_type, body).await;
    if answer.status.is_success() {
        let p = &answer.body["plugin"];
        let what = format!(
            "{} {} {}",
            p["name"].as_str().unwrap_or("the plugin"),
            p["version"].as_str().unwrap_or(""),
            if answer.body["created"] == true { "uploaded and verified" } else { "was already stored" }
        );
        return Redirect::to(&format!("/ui/plugins?notice={}", urlencode(&what))).into_response();
    }
    if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
        return message(&s.views, answer.status, "Plugins", &answer.message(), &session);
    }
    let why = format!("The plugin was refused: {}", answer.message());
    page(&s, &session, None, Some(why), StatusCode::BAD_REQUEST).await
}
