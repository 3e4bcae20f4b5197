//! The web services: HTTPS serves the REST API, `/agent/v1`, `/metrics` and `/healthz`; plain
//! HTTP serves only what firmware and installers fetch (`/boot`, `/healthz`) and refuses the
//! APIs. HTTPS also serves the web UI (`/ui/`, [`crate::ui`]). Both run on the accept loop in [`conn`] until shutdown.

mod conn;
mod files;
mod plain;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::api::{self, boot::BootState, ApiState};
use crate::service::Core;

/// How long open requests may run on after shutdown before their connections are dropped.
const DRAIN: Duration = Duration::from_secs(5);

/// Serves plain HTTP (`/boot`, `/healthz`; the APIs refused unless `http.loopback_api`) on
/// `listener` until `shutdown`.
pub async fn serve(listener: TcpListener, core: Core, shutdown: CancellationToken) -> anyhow::Result<()> {
    let state = state(&core)?;
    let router = match core.cfg.loopback_api {
        true => {
            tracing::warn!(listen = %core.cfg.http_listen, "http.loopback_api: the whole API over plain HTTP on loopback");
            api::router(state)
        }
        false => plain::router(state, core.addrs.https_base.clone()),
    };
    let app = crate::assets::guard(router, &core.cfg);
    let files =
        files::Files { root: core.cfg.tftp.root.clone(), cmdb: core.cmdb.clone(), metrics: core.metrics.clone() };
    let settings = conn::Listener { name: "http", limits: core.cfg.http_limits, tls: None, files: Some(files) };
    conn::serve(listener, app, settings, core.metrics.clone(), shutdown).await
}

/// Serves HTTPS (the whole router) on `listener` until `shutdown`.
pub async fn serve_https(listener: TcpListener, core: Core, shutdown: CancellationToken) -> anyhow::Result<()> {
    let state = state(&core)?;
    let api = api::router(state.clone());
    let ui = crate::ui::router(state, api.clone()).context("building the web UI")?;
    let app = crate::assets::guard(api.merge(ui), &core.cfg);
    let acceptor = tokio_rustls::TlsAcceptor::from(core.tls.config.clone());
    let settings = conn::Listener {
        name: "https",
        limits: core.cfg.http_limits,
        tls: Some((acceptor, core.cfg.https.handshake_timeout)),
        files: None,
    };
    conn::serve(listener, app, settings, core.metrics.clone(), shutdown).await
}

pub(crate) fn state(core: &Core) -> anyhow::Result<ApiState> {
    let Core { cfg, addrs, cmdb, metrics, hub, engine, tls, sealer: _, plugins, power, templates } = core.clone();
    let boot = BootState {
        renderer: templates,
        profiles: cfg.boot.profiles.clone(),
        discovery_profile: cfg.boot.discovery_profile.clone(),
        http_base: addrs.http_base.clone(),
        agent_url: addrs.https_base.clone(),
        ca_pin: tls.ca_pin.clone(),
        ca_pem: tls.ca_pem.clone(),
        root: cfg.tftp.root.clone(),
        domain: cfg.dns.domain.clone(),
        answer_repos: cfg.provision.answer_repos.clone(),
        installer_proxy: cfg.provision.installer_proxy.clone(),
        nonce_ttl_secs: cfg.agent.nonce_ttl.as_secs(),
    };
    Ok(ApiState {
        cmdb,
        metrics,
        auth: Arc::new(api::auth::AuthState::new(cfg.auth.clone())),
        boot: Some(Arc::new(boot)),
        hub,
        engine: Some(engine),
        power: Some(power),
        streams: Arc::new(tokio::sync::Semaphore::new(api::MAX_STREAMS)),
        plugins: Some(plugins),
    })
}
