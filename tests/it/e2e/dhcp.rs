//! End-to-end DHCP with real peers in network namespaces (198.18.0.0/24, no route out):
//! ISC dhclient, busybox udhcpc and dhcpcd against rackboot in full mode, a restart, hand-built
//! PXE packets over a real bridge, and proxy mode beside dnsmasq.
//!
//! Needs root and the client programs, so every test here is `#[ignore]`d: a plain `cargo test`
//! lists them as ignored; the README's test command (and CI) runs them with `--include-ignored`.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use crate::netns::{full_config, require, sh, Net};
use dhcproto::v4::{self, DhcpOption, Message, MessageType, OptionCode};
use dhcproto::{Decodable, Decoder, Encodable};

/// Reads `KEY=VALUE` lines written by a client's hook script (the last block wins).
pub(super) fn vars(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
        .collect()
}

pub(super) fn hook(net: &Net, name: &str) -> String {
    let out = net.path(&format!("{name}.env"));
    let script = net.path(&format!("{name}.sh"));
    std::fs::write(&script, format!("#!/bin/sh\nenv | sort > {}.$1$reason\n", out.display())).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script.display().to_string()
}

fn dhclient(net: &Net, ns: &str) -> HashMap<String, String> {
    let script = hook(net, "dhclient");
    let (lf, pf) = (net.path("dhclient.leases"), net.path("dhclient.pid"));
    let cmd = format!("timeout 60 dhclient -4 -1 -sf {script} -lf {} -pf {} eth0", lf.display(), pf.display());
    let out = net.run(ns, &cmd);
    assert!(out.status.success(), "dhclient got no lease: {}", String::from_utf8_lossy(&out.stderr));
    // dhclient forks into the background once bound; stop it so a later run starts fresh.
    net.kill_pid_file(ns, &pf);
    let text = std::fs::read_to_string(net.path("dhclient.env.BOUND"))
        .or_else(|_| std::fs::read_to_string(net.path("dhclient.env.REBOOT")))
        .expect("dhclient ran its hook with BOUND or REBOOT");
    let _ = std::fs::remove_file(net.path("dhclient.env.BOUND"));
    let _ = std::fs::remove_file(net.path("dhclient.env.REBOOT"));
    vars(&text)
}

fn udhcpc(net: &Net, ns: &str) -> HashMap<String, String> {
    let script = hook(net, "udhcpc");
    let out = net.run(ns, &format!("timeout 60 udhcpc -i eth0 -f -n -q -t 5 -T 2 -s {script}"));
    assert!(out.status.success(), "udhcpc got no lease: {}", String::from_utf8_lossy(&out.stderr));
    vars(&std::fs::read_to_string(net.path("udhcpc.env.bound")).expect("udhcpc ran its hook with bound"))
}

fn dhcpcd(net: &Net, ns: &str) -> HashMap<String, String> {
    // -1: exit once bound; -c: our hook instead of dhcpcd-run-hooks (which would edit resolv.conf).
    let script = hook(net, "dhcpcd");
    let out = net.run(ns, &format!("timeout 60 dhcpcd -4 -1 -c {script} --noipv4ll -t 30 eth0"));
    let text = std::fs::read_to_string(net.path("dhcpcd.env.BOUND"))
        .unwrap_or_else(|_| panic!("dhcpcd got no lease: {}", String::from_utf8_lossy(&out.stderr)));
    vars(&text)
}

#[test]
#[ignore = "e2e: needs root, ip netns, dhclient, udhcpc, dhcpcd, curl"]
fn dhclient_udhcpc_and_dhcpcd_get_leases_and_keep_them_across_a_restart() {
    require(&["ip", "dhclient", "udhcpc", "dhcpcd", "curl"]);
    let mut net = Net::new("cl");
    let clients = [("dhc", "52:54:00:e2:00:01"), ("udh", "52:54:00:e2:00:02"), ("dcd", "52:54:00:e2:00:03")];
    let ns: Vec<String> = clients.iter().map(|(n, m)| net.add_client(n, m)).collect();
    let data = net.path("data");
    let rb = net.start_rackboot(&full_config(&data));
    net.api(
        "POST",
        "/machines",
        Some(r#"{"macs":["52:54:00:e2:00:01"],"hostname":"node-dhc","reserved_ip":"198.18.0.50"}"#),
    );
    net.api("POST", "/machines", Some(r#"{"macs":["52:54:00:e2:00:02"],"hostname":"node-udh"}"#));
    net.api("POST", "/machines", Some(r#"{"macs":["52:54:00:e2:00:03"],"hostname":"node-dcd"}"#));

    let d = dhclient(&net, &ns[0]);
    assert_eq!(d["new_ip_address"], "198.18.0.50", "reserved MAC gets its reserved address");
    assert_eq!((d["new_routers"].as_str(), d["new_domain_name_servers"].as_str()), ("198.18.0.1", "198.18.0.1"));
    assert_eq!((d["new_host_name"].as_str(), d["new_domain_name"].as_str()), ("node-dhc", "lab.rackboot.test"));

    let u = udhcpc(&net, &ns[1]);
    let u_ip: Ipv4Addr = u["ip"].parse().unwrap();
    assert!((Ipv4Addr::new(198, 18, 0, 100)..=Ipv4Addr::new(198, 18, 0, 199)).contains(&u_ip), "{u_ip}");
    assert_eq!(
        (u["router"].as_str(), u["dns"].trim(), u["hostname"].as_str()),
        ("198.18.0.1", "198.18.0.1", "node-udh")
    );

    let c = dhcpcd(&net, &ns[2]);
    let c_ip = c["new_ip_address"].clone();
    assert_ne!(c_ip, u_ip.to_string());
    assert_eq!((c["new_routers"].as_str(), c["new_host_name"].as_str()), ("198.18.0.1", "node-dcd"));

    let leases = net.api("GET", "/leases", None);
    assert_eq!(leases["leases"].as_array().unwrap().len(), 3);
    let ev = net.api("GET", "/machines/52:54:00:e2:00:02/events", None);
    let kinds: Vec<&str> = ev["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(kinds.ends_with(&["dhcp.offer", "dhcp.ack"]), "{kinds:?}");

    // Restart: SIGTERM stops it cleanly, leases come back from the redb file.
    assert!(net.stop(rb).success(), "rackboot exit on SIGTERM:\n{}", net.log("rackboot.log"));
    net.start_rackboot(&full_config(&data));
    assert_eq!(udhcpc(&net, &ns[1])["ip"], u_ip.to_string(), "same client keeps its address after a restart");
    assert_eq!(dhclient(&net, &ns[0])["new_ip_address"], "198.18.0.50");
}

/// A broadcast DHCP exchange from a client namespace, as a PXE ROM would send it; returns every
/// reply heard within `wait`.
fn broadcast(net: &Net, ns: &str, packets: Vec<Vec<u8>>, wait: Duration) -> Vec<Message> {
    net.in_ns(ns, move || {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
        s.set_reuse_address(true).unwrap();
        s.set_broadcast(true).unwrap();
        s.bind_device(Some(b"eth0")).unwrap();
        s.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, 68)).into()).unwrap();
        let s: std::net::UdpSocket = s.into();
        for p in &packets {
            s.send_to(p, (Ipv4Addr::BROADCAST, 67)).unwrap();
        }
        recv_all(&s, wait)
    })
}

fn recv_all(s: &std::net::UdpSocket, wait: Duration) -> Vec<Message> {
    let deadline = Instant::now() + wait;
    let mut out = Vec::new();
    let mut buf = [0u8; 1500];
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        s.set_read_timeout(Some(left.max(Duration::from_millis(1)))).unwrap();
        match s.recv_from(&mut buf) {
            Ok((n, _)) => out.push(Message::decode(&mut Decoder::new(&buf[..n])).unwrap()),
            Err(_) => break,
        }
    }
    out
}

fn pxe_discover(mac: [u8; 6], xid: u32, arch: u16, ipxe: bool) -> Vec<u8> {
    let mut m = Message::default();
    m.set_chaddr(&mac).set_xid(xid).set_flags(v4::Flags::default().set_broadcast());
    m.opts_mut().insert(DhcpOption::MessageType(MessageType::Discover));
    m.opts_mut().insert(DhcpOption::ClientSystemArchitecture(v4::Architecture(arch)));
    m.opts_mut().insert(DhcpOption::ClassIdentifier(format!("PXEClient:Arch:{arch:05}:UNDI:002001").into_bytes()));
    m.opts_mut().insert(DhcpOption::ClientNetworkInterface(1, 2, 1));
    if ipxe {
        m.opts_mut().insert(DhcpOption::UserClass(b"iPXE".to_vec()));
    }
    m.to_vec().unwrap()
}

fn file(m: &Message) -> String {
    m.fname_str().and_then(Result::ok).unwrap_or("").trim_end_matches('\0').to_string()
}

#[test]
#[ignore = "e2e: needs root, ip netns, curl"]
fn pxe_discovers_over_the_wire_get_the_right_boot_file_and_garbage_is_survived() {
    require(&["ip", "curl"]);
    let mut net = Net::new("px");
    let ns = net.add_client("pxe", "52:54:00:e2:01:01");
    net.start_rackboot(&full_config(&net.path("data")));
    let mac = [0x52, 0x54, 0, 0xe2, 1, 1];
    for (xid, arch, ipxe, want) in [
        (1, 0, false, "undionly.kpxe".to_string()),
        (2, 7, false, "ipxe.efi".to_string()),
        (3, 7, true, "http://198.18.0.1:8080/boot/ipxe?mac=52:54:00:e2:01:01".to_string()),
    ] {
        let replies = broadcast(&net, &ns, vec![pxe_discover(mac, xid, arch, ipxe)], Duration::from_secs(2));
        let offer = replies
            .iter()
            .find(|m| m.xid() == xid)
            .unwrap_or_else(|| panic!("no offer for arch {arch}:\n{}", net.log("rackboot.log")));
        assert_eq!(file(offer), want);
        assert_eq!(offer.siaddr(), Ipv4Addr::new(198, 18, 0, 1));
        assert!(offer.yiaddr() >= Ipv4Addr::new(198, 18, 0, 100));
    }
    // 2,000 malformed datagrams, then a good one still gets its answer.
    let good = pxe_discover(mac, 99, 0, false);
    let mut burst: Vec<Vec<u8>> = (0..2000u32)
        .map(|i| {
            let mut p = good.clone();
            match i % 4 {
                0 => p.truncate(50 + (i as usize % 180)),
                1 => p[236..240].copy_from_slice(b"junk"),
                2 => {
                    p.truncate(240);
                    p.extend([53, 1, 1, 60, 250, b'P']);
                }
                _ => p = vec![i as u8; 576],
            }
            p
        })
        .collect();
    burst.push(good);
    let replies = broadcast(&net, &ns, burst, Duration::from_secs(3));
    assert!(
        replies.iter().any(|m| m.xid() == 99),
        "server stopped answering after garbage:\n{}",
        net.log("rackboot.log")
    );
    let metrics = net.https_get("/metrics");
    let dropped: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("rackboot_dhcp_packets_dropped_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(dropped, 2000.0, "{metrics}");
    let machines = net.api("GET", "/machines", None);
    assert_eq!(machines["total"], 1, "garbage created no machines");
}

#[test]
#[ignore = "e2e: needs root, ip netns, dnsmasq, dhclient, curl"]
fn proxy_mode_beside_dnsmasq_pxe_client_gets_address_from_it_and_boot_file_from_us() {
    require(&["ip", "dnsmasq", "dhclient", "curl"]);
    let mut net = Net::new("pr");
    let ns = net.add_client("pxe", "52:54:00:e2:02:01");
    let plain = net.add_client("pln", "52:54:00:e2:02:02");
    let srv = net.srv.clone();
    let leases = net.path("dnsmasq.leases");
    net.spawn(
        &srv,
        &[
            "dnsmasq",
            "--keep-in-foreground",
            "--no-daemon",
            "--port=0",
            "--bind-interfaces",
            "--interface=br0",
            "--dhcp-range=198.18.0.150,198.18.0.199,600",
            "--no-ping",
            "--log-dhcp",
            "--conf-file=/dev/null",
            &format!("--pid-file={}", net.path("dnsmasq.pid").display()),
            &format!("--dhcp-leasefile={}", leases.display()),
        ],
        "dnsmasq.log",
    );
    std::thread::sleep(Duration::from_millis(500));
    let cfg = format!(
        "[server]\ndata_dir = \"{}\"\ninterface = \"br0\"\n[http]\nlisten = \"198.18.0.1:8080\"\n[dhcp]\nmode = \"proxy\"\n",
        net.path("data").display()
    );
    net.start_rackboot(&cfg);

    let mac = [0x52, 0x54, 0, 0xe2, 2, 1];
    let replies = broadcast(&net, &ns, vec![pxe_discover(mac, 7, 7, false)], Duration::from_secs(3));
    let address = replies
        .iter()
        .find(|m| !m.yiaddr().is_unspecified())
        .unwrap_or_else(|| panic!("no offer from dnsmasq:\n{}", net.log("dnsmasq.log")));
    assert!(address.yiaddr() >= Ipv4Addr::new(198, 18, 0, 150), "address comes from dnsmasq's pool");
    let boot = replies
        .iter()
        .find(|m| m.yiaddr().is_unspecified())
        .unwrap_or_else(|| panic!("no proxy offer:\n{}", net.log("rackboot.log")));
    assert_eq!(file(boot), "ipxe.efi");
    assert_eq!(boot.opts().get(OptionCode::ClassIdentifier), Some(&DhcpOption::ClassIdentifier(b"PXEClient".to_vec())));
    assert_eq!(boot.opts().get(OptionCode::VendorExtensions), Some(&DhcpOption::VendorExtensions(vec![6, 1, 8, 255])));

    // With its address from dnsmasq, the PXE client asks rackboot on port 4011 for the boot file.
    net.run(&ns, &format!("ip addr add {}/24 dev eth0", address.yiaddr()));
    let mut req = Message::default();
    req.set_chaddr(&mac).set_xid(8).set_ciaddr(address.yiaddr());
    req.opts_mut().insert(DhcpOption::MessageType(MessageType::Request));
    req.opts_mut().insert(DhcpOption::ClientSystemArchitecture(v4::Architecture(7)));
    req.opts_mut().insert(DhcpOption::ClassIdentifier(b"PXEClient:Arch:00007:UNDI:003016".to_vec()));
    let bytes = req.to_vec().unwrap();
    let acks = net.in_ns(&ns, move || {
        let s = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 4011)).unwrap();
        s.send_to(&bytes, (Ipv4Addr::new(198, 18, 0, 1), 4011)).unwrap();
        recv_all(&s, Duration::from_secs(2))
    });
    let ack = acks.iter().find(|m| m.xid() == 8).unwrap_or_else(|| panic!("no 4011 ack:\n{}", net.log("rackboot.log")));
    assert_eq!((ack.opts().msg_type(), file(ack).as_str()), (Some(MessageType::Ack), "ipxe.efi"));

    // A plain (non-PXE) client is left to dnsmasq alone.
    let d = dhclient(&net, &plain);
    let ip: Ipv4Addr = d["new_ip_address"].parse().unwrap();
    assert!(
        (Ipv4Addr::new(198, 18, 0, 150)..=Ipv4Addr::new(198, 18, 0, 199)).contains(&ip),
        "from dnsmasq's pool: {d:?}"
    );
    assert!(!d.contains_key("new_filename"), "rackboot must not answer a non-PXE client: {d:?}");
    let m = net.api("GET", "/machines/52:54:00:e2:02:01/events", None);
    let kinds: Vec<&str> = m["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["machine.discovered", "dhcp.proxy_offer", "dhcp.proxy_ack"]);
}

/// rdisc6 (ndisc6) solicits a router from a client namespace: rackboot answers with an
/// advertisement that configures nothing (iPXE stops waiting for IPv6 on it), and with
/// `dhcp.router_advertisements = false` nobody answers.
#[test]
#[ignore = "e2e: needs root, ip netns, rdisc6 (ndisc6)"]
fn router_solicitations_get_an_advertisement_that_configures_nothing() {
    require(&["ip", "rdisc6", "curl"]);
    let mut net = Net::new("ra");
    let ns = net.add_client("ra", "52:54:00:e2:00:31");
    let data = net.path("data");
    let rb = net.start_rackboot(&full_config(&data));
    // The client's link-local address must be past duplicate address detection.
    sh(&format!(
        "for i in $(seq 50); do ip -n {ns} -6 addr show dev eth0 scope link | grep -q tentative || exit 0; sleep 0.1; done; exit 1"
    ));
    let out = net.run(&ns, "rdisc6 -1 -w 2000 -r 3 eth0");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "no advertisement: {text}{}", String::from_utf8_lossy(&out.stderr));
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.split_whitespace().next().unwrap_or("").to_string())
            .unwrap_or_else(|| panic!("{name} missing in:\n{text}"))
    };
    assert_eq!(field("Router lifetime"), "0", "{text}");
    assert_eq!(field("Stateful address conf."), "No", "{text}");
    assert_eq!(field("Stateful other conf."), "No", "{text}");
    assert!(!text.contains("Prefix"), "no prefix to configure: {text}");
    let route = net.run(&ns, "ip -6 route show default");
    assert!(String::from_utf8_lossy(&route.stdout).trim().is_empty(), "the appliance is no default router");

    assert!(net.stop(rb).success());
    let off = full_config(&data).replacen("mode = \"full\"\n", "mode = \"full\"\nrouter_advertisements = false\n", 1);
    assert!(off.contains("router_advertisements = false"));
    net.start_rackboot(&off);
    let out = net.run(&ns, "rdisc6 -1 -w 1000 -r 2 eth0");
    assert!(
        !out.status.success(),
        "answered with router_advertisements = false: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
