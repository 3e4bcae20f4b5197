//! The DHCP server: full mode (leases from pools and reservations, RFC 2131) and proxy mode (PXE
//! boot options only, ports 67 and 4011). Mechanics only: the boot file comes from the planner.
//!
//! Full mode is a pipeline, each stage in one place: a datagram is decoded (`packet`), what the
//! CMDB and the planner know of its client is gathered (`plan` below), the answer is decided
//! (`decide`, pure: the message, the lease map and that plan in; the reply and the writes out),
//! the writes are queued for the CMDB's group commit (`commit`), and the reply is encoded and
//! sent (`send`), an ACK only once its lease has committed.

mod commit;
mod decide;
mod held;
mod leases;
mod limits;
mod options;
pub mod packet;
pub mod pair;
mod proxy;
pub mod ra;
mod send;
pub mod v6;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use dhcproto::v4::MessageType;
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use commit::write_held;
use decide::{Plan, Server};
pub use leases::{Leases, Refusal};
use limits::Limits;
use packet::Request;
use rackboot_base::metrics::Metrics;
use rackboot_boot::planner::{self, BootContext, DhcpBoot, DhcpBootRequest};
use rackboot_config::{BootFiles, DhcpConfig, DhcpMode, Subnet};
use rackboot_store::{now_secs, Brief, Cmdb};
use send::Outbox;

/// Writes queued for the CMDB past which DISCOVERs are dropped: on the embedded store a
/// fraction of a second of work; on PostgreSQL, which takes fewer writes a second, a smaller
/// queue keeps the wait of the exchanges admitted short (about 0.3 s at 1,800 writes/s).
const DISCOVER_BACKLOG: usize = 4096;
const DISCOVER_BACKLOG_SHARED: usize = 512;

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
    /// The boot listener's base URL (firmware's HTTPS boot), when it runs.
    pub https_base: Option<String>,
    pub boot: BootFiles,
    /// Told when the store refused a lease (another appliance holds the address): the lease
    /// map is reloaded from the store.
    pub resync: Option<tokio::sync::mpsc::UnboundedSender<Ipv4Addr>>,
}

impl DhcpService {
    /// The boot answer for a PXE or iPXE client whose machine is `brief` (as looked up). The
    /// UEFI loader is the machine's choice, else its rack's, else its subnet's, else the config's.
    fn boot_for(&self, req: &Request, subnet: &Subnet, brief: Option<&Brief>) -> Option<DhcpBoot> {
        if !(req.is_pxe || req.is_ipxe) {
            return None;
        }
        let ask = BootClient::of(req, Some(subnet)).ask(&self.cmdb, &self.boot, brief);
        planner::plan_dhcp(&ask, &self.boot_context())
    }

    fn boot_context(&self) -> BootContext<'_> {
        BootContext {
            http_base: &self.http_base,
            https_base: self.https_base.as_deref(),
            next_server: self.server_ip,
            files: &self.boot,
        }
    }

    /// What the planner is asked for a PXE or iPXE client (`None` for anyone else).
    fn boot_request(&self, req: &Request, subnet: Option<&Subnet>) -> Option<DhcpBootRequest> {
        if !(req.is_pxe || req.is_ipxe) {
            return None;
        }
        let client = BootClient::of(req, subnet);
        Some(client.ask(&self.cmdb, &self.boot, client.machine(&self.cmdb).as_ref()))
    }

    fn count_sent(&self, kind: MessageType) {
        self.metrics.dhcp_sent_by.inc(&self.metrics.dhcp_sent, u8::from(kind), || type_label(kind));
    }
}

/// A network boot client of either IP version, as the planner is asked about it.
pub(crate) struct BootClient {
    pub mac: rackboot_model::mac::Mac,
    pub arch: Option<planner::Arch>,
    pub is_ipxe: bool,
    /// The UEFI loader its subnet chooses, if any.
    pub subnet_loader: Option<rackboot_config::UefiLoader>,
}

impl BootClient {
    fn of(req: &Request, subnet: Option<&Subnet>) -> BootClient {
        let subnet_loader = subnet.and_then(|s| s.uefi_loader);
        BootClient { mac: req.mac, arch: req.arch, is_ipxe: req.is_ipxe, subnet_loader }
    }

    /// Its machine, where the answer depends on it: only the firmware's does, so iPXE costs no
    /// index lookup.
    pub fn machine(&self, cmdb: &Cmdb) -> Option<Brief> {
        if self.is_ipxe {
            None
        } else {
            cmdb.brief_by_mac(self.mac)
        }
    }

    /// What the planner is asked, its machine being `brief` (as looked up): the machine's own
    /// UEFI loader, else its rack's, else the subnet's (else the config's, in the planner).
    pub fn ask(&self, cmdb: &Cmdb, boot: &BootFiles, brief: Option<&Brief>) -> DhcpBootRequest {
        let BootClient { mac, arch, is_ipxe, subnet_loader } = *self;
        let brief = brief.filter(|_| !is_ipxe);
        let boots_disk = brief
            .as_ref()
            .is_some_and(|b| planner::boots_own_disk(b.state, b.boot_profile.is_some(), b.installer_pending));
        // Only a UEFI x64 answer (PXE or HTTP boot) depends on the loader choice.
        let rack = || brief?.rack.as_deref().and_then(|r| cmdb.rack_uefi_loader(r));
        let uefi_loader = match arch {
            Some(planner::Arch::UefiX64 | planner::Arch::HttpX64) => {
                brief.and_then(|b| b.uefi_loader).or_else(rack).or(subnet_loader)
            }
            _ => None,
        };
        // A machine pinned to a Windows profile starts its media's boot manager.
        let windows = rackboot_boot::media::pinned_media(&boot.profiles, brief.and_then(|b| b.boot_profile.as_deref()));
        let bootos = !boots_disk && brief.is_none_or(|b| b.boot_profile.is_none() && !b.installer_pending);
        DhcpBootRequest { mac, arch, is_ipxe, uefi_loader, windows, boots_disk, bootos }
    }
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
        https_base: core.addrs.boot_https_base.clone(),
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
    let (outbox, acks) = Outbox::new(&svc, socket.clone());
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
                            svc.metrics.guard("dhcp", || answer(&svc, &mut leases, &outbox, req));
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
    // Every lease queued has committed: the ACKs waiting for them go out before the end.
    drop(outbox);
    let _ = acks.await;
    Ok(())
}

/// Full mode's answer to one decoded request: the plan gathered, the answer decided, its
/// writes queued and its reply sent (see the crate's doc).
fn answer(svc: &DhcpService, leases: &mut Leases, outbox: &Outbox, req: Request) {
    let Some((subnet_idx, subnet)) = decide::subnet_of(&svc.cfg.subnets, svc.server_ip, &req) else {
        svc.metrics.dhcp_drop("no_subnet");
        debug!(mac = %req.mac, giaddr = %req.msg.giaddr(), "no subnet for request");
        return;
    };
    let brief = svc.cmdb.brief_by_mac(req.mac);
    let me = brief.as_ref().map(|b| b.id);
    let reserved_for_other = |ip: Ipv4Addr| svc.cmdb.reserved_owner(ip).is_some_and(|o| Some(o) != me);
    let replies_with_boot = matches!(req.kind, MessageType::Discover | MessageType::Request | MessageType::Inform);
    let backlog = if svc.cmdb.shared() { DISCOVER_BACKLOG_SHARED } else { DISCOVER_BACKLOG };
    let plan = Plan {
        subnet,
        subnet_idx,
        hostname: brief.as_ref().and_then(|b| b.hostname.clone()),
        // A machine not yet placed that asks through a rack's port is offered its slot's address.
        reserved: brief
            .as_ref()
            .and_then(|b| b.reserved_ip)
            .or_else(|| svc.cmdb.planned_address(req.circuit_id.as_deref(), req.remote_id.as_deref())),
        reserved_for_other: &reserved_for_other,
        boot: if replies_with_boot { svc.boot_for(&req, subnet, brief.as_ref()) } else { None },
        store_behind: req.kind == MessageType::Discover && svc.cmdb.write_backlog() > backlog,
        may_place: svc.cmdb.has_racks() && brief.as_ref().is_none_or(|b| b.rack.is_none()),
    };
    let reclaimed = leases.reclaimed;
    let decision = decide::decide(&req, &plan, Server { cfg: &svc.cfg, ip: svc.server_ip }, leases, now_secs());
    if leases.reclaimed != reclaimed {
        svc.metrics.dhcp_offers_reclaimed.inc();
    }
    commit::apply(svc, leases, outbox, req, decision);
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

/// A message type's metrics label: `discover`, `ack`, ...
fn type_label(kind: MessageType) -> String {
    format!("{kind:?}").to_lowercase()
}

fn accept(svc: &DhcpService, buf: &[u8], from: SocketAddr) -> Option<Request> {
    if buf.len() > packet::MAX_PACKET {
        svc.metrics.dhcp_drop("oversized");
        debug!(%from, len = buf.len(), "dropping oversized dhcp packet");
        return None;
    }
    match packet::parse(buf) {
        Ok(req) => {
            let kind = req.kind;
            svc.metrics.dhcp_received_by.inc(&svc.metrics.dhcp_received, u8::from(kind), || type_label(kind));
            Some(req)
        }
        Err(reason) => {
            svc.metrics.dhcp_drop(&reason.to_string());
            debug!(%from, %reason, len = buf.len(), "dropping malformed dhcp packet");
            None
        }
    }
}
