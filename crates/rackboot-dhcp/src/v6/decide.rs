//! What the DHCPv6 server answers (RFC 8415 18.3), decided without I/O: a client's message and
//! the lease map in; the reply, the lease changes to commit before it goes out, and the events,
//! out. The map is changed as decided (the caller reloads it if the commit fails).

use std::net::Ipv6Addr;

use serde_json::{json, Value};

use super::leases::{Client, Leases6};
use super::wire::{self, kind, opt, Inbound, Reply, Status};
use rackboot_config::{Dhcp6Config, Subnet6};
use rackboot_model::events::EventKind;
use rackboot_model::lease6::Lease6;
use rackboot_model::records::LeaseState;

/// Everything besides the message and the map.
pub struct Ctx<'a> {
    pub cfg: &'a Dhcp6Config,
    /// The subnet of the client's link (`None`: a link this server has no addresses for).
    pub subnet: Option<&'a Subnet6>,
    pub server_id: &'a [u8],
    pub now: u64,
    /// The boot file URL for this client, when it is a network boot client.
    pub boot_url: Option<&'a str>,
    /// The boot URL is for UEFI HTTP boot: the reply says "HTTPClient" (RFC 7440 is silent; the
    /// UEFI spec 24.7 asks for the vendor class back).
    pub http_boot: bool,
    /// Who the client is, once known: its MAC for the lease record.
    pub mac: Option<rackboot_model::mac::Mac>,
}

/// What to do about one message.
#[derive(Debug, Default)]
pub struct Decision {
    pub reply: Option<Reply>,
    /// Leases to commit before the reply is sent.
    pub changes: Vec<Lease6>,
    pub events: Vec<(EventKind, Value)>,
    /// Why nothing is sent (the metrics label), when nothing is.
    pub dropped: Option<&'static str>,
}

impl Decision {
    fn drop(why: &'static str) -> Decision {
        Decision { dropped: Some(why), ..Default::default() }
    }
}

/// Decides the answer to `m`.
pub fn decide(m: &Inbound, leases: &mut Leases6, ctx: &Ctx<'_>) -> Decision {
    let ours = m.server_id.as_deref() == Some(ctx.server_id);
    let needs_ours = matches!(m.kind, kind::REQUEST | kind::RENEW | kind::RELEASE | kind::DECLINE);
    if needs_ours && !ours {
        return Decision::drop("v6_not_for_us");
    }
    let must_not_name = matches!(m.kind, kind::SOLICIT | kind::CONFIRM | kind::REBIND);
    if (must_not_name && m.server_id.is_some())
        || (m.kind == kind::INFORMATION_REQUEST && m.server_id.is_some() && !ours)
    {
        return Decision::drop("v6_not_for_us");
    }
    let client: String = hex(&m.client_id);
    match m.kind {
        kind::INFORMATION_REQUEST => Decision { reply: Some(base(m, ctx, kind::REPLY)), ..Default::default() },
        kind::CONFIRM => confirm(m, ctx),
        kind::RELEASE | kind::DECLINE => give_back(m, leases, ctx, &client),
        _ => {
            let Some(subnet) = ctx.subnet else { return Decision::drop("v6_no_subnet") };
            bind(m, leases, ctx, subnet, &client)
        }
    }
}

/// SOLICIT (ADVERTISE, or REPLY with rapid commit), REQUEST, RENEW and REBIND.
fn bind(m: &Inbound, leases: &mut Leases6, ctx: &Ctx<'_>, subnet: &Subnet6, duid: &str) -> Decision {
    let commit = m.kind != kind::SOLICIT || (m.rapid_commit && ctx.cfg.rapid_commit);
    let reply_kind = if m.kind == kind::SOLICIT && !commit { kind::ADVERTISE } else { kind::REPLY };
    let mut reply = base(m, ctx, reply_kind);
    let mut out = Decision::default();
    let (pref, valid) = (subnet.preferred_secs, subnet.valid_secs);
    let (t1, t2) = (pref / 2, pref / 5 * 4);
    let mut bound_any = false;
    for ia in &m.ias {
        let client: Client = (duid.to_string(), ia.iaid);
        // RENEW and REBIND keep what the client has, or give it back what it asks for if that
        // is still free; an address not on this link gets lifetimes 0 (RFC 8415 18.3.4-5).
        let renewing = matches!(m.kind, kind::RENEW | kind::REBIND);
        let pick = if renewing {
            let keep = leases.bound(&client, ctx.now).map(|l| l.ip).filter(|ip| subnet.in_pool(*ip));
            keep.or_else(|| {
                ia.addrs.iter().copied().find(|ip| subnet.in_pool(*ip) && leases.free_for(*ip, &client, ctx.now))
            })
        } else {
            leases.pick(subnet, &client, &ia.addrs, ctx.now)
        };
        let Some(ip) = pick else {
            let (code, text) = if renewing {
                (Status::NoBinding, "no binding for this IA on this link")
            } else {
                (Status::NoAddrsAvail, "no addresses available")
            };
            let mut inner = vec![(opt::STATUS_CODE, wire::status(code, text))];
            // Addresses it asked to renew that are not ours to give: lifetimes 0.
            inner.extend(
                ia.addrs.iter().filter(|a| !subnet.in_pool(**a)).map(|a| (opt::IAADDR, wire::ia_addr(*a, 0, 0))),
            );
            reply.push(opt::IA_NA, wire::ia_na(ia.iaid, 0, 0, &inner));
            continue;
        };
        bound_any = true;
        let mut inner = vec![(opt::IAADDR, wire::ia_addr(ip, pref, valid))];
        inner.extend(ia.addrs.iter().filter(|a| **a != ip).map(|a| (opt::IAADDR, wire::ia_addr(*a, 0, 0))));
        reply.push(opt::IA_NA, wire::ia_na(ia.iaid, t1, t2, &inner));
        if commit {
            let lease = Lease6 {
                v: 1,
                ip,
                duid: duid.to_string(),
                iaid: ia.iaid,
                mac: ctx.mac,
                expires_at: ctx.now + u64::from(valid),
                state: LeaseState::Active,
                updated_at: ctx.now,
            };
            leases.put(lease.clone());
            out.events.push((EventKind::Dhcp6Reply, reply_event(m, ctx, ip, ia.iaid, valid)));
            out.changes.push(lease);
        } else {
            leases.offer(ip, client, ctx.now);
        }
    }
    if m.ias.is_empty() || (!bound_any && reply_kind == kind::ADVERTISE) {
        // Nothing to assign (RFC 8415 18.3.1: an ADVERTISE still goes out, saying so).
        reply.push(opt::STATUS_CODE, wire::status(Status::NoAddrsAvail, "no addresses available"));
    }
    if reply_kind == kind::REPLY && m.kind == kind::SOLICIT {
        reply.push(opt::RAPID_COMMIT, Vec::new());
    }
    out.reply = Some(reply);
    out
}

/// RELEASE and DECLINE: the client's addresses are marked, and it is told Success (RFC 8415
/// 18.3.7-8); an address it does not hold gets NoBinding in its IA.
fn give_back(m: &Inbound, leases: &mut Leases6, ctx: &Ctx<'_>, duid: &str) -> Decision {
    let declined = m.kind == kind::DECLINE;
    let mut reply = base(m, ctx, kind::REPLY);
    let mut out = Decision::default();
    for ia in &m.ias {
        let mut missing = Vec::new();
        for ip in &ia.addrs {
            let held = leases.get(*ip).filter(|l| l.duid == duid && l.iaid == ia.iaid && l.state == LeaseState::Active);
            let Some(held) = held.cloned() else {
                missing.push(*ip);
                continue;
            };
            // A declined address stays out of the pools until its lease would have ended.
            let state = if declined { LeaseState::Declined } else { LeaseState::Released };
            let expires_at = if declined { held.expires_at.max(ctx.now + 1) } else { held.expires_at };
            let lease = Lease6 { state, expires_at, updated_at: ctx.now, ..held };
            leases.put(lease.clone());
            let kind = if declined { EventKind::Dhcp6Decline } else { EventKind::Dhcp6Release };
            out.events.push((kind, json!({ "ip": ip.to_string() })));
            out.changes.push(lease);
        }
        if !missing.is_empty() {
            let inner = [(opt::STATUS_CODE, wire::status(Status::NoBinding, "not bound to this IA"))];
            reply.push(opt::IA_NA, wire::ia_na(ia.iaid, 0, 0, &inner));
        }
    }
    reply.push(opt::STATUS_CODE, wire::status(Status::Success, ""));
    out.reply = Some(reply);
    out
}

/// CONFIRM: whether the client's addresses are on its link (RFC 8415 18.3.3); no answer for a
/// message without addresses, or a link this server does not know.
fn confirm(m: &Inbound, ctx: &Ctx<'_>) -> Decision {
    let addrs: Vec<Ipv6Addr> = m.ias.iter().flat_map(|ia| ia.addrs.iter().copied()).collect();
    let Some(subnet) = ctx.subnet.filter(|_| !addrs.is_empty()) else { return Decision::drop("v6_confirm_unknown") };
    let on_link = addrs.iter().all(|a| subnet.prefix.contains(a));
    let mut reply = base(m, ctx, kind::REPLY);
    let (code, text) = if on_link { (Status::Success, "") } else { (Status::NotOnLink, "not on this link") };
    reply.push(opt::STATUS_CODE, wire::status(code, text));
    Decision { reply: Some(reply), ..Default::default() }
}

/// A reply with the options every answer carries: server and client id, DNS, the boot URL.
fn base(m: &Inbound, ctx: &Ctx<'_>, reply_kind: u8) -> Reply {
    let mut r = Reply::new(reply_kind, m.xid);
    r.push(opt::SERVERID, ctx.server_id.to_vec());
    if !m.client_id.is_empty() {
        r.push(opt::CLIENTID, m.client_id.clone());
    }
    if reply_kind == kind::ADVERTISE {
        r.push(opt::PREFERENCE, vec![ctx.cfg.preference]);
    }
    if let Some(s) = ctx.subnet {
        if !s.dns_servers.is_empty() {
            r.push(opt::DNS_SERVERS, s.dns_servers.iter().flat_map(|a| a.octets()).collect());
        }
        if !s.domain.is_empty() {
            r.push(opt::DOMAIN_LIST, wire::domain_list(&s.domain));
        }
    }
    if let Some(url) = ctx.boot_url {
        r.push(opt::BOOTFILE_URL, url.as_bytes().to_vec());
        if ctx.http_boot {
            let mut vc = 343u32.to_be_bytes().to_vec();
            vc.extend_from_slice(&10u16.to_be_bytes());
            vc.extend_from_slice(b"HTTPClient");
            r.push(opt::VENDOR_CLASS, vc);
        }
    }
    r
}

fn reply_event(m: &Inbound, ctx: &Ctx<'_>, ip: Ipv6Addr, iaid: u32, valid: u32) -> Value {
    let relay = m.first_relay().map(|r| r.link.to_string());
    json!({ "ip": ip.to_string(), "iaid": iaid, "valid_secs": valid, "boot_url": ctx.boot_url, "relay": relay })
}

/// Lowercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
