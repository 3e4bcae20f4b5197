//! DHCP wire handling: a defensive framing check, parsing into [`Request`], building and encoding
//! replies (padded to the BOOTP minimum), and where a reply must be sent (RFC 2131 4.1).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use dhcproto::v4::{self, DhcpOption, Flags, Message, MessageType, OptionCode};
use dhcproto::{Decodable, Decoder, Encodable};

use rackboot_boot::planner::Arch;
use rackboot_model::mac::Mac;

const MAGIC: [u8; 4] = [99, 130, 83, 99];
/// BOOTP header size up to and including the magic cookie.
const HEADER_LEN: usize = 240;
/// Old PXE ROMs drop replies shorter than a BOOTP message (RFC 951: 300 bytes).
const MIN_REPLY_LEN: usize = 300;
/// Largest datagram we accept (the DHCP maximum message size an Ethernet MTU allows).
pub const MAX_PACKET: usize = 1500;

/// Why a packet was dropped; the string is the metrics label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("truncated")]
    Truncated,
    #[error("bad_magic")]
    BadMagic,
    #[error("bad_options")]
    BadOptions,
    #[error("not_a_request")]
    NotRequest,
    #[error("no_message_type")]
    NoMessageType,
    #[error("bad_hardware_address")]
    BadHwAddr,
}

/// Lengths dhcproto assumes without checking (it `debug_assert!`s or subtracts) for these codes.
fn option_len_ok(code: u8, len: usize) -> bool {
    match code {
        53 => len == 1,
        50 | 54 | 51 | 58 | 59 | 1 | 152..=155 => len == 4,
        57 => len == 2,
        93 => len >= 2 && len.is_multiple_of(2),
        94 => len == 3,
        80 => len == 0,
        81 => len >= 3,
        151 => len >= 1,
        _ => true,
    }
}

/// Walks the option TLVs to check framing before any parser trusts a length byte.
fn check_framing(buf: &[u8]) -> Result<(), Malformed> {
    if buf.len() < HEADER_LEN + 1 {
        return Err(Malformed::Truncated);
    }
    if buf[236..240] != MAGIC {
        return Err(Malformed::BadMagic);
    }
    let mut i = HEADER_LEN;
    while i < buf.len() {
        match buf[i] {
            0 => i += 1,
            255 => return Ok(()),
            code => {
                let len = *buf.get(i + 1).ok_or(Malformed::BadOptions)? as usize;
                if i + 2 + len > buf.len() || !option_len_ok(code, len) {
                    return Err(Malformed::BadOptions);
                }
                i += 2 + len;
            }
        }
    }
    // No END option: tolerated (some clients omit it) as long as the framing held.
    Ok(())
}

/// A client message, reduced to what the server acts on.
#[derive(Debug, Clone)]
pub struct Request {
    pub msg: Message,
    pub kind: MessageType,
    pub mac: Mac,
    pub requested_ip: Option<Ipv4Addr>,
    pub server_id: Option<Ipv4Addr>,
    pub arch: Option<Arch>,
    /// Vendor class (option 60) starts with "PXEClient" or "HTTPClient".
    pub is_pxe: bool,
    pub is_ipxe: bool,
    pub hostname: Option<String>,
    pub circuit_id: Option<String>,
    pub remote_id: Option<String>,
}

/// Parses a datagram; every error is a reason to drop it.
pub fn parse(buf: &[u8]) -> Result<Request, Malformed> {
    check_framing(buf)?;
    // check_framing rules out every input dhcproto is known to panic on; the guard stays because a
    // panic here would take the whole DHCP service down for one bad packet.
    let msg = std::panic::catch_unwind(|| Message::decode(&mut Decoder::new(buf)))
        .map_err(|_| Malformed::BadOptions)?
        .map_err(|_| Malformed::BadOptions)?;
    if msg.opcode() != v4::Opcode::BootRequest {
        return Err(Malformed::NotRequest);
    }
    let kind = msg.opts().msg_type().ok_or(Malformed::NoMessageType)?;
    if msg.hlen() != 6 || msg.htype() != v4::HType::Eth {
        return Err(Malformed::BadHwAddr);
    }
    let mac = Mac::from_slice(msg.chaddr()).ok_or(Malformed::BadHwAddr)?;
    let opts = msg.opts();
    let vendor = match opts.get(OptionCode::ClassIdentifier) {
        Some(DhcpOption::ClassIdentifier(v)) => v.clone(),
        _ => Vec::new(),
    };
    let is_ipxe = opts.get(OptionCode::Unknown(175)).is_some()
        || matches!(opts.get(OptionCode::UserClass), Some(DhcpOption::UserClass(u)) if u.windows(4).any(|w| w == b"iPXE"));
    let (circuit_id, remote_id) = relay_ids(&msg);
    Ok(Request {
        kind,
        mac,
        requested_ip: match opts.get(OptionCode::RequestedIpAddress) {
            Some(DhcpOption::RequestedIpAddress(ip)) => Some(*ip),
            _ => None,
        },
        server_id: match opts.get(OptionCode::ServerIdentifier) {
            Some(DhcpOption::ServerIdentifier(ip)) => Some(*ip),
            _ => None,
        },
        arch: match opts.get(OptionCode::ClientSystemArchitecture) {
            Some(DhcpOption::ClientSystemArchitecture(a)) => Some(Arch::from_code(a.0)),
            _ => None,
        },
        is_pxe: vendor.starts_with(b"PXEClient") || vendor.starts_with(b"HTTPClient"),
        is_ipxe,
        hostname: match opts.get(OptionCode::Hostname) {
            Some(DhcpOption::Hostname(h)) => Some(h.clone()),
            _ => None,
        },
        circuit_id,
        remote_id,
        msg,
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn relay_ids(msg: &Message) -> (Option<String>, Option<String>) {
    use dhcproto::v4::relay::{RelayCode, RelayInfo};
    let Some(DhcpOption::RelayAgentInformation(info)) = msg.opts().get(OptionCode::RelayAgentInformation) else {
        return (None, None);
    };
    let circuit = match info.get(RelayCode::AgentCircuitId) {
        Some(RelayInfo::AgentCircuitId(v)) => Some(hex(v)),
        _ => None,
    };
    let remote = match info.get(RelayCode::AgentRemoteId) {
        Some(RelayInfo::AgentRemoteId(v)) => Some(hex(v)),
        _ => None,
    };
    (circuit, remote)
}

/// What a client message shows the CMDB about its machine: its MAC, architecture and switch
/// port (option 82).
pub fn sighting(req: &Request) -> rackboot_store::Sighting {
    rackboot_store::Sighting {
        mac: Some(req.mac),
        arch: req.arch.map(|a| a.name()),
        circuit_id: req.circuit_id.clone(),
        remote_id: req.remote_id.clone(),
    }
}

/// Starts a reply to `req`: same xid, flags, giaddr and chaddr; option 82 echoed (RFC 3046).
pub fn reply(req: &Request, kind: MessageType, server_id: Ipv4Addr) -> Message {
    let q = &req.msg;
    let mut m = Message::default();
    m.set_opcode(v4::Opcode::BootReply)
        .set_htype(q.htype())
        .set_xid(q.xid())
        .set_flags(q.flags())
        .set_giaddr(q.giaddr())
        .set_chaddr(q.chaddr());
    m.opts_mut().insert(DhcpOption::MessageType(kind));
    m.opts_mut().insert(DhcpOption::ServerIdentifier(server_id));
    if let Some(o) = q.opts().get(OptionCode::RelayAgentInformation) {
        m.opts_mut().insert(o.clone());
    }
    m
}

/// Encodes a reply, padded with zeros after END to at least 300 bytes.
pub fn encode(m: &Message) -> Vec<u8> {
    let mut out = m.to_vec().expect("replies we build always encode");
    if out.len() < MIN_REPLY_LEN {
        out.resize(MIN_REPLY_LEN, 0);
    }
    out
}

/// Where a reply goes (RFC 2131 4.1): the relay, the client's own address, or broadcast.
///
/// A client with no address and no broadcast flag would need an ARP entry injected for a
/// unicast to yiaddr; broadcasting instead is allowed by the RFC and every client accepts it.
pub fn destination(req: &Request, reply_kind: MessageType, client_port: u16, relay_port: u16) -> SocketAddr {
    let q = &req.msg;
    let ip = if !q.giaddr().is_unspecified() {
        return SocketAddr::V4(SocketAddrV4::new(q.giaddr(), relay_port));
    } else if reply_kind == MessageType::Nak {
        Ipv4Addr::BROADCAST
    } else if !q.ciaddr().is_unspecified() {
        q.ciaddr()
    } else {
        Ipv4Addr::BROADCAST
    };
    SocketAddr::V4(SocketAddrV4::new(ip, client_port))
}

/// Sets the broadcast flag on a reply (used for NAKs through a relay, RFC 2131 4.3.2).
pub fn set_broadcast(m: &mut Message) {
    let f: Flags = m.flags().set_broadcast();
    m.set_flags(f);
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod props;
