//! `/api/v1/audit`: the audit log (admin), newest first, filtered and paged.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{page, ApiError, ApiState};
use crate::cmdb::{AuditEntry, AuditFilter, Outcome};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// Filters and page of the audit log.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this user's calls (`-`: unauthenticated ones).
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(max_length = 64)]
    user: Option<String>,
    /// Only this HTTP method (e.g. `DELETE`).
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(max_length = 16)]
    method: Option<String>,
    /// Only this HTTP status.
    #[param(minimum = 100, maximum = 599)]
    status: Option<u16>,
    outcome: Option<Outcome>,
    /// Only calls that acted on something in this resource pool.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^([a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?)?$")]
    pool: Option<String>,
    /// Only entries at or after this moment (Unix milliseconds).
    #[param(maximum = 253402300799999_u64)]
    since: Option<u64>,
    /// Only entries before this moment (Unix milliseconds).
    #[param(maximum = 253402300799999_u64)]
    until: Option<u64>,
    /// Page size (default 100).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Where the page starts: `next_cursor` of the previous page.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^(audit\.[0-9]{1,18})?$")]
    cursor: Option<String>,
}

/// A page of the audit log, newest first.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Largest millisecond time accepted (the year 9999).
const MAX_MS: u64 = 253_402_300_799_999;

/// The audit log: every change through the API, refused changes and failed logins (admin).
#[utoipa::path(get, path = "/audit", tag = "audit", params(AuditQuery),
    responses((status = 200, description = "A page of entries, newest first", body = AuditPage),
        (status = 403, description = "Needs role admin", body = super::Problem, content_type = "application/problem+json")))]
async fn list(
    State(s): State<ApiState>,
    q: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    let Query(q) = q?;
    for (field, v) in [("since", q.since), ("until", q.until)] {
        if v.is_some_and(|v| v > MAX_MS) {
            return Err(ApiError::field(field, format!("{field} is after the year 9999")));
        }
    }
    if q.status.is_some_and(|s| !(100..=599).contains(&s)) {
        return Err(ApiError::field("status", "status must be 100..=599"));
    }
    // In characters, as the document's maxLength counts them (not bytes).
    if q.user.as_ref().is_some_and(|u| u.chars().count() > 64) {
        return Err(ApiError::field("user", "a username is at most 64 characters"));
    }
    if q.method.as_ref().is_some_and(|m| m.chars().count() > 16) {
        return Err(ApiError::field("method", "a method is at most 16 characters"));
    }
    if let Some(p) = &q.pool {
        rackboot_model::pools::check(p).map_err(|e| ApiError::field("pool", e))?;
    }
    let filter = AuditFilter {
        pool: q.pool,
        user: q.user,
        method: q.method,
        status: q.status,
        outcome: q.outcome,
        since_ms: q.since,
        until_ms: q.until,
        before: page::key("audit", q.cursor.as_deref())?,
        limit: page::limit(q.limit, 100)?,
    };
    let (entries, next) = s.cmdb.audit_page(filter).await?;
    Ok(Json(AuditPage { entries, next_cursor: next.map(|seq| page::cursor("audit", seq)) }))
}
