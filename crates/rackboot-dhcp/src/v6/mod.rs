//! The DHCPv6 server (RFC 8415): IA_NA addresses from the `[dhcp6]` pools, durable before any
//! REPLY that binds them; boot file URLs (option 59) by client architecture, from the same
//! planner as DHCPv4; relayed messages through any depth of relays, with the first relay's
//! interface-id and remote-id as the port and switch that place a machine in its rack.
//!
//! Machines are the same records as for IPv4, found by MAC (see `rackboot_model::lease6`).
//! The pipeline, one stage each: `wire::decode` -> `decide::decide` (pure) -> the store's
//! group commit (`Cmdb::queue_lease6`) -> `wire::Reply::encode` and send.

pub mod decide;
pub mod leases;
pub mod wire;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use decide::{decide, hex, Ctx, Decision};
use leases::Leases6;
use rackboot_base::metrics::{Metrics, TypeLabel};
use rackboot_boot::planner::{self, Arch, BootContext};
use rackboot_config::{BootFiles, Dhcp6Config, Subnet6};
use rackboot_model::lease6::duid_ll;
use rackboot_model::mac::Mac;
use rackboot_store::{now_secs, Cmdb, Sighting};
use wire::{kind, Inbound};

/// All_DHCP_Relay_Agents_and_Servers (RFC 8415 7.1).
pub const ALL_SERVERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 1, 2);

/// Everything the DHCPv6 server needs besides its socket.
#[derive(Clone)]
pub struct Service6 {
    pub cfg: Dhcp6Config,
    pub cmdb: Cmdb,
    pub metrics: Metrics,
    /// The server identifier (a DUID-LL of the interface's MAC: the same across restarts).
    pub server_id: Vec<u8>,
    /// The appliance's own IPv6 addresses on the interface (subnets of direct clients, and
    /// the host of boot URLs).
    pub own: Vec<Ipv6Addr>,
    pub boot: BootFiles,
    /// The HTTP port of boot URLs.
    pub http_port: u16,
    /// The boot listener's port (HTTPS boot), when it runs.
    pub boot_port: Option<u16>,
}

/// What the DHCPv6 service takes from the appliance.
pub use super::Handle;

/// Binds the DHCPv6 socket on `interface`.
pub fn bind(cfg: &Dhcp6Config, interface: &str) -> anyhow::Result<UdpSocket> {
    rackboot_base::net::bind_udp6(cfg.port, interface, ALL_SERVERS)
}

/// The DHCPv6 service: serves `socket` with the handle's config until `shutdown`.
pub async fn serve(socket: UdpSocket, core: Handle, shutdown: CancellationToken) -> anyhow::Result<()> {
    let interface = core.addrs.interface.clone();
    let mac = rackboot_base::net::interface_mac(&interface).context("dhcp6: the interface has no MAC for a DUID")?;
    let svc = Service6 {
        cfg: core.cfg.dhcp6.clone(),
        cmdb: core.cmdb.clone(),
        metrics: core.metrics.clone(),
        server_id: duid_ll(Mac(mac)),
        // The address in a DHCPv6 subnet first: boot URLs name it.
        own: {
            let first = core.addrs.server_ip6;
            let rest = rackboot_base::net::interface_ipv6(&interface).into_iter().filter(|ip| Some(*ip) != first);
            first.into_iter().chain(rest).collect()
        },
        boot: core.cfg.boot.clone(),
        http_port: core.cfg.http_listen.port(),
        boot_port: core.cfg.https.boot_listen.map(|a| a.port()),
    };
    run(socket, svc, shutdown).await
}

/// Serves DHCPv6 on `socket` until `token` is cancelled. A bad message is counted and dropped.
pub async fn run(socket: UdpSocket, svc: Service6, token: CancellationToken) -> anyhow::Result<()> {
    let socket = Arc::new(socket);
    let mut leases = Leases6::load(svc.cmdb.leases6().await?);
    let (resync_tx, mut resync) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut buf = vec![0u8; 4096];
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    info!(server_id = %hex(&svc.server_id), own = ?svc.own, "dhcp6 serving");
    loop {
        tokio::select! {
            _ = token.cancelled() => break,
            _ = tick.tick() => {
                let now = now_secs();
                leases.prune(now);
                svc.metrics.leases6_in_use.set(leases.active(now) as i64);
            }
            Some(()) = resync.recv() => {
                while resync.try_recv().is_ok() {}
                match svc.cmdb.leases6().await {
                    Ok(stored) => leases = Leases6::load(stored),
                    Err(error) => warn!(%error, "dhcp6: lease map not reloaded"),
                }
            }
            r = socket.recv_from(&mut buf) => {
                let (n, from) = match r {
                    Ok(v) => v,
                    Err(error) => {
                        warn!(%error, "dhcp6 receive");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let SocketAddr::V6(from) = from else { continue };
                if n == buf.len() {
                    svc.metrics.dhcp6_drop("v6_too_large");
                    continue;
                }
                let m = match wire::decode(&buf[..n], *from.ip()) {
                    Ok(m) => m,
                    Err(why) => {
                        debug!(from = %from, %why, "dhcp6 message dropped");
                        svc.metrics.dhcp6_drop(&why.to_string());
                        continue;
                    }
                };
                svc.metrics.dhcp6_received.get_or_create(&TypeLabel { r#type: kind_name(m.kind).into() }).inc();
                let d = svc.decide(&m, &mut leases);
                svc.answer(&socket, SocketAddr::V6(from), m, d, &resync_tx);
            }
        }
    }
    Ok(())
}

impl Service6 {
    /// The subnet of the client's link: the first relay's link address, else one of the
    /// appliance's own addresses on this link (else the only subnet there is).
    fn subnet(&self, m: &Inbound) -> Option<&Subnet6> {
        let on = |ip: &Ipv6Addr| self.cfg.subnets.iter().find(|s| s.prefix.contains(ip));
        match m.first_relay() {
            Some(r) if !r.link.is_unspecified() => on(&r.link),
            Some(_) => None,
            None => self.own.iter().find_map(on).or(if self.cfg.subnets.len() == 1 {
                self.cfg.subnets.first()
            } else {
                None
            }),
        }
    }

    /// The address boot URLs name: the appliance's own in the client's subnet, else its first.
    fn host_for(&self, subnet: Option<&Subnet6>) -> Option<Ipv6Addr> {
        let mine = subnet.and_then(|s| self.own.iter().find(|ip| s.prefix.contains(*ip)));
        mine.or(self.own.first()).copied()
    }

    /// The boot file URL for a network boot client (`None` for anyone else), and whether it is
    /// for UEFI HTTP boot.
    fn boot_url(&self, m: &Inbound, mac: Option<Mac>, subnet: Option<&Subnet6>) -> Option<(String, bool)> {
        let arch = m.arch.map(Arch::from_code);
        if arch.is_none() && !m.is_ipxe {
            return None;
        }
        let (mac, host) = (mac?, self.host_for(subnet)?);
        let port = if self.http_port == 80 { String::new() } else { format!(":{}", self.http_port) };
        let http_base = format!("http://[{host}]{port}");
        let https_base = self.boot_port.map(|port| format!("https://[{host}]:{port}"));
        let client = super::BootClient { mac, arch, is_ipxe: m.is_ipxe, subnet_loader: None };
        let req = client.ask(&self.cmdb, &self.boot, client.machine(&self.cmdb).as_ref());
        let ctx = BootContext {
            http_base: &http_base,
            https_base: https_base.as_deref(),
            next_server: Ipv4Addr::UNSPECIFIED,
            files: &self.boot,
        };
        let plan = planner::plan_dhcp(&req, &ctx)?;
        let http = plan.filename.starts_with("http://") || plan.filename.starts_with("https://");
        let url = if http { plan.filename } else { format!("tftp://[{host}]/{}", plan.filename) };
        Some((url, http && plan.vendor_class == "HTTPClient" && !m.is_ipxe))
    }

    fn decide(&self, m: &Inbound, leases: &mut Leases6) -> Decision {
        let subnet = self.subnet(m);
        let mac = m.mac();
        let boot = self.boot_url(m, mac, subnet);
        let ctx = Ctx {
            cfg: &self.cfg,
            subnet,
            server_id: &self.server_id,
            now: now_secs(),
            boot_url: boot.as_ref().map(|(u, _)| u.as_str()),
            http_boot: boot.as_ref().is_some_and(|(_, h)| *h),
            mac,
        };
        decide(m, leases, &ctx)
    }

    /// What the message told about the machine: its MAC, architecture, and the first relay's
    /// interface-id and remote-id (enterprise number dropped) as option 82's circuit and remote id.
    fn sighting(m: &Inbound) -> Sighting {
        let relay = m.first_relay();
        Sighting {
            mac: m.mac(),
            arch: m.arch.map(|a| Arch::from_code(a).name()),
            circuit_id: relay.and_then(|r| r.interface_id.as_deref()).map(hex),
            remote_id: relay.and_then(|r| r.remote_id.as_deref()).filter(|d| d.len() > 4).map(|d| hex(&d[4..])),
        }
    }

    /// Commits the decision's changes (in order, with the sighting), then sends the reply; a
    /// reply that binds nothing goes at once.
    fn answer(
        &self,
        socket: &Arc<UdpSocket>,
        from: SocketAddr,
        m: Inbound,
        d: Decision,
        resync: &tokio::sync::mpsc::UnboundedSender<()>,
    ) {
        let Some(reply) = d.reply else {
            self.metrics.dhcp6_drop(d.dropped.unwrap_or("v6_unanswered"));
            return;
        };
        let sighting = Self::sighting(&m);
        let mut pending = Vec::new();
        let mut events = Some(d.events);
        for lease in d.changes {
            let (s, e) = match events.take() {
                Some(e) => (sighting.clone(), e),
                None => (Sighting::default(), Vec::new()),
            };
            match self.cmdb.queue_lease6(lease, s, e) {
                Ok(f) => pending.push(f),
                Err(error) => {
                    debug!(%error, "dhcp6 lease not queued");
                    self.metrics.dhcp6_drop("v6_store_busy");
                    let _ = resync.send(());
                    return;
                }
            }
        }
        if pending.is_empty() && reply.kind == kind::ADVERTISE && sighting.mac.is_some() {
            self.cmdb.record_firmware(Some(from.ip()), sighting, Vec::new());
        }
        let bytes = reply.encode(&m.relays);
        let (socket, metrics, resync, kind) = (socket.clone(), self.metrics.clone(), resync.clone(), reply.kind);
        tokio::spawn(async move {
            for f in pending {
                if let Err(error) = f.await {
                    warn!(%error, "dhcp6 lease not stored; no reply");
                    metrics.dhcp6_drop("v6_not_committed");
                    let _ = resync.send(());
                    return;
                }
            }
            match socket.send_to(&bytes, from).await {
                Ok(_) => {
                    metrics.dhcp6_sent.get_or_create(&TypeLabel { r#type: kind_name(kind).into() }).inc();
                }
                Err(error) => warn!(%error, to = %from, "dhcp6 reply not sent"),
            }
        });
    }
}

fn kind_name(k: u8) -> &'static str {
    match k {
        kind::SOLICIT => "solicit",
        kind::ADVERTISE => "advertise",
        kind::REQUEST => "request",
        kind::CONFIRM => "confirm",
        kind::RENEW => "renew",
        kind::REBIND => "rebind",
        kind::REPLY => "reply",
        kind::RELEASE => "release",
        kind::DECLINE => "decline",
        kind::INFORMATION_REQUEST => "information_request",
        _ => "other",
    }
}
