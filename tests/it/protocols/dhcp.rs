//! The whole appliance in-process on loopback: DHCP exchanges as a relay agent sends them, checked
//! through the DHCP replies and through the REST API.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::time::Duration;

use crate::common::*;
use dhcproto::v4::{DhcpOption, MessageType, OptionCode};
use dhcproto::Encodable;
use hyper::Method;
use serde_json::json;

#[tokio::test]
async fn four_way_exchange_gives_a_lease_with_options_and_records_the_machine() {
    let lab = Lab::start("").await;
    let mac = [0x52, 0x54, 0, 0, 1, 1];
    let ack = four_way(&lab, mac, 100).await;
    let ip = ack.yiaddr();
    assert!(ip >= Ipv4Addr::new(127, 0, 1, 10) && ip <= Ipv4Addr::new(127, 0, 5, 250), "{ip}");
    let o = ack.opts();
    assert_eq!(o.get(OptionCode::SubnetMask), Some(&DhcpOption::SubnetMask(Ipv4Addr::new(255, 0, 0, 0))));
    assert_eq!(o.get(OptionCode::Router), Some(&DhcpOption::Router(vec![Ipv4Addr::LOCALHOST])));
    assert_eq!(
        o.get(OptionCode::DomainNameServer),
        Some(&DhcpOption::DomainNameServer(vec![Ipv4Addr::new(127, 0, 0, 53)]))
    );
    assert_eq!(o.get(OptionCode::AddressLeaseTime), Some(&DhcpOption::AddressLeaseTime(600)));
    assert_eq!(o.get(OptionCode::Renewal), Some(&DhcpOption::Renewal(300)));

    let leases = lab.api.ok(Method::GET, "/leases", None).await.unwrap();
    let l = &leases["leases"][0];
    assert_eq!(
        (l["ip"].as_str().unwrap(), l["mac"].as_str().unwrap(), l["active"].as_bool()),
        (ip.to_string().as_str(), "52:54:00:00:01:01", Some(true))
    );

    let m = lab.api.ok(Method::GET, "/machines/52:54:00:00:01:01", None).await.unwrap();
    assert_eq!(m["state"], "discovered");
    let ev = lab.api.ok(Method::GET, "/machines/52:54:00:00:01:01/events", None).await.unwrap();
    let kinds: Vec<&str> = ev["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["machine.discovered", "dhcp.offer", "dhcp.ack"]);
}

#[tokio::test]
async fn pxe_clients_get_boot_files_by_arch_and_ipxe_gets_its_script() {
    let lab = Lab::start("").await;
    for (i, (arch, want)) in
        [(0u16, "undionly.kpxe"), (7, "ipxe.efi"), (9, "ipxe.efi"), (11, "shimaa64.efi")].into_iter().enumerate()
    {
        let mac = [0x52, 0x54, 0, 0, 2, i as u8];
        let offer = lab.exchange(&pxe(msg(MessageType::Discover, mac, 200 + i as u32), arch)).await.unwrap();
        assert_eq!(fname(&offer), want, "arch {arch}");
        assert_eq!(offer.siaddr(), Ipv4Addr::LOCALHOST, "next-server");
        // No "PXEClient" in a full-mode offer: EDK2's PXE would take it for a BINL offer and
        // ask again on port 4011 instead of booting the file named here.
        assert_eq!(offer.opts().get(OptionCode::ClassIdentifier), None, "arch {arch}");
        assert_eq!(no_pxedhcp(&offer), None, "arch {arch}: not iPXE, nothing of iPXE's");
    }
    let mac = [0x52, 0x54, 0, 0, 2, 9];
    let mut m = pxe(msg(MessageType::Discover, mac, 300), 7);
    m.opts_mut().insert(DhcpOption::UserClass(b"iPXE".to_vec()));
    let offer = lab.exchange(&m).await.unwrap();
    let http = lab.app.as_ref().unwrap().http_addr;
    assert_eq!(fname(&offer), format!("http://127.0.0.1:{}/boot/ipxe?mac=52:54:00:00:02:09", http.port()));
    // 175.176 no-pxedhcp: iPXE requests at once instead of waiting 2 s for ProxyDHCP offers.
    assert_eq!(no_pxedhcp(&offer), Some(vec![176, 1, 1]));
    let mut h = msg(MessageType::Discover, [0x52, 0x54, 0, 0, 2, 10], 301);
    h.opts_mut().insert(DhcpOption::ClientSystemArchitecture(dhcproto::v4::Architecture(16)));
    h.opts_mut().insert(DhcpOption::ClassIdentifier(b"HTTPClient:Arch:00016".to_vec()));
    let offer = lab.exchange(&h).await.unwrap();
    assert!(fname(&offer).ends_with("/boot/files/ipxe.efi"));
    assert_eq!(
        offer.opts().get(OptionCode::ClassIdentifier),
        Some(&DhcpOption::ClassIdentifier(b"HTTPClient".to_vec()))
    );
    // Non-PXE clients get no boot file.
    let plain = lab.exchange(&msg(MessageType::Discover, [0x52, 0x54, 0, 0, 2, 11], 302)).await.unwrap();
    assert!(plain.fname().is_none_or(|f| f.is_empty()));
    // An OFFER whose REQUEST does not come is written on its own once its hold has passed.
    let m = eventually(|| lab.api.ok(Method::GET, "/machines/52:54:00:00:02:01", None)).await;
    lab.app.as_ref().unwrap().cmdb.flush().await.unwrap();
    assert_eq!(m["last_arch"], "uefi-x64");
}

/// The data of iPXE's encapsulated option 175, if the reply has it.
fn no_pxedhcp(m: &dhcproto::v4::Message) -> Option<Vec<u8>> {
    match m.opts().get(OptionCode::Unknown(175)) {
        Some(DhcpOption::Unknown(o)) => Some(o.data().to_vec()),
        _ => None,
    }
}

#[tokio::test]
async fn a_machine_can_take_the_signed_chain_whatever_the_config_says() {
    let lab = Lab::start("").await;
    let (signed, other) = ([0x52, 0x54, 0, 0, 2, 0x31], [0x52, 0x54, 0, 0, 2, 0x32]);
    let m = lab.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:00:02:31"]}))).await.unwrap();
    let id = m["id"].as_u64().unwrap();
    let patch = |v: serde_json::Value| {
        let lab = &lab;
        async move {
            lab.api.call(Method::PATCH, &format!("/machines/{id}"), Some(json!({"uefi_loader": v}))).await.unwrap()
        }
    };
    let (status, body) = patch(json!("grub")).await;
    assert_eq!(status, 400, "only ipxe or shim: {body}");
    assert_eq!(patch(json!("shim")).await.0, 200);
    let offer = |mac, xid, arch| {
        let lab = &lab;
        async move { fname(&lab.exchange(&pxe(msg(MessageType::Discover, mac, xid), arch)).await.unwrap()) }
    };
    assert_eq!(offer(signed, 350, 7).await, "shimx64.efi", "this machine has Secure Boot on");
    assert_eq!(offer(other, 351, 7).await, "ipxe.efi", "the config's default for everyone else");
    assert_eq!(offer(signed, 352, 0).await, "undionly.kpxe", "BIOS is not affected");
    assert_eq!(patch(serde_json::Value::Null).await.0, 200);
    assert_eq!(offer(signed, 353, 7).await, "ipxe.efi", "cleared: the default again");
}

#[tokio::test]
async fn an_installed_machines_firmware_gets_an_address_and_at_most_a_loader_that_boots_its_disk() {
    let lab = Lab::start("").await;
    let mac = [0x52, 0x54, 0, 0, 2, 0x51];
    lab.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:00:02:51"]}))).await.unwrap();
    let set = |v: serde_json::Value| {
        let lab = &lab;
        async move { lab.api.ok(Method::PATCH, "/machines/52:54:00:00:02:51", Some(v)).await.unwrap() }
    };
    set(json!({"state": "installed"})).await;
    let offer = |xid, arch, ipxe: bool| {
        let lab = &lab;
        async move {
            let mut m = pxe(msg(MessageType::Discover, mac, xid), arch);
            if ipxe {
                m.opts_mut().insert(DhcpOption::UserClass(b"iPXE".to_vec()));
            }
            let offer = lab.exchange(&m).await.unwrap();
            assert!(!offer.yiaddr().is_unspecified(), "an address all the same");
            offer.fname_str().and_then(Result::ok).map(|f| f.trim_end_matches('\0').to_string()).unwrap_or_default()
        }
    };
    // BIOS and arm64 firmware: nothing to load, so it goes on to its disk.
    for (i, arch) in [0u16, 11].into_iter().enumerate() {
        assert_eq!(offer(370 + i as u32, arch, false).await, "", "arch {arch}");
    }
    // UEFI x64: the signed GRUB, whose config for it chainloads the disk's own loader.
    assert_eq!(offer(372, 7, false).await, "shimx64.efi");
    let grub = tftp_get(&lab, Ipv4Addr::LOCALHOST, "grub/grub.cfg-52:54:00:00:02:51").await;
    assert!(grub.contains("chainloader /EFI/BOOT/BOOTX64.EFI"), "{grub}");
    // iPXE, where it is the NIC's ROM, still gets the script (which exits to the disk).
    assert!(offer(374, 0, true).await.ends_with("/boot/ipxe?mac=52:54:00:00:02:51"));
    let http = lab.app.as_ref().unwrap().http_addr;
    let script = http_get(http, "/boot/ipxe?mac=52:54:00:00:02:51").await;
    assert!(script.contains("from its local disk"), "{script}");
    // Pinned to a profile, it boots that profile again.
    set(json!({"boot_profile": "discovery"})).await;
    assert_eq!(offer(375, 7, false).await, "ipxe.efi");
}

#[tokio::test]
async fn a_rack_chooses_the_loader_of_its_machines_and_a_machines_own_choice_wins() {
    let lab = Lab::start("").await;
    let (placed, own, loose) = ([0x52, 0x54, 0, 0, 2, 0x41], [0x52, 0x54, 0, 0, 2, 0x42], [0x52, 0x54, 0, 0, 2, 0x43]);
    for mac in ["52:54:00:00:02:41", "52:54:00:00:02:42", "52:54:00:00:02:43"] {
        lab.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
    }
    let bad = json!({"name": "r9", "machines_csv": "52:54:00:00:02:41,r9-u01,,1", "uefi_loader": "grub"});
    assert_eq!(lab.api.call(Method::POST, "/racks", Some(bad)).await.unwrap().0, 400, "only ipxe or shim");
    let csv = "52:54:00:00:02:41,r9-u01,,1\n52:54:00:00:02:42,r9-u02,,2";
    let rack = json!({"name": "r9", "machines_csv": csv, "uefi_loader": "shim"});
    let r = lab.api.ok(Method::POST, "/racks", Some(rack)).await.unwrap();
    assert_eq!(r["rack"]["uefi_loader"], "shim", "{r}");
    lab.api.ok(Method::PATCH, "/machines/52:54:00:00:02:42", Some(json!({"uefi_loader": "ipxe"}))).await.unwrap();
    let offer = |mac, xid, arch| {
        let lab = &lab;
        async move { fname(&lab.exchange(&pxe(msg(MessageType::Discover, mac, xid), arch)).await.unwrap()) }
    };
    assert_eq!(offer(placed, 360, 7).await, "shimx64.efi", "the rack's choice");
    assert_eq!(offer(own, 361, 7).await, "ipxe.efi", "the machine's own choice over its rack's");
    assert_eq!(offer(loose, 362, 7).await, "ipxe.efi", "in no rack: the config's default");
    assert_eq!(offer(placed, 363, 0).await, "undionly.kpxe", "BIOS is not affected");
}

#[tokio::test]
async fn a_new_machine_a_rack_lists_is_placed_by_its_offer_before_its_request() {
    let lab = Lab::start("").await;
    let rack = json!({"name": "r8", "machines_csv": "52:54:00:00:02:51,r8-u01,,1", "uefi_loader": "shim"});
    lab.api.ok(Method::POST, "/racks", Some(rack)).await.unwrap();
    // Never seen before: its OFFER's sighting places it. With racks defined that sighting is
    // written at once (not held for the REQUEST), so the REQUEST finds the machine in its slot.
    let mac = [0x52, 0x54, 0, 0, 2, 0x51];
    let offer = lab.exchange(&pxe(msg(MessageType::Discover, mac, 370), 7)).await.unwrap();
    lab.app.as_ref().unwrap().cmdb.flush().await.unwrap();
    let m = lab.api.ok(Method::GET, "/machines/52:54:00:00:02:51", None).await.unwrap();
    assert_eq!((m["rack"].as_str(), m["hostname"].as_str()), (Some("r8"), Some("r8-u01")), "{m}");
    let ack = lab.exchange(&pxe(request_for(&offer, mac, 371), 7)).await.unwrap();
    assert_eq!(ack.opts().get(OptionCode::Hostname), Some(&DhcpOption::Hostname("r8-u01".into())));
    assert_eq!(fname(&ack), "shimx64.efi", "the rack's loader on the first ACK");
    let ev = lab.api.ok(Method::GET, "/machines/52:54:00:00:02:51/events", None).await.unwrap();
    let kinds: Vec<&str> = ev["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["machine.discovered", "dhcp.offer", "rack.placed", "dhcp.ack"]);
}

#[tokio::test]
async fn reservation_wins_and_hostname_is_sent() {
    let lab = Lab::start("").await;
    lab.api
        .ok(
            Method::POST,
            "/machines",
            Some(json!({"macs": ["52:54:00:00:03:01"], "hostname": "node01", "reserved_ip": "127.0.9.9"})),
        )
        .await
        .unwrap();
    let ack = four_way(&lab, [0x52, 0x54, 0, 0, 3, 1], 400).await;
    assert_eq!(ack.yiaddr(), Ipv4Addr::new(127, 0, 9, 9));
    assert_eq!(ack.opts().get(OptionCode::Hostname), Some(&DhcpOption::Hostname("node01".into())));
    // Another client asking for the reserved address does not get it.
    let mut d = msg(MessageType::Discover, [0x52, 0x54, 0, 0, 3, 2], 410);
    d.opts_mut().insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(127, 0, 9, 9)));
    assert_ne!(lab.exchange(&d).await.unwrap().yiaddr(), Ipv4Addr::new(127, 0, 9, 9));
    let mut r = msg(MessageType::Request, [0x52, 0x54, 0, 0, 3, 2], 411);
    r.opts_mut().insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(127, 0, 9, 9)));
    assert_eq!(kind(&lab.exchange(&r).await.unwrap()), MessageType::Nak);
}

#[tokio::test]
async fn leases_survive_a_restart() {
    let mut lab = Lab::start("").await;
    let mac = [0x52, 0x54, 0, 0, 4, 1];
    let first = four_way(&lab, mac, 500).await.yiaddr();
    lab.restart().await;
    // INIT-REBOOT: the client asks for its old address after a reboot.
    let mut r = msg(MessageType::Request, mac, 510);
    r.opts_mut().insert(DhcpOption::RequestedIpAddress(first));
    let ack = lab.exchange(&r).await.unwrap();
    assert_eq!((kind(&ack), ack.yiaddr()), (MessageType::Ack, first));
    // A different client can neither take it nor is offered it.
    let other = lab.exchange(&msg(MessageType::Discover, [0x52, 0x54, 0, 0, 4, 2], 520)).await.unwrap();
    assert_ne!(other.yiaddr(), first);
    let offer = lab.exchange(&msg(MessageType::Discover, mac, 530)).await.unwrap();
    assert_eq!(offer.yiaddr(), first);
}

#[tokio::test]
async fn release_decline_renew_and_wrong_server() {
    let lab = Lab::start("").await;
    let mac = [0x52, 0x54, 0, 0, 5, 1];
    let ip = four_way(&lab, mac, 600).await.yiaddr();
    // RENEWING: ciaddr only, unicast from the client (here via the relay for the test).
    let mut renew = msg(MessageType::Request, mac, 610);
    renew.set_ciaddr(ip);
    assert_eq!(kind(&lab.exchange(&renew).await.unwrap()), MessageType::Ack);
    let mut rel = msg(MessageType::Release, mac, 620);
    rel.set_ciaddr(ip);
    lab.send_raw(&rel.to_vec().unwrap()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let leases = lab.api.ok(Method::GET, "/leases", None).await.unwrap();
    assert_eq!(leases["leases"][0]["state"], "released");
    // A client that chose another server's offer: we stay silent.
    let offer = lab.exchange(&msg(MessageType::Discover, [0x52, 0x54, 0, 0, 5, 2], 630)).await.unwrap();
    let mut r = request_for(&offer, [0x52, 0x54, 0, 0, 5, 2], 631);
    r.opts_mut().insert(DhcpOption::ServerIdentifier(Ipv4Addr::new(127, 0, 0, 99)));
    lab.send_raw(&dhcproto::Encodable::to_vec(&r).unwrap()).await;
    assert!(lab.recv(631, Duration::from_millis(300)).await.is_none());
    // DECLINE quarantines the address: the next client is offered another one.
    let mac3 = [0x52, 0x54, 0, 0, 5, 3];
    let got = four_way(&lab, mac3, 640).await.yiaddr();
    let mut d = msg(MessageType::Decline, mac3, 650);
    d.opts_mut().insert(DhcpOption::RequestedIpAddress(got));
    lab.send_raw(&dhcproto::Encodable::to_vec(&d).unwrap()).await;
    let mut ask = msg(MessageType::Discover, [0x52, 0x54, 0, 0, 5, 4], 660);
    ask.opts_mut().insert(DhcpOption::RequestedIpAddress(got));
    assert_ne!(lab.exchange(&ask).await.unwrap().yiaddr(), got);
}

#[tokio::test]
async fn malformed_burst_is_dropped_counted_and_server_keeps_answering() {
    let lab = Lab::start("").await;
    let good = dhcproto::Encodable::to_vec(&msg(MessageType::Discover, [0x52, 0x54, 0, 0, 6, 1], 700)).unwrap();
    for i in 0..500u32 {
        let mut p = good.clone();
        match i % 5 {
            0 => p.truncate(100),
            1 => p[236] ^= 0xff,
            2 => {
                p.truncate(240);
                p.extend([53, 1, 1, 12, 255, 1, 2]);
            }
            3 => {
                p.truncate(240);
                p.extend([53, 1, 1, 94, 1, 0]);
            }
            _ => p = vec![0xff; 1400],
        }
        lab.send_raw(&p).await;
    }
    assert!(
        lab.exchange(&msg(MessageType::Discover, [0x52, 0x54, 0, 0, 6, 1], 701)).await.is_some(),
        "still answering"
    );
    // The good DISCOVER's OFFER is written once its hold for a REQUEST has passed.
    eventually(|| async {
        let (_, list) = lab.api.call(Method::GET, "/machines", None).await?;
        anyhow::ensure!(list["total"] == 1, "{list}");
        Ok(())
    })
    .await;
    lab.app.as_ref().unwrap().cmdb.flush().await.unwrap();
    let (_, list) = lab.api.call(Method::GET, "/machines", None).await.unwrap();
    assert_eq!(list["total"], 1, "nothing was written for the bad packets");
    let metrics = lab.metrics().await;
    let dropped: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("rackboot_dhcp_packets_dropped_total"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(dropped, 500.0, "{metrics}");
}

#[tokio::test]
async fn a_thousand_clients_get_a_thousand_distinct_addresses() {
    let lab = Lab::start("").await;
    let mut seen = HashSet::new();
    // DISCOVERs in bursts of 100, as racks of machines powering on would send them (the test's
    // own receive buffer, not the server, limits the burst size).
    let mut offers = Vec::new();
    let mut buf = [0u8; 1500];
    for burst in 0..10u32 {
        for i in burst * 100..(burst + 1) * 100 {
            let mac = [0x52, 0x54, 0, 1, (i >> 8) as u8, i as u8];
            lab.send_raw(&msg(MessageType::Discover, mac, 10_000 + i).to_vec().unwrap()).await;
        }
        while offers.len() < ((burst + 1) * 100) as usize {
            let (n, _) = tokio::time::timeout(Duration::from_secs(5), lab.relay.recv_from(&mut buf))
                .await
                .expect("all offers")
                .unwrap();
            offers.push(
                <dhcproto::v4::Message as dhcproto::Decodable>::decode(&mut dhcproto::Decoder::new(&buf[..n])).unwrap(),
            );
        }
    }
    for o in &offers {
        let mac: [u8; 6] = o.chaddr()[..6].try_into().unwrap();
        let ack = lab.exchange(&request_for(o, mac, o.xid() + 5000)).await.unwrap();
        assert_eq!(kind(&ack), MessageType::Ack);
        assert!(seen.insert(ack.yiaddr()), "{} given twice", ack.yiaddr());
    }
    assert_eq!(seen.len(), 1000);
    // The pool use the dashboard shows: 1,000 of the pool's 1,265 addresses (counted every 5 s).
    let deadline = std::time::Instant::now() + Duration::from_secs(12);
    loop {
        let m = lab.metrics().await;
        if m.contains("rackboot_dhcp_pool_addresses 1265") && m.contains("rackboot_dhcp_leases_in_use 1000") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "pool size and leases in use: {m}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn fname(m: &dhcproto::v4::Message) -> String {
    m.fname_str().unwrap().unwrap().trim_end_matches('\0').to_string()
}
