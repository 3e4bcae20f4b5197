//! A node's word is a claim, not a placement. A host on the VLAN enrolls with its own boot
//! nonce and reports an LLDP neighbour on rack r9's switch (or the DMI serial r9's CSV lists):
//! it is not placed, named or provisioned, and does not get r9's user-data; the rack page shows
//! the claim for an operator to confirm. A claim never takes a slot option 82 placed another
//! machine in, even in a rack that trusts LLDP. The operator's confirmation places it.

use std::time::Duration;

use hyper::Method;
use serde_json::{json, Value};

use crate::common::*;

const SECRET: &str = "#cloud-config\nchpasswd: {list: 'root:r9-secret'}\n";

fn mac(last: u8) -> [u8; 6] {
    [0x52, 0x54, 0, 0xe7, 0, last]
}

/// The rack's spec; `trust` sets `trust_lldp`. No address plan: each machine keeps the address
/// it has (127.0.0.1 for the claimant), so its seed is answered to it.
fn r9(trust: bool) -> Value {
    json!({"name": "r9", "switch": {"remote_id": "leaf-r9", "lldp_chassis_name": "leaf-r9"},
        "ports": ["Ethernet1-8 -> U1-U8"], "machines_csv": "SN-R9-05,,,U5\n", "os_profile": "lab.img",
        "auto_provision": true, "silent_after_minutes": 10080, "trust_lldp": trust})
}

/// The machine's user-data as it fetches it from its own address (127.0.0.1), with a seed
/// token issued as an install's identity step issues it (the claim is about what a placed
/// machine's seed holds, not how it got a token).
async fn user_data(lab: &Lab, m: [u8; 6]) -> (u16, String) {
    let app = lab.app.as_ref().unwrap();
    let seed = rackboot::cmdb::TokenUse::Seed;
    let token = app.cmdb.issue_boot_token(mac_text(&m).parse().unwrap(), seed, String::new(), None).await.unwrap();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], app.http_addr.port()).into();
    let r = http_get(addr, &format!("/boot/cloud-init/{}/{token}/user-data", mac_text(&m))).await;
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    (head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0), body.to_string())
}

/// Enrolls `m` with its own nonce and reports an inventory whose DMI serial is `serial`.
async fn report_serial(lab: &Lab, m: [u8; 6], serial: &str) {
    let mut c = enroll_agent(lab, m).await;
    let mut inv = rackboot_agent::wire::Inventory::default();
    inv.dmi.serial = Some(serial.into());
    let r = c.call(Method::PUT, "/agent/v1/inventory", Some(&inv), Duration::from_secs(5)).await.unwrap();
    assert_eq!(r.status, 204);
}

async fn machine(lab: &Lab, m: [u8; 6]) -> Value {
    lab.api.ok(Method::GET, &format!("/machines/{}", mac_text(&m)), None).await.unwrap()
}

fn claimed(view: &Value) -> Vec<(u64, u64)> {
    let flags = view["flags"].as_array().unwrap().iter().filter(|f| f["kind"] == "claimed");
    flags.map(|f| (f["slot"].as_u64().unwrap(), f["machines"][0].as_u64().unwrap())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nodes_lldp_or_serial_is_a_claim_and_takes_no_slot_nor_its_secrets() {
    let lab = Lab::start("").await;
    let images = lab.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), b"an image").unwrap();
    let (s, v) = lab.api.call(Method::POST, "/racks", Some(r9(false))).await.unwrap();
    assert_eq!(s, 201, "{v}");
    let (s, v) = lab.api.call(Method::PUT, "/racks/r9/user-data", Some(json!({"text": SECRET}))).await.unwrap();
    assert!(s == 200 || s == 204, "{s} {v}");

    // The victim, placed in U7 by its relay.
    assert!(lab.exchange(&relayed(mac(7), 700, "Ethernet7", "leaf-r9")).await.is_some());
    // The sighting is written after the answer: the machine may not be there at once.
    let victim = eventually(|| async {
        let (status, v) = lab.api.call(Method::GET, &format!("/machines/{}", mac_text(&mac(7))), None).await?;
        anyhow::ensure!(status == 200 && v["slot"] == 7, "not placed yet: {status} {v}");
        Ok(v)
    })
    .await;
    assert_eq!(victim["hostname"], "r9-u07");

    // The claimants: A at its own address, reporting LLDP on U3 (free); B reporting the serial
    // the CSV lists for U5; C reporting LLDP on U7, the victim's.
    for (m, ip) in [(mac(3), "127.0.0.1"), (mac(5), "127.0.0.5"), (mac(8), "127.0.0.8")] {
        let body = json!({"macs": [mac_text(&m)], "reserved_ip": ip});
        assert_eq!(lab.api.call(Method::POST, "/machines", Some(body)).await.unwrap().0, 201);
    }
    report_lldp_of(&lab, mac(3), "leaf-r9", "Ethernet3").await;
    report_serial(&lab, mac(5), "sn-r9-05").await;
    report_lldp_of(&lab, mac(8), "leaf-r9", "Ethernet7").await;
    let (a, b, c) = (machine(&lab, mac(3)).await, machine(&lab, mac(5)).await, machine(&lab, mac(8)).await);
    for m in [&a, &b, &c] {
        assert_eq!((&m["rack"], &m["slot"], &m["hostname"]), (&Value::Null, &Value::Null, &Value::Null), "{m}");
        assert_eq!(m["placement"]["by"], Value::Null, "{m}");
    }
    assert_eq!(
        (a["placement"]["lldp"]["slot"].as_u64(), b["placement"]["serial"]["slot"].as_u64()),
        (Some(3), Some(5))
    );
    let (status, text) = user_data(&lab, mac(3)).await;
    assert_eq!(status, 200, "{text}");
    assert!(!text.contains("r9-secret"), "a claim gets no rack user-data: {text}");
    assert_eq!(lab.api.ok(Method::GET, "/tasks", None).await.unwrap()["tasks"], json!([]), "nothing provisioned");
    let view = lab.api.ok(Method::GET, "/racks/r9", None).await.unwrap();
    let (id_a, id_b, id_c) = (a["id"].as_u64().unwrap(), b["id"].as_u64().unwrap(), c["id"].as_u64().unwrap());
    let mut claims = claimed(&view);
    claims.sort();
    assert_eq!(claims, vec![(3, id_a), (5, id_b), (7, id_c)], "each claim is on the rack page: {view}");
    let u7 = view["flags"].as_array().unwrap().iter().find(|f| f["kind"] == "claimed" && f["slot"] == 7).unwrap();
    assert!(u7["detail"].as_str().unwrap().contains(&format!("machine {} holds", victim["id"])), "{u7}");

    // A rack that trusts LLDP places A and B by their word, never C in the victim's slot.
    let (s, v) = lab.api.call(Method::PUT, "/racks/r9", Some(r9(true))).await.unwrap();
    assert_eq!(s, 200, "{v}");
    let (a, b, c) = (machine(&lab, mac(3)).await, machine(&lab, mac(5)).await, machine(&lab, mac(8)).await);
    assert_eq!((a["slot"].as_u64(), a["placement"]["by"].as_str()), (Some(3), Some("lldp")), "{a}");
    assert_eq!((b["slot"].as_u64(), b["placement"]["by"].as_str()), (Some(5), Some("serial")), "{b}");
    assert_eq!((&c["slot"], &c["hostname"]), (&Value::Null, &Value::Null), "{c}");
    let v7 = machine(&lab, mac(7)).await;
    assert_eq!((v7["slot"].as_u64(), v7["hostname"].as_str()), (Some(7), Some("r9-u07")), "{v7}");
    assert_eq!(user_data(&lab, mac(3)).await, (200, SECRET.to_string()), "placed: the rack's user-data");

    // Trust withdrawn: they leave their slots (keeping their names), and the operator confirms A.
    let (s, v) = lab.api.call(Method::PUT, "/racks/r9", Some(r9(false))).await.unwrap();
    assert_eq!(s, 200, "{v}");
    let a = machine(&lab, mac(3)).await;
    assert_eq!((&a["rack"], &a["slot"], a["hostname"].as_str()), (&Value::Null, &Value::Null, Some("r9-u03")), "{a}");
    assert!(!user_data(&lab, mac(3)).await.1.contains("r9-secret"));
    let (s, t) = lab.api.call(Method::POST, "/tokens", Some(json!({"name": "ro", "role": "viewer"}))).await.unwrap();
    assert_eq!(s, 201, "{t}");
    let viewer = rackboot::client::ApiClient::new(
        &lab.https_url(),
        t["secret"].as_str().unwrap().into(),
        lab.ca_pem().as_bytes(),
    )
    .unwrap();
    let path = format!("/machines/{id_a}/placement");
    let (s, _) = viewer.call(Method::PUT, &path, Some(json!({"rack": "r9", "slot": 3}))).await.unwrap();
    assert_eq!(s, 403, "a viewer confirms nothing");
    for (bad, field) in [(json!({"rack": "r9", "slot": 0}), "slot"), (json!({"rack": "R9", "slot": 3}), "rack")] {
        let (s, p) = lab.api.call(Method::PUT, &path, Some(bad)).await.unwrap();
        assert_eq!((s, p["field"].as_str()), (400, Some(field)), "{p}");
    }
    let (s, p) = lab.api.call(Method::PUT, &path, Some(json!({"rack": "r8", "slot": 3}))).await.unwrap();
    assert_eq!(s, 404, "{p}");
    let a = lab.api.ok(Method::PUT, &path, Some(json!({"rack": "r9", "slot": 3}))).await.unwrap();
    assert_eq!((a["slot"].as_u64(), a["placement"]["by"].as_str()), (Some(3), Some("operator")), "{a}");
    assert_eq!(user_data(&lab, mac(3)).await, (200, SECRET.to_string()));
    let tasks = lab.api.ok(Method::GET, "/tasks", None).await.unwrap()["tasks"].clone();
    assert_eq!(tasks.as_array().unwrap().len(), 1, "the rack provisions what the operator placed: {tasks}");
    assert_eq!(tasks[0]["spec"]["select"], json!({"macs": [mac_text(&mac(3))]}));
    let view = lab.api.ok(Method::GET, "/racks/r9", None).await.unwrap();
    assert!(!claimed(&view).iter().any(|(_, id)| *id == id_a), "{view}");
    let events = lab.api.ok(Method::GET, &format!("/machines/{id_a}/events?limit=1000"), None).await.unwrap();
    let kinds: Vec<&str> = events["events"].as_array().unwrap().iter().filter_map(|e| e["kind"].as_str()).collect();
    for k in ["rack.claimed", "rack.placed", "rack.left"] {
        assert!(kinds.contains(&k), "{k} in {kinds:?}");
    }
    // Withdrawn, the machine is where its evidence puts it: nowhere.
    let a = lab.api.ok(Method::DELETE, &path, None).await.unwrap();
    assert_eq!((&a["rack"], &a["placement"]["confirmed"]), (&Value::Null, &Value::Null), "{a}");
}
