//! The one error shape of every HTTP API: `application/problem+json` (RFC 9457).
//!
//! Handlers return [`ApiError`]; extractor rejections, unknown routes and wrong methods are
//! turned into the same shape by [`as_problem`], so a client never sees a bare string or an
//! empty body.

use std::convert::Infallible;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::cmdb::CmdbError;

/// The media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// An RFC 9457 problem: what went wrong, for people (`title`, `detail`) and programs (`type`,
/// `status`, `field`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem, e.g. `urn:rackboot:problem:not-found`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind of problem (the HTTP reason phrase).
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What happened this time, for a person.
    pub detail: String,
    /// The request field (body member or query parameter) at fault, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// One server-sent event as a stream carries it (documentation only: `data` is the JSON of the
/// event's object, e.g. an `Event` on `/events/stream`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SseFrame {
    /// Resume point (`Last-Event-ID`), where the stream has one.
    pub id: Option<String>,
    /// The event name, e.g. `dhcp.ack` or `output`.
    pub event: String,
    /// The JSON payload.
    pub data: String,
}

/// An API error: a status, a detail and optionally the field at fault.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub detail: String,
    pub field: Option<String>,
    /// Seconds for a `Retry-After` header (a 429 or 503 that says when to come back).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        ApiError { status, detail: detail.into(), field: None, retry_after: None }
    }

    /// A refusal that says when to come back: `Retry-After` of `secs` (at least 1).
    pub fn retry_after(status: StatusCode, detail: impl Into<String>, secs: u64) -> Self {
        ApiError { retry_after: Some(secs.max(1)), ..Self::new(status, detail) }
    }

    /// 400 for a bad request as a whole.
    pub fn bad(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 400 naming the field at fault.
    pub fn field(field: &str, detail: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            detail: detail.into(),
            field: Some(field.to_string()),
            retry_after: None,
        }
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, detail)
    }

    /// The problem document this error is answered with.
    pub fn problem(&self) -> Problem {
        Problem {
            kind: format!("urn:rackboot:problem:{}", slug(self.status)),
            title: self.status.canonical_reason().unwrap_or("Error").to_string(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            field: self.field.clone(),
        }
    }
}

fn slug(status: StatusCode) -> String {
    status.canonical_reason().unwrap_or("error").to_ascii_lowercase().replace([' ', '\''], "-")
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.problem()).expect("a problem serializes");
        let mut resp = (self.status, [(header::CONTENT_TYPE, PROBLEM_JSON)], body).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(secs) = self.retry_after {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

impl From<CmdbError> for ApiError {
    fn from(e: CmdbError) -> Self {
        let status = match &e {
            CmdbError::NotFound(_) => StatusCode::NOT_FOUND,
            CmdbError::Conflict(_) => StatusCode::CONFLICT,
            CmdbError::Invalid(_) => StatusCode::BAD_REQUEST,
            CmdbError::Forbidden(_) => StatusCode::FORBIDDEN,
            CmdbError::Storage(_) => StatusCode::INTERNAL_SERVER_ERROR,
            CmdbError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError::new(status, e.to_string())
    }
}

impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(e: axum::extract::rejection::JsonRejection) -> Self {
        // A body that parses but does not fit is as malformed as one that does not parse: 400
        // for both; 415 (not JSON) and 413 (too large) keep their own codes.
        let status = match e.status() {
            StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
            s => s,
        };
        let mut err = ApiError::new(status, e.body_text());
        err.field = json_error_field(&err.detail);
        err
    }
}

impl From<axum::extract::rejection::QueryRejection> for ApiError {
    fn from(e: axum::extract::rejection::QueryRejection) -> Self {
        let mut err = ApiError::bad(e.body_text());
        err.field = json_error_field(&err.detail);
        err
    }
}

impl From<axum::extract::rejection::PathRejection> for ApiError {
    fn from(e: axum::extract::rejection::PathRejection) -> Self {
        ApiError::new(e.status(), e.body_text())
    }
}

/// The field serde names in a rejection (`unknown field `x``, `missing field `x``,
/// `... at line 1 column 5` for `a.b: ...` paths), if any.
fn json_error_field(text: &str) -> Option<String> {
    for marker in ["unknown field `", "missing field `", "duplicate field `"] {
        if let Some(rest) = text.split(marker).nth(1) {
            return rest.split('`').next().map(str::to_string);
        }
    }
    // serde_path_to_error style: "Failed to deserialize the JSON body into the target type: tags[0]: ..."
    let after = text.split("target type: ").nth(1)?;
    let (path, _) = after.split_once(": ")?;
    (!path.contains(' ') && !path.is_empty()).then(|| path.to_string())
}

/// Largest body of an error response that is rewritten into a problem.
const MAX_REWRITTEN: usize = 16 * 1024;

/// Rewrites an error response that is not a problem yet (axum's own rejections, unknown
/// routes, wrong methods, layers' errors) into one, keeping its status and text. Applied with
/// tower's `AndThenLayer` (see `api::router`): its future is the route's own, then this one,
/// where a `middleware::from_fn` future would hold a clone of the route and the request through
/// a waiting long-poll (see `api::bounded`).
pub async fn as_problem(resp: Response) -> Result<Response, Infallible> {
    let status = resp.status();
    let is_problem =
        resp.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    if !(status.is_client_error() || status.is_server_error()) || is_problem {
        return Ok(resp);
    }
    let (parts, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, MAX_REWRITTEN).await {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_string(),
        Err(_) => String::new(),
    };
    let detail = match (text.is_empty(), status) {
        (false, _) => text,
        (true, StatusCode::NOT_FOUND) => "no such resource".to_string(),
        (true, StatusCode::METHOD_NOT_ALLOWED) => "this method is not allowed on this resource".to_string(),
        (true, s) => s.canonical_reason().unwrap_or("error").to_string(),
    };
    let mut out = ApiError::new(status, detail).into_response();
    // Keep what the original said about the response (Allow on 405, Retry-After, ...).
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().insert(name.clone(), value.clone());
        }
    }
    Ok(out)
}

/// A 404 problem for paths under an API prefix that match no route.
pub async fn no_route() -> ApiError {
    ApiError::not_found("no such API resource")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_names_its_kind_status_and_field() {
        let p = ApiError::field("macs", "invalid MAC").problem();
        assert_eq!(p.kind, "urn:rackboot:problem:bad-request");
        assert_eq!((p.title.as_str(), p.status, p.field.as_deref()), ("Bad Request", 400, Some("macs")));
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["type"], "urn:rackboot:problem:bad-request");
        assert!(serde_json::to_value(ApiError::not_found("x").problem()).unwrap().get("field").is_none());
    }

    #[test]
    fn serde_messages_name_the_field() {
        assert_eq!(json_error_field("unknown field `colour`, expected one of `a`").as_deref(), Some("colour"));
        assert_eq!(json_error_field("missing field `macs` at line 1 column 2").as_deref(), Some("macs"));
        assert_eq!(
            json_error_field("Failed to deserialize the JSON body into the target type: tags[0]: invalid type")
                .as_deref(),
            Some("tags[0]")
        );
        assert_eq!(json_error_field("EOF while parsing"), None);
    }
}
