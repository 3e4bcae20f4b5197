//! DHCPv6 on the wire (RFC 8415): a client message or a relay-forward (nested, RFC 8415 9) read
//! into an [`Inbound`], and a reply written back, wrapped in a relay-reply for each relay it
//! came through.
//!
//! Hand-written rather than dhcproto's v6 module (0.15): that one cannot build a relay-reply
//! (its relay message has private fields and no constructor), reads a relay-msg option only as
//! another relay message, and has none of options 37, 59 and 79. This reader bounds every
//! length before using it and keeps only what the server decides on.

use std::net::Ipv6Addr;

use rackboot_model::lease6::{mac_from_duid, mac_of, MAX_DUID};
use rackboot_model::mac::Mac;

/// Message types (RFC 8415 7.3).
pub mod kind {
    pub const SOLICIT: u8 = 1;
    pub const ADVERTISE: u8 = 2;
    pub const REQUEST: u8 = 3;
    pub const CONFIRM: u8 = 4;
    pub const RENEW: u8 = 5;
    pub const REBIND: u8 = 6;
    pub const REPLY: u8 = 7;
    pub const RELEASE: u8 = 8;
    pub const DECLINE: u8 = 9;
    pub const INFORMATION_REQUEST: u8 = 11;
    pub const RELAY_FORW: u8 = 12;
    pub const RELAY_REPL: u8 = 13;
}

/// Option codes (RFC 8415 21, RFC 3646, RFC 4649, RFC 5970, RFC 6939).
pub mod opt {
    pub const CLIENTID: u16 = 1;
    pub const SERVERID: u16 = 2;
    pub const IA_NA: u16 = 3;
    pub const IAADDR: u16 = 5;
    pub const ORO: u16 = 6;
    pub const PREFERENCE: u16 = 7;
    pub const RELAY_MSG: u16 = 9;
    pub const STATUS_CODE: u16 = 13;
    pub const RAPID_COMMIT: u16 = 14;
    pub const USER_CLASS: u16 = 15;
    pub const VENDOR_CLASS: u16 = 16;
    pub const INTERFACE_ID: u16 = 18;
    pub const DNS_SERVERS: u16 = 23;
    pub const DOMAIN_LIST: u16 = 24;
    pub const REMOTE_ID: u16 = 37;
    pub const BOOTFILE_URL: u16 = 59;
    pub const CLIENT_ARCH_TYPE: u16 = 61;
    pub const CLIENT_LINKLAYER_ADDR: u16 = 79;
}

/// Status codes (RFC 8415 21.13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Success = 0,
    NoAddrsAvail = 2,
    NoBinding = 3,
    NotOnLink = 4,
}

/// Relays a message may come through at most (RFC 8415 7.6: HOP_COUNT_LIMIT).
pub const HOP_COUNT_LIMIT: usize = 8;
/// Identity associations one message may carry that are looked at.
pub const MAX_IAS: usize = 8;
/// Addresses one identity association may ask for.
pub const MAX_ADDRS_PER_IA: usize = 8;

/// Why a packet was dropped; the string is the metrics label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("v6_truncated")]
    Truncated,
    #[error("v6_not_a_request")]
    NotRequest,
    #[error("v6_too_many_relays")]
    TooManyRelays,
    #[error("v6_no_client_id")]
    NoClientId,
    #[error("v6_bad_option")]
    BadOption,
}

/// One relay a message came through, outermost first in [`Inbound::relays`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relay {
    pub hop_count: u8,
    pub link: Ipv6Addr,
    pub peer: Ipv6Addr,
    /// Echoed back in the relay-reply (RFC 8415 21.18).
    pub interface_id: Option<Vec<u8>>,
    /// RFC 4649: enterprise number, then the relay's id of the client's port.
    pub remote_id: Option<Vec<u8>>,
    /// RFC 6939: the client's link-layer address as the first relay saw it.
    pub lladdr: Option<Mac>,
}

/// One IA_NA as asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ia {
    pub iaid: u32,
    pub addrs: Vec<Ipv6Addr>,
}

/// A client's message, with the relays it came through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inbound {
    pub relays: Vec<Relay>,
    pub kind: u8,
    pub xid: [u8; 3],
    pub client_id: Vec<u8>,
    pub server_id: Option<Vec<u8>>,
    pub ias: Vec<Ia>,
    pub rapid_commit: bool,
    pub oro: Vec<u16>,
    /// Option 61's first architecture type.
    pub arch: Option<u16>,
    /// User class "iPXE": the client is iPXE already.
    pub is_ipxe: bool,
    /// The address the message came from (the innermost relay's peer for a relayed one).
    pub peer: Ipv6Addr,
}

impl Inbound {
    /// The client's MAC, as far as it can be told: the first relay's link-layer option, the
    /// DUID, else the EUI-64 of the client's link-local address.
    pub fn mac(&self) -> Option<Mac> {
        self.relays
            .last()
            .and_then(|r| r.lladdr)
            .or_else(|| mac_from_duid(&self.client_id))
            .or_else(|| rackboot_model::lease6::mac_from_link_local(self.peer))
    }

    /// The innermost relay (the one on the client's link), if any.
    pub fn first_relay(&self) -> Option<&Relay> {
        self.relays.last()
    }
}

/// Walks `buf` as options: (code, data) pairs, or `None` if a length runs past the end.
pub fn options(mut buf: &[u8]) -> Option<Vec<(u16, &[u8])>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let code = u16::from_be_bytes([*buf.first()?, *buf.get(1)?]);
        let len = usize::from(u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]));
        out.push((code, buf.get(4..4 + len)?));
        buf = &buf[4 + len..];
    }
    Some(out)
}

fn first<'a>(opts: &[(u16, &'a [u8])], code: u16) -> Option<&'a [u8]> {
    opts.iter().find(|(c, _)| *c == code).map(|(_, d)| *d)
}

fn addr(b: &[u8]) -> Option<Ipv6Addr> {
    let a: [u8; 16] = b.get(..16)?.try_into().ok()?;
    Some(Ipv6Addr::from(a))
}

/// Reads a datagram from `from` (a client on the link, or a relay).
pub fn decode(buf: &[u8], from: Ipv6Addr) -> Result<Inbound, Malformed> {
    let mut relays = Vec::new();
    let mut msg = buf;
    while msg.first() == Some(&kind::RELAY_FORW) {
        if relays.len() >= HOP_COUNT_LIMIT {
            return Err(Malformed::TooManyRelays);
        }
        let head = msg.get(..34).ok_or(Malformed::Truncated)?;
        let opts = options(&msg[34..]).ok_or(Malformed::Truncated)?;
        relays.push(Relay {
            hop_count: head[1],
            link: addr(&head[2..18]).ok_or(Malformed::Truncated)?,
            peer: addr(&head[18..34]).ok_or(Malformed::Truncated)?,
            interface_id: first(&opts, opt::INTERFACE_ID).map(<[u8]>::to_vec),
            remote_id: first(&opts, opt::REMOTE_ID).map(<[u8]>::to_vec),
            lladdr: first(&opts, opt::CLIENT_LINKLAYER_ADDR)
                .filter(|d| d.len() == 8 && d[..2] == [0, 1])
                .and_then(|d| mac_of(&d[2..])),
        });
        msg = first(&opts, opt::RELAY_MSG).ok_or(Malformed::Truncated)?;
    }
    let (&kind, rest) = msg.split_first().ok_or(Malformed::Truncated)?;
    if !matches!(
        kind,
        kind::SOLICIT
            | kind::REQUEST
            | kind::CONFIRM
            | kind::RENEW
            | kind::REBIND
            | kind::RELEASE
            | kind::DECLINE
            | kind::INFORMATION_REQUEST
    ) {
        return Err(Malformed::NotRequest);
    }
    let xid: [u8; 3] = rest.get(..3).ok_or(Malformed::Truncated)?.try_into().map_err(|_| Malformed::Truncated)?;
    let opts = options(&rest[3..]).ok_or(Malformed::Truncated)?;
    let client_id = match first(&opts, opt::CLIENTID) {
        Some(d) if (3..=MAX_DUID).contains(&d.len()) => d.to_vec(),
        Some(_) => return Err(Malformed::BadOption),
        // An information-request may come without one (RFC 8415 18.2.6).
        None if kind == kind::INFORMATION_REQUEST => Vec::new(),
        None => return Err(Malformed::NoClientId),
    };
    let mut ias = Vec::new();
    for (_, d) in opts.iter().filter(|(c, _)| *c == opt::IA_NA).take(MAX_IAS) {
        let head = d.get(..12).ok_or(Malformed::BadOption)?;
        let iaid = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let inner = options(&d[12..]).ok_or(Malformed::BadOption)?;
        let addrs = inner
            .iter()
            .filter(|(c, a)| *c == opt::IAADDR && a.len() >= 24)
            .filter_map(|(_, a)| addr(a))
            .take(MAX_ADDRS_PER_IA)
            .collect();
        ias.push(Ia { iaid, addrs });
    }
    let oro = first(&opts, opt::ORO)
        .map(|d| d.chunks_exact(2).take(64).map(|c| u16::from_be_bytes([c[0], c[1]])).collect())
        .unwrap_or_default();
    let arch = first(&opts, opt::CLIENT_ARCH_TYPE).filter(|d| d.len() >= 2).map(|d| u16::from_be_bytes([d[0], d[1]]));
    let is_ipxe = first(&opts, opt::USER_CLASS).is_some_and(|d| {
        let mut d = d;
        while d.len() >= 2 {
            let len = usize::from(u16::from_be_bytes([d[0], d[1]]));
            let Some(v) = d.get(2..2 + len) else { break };
            if v == b"iPXE" {
                return true;
            }
            d = &d[2 + len..];
        }
        false
    });
    let peer = relays.last().map_or(from, |r| r.peer);
    Ok(Inbound {
        relays,
        kind,
        xid,
        client_id,
        server_id: first(&opts, opt::SERVERID).map(<[u8]>::to_vec),
        ias,
        rapid_commit: first(&opts, opt::RAPID_COMMIT).is_some(),
        oro,
        arch,
        is_ipxe,
        peer,
    })
}

/// A reply being built: its type, the request's transaction id, and options in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub kind: u8,
    pub xid: [u8; 3],
    pub opts: Vec<(u16, Vec<u8>)>,
}

impl Reply {
    pub fn new(kind: u8, xid: [u8; 3]) -> Reply {
        Reply { kind, xid, opts: Vec::new() }
    }

    pub fn push(&mut self, code: u16, data: Vec<u8>) {
        self.opts.push((code, data));
    }

    /// The first option `code`'s data (tests read replies back with it).
    pub fn get(&self, code: u16) -> Option<&[u8]> {
        self.opts.iter().find(|(c, _)| *c == code).map(|(_, d)| d.as_slice())
    }

    /// The message's bytes, wrapped in a relay-reply for each of `relays` (outermost first).
    pub fn encode(&self, relays: &[Relay]) -> Vec<u8> {
        let mut out = vec![self.kind];
        out.extend_from_slice(&self.xid);
        for (code, data) in &self.opts {
            put(&mut out, *code, data);
        }
        for r in relays.iter().rev() {
            let mut wrapped = vec![kind::RELAY_REPL, r.hop_count];
            wrapped.extend_from_slice(&r.link.octets());
            wrapped.extend_from_slice(&r.peer.octets());
            if let Some(id) = &r.interface_id {
                put(&mut wrapped, opt::INTERFACE_ID, id);
            }
            put(&mut wrapped, opt::RELAY_MSG, &out);
            out = wrapped;
        }
        out
    }
}

/// Appends one option.
pub fn put(out: &mut Vec<u8>, code: u16, data: &[u8]) {
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&u16::try_from(data.len()).unwrap_or(u16::MAX).to_be_bytes());
    out.extend_from_slice(&data[..data.len().min(usize::from(u16::MAX))]);
}

/// A status code option's data.
pub fn status(code: Status, message: &str) -> Vec<u8> {
    let mut d = (code as u16).to_be_bytes().to_vec();
    d.extend_from_slice(message.as_bytes());
    d
}

/// An IA_NA option's data: the IAID, T1 and T2, then its options (addresses or a status).
pub fn ia_na(iaid: u32, t1: u32, t2: u32, inner: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut d = Vec::with_capacity(12 + inner.len() * 28);
    for v in [iaid, t1, t2] {
        d.extend_from_slice(&v.to_be_bytes());
    }
    for (code, data) in inner {
        put(&mut d, *code, data);
    }
    d
}

/// An IAADDR option's data.
pub fn ia_addr(ip: Ipv6Addr, preferred: u32, valid: u32) -> Vec<u8> {
    let mut d = ip.octets().to_vec();
    d.extend_from_slice(&preferred.to_be_bytes());
    d.extend_from_slice(&valid.to_be_bytes());
    d
}

/// A domain search list in DNS wire form (RFC 1035 3.1), labels longer than 63 bytes dropped.
pub fn domain_list(domain: &str) -> Vec<u8> {
    let mut d = Vec::new();
    for label in domain.trim_end_matches('.').split('.').filter(|l| !l.is_empty() && l.len() <= 63) {
        d.push(label.len() as u8);
        d.extend_from_slice(label.as_bytes());
    }
    d.push(0);
    d
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
