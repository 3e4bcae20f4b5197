//! A DHCP pair behind a relay, with real clients, on one PostgreSQL CMDB (a throwaway cluster
//! from Debian's package on a Unix socket):
//!
//! ```text
//!  appliance A (primary)  198.18.0.1 ─┐
//!  appliance B (standby)  198.18.0.2 ─┤ br0      relay 198.18.0.3 ── br1 198.18.4.1/22 ── dhclient × 6
//!                                     └──────── (ISC dhcrelay to both) ──────────────────── perfdhcp
//! ```
//!
//! Six ISC dhclients bind through the relay, perfdhcp keeps relayed load on, and A is killed
//! with SIGKILL in the middle of it. Then: B answered within the documented time (one beat
//! plus takeover_secs after the primary's last beat), every lease a client got an ACK for (from
//! either appliance, read off the wire at the relay) is held in the store by that client's MAC,
//! no address was given to two clients, and every dhclient renewing through the failover keeps
//! its address (dhcrelay relays their unicast RENEWs to both members, so B answers at T1).
//! A comes back, B hands back, and a new client gets a fresh address from A.
//!
//! Needs root, PostgreSQL's server binaries, dhcrelay, dhclient and perfdhcp: `#[ignore]`d, run
//! by the README's test command with `--include-ignored`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, FromRawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::netns::{require, sh, wait_for, Net};
use dhcproto::v4::{DhcpOption, Message, MessageType, Opcode, OptionCode};
use dhcproto::{Decodable, Decoder};

const TAKEOVER_SECS: u64 = 2;
const LEASE_SECS: u64 = 60;
const A: &str = "198.18.0.1";
const B: &str = "198.18.0.2";

fn config(net: &Net, name: &str, ip: &str, ifname: &str, role: &str, pg: &crate::pg::Cluster) -> String {
    format!(
        r#"
[server]
data_dir = "{data}"
interface = "{ifname}"
[http]
listen = "{ip}:8080"
[dhcp]
mode = "full"
[[dhcp.subnets]]
cidr = "198.18.4.0/22"
pools = ["198.18.4.10-198.18.7.250"]
routers = ["198.18.4.1"]
lease_secs = {LEASE_SECS}
[dhcp.pair]
name = "vlan-e2e"
role = "{role}"
takeover_secs = {TAKEOVER_SECS}
{store}"#,
        data = net.path(name).display(),
        store = pg.store()
    )
}

/// Starts appliance `name` in namespace `ns` and waits for its HTTP listener (/healthz answers
/// 503 here: the lab serves no boot assets).
fn start(net: &mut Net, ns: &str, name: &str, ip: &str, config: &str) -> usize {
    let file = net.path(&format!("{name}.toml"));
    std::fs::write(&file, config).unwrap();
    let bin = env!("CARGO_BIN_EXE_rackboot");
    let idx = net.spawn(ns, &[bin, "serve", "--config", file.to_str().unwrap()], &format!("{name}.log"));
    wait_for(
        20,
        || format!("appliance {name} did not come up:\n{}", net.log(&format!("{name}.log"))),
        || net.run(ns, &format!("curl -s -o /dev/null http://{ip}:8080/healthz")).status.success().then_some(()),
    );
    idx
}

/// Calls appliance `name`'s HTTPS API (or `/metrics`) as admin from namespace `ns`.
fn get(net: &Net, ns: &str, name: &str, ip: &str, path: &str) -> Option<String> {
    let token = std::fs::read_to_string(net.path(&format!("{name}/admin.token"))).ok()?;
    let auth = net.path(&format!("{name}.auth"));
    // The token goes to curl in a header file, not on its command line.
    std::fs::write(&auth, format!("authorization: Bearer {}\n", token.trim())).unwrap();
    let ca = net.path(&format!("{name}/tls/ca.pem"));
    let out = net.run(ns, &format!("curl -sf --cacert {} -H @{} https://{ip}{path}", ca.display(), auth.display()));
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn pair_active(net: &Net, ns: &str, name: &str, ip: &str) -> Option<bool> {
    let text = get(net, ns, name, ip, "/metrics")?;
    text.lines().find_map(|l| l.strip_prefix("rackboot_dhcp_pair_active ")).map(|v| v.trim() == "1")
}

/// One DHCP reply heard on the wire.
#[derive(Debug, Clone)]
struct Reply {
    at: SystemTime,
    kind: MessageType,
    mac: String,
    ip: Ipv4Addr,
    server: Ipv4Addr,
}

/// Decodes a BOOTREPLY from an Ethernet frame (IPv4, UDP from port 67).
fn reply(frame: &[u8], at: SystemTime) -> Option<Reply> {
    let ip = frame.get(14..).filter(|_| frame[12..14] == [0x08, 0x00])?;
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    let udp = ip.get(ihl..).filter(|_| ip[9] == 17)?;
    if udp.get(0..2)? != [0, 67] {
        return None;
    }
    let m = Message::decode(&mut Decoder::new(udp.get(8..)?)).ok()?;
    if m.opcode() != Opcode::BootReply {
        return None;
    }
    let kind = match m.opts().get(OptionCode::MessageType)? {
        DhcpOption::MessageType(t) => *t,
        _ => return None,
    };
    let server = match m.opts().get(OptionCode::ServerIdentifier) {
        Some(DhcpOption::ServerIdentifier(s)) => *s,
        _ => Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
    };
    let mac = m.chaddr()[..6].iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
    Some(Reply { at, kind, mac, ip: m.yiaddr(), server })
}

/// Records every DHCP reply arriving on `ifname` in namespace `ns` (a packet socket, as tcpdump
/// would open) until `stop` is set.
fn sniff(ns: &str, ifname: &'static str, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Reply>> {
    use nix::libc;
    let path = Path::new("/run/netns").join(ns);
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let netns = File::open(&path).unwrap();
        nix::sched::setns(netns.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        let proto = (libc::ETH_P_IP as u16).to_be();
        // SAFETY: a plain socket(2) call; the descriptor is owned by `sock` from here on.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
        assert!(fd >= 0, "packet socket: {}", std::io::Error::last_os_error());
        let mut sock = unsafe { socket2::Socket::from_raw_fd(fd) };
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value to fill in.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = nix::net::if_::if_nametoindex(ifname).unwrap() as i32;
        let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `sll` is a valid sockaddr_ll of `len` bytes for the duration of the call.
        let rc = unsafe { libc::bind(fd, (&sll as *const libc::sockaddr_ll).cast(), len) };
        assert_eq!(rc, 0, "bind to {ifname}: {}", std::io::Error::last_os_error());
        sock.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        ready_tx.send(()).unwrap();
        let (mut buf, mut seen) = ([0u8; 2048], Vec::new());
        while !stop.load(Ordering::Relaxed) {
            if let Ok(n) = sock.read(&mut buf) {
                seen.extend(reply(&buf[..n], SystemTime::now()));
            }
        }
        seen
    });
    ready.recv().expect("the sniffer is listening");
    handle
}

/// A dhclient hook that logs `<unix time> <reason> <address> <server id>` per event and
/// configures the address and default route, as dhclient-script would.
fn hook(net: &Net, name: &str) -> String {
    let script = net.path(&format!("{name}.hook"));
    let events = net.path(&format!("{name}.events"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$(date +%s.%N) $reason $new_ip_address $new_dhcp_server_identifier\" >> {}\n\
             case $reason in BOUND|RENEW|REBIND|REBOOT)\n  ip addr flush dev $interface\n  \
             ip addr add $new_ip_address/22 dev $interface\n  ip route replace default via $new_routers;;\nesac\n",
            events.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script.display().to_string()
}

/// `(unix time, reason, address, server)` per event a client's hook logged.
fn events(net: &Net, name: &str) -> Vec<(f64, String, String, String)> {
    net.log(&format!("{name}.events"))
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Some((f.first()?.parse().ok()?, f.get(1)?.to_string(), f.get(2)?.to_string(), f.get(3)?.to_string()))
        })
        .collect()
}

/// Runs dhclient in `ns` until it is bound (it stays in the background to renew); returns the
/// address and the server that gave it.
fn bind(net: &Net, ns: &str, name: &str) -> (String, String) {
    let script = hook(net, name);
    let (lf, pf) = (net.path(&format!("{name}.leases")), net.path(&format!("{name}.pid")));
    let cmd = format!("timeout 60 dhclient -4 -1 -sf {script} -lf {} -pf {} eth0", lf.display(), pf.display());
    let out = net.run(ns, &cmd);
    assert!(out.status.success(), "dhclient {name} got no lease: {}", String::from_utf8_lossy(&out.stderr));
    let (_, _, ip, server) = events(net, name).into_iter().rfind(|e| e.1 == "BOUND").expect("a BOUND event");
    (ip, server)
}

/// Every lease record in the store, read through appliance `name`'s API: ip -> (mac, held now).
fn leases(net: &Net, ns: &str, name: &str, ip: &str) -> BTreeMap<Ipv4Addr, (String, bool)> {
    let (mut all, mut cursor) = (BTreeMap::new(), String::new());
    loop {
        let page = get(net, ns, name, ip, &format!("/api/v1/leases?limit=1000{cursor}")).expect("GET /leases");
        let page: serde_json::Value = serde_json::from_str(&page).unwrap();
        for l in page["leases"].as_array().unwrap() {
            let addr = l["ip"].as_str().unwrap().parse().unwrap();
            all.insert(addr, (l["mac"].as_str().unwrap().to_string(), l["active"].as_bool().unwrap()));
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return all,
        }
    }
}

fn secs(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64()
}

#[test]
#[ignore = "e2e: needs root, ip netns, PostgreSQL, dhcrelay, dhclient, perfdhcp, curl"]
fn a_dhcp_pair_behind_a_relay_survives_kill_9_of_the_primary_under_load() {
    require(&["ip", "dhcrelay", "dhclient", "perfdhcp", "curl"]);
    let Some(pg) = crate::pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };

    // The lab: A in the namespace holding br0, B and the relay plugged into it; the clients'
    // segment br1 lives in the relay's namespace, routed.
    let mut net = Net::new("pr");
    let srv = net.srv.clone();
    let b_ns = net.add_client("b", "52:54:00:0b:00:02");
    let relay = net.add_client("r", "52:54:00:0b:00:03");
    sh(&format!(
        "ip -n {b_ns} addr add {B}/24 dev eth0 && ip -n {relay} addr add 198.18.0.3/24 dev eth0 && \
         ip -n {relay} link add br1 type bridge && ip -n {relay} link set br1 up && \
         ip -n {relay} addr add 198.18.4.1/22 dev br1 && ip netns exec {relay} sysctl -qw net.ipv4.ip_forward=1 && \
         ip -n {srv} route add 198.18.4.0/22 via 198.18.0.3 && ip -n {b_ns} route add 198.18.4.0/22 via 198.18.0.3"
    ));
    let a_cfg = config(&net, "a", A, "br0", "primary", &pg);
    let a = start(&mut net, &srv, "a", A, &a_cfg);
    let b_cfg = config(&net, "b", B, "eth0", "standby", &pg);
    start(&mut net, &b_ns, "b", B, &b_cfg);
    wait_for(
        10,
        || "pair roles did not settle".into(),
        || (pair_active(&net, &srv, "a", A)? && !pair_active(&net, &b_ns, "b", B)?).then_some(()),
    );

    // Everything the appliances answer, as the relay receives it; then the relay itself.
    let stop = Arc::new(AtomicBool::new(false));
    let sniffer = sniff(&relay, "eth0", stop.clone());
    net.spawn(&relay, &["dhcrelay", "-4", "-d", "-i", "br1", "-iu", "eth0", A, B], "dhcrelay.log");

    // Six dhclients bind through the relay, all from the primary.
    let mut bound = Vec::new();
    for i in 1..=6 {
        let name = format!("c{i}");
        let ns = net.add_client_on(&name, &format!("52:54:00:cc:00:{i:02x}"), &relay, "br1");
        let (ip, server) = bind(&net, &ns, &name);
        assert_eq!(server, A, "{name} bound from the primary");
        bound.push((name, ip));
    }
    let ips: HashSet<_> = bound.iter().map(|b| &b.1).collect();
    assert_eq!(ips.len(), bound.len(), "two dhclients got one address: {bound:?}");

    // perfdhcp keeps relayed load on (300 clients, 40 exchanges/s, 16 s); A dies in the middle.
    let load = net.add_client_on("load", "52:54:00:cc:01:00", &relay, "br1");
    sh(&format!("ip -n {load} addr add 198.18.4.2/22 dev eth0 && ip -n {load} route add default via 198.18.4.1"));
    let perf = net.spawn(&load, &["perfdhcp", "-4", "-l", "eth0", "-r", "40", "-R", "300", "-p", "16"], "perfdhcp.log");
    std::thread::sleep(Duration::from_secs(5));
    net.kill9(a);
    let killed = SystemTime::now();
    wait_for(
        TAKEOVER_SECS + 5,
        || "the standby never took over".into(),
        || pair_active(&net, &b_ns, "b", B).filter(|a| *a),
    );
    println!("the standby reports itself active {:.1} s after kill -9", secs(SystemTime::now()) - secs(killed));
    let deadline = Instant::now() + Duration::from_secs(30);
    while net.exited(perf).is_none() {
        assert!(Instant::now() < deadline, "perfdhcp did not finish:\n{}", net.log("perfdhcp.log"));
        std::thread::sleep(Duration::from_millis(200));
    }
    let perf_out = net.log("perfdhcp.log");
    println!("{perf_out}");
    assert_eq!(perf_out.matches("non unique addresses: 0").count(), 2, "perfdhcp saw an address twice");
    let acked: u64 = perf_out
        .split("REQUEST-ACK")
        .nth(1)
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("received packets: ")))
        .and_then(|n| n.trim().parse().ok())
        .expect("perfdhcp's REQUEST-ACK figures");
    assert!(acked >= 100, "perfdhcp got too few ACKs to mean anything ({acked})");

    // What the appliances answered. The standby was silent until the kill, and its first ACK
    // came within the documented time (takeover_secs + 1 s after the last beat, plus one beat).
    let check = |replies: &[Reply]| {
        let acks: Vec<&Reply> = replies.iter().filter(|r| r.kind == MessageType::Ack).collect();
        let from_b: Vec<&&Reply> = acks.iter().filter(|r| r.server.to_string() == B).collect();
        assert!(from_b.iter().all(|r| r.at >= killed), "the standby answered while the primary was alive");
        let first = from_b.first().expect("the standby ACKed after the kill");
        let took = first.at.duration_since(killed).unwrap();
        println!(
            "first ACK from the standby {:.2} s after kill -9 (takeover_secs = {TAKEOVER_SECS}); {} ACKs from A, {} from B, {} NAKs",
            took.as_secs_f64(),
            acks.len() - from_b.len(),
            from_b.len(),
            replies.iter().filter(|r| r.kind == MessageType::Nak).count()
        );
        assert!(took <= Duration::from_secs(TAKEOVER_SECS + 2), "takeover took {took:?}");
        // Every ACK in wire order: the address was not held by another client at that moment
        // (ACKed to it within the lease time, and that client not moved on to another address).
        let mut holder: HashMap<Ipv4Addr, (&str, SystemTime)> = HashMap::new();
        let mut holds: HashMap<&str, Ipv4Addr> = HashMap::new();
        for r in &acks {
            if let Some((other, until)) = holder.get(&r.ip) {
                assert!(*other == r.mac || r.at >= *until, "{} ACKed to {} while {other} held it", r.ip, r.mac);
            }
            if let Some(old) = holds.insert(r.mac.as_str(), r.ip).filter(|old| *old != r.ip) {
                holder.remove(&old);
            }
            holder.insert(r.ip, (r.mac.as_str(), r.at + Duration::from_secs(LEASE_SECS)));
        }
        let latest: HashMap<&str, &Reply> = acks.iter().map(|r| (r.mac.as_str(), *r)).collect();
        latest.into_iter().map(|(m, r)| (m.to_string(), r.ip)).collect::<HashMap<String, Ipv4Addr>>()
    };
    let replies_now = {
        stop.store(true, Ordering::Relaxed);
        sniffer.join().unwrap()
    };
    let latest = check(&replies_now);
    let store = leases(&net, &b_ns, "b", B);
    let missing: Vec<_> = latest
        .iter()
        .filter(|(mac, ip)| store.get(ip).is_none_or(|(m, held)| m != *mac || !held))
        .map(|(mac, ip)| format!("{mac} -> {ip}: {:?}", store.get(ip)))
        .collect();
    println!("{} clients ACKed, {} lease records in the store", latest.len(), store.len());
    assert!(missing.is_empty(), "ACKed leases not held in the store: {missing:?}");

    // Every dhclient renews through the failover and keeps its address: its unicast RENEW to A
    // goes through the relay's router, and dhcrelay relays it to both members, so B answers.
    for (name, ip) in &bound {
        let rebound = wait_for(
            LEASE_SECS + 15,
            || format!("{name} never renewed: {:?}", events(&net, name)),
            || {
                events(&net, name)
                    .into_iter()
                    .find(|e| e.0 > secs(killed) && matches!(e.1.as_str(), "RENEW" | "REBIND"))
            },
        );
        println!(
            "{name}: {} {} from {} {:.1} s after kill -9",
            rebound.1,
            rebound.2,
            rebound.3,
            rebound.0 - secs(killed)
        );
        assert_eq!((&rebound.2, rebound.3.as_str()), (ip, B), "{name} rebinding through the standby: {rebound:?}");
    }

    // A comes back; B hands back; a new client gets an address nobody holds, from A.
    start(&mut net, &srv, "a", A, &a_cfg);
    wait_for(
        10,
        || "the standby did not hand back".into(),
        || (pair_active(&net, &srv, "a", A)? && !pair_active(&net, &b_ns, "b", B)?).then_some(()),
    );
    let ns = net.add_client_on("c9", "52:54:00:cc:00:09", &relay, "br1");
    let (ip, server) = bind(&net, &ns, "c9");
    assert_eq!(server, A, "the new client was served by the primary after hand-back");
    let ip: Ipv4Addr = ip.parse().unwrap();
    assert!(!latest.values().any(|held| *held == ip), "{ip} was already held");
    let store = leases(&net, &srv, "a", A);
    let held: Vec<_> = store.values().filter(|(_, held)| *held).map(|(m, _)| m).collect();
    let distinct: HashSet<_> = held.iter().collect();
    assert_eq!(distinct.len(), held.len(), "a client holds two addresses in the store");
}
