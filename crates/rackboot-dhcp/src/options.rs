//! Building OFFER/ACK replies: address, subnet options, lease times, hostname and boot options.

use std::net::Ipv4Addr;

use dhcproto::v4::{DhcpOption, Message, MessageType, UnknownOption};

use super::packet::{self, Request};
use rackboot_boot::planner::DhcpBoot;
use rackboot_config::Subnet;

/// An OFFER or ACK that binds `ip` to the client.
pub fn lease_reply(
    server_ip: Ipv4Addr,
    req: &Request,
    kind: MessageType,
    ip: Ipv4Addr,
    subnet: &Subnet,
    hostname: Option<&str>,
    boot: Option<&DhcpBoot>,
) -> Message {
    let mut m = packet::reply(req, kind, server_ip);
    m.set_yiaddr(ip);
    let lease = subnet.lease_secs;
    let o = m.opts_mut();
    o.insert(DhcpOption::AddressLeaseTime(lease));
    o.insert(DhcpOption::Renewal(lease / 2));
    o.insert(DhcpOption::Rebinding(lease / 8 * 7));
    network_options(&mut m, subnet);
    if let Some(h) = hostname {
        m.opts_mut().insert(DhcpOption::Hostname(h.to_string()));
    }
    if let Some(b) = boot {
        boot_options(&mut m, b, Mode::Full);
        if req.is_ipxe {
            no_proxy_wait(&mut m);
        }
    }
    m
}

/// iPXE's encapsulated option 175.176 (no-pxedhcp) set to 1: this answer carries the address and
/// the boot file together, so iPXE asks for it at once. Without it iPXE keeps collecting offers
/// for ProxyDHCP ones (`DHCP_DISC_PROXY_TIMEOUT_SEC`, 2 s) and, with its retransmission timer,
/// sends its REQUEST about 3 s after its DISCOVER: on every iPXE boot, twice per provisioning run.
/// Only in answers that bind an address: iPXE reads it from those alone.
fn no_proxy_wait(m: &mut Message) {
    const IPXE_ENCAP: u8 = 175;
    const NO_PXEDHCP: u8 = 176;
    m.opts_mut().insert(DhcpOption::Unknown(UnknownOption::new(IPXE_ENCAP.into(), vec![NO_PXEDHCP, 1, 1])));
}

/// Whose answer the boot options go into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A full-mode OFFER or ACK, address and boot file together.
    Full,
    /// A proxy OFFER or a port-4011 ACK, beside another server's address.
    Proxy,
}

/// A DHCPACK to an INFORM: configuration only, no address and no lease time (RFC 2131 3.4).
pub fn inform_reply(server_ip: Ipv4Addr, req: &Request, subnet: &Subnet, boot: Option<&DhcpBoot>) -> Message {
    let mut m = packet::reply(req, MessageType::Ack, server_ip);
    m.set_ciaddr(req.msg.ciaddr());
    network_options(&mut m, subnet);
    if let Some(b) = boot {
        boot_options(&mut m, b, Mode::Full);
    }
    m
}

fn network_options(m: &mut Message, subnet: &Subnet) {
    let o = m.opts_mut();
    o.insert(DhcpOption::SubnetMask(subnet.mask()));
    if !subnet.routers.is_empty() {
        o.insert(DhcpOption::Router(subnet.routers.clone()));
    }
    if !subnet.dns_servers.is_empty() {
        o.insert(DhcpOption::DomainNameServer(subnet.dns_servers.clone()));
    }
    if !subnet.domain.is_empty() {
        o.insert(DhcpOption::DomainName(subnet.domain.clone()));
    }
}

/// Boot file (header `file` and option 67), next-server (siaddr and option 66), vendor class.
///
/// Option 60 "PXEClient" goes only into proxy answers, where it marks them as PXE offers. In a
/// full-mode answer it would tell a PXE client (EDK2's, as in OVMF and most UEFI servers) that
/// this is a BINL offer, whose boot file must be asked for again on port 4011 ("PXE-E16: No valid
/// offer received" from a server that has no 4011), instead of the boot file it carries; ISC
/// dhcpd and Kea leave it out too. "HTTPClient" is always sent: UEFI HTTP boot requires it.
pub fn boot_options(m: &mut Message, b: &DhcpBoot, mode: Mode) {
    m.set_siaddr(b.next_server);
    m.set_fname_str(&b.filename);
    let o = m.opts_mut();
    if mode == Mode::Proxy || b.vendor_class != "PXEClient" {
        o.insert(DhcpOption::ClassIdentifier(b.vendor_class.as_bytes().to_vec()));
    }
    o.insert(DhcpOption::TFTPServerName(b.next_server.to_string().into_bytes()));
    o.insert(DhcpOption::BootfileName(b.filename.clone().into_bytes()));
}
