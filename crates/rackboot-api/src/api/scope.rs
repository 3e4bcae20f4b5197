//! What a pool-scoped call may reach, and which pools a call acted in: the API's gate
//! (`auth::guard`) runs every handler inside [`touching`] (for the audit entry's pools) and a
//! pool-scoped caller's inside [`within`] (their roles per pool and the role the call needs);
//! the handlers that know pools ask [`current`], [`admit`] and [`pools_for_call`], and say
//! [`touched`].

use std::future::Future;

use axum::http::StatusCode;

use super::ApiError;
use crate::auth::Role;

tokio::task_local! {
    /// A pool-scoped caller's roles per pool and the role the call needs, for the handlers
    /// that know pools (set by [`guard`] around them).
    static SCOPE: Scope;
}

tokio::task_local! {
    /// The pools of what the call being handled acted on, for its audit entry.
    static TOUCHED: Touched;
}

/// Pools a call acted on (a handful at most: a tag's machines may span several).
#[derive(Debug, Clone, Default)]
pub struct Touched(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Touched {
    /// The pools recorded, taken out.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("touched lock"))
    }
}

/// Runs `f` (a call's handler) recording the pools it acts in into `pools`.
pub async fn touching<T>(pools: Touched, f: impl Future<Output = T>) -> T {
    TOUCHED.scope(pools, f).await
}

/// Runs `f` (a pool-scoped caller's handler) with their roles per pool and the role it needs.
pub async fn within<T>(pools: rackboot_model::pools::Grants, need: Role, f: impl Future<Output = T>) -> T {
    SCOPE.scope(Scope { pools, need }, f).await
}

/// Pools one audit entry names, at most.
const MAX_TOUCHED: usize = 16;

/// Records that the call being handled acts on something in `pool`, for its audit entry.
pub fn touched(pool: &str) {
    let _ = TOUCHED.try_with(|t| {
        let mut v = t.0.lock().expect("touched lock");
        if !v.iter().any(|p| p == pool) && v.len() < MAX_TOUCHED {
            v.push(pool.to_string());
        }
    });
}

/// What a pool-scoped call may reach.
#[derive(Debug, Clone)]
pub struct Scope {
    pub pools: rackboot_model::pools::Grants,
    pub need: Role,
}

/// The scope of the call being handled, if its caller is pool-scoped.
pub fn current() -> Option<Scope> {
    SCOPE.try_with(Scope::clone).ok()
}

/// Lets the call reach something of `pool` (`None`: of no pool, e.g. its machine is gone),
/// named `what` ("machine 7"): always for a caller who is not pool-scoped; for one who is,
/// a pool of theirs with the role the call needs. Another pool's thing is not there (404 as
/// a missing one: nothing tells it exists); in a pool of theirs where their role is too low,
/// 403.
pub fn admit(pool: Option<&str>, what: &str) -> Result<(), ApiError> {
    if let Some(p) = pool {
        touched(p);
    }
    let Some(scope) = current() else { return Ok(()) };
    match pool.and_then(|p| scope.pools.get(p).map(|r| (p, *r))) {
        None => Err(crate::cmdb::CmdbError::NotFound(what.to_string()).into()),
        Some((pool, r)) if r < scope.need => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("this needs role {} in pool {pool}; you have {} there", scope.need.as_str(), r.as_str()),
        )),
        Some(_) => Ok(()),
    }
}

/// The pools a pool-scoped caller may act in with the role the call needs (`None`: the caller
/// is not pool-scoped), for lists and selections.
pub fn pools_for_call() -> Option<Vec<String>> {
    current().map(|sc| sc.pools.into_iter().filter(|(_, r)| *r >= sc.need).map(|(p, _)| p).collect())
}

/// The calls a pool-scoped user may make: those whose handlers filter or check by pool (the
/// machine list, a machine and everything under it, through `machines::resolve`; racks to
/// read; jobs; tasks; the event log and stream; the Ansible inventory; the boot profiles they may
/// use), and their own identity and tokens. Everything else
/// is refused to them until it knows pools (writing racks, which places machines and so moves
/// them between pools; webhooks, metrics, users, the web UI).
pub(super) fn pool_aware(method: &axum::http::Method, route: &str) -> bool {
    let get = *method == axum::http::Method::GET;
    matches!(route, "/auth/whoami" | "/tokens" | "/tokens/{id}" | "/events" | "/events/stream")
        || (matches!(route, "/machines" | "/racks" | "/racks/{name}" | "/inventory/ansible" | "/profiles") && get)
        || matches!(route, "/jobs" | "/tasks")
        || route.starts_with("/jobs/{id}")
        || route.starts_with("/tasks/{id}")
        || route == "/machines/{id}"
        // Placing a machine in a rack moves it to the rack's pool: not a pool user's to say.
        || (route.starts_with("/machines/{id}/") && route != "/machines/{id}/placement")
}
