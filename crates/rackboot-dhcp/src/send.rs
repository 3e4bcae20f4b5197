//! The last stage: replies encoded and put on the wire. OFFERs, NAKs and INFORM answers go out at
//! once; an ACK waits in the [`Outbox`]'s queue for the commit that holds its lease. The queue is
//! served by one task in packet order: the writer commits in that order too, so once the first
//! ACK of a group commit is released the rest of the group follow without waiting again, and no
//! task is spawned per ACK. It is as long as the writer's queue at most (a lease write that
//! cannot be queued never reaches it).

use std::future::Future;
use std::net::Ipv4Addr;
use std::pin::Pin;
use std::sync::Arc;

use dhcproto::v4::{Message, MessageType};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tracing::warn;

use super::decide::{self, Reply};
use super::packet::{self, Request};
use super::DhcpService;
use rackboot_store::CmdbError;

/// What resolves once a lease write has committed.
pub type Committed = Pin<Box<dyn Future<Output = Result<(), CmdbError>> + Send>>;

/// An ACK waiting for its lease.
pub struct Pending {
    committed: Committed,
    req: Request,
    ack: Message,
    ip: Ipv4Addr,
}

/// Where full mode's replies go: the socket, and the queue of ACKs waiting for their commit.
pub struct Outbox {
    socket: Arc<UdpSocket>,
    acks: mpsc::UnboundedSender<Pending>,
}

impl Outbox {
    /// The outbox for `socket`, and the task that sends its ACKs (it ends once the outbox is
    /// dropped and every queued ACK has been answered).
    pub fn new(svc: &DhcpService, socket: Arc<UdpSocket>) -> (Outbox, tokio::task::JoinHandle<()>) {
        let (acks, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(send_acks(svc.clone(), socket.clone(), rx));
        (Outbox { socket, acks }, task)
    }

    /// Sends `reply` now.
    pub fn now(&self, svc: &DhcpService, req: &Request, reply: Reply) {
        send(svc, &self.socket, req, reply);
    }

    /// Sends `ack` once `committed` resolves (a NAK if another appliance holds `ip`).
    pub fn after_commit(&self, committed: Committed, req: Request, ack: Message, ip: Ipv4Addr) {
        // The task lives as long as the outbox; were it gone, the ACK is withheld, as when
        // its lease could not be committed.
        let _ = self.acks.send(Pending { committed, req, ack, ip });
    }
}

async fn send_acks(svc: DhcpService, socket: Arc<UdpSocket>, mut rx: mpsc::UnboundedReceiver<Pending>) {
    while let Some(p) = rx.recv().await {
        match p.committed.await {
            Ok(()) => send(&svc, &socket, &p.req, Reply { kind: MessageType::Ack, msg: p.ack }),
            Err(CmdbError::Conflict(why)) => {
                // Another appliance sharing the store leased it first: the client starts over,
                // and this server's lease map learns what the store holds.
                svc.metrics.dhcp_drop("held_elsewhere");
                warn!(mac = %p.req.mac, ip = %p.ip, %why, "address held through another appliance; nak");
                let msg = decide::nak(&p.req, svc.server_ip, "address in use");
                send(&svc, &socket, &p.req, Reply { kind: MessageType::Nak, msg });
                if let Some(r) = &svc.resync {
                    let _ = r.send(p.ip);
                }
            }
            Err(error) => {
                svc.metrics.dhcp_drop("commit_failed");
                warn!(mac = %p.req.mac, ip = %p.ip, %error, "lease not committed; ack withheld");
            }
        }
    }
}

/// Encodes `reply` and sends it where RFC 2131 4.1 says (a NAK through a relay is broadcast by
/// the relay: its broadcast flag is set). A send that fails is counted and logged.
pub fn send(svc: &DhcpService, socket: &UdpSocket, req: &Request, reply: Reply) {
    let Reply { kind, mut msg } = reply;
    if kind == MessageType::Nak && !req.msg.giaddr().is_unspecified() {
        packet::set_broadcast(&mut msg);
    }
    let to = packet::destination(req, kind, svc.cfg.reply_port, svc.cfg.relay_port);
    match socket.try_send_to(&packet::encode(&msg), to) {
        Ok(_) => svc.count_sent(kind),
        Err(error) => {
            svc.metrics.dhcp_drop("send_failed");
            warn!(%to, %error, mac = %req.mac, "dhcp reply not sent");
        }
    }
}
