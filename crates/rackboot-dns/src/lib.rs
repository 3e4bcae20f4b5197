//! The DNS server: authoritative for `dns.domain` and the reverse zones of the provisioning
//! networks, answering from a snapshot of the CMDB's hostnames, reservations and leases that is
//! rebuilt whenever they change; names outside go to upstream resolvers or are refused.
//!
//! hickory-proto parses and encodes (truncating to the client's buffer); hickory-server's server
//! carries TCP, and our own loop ([`udp`]) carries UDP, which is where the queries are.
//! [`handler`] decides the answers and [`zone`] holds them. Sockets bind to the appliance's
//! address on the provisioning interface only.

mod answers;
pub mod forward;
pub mod handler;
mod refresh;
mod udp;
pub mod zone;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use handler::{Handler, ZoneCell};
use rackboot_base::metrics::Metrics;
use rackboot_config::DnsConfig;
use rackboot_store::{now_secs, Cmdb};
use refresh::{rebuild_at, spacing_after, thread_cpu, Refresher, SETTLE};
use zone::ZoneSettings;

/// Idle TCP connections are closed after this long.
const TCP_IDLE: Duration = Duration::from_secs(10);
/// Bound DNS sockets: one UDP socket per core (SO_REUSEPORT spreads queries across them) and
/// one TCP listener, all on the same address (and the same again on an IPv6 address, with
/// [`Bound::also`]).
pub struct Bound {
    udp: Vec<tokio::net::UdpSocket>,
    tcp: Vec<tokio::net::TcpListener>,
    pub addr: SocketAddr,
}

/// Binds `ip:port` (port 0 picks one) on `interface` (empty: any) for UDP and TCP.
pub fn bind(ip: impl Into<std::net::IpAddr>, port: u16, interface: &str) -> anyhow::Result<Bound> {
    let ip: std::net::IpAddr = ip.into();
    let new = |ty: Type, proto: Protocol| -> anyhow::Result<Socket> {
        let s = Socket::new(Domain::for_address(SocketAddr::new(ip, 0)), ty, Some(proto))?;
        if ip.is_ipv6() {
            s.set_only_v6(true)?;
        }
        // REUSEPORT only lets our own sockets (same user) share the port; another DNS server
        // already on it still makes the bind fail, as it should.
        s.set_reuse_port(true)?;
        if ty == Type::STREAM {
            s.set_reuse_address(true)?;
        }
        if !interface.is_empty() {
            s.bind_device(Some(interface.as_bytes()))
                .with_context(|| format!("SO_BINDTODEVICE {interface} (needs root or CAP_NET_RAW)"))?;
        }
        s.set_nonblocking(true)?;
        Ok(s)
    };
    let hint = |addr: SocketAddr| format!("binding dns {addr} (set dns.port, or dns.enabled = false)");
    // SO_REUSEPORT would let a second rackboot (same user) bind beside us and split the
    // queries, so first make sure nobody has the port: a plain bind must succeed.
    let want = SocketAddr::new(ip, port);
    let probe = |want: SocketAddr| -> anyhow::Result<SocketAddr> {
        let udp = std::net::UdpSocket::bind(want).with_context(|| hint(want))?;
        let addr = udp.local_addr()?;
        std::net::TcpListener::bind(addr).with_context(|| hint(addr))?;
        Ok(addr)
    };
    // Port 0 (tests): the port the kernel picks for UDP may be taken for TCP; pick again.
    let addr = match port {
        0 => (0..20).find_map(|_| probe(want).ok()).map_or_else(|| probe(want), Ok)?,
        _ => probe(want)?,
    };
    let first = new(Type::DGRAM, Protocol::UDP)?;
    first.bind(&addr.into()).with_context(|| hint(addr))?;
    let mut udp = vec![first];
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    for _ in 1..cores {
        let s = new(Type::DGRAM, Protocol::UDP)?;
        s.bind(&addr.into()).with_context(|| hint(addr))?;
        udp.push(s);
    }
    let udp = udp
        .into_iter()
        .map(|s| {
            let _ = s.set_recv_buffer_size(4 << 20);
            tokio::net::UdpSocket::from_std(s.into())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let tcp = new(Type::STREAM, Protocol::TCP)?;
    tcp.bind(&addr.into()).with_context(|| hint(addr))?;
    tcp.listen(1024)?;
    let tcp = tokio::net::TcpListener::from_std(tcp.into())?;
    Ok(Bound { udp, tcp: vec![tcp], addr })
}

impl Bound {
    /// These sockets and `other`'s, served as one (`addr` stays this one's).
    pub fn also(mut self, other: Bound) -> Bound {
        self.udp.extend(other.udp);
        self.tcp.extend(other.tcp);
        self
    }
}

/// Everything the DNS service needs besides its sockets.
pub struct DnsService {
    pub cfg: DnsConfig,
    pub cmdb: Cmdb,
    pub metrics: Metrics,
    pub server_ip: Ipv4Addr,
    /// Networks whose reverse zones are served (config, or derived from the DHCP subnets).
    pub reverse: Vec<rackboot_config::Ipv4Net>,
    /// IPv6 prefixes whose `ip6.arpa` zones are served (the DHCPv6 subnets).
    pub reverse6: Vec<ipnet::Ipv6Net>,
    /// The appliance's IPv6 address in the first of them, for `rackboot.<domain>`'s AAAA.
    pub server_ip6: Option<std::net::Ipv6Addr>,
}

/// What the DNS service takes from the appliance: its config, its resolved addresses, the
/// store and the metrics (nothing else of the appliance's core).
#[derive(Clone)]
pub struct Handle {
    pub cfg: std::sync::Arc<rackboot_config::Config>,
    pub addrs: std::sync::Arc<rackboot_config::addresses::Addresses>,
    pub cmdb: rackboot_store::Cmdb,
    pub metrics: rackboot_base::metrics::Metrics,
}

/// The DNS service: answers on `bound` from the handle's store until `shutdown`.
pub async fn serve(bound: Bound, core: Handle, shutdown: CancellationToken) -> anyhow::Result<()> {
    let svc = DnsService {
        cfg: core.cfg.dns.clone(),
        cmdb: core.cmdb.clone(),
        metrics: core.metrics.clone(),
        server_ip: core.addrs.server_ip.context("dns needs the appliance's address")?,
        reverse: core.addrs.reverse_zones.clone(),
        reverse6: core.cfg.dhcp6.subnets.iter().map(|s| s.prefix).collect(),
        server_ip6: core.addrs.server_ip6,
    };
    run(bound, svc, shutdown).await
}

/// Serves DNS on `bound` until `token` is cancelled.
pub async fn run(bound: Bound, svc: DnsService, token: CancellationToken) -> anyhow::Result<()> {
    // Forwarding serves the networks rackboot answers for: `dns.forward_clients`, else the
    // reverse zones' networks (the DHCP subnets, or the server's /24) and the DHCPv6 prefixes.
    let clients = forward::Clients {
        v4: if svc.cfg.forward_clients.is_empty() { svc.reverse.clone() } else { svc.cfg.forward_clients.clone() },
        v6: svc.reverse6.clone(),
    };
    let settings = ZoneSettings {
        domain: svc.cfg.domain.clone(),
        server_ip: svc.server_ip,
        ttl: svc.cfg.ttl,
        reverse: svc.reverse,
        reverse6: svc.reverse6,
        server_ip6: svc.server_ip6,
    };
    let mut refresher = Refresher::new(settings, svc.cmdb.clone());
    let cell: ZoneCell = Arc::new(RwLock::new(refresher.current.clone()));
    let forwarder = (!svc.cfg.upstreams.is_empty())
        .then(|| forward::Forwarder::new(svc.cfg.upstreams.clone(), Duration::from_secs(2), clients));
    let handler = Arc::new(Handler::new(cell.clone(), forwarder, svc.cfg.allow_transfer, svc.metrics));
    // TCP (rare: truncated answers, transfers) through hickory's server; UDP through our loop.
    let mut server = hickory_server::Server::new(SharedHandler(handler.clone()));
    for tcp in bound.tcp {
        server.register_listener(tcp, TCP_IDLE, 64 * 1024);
    }
    // One token stops the UDP loops and the TCP server, whichever way this function ends.
    let stop = server.shutdown_token().clone();
    let _stop_on_exit = stop.clone().drop_guard();
    let mut udp_tasks = tokio::task::JoinSet::new();
    for s in bound.udp {
        // Each loop polls its token per query: a child of its own, not one mutex for all loops.
        udp_tasks.spawn(udp::serve(s, handler.clone(), stop.child_token()));
    }
    info!(addr = %bound.addr, domain = %svc.cfg.domain, serial = refresher.current.serial(), "dns serving");

    let refresh = async {
        let mut changes = svc.cmdb.changes();
        let mut spacing = SETTLE;
        let mut last_end = Instant::now();
        loop {
            // Lease expiry is checked at least every second once one is due within a minute, so
            // a clock step cannot keep an expired name alive for long.
            let wake = refresher
                .next_expiry
                .map(|t| Duration::from_secs(t.saturating_sub(now_secs()).clamp(1, 60)))
                .unwrap_or(Duration::from_secs(60));
            tokio::select! {
                r = changes.changed() => if r.is_err() { return },
                _ = tokio::time::sleep(wake) => {}
            }
            tokio::time::sleep_until(rebuild_at(Instant::now(), last_end, spacing)).await;
            changes.mark_unchanged();
            let (wall, cpu) = (Instant::now(), thread_cpu());
            let rebuilt = refresher.refresh();
            let cost = match (cpu, thread_cpu()) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => wall.elapsed(),
            };
            spacing = spacing_after(cost);
            last_end = Instant::now();
            if rebuilt {
                *cell.write().expect("zone lock") = refresher.current.clone();
                debug!(serial = refresher.current.serial(), "dns zones rebuilt");
            }
        }
    };
    tokio::select! {
        _ = token.cancelled() => {}
        _ = refresh => return Err(anyhow::anyhow!("the CMDB stopped; dns zones cannot follow it")),
        r = server.block_until_done() => return r.context("dns tcp server stopped").and(Err(anyhow::anyhow!("dns tcp server stopped"))),
        Some(r) = udp_tasks.join_next() => {
            let err = match r {
                Ok(Ok(())) => anyhow::anyhow!("dns udp loop stopped"),
                Ok(Err(e)) => e.context("dns udp loop failed"),
                Err(e) => anyhow::anyhow!("dns udp loop panicked: {e}"),
            };
            if !token.is_cancelled() {
                return Err(err);
            }
        }
    }
    stop.cancel();
    udp_tasks.join_all().await;
    server.block_until_done().await.context("dns server shutdown")
}

/// The one handler, shared by the UDP loops and hickory's TCP server.
struct SharedHandler(Arc<Handler>);

#[async_trait::async_trait]
impl hickory_server::server::RequestHandler for SharedHandler {
    async fn handle_request<R: hickory_server::server::ResponseHandler, T: hickory_server::net::runtime::Time>(
        &self,
        request: &hickory_server::server::Request,
        response: R,
    ) -> hickory_server::server::ResponseInfo {
        self.0.handle_request::<R, T>(request, response).await
    }
}
