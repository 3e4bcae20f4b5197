//! The last-resort network end to end, G8OS's promise: on a segment where no DHCP server
//! answers, the real BootOS agent (`rackboot-agent` in bootos mode, in a namespace of its own)
//! gives up on DHCP, takes an address on the fallback network after probing it with ARP (busybox
//! `arping -D`), finds the appliance at `.254` (which rackboot added to its interface) and
//! enrolls there over TLS. Two nodes started together end on different addresses; a third told
//! to try the first one's address hears it answered and chooses again. When rackboot stops, its
//! fallback address is gone.

use std::path::Path;

use crate::netns::{require, wait_for, Net};

const MACS: [&str; 3] = ["52:54:00:fb:00:01", "52:54:00:fb:00:02", "52:54:00:fb:00:03"];

/// The node's IPv4 address on the fallback network, once it has one.
fn fallback_addr(net: &Net, ns: &str) -> Option<String> {
    let out = net.run(ns, "ip -4 -o addr show dev eth0");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace().find(|w| w.starts_with("10.254.254.")).map(|w| w.split('/').next().unwrap().to_string())
}

#[test]
#[ignore = "e2e: needs root, ip netns, udhcpc, busybox (arping)"]
fn a_node_without_dhcp_finds_the_appliance_on_the_fallback_network() {
    require(&["ip", "udhcpc", "busybox"]);
    let agent = Path::new(env!("CARGO_BIN_EXE_rackboot")).with_file_name("rackboot-agent");
    if !agent.exists() {
        eprintln!("SKIP: {} is not built (cargo build -p rackboot-agent)", agent.display());
        return;
    }
    let mut net = Net::new("fb");
    let nodes: Vec<String> = MACS.iter().enumerate().map(|(i, m)| net.add_client(&format!("n{i}"), m)).collect();
    let data = net.path("data");
    // No DHCP on the segment at all; the appliance answers on the fallback network too.
    let config = format!(
        "[server]\ndata_dir = \"{}\"\ninterface = \"br0\"\nfallback_network = \"10.254.254.0/24\"\n\
         [http]\nlisten = \"198.18.0.1:8080\"\n[dhcp]\nmode = \"off\"\n",
        data.display()
    );
    let rackboot = net.start_rackboot(&config);
    let shown = String::from_utf8_lossy(&net.run(&net.srv, "ip -4 -o addr show dev br0").stdout).into_owned();
    assert!(shown.contains("10.254.254.254/24"), "the appliance answers at .254: {shown}");

    // busybox's arping, as BootOS has it.
    let bin = net.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/usr/bin/busybox", bin.join("arping")).unwrap();
    let start = |net: &mut Net, i: usize, extra: &str| {
        let cmd = format!(
            "PATH={}:$PATH exec {} --url https://198.18.0.1 --ca {} --mode bootos --state-dir {} \
             --udhcpc-script /bin/true --interfaces eth0 {extra}",
            bin.display(),
            agent.display(),
            net.ca().display(),
            net.path(&format!("state{i}")).display()
        );
        let ns = nodes[i].clone();
        net.spawn(&ns, &["sh", "-c", &cmd], &format!("agent{i}.log"))
    };
    let enrolled = |net: &Net, i: usize| -> Option<String> {
        let agent = net.try_api("GET", &format!("/machines/{}/agent", MACS[i]))?;
        agent["enrolled_from"].as_str().map(str::to_string)
    };

    // Two nodes at once: each gives up on DHCP, falls back, enrolls from its own address.
    start(&mut net, 0, "");
    start(&mut net, 1, "");
    let mut addrs = Vec::new();
    for (i, ns) in nodes.iter().enumerate().take(2) {
        let from = wait_for(90, || net.log(&format!("agent{i}.log")), || enrolled(&net, i));
        let held = fallback_addr(&net, ns).expect("a fallback address");
        assert_eq!(from, held, "node {i} enrolled from its fallback address");
        assert!(net.log(&format!("agent{i}.log")).contains("network up (fallback)"));
        addrs.push(held);
    }
    assert_ne!(addrs[0], addrs[1], "two nodes, two addresses");

    // A third, told to take the first one's address, hears it answered and chooses another.
    start(&mut net, 2, &format!("--fallback-ip {}", addrs[0]));
    let from = wait_for(90, || net.log("agent2.log"), || enrolled(&net, 2));
    assert!(!addrs.contains(&from), "the third node chose a free address: {from} among {addrs:?}");
    assert!(net.log("agent2.log").contains("in use by another node"), "{}", net.log("agent2.log"));
    println!("fallback addresses: {addrs:?} and {from}");

    // Stopped, the appliance leaves the fallback network.
    net.stop(rackboot);
    let shown = String::from_utf8_lossy(&net.run(&net.srv, "ip -4 -o addr show dev br0").stdout).into_owned();
    assert!(!shown.contains("10.254.254.254"), "removed at stop: {shown}");
}
