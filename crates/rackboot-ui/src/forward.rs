//! Changes made in the UI are REST API calls made in-process: the same handler, role table,
//! validation and audit entry (with the session's user and the browser's address) as a call
//! from the CLI. The UI never writes to the CMDB itself.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use super::session::Session;
use super::UiState;

/// Largest API answer the UI reads.
const MAX_ANSWER: usize = 4 << 20;

/// An API answer: its status and JSON body (`Null` when it had none).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
}

impl Answer {
    /// The problem's `detail` (or the status) for a page to show.
    pub fn message(&self) -> String {
        self.body
            .get("detail")
            .and_then(Value::as_str)
            .map_or_else(|| self.status.to_string(), |d| format!("{}: {d}", self.status.as_u16()))
    }
}

/// Calls `method path` (under `/api/v1`) with `body` as JSON, as `bearer` from `peer`.
pub async fn call(
    s: &UiState,
    bearer: Option<&str>,
    peer: SocketAddr,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Answer {
    let mut req = Request::builder().method(method).uri(format!("/api/v1{path}"));
    if let Some(b) = bearer {
        req = req.header(header::AUTHORIZATION, format!("Bearer {b}"));
    }
    let body = match body {
        Some(v) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    send(s, req.body(body).expect("a request from valid parts"), peer).await
}

/// Calls `method path` (under `/api/v1`) as the session's user with a body of `content_type`
/// (a plugin upload's multipart form).
pub async fn as_session_raw(
    s: &UiState,
    session: &Session,
    method: Method,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Answer {
    let req = Request::builder()
        .method(method)
        .uri(format!("/api/v1{path}"))
        .header(header::AUTHORIZATION, format!("Bearer {}", session.bearer))
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CONTENT_LENGTH, body.len())
        .body(Body::from(body))
        .expect("a request from valid parts");
    send(s, req, session.peer).await
}

/// Sends a request made here (a streamed body) as the session's user, from its browser's address.
pub async fn send_as(s: &UiState, session: &Session, req: Request<Body>) -> Answer {
    send(s, req, session.peer).await
}

async fn send(s: &UiState, mut req: Request<Body>, peer: SocketAddr) -> Answer {
    req.extensions_mut().insert(ConnectInfo(peer));
    let resp = match s.internal.clone().oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), MAX_ANSWER).await.unwrap_or_default();
    Answer { status, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null) }
}

/// Calls the API as the session's user.
pub async fn as_session(s: &UiState, session: &Session, method: Method, path: &str, body: Option<Value>) -> Answer {
    call(s, Some(&session.bearer), session.peer, method, path, body).await
}
