//! The HTTP service: the REST API, `/boot` for firmware and installers, and `/agent/v1`, served
//! by axum on the bound listener until shutdown.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::api::{self, boot::BootState, ApiState};
use crate::render::Renderer;
use crate::service::Core;

/// Serves the API router on `listener` until `shutdown`, then lets open requests finish.
pub async fn serve(listener: TcpListener, core: Core, shutdown: CancellationToken) -> anyhow::Result<()> {
    let Core { cfg, addrs, cmdb, metrics, hub, engine, sealer: _ } = core;
    let boot = BootState {
        renderer: Renderer::new(cfg.templates.as_deref()).context("loading templates")?,
        profiles: cfg.boot.profiles.clone(),
        discovery_profile: cfg.boot.discovery_profile.clone(),
        http_base: addrs.http_base.clone(),
        root: cfg.tftp.root.clone(),
        domain: cfg.dns.domain.clone(),
        answer_repos: cfg.provision.answer_repos.clone(),
        installer_proxy: cfg.provision.installer_proxy.clone(),
        nonce_ttl_secs: cfg.agent.nonce_ttl.as_secs(),
    };
    let state = ApiState {
        cmdb,
        metrics,
        auth: Arc::new(api::auth::AuthState::new(cfg.auth.clone())),
        boot: Some(Arc::new(boot)),
        hub,
        engine: Some(engine),
        streams: Arc::new(tokio::sync::Semaphore::new(api::MAX_STREAMS)),
    };
    let app = crate::assets::guard(api::router(state), &cfg).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).with_graceful_shutdown(shutdown.cancelled_owned()).await?;
    Ok(())
}
