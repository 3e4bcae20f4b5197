//! Wires the appliance together: opens the CMDB, binds every socket, runs each service under one
//! cancellation token, and stops them all when one fails or a shutdown signal arrives.

use std::future::Future;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::api::{self, ApiState};
use crate::cmdb::Cmdb;
use crate::config::{Config, DhcpMode};
use crate::dhcp::{self, DhcpService};
use crate::dns;
use crate::metrics::Metrics;
use crate::net;
use crate::tftp;

/// A started appliance: its bound addresses and handles, for `run` and for tests.
pub struct Running {
    pub http_addr: SocketAddr,
    /// Local address of the DHCP socket, when DHCP runs.
    pub dhcp_addr: Option<SocketAddr>,
    pub pxe_addr: Option<SocketAddr>,
    pub tftp_addr: Option<SocketAddr>,
    /// Address DNS answers on (UDP and TCP), when DNS runs.
    pub dns_addr: Option<SocketAddr>,
    pub cmdb: Cmdb,
    pub admin_token: String,
    pub token: CancellationToken,
    tasks: JoinSet<(&'static str, anyhow::Result<()>)>,
}

/// Starts every enabled service and returns once all sockets are bound.
pub async fn start(cfg: Config) -> anyhow::Result<Running> {
    std::fs::create_dir_all(&cfg.data_dir).with_context(|| format!("creating data dir {}", cfg.data_dir.display()))?;
    let db_path = cfg.data_dir.join("rackboot.redb");
    let batch = cfg.dhcp.commit_batch;
    let cmdb = tokio::task::spawn_blocking(move || Cmdb::open(&db_path, batch)).await?.context("opening the CMDB")?;
    let admin_token = ensure_admin_token(&cfg.data_dir)?;
    let metrics = Metrics::default();
    let token = CancellationToken::new();
    let mut tasks = JoinSet::new();

    let listener = tokio::net::TcpListener::bind(cfg.http_listen)
        .await
        .with_context(|| format!("binding http {}", cfg.http_listen))?;
    let http_addr = listener.local_addr()?;

    let (mut dhcp_addr, mut pxe_addr, mut tftp_addr, mut dns_addr) = (None, None, None, None);
    let mut mode = cfg.dhcp.mode;
    let mut dns_on = cfg.dns.enabled;
    let mut iface_addr = None;
    if mode != DhcpMode::Off || dns_on {
        match resolve_interface(&cfg) {
            Ok(found) => iface_addr = Some(found),
            Err(error) if mode != DhcpMode::Full && cfg.interface.is_empty() => {
                warn!(%error, "no usable interface found; proxy DHCP and DNS stay off");
                mode = DhcpMode::Off;
                dns_on = false;
            }
            Err(error) => return Err(error),
        }
    }
    let public_ip = iface_addr.as_ref().map(|(_, ip)| *ip).or(cfg.address).unwrap_or(match http_addr.ip() {
        std::net::IpAddr::V4(ip) if !ip.is_unspecified() => ip,
        _ => Ipv4Addr::LOCALHOST,
    });
    let http_base = if cfg.public_url.is_empty() {
        match http_addr.port() {
            80 => format!("http://{public_ip}"),
            port => format!("http://{public_ip}:{port}"),
        }
    } else {
        cfg.public_url.clone()
    };

    // DNS binds first so DHCP knows whether to hand out our address as the name server.
    let dns_bound = match (dns_on, &iface_addr) {
        (true, Some((iface, ip))) => match dns::bind(*ip, cfg.dns.port, iface) {
            Ok(b) => Some(b),
            // As the network's DHCP server we promise DNS to every client: not being able to
            // answer is fatal. Beside another DHCP server (proxy, off) nobody was told to ask us.
            Err(error) if mode == DhcpMode::Full => return Err(error),
            Err(error) => {
                warn!(error = format!("{error:#}"), "dns stays off");
                None
            }
        },
        _ => None,
    };

    if let (true, Some((iface, server_ip))) = (mode != DhcpMode::Off, iface_addr.clone()) {
        let sock = net::bind_udp(cfg.dhcp.port, &iface, mode == DhcpMode::Proxy)?;
        dhcp_addr = Some(sock.local_addr()?);
        let pxe = if mode == DhcpMode::Proxy {
            let s = net::bind_udp(cfg.dhcp.proxy_port, &iface, false)?;
            pxe_addr = Some(s.local_addr()?);
            Some(s)
        } else {
            None
        };
        let mut dcfg = cfg.dhcp.clone();
        dcfg.mode = mode;
        // Clients can only be pointed at a name server on port 53.
        if dns_bound.as_ref().is_some_and(|b| b.addr.port() == 53) {
            for s in dcfg.subnets.iter_mut().filter(|s| s.dns_servers.is_empty()) {
                s.dns_servers = vec![server_ip];
            }
        }
        let svc = DhcpService {
            cfg: dcfg,
            cmdb: cmdb.clone(),
            metrics: metrics.clone(),
            server_ip,
            http_base: http_base.clone(),
            boot: cfg.boot.clone(),
        };
        info!(%iface, %server_ip, ?mode, port = cfg.dhcp.port, "dhcp bound");
        let t = token.clone();
        tasks.spawn(async move { ("dhcp", dhcp::serve(sock, pxe, svc, t).await) });
        if cfg.dhcp.router_advertisements {
            match crate::ra::bind(&iface) {
                Ok((fd, index)) => {
                    let t = token.clone();
                    tasks.spawn(async move { ("ra", crate::ra::serve(fd, index, t).await) });
                }
                // Unprivileged (no CAP_NET_RAW) or no IPv6: iPXE only waits longer.
                Err(error) => warn!(%iface, error = format!("{error:#}"), "not answering IPv6 router solicitations"),
            }
        }
    }

    if let (Some(bound), Some((_, server_ip))) = (dns_bound, iface_addr.clone()) {
        dns_addr = Some(bound.addr);
        let reverse = if !cfg.dns.reverse_zones.is_empty() {
            cfg.dns.reverse_zones.clone()
        } else if !cfg.dhcp.subnets.is_empty() {
            cfg.dhcp.subnets.iter().map(|s| (s.network, s.prefix)).collect()
        } else {
            vec![(Ipv4Addr::from(u32::from(server_ip) & 0xffff_ff00), 24)]
        };
        let svc =
            dns::DnsService { cfg: cfg.dns.clone(), cmdb: cmdb.clone(), metrics: metrics.clone(), server_ip, reverse };
        let t = token.clone();
        tasks.spawn(async move { ("dns", dns::serve(bound, svc, t).await) });
    }

    if cfg.tftp.enabled {
        let iface = iface_addr.as_ref().map(|(i, _)| i.clone()).unwrap_or_else(|| cfg.interface.clone());
        let sock = net::bind_udp(cfg.tftp.port, &iface, false)?;
        tftp_addr = Some(sock.local_addr()?);
        std::fs::create_dir_all(&cfg.tftp.root).with_context(|| format!("creating {}", cfg.tftp.root.display()))?;
        let svc = tftp::TftpService {
            root: cfg.tftp.root.clone(),
            interface: iface,
            on_report: tftp_reporter(cmdb.clone(), metrics.clone()),
            active: metrics.tftp_active.clone(),
            slots: tftp::TftpService::slots_for(cfg.tftp.max_transfers),
        };
        let t = token.clone();
        tasks.spawn(async move { ("tftp", tftp::serve(sock, svc, t).await) });
    }

    let boot = api::boot::BootState {
        renderer: crate::render::Renderer::new(cfg.templates.as_deref()).context("loading templates")?,
        profiles: cfg.boot.profiles.clone(),
        discovery_profile: cfg.boot.discovery_profile.clone(),
        http_base: http_base.clone(),
        root: cfg.tftp.root.clone(),
        domain: cfg.dns.domain.clone(),
        answer_repos: cfg.provision.answer_repos.clone(),
        installer_proxy: cfg.provision.installer_proxy.clone(),
    };
    let networks = if !cfg.agent.networks.is_empty() {
        cfg.agent.networks.clone()
    } else if !cfg.dhcp.subnets.is_empty() {
        cfg.dhcp.subnets.iter().map(|s| (s.network, s.prefix)).collect()
    } else {
        vec![(Ipv4Addr::from(u32::from(public_ip) & 0xffff_ff00), 24)]
    };
    let hub = Arc::new(crate::controller::Hub::new(cmdb.clone(), cfg.agent.clone(), networks, token.clone()));
    let t = token.clone();
    let sweeper = hub.clone();
    tasks.spawn(async move { ("jobs", sweeper.sweep(t).await) });
    let renderer = Arc::new(crate::render::Renderer::new(cfg.templates.as_deref()).context("loading templates")?);
    std::fs::create_dir_all(&cfg.provision.images_dir).ok();
    let engine = Arc::new(crate::provision::engine::Engine::new(
        hub.clone(),
        cfg.provision.clone(),
        renderer,
        http_base.clone(),
        cfg.dns.domain.clone(),
    ));
    let (t, e) = (token.clone(), engine.clone());
    tasks.spawn(async move { ("provision", e.run(t).await) });
    let state = ApiState {
        cmdb: cmdb.clone(),
        metrics,
        token: Arc::from(admin_token.as_str()),
        boot: Some(Arc::new(boot)),
        hub,
        engine: Some(engine),
    };
    let app = crate::assets::guard(api::router(state), &cfg).into_make_service_with_connect_info::<SocketAddr>();
    let t = token.clone();
    tasks.spawn(async move {
        let r = axum::serve(listener, app).with_graceful_shutdown(t.cancelled_owned()).await;
        ("http", r.map_err(anyhow::Error::from))
    });
    info!(%http_addr, %http_base, "http serving");
    Ok(Running { http_addr, dhcp_addr, pxe_addr, tftp_addr, dns_addr, cmdb, admin_token, token, tasks })
}

impl Running {
    /// Runs until `shutdown` resolves or a service fails; then stops everything and flushes the
    /// CMDB. Returns the first service error.
    pub async fn wait(mut self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let mut first_err = None;
        tokio::select! {
            _ = shutdown => info!("shutting down"),
            Some(done) = self.tasks.join_next() => {
                first_err = Some(match done {
                    Ok((name, result)) => {
                        let err = result.err().unwrap_or_else(|| anyhow::anyhow!("stopped unexpectedly"));
                        err.context(format!("{name} service failed"))
                    }
                    Err(join) => anyhow::anyhow!("a service task panicked: {join}"),
                });
            }
        }
        self.token.cancel();
        while let Some(done) = self.tasks.join_next().await {
            if let Ok((name, Err(error))) = done {
                warn!(service = name, %error, "service stopped with an error");
            }
        }
        self.cmdb.flush().await?;
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Starts the appliance and runs it until `shutdown`.
pub async fn run(cfg: Config, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    start(cfg).await?.wait(shutdown).await
}

/// Turns finished TFTP transfers into metrics and timeline events (by the client's lease).
fn tftp_reporter(cmdb: Cmdb, metrics: Metrics) -> tftp::OnReport {
    Arc::new(move |r: tftp::Report| {
        let outcome = match &r.outcome {
            tftp::Outcome::Complete => "complete".to_string(),
            tftp::Outcome::Aborted(_) => "aborted".to_string(),
            tftp::Outcome::Failed(_) => "failed".to_string(),
        };
        metrics.tftp_transfers.get_or_create(&crate::metrics::OutcomeLabel { outcome: outcome.clone() }).inc();
        metrics.tftp_bytes.inc_by(r.bytes);
        let reason = match &r.outcome {
            tftp::Outcome::Complete => None,
            tftp::Outcome::Aborted(why) | tftp::Outcome::Failed(why) => Some(why.clone()),
        };
        tracing::debug!(client = %r.client, file = %r.file, bytes = r.bytes, %outcome, "tftp transfer");
        let detail = serde_json::json!({
            "file": r.file, "bytes": r.bytes, "size": r.size, "outcome": outcome, "reason": reason,
            "blksize": r.blksize, "windowsize": r.windowsize, "options": r.options, "ms": r.elapsed.as_millis() as u64,
        });
        if let std::net::IpAddr::V4(ip) = r.client.ip() {
            cmdb.record_for_ip(ip, "tftp.transfer", detail);
        }
    })
}

fn resolve_interface(cfg: &Config) -> anyhow::Result<(String, Ipv4Addr)> {
    if let ("", Some(ip)) = (cfg.interface.as_str(), cfg.address) {
        // An address without an interface: listen on every interface (tests, simple hosts).
        return Ok((String::new(), ip));
    }
    if cfg.interface.is_empty() {
        let (iface, ip) = net::first_usable_interface().context("no interface is up with an IPv4 address")?;
        return Ok((iface, cfg.address.unwrap_or(ip)));
    }
    let ip = match cfg.address {
        Some(ip) => ip,
        None => net::interface_ipv4(&cfg.interface)?,
    };
    Ok((cfg.interface.clone(), ip))
}

/// Reads the admin token, creating it (mode 0600, printed once) on first start.
fn ensure_admin_token(data_dir: &Path) -> anyhow::Result<String> {
    let path = data_dir.join("admin.token");
    if let Ok(t) = std::fs::read_to_string(&path) {
        return Ok(t.trim().to_string());
    }
    let mut raw = [0u8; 24];
    getrandom::fill(&mut raw).map_err(|e| anyhow::anyhow!("no randomness for the admin token: {e}"))?;
    let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    writeln!(f, "{token}")?;
    println!("rackboot: admin token created in {} (shown once): {token}", path.display());
    Ok(token)
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("installing SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
