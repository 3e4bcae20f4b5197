//! Enrollment bound to a boot, against the whole appliance in-process: a machine gets a DHCP
//! lease (as a relayed client on loopback), its boot script carries a one-time nonce only when
//! fetched from that leased address, and only that nonce lets an agent take the machine over.
//! The hostile cases: a script fetched from a foreign address, an enroll without a nonce, a
//! replayed nonce, another machine's nonce, an expired nonce. Each is refused (409, recorded
//! with its source) and the genuine agent keeps working. The signed GRUB's per-MAC config over
//! TFTP follows the same rule, and forged requests for it do not void the nonce a boot holds.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::common::*;
use hyper::Method;
use serde_json::{json, Value};

const VICTIM: [u8; 6] = [0x52, 0x54, 0, 0xe0, 0, 1];
const NEIGHBOUR: [u8; 6] = [0x52, 0x54, 0, 0xe0, 0, 2];

fn mac_text(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// `GET /boot/ipxe?mac=` from source address `from`; returns the nonce the script carries.
async fn script_nonce(lab: &Lab, from: Ipv4Addr, mac: [u8; 6]) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let http = lab.app.as_ref().unwrap().http_addr;
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(SocketAddr::from((from, 0))).unwrap();
    let mut s = sock.connect(http).await.unwrap();
    let req = format!("GET /boot/ipxe?mac={}&platform=pcbios HTTP/1.0\r\nHost: x\r\n\r\n", mac_text(mac));
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.0 200") || out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.contains("rackboot.mac="), "a BootOS script: {out}");
    out.split_whitespace().find_map(|w| w.strip_prefix("rackboot.nonce=")).map(String::from)
}

/// The signed GRUB's config for `mac` (`grub/grub.cfg-<mac>`) over TFTP from source address
/// `from`, as the shim chain fetches it; returns the nonce it carries.
async fn grub_nonce(lab: &Lab, from: Ipv4Addr, mac: [u8; 6]) -> Option<String> {
    let cfg = tftp_get(lab, from, &format!("grub/grub.cfg-{}", mac_text(mac))).await;
    assert!(cfg.contains("rackboot.mac="), "a BootOS config: {cfg}");
    cfg.split_whitespace().find_map(|w| w.strip_prefix("rackboot.nonce=")).map(|n| n.trim_matches('\'').to_string())
}

/// An agent-API client over HTTPS, trusting the lab's CA.
fn agent_client(lab: &Lab) -> rackboot_agent::client::Client {
    let trust = rackboot_agent::tls::Trust::CaPem(lab.ca_pem().into_bytes());
    rackboot_agent::client::Client::new(&lab.https_url(), &trust).unwrap()
}

/// Enrolls as `mac` with `nonce`; returns the status and body.
async fn enroll(lab: &Lab, mac: [u8; 6], nonce: Option<&str>) -> (u16, Value) {
    let mut c = agent_client(lab);
    let req = json!({"macs": [mac_text(mac)], "boot_mac": mac_text(mac), "mode": "bootos", "nonce": nonce});
    let r = c.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(5)).await.unwrap();
    (r.status, r.json().unwrap_or(Value::Null))
}

/// A long-poll with `credential`: 204 while it is the machine's live credential.
async fn poll(lab: &Lab, credential: &str) -> u16 {
    let mut c = agent_client(lab);
    c.credential = Some(credential.into());
    c.call::<()>(Method::GET, "/agent/v1/jobs/next?wait=0", None, Duration::from_secs(5)).await.unwrap().status
}

#[tokio::test]
async fn only_the_boot_rackboot_served_to_the_machines_address_can_enroll_it() {
    let lab = Lab::start("[agent]\nnonce_ttl_secs = 2\n").await;
    let victim_ip = four_way(&lab, VICTIM, 7100).await.yiaddr();
    let neighbour_ip = four_way(&lab, NEIGHBOUR, 7200).await.yiaddr();

    // The boot script carries a nonce only for the address that leased the MAC.
    assert_eq!(script_nonce(&lab, Ipv4Addr::LOCALHOST, VICTIM).await, None, "an address rackboot never leased");
    assert_eq!(script_nonce(&lab, neighbour_ip, VICTIM).await, None, "another machine's address");
    let nonce = script_nonce(&lab, victim_ip, VICTIM).await.expect("the machine's own boot gets a nonce");
    assert_eq!(nonce.len(), 32, "{nonce}");

    let (status, genuine) = enroll(&lab, VICTIM, Some(&nonce)).await;
    assert_eq!((status, genuine["approved"].as_bool()), (200, Some(true)), "{genuine}");
    let credential = genuine["credential"].as_str().unwrap().to_string();
    assert_eq!(poll(&lab, &credential).await, 204);

    // The attacks, each refused without touching the genuine agent.
    let (status, body) = enroll(&lab, VICTIM, None).await;
    assert_eq!(status, 409, "no nonce: {body}");
    assert!(body["detail"].as_str().unwrap().contains("boot the machine again"), "{body}");
    assert_eq!(enroll(&lab, VICTIM, Some(&nonce)).await.0, 409, "a replayed nonce");
    let theirs = script_nonce(&lab, neighbour_ip, NEIGHBOUR).await.unwrap();
    let mut c = agent_client(&lab);
    let req = json!({"macs": [mac_text(VICTIM)], "boot_mac": mac_text(VICTIM), "nonce": theirs});
    let r = c.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(5)).await.unwrap();
    assert_eq!(r.status, 409, "another machine's nonce");
    let late = script_nonce(&lab, victim_ip, VICTIM).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(enroll(&lab, VICTIM, Some(&late)).await.0, 409, "an expired nonce");
    assert_eq!(poll(&lab, &credential).await, 204, "the genuine agent keeps its credential");

    let events = lab.api.ok(Method::GET, &format!("/machines/{}/events", mac_text(VICTIM)), None).await.unwrap();
    let refusals: Vec<&Value> =
        events["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "agent.enroll_conflict").collect();
    assert_eq!(refusals.len(), 4, "{events}");
    assert!(refusals.iter().all(|e| e["detail"]["from"] == "127.0.0.1"), "{refusals:?}");
    let reasons: Vec<&str> = refusals.iter().map(|e| e["detail"]["reason"].as_str().unwrap()).collect();
    assert!(reasons.contains(&"boot nonce expired") && reasons.contains(&"no boot nonce presented"), "{reasons:?}");

    // A new boot of the machine itself re-enrolls it: its nonce supersedes the old credential.
    let again = script_nonce(&lab, victim_ip, VICTIM).await.unwrap();
    let (status, renewed) = enroll(&lab, VICTIM, Some(&again)).await;
    assert_eq!((status, renewed["approved"].as_bool()), (200, Some(true)), "{renewed}");
    assert_eq!(poll(&lab, &credential).await, 401, "the old boot's credential is superseded");
}

#[tokio::test]
async fn the_signed_grubs_config_over_tftp_carries_a_nonce_only_to_the_machines_own_address() {
    let lab = Lab::start("").await;
    let victim_ip = four_way(&lab, VICTIM, 7300).await.yiaddr();
    let neighbour_ip = four_way(&lab, NEIGHBOUR, 7400).await.yiaddr();
    // TFTP has no Host header or URL to trust: the source address is what is checked.
    assert_eq!(grub_nonce(&lab, Ipv4Addr::LOCALHOST, VICTIM).await, None, "an address rackboot never leased");
    assert_eq!(grub_nonce(&lab, neighbour_ip, VICTIM).await, None, "a neighbour asking for the victim's config");
    let nonce = grub_nonce(&lab, victim_ip, VICTIM).await.expect("the machine's own boot gets a nonce");
    assert_eq!(nonce.len(), 32, "{nonce}");
    // Requests with the victim's address forged (their answers go to the victim) issue newer
    // nonces; the one the booting machine holds still enrolls it.
    for _ in 0..3 {
        grub_nonce(&lab, victim_ip, VICTIM).await.unwrap();
    }
    let (status, body) = enroll(&lab, VICTIM, Some(&nonce)).await;
    assert_eq!((status, body["approved"].as_bool()), (200, Some(true)), "{body}");
}

/// The takeover a review found, in-process (and on PostgreSQL in CI's second stage): the
/// neighbour's script carries a valid nonce for its own MAC, and it enrolls naming the victim's
/// boot MAC with its own MAC listed. Refused as a foreign nonce; nothing is attached; the victim's
/// agent keeps working; the neighbour's nonce still enrolls the neighbour itself.
#[tokio::test]
async fn a_neighbours_own_nonce_does_not_admit_it_as_the_victim() {
    let lab = Lab::start("").await;
    let victim_ip = four_way(&lab, VICTIM, 7500).await.yiaddr();
    let neighbour_ip = four_way(&lab, NEIGHBOUR, 7600).await.yiaddr();
    let nonce = script_nonce(&lab, victim_ip, VICTIM).await.unwrap();
    let (status, genuine) = enroll(&lab, VICTIM, Some(&nonce)).await;
    assert_eq!(status, 200, "{genuine}");
    let credential = genuine["credential"].as_str().unwrap().to_string();
    let theirs = script_nonce(&lab, neighbour_ip, NEIGHBOUR).await.unwrap();
    let (v, n) = (mac_text(VICTIM), mac_text(NEIGHBOUR));
    for req in [
        json!({"boot_mac": v, "macs": [n], "nonce": theirs}),
        json!({"boot_mac": v, "macs": [n, v, "52:54:00:e0:00:77"], "nonce": theirs}),
        json!({"macs": [v, n], "nonce": theirs}),
        json!({"boot_mac": v, "macs": [v], "nonce": nonce}),
    ] {
        let mut c = agent_client(&lab);
        let r = c.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(5)).await.unwrap();
        assert_eq!(r.status, 409, "{req}: {}", String::from_utf8_lossy(&r.body));
    }
    assert_eq!(poll(&lab, &credential).await, 204, "the victim's agent keeps its credential");
    let m = lab.api.ok(Method::GET, &format!("/machines/{v}"), None).await.unwrap();
    assert_eq!(m["macs"], json!([v]), "nothing attached to the victim: {m}");
    let events = lab.api.ok(Method::GET, &format!("/machines/{v}/events"), None).await.unwrap();
    let reasons: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "agent.enroll_conflict")
        .map(|e| e["detail"]["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.iter().filter(|r| r.contains("not this machine")).count(), 3, "{reasons:?}");
    assert!(reasons.contains(&"boot nonce unknown, used or superseded"), "the used nonce: {reasons:?}");
    assert!(lab.app.as_ref().unwrap().cmdb.brief_by_mac("52:54:00:e0:00:77".parse().unwrap()).is_none());
    let (status, own) = enroll(&lab, NEIGHBOUR, Some(&theirs)).await;
    assert_eq!((status, own["approved"].as_bool()), (200, Some(true)), "the neighbour's own boot: {own}");
    assert_ne!(own["machine_id"], genuine["machine_id"]);
}

#[tokio::test]
async fn a_new_machine_that_cannot_prove_its_boot_waits_for_the_operator() {
    let lab = Lab::start("").await;
    let (status, body) = enroll(&lab, [0x52, 0x54, 0, 0xe0, 0, 9], None).await;
    assert_eq!((status, body["approved"].as_bool()), (200, Some(false)), "{body}");
    let credential = body["credential"].as_str().unwrap();
    assert_eq!(poll(&lab, credential).await, 403, "held until an operator approves");
}
