//! Forwarding names outside our zones to the configured upstream resolvers: one query per
//! question, UDP first and TCP when the answer is truncated (or the client asked over TCP), each
//! upstream in turn until one answers. Only for clients on the appliance's own networks, and at
//! most [`PER_SOURCE_PER_SEC`] a second from one address (response rate limiting): an open
//! resolver would be an amplifier for anyone who can reach it.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rackboot_config::{in_network, Ipv4Net};

use anyhow::Context;
use hickory_server::proto::op::{Edns, Message, MessageType, Query};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Forwarded queries in flight at once: each holds a socket, so a dead upstream must not let
/// them pile up into a file-descriptor shortage for the whole appliance.
const MAX_IN_FLIGHT: usize = 256;

/// Forwarded queries one source address may send a second; more are refused.
pub const PER_SOURCE_PER_SEC: u32 = 100;
/// Source addresses tracked at once (spoofed sources cannot grow it past this).
const MAX_SOURCES: usize = 4096;

/// Who may have names outside our zones resolved: the networks rackboot serves, and loopback.
#[derive(Debug, Clone, Default)]
pub struct Clients {
    pub v4: Vec<Ipv4Net>,
    pub v6: Vec<ipnet::Ipv6Net>,
}

impl Clients {
    fn contain(&self, ip: IpAddr) -> bool {
        match ip {
            _ if ip.is_loopback() => true,
            IpAddr::V4(v4) => self.v4.iter().any(|n| in_network(v4, *n)),
            IpAddr::V6(v6) => self.v6.iter().any(|n| n.contains(&v6)),
        }
    }
}

/// The upstream resolvers and how long each gets.
#[derive(Debug)]
pub struct Forwarder {
    upstreams: Vec<SocketAddr>,
    timeout: Duration,
    in_flight: tokio::sync::Semaphore,
    clients: Clients,
    /// Each source's current one-second window: (start, queries).
    rate: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Forwarder {
    pub fn new(upstreams: Vec<SocketAddr>, timeout: Duration, clients: Clients) -> Forwarder {
        let in_flight = tokio::sync::Semaphore::new(MAX_IN_FLIGHT);
        Forwarder { upstreams, timeout, in_flight, clients, rate: Mutex::new(HashMap::new()) }
    }

    /// Whether a query from `src` may be forwarded: from a client network, within its rate.
    pub fn admits(&self, src: IpAddr, now: Instant) -> bool {
        if !self.clients.contain(src) {
            return false;
        }
        let mut rate = self.rate.lock().expect("rate lock");
        if !rate.contains_key(&src) && rate.len() >= MAX_SOURCES {
            rate.retain(|_, (start, _)| now.duration_since(*start) < Duration::from_secs(1));
            if rate.len() >= MAX_SOURCES {
                let oldest = rate.iter().min_by_key(|(_, (start, _))| *start).map(|(ip, _)| *ip);
                oldest.map(|ip| rate.remove(&ip));
            }
        }
        let (start, count) = rate.entry(src).or_insert((now, 0));
        if now.duration_since(*start) >= Duration::from_secs(1) {
            (*start, *count) = (now, 0);
        }
        *count += 1;
        *count <= PER_SOURCE_PER_SEC
    }

    /// Asks each upstream in order; returns the first answer (whatever its RCODE).
    pub async fn resolve(&self, query: &Query, over_tcp: bool) -> anyhow::Result<Message> {
        let _slot = self
            .in_flight
            .try_acquire()
            .map_err(|_| anyhow::anyhow!("{MAX_IN_FLIGHT} forwarded queries already waiting"))?;
        let mut last = anyhow::anyhow!("no upstream resolvers");
        for &up in &self.upstreams {
            match tokio::time::timeout(self.timeout, ask(up, query, over_tcp)).await {
                Ok(Ok(m)) => return Ok(m),
                Ok(Err(e)) => last = e.context(format!("upstream {up}")),
                Err(_) => last = anyhow::anyhow!("upstream {up} did not answer in {:?}", self.timeout),
            }
        }
        Err(last)
    }
}

async fn ask(up: SocketAddr, query: &Query, over_tcp: bool) -> anyhow::Result<Message> {
    let mut m = Message::query();
    m.metadata.recursion_desired = true;
    m.add_query(query.clone());
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    m.set_edns(edns);
    let id = m.metadata.id;
    let bytes = m.to_vec()?;
    if !over_tcp {
        let local: SocketAddr = if up.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
        let sock = tokio::net::UdpSocket::bind(local).await?;
        // connect() makes the kernel drop datagrams from anyone but the upstream.
        sock.connect(up).await?;
        sock.send(&bytes).await?;
        let mut buf = vec![0u8; 4096];
        loop {
            let n = sock.recv(&mut buf).await?;
            let Ok(reply) = Message::from_vec(&buf[..n]) else { continue };
            if !answers(&reply, id, query) {
                continue;
            }
            if !reply.metadata.truncation {
                return Ok(reply);
            }
            break;
        }
    }
    let mut tcp = tokio::net::TcpStream::connect(up).await?;
    let len = u16::try_from(bytes.len()).context("query too long")?;
    let mut framed = len.to_be_bytes().to_vec();
    framed.extend_from_slice(&bytes);
    tcp.write_all(&framed).await?;
    let len = tcp.read_u16().await?;
    let mut buf = vec![0u8; usize::from(len)];
    tcp.read_exact(&mut buf).await?;
    let reply = Message::from_vec(&buf)?;
    anyhow::ensure!(answers(&reply, id, query), "the reply does not match the query");
    Ok(reply)
}

/// Whether `reply` is the response to our query `id` for `query` (not a stray or spoofed one).
fn answers(reply: &Message, id: u16, query: &Query) -> bool {
    reply.metadata.id == id
        && reply.metadata.message_type == MessageType::Response
        && reply.queries.len() == 1
        && reply.queries[0].name() == query.name()
        && reply.queries[0].query_type() == query.query_type()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_client_networks_within_their_rate_are_forwarded() {
        let clients = Clients { v4: vec!["198.18.0.0/24".parse().unwrap()], v6: vec!["fd00::/64".parse().unwrap()] };
        let f = Forwarder::new(vec![], Duration::from_secs(1), clients);
        let t = Instant::now();
        assert!(!f.admits("203.0.113.9".parse().unwrap(), t), "outside the networks");
        assert!(!f.admits("fd01::1".parse().unwrap(), t));
        assert!(f.admits("127.0.0.1".parse().unwrap(), t) && f.admits("::1".parse().unwrap(), t));
        assert!(f.admits("fd00::5".parse().unwrap(), t));
        let node: IpAddr = "198.18.0.20".parse().unwrap();
        let passed = (0..PER_SOURCE_PER_SEC + 50).filter(|_| f.admits(node, t)).count();
        assert_eq!(passed as u32, PER_SOURCE_PER_SEC, "the rest of the second is refused");
        assert!(f.admits("198.18.0.21".parse().unwrap(), t), "another source has its own budget");
        assert!(f.admits(node, t + Duration::from_secs(1)), "the next second starts again");
        for i in 0..(MAX_SOURCES as u32 + 100) {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0xc612_0000 + (i % 256)));
            f.admits(ip, t);
        }
        assert!(f.rate.lock().unwrap().len() <= MAX_SOURCES);
    }
}
