//! The web services: HTTPS serves the REST API, `/agent/v1`, `/metrics` and `/healthz`; plain
//! HTTP serves only what firmware and installers fetch (`/boot`, `/healthz`) and refuses the
//! APIs. HTTPS also serves the web UI (`/ui/`, [`crate::ui`]). Both run on the accept loop in `rackboot_http::conn` until shutdown.

use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use rackboot_http::{conn, files};

use crate::api::{self, ApiState};
use crate::config::addresses::Addresses;
use crate::config::Config;
use crate::tls::ServerTls;

/// What the web listeners serve from: the config, the resolved addresses, the HTTPS
/// certificate and the API's state (the app builds it from its core).
#[derive(Clone)]
pub struct Site {
    pub cfg: Arc<Config>,
    pub addrs: Arc<Addresses>,
    pub tls: ServerTls,
    pub state: ApiState,
}

/// Serves plain HTTP (`/boot`, `/healthz`; the APIs refused unless `http.loopback_api`) on
/// `listener` until `shutdown`.
pub async fn serve(listener: TcpListener, site: Site, shutdown: CancellationToken) -> anyhow::Result<()> {
    let Site { cfg, addrs, state, .. } = site;
    let (cmdb, metrics) = (state.cmdb.clone(), state.metrics.clone());
    let router = match cfg.loopback_api {
        true => {
            tracing::warn!(listen = %cfg.http_listen, "http.loopback_api: the whole API over plain HTTP on loopback");
            api::router(state)
        }
        false => api::plain::router(state, addrs.https_base.clone()),
    };
    let app = crate::assets::guard(router, &cfg);
    let files = files::Files { root: cfg.tftp.root.clone(), cmdb, metrics: metrics.clone() };
    let settings = conn::Listener { name: "http", limits: cfg.http_limits, tls: None, files: Some(files) };
    conn::serve(listener, app, settings, metrics.clone(), shutdown).await
}

/// Serves the boot listener (firmware's HTTPS boot: `/boot` and `/healthz`, the boot CA's RSA
/// certificate, DHE for EDK2's TLS) on `listener` until `shutdown`.
pub async fn serve_boot(
    listener: TcpListener,
    site: Site,
    tls: crate::tls::BootTls,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let Site { cfg, state, .. } = site;
    let metrics = state.metrics.clone();
    let app = crate::assets::guard(api::plain::boot_only(state), &cfg);
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config.clone());
    let settings = conn::Listener {
        name: "boot-https",
        limits: cfg.http_limits,
        tls: Some((acceptor, cfg.https.handshake_timeout)),
        files: None,
    };
    conn::serve(listener, app, settings, metrics, shutdown).await
}

/// Serves HTTPS (the whole router) on `listener` until `shutdown`.
pub async fn serve_https(listener: TcpListener, site: Site, shutdown: CancellationToken) -> anyhow::Result<()> {
    let Site { cfg, tls, state, .. } = site;
    let metrics = state.metrics.clone();
    let api = api::router(state.clone());
    let ui = crate::ui::router(state, api.clone(), shutdown.clone()).context("building the web UI")?;
    let app = crate::assets::guard(api.merge(ui), &cfg);
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config.clone());
    let settings = conn::Listener {
        name: "https",
        limits: cfg.http_limits,
        tls: Some((acceptor, cfg.https.handshake_timeout)),
        files: None,
    };
    conn::serve(listener, app, settings, metrics.clone(), shutdown).await
}
