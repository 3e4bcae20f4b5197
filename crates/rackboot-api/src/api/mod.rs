//! HTTP front end: the REST API under `/api/v1` (users' bearer tokens, each call authorized by
//! role and changes audited in one middleware, `auth::guard`; its OpenAPI document is generated
//! from the handlers' types, see `doc`), `/boot` for firmware, `/agent/v1` for node
//! agents, `/healthz` and `/metrics`. Handlers are thin: they parse, call the core, and map its
//! errors to one problem+json shape.

pub mod agent;
mod agent_bmc;
mod agent_nonce;
mod appliances;
mod audit;
pub mod auth;
mod backup;
mod baselines;
mod bmc;
pub mod boot;
mod bounded;
mod directory;
mod doc;
mod events;
mod firmware;
mod inventory;
mod jobs;
mod leases6;
mod lifecycle;
mod machines;
pub mod network;
mod numbers;
pub mod oidc;
pub mod page;
pub mod placement;
pub mod plain;
mod plugin_keys;
pub mod plugins;
mod pools;
mod problem;
pub mod profiles;
mod quarantine;
pub mod racks;
mod scope;
mod tang;
mod tasks;
mod templates;
mod userdata;
mod users;
mod vmedia;
mod webhooks;

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use utoipa_axum::router::OpenApiRouter;

use crate::metrics::Metrics;

pub use doc::{document, document_json};
pub use problem::{ApiError, Problem, SseFrame, PROBLEM_JSON};

/// Shared state of every handler: one pointer, since every layer and extractor clones it into
/// the request's future (a waiting long-poll holds several such clones).
#[derive(Clone)]
pub struct ApiState(Arc<ApiParts>);

impl ApiState {
    pub fn new(parts: ApiParts) -> ApiState {
        ApiState(Arc::new(parts))
    }
}

impl std::ops::Deref for ApiState {
    type Target = ApiParts;
    fn deref(&self) -> &ApiParts {
        &self.0
    }
}

/// What [`ApiState`] shares.
pub struct ApiParts {
    pub cmdb: crate::cmdb::Cmdb,
    pub metrics: Metrics,
    /// Login settings and the login rate limiter.
    pub auth: Arc<auth::AuthState>,
    /// Boot endpoints (`/boot`); `None` serves none.
    pub boot: boot::SharedBoot,
    /// The agent controller (`/agent/v1`, `/api/v1/jobs`).
    pub hub: Arc<crate::controller::Hub>,
    /// The provisioning engine (`/api/v1/tasks`); `None`: provisioning is off.
    pub engine: Option<Arc<crate::provision::engine::Engine>>,
    /// Power through machines' BMCs (`/api/v1/machines/{id}/bmc`, `/power`); `None`: off.
    pub power: Option<Arc<crate::bmc::Power>>,
    /// Permits for open event streams (at most [`MAX_STREAMS`]).
    pub streams: Arc<tokio::sync::Semaphore>,
    /// The plugin store (`/api/v1/plugins`, `/agent/v1/plugins`); `None` serves none.
    pub plugins: Option<Arc<crate::plugins::Store>>,
    /// Webhook subscriptions and their delivery (`/api/v1/webhooks`); `None` serves none.
    pub webhooks: Option<Arc<crate::webhooks::Webhooks>>,
    /// The Tang server (`/api/v1/tang`, and `/tang` on plain HTTP); `None` serves none.
    pub tang: Option<Arc<crate::tang::Tang>>,
    /// Virtual-media boot ISOs (`/vmedia`, to the BMCs that insert them); `None` serves none.
    pub vmedia: Option<Arc<crate::vmedia::VirtualMedia>>,
    /// Firmware baselines, images and updates (`/api/v1/firmware`); `None` serves none.
    pub firmware: Option<Arc<crate::firmware::Firmware>>,
}

/// Event streams open at once; more are refused with 503.
pub const MAX_STREAMS: usize = events::MAX_STREAMS;

/// Every `/api/v1` route, each registered with its OpenAPI operation (`utoipa_axum::routes!`),
/// so a route cannot exist without its document entry; `auth::guard` decides who may call it
/// (`auth::policy`: the login and this document are public).
fn protected_routes() -> OpenApiRouter<ApiState> {
    machines::routes()
        .merge(leases6::routes())
        .merge(lifecycle::routes())
        .merge(events::routes())
        .merge(profiles::routes())
        .merge(templates::routes())
        .merge(jobs::routes())
        .merge(tasks::routes())
        .merge(racks::routes())
        .merge(placement::routes())
        .merge(inventory::routes())
        .merge(network::routes())
        .merge(pools::routes())
        .merge(userdata::routes())
        .merge(bmc::routes())
        .merge(firmware::routes())
        .merge(baselines::routes())
        .merge(auth::routes())
        .merge(oidc::routes())
        .merge(users::routes())
        .merge(audit::routes())
        .merge(webhooks::routes())
        .merge(tang::routes())
        .merge(backup::routes())
        .merge(quarantine::routes())
        .merge(appliances::routes())
        .merge(plugins::routes())
        .merge(plugin_keys::routes())
        .merge(doc::routes())
}

/// What a caller who has not proven who it is hears when the CMDB cannot be read: the reason
/// (which names the store's host and database) goes to the log only.
pub const STORE_UNREACHABLE: &str = "the appliance cannot read its CMDB right now; try again shortly";

/// Builds the whole HTTP router.
pub fn router(state: ApiState) -> Router {
    let (api, _) =
        protected_routes().route_layer(middleware::from_fn_with_state(state.clone(), auth::guard)).split_for_parts();
    let problems = tower::util::AndThenLayer::new(problem::as_problem);
    let api =
        api.fallback(problem::no_route).layer(middleware::from_fn(numbers::integral_floats)).layer(problems.clone());
    let agent = agent::routes().fallback(problem::no_route).layer(problems);
    let router = Router::new()
        .nest("/api/v1", api)
        .nest("/boot", boot::routes(&state))
        .nest("/agent/v1", agent)
        .route("/vmedia/{name}", get(vmedia::iso))
        .route("/healthz", get(crate::assets::healthz))
        .route("/metrics", get(metrics));
    bounded(router, &state).with_state(state)
}

/// What every listener's router gets: requests counted with bounded labels, and the body limit.
pub fn bounded(router: Router<ApiState>, state: &ApiState) -> Router<ApiState> {
    router.layer(axum::extract::DefaultBodyLimit::max(MAX_BODY)).layer(bounded::Bounded(state.clone()))
}

/// `/metrics`: a viewer's token is needed unless `auth.public_metrics` is set.
async fn metrics(
    State(s): State<ApiState>,
    check: Option<axum::Extension<Arc<crate::assets::Check>>>,
    headers: axum::http::HeaderMap,
) -> Response {
    let check = check.map(|axum::Extension(c)| c);
    if !s.auth.cfg.public_metrics {
        if let Err(refused) = auth::require(&s, &headers, crate::auth::Role::Viewer).await {
            return refused;
        }
    }
    // The gauges read from elsewhere: machines by state and pool (the CMDB's index; a state no
    // machine is in any more is dropped, not left at its last count), missing boot assets (the guard's
    // check, as /healthz makes it), BMCs held off.
    s.metrics.machines.clear();
    for ((state, pool), n) in s.cmdb.count_by_state_and_pool() {
        let Some(name) = serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_string)) else {
            continue;
        };
        s.metrics
            .machines
            .get_or_create(&crate::metrics::StatePoolLabel { state: name, pool })
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
    if let Some(check) = check {
        let gaps = tokio::task::spawn_blocking(move || crate::assets::missing(&check.root, &check.needed).len()).await;
        s.metrics.boot_assets_missing.set(gaps.map_or(0, |n| n as i64));
    }
    if let Some(power) = &s.power {
        s.metrics.bmc_auth_holds.set(power.auth_holds() as i64);
    }
    if let Some(webhooks) = &s.webhooks {
        webhooks.refresh_metrics().await;
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], s.metrics.render()).into_response()
}

/// Largest request body any route reads (413 past it): job specs, scripts and output chunks are
/// far smaller.
pub const MAX_BODY: usize = 1 << 20;
