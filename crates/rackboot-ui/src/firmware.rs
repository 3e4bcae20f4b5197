//! `/ui/firmware`: the firmware baselines (each component, and the images not uploaded yet) and
//! the uploaded images, with an upload form for operators; and a rack page's "bring to the
//! baseline" button (`/ui/racks/{name}/firmware`). Both are API calls made in-process: the
//! upload streams the form's file to `PUT /api/v1/firmware/images` as it arrives (an image may
//! be gigabytes: nothing holds it whole), which bounds, hashes and audits it as for the CLI.

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Multipart, Path, Query, State};
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value as V;
use serde_json::json;

use super::form::{Form, NoticeQuery};
use super::session::{self, Session};
use super::view::{message, urlencode};
use super::{forward, UiState};

pub fn routes() -> Router<UiState> {
    Router::new()
        // The API bounds the image (firmware.max_image_mb) as it streams through.
        .route("/ui/firmware", get(list).post(upload).layer(DefaultBodyLimit::disable()))
        .route("/ui/racks/{name}/firmware", post(rack_update))
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
    let baselines = forward::as_session(s, session, Method::GET, "/firmware/baselines", None).await;
    let images = forward::as_session(s, session, Method::GET, "/firmware/images", None).await;
    for answer in [&baselines, &images] {
        if !answer.status.is_success() {
            return message(&s.views, answer.status, "Firmware", &answer.message(), session);
        }
    }
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), notice, error,
        baselines => V::from(Serde(&baselines.body["baselines"])),
        images => V::from(Serde(&images.body["images"])),
        max_mb => images.body["max_bytes"].as_u64().unwrap_or(0) >> 20,
    };
    let mut resp = s.views.page("firmware.html", ctx);
    *resp.status_mut() = status;
    resp
}

/// The upload: the form's `csrf` field first, then `image`, streamed on to the API.
async fn upload(State(s): State<UiState>, session: Session, headers: HeaderMap, mut form: Multipart) -> Response {
    let csrf = match form.next_field().await {
        Ok(Some(f)) if f.name() == Some("csrf") => f.text().await.ok().filter(|t| t.len() <= 256),
        _ => None,
    };
    if let Err(why) = session::check_post(&session, &headers, csrf.as_deref()) {
        return session::refuse(why);
    }
    let mut field = match form.next_field().await {
        Ok(Some(f)) if f.name() == Some("image") => f,
        _ => {
            let why = "Nothing was uploaded: choose the image file".to_string();
            return page(&s, &session, None, Some(why), StatusCode::BAD_REQUEST).await;
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let req = Request::builder()
        .method(Method::PUT)
        .uri("/api/v1/firmware/images")
        .header(header::AUTHORIZATION, format!("Bearer {}", session.bearer))
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from_stream(stream))
        .expect("a request from valid parts");
    let pump = async move {
        loop {
            let chunk = match field.chunk().await {
                Ok(Some(c)) => Ok(c),
                Ok(None) => return,
                Err(e) => Err(std::io::Error::other(e.to_string())),
            };
            let cut = chunk.is_err();
            // The API stopped reading (it refused the image): nothing more to send.
            if tx.send(chunk).await.is_err() || cut {
                return;
            }
        }
    };
    let (answer, ()) = tokio::join!(forward::send_as(&s, &session, req), pump);
    if answer.status.is_success() {
        let how = if answer.status == StatusCode::CREATED { "uploaded" } else { "was already uploaded" };
        let what =
            format!("sha256:{} ({} bytes) {how}", answer.body["sha256"].as_str().unwrap_or("?"), answer.body["bytes"]);
        return Redirect::to(&format!("/ui/firmware?notice={}", urlencode(&what))).into_response();
    }
    if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
        return message(&s.views, answer.status, "Firmware", &answer.message(), &session);
    }
    let why = format!("The image was refused: {}", answer.message());
    page(&s, &session, None, Some(why), StatusCode::BAD_REQUEST).await
}

/// A rack page's button: every machine of the rack brought to its baseline.
async fn rack_update(
    State(s): State<UiState>,
    session: Session,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let f = match Form::rack_posted(&s, &session, &name, &headers, body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let restart = f.get("restart") != Some("no");
    let path = format!("/racks/{name}/firmware/update");
    let answer = forward::as_session(&s, &session, Method::POST, &path, Some(json!({"restart": restart}))).await;
    let notice = if answer.status.is_success() {
        let count = |k: &str| answer.body[k].as_array().map_or(0, Vec::len);
        let mut n = format!("Firmware: {} machines are being brought to their baseline.", count("started"));
        for r in answer.body["refused"].as_array().into_iter().flatten().take(8) {
            n += &format!(" Machine {}: {}.", r["machine_id"], r["error"].as_str().unwrap_or("refused"));
        }
        n
    } else {
        format!("The firmware update did not start: {}", answer.message())
    };
    let notice: String = notice.chars().take(2000).collect();
    Redirect::to(&format!("/ui/racks/{name}?notice={}", urlencode(&notice))).into_response()
}

/// Each placed machine's standing against its firmware baseline (machine id -> current,
/// drift, unknown; absent: no baseline), from its BMC's last read.
pub(super) async fn standings(
    s: &UiState,
    view: &rackboot_model::racks::flags::RackView,
) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    let Some(f) = &s.api.firmware else { return out };
    for m in view.slots.iter().flat_map(|slot| &slot.machines) {
        let Ok(machine) = s.api.cmdb.machine(m.id).await else { continue };
        if let Ok(Some(d)) = f.drift(&machine).await {
            let standing = if f.updating(m.id) { json!("updating") } else { json!(d.standing) };
            out.insert(m.id.to_string(), standing);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_firmware_page_renders_baselines_images_and_the_form() {
        let views = super::super::view::Views::new().unwrap();
        let hex = "ab".repeat(32);
        let baselines = json!([{"name": "r650", "components": [
            {"component": "bios", "version": "1.1.0", "image": hex},
            {"component": "nic", "version": "22.31.6", "image": "cd".repeat(32), "match": "ConnectX"}],
            "missing_images": ["cd".repeat(32)]}]);
        let images = json!([{"sha256": hex, "bytes": 17, "stored_at_ms": 1, "used_by": ["r650"]}]);
        let ctx = minijinja::context! {
            user => "olga", role => "operator", csrf => "c", operator => true, notice => "<b>x</b>",
            error => V::from(None::<String>), baselines => V::from(Serde(baselines)),
            images => V::from(Serde(images)), max_mb => 2048,
        };
        let html = views.render("firmware.html", ctx).unwrap();
        assert!(html.contains("id=\"upload\"") && html.contains("2048 MiB"), "{html}");
        assert!(html.contains("ConnectX") && html.contains("by kind"), "{html}");
        assert_eq!(html.matches("not uploaded").count(), 1, "{html}");
        assert!(html.contains("&lt;b&gt;x"), "escaped: {html}");
    }
}
