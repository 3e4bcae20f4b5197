//! The agent takeover a review found, played as the attacker on the VLAN plays it: rackboot runs
//! as a real process in a network namespace, the victim and the neighbour are namespaces on the
//! same bridge leasing with ISC dhclient and talking HTTP with curl. The neighbour's own boot
//! script carries a valid nonce for its own MAC; with it, it tries to enroll as the victim in
//! every shape the review named. Each attempt is refused (409, `agent.enroll_conflict`) and
//! attaches nothing, the victim's agent keeps its credential, and the neighbour's nonce still
//! enrolls the neighbour's own machine.
//!
//! Needs root, dhclient and curl: `#[ignore]`d for a plain `cargo test`; the README's test
//! command (and CI) runs it with `--include-ignored`.

use serde_json::{json, Value};

use crate::netns::{full_config, require, Net};

const VICTIM: &str = "52:54:00:e1:00:01";
const NEIGHBOUR: &str = "52:54:00:e1:00:02";

/// Leases an address for `ns`'s eth0 with dhclient and puts it on the interface.
fn lease(net: &Net, ns: &str, name: &str) -> String {
    let script = net.path(&format!("{name}-hook.sh"));
    std::fs::write(
        &script,
        "#!/bin/sh\ncase \"$reason\" in BOUND|REBOOT) ip addr add \"$new_ip_address/24\" dev \"$interface\" ;; esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (lf, pf) = (net.path(&format!("{name}.leases")), net.path(&format!("{name}.pid")));
    let cmd =
        format!("timeout 60 dhclient -4 -1 -sf {} -lf {} -pf {} eth0", script.display(), lf.display(), pf.display());
    let out = net.run(ns, &cmd);
    assert!(out.status.success(), "dhclient in {ns}: {}", String::from_utf8_lossy(&out.stderr));
    net.kill_pid_file(ns, &pf);
    let addr = net.run(ns, "ip -4 -o addr show dev eth0");
    let text = String::from_utf8_lossy(&addr.stdout).into_owned();
    text.split_whitespace().skip_while(|w| *w != "inet").nth(1).expect("an address on eth0").to_string()
}

/// The nonce in the boot script `ns` gets for `mac` (`GET /boot/ipxe` with curl).
fn script_nonce(net: &Net, ns: &str, mac: &str) -> Option<String> {
    let out = net.run(ns, &format!("curl -sS -f 'http://198.18.0.1:8080/boot/ipxe?mac={mac}&platform=pcbios'"));
    assert!(out.status.success(), "boot script: {}", String::from_utf8_lossy(&out.stderr));
    let script = String::from_utf8_lossy(&out.stdout).into_owned();
    script.split_whitespace().find_map(|w| w.strip_prefix("rackboot.nonce=")).map(String::from)
}

/// An agent-API call with curl from `ns` over HTTPS (the appliance CA); status and JSON body.
fn agent_call(
    net: &Net,
    ns: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
    bearer: Option<&str>,
) -> (u16, Value) {
    let out_file = net.path(&format!("{ns}-answer.json"));
    let data = body.map(|b| format!("-H 'content-type: application/json' -d '{b}'")).unwrap_or_default();
    let auth = bearer.map(|b| format!("-H 'authorization: Bearer {b}'")).unwrap_or_default();
    let out = net.run(
        ns,
        &format!(
            "curl -sS -o {} -w '%{{http_code}}' --cacert {} -X {method} {auth} {data} https://198.18.0.1/agent/v1{path}",
            out_file.display(),
            net.ca().display()
        ),
    );
    assert!(out.status.success(), "curl {path}: {}", String::from_utf8_lossy(&out.stderr));
    let status = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let body = std::fs::read(&out_file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null);
    (status, body)
}

fn enroll(net: &Net, ns: &str, body: Value) -> (u16, Value) {
    agent_call(net, ns, "POST", "/enroll", Some(&body), None)
}

fn poll(net: &Net, ns: &str, credential: &str) -> u16 {
    agent_call(net, ns, "GET", "/jobs/next?wait=0", None, Some(credential)).0
}

#[test]
#[ignore = "needs root, dhclient and curl (the README's test command runs it)"]
fn a_neighbour_on_the_vlan_cannot_take_a_machines_agent_with_its_own_nonce() {
    require(&["dhclient", "curl", "ip"]);
    let mut net = Net::new("tko");
    let victim = net.add_client("victim", VICTIM);
    let neighbour = net.add_client("nbr", NEIGHBOUR);
    let data = net.path("data");
    net.start_rackboot(&full_config(&data));

    // The victim boots: a lease, its boot script's nonce, an enrollment admitted at once.
    lease(&net, &victim, "victim");
    let nonce = script_nonce(&net, &victim, VICTIM).expect("the victim's own boot carries a nonce");
    let (status, genuine) =
        enroll(&net, &victim, json!({"boot_mac": VICTIM, "macs": [VICTIM], "mode": "bootos", "nonce": nonce}));
    assert_eq!((status, genuine["approved"].as_bool()), (200, Some(true)), "{genuine}");
    let credential = genuine["credential"].as_str().unwrap().to_string();
    assert_eq!(poll(&net, &victim, &credential), 204);

    // The neighbour: its own lease and its own boot's nonce, then every shape of the takeover.
    lease(&net, &neighbour, "nbr");
    assert_eq!(script_nonce(&net, &neighbour, VICTIM), None, "no nonce for another MAC's script");
    let theirs = script_nonce(&net, &neighbour, NEIGHBOUR).expect("the neighbour's own boot carries a nonce");
    let unused = "52:54:00:e1:00:99";
    for (attempt, body) in [
        ("its own MAC listed", json!({"boot_mac": VICTIM, "macs": [NEIGHBOUR], "nonce": theirs})),
        (
            "several MACs, the victim's second",
            json!({"boot_mac": VICTIM, "macs": [NEIGHBOUR, VICTIM, unused], "nonce": theirs}),
        ),
        ("no boot MAC, the victim's first", json!({"macs": [VICTIM, NEIGHBOUR], "nonce": theirs})),
        ("an unused MAC beside the victim's", json!({"boot_mac": VICTIM, "macs": [unused], "nonce": theirs})),
        ("the victim's used nonce", json!({"boot_mac": VICTIM, "macs": [VICTIM], "nonce": nonce})),
        ("no nonce", json!({"boot_mac": VICTIM, "macs": [VICTIM, unused]})),
    ] {
        let (status, body) = enroll(&net, &neighbour, body);
        assert_eq!(status, 409, "{attempt}: {body}");
        assert!(body["detail"].as_str().is_some_and(|d| d.contains("boot the machine again")), "{attempt}: {body}");
    }
    assert_eq!(poll(&net, &victim, &credential), 204, "the victim's agent keeps its credential");

    let m = net.api("GET", &format!("/machines/{VICTIM}"), None);
    assert_eq!(m["macs"], json!([VICTIM]), "nothing attached to the victim: {m}");
    assert!(net.try_api("GET", &format!("/machines/{unused}")).is_none(), "the unused MAC went nowhere");
    let events = net.api("GET", &format!("/machines/{VICTIM}/events?limit=100"), None);
    let refused: Vec<&Value> =
        events["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "agent.enroll_conflict").collect();
    assert_eq!(refused.len(), 6, "{events}");
    let from_neighbour =
        refused.iter().filter(|e| e["detail"]["from"].as_str().is_some_and(|f| f.starts_with("198.18.0.")));
    assert_eq!(from_neighbour.count(), 6, "each refusal names where it came from: {refused:?}");

    // The neighbour's nonce was left unused: it still enrolls the neighbour's own machine.
    let (status, own) = enroll(&net, &neighbour, json!({"boot_mac": NEIGHBOUR, "macs": [NEIGHBOUR], "nonce": theirs}));
    assert_eq!((status, own["approved"].as_bool()), (200, Some(true)), "{own}");
    assert_ne!(own["machine_id"], genuine["machine_id"]);
}
