//! Full mode's answer to each client message (RFC 2131): DISCOVER offers (unless the store is
//! behind or the client is over its limits), REQUEST goes to `request`, RELEASE, DECLINE and
//! INFORM; and the lease records and events they write.

use std::net::Ipv4Addr;
use std::sync::Arc;

use dhcproto::v4::MessageType;
use serde_json::json;
use tokio::net::UdpSocket;
use tracing::{debug, warn};

use super::leases::Leases;
use super::limits::Source;
use super::packet::Request;
use super::{flush_held, options, request, select_subnet, send, write_held, DhcpService};
use rackboot_store::{model::SCHEMA_VERSION, now_secs, EventKind, Lease, LeaseState};

/// Writes queued for the CMDB past which DISCOVERs are dropped: on the embedded store a
/// fraction of a second of work; on PostgreSQL, which takes fewer writes a second, a smaller
/// queue keeps the wait of the exchanges admitted short (about 0.3 s at 1,800 writes/s).
const DISCOVER_BACKLOG: usize = 4096;
const DISCOVER_BACKLOG_SHARED: usize = 512;

pub(super) fn handle_full(svc: &DhcpService, leases: &mut Leases, socket: &Arc<UdpSocket>, req: Request) {
    let Some((idx, subnet)) = select_subnet(svc, &req) else {
        svc.metrics.dhcp_drop("no_subnet");
        debug!(mac = %req.mac, giaddr = %req.msg.giaddr(), "no subnet for request");
        return;
    };
    let now = now_secs();
    let brief = svc.cmdb.brief_by_mac(req.mac);
    let me = brief.as_ref().map(|b| b.id);
    // A machine not yet placed that asks through a rack's port is offered its slot's address.
    let reserved = brief
        .as_ref()
        .and_then(|b| b.reserved_ip)
        .or_else(|| svc.cmdb.planned_address(req.circuit_id.as_deref(), req.remote_id.as_deref()));
    let cmdb = svc.cmdb.clone();
    let for_other = move |ip: Ipv4Addr| cmdb.reserved_owner(ip).is_some_and(|o| Some(o) != me);
    let hostname = brief.as_ref().and_then(|b| b.hostname.clone());
    match req.kind {
        MessageType::Discover => {
            // Overloaded (the store takes writes slower than clients come): new clients wait,
            // exchanges under way finish. Offering more would only queue ACKs their clients
            // give up on before they are sent.
            let most = if svc.cmdb.shared() { DISCOVER_BACKLOG_SHARED } else { DISCOVER_BACKLOG };
            if svc.cmdb.write_backlog() > most {
                svc.metrics.dhcp_drop("store_backlog");
                return;
            }
            if !admitted(svc, leases, &req, reserved, now) {
                return;
            }
            let reclaimed = leases.reclaimed;
            let Some(ip) = leases.offer(idx, subnet, req.mac, req.requested_ip, reserved, &for_other, now) else {
                svc.metrics.dhcp_drop("pool_exhausted");
                warn!(mac = %req.mac, subnet = %subnet.net, "no free address to offer");
                return;
            };
            if leases.reclaimed != reclaimed {
                svc.metrics.dhcp_offers_reclaimed.inc();
            }
            if reserved != Some(ip) {
                leases.limits.hold(&Source::of(&req), req.mac, now + svc.cfg.offer_hold.as_secs());
            }
            let boot = svc.boot_for(&req, Some(subnet));
            let reply =
                options::lease_reply(svc, &req, MessageType::Offer, ip, subnet, hostname.as_deref(), boot.as_ref());
            send(svc, socket, &req, reply, MessageType::Offer);
            let detail = json!({"ip": ip, "arch": req.arch.map(|a| a.name()), "boot_file": boot.map(|b| b.filename)});
            // Held for the REQUEST, to be written with the ACK, unless this sighting may place a
            // new machine in a rack, which its REQUEST must find done (see `held`).
            let placed_already = brief.as_ref().is_some_and(|b| b.rack.is_some());
            if placed_already || !svc.cmdb.has_racks() {
                if let Some(now_due) = leases.held.hold(req.mac, svc.sighting(&req), detail) {
                    write_held(svc, now_due);
                }
            } else {
                flush_held(svc, leases, req.mac);
                svc.cmdb.record(svc.sighting(&req), vec![(EventKind::DhcpOffer, detail)]);
            }
        }
        MessageType::Request => request::request(svc, leases, socket, req, subnet, reserved, &for_other, hostname),
        MessageType::Release => {
            flush_held(svc, leases, req.mac);
            let ip = req.msg.ciaddr();
            leases.limits.release(&Source::of(&req), req.mac);
            if leases.release(req.mac, ip) {
                let lease = lease_record(ip, &req, None, now, LeaseState::Released);
                persist_detached(svc, lease, &req, EventKind::DhcpRelease, json!({"ip": ip}));
            }
        }
        MessageType::Decline => {
            flush_held(svc, leases, req.mac);
            let Some(ip) = req.requested_ip else { return };
            let until = now + u64::from(subnet.lease_secs);
            leases.limits.release(&Source::of(&req), req.mac);
            if leases.decline(req.mac, ip, until) {
                warn!(mac = %req.mac, %ip, "client declined address; quarantined");
                let lease = lease_record(ip, &req, None, until, LeaseState::Declined);
                persist_detached(svc, lease, &req, EventKind::DhcpDecline, json!({"ip": ip}));
            }
        }
        MessageType::Inform => {
            flush_held(svc, leases, req.mac);
            let boot = svc.boot_for(&req, Some(subnet));
            let reply = options::inform_reply(svc, &req, subnet, boot.as_ref());
            send(svc, socket, &req, reply, MessageType::Ack);
            svc.cmdb.record(svc.sighting(&req), vec![(EventKind::DhcpInform, json!({"ciaddr": req.msg.ciaddr()}))]);
        }
        other => {
            svc.metrics.dhcp_drop("unexpected_type");
            debug!(mac = %req.mac, kind = ?other, "ignoring dhcp message type");
        }
    }
}

/// Whether a client asking for a pool address (it has no reservation) is within its port's
/// and relay's client limits; a refusal is dropped and counted, like a malformed packet.
pub(super) fn admitted(
    svc: &DhcpService,
    leases: &mut Leases,
    req: &Request,
    reserved: Option<Ipv4Addr>,
    now: u64,
) -> bool {
    if reserved.is_some() {
        return true;
    }
    match leases.limits.admit(&Source::of(req), req.mac, now) {
        Ok(()) => true,
        Err(why) => {
            svc.metrics.dhcp_drop(why.label());
            debug!(mac = %req.mac, giaddr = %req.msg.giaddr(), %why, "no address for a new client");
            false
        }
    }
}

pub(super) fn lease_record(
    ip: Ipv4Addr,
    req: &Request,
    hostname: Option<String>,
    expires_at: u64,
    state: LeaseState,
) -> Lease {
    Lease {
        v: SCHEMA_VERSION,
        ip,
        mac: req.mac,
        hostname: hostname.or_else(|| req.hostname.clone()),
        client_hostname: req.hostname.clone(),
        expires_at,
        state,
        updated_at: now_secs(),
    }
}

fn persist_detached(svc: &DhcpService, lease: Lease, req: &Request, kind: EventKind, detail: serde_json::Value) {
    // Queued now, in packet order, so a RELEASE cannot land before the ACK it follows.
    match svc.cmdb.queue_lease(lease, svc.sighting(req), vec![(kind, detail)]) {
        Ok(committed) => {
            tokio::spawn(async move {
                if let Err(error) = committed.await {
                    warn!(%error, "lease change not persisted");
                }
            });
        }
        Err(error) => {
            svc.metrics.dhcp_drop("store_busy");
            warn!(%error, "lease change not queued");
        }
    }
}
