//! `GET /ui/machines/{id}/live`: the machine page's one server-sent-events stream. Each new
//! timeline event comes as a `timeline` frame whose data is the same `<li>` the page renders
//! (`templates/ui/event.html`), then a `state` frame with the machine's state; `ui.js` swaps
//! them in. It resumes after `Last-Event-ID` (or `?after=`, the page's newest event), so
//! nothing recorded between the page's render and the stream's start is missed.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc::Sender;

use super::machine::EventRow;
use super::session::Session;
use super::UiState;
use crate::cmdb::{Cmdb, Event};

#[derive(Deserialize)]
pub struct LiveQuery {
    after: Option<u64>,
}

/// The stream of one machine's page.
pub async fn stream(
    State(s): State<UiState>,
    _session: Session,
    Path(id): Path<u64>,
    headers: HeaderMap,
    q: Result<Query<LiveQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    let after = resume.or(q.ok().and_then(|q| q.after)).unwrap_or(0).min(i64::MAX as u64);
    let Ok(permit) = s.api.streams.clone().try_acquire_owned() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "too many live streams are open\n").into_response();
    };
    // Subscribe before reading what is stored, so nothing committed in between is missed.
    let live = s.api.cmdb.subscribe_events();
    let (tx, mut out) = tokio::sync::mpsc::channel::<SseEvent>(64);
    let shutdown = s.api.hub.shutdown.clone();
    let (cmdb, views) = (s.api.cmdb.clone(), s.views.clone());
    tokio::spawn(async move {
        let _permit = permit;
        let send = |e: &Event| frames(&views, e);
        tokio::select! {
            _ = follow(cmdb, id, after, live, &tx, send) => {}
            _ = tx.closed() => {}
            _ = shutdown.cancelled() => {}
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| out.poll_recv(cx).map(|e| e.map(Ok::<_, Infallible>)));
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

/// The frames one event becomes: its timeline entry, and the machine's state.
fn frames(views: &super::view::Views, e: &Event) -> Vec<SseEvent> {
    let row = EventRow::from(e);
    let html = match views
        .render("event.html", minijinja::context! { e => minijinja::Value::from(minijinja::value::Serde(&row)) })
    {
        Ok(html) => html,
        Err(error) => {
            tracing::warn!(%error, "ui timeline entry not rendered");
            return Vec::new();
        }
    };
    let mut out = vec![SseEvent::default().id(e.seq.to_string()).event("timeline").data(html.trim())];
    if let Some(state) = row.state {
        out.push(SseEvent::default().event("state").data(state));
    }
    out
}

/// Sends machine `id`'s events after `after`, then live ones; reads the CMDB again whenever the
/// live feed overflowed.
async fn follow(
    cmdb: Cmdb,
    id: u64,
    mut upto: u64,
    mut live: tokio::sync::broadcast::Receiver<Arc<Event>>,
    tx: &Sender<SseEvent>,
    frames: impl Fn(&Event) -> Vec<SseEvent>,
) {
    let catch_up = |after: u64| {
        let cmdb = cmdb.clone();
        async move { cmdb.events(id, after, 1000).await.unwrap_or_default() }
    };
    loop {
        let stored = catch_up(upto).await;
        let more = stored.len() == 1000;
        for e in &stored {
            for f in frames(e) {
                if tx.send(f).await.is_err() {
                    return;
                }
            }
            upto = upto.max(e.seq);
        }
        if !more {
            break;
        }
    }
    loop {
        match live.recv().await {
            Ok(e) if e.machine_id != id || e.seq <= upto => {}
            Ok(e) => {
                upto = e.seq;
                for f in frames(&e) {
                    if tx.send(f).await.is_err() {
                        return;
                    }
                }
            }
            Err(RecvError::Lagged(_)) => {
                for e in catch_up(upto).await {
                    upto = upto.max(e.seq);
                    for f in frames(&e) {
                        if tx.send(f).await.is_err() {
                            return;
                        }
                    }
                }
            }
            Err(RecvError::Closed) => return,
        }
    }
}
