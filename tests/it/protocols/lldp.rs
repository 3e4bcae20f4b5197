//! LLDP as a switch sends it, from Debian's lldpd on the "switch" side of a veth pair (network
//! namespaces), heard with a raw socket on the node side and parsed by BootOS's reader, then
//! reported by an agent to the appliance, which places the machine in the rack whose switch
//! and port the frame names, in each of lldpd's port id subtypes:
//!
//! | lldpd configuration | chassis id | port id | port description | the rack's form |
//! |---|---|---|---|---|
//! | `portidsubtype ifname` | MAC (4) | `vswp5` (5, interface name) | `vswp5` | `vswp5 -> U5` |
//! | `portidsubtype macaddress` | MAC (4) | the port's MAC (3) | `vswp5` | `vswp5 -> U6` |
//! | an interface alias, `chassisid leaf-chassis-9` | `leaf-chassis-9` (7, local) | `vswp5` (5) | `Ethernet5` (the alias) | `Ethernet5 -> U7`, chassis id |
//! | `ports vswp5 lldp portidsubtype local Gi1/0/5` | `leaf-chassis-9` (7) | `Gi1/0/5` (7, local) | `Ethernet5` | `GigabitEthernet1/0/5 -> U8` |

use std::io::Read;
use std::time::{Duration, Instant};

use hyper::Method;
use rackboot_agent::wire::LldpNeighbor;
use serde_json::{json, Value};

use crate::common::appliance::Appliance;
use crate::netns::{require, sh, Net};

/// The first LLDP frame on `eth0` in namespace `ns` that `wanted` takes, within 20 s.
fn hear(ns: &str, wanted: impl Fn(&LldpNeighbor) -> bool + Send + 'static) -> LldpNeighbor {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let f = std::fs::File::open(path).unwrap();
        nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        use socket2::{Domain, Protocol, SockAddr, Socket, Type};
        let sock = Socket::new(Domain::PACKET, Type::RAW, Some(Protocol::from(i32::from(0x88ccu16.to_be())))).unwrap();
        let ifindex = nix::net::if_::if_nametoindex("eth0").unwrap();
        let addr = unsafe {
            SockAddr::try_init(|storage, len| {
                let ll = storage.cast::<nix::libc::sockaddr_ll>();
                (*ll).sll_family = nix::libc::AF_PACKET as u16;
                (*ll).sll_protocol = 0x88ccu16.to_be();
                (*ll).sll_ifindex = ifindex as i32;
                *len = std::mem::size_of::<nix::libc::sockaddr_ll>() as u32;
                Ok(())
            })
        }
        .unwrap()
        .1;
        sock.bind(&addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let (deadline, mut seen, mut buf) = (Instant::now() + Duration::from_secs(20), Vec::new(), [0u8; 2048]);
        while Instant::now() < deadline {
            let Ok(n) = (&sock).read(&mut buf) else { continue };
            match rackboot_agent::lldp::parse(&buf[..n], "eth0") {
                Some(neighbour) if wanted(&neighbour) => return neighbour,
                Some(neighbour) => seen.push(neighbour),
                None => {}
            }
        }
        panic!("no such LLDP frame within 20 s; heard {seen:#?}");
    })
    .join()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "e2e: needs root, ip netns and lldpd"]
async fn lldpd_in_each_port_id_subtype_places_the_machine_it_is_cabled_to() {
    require(&["ip", "lldpd", "lldpcli"]);
    let a = Appliance::start("").await;
    let mut net = Net::new("ll");
    let node = net.add_client("swp5", "52:54:00:11:00:05");
    let srv = net.srv.clone();
    // lldpd's control socket must be reachable by its unprivileged half.
    let dir = net.dir.path().to_path_buf();
    sh(&format!("chmod 755 {}", dir.display()));
    let sock = dir.join("lldpd.socket").display().to_string();
    std::fs::write(
        dir.join("lldpd.conf"),
        "configure lldp tx-interval 1\nconfigure system hostname leaf1\nconfigure lldp portidsubtype ifname\n",
    )
    .unwrap();
    let conf = dir.join("lldpd.conf").display().to_string();
    net.spawn(&srv, &["lldpd", "-d", "-u", &sock, "-O", &conf, "-I", "vswp5"], "lldpd.log");
    let lldpcli = |args: &str| sh(&format!("ip netns exec {srv} lldpcli -u {sock} {args}"));

    let racks = [
        json!({"name": "r1", "switch": {"lldp_chassis_name": "leaf1"}, "ports": ["vswp5 -> U5"], "trust_lldp": true}),
        json!({"name": "r2", "switch": {"lldp_chassis_name": "leaf2"}, "ports": ["vswp5 -> U6"], "trust_lldp": true}),
        json!({"name": "r3", "switch": {"lldp_chassis_id": "leaf-chassis-9"}, "ports": ["Ethernet5 -> U7"], "trust_lldp": true}),
        json!({"name": "r4", "switch": {"lldp_chassis_id": "leaf-chassis-10"}, "ports": ["GigabitEthernet1/0/5 -> U8"], "trust_lldp": true}),
    ];
    // Every host on these test VLANs is ours: a node's LLDP report alone places it.
    for r in racks {
        a.api.ok(Method::POST, "/racks", Some(r)).await.unwrap();
    }

    // ifname: the interface name as the port id.
    let n = hear(&node, |n| n.system_name.as_deref() == Some("leaf1"));
    assert_eq!(n.port_id, "vswp5", "{n:?}");
    assert_eq!(n.chassis_id.len(), 17, "a MAC: {n:?}");
    placed(&a, "52:54:00:11:00:01", n, "r1", 5).await;

    // macaddress: the port's MAC as the port id, its name in the description.
    lldpcli("configure lldp portidsubtype macaddress");
    lldpcli("configure system hostname leaf2");
    let link = String::from_utf8(sh(&format!("ip -n {srv} -br link show vswp5")).stdout).unwrap();
    let vswp5_mac = link.split_whitespace().nth(2).unwrap().to_string();
    let n = hear(&node, |n| n.system_name.as_deref() == Some("leaf2") && n.port_id.contains(':'));
    assert_eq!((n.port_id.as_str(), n.port_description.as_deref()), (vswp5_mac.as_str(), Some("vswp5")), "{n:?}");
    placed(&a, "52:54:00:11:00:02", n, "r2", 6).await;

    // An interface alias (the description) and a chassis id of the operator's (local).
    sh(&format!("ip -n {srv} link set vswp5 alias Ethernet5"));
    lldpcli("configure lldp portidsubtype ifname");
    lldpcli("configure system chassisid leaf-chassis-9");
    lldpcli("configure system hostname leaf3");
    let n = hear(&node, |n| n.chassis_id == "leaf-chassis-9" && n.system_name.as_deref() == Some("leaf3"));
    assert_eq!(n.port_description.as_deref(), Some("Ethernet5"), "the alias: {n:?}");
    assert_eq!(n.port_id, "vswp5", "{n:?}");
    placed(&a, "52:54:00:11:00:03", n, "r3", 7).await;

    // local: a port id of the operator's, Cisco's short form matching the long one written.
    lldpcli("configure system chassisid leaf-chassis-10");
    lldpcli("configure system hostname leaf4");
    lldpcli("configure ports vswp5 lldp portidsubtype local Gi1/0/5");
    let n = hear(&node, |n| n.chassis_id == "leaf-chassis-10" && n.port_id == "Gi1/0/5");
    placed(&a, "52:54:00:11:00:04", n, "r4", 8).await;
}

/// An agent for `mac` reports `n` as heard; the machine is placed in `rack` at `slot`.
async fn placed(a: &Appliance, mac: &str, n: LldpNeighbor, rack: &str, slot: u64) {
    let work = tempfile::tempdir().unwrap();
    let (agent, heard) = a.agent_with_lldp(mac, work.path()).await;
    heard(n.clone());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let m: Value = a.api.call(Method::GET, &format!("/machines/{mac}"), None).await.unwrap().1;
        if m["rack"] == rack && m["slot"] == slot {
            break;
        }
        assert!(Instant::now() < deadline, "{n:?} did not place {mac} in {rack} U{slot}: {m}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    agent.abort();
}
