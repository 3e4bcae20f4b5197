//! ProxyDHCP (PXE spec 2.1): boot options without addresses, beside another DHCP server. Offers
//! go out on port 67 to PXE DISCOVERs; the client then asks us on port 4011 for its boot file.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use dhcproto::v4::{DhcpOption, MessageType};
use serde_json::json;
use tokio::net::UdpSocket;
use tracing::{debug, warn};

use super::options::{boot_options, Mode};
use super::packet::{self, Request};
use super::DhcpService;
use rackboot_store::EventKind;

/// Option 43, PXE_DISCOVERY_CONTROL (sub-option 6) = 8: boot the file named in this offer
/// instead of running boot-server discovery.
const PXE_VENDOR_OPTIONS: [u8; 4] = [6, 1, 8, 255];

fn pxe_reply(svc: &DhcpService, req: &Request, kind: MessageType) -> Option<dhcproto::v4::Message> {
    // A subnet listed in the config may choose its UEFI loader in proxy mode too.
    let boot = svc.boot_for(req, super::select_subnet(svc, req).map(|(_, s)| s))?;
    let mut m = packet::reply(req, kind, svc.server_ip);
    boot_options(&mut m, &boot, Mode::Proxy);
    m.opts_mut().insert(DhcpOption::VendorExtensions(PXE_VENDOR_OPTIONS.to_vec()));
    Some(m)
}

/// Port 67 in proxy mode: answer a PXE DISCOVER with a boot-only offer. A REQUEST (to the real
/// DHCP server) tells where the client will be: boot nonces and installer tokens go only there.
/// Everything else belongs to the real server.
pub async fn handle_offer(svc: &DhcpService, socket: &UdpSocket, req: Request) {
    if req.kind == MessageType::Request {
        let asked = req.requested_ip.or(Some(req.msg.ciaddr()).filter(|ip| !ip.is_unspecified()));
        if let Some(ip) = asked {
            svc.cmdb.saw_address(req.mac, ip);
        }
        return;
    }
    if req.kind != MessageType::Discover || !(req.is_pxe || req.is_ipxe) {
        return;
    }
    let Some(reply) = pxe_reply(svc, &req, MessageType::Offer) else {
        svc.metrics.dhcp_drop("unbootable_arch");
        debug!(mac = %req.mac, arch = ?req.arch, "no boot file for this architecture");
        return;
    };
    let to = packet::destination(&req, MessageType::Offer, svc.cfg.reply_port, svc.cfg.relay_port);
    send(svc, socket, &reply, to, &req, EventKind::DhcpProxyOffer).await;
}

/// Port 4011: a PXE client's boot-server REQUEST; the ACK goes back to where it came from.
pub async fn handle_boot_request(svc: &DhcpService, socket: &UdpSocket, req: Request, from: SocketAddr) {
    if req.kind != MessageType::Request && req.kind != MessageType::Inform {
        return;
    }
    if let SocketAddr::V4(a) = from {
        svc.cmdb.saw_address(req.mac, *a.ip());
    }
    let Some(mut reply) = pxe_reply(svc, &req, MessageType::Ack) else { return };
    reply.set_ciaddr(req.msg.ciaddr());
    let to = match from {
        SocketAddr::V4(a) if !a.ip().is_unspecified() => from,
        _ => SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::BROADCAST, svc.cfg.reply_port)),
    };
    send(svc, socket, &reply, to, &req, EventKind::DhcpProxyAck).await;
}

async fn send(
    svc: &DhcpService,
    socket: &UdpSocket,
    reply: &dhcproto::v4::Message,
    to: SocketAddr,
    req: &Request,
    event: EventKind,
) {
    let kind = reply.opts().msg_type().unwrap_or(MessageType::Offer);
    match socket.send_to(&packet::encode(reply), to).await {
        Ok(_) => {
            svc.count_sent(kind);
            let detail =
                json!({"arch": req.arch.map(|a| a.name()), "boot_file": reply.fname_str().and_then(Result::ok)});
            svc.cmdb.record(svc.sighting(req), vec![(event, detail)]);
        }
        Err(error) => {
            svc.metrics.dhcp_drop("send_failed");
            warn!(%to, %error, mac = %req.mac, "proxy dhcp reply not sent");
        }
    }
}
