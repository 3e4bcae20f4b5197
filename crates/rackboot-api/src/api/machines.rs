//! `/api/v1/machines`, `/api/v1/machines/{id}/events` and `/api/v1/leases`.

use std::net::Ipv4Addr;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{page, ApiError, ApiState};
use crate::cmdb::{now_secs, Event, Lease, LeaseState, Machine, MachineFilter, MachinePatch, MachineState, NewMachine};
use crate::mac::Mac;

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, update, remove))
        .routes(routes!(events))
        .routes(routes!(leases))
}

/// Resolves `{id}`: a numeric machine id or any of the machine's MACs.
pub(super) async fn resolve(s: &ApiState, key: &str) -> Result<Machine, ApiError> {
    let (m, what) = if let Ok(id) = key.parse::<u64>() {
        (s.cmdb.machine(id).await?, format!("machine {id}"))
    } else {
        let mac: Mac = key.parse().map_err(|e: crate::mac::ParseMacError| ApiError::field("id", e.to_string()))?;
        (s.cmdb.machine_by_mac(mac).await?, format!("machine with MAC {mac}"))
    };
    // A pool-scoped caller sees only their pools' machines: another's is not there (the same
    // 404 as a machine that does not exist), and acts on them only with their role there.
    super::scope::admit(Some(&m.pool), &what)?;
    Ok(m)
}

/// Filters and page of the machine list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MachineQuery {
    /// Case-insensitive text in a MAC, hostname, serial, vendor, model, tag, the reserved
    /// address or a leased address.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    q: Option<String>,
    state: Option<MachineState>,
    /// A tag the machine carries.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    tag: Option<String>,
    /// The boot profile the machine is pinned to.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    profile: Option<String>,
    /// Case-insensitive text in the vendor its inventory reported.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    vendor: Option<String>,
    /// The resource pool.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    pool: Option<String>,
    /// Page size (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Where the page starts: `next_cursor` of the previous page.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^(machines\.[0-9]{1,18})?$")]
    cursor: Option<String>,
}

/// A page of machines.
#[derive(Serialize, ToSchema)]
pub struct MachineList {
    pub machines: Vec<Machine>,
    /// How many machines match the filters in all pages.
    pub total: usize,
    /// The cursor of the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Lists machines, filtered on the server, one page at a time (in id order).
#[utoipa::path(get, path = "/machines", tag = "machines", params(MachineQuery),
    responses((status = 200, description = "A page of machines", body = MachineList)))]
async fn list(
    State(s): State<ApiState>,
    q: Result<Query<MachineQuery>, QueryRejection>,
) -> Result<Json<MachineList>, ApiError> {
    let Query(q) = q?;
    let filter = MachineFilter {
        q: q.q,
        state: q.state,
        tag: q.tag,
        profile: q.profile,
        vendor: q.vendor,
        pool: q.pool,
        // A pool-scoped caller lists their pools' machines only.
        pools: super::scope::current().map(|sc| sc.pools.into_keys().collect()),
        after: page::key("machines", q.cursor.as_deref())?,
        limit: Some(page::limit(q.limit, 1000)?),
    };
    let found = s.cmdb.list_machines(filter).await?;
    Ok(Json(MachineList {
        machines: found.machines.into_iter().map(Machine::shown).collect(),
        total: found.total,
        next_cursor: found.next_after.map(|id| page::cursor("machines", id)),
    }))
}

/// Registers a machine by its MACs (it then boots as a known machine).
#[utoipa::path(post, path = "/machines", tag = "machines", request_body = NewMachine,
    responses((status = 201, description = "Registered", body = Machine),
        (status = 409, description = "A MAC, the hostname or the address belongs to another machine", body = super::Problem, content_type = "application/problem+json")))]
async fn create(
    State(s): State<ApiState>,
    body: Result<Json<NewMachine>, JsonRejection>,
) -> Result<(StatusCode, Json<Machine>), ApiError> {
    let Json(mut new) = body?;
    once_each(&mut new.macs);
    let m = s.cmdb.create_machine(new).await?;
    super::scope::touched(&m.pool);
    Ok((StatusCode::CREATED, Json(m.shown())))
}

/// One machine, by id or any of its MACs.
#[utoipa::path(get, path = "/machines/{id}", tag = "machines",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The machine", body = Machine)))]
async fn show(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<Machine>, ApiError> {
    Ok(Json(resolve(&s, &key).await?.shown()))
}

/// Changes the fields given; `null` clears an optional one.
#[utoipa::path(patch, path = "/machines/{id}", tag = "machines", request_body = MachinePatch,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The updated machine", body = Machine),
        (status = 409, description = "A MAC, the hostname or the address belongs to another machine", body = super::Problem, content_type = "application/problem+json")))]
async fn update(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<MachinePatch>, JsonRejection>,
) -> Result<Json<Machine>, ApiError> {
    let Json(mut patch) = body?;
    if let Some(macs) = &mut patch.macs {
        once_each(macs);
    }
    if let Some(Some(name)) = &patch.boot_profile {
        let all = super::profiles::all_profiles(&s).await?;
        if !all.contains_key(name) {
            let known: Vec<&String> = all.keys().collect();
            return Err(ApiError::not_found(format!("no boot profile {name:?}; known: {known:?}")));
        }
    }
    let m = resolve(&s, &key).await?;
    // A profile of a pool's is for that pool's machines only.
    if let Some(Some(name)) = &patch.boot_profile {
        super::profiles::usable_in(&s, name, &m.pool).await?;
    }
    Ok(Json(s.cmdb.update_machine(m.id, patch).await?.shown()))
}

/// A MAC given twice (the same NIC written two ways, say) is listed once, in its first place.
fn once_each(macs: &mut Vec<crate::mac::Mac>) {
    let mut seen = std::collections::HashSet::new();
    macs.retain(|m| seen.insert(*m));
}

/// Deletes a machine and everything that hangs off it (timeline, agent, jobs).
#[utoipa::path(delete, path = "/machines/{id}", tag = "machines",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 204, description = "Deleted")))]
async fn remove(State(s): State<ApiState>, Path(key): Path<String>) -> Result<StatusCode, ApiError> {
    let m = resolve(&s, &key).await?;
    s.cmdb.delete_machine(m.id).await?;
    s.hub.forget(m.id);
    Ok(StatusCode::NO_CONTENT)
}

/// Page of a machine's timeline.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TimelineQuery {
    /// Only events after this sequence number.
    after: Option<u64>,
    /// Page size (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Where the page starts: `next_cursor` of the previous page.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^(timeline\.[0-9]{1,18})?$")]
    cursor: Option<String>,
}

/// A page of one machine's timeline, oldest first.
#[derive(Serialize, ToSchema)]
pub struct Timeline {
    pub machine_id: u64,
    pub events: Vec<Event>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A machine's timeline: every boot step and change, oldest first.
#[utoipa::path(get, path = "/machines/{id}/events", tag = "events",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$"), TimelineQuery),
    responses((status = 200, description = "A page of the timeline", body = Timeline)))]
async fn events(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    q: Result<Query<TimelineQuery>, QueryRejection>,
) -> Result<Json<Timeline>, ApiError> {
    let Query(q) = q?;
    let limit = page::limit(q.limit, 1000)?;
    let after = page::key("timeline", q.cursor.as_deref())?.or(page::sequence("after", q.after)?).unwrap_or(0);
    let m = resolve(&s, &key).await?;
    let mut events = s.cmdb.events(m.id, after, limit + 1).await?;
    let next_cursor = (events.len() > limit).then(|| {
        events.truncate(limit);
        page::cursor("timeline", events.last().map_or(after, |e| e.seq))
    });
    Ok(Json(Timeline { machine_id: m.id, events, next_cursor }))
}

/// Page of the lease list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LeaseQuery {
    /// Page size (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Where the page starts: `next_cursor` of the previous page.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^(leases\.[0-9]{1,18})?$")]
    cursor: Option<String>,
}

/// A lease as the API shows it.
#[derive(Serialize, ToSchema)]
pub struct LeaseView {
    #[serde(flatten)]
    pub lease: Lease,
    /// Held now: active and not expired.
    pub active: bool,
}

/// A page of leases, in address order.
#[derive(Serialize, ToSchema)]
pub struct LeaseList {
    pub leases: Vec<LeaseView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Every lease record (active, released, declined), in address order.
#[utoipa::path(get, path = "/leases", tag = "leases", params(LeaseQuery),
    responses((status = 200, description = "A page of leases", body = LeaseList)))]
async fn leases(
    State(s): State<ApiState>,
    q: Result<Query<LeaseQuery>, QueryRejection>,
) -> Result<Json<LeaseList>, ApiError> {
    let Query(q) = q?;
    let after = page::key("leases", q.cursor.as_deref())?.map(|k| Ipv4Addr::from(k as u32));
    let (leases, next) = s.cmdb.lease_page(after, page::limit(q.limit, 1000)?).await?;
    let now = now_secs();
    let leases = leases
        .into_iter()
        .map(|lease| LeaseView { active: lease.state == LeaseState::Active && lease.expires_at > now, lease })
        .collect();
    Ok(Json(LeaseList { leases, next_cursor: next.map(|ip| page::cursor("leases", u32::from(ip) as u64)) }))
}
