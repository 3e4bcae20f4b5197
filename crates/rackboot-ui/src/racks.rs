//! Rack bring-up in the browser: `/ui/racks` lists racks and holds the form that creates one
//! (sent to `POST /api/v1/racks` like every UI change, so the API's checks, role table and
//! audit apply), and `/ui/racks/{name}` shows its elevation and flags, kept current by one
//! server-sent-events stream (`/ui/racks/{name}/live`): whenever the timeline moves, the
//! elevation's rows and the flags are rendered again from the page's own templates and sent
//! whole (`elevation` and `flags` frames; `ui.js` swaps them in).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value;
use serde_json::json;

use super::form::Form;
use super::session::{self, Session};
use super::view::{message, urlencode};
use super::{forward, rack_bmcs, UiState};
use rackboot_control::racks::flags::RackView;
use rackboot_control::racks::SwitchId;

pub fn routes() -> Router<UiState> {
    Router::new()
        .route("/ui/racks", get(list).post(create))
        .route("/ui/racks/{name}", get(show))
        .route("/ui/racks/{name}/live", get(live))
        .route("/ui/racks/{name}/confirm", axum::routing::post(confirm))
}

/// A switch as a page names it.
fn switch_text(s: &SwitchId) -> String {
    [&s.remote_id, &s.lldp_chassis_name, &s.lldp_chassis_id]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(" / ")
}

fn base(session: &Session) -> serde_json::Map<String, serde_json::Value> {
    let v = json!({"user": session.caller.user, "role": session.caller.role.as_str(), "csrf": session.csrf,
                   "operator": session.operator(), "scoped": session.scoped(), "pools_text": session.pools_text()});
    match v {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    }
}

/// The racks page; after a refusal (`error`, answered 400) `form` fills the form again.
async fn page(s: &UiState, session: &Session, form: serde_json::Value, error: Option<String>) -> Response {
    let racks = match s.api.cmdb.racks().await {
        Ok(r) => r,
        Err(e) => return message(&s.views, StatusCode::SERVICE_UNAVAILABLE, "Racks", &e.to_string(), session),
    };
    let rows: Vec<serde_json::Value> = racks
        .iter()
        .filter(|r| session.sees(&r.pool))
        .map(|r| {
            json!({"name": r.name, "location": r.location, "switch": switch_text(&r.switch),
                   "slots": r.expected_slots().len(), "auto_provision": r.auto_provision, "flags": r.raised.len()})
        })
        .collect();
    let mut ctx = base(session);
    let refused = error.is_some();
    ctx.extend([("racks".into(), json!(rows)), ("f".into(), form), ("error".into(), json!(error))]);
    let mut resp = s.views.page("racks.html", Value::from(Serde(ctx)));
    if refused {
        *resp.status_mut() = StatusCode::BAD_REQUEST;
    }
    resp
}

async fn list(State(s): State<UiState>, session: Session) -> Response {
    page(&s, &session, blank(), None).await
}

/// The form's fields, empty (templates are strict: every field is there).
fn blank() -> serde_json::Value {
    let mut v: serde_json::Map<String, serde_json::Value> = FIELDS.iter().map(|k| (k.to_string(), json!(""))).collect();
    v.insert("auto_provision".into(), json!(false));
    v.insert("trust_lldp".into(), json!(false));
    v.insert("bmc_insecure".into(), json!(false));
    v.insert("lvm".into(), json!(false));
    serde_json::Value::Object(v)
}

/// The form's text fields.
const FIELDS: [&str; 22] = [
    "name",
    "location",
    "pool",
    "remote_id",
    "lldp_chassis_name",
    "lldp_chassis_id",
    "ports",
    "hostname_pattern",
    "address_plan",
    "hardware_profile",
    "os_profile",
    "silent_after_minutes",
    "machines_csv",
    "uefi_loader",
    "bmc_csv",
    "bmc_username",
    "network",
    "network_plans",
    "user_data",
    "root_device",
    "mirror",
    "filesystems",
];

/// The form as the API's rack spec; why not, when the network spec is not JSON or a plan line
/// is not `NETWORK=FIRST-LAST`.
fn spec(f: &Form) -> Result<serde_json::Value, String> {
    let text = |k: &str| f.get(k).map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
    let ports = f.get("ports").unwrap_or("");
    let lines: Vec<&str> = ports.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    // Range lines (`->`) go as `ports`; anything else is the CSV form of the map.
    let (ranges, csv): (Vec<&str>, Vec<&str>) = lines.into_iter().partition(|l| l.contains("->"));
    let network: Option<serde_json::Value> = match text("network") {
        Some(t) => Some(serde_json::from_str(&t).map_err(|e| format!("the network spec is not JSON: {e}"))?),
        None => None,
    };
    let root_device = match text("root_device") {
        Some(v) => Some(rackboot_model::provision::RootDeviceHints::from_pairs(v.split(',').map(str::trim))?),
        None => None,
    };
    let mut plans = serde_json::Map::new();
    for line in f.get("network_plans").unwrap_or("").lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (net, range) =
            line.split_once('=').ok_or_else(|| format!("network plan {line:?} is not NETWORK=FIRST-LAST"))?;
        plans.insert(net.trim().to_string(), json!(range.trim()));
    }
    Ok(json!({
        "name": f.get("name").unwrap_or("").trim(),
        "location": text("location"),
        "pool": text("pool").unwrap_or_else(|| rackboot_model::pools::DEFAULT.into()),
        "switch": {"remote_id": text("remote_id"), "lldp_chassis_name": text("lldp_chassis_name"),
                   "lldp_chassis_id": text("lldp_chassis_id")},
        "ports": ranges,
        "ports_csv": (!csv.is_empty()).then(|| csv.join("\n")),
        "hostname_pattern": text("hostname_pattern").unwrap_or_else(|| rackboot_control::racks::DEFAULT_PATTERN.into()),
        "address_plan": text("address_plan"),
        "hardware_profile": text("hardware_profile"),
        "os_profile": text("os_profile"),
        "auto_provision": f.get("auto_provision").is_some(),
        "trust_lldp": f.get("trust_lldp").is_some(),
        "silent_after_minutes": text("silent_after_minutes").and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(rackboot_control::racks::DEFAULT_SILENT_MINUTES),
        "machines_csv": text("machines_csv"),
        "uefi_loader": text("uefi_loader"),
        "network": network,
        "network_plans": plans,
        "root_device": root_device,
        "layout": f.layout()?,
    }))
}

/// What the form held, to fill it again after a refusal.
fn refill(f: &Form) -> serde_json::Value {
    let mut v: serde_json::Map<String, serde_json::Value> =
        FIELDS.iter().map(|k| (k.to_string(), json!(f.get(k).unwrap_or("")))).collect();
    v.insert("auto_provision".into(), json!(f.get("auto_provision").is_some()));
    v.insert("trust_lldp".into(), json!(f.get("trust_lldp").is_some()));
    v.insert("bmc_insecure".into(), json!(f.get("bmc_insecure").is_some()));
    v.insert("lvm".into(), json!(f.get("lvm").is_some()));
    serde_json::Value::Object(v)
}

async fn create(State(s): State<UiState>, session: Session, headers: HeaderMap, body: axum::body::Body) -> Response {
    let f = match Form::read(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    if let Err(why) = session::check_post(&session, &headers, f.get("csrf")) {
        return session::refuse(why);
    }
    // The BMC rows are checked first: a bad one refuses the form before anything is stored.
    let (user, password) = (f.get("bmc_username").unwrap_or("").trim(), f.get("bmc_password").unwrap_or(""));
    let bmcs = match rack_bmcs::parse(f.get("bmc_csv").unwrap_or(""), user, password, f.get("bmc_insecure").is_some()) {
        Ok(rows) => rows,
        Err(why) => return page(&s, &session, refill(&f), Some(format!("The rack was not created: {why}"))).await,
    };
    let body = match spec(&f) {
        Ok(b) => b,
        Err(why) => return page(&s, &session, refill(&f), Some(format!("The rack was not created: {why}"))).await,
    };
    // Its cloud-init user-data is checked before the rack is created and stored right after.
    let user_data = f.get("user_data").map(|v| v.replace("\r\n", "\n")).filter(|v| !v.trim().is_empty());
    if let Some(Err(why)) = user_data.as_deref().map(rackboot_model::cloudinit::check_user_data) {
        return page(&s, &session, refill(&f), Some(format!("The rack was not created: {why}"))).await;
    }
    let answer = forward::as_session(&s, &session, Method::POST, "/racks", Some(body)).await;
    if answer.status.is_success() {
        let name = answer.body["rack"]["name"].as_str().unwrap_or_default().to_string();
        let mut to = format!("/ui/racks/{}", super::view::urlencode(&name));
        let mut notices = Vec::new();
        if let Some(text) = user_data {
            let path = format!("/racks/{}/user-data", super::view::urlencode(&name));
            let put = forward::as_session(&s, &session, Method::PUT, &path, Some(json!({"text": text}))).await;
            if !put.status.is_success() {
                notices.push(format!("user-data not set: {}", put.message()));
            }
        }
        if !bmcs.is_empty() {
            let (done, failed) = rack_bmcs::apply(&s, &session, &bmcs).await;
            let mut notice = format!("BMCs set: {done} of {}", bmcs.len());
            if !failed.is_empty() {
                notice += &format!("; not set: {}", failed.join("; "));
            }
            notices.push(notice);
        }
        if !notices.is_empty() {
            to += &format!("?notice={}", super::view::urlencode(&notices.join("; ")));
        }
        return Redirect::to(&to).into_response();
    }
    if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
        return message(&s.views, answer.status, "Racks", &answer.message(), &session);
    }
    page(&s, &session, refill(&f), Some(format!("The rack was not created: {}", answer.message()))).await
}

/// The rack page's context.
fn view_ctx(session: &Session, view: &RackView, firmware: serde_json::Map<String, serde_json::Value>) -> Value {
    let mut ctx = base(session);
    ctx.insert("view".into(), serde_json::to_value(view).unwrap_or_default());
    ctx.insert("firmware".into(), serde_json::Value::Object(firmware));
    ctx.insert("switch".into(), json!(switch_text(&view.rack.switch)));
    Value::from(Serde(ctx))
}

async fn show(
    State(s): State<UiState>,
    session: Session,
    Path(name): Path<String>,
    q: axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    if rackboot_control::racks::check_name(&name).is_err() {
        return message(&s.views, StatusCode::NOT_FOUND, "Rack", "no such rack", &session);
    }
    let notice: Option<String> = q.get("notice").map(|n| n.chars().take(2000).collect());
    match visible(&s, &session, name).await {
        Ok(view) => {
            let ctx = view_ctx(&session, &view, super::firmware::standings(&s, &view).await);
            let ctx = minijinja::context! { notice, ..ctx };
            s.views.page("rack.html", ctx)
        }
        Err(rackboot_store::CmdbError::NotFound(_)) => {
            message(&s.views, StatusCode::NOT_FOUND, "Rack", "no such rack", &session)
        }
        Err(e) => message(&s.views, StatusCode::SERVICE_UNAVAILABLE, "Rack", &e.to_string(), &session),
    }
}

/// The rack's elevation as `session` may see it: a pool-scoped user sees their pools' racks
/// (another's is not there) and in them their pools' machines only.
async fn visible(s: &UiState, session: &Session, name: String) -> Result<RackView, rackboot_store::CmdbError> {
    let mut view = s.api.cmdb.rack_view(name.clone()).await?;
    if !session.sees(&view.rack.pool) {
        return Err(rackboot_store::CmdbError::NotFound(format!("rack {name}")));
    }
    if session.scoped() {
        view.keep_machines(|id| s.api.cmdb.machine_pool(id).is_some_and(|p| session.sees(&p)));
    }
    Ok(view)
}

/// An operator confirms a machine's claim to a slot of this rack (the flag's button): sent to
/// `PUT /api/v1/machines/{id}/placement`, then back to the rack with what happened.
async fn confirm(
    State(s): State<UiState>,
    session: Session,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let f = match Form::rack_posted(&s, &session, &name, &headers, body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let (Some(machine), Some(slot)) = (
        f.get("machine").and_then(|m| m.trim().parse::<u64>().ok()),
        f.get("slot").and_then(|m| m.trim().parse::<u32>().ok()),
    ) else {
        return message(&s.views, StatusCode::BAD_REQUEST, "Rack", "a machine id and a slot are needed", &session);
    };
    let path = format!("/machines/{machine}/placement");
    let answer = forward::as_session(&s, &session, Method::PUT, &path, Some(json!({"rack": name, "slot": slot}))).await;
    let notice = if answer.status.is_success() {
        format!("Machine {machine} is placed in U{slot}.")
    } else {
        format!("Machine {machine} was not placed: {}", answer.message())
    };
    let to = format!("/ui/racks/{name}?notice={}", urlencode(&notice));
    Redirect::to(&to).into_response()
}

/// Longest a rack stream stays open; the browser reconnects at once, which checks the session
/// cookie again. (A revoked session ends it sooner: see `live::ended`.)
const STREAM_FOR: Duration = Duration::from_secs(60);
/// Events are gathered this long before the elevation is rendered again.
const COALESCE: Duration = Duration::from_millis(250);

async fn live(State(s): State<UiState>, session: Session, Path(name): Path<String>) -> Response {
    if rackboot_control::racks::check_name(&name).is_err() || visible(&s, &session, name.clone()).await.is_err() {
        return (StatusCode::NOT_FOUND, "no such rack\n").into_response();
    }
    let Ok(permit) = s.api.streams.clone().try_acquire_owned() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "too many live streams are open\n").into_response();
    };
    let mut events = s.api.cmdb.subscribe_events();
    let (tx, mut out) = tokio::sync::mpsc::channel::<SseEvent>(8);
    let shutdown = s.api.hub.shutdown.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let (cmdb, bearer) = (s.api.cmdb.clone(), session.bearer.clone());
        let render = async {
            let Ok(mut view) = visible(&s, &session, name.clone()).await else { return };
            loop {
                // Something happened to this rack: let the burst settle, then render once.
                match events.recv().await {
                    Ok(e) if !concerns(&view, &e) => continue,
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
                tokio::time::sleep(COALESCE).await;
                while events.try_recv().is_ok() {}
                let Ok(next) = visible(&s, &session, name.clone()).await else { return };
                view = next;
                let ctx = view_ctx(&session, &view, super::firmware::standings(&s, &view).await);
                let frames =
                    [("elevation", "rack_rows.html"), ("flags", "rack_flags.html"), ("picture", "rack_picture.html")];
                for (frame, template) in frames {
                    let Ok(html) = s.views.render(template, ctx.clone()) else { return };
                    if tx.send(SseEvent::default().event(frame).data(html.replace('\n', " "))).await.is_err() {
                        return;
                    }
                }
            }
        };
        tokio::select! {
            _ = render => {}
            _ = tokio::time::sleep(STREAM_FOR) => {}
            _ = shutdown.cancelled() => {}
            _ = super::live::ended(&cmdb, &bearer) => {}
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| out.poll_recv(cx).map(|e| e.map(Ok::<_, Infallible>)));
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

/// Whether an event can change the rack's page: it is about one of the rack's machines, or it
/// names the rack (a machine placed in it, a flag raised). Other machines' events cost nothing.
fn concerns(view: &RackView, e: &rackboot_store::Event) -> bool {
    e.detail.get("rack").and_then(|r| r.as_str()) == Some(view.rack.name.as_str())
        || view.slots.iter().flat_map(|s| &s.machines).any(|m| m.id == e.machine_id)
}

#[cfg(test)]
mod tests;
