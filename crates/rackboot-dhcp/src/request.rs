//! A DHCPREQUEST in full mode (RFC 2131 4.3.2): which state the client is in, whether the
//! address is ours to answer for, and the ACK that goes out once its lease is durable, or a NAK.

use std::net::Ipv4Addr;
use std::sync::Arc;

use dhcproto::v4::MessageType;
use serde_json::json;
use tokio::net::UdpSocket;
use tracing::{debug, warn};

use super::leases::Leases;
use super::limits::Source;
use super::packet::{self, Request};
use super::{admitted, flush_held, lease_record, options, send, DhcpService};
use rackboot_config::Subnet;
use rackboot_store::{now_secs, EventKind, LeaseState};

#[allow(clippy::too_many_arguments)]
pub(super) fn request(
    svc: &DhcpService,
    leases: &mut Leases,
    socket: &Arc<UdpSocket>,
    req: Request,
    subnet: &Subnet,
    reserved: Option<Ipv4Addr>,
    for_other: &dyn Fn(Ipv4Addr) -> bool,
    hostname: Option<String>,
) {
    let ciaddr = req.msg.ciaddr();
    // RFC 2131 4.3.2: SELECTING carries our server id; INIT-REBOOT a requested address; RENEWING
    // and REBINDING only ciaddr.
    let ip = match (req.server_id, req.requested_ip) {
        (Some(sid), _) if sid != svc.server_ip => {
            leases.withdraw_offer(req.mac);
            flush_held(svc, leases, req.mac);
            return;
        }
        (Some(_), Some(ip)) => ip,
        (Some(_), None) => return,
        // INIT-REBOOT and RENEWING/REBINDING: answer for addresses we know; stay silent about
        // clients we have no record of, since another server may own them.
        (None, requested) => {
            let Some(ip) = requested.or((!ciaddr.is_unspecified()).then_some(ciaddr)) else { return };
            let ours = leases.knows(req.mac, ip) || reserved == Some(ip) || leases.has_record(ip);
            if !ours && subnet.contains(ip) {
                return;
            }
            ip
        }
    };
    let now = now_secs();
    if reserved != Some(ip) && !admitted(svc, leases, &req, reserved, now) {
        return;
    }
    match leases.ack(subnet, req.mac, ip, reserved, for_other, now) {
        Ok(expires) => {
            if reserved != Some(ip) {
                leases.limits.hold(&Source::of(&req), req.mac, expires);
            }
            let boot = svc.boot_for(&req, Some(subnet));
            let reply =
                options::lease_reply(svc, &req, MessageType::Ack, ip, subnet, hostname.as_deref(), boot.as_ref());
            let lease = lease_record(ip, &req, hostname.clone(), expires, LeaseState::Active);
            let detail = json!({"ip": ip, "lease_secs": subnet.lease_secs, "hostname": hostname, "boot_file": boot.map(|b| b.filename)});
            let (svc, socket, sighting) = (svc.clone(), socket.clone(), svc.sighting(&req));
            // The OFFER held for this REQUEST is written in the same job (see `held`).
            let held = leases.held.take(req.mac);
            let offer = held.as_ref().map(|h| (EventKind::DhcpOffer, h.detail.clone()));
            let events = offer.into_iter().chain([(EventKind::DhcpAck, detail)]).collect();
            // The ACK goes out only once its lease is durable (group-committed with others). The
            // write is queued here, in packet order; only the wait for it runs on its own.
            let committed = match svc.cmdb.queue_lease(lease, sighting, events) {
                Ok(c) => c,
                Err(error) => {
                    if let Some(h) = held {
                        leases.held.put_back(req.mac, h);
                    }
                    svc.metrics.dhcp_drop("store_busy");
                    warn!(mac = %req.mac, %ip, %error, "lease not queued; ack withheld");
                    return;
                }
            };
            tokio::spawn(async move {
                match committed.await {
                    Ok(()) => send(&svc, &socket, &req, reply, MessageType::Ack),
                    Err(rackboot_store::CmdbError::Conflict(why)) => {
                        // Another appliance sharing the store leased it first: the client starts
                        // over, and this server's lease map learns what the store holds.
                        svc.metrics.dhcp_drop("held_elsewhere");
                        warn!(mac = %req.mac, %ip, %why, "address held through another appliance; nak");
                        let mut nak = packet::reply(&req, MessageType::Nak, svc.server_ip);
                        nak.opts_mut().insert(dhcproto::v4::DhcpOption::Message("address in use".into()));
                        send(&svc, &socket, &req, nak, MessageType::Nak);
                        if let Some(r) = &svc.resync {
                            let _ = r.send(ip);
                        }
                    }
                    Err(error) => {
                        svc.metrics.dhcp_drop("commit_failed");
                        warn!(mac = %req.mac, %ip, %error, "lease not committed; ack withheld");
                    }
                }
            });
        }
        Err(refusal) => {
            let mut reply = packet::reply(&req, MessageType::Nak, svc.server_ip);
            reply.opts_mut().insert(dhcproto::v4::DhcpOption::Message(refusal.to_string()));
            send(svc, socket, &req, reply, MessageType::Nak);
            debug!(mac = %req.mac, %ip, %refusal, "nak");
            flush_held(svc, leases, req.mac);
            svc.cmdb.record(
                svc.sighting(&req),
                vec![(EventKind::DhcpNak, json!({"ip": ip, "reason": refusal.to_string()}))],
            );
        }
    }
}
