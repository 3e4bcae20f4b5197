//! Wires the appliance together: opens the CMDB (making sure an admin can log in), resolves its addresses, binds every socket,
//! then starts each service (see [`crate::service`]) under one cancellation token, and stops them
//! all when one fails or a shutdown signal arrives.

mod fallback;
mod fdlimit;
pub mod service;
mod six;
pub mod web;

use std::future::Future;
use std::net::SocketAddr;

use anyhow::Context;
use tokio::net::{TcpListener, UdpSocket};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use rackboot_config::addresses::{lookup_interface, resolve, Addresses};

use crate::cmdb::Cmdb;
use crate::config::{Config, DhcpMode};
use crate::{dhcp, dns, net, ra, tftp};
use service::{Core, Services};

/// A started appliance: its bound addresses and handles, for `run` and for tests.
pub struct Running {
    pub http_addr: SocketAddr,
    /// Local address of the HTTPS listener (API, agent API, metrics).
    pub https_addr: SocketAddr,
    /// Local address of the boot listener (firmware's HTTPS boot), when it runs.
    pub boot_addr: Option<SocketAddr>,
    /// The CA certificate (PEM) clients and agents trust, and its `sha256:<hex>` pin.
    pub ca_pem: String,
    pub ca_pin: String,
    /// Local address of the DHCP socket, when DHCP runs.
    pub dhcp_addr: Option<SocketAddr>,
    pub pxe_addr: Option<SocketAddr>,
    /// The DHCPv6 socket's address, when `[dhcp6]` is enabled.
    pub dhcp6_addr: Option<SocketAddr>,
    pub tftp_addr: Option<SocketAddr>,
    /// Address DNS answers on (UDP and TCP), when DNS runs.
    pub dns_addr: Option<SocketAddr>,
    pub cmdb: Cmdb,
    /// The token of `data_dir/admin.token` (an API token of user `admin`).
    pub admin_token: String,
    pub token: CancellationToken,
    services: Services,
    /// The appliance's address on the fallback network, while it runs.
    _fallback: Option<fallback::FallbackAddress>,
}

/// The appliance's provisioning address as `rackboot serve` would find it: `server.address`,
/// else the address of `server.interface` (or the interface found); `None` when neither is.
pub fn provisioning_address(cfg: &Config) -> Option<std::net::Ipv4Addr> {
    cfg.address.or_else(|| lookup_interface(cfg).ok().map(|(_, ip)| ip))
}

/// Starts every enabled service and returns once all sockets are bound.
pub async fn start(cfg: Config) -> anyhow::Result<Running> {
    fdlimit::raise(&cfg);
    std::fs::create_dir_all(&cfg.data_dir).with_context(|| format!("creating data dir {}", cfg.data_dir.display()))?;
    let db_path = cfg.data_dir.join("rackboot.redb");
    let batch = cfg.dhcp.commit_batch;
    let postgres = cfg.store.postgres()?;
    let opened = {
        let db_path = db_path.clone();
        let postgres = postgres.clone();
        tokio::task::spawn_blocking(move || Cmdb::open_on(&db_path, postgres.as_ref(), batch)).await?
    };
    let cmdb = opened.map_err(|e| {
        if postgres.is_some() {
            return anyhow::anyhow!("opening the CMDB on PostgreSQL: {e}");
        }
        let latest = crate::cmdb::backup::latest_backup(&cfg.data_dir.join("backups"));
        let hint = match latest {
            Some(b) => format!("the latest backup is {} (rackboot restore FILE)", b.display()),
            None => format!("there is no backup in {}", cfg.data_dir.join("backups").display()),
        };
        anyhow::anyhow!("opening the CMDB {}: {e}; {hint}", db_path.display())
    })?;
    cmdb.growth().set_cap(cfg.max_unclaimed_machines);
    let admin_token = crate::auth::bootstrap::ensure_admin(&cmdb, &cfg.data_dir).await?;

    let http = TcpListener::bind(cfg.http_listen).await.with_context(|| format!("binding http {}", cfg.http_listen))?;
    let http_addr = http.local_addr()?;
    let https =
        TcpListener::bind(cfg.https.listen).await.with_context(|| format!("binding https {}", cfg.https.listen))?;
    let https_addr = https.local_addr()?;
    let mut addrs = resolve(&cfg, http_addr, https_addr.port(), lookup_interface)?;
    let fallback = match cfg.fallback {
        Some(net) => Some(fallback::FallbackAddress::add(net, &addrs.interface)?),
        None => None,
    };
    addrs.server_ip6 = six::server_ip6(&cfg, &addrs.interface);
    let mut names = crate::tls::names(&cfg, addrs.server_ip);
    names.extend(addrs.server_ip6.map(|ip| ip.to_string()));
    let tls = crate::tls::load(&cfg, &names).context("setting up TLS")?;
    let (ca_pem, ca_pin) = (tls.ca_pem.clone(), tls.ca_pin.clone());
    let boot = match cfg.https.boot_listen {
        Some(at) => {
            let listener = TcpListener::bind(at).await.with_context(|| format!("binding the boot listener {at}"))?;
            let port = listener.local_addr()?.port();
            let boot_tls = crate::tls::load_boot(&cfg, &names).context("setting up the boot listener's TLS")?;
            let host = crate::net::url_host(&addrs.https_base).unwrap_or_default();
            let host = if host.contains(':') { format!("[{host}]") } else { host };
            addrs.boot_https_base = Some(format!("https://{host}:{port}"));
            Some((listener, boot_tls))
        }
        None => None,
    };
    let boot_addr = boot.as_ref().map(|(l, _)| l.local_addr()).transpose()?;
    // DNS binds first so DHCP knows whether to hand out our address as the name server.
    let dns = bind_dns(&cfg, &mut addrs)?;
    let dhcp = bind_dhcp(&cfg, &addrs)?;
    let dhcp6 = bind_dhcp6(&cfg, &addrs)?;
    let ra = bind_ra(&cfg, &addrs);
    let tftp = bind_tftp(&cfg, &addrs)?;
    let mut six = six::bind(&cfg, &addrs, http_addr, https_addr).await?;
    let dns = match (dns, six.dns.take()) {
        (Some(v4), Some(v6)) => Some(v4.also(v6)),
        (dns, _) => dns,
    };
    std::fs::create_dir_all(&cfg.provision.images_dir).ok();
    let dhcp_addr = dhcp.as_ref().map(|b| b.socket.local_addr()).transpose()?;
    let pxe_addr = dhcp.as_ref().and_then(|b| b.pxe.as_ref()).map(|s| s.local_addr()).transpose()?;
    let tftp_addr = tftp.as_ref().map(|s| s.local_addr()).transpose()?;
    let dhcp6_addr = dhcp6.as_ref().map(|s| s.local_addr()).transpose()?;
    let dns_addr = dns.as_ref().map(|b| b.addr);

    let token = CancellationToken::new();
    let core = Core::new(cfg, addrs, cmdb.clone(), tls, token.clone())?;
    core.templates.reload(&cmdb).await.context("loading the template overrides")?;
    let mut services = Services::new(token.clone());
    if let Some(bound) = dns {
        services.start("dns", dns::serve(bound, core.dns_handle(), token.clone()));
    }
    if let Some(bound) = dhcp {
        services.start("dhcp", dhcp::serve(bound, core.dhcp_handle(), token.clone()));
    }
    if let Some(socket) = dhcp6 {
        services.start("dhcp6", dhcp::v6::serve(socket, core.dhcp_handle(), token.clone()));
    }
    if let Some(bound) = ra {
        services.start("ra", ra::serve(bound, token.clone()));
    }
    if let Some(socket) = tftp {
        let sockets = std::iter::once(socket).chain(six.tftp.take()).collect();
        services.start("tftp", tftp::serve(sockets, core.tftp_handle()?, token.clone()));
    }
    for p in core.cfg.boot.profiles.values() {
        let Some(media) = &p.windows else { continue };
        if !core.cfg.tftp.root.join(crate::windows::boot_file(media)).is_file() {
            tracing::warn!(profile = %p.name, %media, "Windows media not imported: rackboot windows import {media} DIR");
        }
    }
    if core.cfg.windows.share {
        let smbd = crate::windows::share::start(&core.cfg, core.addrs.server_ip)?;
        services.start("smbd", crate::child::supervise(smbd, token.clone()));
    }
    if let Some(iperf3) = crate::provision::iperf::server(&core.cfg, core.addrs.server_ip)? {
        services.start("iperf3", crate::child::supervise(iperf3, token.clone()));
    }
    if core.cfg.proxy.enable {
        let squid = crate::proxy::start(&core.cfg, core.addrs.server_ip)?;
        services.start("squid", crate::child::supervise(squid, token.clone()));
    }
    // Blobs an upload wrote but never recorded (a crash in between) go away.
    match core.plugins.sweep().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(removed = n, "plugin blobs no version names were removed"),
        Err(error) => tracing::warn!(%error, "sweeping the plugin blobs"),
    }
    // The appliances of the estate (GET /api/v1/appliances): where this one answers, and on a
    // shared store a beat so the others list it.
    cmdb.announce(&core.addrs.https_base, env!("CARGO_PKG_VERSION"));
    if cmdb.shared() {
        services.start("appliance-beat", crate::cmdb::appliance_beats(cmdb.clone(), token.clone()));
    }
    // On a shared store: bundles this appliance holds that the store lacks are shared.
    match core.plugins.publish().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(shared = n, "plugin bundles copied into the shared store"),
        Err(error) => tracing::warn!(%error, "copying plugin bundles into the shared store"),
    }
    // Hardware profiles' plugins are checked against the store (stored, enabled, parameters
    // valid) now; tasks naming a profile are refused while one fails.
    for p in core.cfg.provision.hardware_profiles.values() {
        for r in &p.plugins {
            if let Err(error) = crate::plugins::usage::resolve(&core.cmdb, r).await {
                tracing::warn!(profile = %p.name, plugin = %r.name, %error, "hardware profile plugin not usable");
            }
        }
    }
    for b in core.firmware.baselines().values() {
        if let Err(error) = rackboot_control::firmware::inband::check_plugins(&core.firmware, &core.cmdb, b).await {
            tracing::warn!(%error, "firmware baseline plugin not usable");
        }
    }
    services.start("jobs", core.hub.clone().sweep(token.clone()));
    if core.cmdb.shared() {
        services.start("remote-jobs", core.hub.clone().wake_on_queued(token.clone()));
    }
    services.start("provision", core.engine.clone().run(token.clone()));
    services.start("bmc", crate::bmc::power::serve(core.power.clone(), token.clone()));
    services.start("vmedia", core.vmedia.clone().serve(token.clone()));
    // Flags that come with time (silent slots, failed machines) get their events unasked.
    services.start("racks", crate::racks::sweep(core.cmdb.clone(), std::time::Duration::from_secs(30), token.clone()));
    // Events to the webhook receivers, each subscription from where it left off.
    if core.cfg.webhooks.deliver {
        services.start("webhooks", core.webhooks.clone().serve(token.clone()));
    }
    // Re-bind jobs' ends recorded, and Tang keys no machine is bound to any more deleted.
    services.start("tang", core.tang.clone().serve(token.clone()));
    if let Some((every, keep)) = core.cfg.backups {
        services.start("backups", core.cmdb.clone().scheduled_backups(every, keep, token.clone()));
    }
    // One site for both listeners: one login limiter and one cap on live streams, however a
    // client reaches the API (plain HTTP serves it too with `http.loopback_api`).
    let site = core.site();
    services.start("http", web::serve(http, site.clone(), token.clone()));
    if let Some(http6) = six.http.take() {
        services.start("http6", web::serve(http6, site.clone(), token.clone()));
    }
    if let Some(https6) = six.https.take() {
        services.start("https6", web::serve_https(https6, site.clone(), token.clone()));
    }
    if let Some((listener, boot_tls)) = boot {
        services.start("boot-https", web::serve_boot(listener, site.clone(), boot_tls, token.clone()));
        info!(base = ?core.addrs.boot_https_base, "boot listener serving (firmware's HTTPS boot: /boot)");
    }
    services.start("https", web::serve_https(https, site, token.clone()));
    info!(%http_addr, http_base = %core.addrs.http_base, "http serving (firmware: /boot, /healthz)");
    info!(%https_addr, https_base = %core.addrs.https_base, %ca_pin, "https serving (api, agents, metrics)");
    Ok(Running {
        http_addr,
        https_addr,
        boot_addr,
        ca_pem,
        ca_pin,
        dhcp_addr,
        pxe_addr,
        dhcp6_addr,
        tftp_addr,
        dns_addr,
        cmdb,
        admin_token,
        token,
        services,
        _fallback: fallback,
    })
}

/// DNS's sockets, when it runs; a failed bind is fatal only where DHCP promised clients our DNS.
fn bind_dns(cfg: &Config, addrs: &mut Addresses) -> anyhow::Result<Option<dns::Bound>> {
    let (true, Some(ip)) = (addrs.dns, addrs.server_ip) else { return Ok(None) };
    match dns::bind(ip, cfg.dns.port, &addrs.interface) {
        Ok(bound) => {
            if bound.addr.port() == 53 {
                addrs.name_server = Some(ip);
            }
            Ok(Some(bound))
        }
        // As the network's DHCP server we promise DNS to every client: not being able to
        // answer is fatal. Beside another DHCP server (proxy, off) nobody was told to ask us.
        Err(error) if addrs.dhcp == DhcpMode::Full => Err(error),
        Err(error) => {
            warn!(error = format!("{error:#}"), "dns stays off");
            addrs.dns = false;
            Ok(None)
        }
    }
}

/// DHCP's socket on the DHCP port, plus the PXE boot-server port in proxy mode.
fn bind_dhcp(cfg: &Config, addrs: &Addresses) -> anyhow::Result<Option<dhcp::Bound>> {
    let Some(server_ip) = addrs.server_ip.filter(|_| addrs.dhcp != DhcpMode::Off) else { return Ok(None) };
    let proxy = addrs.dhcp == DhcpMode::Proxy;
    let socket = net::bind_udp(cfg.dhcp.port, &addrs.interface, proxy)?;
    let pxe = proxy.then(|| net::bind_udp(cfg.dhcp.proxy_port, &addrs.interface, false)).transpose()?;
    info!(iface = %addrs.interface, %server_ip, mode = ?addrs.dhcp, port = cfg.dhcp.port, "dhcp bound");
    Ok(Some(dhcp::Bound { socket, pxe }))
}

/// The DHCPv6 socket on the provisioning interface, when `[dhcp6]` is enabled.
fn bind_dhcp6(cfg: &Config, addrs: &Addresses) -> anyhow::Result<Option<UdpSocket>> {
    if !cfg.dhcp6.enabled {
        return Ok(None);
    }
    let socket = dhcp::v6::bind(&cfg.dhcp6, &addrs.interface)?;
    info!(iface = %addrs.interface, port = cfg.dhcp6.port, "dhcp6 bound");
    Ok(Some(socket))
}

/// The router-advertisement socket, beside DHCP; without it iPXE only waits longer.
fn bind_ra(cfg: &Config, addrs: &Addresses) -> Option<ra::Bound> {
    if (addrs.dhcp == DhcpMode::Off && !cfg.dhcp6.enabled) || !cfg.dhcp.router_advertisements {
        return None;
    }
    ra::bind(&addrs.interface)
        .map(|b| b.advertising(ra::Advert::for_dhcp6(&cfg.dhcp6)))
        // Unprivileged (no CAP_NET_RAW) or no IPv6.
        .inspect_err(|error| {
            warn!(iface = %addrs.interface, error = format!("{error:#}"), "not answering IPv6 router solicitations")
        })
        .ok()
}

/// TFTP's socket, with the boot directory it serves created.
fn bind_tftp(cfg: &Config, addrs: &Addresses) -> anyhow::Result<Option<UdpSocket>> {
    if !cfg.tftp.enabled {
        return Ok(None);
    }
    let socket = net::bind_udp(cfg.tftp.port, &addrs.interface, false)?;
    std::fs::create_dir_all(&cfg.tftp.root).with_context(|| format!("creating {}", cfg.tftp.root.display()))?;
    Ok(Some(socket))
}

impl Running {
    /// The addresses the listeners got, as `rackboot serve --listening-file` writes them.
    pub fn listening(&self) -> serde_json::Value {
        serde_json::json!({
            "http": self.http_addr, "https": self.https_addr, "dhcp": self.dhcp_addr, "pxe": self.pxe_addr, "dhcp6": self.dhcp6_addr,
            "tftp": self.tftp_addr, "dns": self.dns_addr,
        })
    }

    /// Writes [`Running::listening`] to `file` whole (a temporary file renamed over it), so a
    /// reader never sees half of it.
    pub fn write_listening(&self, file: &std::path::Path) -> anyhow::Result<()> {
        let tmp = file.with_extension("tmp");
        std::fs::write(&tmp, format!("{}\n", self.listening()))
            .and_then(|()| std::fs::rename(&tmp, file))
            .with_context(|| format!("writing the listening file {}", file.display()))
    }

    /// Runs until `shutdown` resolves or a service fails; then stops everything and flushes the
    /// CMDB. Returns the first service error.
    pub async fn wait(self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let result = self.services.wait(shutdown).await;
        let flushing = std::time::Instant::now();
        self.cmdb.flush().await?;
        let took = flushing.elapsed();
        if took > std::time::Duration::from_millis(500) {
            warn!(took_ms = took.as_millis() as u64, "the CMDB's last flush was slow");
        }
        result
    }
}

/// Starts the appliance and runs it until `shutdown`.
pub async fn run(cfg: Config, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    start(cfg).await?.wait(shutdown).await
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
