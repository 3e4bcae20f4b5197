//! `/api/v1/events`: the timeline of every machine, as pages and as a live server-sent event
//! stream that resumes from `Last-Event-ID` without a gap or a duplicate.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::machines::resolve;
use super::{page, ApiError, ApiState};
use crate::cmdb::{Event, EventFilter, EventKind, MachineState};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(stream))
}

/// Log entries one page or one catch-up read looks at, at most.
const SCAN: usize = 50_000;
/// Event streams open at once; more are refused with 503.
pub const MAX_STREAMS: usize = 256;

/// Filters and page of the event list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventQuery {
    /// A machine id or MAC.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})?$")]
    machine: Option<String>,
    /// Event kinds, comma-separated (e.g. `dhcp.ack,provision.step`).
    #[serde(default, deserialize_with = "super::page::empty_none")]
    kind: Option<String>,
    /// Only events recorded while their machine was in this state.
    state: Option<MachineState>,
    /// Only events at or after this moment (Unix seconds).
    #[param(maximum = 253402300799_u64)]
    since: Option<u64>,
    /// Only events after this sequence number.
    after: Option<u64>,
    /// Page size (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Where the page starts: `next_cursor` of the previous page.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^(events\.[0-9]{1,18})?$")]
    cursor: Option<String>,
}

/// A page of events, oldest first.
#[derive(Serialize, ToSchema)]
pub struct EventList {
    pub events: Vec<Event>,
    /// The cursor of the next page; absent at the end of the log. A page may hold fewer than
    /// `limit` events (a filter that matches little) and still have a next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

async fn filter(
    s: &ApiState,
    machine: Option<&str>,
    kind: Option<&str>,
    state: Option<MachineState>,
) -> Result<EventFilter, ApiError> {
    let machine = match machine {
        Some(m) => Some(resolve(s, m).await?.id),
        None => None,
    };
    let mut kinds: Vec<EventKind> = Vec::new();
    for name in kind.unwrap_or("").split(',').map(str::trim).filter(|k| !k.is_empty()) {
        match EventKind::from_name(name) {
            EventKind::Other(_) => {
                return Err(ApiError::field(
                    "kind",
                    format!("{name:?} is not an event kind (see the EventKind schema)"),
                ))
            }
            k if kinds.contains(&k) => {}
            k => kinds.push(k),
        }
    }
    // A pool-scoped caller sees the events of their pools' machines only.
    let pools = super::scope::current().map(|sc| sc.pools.into_keys().collect());
    Ok(EventFilter { machine, kinds, state, since_ms: None, pools })
}

/// Every machine's events, oldest first, filtered on the server.
#[utoipa::path(get, path = "/events", tag = "events", params(EventQuery),
    responses((status = 200, description = "A page of events", body = EventList)))]
async fn list(
    State(s): State<ApiState>,
    q: Result<Query<EventQuery>, QueryRejection>,
) -> Result<Json<EventList>, ApiError> {
    let Query(q) = q?;
    let limit = page::limit(q.limit, 1000)?;
    let mut f = filter(&s, q.machine.as_deref(), q.kind.as_deref(), q.state).await?;
    f.since_ms = page::seconds("since", q.since)?.map(|t| t * 1000);
    page::sequence("after", q.after)?;
    let after = page::key("events", q.cursor.as_deref())?.or(q.after).unwrap_or(0);
    let (events, next) = s.cmdb.event_log(f, after, limit, SCAN).await?;
    Ok(Json(EventList { events, next_cursor: next.map(|seq| page::cursor("events", seq)) }))
}

/// Filters of the event stream.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// A machine id or MAC.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})?$")]
    machine: Option<String>,
    /// Event kinds, comma-separated.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    kind: Option<String>,
    /// Only events recorded while their machine was in this state.
    state: Option<MachineState>,
    /// Start after this sequence number (what `Last-Event-ID` does on a reconnect).
    after: Option<u64>,
}

/// Live events as server-sent events: `id` is the event's sequence number, `event` its kind,
/// `data` the event as JSON. Without `Last-Event-ID` (or `after`) it starts with what happens
/// next; with it, it first sends every stored event after that id, then goes on live, with no
/// gap and no duplicate. A machine state change is a `machine.state` event.
#[utoipa::path(get, path = "/events/stream", tag = "events",
    params(StreamQuery, ("Last-Event-ID" = Option<i64>, Header, minimum = 0, description = "Resume after this event")),
    responses((status = 200, description = "An event stream: `id` the sequence number, `event` the kind, `data` the Event as JSON", content_type = "text/event-stream", body = super::SseFrame),
        (status = 503, description = "Too many streams are open", body = super::Problem, content_type = "application/problem+json")))]
async fn stream(
    State(s): State<ApiState>,
    headers: HeaderMap,
    q: Result<Query<StreamQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = q?;
    page::sequence("after", q.after)?;
    let last_id = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|v| *v <= i64::MAX as u64)
                .ok_or_else(|| ApiError::field("Last-Event-ID", "Last-Event-ID must be an event sequence number"))?,
        ),
        None => q.after,
    };
    let f = filter(&s, q.machine.as_deref(), q.kind.as_deref(), q.state).await?;
    let permit = s.streams.clone().try_acquire_owned().map_err(|_| {
        ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_STREAMS} event streams are open already"),
        )
    })?;
    // Subscribe before reading what is stored, so nothing committed in between is missed.
    let live = s.cmdb.subscribe_events();
    let (tx, mut out) = tokio::sync::mpsc::channel::<SseEvent>(256);
    let shutdown = s.hub.shutdown.clone();
    let cmdb = s.cmdb.clone();
    let refused = super::auth::refused(&s, &headers);
    tokio::spawn(async move {
        let _permit = permit;
        tokio::select! {
            _ = follow(cmdb, f, last_id, live, &tx) => {}
            _ = tx.closed() => {}
            _ = shutdown.cancelled() => {}
            () = refused => {}
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| out.poll_recv(cx).map(|e| e.map(Ok::<_, Infallible>)));
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response())
}

/// Sends stored events after `last_id` (if given), then live ones; falls back to the CMDB
/// whenever the live feed overflowed. Returns when the client is gone or the feed ends.
///
/// A stream without `last_id` opens with a `stream.start` frame whose id is the newest event
/// so far, so a client that loses the connection before any event of its own resumes from
/// there. A `last_id` past the newest event (a CMDB restored or recreated since) gets a `reset`
/// frame and goes on from the newest.
async fn follow(
    cmdb: crate::cmdb::Cmdb,
    f: EventFilter,
    last_id: Option<u64>,
    mut live: tokio::sync::broadcast::Receiver<Arc<Event>>,
    tx: &tokio::sync::mpsc::Sender<SseEvent>,
) {
    let Ok(head) = cmdb.event_head().await else { return };
    let marker = |event: &str, reason: &str| {
        SseEvent::default()
            .id(head.to_string())
            .event(event)
            .data(serde_json::json!({"head": head, "reason": reason}).to_string())
    };
    // The highest sequence sent or passed over: everything up to it is done.
    let mut upto = match last_id {
        Some(id) if id > head => {
            if tx
                .send(marker("reset", "Last-Event-ID is past the newest event; going on from the newest"))
                .await
                .is_err()
            {
                return;
            }
            head
        }
        Some(id) => match catch_up(&cmdb, &f, id, tx).await {
            Some(upto) => upto,
            None => return,
        },
        None => {
            if tx.send(marker("stream.start", "live from here")).await.is_err() {
                return;
            }
            head
        }
    };
    loop {
        match live.recv().await {
            Ok(e) if e.seq <= upto => {}
            Ok(e) => {
                upto = e.seq;
                if cmdb.event_passes(&f, &e) && tx.send(sse(&e)).await.is_err() {
                    return;
                }
            }
            Err(RecvError::Lagged(_)) => match catch_up(&cmdb, &f, upto, tx).await {
                Some(u) => upto = u,
                None => return,
            },
            Err(RecvError::Closed) => return,
        }
    }
}

/// Sends every stored event after `after` that passes; returns the last sequence looked at, or
/// `None` when the client is gone or the CMDB cannot be read.
async fn catch_up(
    cmdb: &crate::cmdb::Cmdb,
    f: &EventFilter,
    mut after: u64,
    tx: &tokio::sync::mpsc::Sender<SseEvent>,
) -> Option<u64> {
    loop {
        let (events, next) = match cmdb.event_log(f.clone(), after, 1000, SCAN).await {
            Ok(page) => page,
            Err(error) => {
                tracing::warn!(%error, "event stream cannot read the log");
                return None;
            }
        };
        for e in &events {
            tx.send(sse(e)).await.ok()?;
            after = after.max(e.seq);
        }
        match next {
            Some(n) => after = after.max(n),
            None => return Some(after),
        }
    }
}

fn sse(e: &Event) -> SseEvent {
    SseEvent::default()
        .id(e.seq.to_string())
        .event(e.kind.as_str())
        .data(serde_json::to_string(e).expect("an event serializes"))
}
