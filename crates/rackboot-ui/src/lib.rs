//! The operator's web UI under `/ui/`: server-rendered pages (minijinja, `templates/ui/`) over
//! the same core the REST API uses. Reads load typed data from the CMDB; every change is
//! forwarded to the REST API in-process ([`forward`]) with the session's own token, so the API's
//! role table, validation and audit log apply to the UI unchanged. Sessions live in a cookie
//! that only `/ui` accepts ([`session`]); every POST carries the session's CSRF token.
//!
//! A page is a module with its routes: [`dashboard`] (with the last hour's [`charts`]), [`machines`] (list, search, bulk
//! actions), [`machine`] (one machine, live through [`live`]), [`racks`] (rack bring-up: the
//! form, the elevation kept live), [`provisioning`] (tasks, runs, leases), [`profiles`] (boot
//! profiles with a rendered preview), [`templates`] (boot templates: edit, preview, reset), [`plugins`] (signed plugins, the admin's upload form),
//! [`admin`] (audit log, users).
//! A new page (e.g. a rack view) adds a module, merges its `routes()` in [`router`], adds its
//! template to `view::PAGES` and a link in `templates/ui/base.html`; its live updates follow
//! [`live`] (one stream per page, fragments rendered from the page's own templates).

mod admin;
pub mod assets;
mod bmc;
mod bulk;
mod charts;
mod dashboard;
mod firmware;
mod form;
mod forward;
mod live;
mod login;
mod machine;
mod machines;
mod network;
mod oidc;
mod plugins;
mod profiles;
mod provisioning;
mod rack_bmcs;
mod racks;
mod session;
mod templates;
mod userdata;
mod view;
mod webhooks;

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::{Redirect, Response};
use axum::routing::get;
use axum::Router;

use rackboot_api::api::ApiState;
use tokio_util::sync::CancellationToken;

pub use session::COOKIE;

/// What every UI handler has: the API's state (CMDB, hub, auth settings), the API router the
/// UI forwards changes to, the page templates and the DHCP pool's samples for the dashboard.
#[derive(Clone)]
pub struct UiState {
    pub api: ApiState,
    internal: Router,
    views: Arc<view::Views>,
    pool: charts::pool::PoolHistory,
}

/// The Content-Security-Policy of every UI response: nothing but the appliance's own origin,
/// no inline script or style, no framing.
pub const CSP: &str = "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// The UI's routes (`/` redirects to `/ui/`), to merge into the HTTPS router. `api` is the
/// REST API router (`api::router`) the UI forwards changes to. Starts the dashboard's DHCP pool
/// sampler, which runs until `stop`.
pub fn router(state: ApiState, api: Router, stop: CancellationToken) -> anyhow::Result<Router> {
    let max_bundle = state.plugins.as_ref().map_or(0, |p| p.limits.max_bundle_bytes);
    let pool = charts::pool::PoolHistory::default();
    tokio::spawn(charts::pool::sample(pool.clone(), state.metrics.clone(), stop));
    let ui = UiState { api: state, internal: api, views: Arc::new(view::Views::new()?), pool };
    Ok(Router::new()
        .route("/", get(|| async { Redirect::to("/ui/") }))
        .route("/ui", get(|| async { Redirect::to("/ui/") }))
        .route("/ui/", get(|| async { Redirect::to("/ui/dashboard") }))
        .merge(assets::routes())
        .merge(login::routes())
        .merge(oidc::routes())
        .merge(machines::routes())
        .merge(machine::routes())
        .merge(bmc::routes())
        .merge(network::routes())
        .merge(userdata::routes())
        .merge(dashboard::routes())
        .merge(racks::routes())
        .merge(provisioning::routes())
        .merge(profiles::routes())
        .merge(templates::routes())
        .merge(plugins::routes(max_bundle))
        .merge(firmware::routes())
        .merge(admin::routes())
        .merge(webhooks::routes())
        .route_layer(middleware::from_fn(headers))
        .with_state(ui))
}

/// Adds the security headers to every UI response.
async fn headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    resp
}
