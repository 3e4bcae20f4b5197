//! End-to-end DNS with real peers in network namespaces: clients take leases from rackboot with
//! ISC dhclient (a reserved, named machine) and udhcpc (an unknown machine sending its own
//! hostname), then `dig` resolves them through the name server DHCP handed out: forward and
//! reverse, over UDP and TCP, NXDOMAIN in the zone, REFUSED outside it, no zone transfer.
//!
//! Needs root, dhclient, udhcpc and dig, so it is `#[ignore]`d; the README's test command runs it.

use crate::netns::{full_config, require, wait_for, Net};

/// `dig +short` from `ns`; the answer lines.
fn dig(net: &Net, ns: &str, args: &str) -> Vec<String> {
    let out = net.run(ns, &format!("dig +time=2 +tries=2 +short {args}"));
    assert!(out.status.success(), "dig {args}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

/// The status dig reports (NOERROR, NXDOMAIN, REFUSED, ...).
fn status(net: &Net, ns: &str, args: &str) -> String {
    let out = net.run(ns, &format!("dig +time=2 +tries=2 {args}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("status:")).unwrap_or_else(|| panic!("dig {args}:\n{text}"));
    line.split("status: ").nth(1).unwrap().split(',').next().unwrap().to_string()
}

#[test]
#[ignore = "e2e: needs root, ip netns, dhclient, udhcpc, dig"]
fn dhcp_clients_resolve_each_other_through_rackboot() {
    require(&["ip", "dhclient", "udhcpc", "dig", "curl"]);
    let mut net = Net::new("dn");
    let a = net.add_client("dna", "52:54:00:e5:00:01");
    let b = net.add_client("dnb", "52:54:00:e5:00:02");
    let data = net.path("data");
    net.start_rackboot(&full_config(&data));
    net.api(
        "POST",
        "/machines",
        Some(r#"{"macs":["52:54:00:e5:00:01"],"hostname":"node-a","reserved_ip":"198.18.0.60"}"#),
    );

    // dhclient: the reserved address, and rackboot as the name server with our domain.
    let lf = net.path("a.leases");
    let out = net.run(
        &a,
        &format!(
            "timeout 60 dhclient -4 -1 -lf {} -pf {} -sf /bin/true eth0",
            lf.display(),
            net.path("a.pid").display()
        ),
    );
    assert!(out.status.success(), "dhclient: {}", String::from_utf8_lossy(&out.stderr));
    net.kill_pid_file(&a, &net.path("a.pid"));
    let leases = std::fs::read_to_string(&lf).unwrap();
    assert!(leases.contains("fixed-address 198.18.0.60;"), "{leases}");
    assert!(leases.contains("option domain-name-servers 198.18.0.1;"), "{leases}");
    assert!(leases.contains("option domain-name \"lab.rackboot.test\";"), "{leases}");
    net.run(&a, "ip addr add 198.18.0.60/24 dev eth0");

    // udhcpc for an unknown machine that names itself.
    let script = net.path("udhcpc.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n[ \"$1\" = bound ] && ip addr add $ip/24 dev $interface && echo $ip > $0.ip\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out =
        net.run(&b, &format!("timeout 60 udhcpc -i eth0 -f -n -q -t 5 -T 2 -x hostname:pxe-b -s {}", script.display()));
    assert!(out.status.success(), "udhcpc: {}", String::from_utf8_lossy(&out.stderr));
    let b_ip = std::fs::read_to_string(net.path("udhcpc.sh.ip")).unwrap().trim().to_string();

    // From each client, through the server DHCP gave them.
    let srv = "@198.18.0.1";
    assert_eq!(dig(&net, &b, &format!("{srv} node-a.lab.rackboot.test A")), ["198.18.0.60"]);
    assert_eq!(dig(&net, &b, &format!("{srv} -x 198.18.0.60")), ["node-a.lab.rackboot.test."]);
    // A name a lease brought is in the zone once the lease's write has reached the index (a
    // moment after the ACK: it flaked with the VM lane busy beside this test).
    wait_for(
        10,
        || "pxe-b.lab.rackboot.test is not answered".into(),
        || (dig(&net, &a, &format!("{srv} pxe-b.lab.rackboot.test")) == [b_ip.as_str()]).then_some(()),
    );
    assert_eq!(dig(&net, &a, &format!("{srv} -x {b_ip}")), ["pxe-b.lab.rackboot.test."]);
    assert_eq!(dig(&net, &a, &format!("{srv} +tcp node-a.lab.rackboot.test")), ["198.18.0.60"]);
    assert_eq!(dig(&net, &a, &format!("{srv} lab.rackboot.test NS")), ["rackboot.lab.rackboot.test."]);
    assert_eq!(status(&net, &a, &format!("{srv} nobody.lab.rackboot.test")), "NXDOMAIN");
    assert_eq!(status(&net, &a, &format!("{srv} -x 198.18.0.222")), "NXDOMAIN");
    assert_eq!(status(&net, &a, &format!("{srv} example.com")), "REFUSED");
    let axfr = net.run(&a, &format!("dig +time=2 +tries=1 {srv} lab.rackboot.test AXFR"));
    let text = String::from_utf8_lossy(&axfr.stdout);
    assert!(text.contains("Transfer failed"), "AXFR must be refused:\n{text}");

    // A rename through the API is answered without a restart or a zone reload by hand (within
    // seconds: a fixed 300 ms wait flaked with the VM lane busy beside this test).
    let m = net.api("GET", "/machines/52:54:00:e5:00:01", None);
    let id = m["id"].as_u64().unwrap();
    net.api("PATCH", &format!("/machines/{id}"), Some(r#"{"hostname":"node-a2"}"#));
    let want = vec!["node-a2.lab.rackboot.test.".to_string()];
    let last = std::cell::RefCell::new(Vec::new());
    wait_for(
        10,
        || format!("the reverse name is still {:?}", last.borrow()),
        || {
            *last.borrow_mut() = dig(&net, &b, &format!("{srv} -x 198.18.0.60"));
            (*last.borrow() == want).then_some(())
        },
    );
}
