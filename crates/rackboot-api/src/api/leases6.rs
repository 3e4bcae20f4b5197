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
    #[param(pattern = r"^(leases6\.[0-9a-f:]{2,39})?$")]
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
        Some(c) => Some(c.strip_prefix("leases6.").and_then(|a| a.parse::<Ipv6Addr>().ok()).ok_or_else(|| {
            ApiError::field("cursor", format!("cursor {c:?} is not leases6.<address> (a next_cursor of this list)"))
        })?),
    };
    let (leases, more) = s.cmdb.lease6_page(after, page::limit(q.limit, 1000)?).await?;
    let now = now_secs();
    let next_cursor = more.then(|| leases.last().map(|l| format!("leases6.{}", l.ip))).flatten();
    let leases = leases
        .into_iter()
        .map(|lease| Lease6View { active: lease.state == LeaseState::Active && lease.expires_at > now, lease })
        .collect();
    Ok(Json(Lease6List { leases, next_cursor }))
}
