//! End-to-end DHCPv6 with real peers in network namespaces (fd18::/64 and fd18:0:0:7::/64, no
//! route out): ISC `dhclient -6` and `dhcpcd -6` get addresses, names and DNS servers, keep them
//! across a restart and release them; `dig` finds the machines' AAAA and ip6.arpa PTR records;
//! a UEFI PXE and an HTTP-boot SOLICIT get their boot URLs (option 59); `dhcrelay -6` relays a
//! client on another link, which gets an address of that link's prefix; `perfdhcp -6` leaves
//! every exchange with a distinct address.

use std::collections::{HashMap, HashSet};
use std::net::{Ipv6Addr, SocketAddrV6};
use std::time::{Duration, Instant};

use super::dhcp::{hook, vars};
use crate::netns::{full_config, require, sh, wait_for, Net};

fn config(data: &std::path::Path) -> String {
    full_config(data)
        + r#"
[dhcp6]
enabled = true
[[dhcp6.subnets]]
prefix = "fd18::/64"
pools = ["fd18::100-fd18::fff"]
dns_servers = ["fd18::1"]
domain = "lab.rackboot.test"
preferred_secs = 300
valid_secs = 600
[[dhcp6.subnets]]
prefix = "fd18:0:0:7::/64"
pools = ["fd18:0:0:7::100-fd18:0:0:7::1ff"]
advertise = false
"#
}

/// A client namespace whose eth0 has its link-local address ready (no duplicate detection).
fn client6(net: &mut Net, name: &str, mac: &str) -> String {
    let ns = net.add_client(name, mac);
    sh(&format!("ip netns exec {ns} sysctl -qw net.ipv6.conf.eth0.accept_dad=0"));
    sh(&format!("ip -n {ns} link set eth0 down && ip -n {ns} link set eth0 up"));
    wait_link_local(net, &ns, "eth0");
    ns
}

fn wait_link_local(net: &Net, ns: &str, dev: &str) {
    wait_for(
        10,
        || format!("{ns}: no link-local address on {dev}"),
        || {
            let out = net.run(ns, &format!("ip -6 addr show dev {dev} scope link -tentative"));
            String::from_utf8_lossy(&out.stdout).contains("inet6 fe80").then_some(())
        },
    );
}

/// `dhclient -6` once in `ns` with its lease file `tag`; the variables of its BOUND6 (or
/// REBOOT6, RENEW6) hook run.
fn dhclient6(net: &Net, ns: &str, tag: &str) -> HashMap<String, String> {
    let script = hook(net, tag);
    let (lf, pf) = (net.path(&format!("{tag}.leases")), net.path(&format!("{tag}.pid")));
    let cmd = format!("timeout 60 dhclient -6 -1 -sf {script} -lf {} -pf {} eth0", lf.display(), pf.display());
    let out = net.run(ns, &cmd);
    assert!(out.status.success(), "dhclient -6 got no address: {}", String::from_utf8_lossy(&out.stderr));
    net.kill_pid_file(ns, &pf);
    let text = ["BOUND6", "REBOOT6", "RENEW6"]
        .iter()
        .find_map(|r| std::fs::read_to_string(net.path(&format!("{tag}.env.{r}"))).ok())
        .expect("dhclient ran its hook with BOUND6");
    for r in ["BOUND6", "REBOOT6", "RENEW6"] {
        let _ = std::fs::remove_file(net.path(&format!("{tag}.env.{r}")));
    }
    vars(&text)
}

/// `dig +short` from the appliance's namespace (the clients have no IPv4 address, and rackboot's
/// DNS listens on IPv4).
fn dig(net: &Net, args: &str) -> String {
    let out = net.run(&net.srv, &format!("dig +time=2 +tries=2 +short @198.18.0.1 {args}"));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn events(net: &Net, mac: &str) -> Vec<serde_json::Value> {
    net.api("GET", &format!("/machines/{mac}/events"), None)["events"].as_array().unwrap().clone()
}

#[test]
#[ignore = "e2e: needs root, ip netns, dhclient, dhcpcd, dhcrelay, perfdhcp, dig"]
fn dhcpv6_clients_relays_and_boot_urls_against_the_appliance() {
    require(&["ip", "dhclient", "dhcpcd", "dhcrelay", "perfdhcp", "dig"]);
    let mut net = Net::new("v6");
    let srv = net.srv.clone();
    sh(&format!("ip -n {srv} addr add fd18::1/64 dev br0 nodad"));
    let a = client6(&mut net, "a", "52:54:00:e6:06:01");
    let b = client6(&mut net, "b", "52:54:00:e6:06:02");
    let data = net.path("data");
    let rb = net.start_rackboot(&config(&data));
    net.api("POST", "/machines", Some(r#"{"macs":["52:54:00:e6:06:01"],"hostname":"six-a"}"#));
    net.api("POST", "/machines", Some(r#"{"macs":["52:54:00:e6:06:02"],"hostname":"six-b"}"#));

    // dhclient -6: an address from the pool, the DNS server and domain from the subnet.
    let d = dhclient6(&net, &a, "dhc");
    let a_ip: Ipv6Addr = d["new_ip6_address"].parse().unwrap();
    assert!(("fd18::100".parse::<Ipv6Addr>().unwrap()..="fd18::fff".parse().unwrap()).contains(&a_ip), "{a_ip}");
    assert_eq!(d["new_dhcp6_name_servers"], "fd18::1");
    assert_eq!(d["new_dhcp6_domain_search"].trim_end_matches('.'), "lab.rackboot.test");
    // Its machine's name has the address (AAAA) and the address the name (ip6.arpa PTR).
    let aaaa = wait_for(
        10,
        || "no AAAA for six-a".into(),
        || {
            let got = dig(&net, "AAAA six-a.lab.rackboot.test");
            (!got.is_empty()).then_some(got)
        },
    );
    assert_eq!(aaaa, a_ip.to_string());
    assert_eq!(dig(&net, &format!("-x {a_ip}")), "six-a.lab.rackboot.test.");
    assert_eq!(dig(&net, "A six-a.lab.rackboot.test"), "", "no IPv4 lease: no A");
    let kinds: Vec<String> =
        events(&net, "52:54:00:e6:06:01").iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect();
    assert!(kinds.contains(&"dhcp6.reply".to_string()), "{kinds:?}");

    // dhcpcd -6 (told by the router advertisement to use DHCPv6): another address.
    let script = hook(&net, "dcd");
    let out = net.run(&b, &format!("timeout 60 dhcpcd -6 -1 -c {script} -t 30 eth0"));
    let env = ["BOUND6", "REBOOT6", "INFORM6"]
        .iter()
        .find_map(|r| std::fs::read_to_string(net.path(&format!("dcd.env.{r}"))).ok())
        .unwrap_or_else(|| panic!("dhcpcd -6 got no address: {}", String::from_utf8_lossy(&out.stderr)));
    let b_ip: Ipv6Addr = vars(&env)
        .iter()
        .find_map(|(k, v)| {
            (k.starts_with("new_dhcp6_ia_na") && k.contains("ia_addr")).then(|| v.parse().ok()).flatten()
        })
        .unwrap_or_else(|| panic!("no IA_NA address in dhcpcd's hook:\n{env}"));
    assert_ne!(a_ip, b_ip);
    assert!(b_ip.to_string().starts_with("fd18::1"), "{b_ip}");
    net.run(&b, "dhcpcd -6 -x eth0");

    // A restart: the lease comes back from the store, and the same client gets the same address.
    assert!(net.stop(rb).success(), "rackboot exit on SIGTERM:\n{}", net.log("rackboot.log"));
    let rb = net.start_rackboot(&config(&data));
    assert_eq!(dhclient6(&net, &a, "dhc")["new_ip6_address"], a_ip.to_string(), "same address after a restart");
    // A release frees it and says so on the machine's timeline.
    let (lf, pf) = (net.path("dhc.leases"), net.path("dhc.pid"));
    let out =
        net.run(&a, &format!("timeout 30 dhclient -6 -r -sf /bin/true -lf {} -pf {} eth0", lf.display(), pf.display()));
    assert!(out.status.success(), "dhclient -6 -r: {}", String::from_utf8_lossy(&out.stderr));
    wait_for(
        10,
        || "no dhcp6.release event".into(),
        || events(&net, "52:54:00:e6:06:01").iter().any(|e| e["kind"] == "dhcp6.release").then_some(()),
    );

    boot_urls(&net, &b);
    listeners(&net, &b, &data);
    relayed(&mut net);
    perfdhcp(&net, &b);
    let metrics = net.https_get("/metrics");
    assert!(metrics.contains("rackboot_dhcp6_packets_sent_total{type=\"reply\"}"), "{metrics}");
    assert!(net.stop(rb).success());
}

/// A hand-built SOLICIT with client architecture `arch` from `ns`; option 59 and the vendor
/// class of the ADVERTISE.
fn boot_solicit(net: &Net, ns: &str, arch: u16, duid_mac: [u8; 6]) -> (String, bool) {
    net.in_ns(ns, move || {
        use rackboot::dhcp::v6::wire::{self, kind, opt};
        let s = socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::DGRAM, None).unwrap();
        s.set_reuse_address(true).unwrap();
        s.bind_device(Some(b"eth0")).unwrap();
        s.bind(&std::net::SocketAddr::from((Ipv6Addr::UNSPECIFIED, 546)).into()).unwrap();
        let s: std::net::UdpSocket = s.into();
        let mut m = vec![kind::SOLICIT, 0, 0, arch as u8];
        let mut duid = vec![0, 3, 0, 1];
        duid.extend_from_slice(&duid_mac);
        wire::put(&mut m, opt::CLIENTID, &duid);
        wire::put(&mut m, opt::IA_NA, &wire::ia_na(1, 0, 0, &[]));
        wire::put(&mut m, opt::ORO, &[0, 59]);
        wire::put(&mut m, opt::CLIENT_ARCH_TYPE, &arch.to_be_bytes());
        let index = nix::net::if_::if_nametoindex("eth0").unwrap();
        s.send_to(&m, SocketAddrV6::new("ff02::1:2".parse().unwrap(), 547, 0, index)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 1500];
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let Ok((n, _)) = s.recv_from(&mut buf) else { break };
            if buf[0] != kind::ADVERTISE || buf[3] != arch as u8 {
                continue;
            }
            let opts = wire::options(&buf[4..n]).unwrap();
            let url = opts
                .iter()
                .find(|(c, _)| *c == opt::BOOTFILE_URL)
                .map(|(_, d)| String::from_utf8_lossy(d).into_owned());
            let http = opts.iter().any(|(c, d)| *c == opt::VENDOR_CLASS && d.ends_with(b"HTTPClient"));
            return (url.unwrap_or_default(), http);
        }
        panic!("no ADVERTISE for arch {arch}")
    })
}

/// UEFI x64 PXE gets the loader over TFTP on the appliance's IPv6 address; HTTP boot gets an
/// HTTP URL and the "HTTPClient" vendor class back.
fn boot_urls(net: &Net, ns: &str) {
    let (pxe, http) = boot_solicit(net, ns, 7, [0x52, 0x54, 0, 0xe6, 0x06, 0x07]);
    assert!(pxe.starts_with("tftp://[fd18::1]/") && pxe.ends_with(".efi") && !http, "{pxe}");
    let (url, http) = boot_solicit(net, ns, 16, [0x52, 0x54, 0, 0xe6, 0x06, 0x08]);
    assert!(url.starts_with("http://[fd18::1]:8080/boot/files/") && http, "{url}");
}

/// On an IPv6-only client, every service a boot URL or DHCPv6 option names answers on the
/// appliance's IPv6 address: TFTP, HTTP (an iPXE script whose URLs stay on IPv6), HTTPS with a
/// certificate naming the address, and DNS.
fn listeners(net: &Net, ns: &str, data: &std::path::Path) {
    std::fs::write(data.join("boot/six.bin"), b"over ipv6").unwrap();
    net.run(ns, "ip addr add fd18::99/64 dev eth0 nodad");
    let get = |cmd: &str| {
        let out = net.run(ns, cmd);
        assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(get("curl -sS -g tftp://[fd18::1]/six.bin"), "over ipv6");
    assert_eq!(get("curl -sS -g http://[fd18::1]:8080/boot/files/six.bin"), "over ipv6");
    let script = get("curl -sS -g 'http://[fd18::1]:8080/boot/ipxe?mac=52:54:00:e6:06:02'");
    assert!(script.contains("http://[fd18::1]:8080/") && !script.contains("198.18.0.1"), "{script}");
    let ca = net.ca();
    let health = get(&format!("curl -sS -g --cacert {} https://[fd18::1]/healthz", ca.display()));
    assert!(health.contains("ok") || health.contains("degraded"), "{health}");
    let out = net.run(ns, "dig +time=2 +tries=2 +short @fd18::1 AAAA rackboot.lab.rackboot.test");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "fd18::1");
    net.run(ns, "ip addr del fd18::99/64 dev eth0");
}

/// A client on another link behind `dhcrelay -6 -I`: an address of that link's prefix (chosen
/// by the relay's link address), and the relay named on the machine's timeline.
fn relayed(net: &mut Net) {
    let srv = net.srv.clone();
    let r = net.add_client("r6", "52:54:00:e6:06:0a");
    sh(&format!("ip netns exec {r} sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv6.conf.eth0.accept_dad=0"));
    sh(&format!("ip -n {r} addr add fd18::2/64 dev eth0 nodad && ip -n {r} link add br1 type bridge && ip -n {r} link set br1 up"));
    sh(&format!("ip netns exec {r} sysctl -qw net.ipv6.conf.br1.accept_dad=0 && ip -n {r} addr add fd18:0:0:7::1/64 dev br1 nodad"));
    sh(&format!("ip -n {srv} route add fd18:0:0:7::/64 via fd18::2"));
    let c = net.add_client_on("c6", "52:54:00:e6:06:0c", &r, "br1");
    sh(&format!("ip netns exec {c} sysctl -qw net.ipv6.conf.eth0.accept_dad=0 && ip -n {c} link set eth0 down && ip -n {c} link set eth0 up"));
    wait_link_local(net, &c, "eth0");
    wait_link_local(net, &r, "br1");
    net.spawn(&r, &["dhcrelay", "-6", "-d", "--no-pid", "-I", "-l", "br1", "-u", "fd18::1%eth0"], "dhcrelay6.log");
    std::thread::sleep(Duration::from_secs(1));
    net.api("POST", "/machines", Some(r#"{"macs":["52:54:00:e6:06:0c"],"hostname":"six-c"}"#));
    let d = dhclient6(net, &c, "rel");
    let ip: Ipv6Addr = d["new_ip6_address"].parse().unwrap_or_else(|_| panic!("{d:?}\n{}", net.log("dhcrelay6.log")));
    assert!(ip.to_string().starts_with("fd18:0:0:7::1"), "{ip}");
    let ev = events(net, "52:54:00:e6:06:0c");
    let reply = ev.iter().rev().find(|e| e["kind"] == "dhcp6.reply").expect("a dhcp6.reply event");
    assert_eq!(reply["detail"]["relay"], "fd18:0:0:7::1");
}

/// perfdhcp -6: 1,000 four-way exchanges, each from a client of its own, each bound address distinct
/// (perfdhcp checks that itself with `-u`), every client that got its REPLY bound. perfdhcp counts
/// an answer later than its wait as a drop, so the wait is 5 s, not its 1 s: a debug build beside
/// two TCG VMs answered REQUESTs 476 ms late on average, 1.5 s at most, and a quarter of them
/// "dropped" (test run 28). How fast it answers is `bench/dhcp.sh -6`'s to measure, in a release
/// build on a quiet machine.
fn perfdhcp(net: &Net, ns: &str) {
    let out = net.run(ns, "timeout 60 perfdhcp -6 -u -l eth0 -r 200 -R 1000 -n 1000 -p 20 -d 5 all");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = |what: &str| text.lines().find(|l| l.trim_start().starts_with(what)).unwrap_or("").to_string();
    let sent: u64 = line("sent packets:").rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let recv: u64 = line("received packets:").rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(sent >= 1000 && recv * 100 >= sent * 95, "perfdhcp -6 lost answers:\n{text}");
    // The second exchange's count (REQUEST and REPLY) is the last "received packets" line.
    let replied: f64 = text
        .lines()
        .rfind(|l| l.trim_start().starts_with("received packets:"))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0);
    assert!(replied >= 950.0, "perfdhcp -6: {replied} REPLYs of 1,000:\n{text}");
    // perfdhcp's own checks (-u): no address handed to two clients, no answer without one.
    for l in text.lines().filter(|l| l.contains("non unique addresses:") || l.contains("rejected leases:")) {
        assert!(l.trim_end().ends_with(": 0"), "{l}\n{text}");
    }
    // Every client holds its address (the gauge is refreshed every 5 s).
    let in_use = || -> f64 {
        let metrics = net.https_get("/metrics");
        metrics
            .lines()
            .find(|l| l.starts_with("rackboot_dhcp6_leases_in_use "))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0.0)
    };
    wait_for(
        15,
        || format!("{replied} clients replied to, {} leases:\n{text}", in_use()),
        || (in_use() >= replied).then_some(()),
    );
}

/// kill -9 at any moment loses no address a REPLY gave: a relay (a namespace speaking
/// relay-forward, as dhcrelay does) binds clients with rapid commit while the appliance is
/// killed with SIGKILL five times; after the last restart every address a client got a REPLY
/// for is in the store, active, with that client's DUID, and no address went to two clients.
#[test]
#[ignore = "e2e: needs root, ip netns"]
fn kill_9_under_relayed_dhcpv6_load_loses_no_replied_lease() {
    require(&["ip"]);
    let mut net = Net::new("k6");
    let srv = net.srv.clone();
    sh(&format!("ip -n {srv} addr add fd18::1/64 dev br0 nodad"));
    let relay = client6(&mut net, "rl", "52:54:00:e6:06:20");
    sh(&format!("ip -n {relay} addr add fd18::2/64 dev eth0 nodad"));
    let data = net.path("data");
    let mut acked: Vec<(Vec<u8>, Ipv6Addr)> = Vec::new();
    let mut next = 0u32;
    for round in 0..5u64 {
        let rb = net.start_rackboot(&config(&data));
        let until = Duration::from_millis(400 + 250 * round);
        let (got, n) = net.in_ns(&relay, move || bind_through_relay(next, until));
        next = n;
        acked.extend(got);
        net.kill9(rb);
    }
    assert!(acked.len() >= 100, "enough addresses were given to mean something ({})", acked.len());
    net.start_rackboot(&config(&data));
    let mut stored: HashMap<Ipv6Addr, (String, bool)> = HashMap::new();
    let mut cursor = String::new();
    loop {
        let page = net.api("GET", &format!("/leases6?limit=1000{cursor}"), None);
        for l in page["leases"].as_array().unwrap() {
            let ip = l["ip"].as_str().unwrap().parse().unwrap();
            stored.insert(ip, (l["duid"].as_str().unwrap().to_string(), l["active"] == true));
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let lost: Vec<_> = acked.iter().filter(|(d, ip)| stored.get(ip) != Some(&(hex(d), true))).collect();
    let mut seen = HashSet::new();
    let doubled: Vec<_> = acked.iter().filter(|(_, ip)| !seen.insert(*ip)).collect();
    println!("5 kills, {} replied leases, {} lost, {} addresses given twice", acked.len(), lost.len(), doubled.len());
    assert!(lost.is_empty(), "replied leases lost after kill -9: {lost:?}");
    assert!(doubled.is_empty(), "addresses given to two clients: {doubled:?}");
}

/// Clients from number `from` on, each a SOLICIT with rapid commit relayed to the appliance
/// for `run`; the (DUID, address) of each REPLY that bound one, and the next client number.
fn bind_through_relay(from: u32, run: Duration) -> (Vec<(Vec<u8>, Ipv6Addr)>, u32) {
    use rackboot::dhcp::v6::wire::{self, kind, opt};
    let s = std::net::UdpSocket::bind("[fd18::2]:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let server = SocketAddrV6::new("fd18::1".parse().unwrap(), 547, 0, 0);
    let (mut out, mut n) = (Vec::new(), from);
    let until = Instant::now() + run;
    let mut buf = [0u8; 1500];
    while Instant::now() < until {
        n += 1;
        let duid = [0, 3, 0, 1, 0x52, 0x54, 0x6b, (n >> 16) as u8, (n >> 8) as u8, n as u8];
        let xid = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        let mut m = vec![kind::SOLICIT, xid[0], xid[1], xid[2]];
        wire::put(&mut m, opt::CLIENTID, &duid);
        wire::put(&mut m, opt::IA_NA, &wire::ia_na(1, 0, 0, &[]));
        wire::put(&mut m, opt::RAPID_COMMIT, &[]);
        let mut fwd = vec![kind::RELAY_FORW, 0];
        fwd.extend_from_slice(&"fd18::2".parse::<Ipv6Addr>().unwrap().octets());
        fwd.extend_from_slice(&"fe80::5054:6bff:fe00:1".parse::<Ipv6Addr>().unwrap().octets());
        wire::put(&mut fwd, opt::INTERFACE_ID, b"eth7");
        wire::put(&mut fwd, opt::RELAY_MSG, &m);
        if s.send_to(&fwd, server).is_err() {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let Ok((len, _)) = s.recv_from(&mut buf) else { continue };
        // relay-reply -> relay-msg -> REPLY -> IA_NA -> IAADDR.
        let Some(outer) = wire::options(buf.get(34..len).unwrap_or_default()) else { continue };
        let Some((_, inner)) = outer.iter().find(|(c, _)| *c == opt::RELAY_MSG) else { continue };
        if inner.len() < 4 || inner[0] != kind::REPLY || inner[1..4] != xid {
            continue;
        }
        let opts = wire::options(&inner[4..]).unwrap();
        let Some((_, ia)) = opts.iter().find(|(c, _)| *c == opt::IA_NA) else { continue };
        let inner_ia = wire::options(&ia[12..]).unwrap();
        if let Some((_, a)) = inner_ia.iter().find(|(c, _)| *c == opt::IAADDR) {
            let ip: [u8; 16] = a[..16].try_into().unwrap();
            out.push((duid.to_vec(), Ipv6Addr::from(ip)));
        }
    }
    (out, n)
}
