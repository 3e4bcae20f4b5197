//! The third stage: a [`Decision`]'s writes queued for the CMDB in packet order (the writer
//! group-commits them), and its reply handed to the [`Outbox`]: at once, or for an ACK once its
//! lease has committed.

use tracing::{debug, warn};

use super::decide::{Decision, Events, Write};
use super::held::Held;
use super::leases::Leases;
use super::packet::{self, Request};
use super::send::Outbox;
use super::DhcpService;
use rackboot_store::Lease;

/// Carries out `d`, the decision on `req`.
pub fn apply(svc: &DhcpService, leases: &mut Leases, out: &Outbox, req: Request, d: Decision) {
    let Decision { reply, flush, write, dropped } = d;
    if let Some(label) = dropped {
        svc.metrics.dhcp_drop(label);
        debug!(mac = %req.mac, kind = ?req.kind, label, "dhcp request not answered");
    }
    if let Some(h) = flush {
        write_held(svc, h);
    }
    match write {
        Write::Ack { lease, events, held } => {
            let (ip, ack) = (lease.ip, reply.expect("an ACK decision carries its ACK").msg);
            match svc.cmdb.queue_lease(lease, packet::sighting(&req), events) {
                Ok(committed) => out.after_commit(Box::pin(committed), req, ack, ip),
                Err(error) => {
                    if let Some(h) = held {
                        leases.held.put_back(req.mac, h);
                    }
                    svc.metrics.dhcp_drop("store_busy");
                    warn!(mac = %req.mac, %ip, %error, "lease not queued; ack withheld");
                }
            }
            return;
        }
        Write::Lease { lease, events } => persist_detached(svc, lease, &req, events),
        Write::Record(events) => svc.cmdb.record(packet::sighting(&req), events),
        Write::Nothing => {}
    }
    if let Some(reply) = reply {
        out.now(svc, &req, reply);
    }
}

/// Writes an OFFER that was held for its REQUEST on its own.
pub fn write_held(svc: &DhcpService, h: Held) {
    let (sighting, offer) = h.into_record();
    svc.cmdb.record(sighting, vec![offer]);
}

fn persist_detached(svc: &DhcpService, lease: Lease, req: &Request, events: Events) {
    // Queued now, in packet order, so a RELEASE cannot land before the ACK it follows.
    match svc.cmdb.queue_lease(lease, packet::sighting(req), events) {
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
