//! The package proxy end to end: rackboot runs Debian's squid on the provisioning address; a
//! node that took its lease from rackboot (busybox udhcpc) fetches a package from an upstream
//! "mirror" namespace (python's http.server on 198.19.0.2, behind the appliance, standing for a
//! mirror on the internet) through it, and the second fetch comes from the cache (the mirror
//! hears one request). A host not listed upstream, a port other than 80, a CONNECT to a port
//! other than 443 and a client outside the DHCP subnets are refused. The node's preseed points
//! at the proxy. squid killed is started again with its cache; rackboot stopped stops squid.

use std::time::Duration;

use crate::netns::{full_config, require, sh, Net};

const NODE_MAC: &str = "52:54:00:3c:00:01";
const PROXY: &str = "http://198.18.0.1:3128";

/// Takes a lease with udhcpc and puts its address on eth0; returns the address.
pub(super) fn lease(net: &Net, ns: &str) -> String {
    let script = net.path("udhcpc-apply.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n[ \"$1\" = bound ] || exit 0\nip addr add \"$ip/$mask\" dev \"$interface\"\nip route add default via \"$router\" 2>/dev/null\necho \"$ip\" > \"$(dirname \"$0\")/node.ip\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = net.run(ns, &format!("timeout 60 udhcpc -i eth0 -f -n -q -t 5 -T 2 -s {}", script.display()));
    assert!(out.status.success(), "udhcpc got no lease: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(net.path("node.ip")).unwrap().trim().to_string()
}

/// `curl` through the proxy from `ns`: (status code, body, X-Cache header).
fn fetch(net: &Net, ns: &str, url: &str) -> (String, Vec<u8>, String) {
    let (hdr, body) = (net.path("headers"), net.path("body"));
    let _ = std::fs::remove_file(&body);
    let out = net.run(
        ns,
        &format!("curl -s -m 20 -x {PROXY} -D {} -o {} -w '%{{http_code}}' {url}", hdr.display(), body.display()),
    );
    let code = String::from_utf8_lossy(&out.stdout).to_string();
    let body = std::fs::read(&body).unwrap_or_default();
    let cache = std::fs::read_to_string(&hdr)
        .unwrap_or_default()
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("x-cache:"))
        .unwrap_or_default()
        .to_string();
    (code, body, cache)
}

fn squid_pid(net: &Net) -> Option<i32> {
    std::fs::read_to_string(net.path("data/proxy/squid.pid")).ok()?.trim().parse().ok()
}

#[test]
#[ignore = "e2e: needs root, ip netns, squid, udhcpc, curl, python3"]
fn nodes_fetch_allowed_upstreams_through_the_proxy_and_the_second_fetch_is_cached() {
    require(&["ip", "squid", "udhcpc", "curl", "python3"]);
    let mut net = Net::new("px");
    let node = net.add_client("node", NODE_MAC);
    // The "internet": a mirror namespace behind the appliance on 198.19.0.0/24, with a second
    // address standing for a host the proxy does not serve.
    let srv = net.srv.clone();
    sh(&format!(
        "ip -n {srv} link add br-up type bridge && ip -n {srv} link set br-up up && \
         ip -n {srv} addr add 198.19.0.1/24 dev br-up"
    ));
    let mirror = net.add_client_on("mirror", "52:54:00:3c:00:99", &srv, "br-up");
    sh(&format!(
        "ip -n {mirror} addr add 198.19.0.2/24 dev eth0 && ip -n {mirror} addr add 198.19.0.3/24 dev eth0 && \
         ip -n {mirror} route add default via 198.19.0.1"
    ));
    let pool = net.path("mirror/debian/pool/main/h/hello");
    std::fs::create_dir_all(&pool).unwrap();
    let package: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(pool.join("hello_2.10-3_amd64.deb"), &package).unwrap();
    let root = net.path("mirror");
    for (addr, port, log) in
        [("198.19.0.2", "80", "mirror.log"), ("198.19.0.3", "80", "other.log"), ("198.19.0.2", "8000", "p8000.log")]
    {
        let args = ["python3", "-m", "http.server", port, "--bind", addr, "--directory", root.to_str().unwrap()];
        net.spawn(&mirror, &args, log);
    }
    crate::netns::wait_for(
        20,
        || format!("the mirror answering: {}", net.log("mirror.log")),
        || {
            net.run(&srv, "curl -sf -o /dev/null http://198.19.0.2/ && curl -sf -o /dev/null http://198.19.0.3/ && curl -sf -o /dev/null http://198.19.0.2:8000/")
            .status
            .success()
            .then_some(())
        },
    );
    // squid drops to its own user, which must reach its cache under the data directory.
    sh(&format!("chmod o+x {}", net.dir.path().display()));
    let cfg = format!(
        "{}\n[[boot.profiles]]\nname = \"debian12\"\nkernel = \"d-i/linux\"\ninitrd = \"d-i/initrd.gz\"\nanswer = \"preseed\"\n\
         cmdline = \"url={{{{ answer_url }}}}\"\n[proxy]\nenable = true\nupstream_hosts = [\"198.19.0.2\"]\ncache_mb = 200\nmax_object_mb = 50\n",
        full_config(&net.path("data"))
    );
    let rb = net.start_rackboot(&cfg);
    crate::netns::wait_for(
        20,
        || format!("squid listening:\n{}", net.log("rackboot.log")),
        || net.run(&srv, "ss -ltn | grep -q '198.18.0.1:3128'").status.success().then_some(()),
    );
    let ip = lease(&net, &node);
    assert!(ip.starts_with("198.18.0."), "{ip}");

    // Allowed: fetched once from the mirror, then from the cache.
    let url = "http://198.19.0.2/debian/pool/main/h/hello/hello_2.10-3_amd64.deb";
    let (code, body, cache) = fetch(&net, &node, url);
    assert_eq!(code, "200", "access log: {}\nmirror: {}", net.log("data/proxy/access.log"), net.log("mirror.log"));
    assert!(body == package, "the package came through whole ({} of {} bytes)", body.len(), package.len());
    assert!(cache.contains("MISS"), "{cache}");
    let (code, _, cache) = fetch(&net, &node, url);
    assert_eq!(code, "200");
    assert!(cache.contains("HIT"), "the second fetch is served from the cache: {cache}");
    let gets = || net.log("mirror.log").matches("GET /debian/pool").count();
    assert_eq!(gets(), 1, "the mirror heard one request: {}", net.log("mirror.log"));

    // Refused: a host not listed, another port, a CONNECT to a port other than 443.
    assert_eq!(fetch(&net, &node, "http://198.19.0.3/debian/").0, "403");
    assert!(!net.log("other.log").contains("GET /debian"), "the host not listed was reached: {}", net.log("other.log"));
    assert_eq!(fetch(&net, &node, "http://198.19.0.2:8000/debian/").0, "403");
    assert!(!net.log("p8000.log").contains("GET /debian"), "port 8000 was reached: {}", net.log("p8000.log"));
    let tunnel = net
        .run(&node, &format!("curl -s -m 10 -o /dev/null -w '%{{http_connect}}' -p -x {PROXY} http://198.19.0.2:22/"));
    assert_eq!(String::from_utf8_lossy(&tunnel.stdout), "403", "CONNECT to port 22");
    // Refused: a client outside the DHCP subnets (the mirror side, routed to the appliance).
    assert_eq!(fetch(&net, &mirror, url).0, "403");

    // The node's preseed points its installer at the proxy. Pinned to an installer, the node
    // finds the preseed's URL (with its boot token) in its boot script, as iPXE would.
    net.api("PATCH", &format!("/machines/{NODE_MAC}"), Some(r#"{"boot_profile":"debian12"}"#));
    let script = net.run(&node, &format!("curl -s 'http://198.18.0.1:8080/boot/ipxe?mac={NODE_MAC}'"));
    let script = String::from_utf8_lossy(&script.stdout).to_string();
    let answer = script.split_whitespace().find_map(|w| w.strip_prefix("url=")).unwrap_or_else(|| panic!("{script}"));
    let preseed = net.run(&node, &format!("curl -s '{answer}&disk=/dev/vda'"));
    let preseed = String::from_utf8_lossy(&preseed.stdout).to_string();
    assert!(preseed.contains("d-i mirror/http/proxy string http://198.18.0.1:3128/"), "{preseed}");

    // squid killed is restarted, and its cache survives.
    let first = squid_pid(&net).expect("squid's pid file");
    sh(&format!("kill -9 {first}"));
    crate::netns::wait_for(
        30,
        || format!("squid restarted:\n{}", net.log("rackboot.log")),
        || squid_pid(&net).filter(|p| *p != first && std::path::Path::new(&format!("/proc/{p}")).exists()),
    );
    crate::netns::wait_for(
        20,
        || "squid listening again".into(),
        || net.run(&srv, "ss -ltn | grep -q '198.18.0.1:3128'").status.success().then_some(()),
    );
    let (code, _, _) = fetch(&net, &node, url);
    assert_eq!(code, "200");
    assert_eq!(gets(), 1, "after the restart the package still comes from the cache");

    // rackboot stopped stops squid.
    let last = squid_pid(&net).unwrap();
    assert!(net.stop(rb).success(), "{}", net.log("rackboot.log"));
    std::thread::sleep(Duration::from_millis(300));
    let stat = std::fs::read_to_string(format!("/proc/{last}/stat")).unwrap_or_default();
    assert!(stat.is_empty() || stat.contains(") Z "), "squid outlived rackboot: {stat}");
}
