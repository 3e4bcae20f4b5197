//! `/api/v1/leases6`: the DHCPv6 leases, in address order.

use std::net::Ipv6Addr;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{page, ApiError, ApiState};
use crate::cmdb::{now_secs, LeaseState};
use rackboot_model::lease6::Lease6;

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(leases6))
}

/// Page of the DHCPv6 lease list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct Lease6Query {
    /// Page size (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Where the page starts: `next_cursor` of the previous page.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^(leases6\.[0-9a-f]{32})?$")]
    cursor: Option<String>,
}

/// A DHCPv6 lease as the API shows it.
#[derive(Serialize, ToSchema)]
pub struct Lease6View {
    #[serde(flatten)]
    pub lease: Lease6,
    /// Held now: active and not expired.
    pub active: bool,
}

/// A page of DHCPv6 leases, in address order.
#[derive(Serialize, ToSchema)]
pub struct Lease6List {
    pub leases: Vec<Lease6View>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Every DHCPv6 lease record (active, released, declined), in address order.
#[utoipa::path(get, path = "/leases6", tag = "leases", params(Lease6Query),
    responses((status = 200, description = "A page of DHCPv6 leases", body = Lease6List)))]
async fn leases6(
    State(s): State<ApiState>,
    q: Result<Query<Lease6Query>, QueryRejection>,
) -> Result<Json<Lease6List>, ApiError> {
    let Query(q) = q?;
    let after = match q.cursor.as_deref() {
        None => None,
        Some(c) => Some(cursor_address(c).ok_or_else(|| {
            ApiError::field(
                "cursor",
                format!("cursor {c:?} is not leases6.<32 hex digits> (a next_cursor of this list)"),
            )
        })?),
    };
    let (leases, more) = s.cmdb.lease6_page(after, page::limit(q.limit, 1000)?).await?;
    let now = now_secs();
    let next_cursor = more.then(|| leases.last().map(|l| cursor(l.ip))).flatten();
    let leases = leases
        .into_iter()
        .map(|lease| Lease6View { active: lease.state == LeaseState::Active && lease.expires_at > now, lease })
        .collect();
    Ok(Json(Lease6List { leases, next_cursor }))
}

/// A page's cursor: `leases6.` and the address's 32 hex digits (every string of that form is
/// a valid cursor, as the document's pattern says).
fn cursor(ip: Ipv6Addr) -> String {
    format!("leases6.{:032x}", u128::from(ip))
}

fn cursor_address(c: &str) -> Option<Ipv6Addr> {
    let hex = c
        .strip_prefix("leases6.")
        .filter(|h| h.len() == 32 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))?;
    u128::from_str_radix(hex, 16).ok().map(Ipv6Addr::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_names_an_address_and_only_its_own_form_is_taken() {
        let ip: Ipv6Addr = "fd18::1:0".parse().unwrap();
        assert_eq!(cursor(ip), "leases6.fd180000000000000000000000010000");
        assert_eq!(cursor_address(&cursor(ip)), Some(ip));
        for bad in ["leases6.fd18::1", "leases6.", "leases.1", "leases6.FD180000000000000000000000010000"] {
            assert_eq!(cursor_address(bad), None, "{bad}");
        }
    }
}
