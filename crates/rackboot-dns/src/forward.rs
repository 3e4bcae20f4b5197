//! Forwarding names outside our zones to the configured upstream resolvers: one query per
//! question, UDP first and TCP when the answer is truncated (or the client asked over TCP), each
//! upstream in turn until one answers.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use hickory_server::proto::op::{Edns, Message, MessageType, Query};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Forwarded queries in flight at once: each holds a socket, so a dead upstream must not let
/// them pile up into a file-descriptor shortage for the whole appliance.
const MAX_IN_FLIGHT: usize = 256;

/// The upstream resolvers and how long each gets.
#[derive(Debug)]
pub struct Forwarder {
    upstreams: Vec<SocketAddr>,
    timeout: Duration,
    in_flight: tokio::sync::Semaphore,
}

impl Forwarder {
    pub fn new(upstreams: Vec<SocketAddr>, timeout: Duration) -> Forwarder {
        Forwarder { upstreams, timeout, in_flight: tokio::sync::Semaphore::new(MAX_IN_FLIGHT) }
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
