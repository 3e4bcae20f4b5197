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

/// The boot-only reply, or why there is none: the drop counter's reason.
fn pxe_reply(svc: &DhcpService, req: &Request, kind: MessageType) -> Result<dhcproto::v4::Message, &'static str> {
    // A subnet listed in the config may choose its UEFI loader in proxy mode too.
    let ask = svc
        .boot_request(req, super::decide::subnet_of(&svc.cfg.subnets, svc.server_ip, req).map(|(_, s)| s))
        .ok_or("not_pxe")?;
    let Some(boot) = rackboot_boot::planner::plan_dhcp(&ask, &svc.boot_context()) else {
        // An installed machine's firmware goes on to its disk: silence is its answer here.
        return Err(if ask.boots_disk { "boots_own_disk" } else { "unbootable_arch" });
    };
    let mut m = packet::reply(req, kind, svc.server_ip);
    boot_options(&mut m, &boot, Mode::Proxy);
    m.opts_mut().insert(DhcpOption::VendorExtensions(PXE_VENDOR_OPTIONS.to_vec()));
    Ok(m)
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
    let reply = match pxe_reply(svc, &req, MessageType::Offer) {
        Ok(reply) => reply,
        Err(why) => {
            svc.metrics.dhcp_drop(why);
            debug!(mac = %req.mac, arch = ?req.arch, why, "no boot offer");
            return;
        }
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
    let Ok(mut reply) = pxe_reply(svc, &req, MessageType::Ack) else { return };
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
            svc.cmdb.record(packet::sighting(req), vec![(event, detail)]);
        }
        Err(error) => {
            svc.metrics.dhcp_drop("send_failed");
            warn!(%to, %error, mac = %req.mac, "proxy dhcp reply not sent");
        }
    }
}
