//! Full mode's decisions (RFC 2131), apart from its I/O: [`decide`] takes a client message, the
//! lease map and what the CMDB and the planner said about the client ([`Plan`]) and returns the
//! reply with what the CMDB must learn ([`Decision`]). Nothing here reads the store, sends or
//! waits: `lib.rs` decodes and gathers the plan, `commit.rs` queues the writes, `send.rs` puts
//! the replies on the wire (an ACK once its lease has committed).
//!
//! | message | when | reply | write |
//! |---|---|---|---|
//! | DISCOVER | the store is behind, the client is over its port's or relay's limit, no free address | - (dropped, counted) | - |
//! | DISCOVER | otherwise | OFFER | the OFFER held for its REQUEST; written at once when the sighting may place a new machine in a rack |
//! | REQUEST | another server's id | - (our offer withdrawn) | the held OFFER |
//! | REQUEST | no server id, an address we have no record of in our subnet | - (another server's client) | - |
//! | REQUEST | the address is the client's to have | ACK, once committed | the lease with the held OFFER and the ACK |
//! | REQUEST | it is not | NAK | the NAK's event |
//! | RELEASE | the client held it | - | the released lease |
//! | DECLINE | the client held it | - | the address quarantined for a lease time |
//! | INFORM | always | ACK (no address) | the INFORM's event |

use std::net::Ipv4Addr;

use dhcproto::v4::{DhcpOption, Message, MessageType};
use serde_json::json;
use tracing::{debug, warn};

use super::held::Held;
use super::leases::Leases;
use super::limits::Source;
use super::options;
use super::packet::{self, Request};
use rackboot_boot::planner::DhcpBoot;
use rackboot_config::{DhcpConfig, Subnet};
use rackboot_store::{model::SCHEMA_VERSION, EventKind, Lease, LeaseState};

#[cfg(test)]
mod tests;

/// Timeline events of one packet.
pub type Events = Vec<(EventKind, serde_json::Value)>;

/// This server: its config and its address (the server identifier it answers with).
#[derive(Clone, Copy)]
pub struct Server<'a> {
    pub cfg: &'a DhcpConfig,
    pub ip: Ipv4Addr,
}

/// What the CMDB and the planner say about the client of one message, read before deciding.
pub struct Plan<'a> {
    /// The subnet it is on ([`subnet_of`]) and its index.
    pub subnet: &'a Subnet,
    pub subnet_idx: usize,
    /// Its machine's hostname, when it has one.
    pub hostname: Option<String>,
    /// Its machine's reservation, else the address its rack slot plans for it.
    pub reserved: Option<Ipv4Addr>,
    /// Whether an address is reserved for a machine other than this client's.
    pub reserved_for_other: &'a dyn Fn(Ipv4Addr) -> bool,
    /// The boot answer for a PXE or iPXE client (for DISCOVER, REQUEST and INFORM).
    pub boot: Option<DhcpBoot>,
    /// More CMDB writes wait than DISCOVERs are admitted under.
    pub store_behind: bool,
    /// This client's sighting may place a new machine in a rack, which its REQUEST must find
    /// done: its OFFER is written at once instead of held.
    pub may_place: bool,
}

/// A reply to send: its message type (which picks its destination) and the message.
#[derive(Debug)]
pub struct Reply {
    pub kind: MessageType,
    pub msg: Message,
}

/// What the CMDB must learn from one message.
#[derive(Debug)]
pub enum Write {
    Nothing,
    /// An ACK's lease, with the held OFFER's event (if any) and the ACK's; the ACK goes out
    /// only once this has committed. `held` goes back to the table if it cannot be queued.
    Ack {
        lease: Lease,
        events: Events,
        held: Option<Held>,
    },
    /// A lease change nothing waits for (RELEASE, DECLINE).
    Lease {
        lease: Lease,
        events: Events,
    },
    /// The sighting and its events, written without waiting.
    Record(Events),
}

/// The answer to one message.
#[derive(Debug)]
pub struct Decision {
    pub reply: Option<Reply>,
    /// An OFFER held for this client, to be written before anything else of it, so its timeline
    /// stays in the order things happened (or one a newer OFFER displaced).
    pub flush: Option<Held>,
    pub write: Write,
    /// Why the message was not answered, as the drop counter's label.
    pub dropped: Option<&'static str>,
}

impl Decision {
    fn silent() -> Decision {
        Decision { reply: None, flush: None, write: Write::Nothing, dropped: None }
    }

    fn dropped(label: &'static str) -> Decision {
        Decision { dropped: Some(label), ..Decision::silent() }
    }

    fn flushing(mut self, leases: &mut Leases, req: &Request) -> Decision {
        self.flush = leases.held.take(req.mac);
        self
    }
}

/// The subnet a request belongs to: by giaddr when relayed, else by the client's own address,
/// else the one holding the server's address.
pub fn subnet_of<'a>(subnets: &'a [Subnet], server_ip: Ipv4Addr, req: &Request) -> Option<(usize, &'a Subnet)> {
    let (g, c) = (req.msg.giaddr(), req.msg.ciaddr());
    let find = |ip: Ipv4Addr| subnets.iter().enumerate().find(|(_, s)| s.contains(ip));
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
    find(server_ip)
}

/// A RELEASE or DECLINE of `ip`: no reply; the lease written in its new state until its end
/// when the lease map changed (`now_as`), nothing otherwise.
fn given_back(
    req: &Request,
    leases: &mut Leases,
    ip: Ipv4Addr,
    now_as: Option<(LeaseState, u64)>,
    now: u64,
) -> Decision {
    let write = match now_as {
        Some((state, until)) => {
            let kind = if state == LeaseState::Declined { EventKind::DhcpDecline } else { EventKind::DhcpRelease };
            let lease = lease_record(ip, req, None, until, state, now);
            Write::Lease { lease, events: vec![(kind, json!({"ip": ip}))] }
        }
        None => Write::Nothing,
    };
    Decision { write, ..Decision::silent() }.flushing(leases, req)
}

/// Full mode's answer to `req` at `now` (Unix seconds); `leases` is changed to match.
pub fn decide(req: &Request, plan: &Plan<'_>, server: Server<'_>, leases: &mut Leases, now: u64) -> Decision {
    match req.kind {
        MessageType::Discover => discover(req, plan, server, leases, now),
        MessageType::Request => request(req, plan, server, leases, now),
        MessageType::Release => {
            let ip = req.msg.ciaddr();
            leases.limits.release(&Source::of(req), req.mac);
            let released = leases.release(req.mac, ip);
            given_back(req, leases, ip, released.then_some((LeaseState::Released, now)), now)
        }
        MessageType::Decline => {
            let Some(ip) = req.requested_ip else { return Decision::silent().flushing(leases, req) };
            let until = now + u64::from(plan.subnet.lease_secs);
            leases.limits.release(&Source::of(req), req.mac);
            let declined = leases.decline(req.mac, ip, until);
            if declined {
                warn!(mac = %req.mac, %ip, "client declined address; quarantined");
            }
            given_back(req, leases, ip, declined.then_some((LeaseState::Declined, until)), now)
        }
        MessageType::Inform => {
            let msg = options::inform_reply(server.ip, req, plan.subnet, plan.boot.as_ref());
            let event = (EventKind::DhcpInform, json!({"ciaddr": req.msg.ciaddr()}));
            Decision {
                reply: Some(Reply { kind: MessageType::Ack, msg }),
                write: Write::Record(vec![event]),
                ..Decision::silent()
            }
            .flushing(leases, req)
        }
        other => {
            debug!(mac = %req.mac, kind = ?other, "ignoring dhcp message type");
            Decision::dropped("unexpected_type")
        }
    }
}

fn discover(req: &Request, plan: &Plan<'_>, server: Server<'_>, leases: &mut Leases, now: u64) -> Decision {
    // Overloaded (the store takes writes slower than clients come): new clients wait, exchanges
    // under way finish. Offering more would only queue ACKs their clients give up on.
    if plan.store_behind {
        return Decision::dropped("store_backlog");
    }
    if let Err(label) = admitted(leases, req, plan.reserved, now) {
        return Decision::dropped(label);
    }
    let reserved_for_other = plan.reserved_for_other;
    let offered =
        leases.offer(plan.subnet_idx, plan.subnet, req.mac, req.requested_ip, plan.reserved, reserved_for_other, now);
    let Some(ip) = offered else {
        warn!(mac = %req.mac, subnet = %plan.subnet.net, "no free address to offer");
        return Decision::dropped("pool_exhausted");
    };
    if plan.reserved != Some(ip) {
        leases.limits.hold(&Source::of(req), req.mac, now + server.cfg.offer_hold.as_secs());
    }
    let boot = plan.boot.as_ref();
    let msg = options::lease_reply(server.ip, req, MessageType::Offer, ip, plan.subnet, plan.hostname.as_deref(), boot);
    let reply = Some(Reply { kind: MessageType::Offer, msg });
    let detail = json!({"ip": ip, "arch": req.arch.map(|a| a.name()), "boot_file": boot.map(|b| &b.filename)});
    if plan.may_place {
        let write = Write::Record(vec![(EventKind::DhcpOffer, detail)]);
        return Decision { reply, write, ..Decision::silent() }.flushing(leases, req);
    }
    // Held for the REQUEST, to be written with the ACK (see `held`).
    let flush = leases.held.hold(req.mac, packet::sighting(req), detail);
    Decision { reply, flush, ..Decision::silent() }
}

/// A DHCPREQUEST (RFC 2131 4.3.2): which state the client is in, whether the address is ours to
/// answer for, and the ACK with its lease, or a NAK.
fn request(req: &Request, plan: &Plan<'_>, server: Server<'_>, leases: &mut Leases, now: u64) -> Decision {
    let ciaddr = req.msg.ciaddr();
    // SELECTING carries our server id; INIT-REBOOT a requested address; RENEWING and REBINDING
    // only ciaddr.
    let ip = match (req.server_id, req.requested_ip) {
        (Some(sid), _) if sid != server.ip => {
            leases.withdraw_offer(req.mac);
            return Decision::silent().flushing(leases, req);
        }
        (Some(_), Some(ip)) => ip,
        (Some(_), None) => return Decision::silent(),
        // INIT-REBOOT and RENEWING/REBINDING: answer for addresses we know; stay silent about
        // clients we have no record of, since another server may own them.
        (None, requested) => {
            let Some(ip) = requested.or((!ciaddr.is_unspecified()).then_some(ciaddr)) else {
                return Decision::silent();
            };
            let ours = leases.knows(req.mac, ip) || plan.reserved == Some(ip) || leases.has_record(ip);
            if !ours && plan.subnet.contains(ip) {
                return Decision::silent();
            }
            ip
        }
    };
    if plan.reserved != Some(ip) {
        if let Err(label) = admitted(leases, req, plan.reserved, now) {
            return Decision::dropped(label);
        }
    }
    let subnet = plan.subnet;
    match leases.ack(subnet, req.mac, ip, plan.reserved, plan.reserved_for_other, now) {
        Ok(expires) => {
            if plan.reserved != Some(ip) {
                leases.limits.hold(&Source::of(req), req.mac, expires);
            }
            let (boot, hostname) = (plan.boot.as_ref(), plan.hostname.clone());
            let msg = options::lease_reply(server.ip, req, MessageType::Ack, ip, subnet, hostname.as_deref(), boot);
            let detail = json!({"ip": ip, "lease_secs": subnet.lease_secs, "hostname": hostname, "boot_file": boot.map(|b| &b.filename)});
            let lease = lease_record(ip, req, hostname, expires, LeaseState::Active, now);
            // The OFFER held for this REQUEST is written in the same job (see `held`).
            let held = leases.held.take(req.mac);
            let offer = held.as_ref().map(|h| (EventKind::DhcpOffer, h.detail.clone()));
            let events = offer.into_iter().chain([(EventKind::DhcpAck, detail)]).collect();
            Decision {
                reply: Some(Reply { kind: MessageType::Ack, msg }),
                write: Write::Ack { lease, events, held },
                ..Decision::silent()
            }
        }
        Err(refusal) => {
            debug!(mac = %req.mac, %ip, %refusal, "nak");
            let msg = nak(req, server.ip, &refusal.to_string());
            let event = (EventKind::DhcpNak, json!({"ip": ip, "reason": refusal.to_string()}));
            Decision {
                reply: Some(Reply { kind: MessageType::Nak, msg }),
                write: Write::Record(vec![event]),
                ..Decision::silent()
            }
            .flushing(leases, req)
        }
    }
}

/// A DHCPNAK saying why.
pub fn nak(req: &Request, server_ip: Ipv4Addr, why: &str) -> Message {
    let mut msg = packet::reply(req, MessageType::Nak, server_ip);
    msg.opts_mut().insert(DhcpOption::Message(why.into()));
    msg
}

/// Whether a client asking for a pool address (it has no reservation) is within its port's and
/// relay's client limits; a refusal is the drop counter's label.
fn admitted(leases: &mut Leases, req: &Request, reserved: Option<Ipv4Addr>, now: u64) -> Result<(), &'static str> {
    if reserved.is_some() {
        return Ok(());
    }
    leases.limits.admit(&Source::of(req), req.mac, now).map_err(|why| {
        debug!(mac = %req.mac, giaddr = %req.msg.giaddr(), %why, "no address for a new client");
        why.label()
    })
}

fn lease_record(
    ip: Ipv4Addr,
    req: &Request,
    hostname: Option<String>,
    expires_at: u64,
    state: LeaseState,
    now: u64,
) -> Lease {
    Lease {
        v: SCHEMA_VERSION,
        ip,
        mac: req.mac,
        hostname: hostname.or_else(|| req.hostname.clone()),
        client_hostname: req.hostname.clone(),
        expires_at,
        state,
        updated_at: now,
    }
}
