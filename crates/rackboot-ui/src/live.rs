//! `GET /ui/machines/{id}/live`: the machine page's one server-sent-events stream. Each new
//! timeline event comes as a `timeline` frame whose data is the same `<li>` the page renders
//! (`templates/ui/event.html`), then a `state` frame with the machine's state; a job event
//! also sends the job's block again (`job`, `templates/ui/job.html`), and a running job's
//! output comes chunk by chunk (`output`: `{"job": id, "text": ...}`). `ui.js` swaps them in.
//! It resumes after `Last-Event-ID` (or `?after=`, the page's newest event), so nothing
//! recorded between the page's render and the stream's start is missed.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use minijinja::value::Serde;
use minijinja::Value;
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc::Sender;

use super::machine::{job_row, EventRow};
use super::session::Session;
use super::view::Views;
use super::UiState;
use rackboot_control::controller::{Hub, JobEvent};
use rackboot_model::jobs::JobState;
use rackboot_store::{Cmdb, Event, EventKind, JobFilter};

#[derive(Deserialize)]
pub struct LiveQuery {
    after: Option<u64>,
}

/// What a page's stream needs.
#[derive(Clone)]
struct Feed {
    cmdb: Cmdb,
    hub: Arc<Hub>,
    views: Arc<Views>,
    machine: u64,
    tx: Sender<SseEvent>,
}

/// The stream of one machine's page.
pub async fn stream(
    State(s): State<UiState>,
    session: Session,
    Path(id): Path<u64>,
    headers: HeaderMap,
    q: Result<Query<LiveQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    let after = resume.or(q.ok().and_then(|q| q.after)).unwrap_or(0).min(i64::MAX as u64);
    // Another pool's machine is not there for a pool-scoped user.
    if session.scoped() && s.api.cmdb.machine_pool(id).is_none_or(|p| !session.sees(&p)) {
        return (StatusCode::NOT_FOUND, "no such machine\n").into_response();
    }
    let Ok(permit) = s.api.streams.clone().try_acquire_owned() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "too many live streams are open\n").into_response();
    };
    // Subscribe before reading what is stored, so nothing committed in between is missed.
    let live = s.api.cmdb.subscribe_events();
    let (tx, mut out) = tokio::sync::mpsc::channel::<SseEvent>(64);
    let shutdown = s.api.hub.shutdown.clone();
    let feed = Feed { cmdb: s.api.cmdb.clone(), hub: s.api.hub.clone(), views: s.views.clone(), machine: id, tx };
    tokio::spawn(async move {
        let _permit = permit;
        let closed = feed.tx.clone();
        tokio::select! {
            _ = follow(&feed, after, live) => {}
            _ = closed.closed() => {}
            _ = shutdown.cancelled() => {}
            _ = ended(&feed.cmdb, &session.bearer) => {}
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| out.poll_recv(cx).map(|e| e.map(Ok::<_, Infallible>)));
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

/// Returns once the session's token no longer authenticates (logged out, revoked, expired,
/// its user disabled): at once for this appliance's own changes, else within
/// [`rackboot_control::auth::held::RECHECK`].
pub(super) async fn ended(cmdb: &Cmdb, bearer: &str) {
    let Some((id, hash)) = rackboot_control::auth::presented(bearer) else { return };
    rackboot_control::auth::held::until_refused(cmdb, id, hash).await
}

/// Sends the machine's events after `upto`, then live ones; reads the CMDB again whenever the
/// live feed overflowed. Returns when the page is gone.
async fn follow(feed: &Feed, mut upto: u64, mut live: tokio::sync::broadcast::Receiver<Arc<Event>>) {
    // Jobs already running when the page opened: their output from here on.
    let running = JobFilter {
        machine: Some(feed.machine),
        state: Some(JobState::Running),
        limit: Some(16),
        ..Default::default()
    };
    for job in feed.cmdb.jobs(running).await.map(|(jobs, _)| jobs).unwrap_or_default() {
        tokio::spawn(output(feed.clone(), job.id));
    }
    loop {
        let stored = feed.cmdb.events(feed.machine, upto, 1000).await.unwrap_or_default();
        for e in &stored {
            if send_event(feed, e, false).await.is_err() {
                return;
            }
            upto = upto.max(e.seq);
        }
        if stored.len() < 1000 {
            break;
        }
    }
    loop {
        match live.recv().await {
            Ok(e) if e.machine_id != feed.machine || e.seq <= upto => {}
            Ok(e) => {
                upto = e.seq;
                if send_event(feed, &e, true).await.is_err() {
                    return;
                }
            }
            Err(RecvError::Lagged(_)) => {
                for e in feed.cmdb.events(feed.machine, upto, 1000).await.unwrap_or_default() {
                    upto = upto.max(e.seq);
                    if send_event(feed, &e, false).await.is_err() {
                        return;
                    }
                }
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// Sends one event's frames; for a job event also the job's block, and when a job starts
/// (`live`: as it happens) its output as it comes.
async fn send_event(feed: &Feed, e: &Event, live: bool) -> Result<(), ()> {
    let row = EventRow::from(e);
    let html = feed.views.render("event.html", minijinja::context! { e => Value::from(Serde(&row)) });
    let html = html.map_err(|error| tracing::warn!(%error, "ui timeline entry not rendered"))?;
    send(feed, SseEvent::default().id(e.seq.to_string()).event("timeline").data(html.trim())).await?;
    if let Some(state) = row.state {
        send(feed, SseEvent::default().event("state").data(state)).await?;
    }
    let job = e.detail.get("job").and_then(serde_json::Value::as_u64);
    let Some(job_id) = job.filter(|_| e.kind.as_str().starts_with("job.")) else { return Ok(()) };
    if let Ok(job) = feed.cmdb.job(job_id).await {
        let j = job_row(&feed.cmdb, job).await;
        if let Ok(html) = feed.views.render("job.html", minijinja::context! { j => Value::from(Serde(&j)) }) {
            send(feed, SseEvent::default().event("job").data(html.trim())).await?;
        }
    }
    if live && e.kind == EventKind::JobStarted {
        tokio::spawn(output(feed.clone(), job_id));
    }
    Ok(())
}

/// Forwards a running job's output chunks until it is done or the page is gone.
async fn output(feed: Feed, job_id: u64) {
    let mut rx = feed.hub.subscribe(job_id);
    loop {
        let ev = tokio::select! {
            ev = rx.recv() => ev,
            _ = feed.tx.closed() => break,
            _ = feed.hub.shutdown.cancelled() => break,
        };
        match ev {
            Ok(JobEvent::Output(c)) => {
                let data = serde_json::json!({"job": job_id, "attempt": c.attempt, "text": c.data}).to_string();
                if send(&feed, SseEvent::default().event("output").data(data)).await.is_err() {
                    break;
                }
            }
            Ok(JobEvent::Done(_)) | Err(RecvError::Closed) => break,
            Err(RecvError::Lagged(_)) => {}
        }
    }
    drop(rx);
    feed.hub.release(job_id);
}

async fn send(feed: &Feed, frame: SseEvent) -> Result<(), ()> {
    feed.tx.send(frame).await.map_err(|_| ())
}
