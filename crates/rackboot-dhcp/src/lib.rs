//! The DHCP server: full mode (leases from pools and reservations, RFC 2131) and proxy mode (PXE
//! boot options only, ports 67 and 4011). Mechanics only: the boot file comes from the planner.

mod full;
mod held;
mod leases;
mod limits;
mod options;
pub mod packet;
pub mod pair;
mod proxy;
pub mod ra;
mod request;
pub mod v6;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use dhcproto::v4::MessageType;
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use full::{admitted, handle_full, lease_record};
pub use leases::{Leases, Refusal};
use limits::Limits;
use packet::Request;
use rackboot_base::metrics::{Metrics, TypeLabel};
use rackboot_boot::planner::{self, BootContext, DhcpBoot, DhcpBootRequest};
use rackboot_config::{BootFiles, DhcpConfig, DhcpMode, Subnet};
use rackboot_store::{now_secs, Cmdb, Sighting};

/// Everything the DHCP server needs besides its sockets.
#[derive(Clone)]
pub struct DhcpService {
    pub cfg: DhcpConfig,
    pub cmdb: Cmdb,
    pub metrics: Metrics,
    /// The appliance's address: server identifier and next-server.
    pub server_ip: Ipv4Addr,
    /// Base URL of the HTTP server, e.g. `http://198.18.0.1`.
    pub http_base: String,
    pub boot: BootFiles,
    /// Told when the store refused a lease (another appliance holds the address): the lease
    /// map is reloaded from the store.
    pub resync: Option<tokio::sync::mpsc::UnboundedSender<Ipv4Addr>>,
}

impl DhcpService {
    /// The boot answer for a PXE or iPXE client. The UEFI loader is the machine's choice, else
    /// its rack's, else its subnet's (when known), else the config's.
    fn boot_for(&self, req: &Request, subnet: Option<&Subnet>) -> Option<DhcpBoot> {
        planner::plan_dhcp(&self.boot_request(req, subnet)?, &self.boot_context())
    }

    fn boot_context(&self) -> BootContext<'_> {
        BootContext { http_base: &self.http_base, next_server: self.server_ip, files: &self.boot }
    }

    /// What the planner is asked for a PXE or iPXE client (`None` for anyone else).
    fn boot_request(&self, req: &Request, subnet: Option<&Subnet>) -> Option<DhcpBootRequest> {
        if !(req.is_pxe || req.is_ipxe) {
            return None;
        }
        Some(boot_request(&self.cmdb, &self.boot, req.mac, req.arch, req.is_ipxe, subnet.and_then(|s| s.uefi_loader)))
    }

    fn sighting(&self, req: &Request) -> Sighting {
        Sighting {
            mac: Some(req.mac),
            arch: req.arch.map(|a| a.name()),
            circuit_id: req.circuit_id.clone(),
            remote_id: req.remote_id.clone(),
        }
    }

    fn count_sent(&self, kind: MessageType) {
        self.metrics.dhcp_sent.get_or_create(&TypeLabel { r#type: format!("{kind:?}").to_lowercase() }).inc();
    }
}

/// What the planner is asked for a network boot client of either IP version: the machine's
/// own UEFI loader, else its rack's, else `subnet_loader` (else the config's, in the planner).
pub(crate) fn boot_request(
    cmdb: &Cmdb,
    boot: &BootFiles,
    mac: rackboot_model::mac::Mac,
    arch: Option<planner::Arch>,
    is_ipxe: bool,
    subnet_loader: Option<rackboot_config::UefiLoader>,
) -> DhcpBootRequest {
    // Only the firmware's answer depends on the machine: no index lookup for iPXE.
    let brief = if is_ipxe { None } else { cmdb.brief_by_mac(mac) };
    let boots_disk =
        brief.as_ref().is_some_and(|b| planner::boots_own_disk(b.state, b.boot_profile.is_some(), b.installer_pending));
    // Only a UEFI x64 answer depends on the loader choice.
    let rack = || brief.as_ref()?.rack.as_deref().and_then(|r| cmdb.rack_uefi_loader(r));
    let uefi_loader = match arch {
        Some(planner::Arch::UefiX64) => brief.as_ref().and_then(|b| b.uefi_loader).or_else(rack).or(subnet_loader),
        _ => None,
    };
    // A machine pinned to a Windows profile starts its media's boot manager.
    let windows = rackboot_boot::media::pinned_media(&boot.profiles, brief.and_then(|b| b.boot_profile).as_deref());
    DhcpBootRequest { mac, arch, is_ipxe, uefi_loader, windows, boots_disk }
}

/// DHCP's bound sockets: the DHCP port, and in proxy mode the PXE boot-server port (4011).
pub struct Bound {
    pub socket: UdpSocket,
    pub pxe: Option<UdpSocket>,
}

/// What the DHCP service takes from the appliance: its config, its resolved addresses, the
/// store and the metrics (nothing else of the appliance's core).
#[derive(Clone)]
pub struct Handle {
    pub cfg: std::sync::Arc<rackboot_config::Config>,
    pub addrs: std::sync::Arc<rackboot_config::addresses::Addresses>,
    pub cmdb: rackboot_store::Cmdb,
    pub metrics: rackboot_base::metrics::Metrics,
}

/// The DHCP service: serves `bound` with the handle's config and addresses until `shutdown`.
pub async fn serve(bound: Bound, core: Handle, shutdown: CancellationToken) -> anyhow::Result<()> {
    let server_ip = core.addrs.server_ip.context("dhcp needs the appliance's address")?;
    let mut cfg = core.cfg.dhcp.clone();
    if let Some(ns) = core.addrs.name_server {
        for s in cfg.subnets.iter_mut().filter(|s| s.dns_servers.is_empty()) {
            s.dns_servers = vec![ns];
        }
    }
    // Rack address plans must lie in the networks this server hands out addresses on.
    core.cmdb.set_provisioning_networks(cfg.subnets.iter().map(|s| s.net).collect());
    let svc = DhcpService {
        cfg,
        cmdb: core.cmdb.clone(),
        metrics: core.metrics.clone(),
        server_ip,
        http_base: core.addrs.http_base.clone(),
        boot: core.cfg.boot.clone(),
        resync: None,
    };
    run(bound.socket, bound.pxe, svc, shutdown).await
}

/// Serves DHCP on `socket` (port 67) and, in proxy mode, `pxe_socket` (port 4011) until `token`
/// is cancelled. A bad packet is counted, logged at debug and dropped; it never stops the loop.
pub async fn run(
    socket: UdpSocket,
    pxe_socket: Option<UdpSocket>,
    mut svc: DhcpService,
    token: CancellationToken,
) -> anyhow::Result<()> {
    let socket = Arc::new(socket);
    // A pair member answers only while `active` says so (see `pair`).
    let (active_tx, mut active) = tokio::sync::watch::channel(svc.cfg.pair.is_none());
    if let (Some(pair), DhcpMode::Full) = (svc.cfg.pair.clone(), svc.cfg.mode) {
        tokio::spawn(pair::run(svc.cmdb.clone(), pair, active_tx, token.clone()));
    }
    svc.metrics.dhcp_pair_active.set(i64::from(*active.borrow()));
    let (resync_tx, mut resync) = tokio::sync::mpsc::unbounded_channel();
    svc.resync = Some(resync_tx);
    let mut leases = Leases::new(svc.cfg.offer_hold.as_secs());
    leases.limits = Limits::new(svc.cfg.max_clients_per_port, svc.cfg.max_clients_per_relay);
    if svc.cfg.mode == DhcpMode::Full {
        let pool: u64 = svc.cfg.subnets.iter().flat_map(|s| &s.pools).map(|p| p.size()).sum();
        svc.metrics.pool_addresses.set(i64::try_from(pool).unwrap_or(i64::MAX));
        leases.load(svc.cmdb.leases().await?);
        svc.metrics.leases_in_use.set(leases.active(now_secs()) as i64);
    }
    let mut buf = vec![0u8; 2048];
    let mut pxe_buf = vec![0u8; 2048];
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    let mut held_tick = tokio::time::interval(held::HOLD / 4);
    tracing::info!(mode = ?svc.cfg.mode, server_ip = %svc.server_ip, "dhcp serving");
    loop {
        tokio::select! {
            _ = token.cancelled() => break,
            _ = tick.tick() => {
                svc.metrics.leases_in_use.set(leases.active(now_secs()) as i64);
                leases.limits.prune(now_secs());
            }
            _ = held_tick.tick() => {
                for h in leases.held.due(std::time::Instant::now()) {
                    write_held(&svc, h);
                }
            }
            Ok(()) = active.changed() => {
                let answering = *active.borrow_and_update();
                svc.metrics.dhcp_pair_active.set(i64::from(answering));
                if answering {
                    reload(&svc, &mut leases).await;
                }
            }
            Some(ip) = resync.recv() => {
                while resync.try_recv().is_ok() {}
                tracing::info!(%ip, "another appliance holds this address; lease map reloaded from the store");
                reload(&svc, &mut leases).await;
            }
            r = socket.recv_from(&mut buf) => {
                let Some((n, from)) = received(r).await else { continue };
                if !*active.borrow() {
                    svc.metrics.dhcp_drop("pair_standby");
                    continue;
                }
                if let Some(req) = accept(&svc, &buf[..n], from) {
                    match svc.cfg.mode {
                        DhcpMode::Full => {
                            svc.metrics.guard("dhcp", || handle_full(&svc, &mut leases, &socket, req));
                        }
                        _ => {
                            svc.metrics.guard_async("dhcp", proxy::handle_offer(&svc, &socket, req)).await;
                        }
                    }
                }
            }
            r = recv_opt(pxe_socket.as_ref(), &mut pxe_buf) => {
                let Some((n, from)) = received(r).await else { continue };
                if let Some(req) = accept(&svc, &pxe_buf[..n], from) {
                    let pxe = pxe_socket.as_ref().expect("only polled when present");
                    svc.metrics.guard_async("dhcp", proxy::handle_boot_request(&svc, pxe, req, from)).await;
                }
            }
        }
    }
    for h in leases.held.drain() {
        write_held(&svc, h);
    }
    svc.cmdb.flush().await?;
    Ok(())
}

/// Replaces the lease map with what the store holds (a pair member starting to answer, a lease
/// another appliance holds). A store that cannot be read now leaves the map as it is: the
/// store still refuses an address another client holds.
async fn reload(svc: &DhcpService, leases: &mut Leases) {
    match svc.cmdb.leases().await {
        Ok(all) => leases.reload(all),
        Err(error) => warn!(%error, "lease map not reloaded from the store"),
    }
}

/// Writes an OFFER that was held for its REQUEST on its own.
fn write_held(svc: &DhcpService, h: held::Held) {
    let (sighting, offer) = h.into_record();
    svc.cmdb.record(sighting, vec![offer]);
}

/// Writes the OFFER held for `mac`, if any, before another event of that client is queued, so
/// its timeline stays in the order things happened.
fn flush_held(svc: &DhcpService, leases: &mut Leases, mac: rackboot_model::mac::Mac) {
    if let Some(h) = leases.held.take(mac) {
        write_held(svc, h);
    }
}

/// A datagram received, or `None` after a receive error: ICMP errors from earlier sends and
/// transient failures (ENOBUFS, ENOMEM) must not stop DHCP, and with it the appliance.
async fn received(r: std::io::Result<(usize, SocketAddr)>) -> Option<(usize, SocketAddr)> {
    match r {
        Ok(v) => Some(v),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => None,
        Err(error) => {
            warn!(%error, "dhcp receive failed");
            tokio::time::sleep(Duration::from_millis(10)).await;
            None
        }
    }
}

async fn recv_opt(s: Option<&UdpSocket>, buf: &mut [u8]) -> std::io::Result<(usize, SocketAddr)> {
    match s {
        Some(s) => s.recv_from(buf).await,
        None => std::future::pending().await,
    }
}

fn accept(svc: &DhcpService, buf: &[u8], from: SocketAddr) -> Option<Request> {
    if buf.len() > packet::MAX_PACKET {
        svc.metrics.dhcp_drop("oversized");
        debug!(%from, len = buf.len(), "dropping oversized dhcp packet");
        return None;
    }
    match packet::parse(buf) {
        Ok(req) => {
            let label = TypeLabel { r#type: format!("{:?}", req.kind).to_lowercase() };
            svc.metrics.dhcp_received.get_or_create(&label).inc();
            Some(req)
        }
        Err(reason) => {
            svc.metrics.dhcp_drop(&reason.to_string());
            debug!(%from, %reason, len = buf.len(), "dropping malformed dhcp packet");
            None
        }
    }
}

/// The subnet a request belongs to: by giaddr when relayed, else by the client's own address,
/// else the one holding our address.
fn select_subnet<'a>(svc: &'a DhcpService, req: &Request) -> Option<(usize, &'a Subnet)> {
    let (g, c) = (req.msg.giaddr(), req.msg.ciaddr());
    let find = |ip: Ipv4Addr| svc.cfg.subnets.iter().enumerate().find(|(_, s)| s.contains(ip));
    if !g.is_unspecified() {
        return find(g);
    }
    // A client that has an address (renewing, releasing, informing) unicasts to us directly,
    // also from behind a relay: its own address says which subnet it is on.
    if !c.is_unspecified() {
        if let Some(found) = find(c) {
            return Some(found);
        }
    }
    find(svc.server_ip)
}

fn send(
    svc: &DhcpService,
    socket: &Arc<UdpSocket>,
    req: &Request,
    mut reply: dhcproto::v4::Message,
    kind: MessageType,
) {
    if kind == MessageType::Nak && !req.msg.giaddr().is_unspecified() {
        packet::set_broadcast(&mut reply);
    }
    let to = packet::destination(req, kind, svc.cfg.reply_port, svc.cfg.relay_port);
    let bytes = packet::encode(&reply);
    match socket.try_send_to(&bytes, to) {
        Ok(_) => svc.count_sent(kind),
        Err(error) => {
            svc.metrics.dhcp_drop("send_failed");
            warn!(%to, %error, mac = %req.mac, "dhcp reply not sent");
        }
    }
}
