//! Rack bring-up against the whole appliance in-process: a rack created from port ranges; DHCP
//! DISCOVERs relayed with option 82 place machines, name them and reserve their addresses in
//! slot order; an agent's LLDP neighbour confirms a placement or, disagreeing, flags the
//! machine as mis-cabled; two machines on one port are flagged; a CSV places by MAC; bad input
//! is refused with its reason and stores nothing; a viewer cannot create a rack.

use crate::common::*;
use dhcproto::v4::MessageType;
use hyper::Method;
use rackboot::client::ApiClient;
use serde_json::{json, Value};

fn mac(last: u8) -> [u8; 6] {
    [0x52, 0x54, 0, 0x7a, 0, last]
}

fn rack_spec() -> Value {
    json!({
        "name": "r1", "location": "hall 2, row C",
        "switch": {"remote_id": "leaf-r1", "lldp_chassis_name": "leaf-r1"},
        "ports": ["Ethernet1-4 -> U1-U4"],
        "address_plan": "127.0.9.1-127.0.9.8",
        "silent_after_minutes": 0
    })
}

async fn machine(lab: &Lab, m: [u8; 6]) -> Value {
    lab.api.ok(Method::GET, &format!("/machines/{}", mac_text(&m)), None).await.unwrap()
}

/// Waits until the machine with MAC `m` is placed in `slot`.
async fn placed(lab: &Lab, m: [u8; 6], slot: u64) -> Value {
    eventually(|| async move {
        let (status, v) = lab.api.call(Method::GET, &format!("/machines/{}", mac_text(&m)), None).await?;
        anyhow::ensure!(status == 200 && v["slot"] == json!(slot), "not in U{slot} yet: {v}");
        Ok(v)
    })
    .await
}

async fn kinds(lab: &Lab, id: &Value) -> Vec<String> {
    let v = lab.api.ok(Method::GET, &format!("/machines/{id}/events"), None).await.unwrap();
    v["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect()
}

/// Enrolls the machine's agent (with a boot nonce, as BootOS would) and uploads an inventory
/// whose LLDP neighbour is `port` on the rack's switch.
async fn report_lldp(lab: &Lab, m: [u8; 6], port: &str) {
    report_lldp_of(lab, m, "leaf-r1", port).await
}

fn flags_of(view: &Value, kind: &str) -> Vec<Value> {
    view["flags"].as_array().unwrap().iter().filter(|f| f["kind"] == kind).cloned().collect()
}

#[tokio::test]
async fn machines_are_placed_by_where_they_are_cabled_and_mis_cabling_is_flagged() {
    let lab = Lab::start("").await;
    let (s, view) = lab.api.call(Method::POST, "/racks", Some(rack_spec())).await.unwrap();
    assert_eq!(s, 201, "{view}");
    assert_eq!(view["slots"].as_array().unwrap().len(), 4, "{view}");
    assert_eq!(view["slots"][0]["slot"], 4, "top first");
    assert_eq!(flags_of(&view, "slot_silent").len(), 4, "{view}");

    // Booting in the order U2, U1: names and addresses follow the slots, not the boot order.
    let first = lab.exchange(&relayed(mac(2), 100, "Ethernet2", "leaf-r1")).await.unwrap();
    let a = placed(&lab, mac(2), 2).await;
    // The very first offer is the slot's planned address, and its REQUEST is acknowledged: a
    // client is never offered a pool address it would then be refused (iPXE ignores NAKs).
    assert_eq!(first.yiaddr().to_string(), "127.0.9.2");
    let ack = lab.exchange(&request_for(&first, mac(2), 101)).await.unwrap();
    assert_eq!(kind(&ack), MessageType::Ack);
    assert!(lab.exchange(&relayed(mac(1), 110, "Ethernet1", "leaf-r1")).await.is_some());
    let b = placed(&lab, mac(1), 1).await;
    assert_eq!((a["hostname"].as_str(), a["reserved_ip"].as_str()), (Some("r1-u02"), Some("127.0.9.2")));
    assert_eq!((b["hostname"].as_str(), b["reserved_ip"].as_str()), (Some("r1-u01"), Some("127.0.9.1")));
    assert_eq!((a["rack"].as_str(), a["placement"]["by"].as_str()), (Some("r1"), Some("option82")));
    // The next offer is the reservation.
    let offer = lab.exchange(&relayed(mac(2), 120, "Ethernet2", "leaf-r1")).await.unwrap();
    assert_eq!(offer.yiaddr().to_string(), "127.0.9.2");
    // Seen again in the same slot: no second placement.
    lab.app.as_ref().unwrap().cmdb.flush().await.unwrap();
    let placed_events = kinds(&lab, &a["id"]).await.iter().filter(|k| *k == "rack.placed").count();
    assert_eq!(placed_events, 1);

    // A third machine on U1's port: it claims the slot but takes neither name nor address.
    assert!(lab.exchange(&relayed(mac(3), 130, "Ethernet1", "leaf-r1")).await.is_some());
    let c = placed(&lab, mac(3), 1).await;
    assert_eq!(c["hostname"], Value::Null, "{c}");

    // LLDP agrees for U2 (confirmed) and disagrees for U1's machine (mis-cabled).
    report_lldp(&lab, mac(2), "Ethernet2").await;
    report_lldp(&lab, mac(1), "Ethernet3").await;
    let view = lab.api.ok(Method::GET, "/racks/r1", None).await.unwrap();
    let mis = flags_of(&view, "miscabled");
    assert_eq!(mis.len(), 1, "{view}");
    assert_eq!(mis[0]["machines"], json!([b["id"]]));
    assert!(mis[0]["detail"].as_str().unwrap().contains("Ethernet3"), "{}", mis[0]);
    let conflict = flags_of(&view, "slot_conflict");
    assert_eq!((conflict.len(), &conflict[0]["slot"]), (1, &json!(1)), "{view}");
    let silent: Vec<Value> = flags_of(&view, "slot_silent").iter().map(|f| f["slot"].clone()).collect();
    assert_eq!(silent, vec![json!(3), json!(4)]);
    let u2 = view["slots"].as_array().unwrap().iter().find(|s| s["slot"] == 2).unwrap();
    assert_eq!(u2["machines"][0]["hostname"], "r1-u02", "{u2}");
    assert_eq!(u2["machines"][0]["state"], "ready");
    assert_eq!(u2["ports"], json!(["Ethernet2"]));

    // Racks are not renamed; a new pattern renames its machines where they stand.
    let mut spec = rack_spec();
    spec["name"] = json!("r9");
    let (s, p) = lab.api.call(Method::PUT, "/racks/r1", Some(spec)).await.unwrap();
    assert_eq!((s, p["field"].as_str()), (400, Some("name")), "{p}");
    let mut spec = rack_spec();
    spec["hostname_pattern"] = json!("node-{rack}-{slot}");
    let (s, p) = lab.api.call(Method::PUT, "/racks/r1", Some(spec)).await.unwrap();
    assert_eq!(s, 200, "{p}");
    assert_eq!(machine(&lab, mac(2)).await["hostname"], "node-r1-2");
    let mut spec = rack_spec();
    spec["ports"] = json!(["Ethernet1-4 -> U1-U4"]);
    let (s, _) = lab.api.call(Method::PUT, "/racks/r1", Some(spec)).await.unwrap();
    assert_eq!(s, 200);
    assert_eq!(machine(&lab, mac(2)).await["hostname"], "r1-u02");

    // The timelines, each flag recorded once even when the rack is looked at again.
    lab.api.ok(Method::GET, "/racks/r1", None).await.unwrap();
    let ka = kinds(&lab, &a["id"]).await;
    assert!(ka.contains(&"rack.placed".into()) && ka.contains(&"rack.confirmed".into()), "{ka:?}");
    let kb = kinds(&lab, &b["id"]).await;
    assert_eq!(kb.iter().filter(|k| *k == "rack.miscabled").count(), 1, "{kb:?}");
    assert_eq!(kb.iter().filter(|k| *k == "rack.slot_conflict").count(), 1, "{kb:?}");
    assert!(kinds(&lab, &c["id"]).await.contains(&"rack.slot_conflict".into()));
}

#[tokio::test]
async fn a_csv_places_by_mac_and_bad_input_changes_nothing() {
    let lab = Lab::start("").await;
    // Seen before the rack exists: placed as soon as the CSV names it.
    assert!(lab.exchange(&msg(MessageType::Discover, mac(9), 300)).await.is_some());
    let spec = json!({"name": "r2", "address_plan": "127.0.10.1-127.0.10.16"});
    assert_eq!(lab.api.call(Method::POST, "/racks", Some(spec)).await.unwrap().0, 201);
    let csv = format!("mac,hostname,ip,slot\n{},db1,,U5\n{},,127.0.10.14,U7\n", mac_text(&mac(9)), mac_text(&mac(8)));
    let (s, view) = lab.api.call(Method::POST, "/racks/r2/csv", Some(json!({"csv": csv}))).await.unwrap();
    assert_eq!(s, 200, "{view}");
    let m9 = placed(&lab, mac(9), 5).await;
    assert_eq!((m9["hostname"].as_str(), m9["reserved_ip"].as_str()), (Some("db1"), Some("127.0.10.5")));
    assert!(lab.exchange(&msg(MessageType::Discover, mac(8), 310)).await.is_some());
    let m8 = placed(&lab, mac(8), 7).await;
    assert_eq!((m8["hostname"].as_str(), m8["reserved_ip"].as_str()), (Some("r2-u07"), Some("127.0.10.14")));
    assert_eq!(m8["placement"]["by"], "csv");

    let before = lab.api.ok(Method::GET, "/racks", None).await.unwrap();
    let bad = |patch: Value| {
        let mut s = json!({"name": "r3", "switch": {"remote_id": "leaf-r3"}, "ports": ["swp1-4 -> U1-U4"]});
        for (k, v) in patch.as_object().unwrap() {
            s[k] = v.clone();
        }
        s
    };
    for (body, why) in [
        (bad(json!({"ports": ["swp1-4 -> U1-U3"]})), "same length"),
        (bad(json!({"ports": ["swp -> U1"]})), "does not end in a number"),
        (bad(json!({"address_plan": "127.0.10.9-127.0.10.20"})), "overlaps rack r2"),
        (bad(json!({"address_plan": "10.1.0.1-10.1.0.9"})), "outside the provisioning networks"),
        (bad(json!({"hostname_pattern": "{rack}_u{slot}"})), "RFC 1123"),
        (bad(json!({"name": "R3"})), "lowercase"),
        (bad(json!({"name": "r2"})), "exists"),
        (bad(json!({"machines_csv": format!("{},,,U1\n", mac_text(&mac(9)))})), "same machine"),
    ] {
        let (s, p) = lab.api.call(Method::POST, "/racks", Some(body.clone())).await.unwrap();
        assert!(s == 400 || s == 409, "{body}: {s} {p}");
        assert!(p["detail"].as_str().unwrap_or("").contains(why), "{body}: {p}");
    }
    let huge = format!("{}\n", "x".repeat(70 * 1024));
    let (s, p) = lab.api.call(Method::POST, "/racks/r2/csv", Some(json!({"csv": huge}))).await.unwrap();
    assert_eq!(s, 400, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("larger than"), "{p}");
    let (s, p) = lab.api.call(Method::POST, "/racks/r2/csv", Some(json!({"csv": "zz,,,U1\nzz,,,U2"}))).await.unwrap();
    assert_eq!((s, p["field"].as_str()), (400, Some("csv")), "{p}");
    assert_eq!(lab.api.ok(Method::GET, "/racks", None).await.unwrap(), before, "nothing was stored");
    assert_eq!(lab.api.call(Method::GET, "/racks/nope", None).await.unwrap().0, 404);

    // A viewer reads racks but cannot create one.
    let (s, t) = lab.api.call(Method::POST, "/tokens", Some(json!({"name": "ro", "role": "viewer"}))).await.unwrap();
    assert_eq!(s, 201, "{t}");
    let viewer =
        ApiClient::new(&lab.https_url(), t["secret"].as_str().unwrap().into(), lab.ca_pem().as_bytes()).unwrap();
    assert_eq!(viewer.call(Method::GET, "/racks/r2", None).await.unwrap().0, 200);
    let (s, p) = viewer.call(Method::POST, "/racks", Some(bad(json!({})))).await.unwrap();
    assert_eq!(s, 403, "{p}");
    assert_eq!(viewer.call(Method::DELETE, "/racks/r2", None).await.unwrap().0, 403);
    assert_eq!(lab.api.ok(Method::GET, "/racks", None).await.unwrap(), before);

    // Deleting the rack: its machines leave it and keep their names.
    assert_eq!(lab.api.call(Method::DELETE, "/racks/r2", None).await.unwrap().0, 204);
    let m9 = machine(&lab, mac(9)).await;
    assert_eq!((m9["rack"].clone(), m9["hostname"].as_str()), (Value::Null, Some("db1")));
}

#[tokio::test]
async fn auto_provision_queues_a_placed_machine_once_it_is_inventoried() {
    let lab = Lab::start("").await;
    let images = lab.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), b"an image").unwrap();
    let spec = json!({"name": "r4", "switch": {"remote_id": "leaf-r4", "lldp_chassis_name": "leaf-r4"},
        "ports": ["Ethernet1-2 -> U1-U2"], "address_plan": "127.0.11.1-127.0.11.2",
        "os_profile": "lab.img", "auto_provision": true, "root_device": {"serial": "RBLAB-VDA"},
        "layout": {"mirror": {"serial": "RBLAB-VDB"}, "lvm": true}});
    let (s, v) = lab.api.call(Method::POST, "/racks", Some(spec.clone())).await.unwrap();
    assert_eq!(s, 201, "{v}");
    let mut missing = spec;
    missing["name"] = json!("r5");
    missing["os_profile"] = json!("nope.img");
    let (s, p) = lab.api.call(Method::POST, "/racks", Some(missing)).await.unwrap();
    assert!(s == 400 && p["detail"].as_str().unwrap().contains("os_profile"), "{s} {p}");

    assert!(lab.exchange(&relayed(mac(20), 400, "Ethernet2", "leaf-r4")).await.is_some());
    let m = placed(&lab, mac(20), 2).await;
    assert_eq!(m["state"], "discovered", "not inventoried yet: nothing queued");
    assert_eq!(lab.api.ok(Method::GET, "/tasks", None).await.unwrap()["tasks"], json!([]));
    report_lldp_of(&lab, mac(20), "leaf-r4", "Ethernet2").await;
    let m = machine(&lab, mac(20)).await;
    // Queued, or already further: the engine may have started the run at once and, with no
    // disk in this inventory, failed it on the rack's root-device hint (seen on PostgreSQL).
    let state = m["state"].as_str().unwrap_or_default();
    assert!(["queued", "configuring", "failed"].contains(&state), "{m}");
    let tasks = lab.api.ok(Method::GET, "/tasks", None).await.unwrap()["tasks"].clone();
    assert_eq!(tasks.as_array().unwrap().len(), 1, "{tasks}");
    if state == "failed" {
        let task = lab.api.ok(Method::GET, &format!("/tasks/{}", tasks[0]["id"]), None).await.unwrap();
        let error = task["runs"][0]["error"].as_str().unwrap_or_default();
        assert!(error.contains("no disk matches the root-device hints"), "{task}");
    }
    assert_eq!(tasks[0]["spec"]["image"], "lab.img");
    assert_eq!(tasks[0]["spec"]["root_device"], json!({"serial": "RBLAB-VDA"}), "the rack's hints");
    assert_eq!(
        tasks[0]["spec"]["layout"],
        json!({"mirror": {"serial": "RBLAB-VDB"}, "lvm": true}),
        "the rack's layout"
    );
    assert_eq!(tasks[0]["spec"]["select"], json!({"macs": [mac_text(&mac(20))]}));
    assert_eq!(m["placement"]["provision_task"], tasks[0]["id"]);
    // The inventory again: no second task.
    report_lldp_of(&lab, mac(20), "leaf-r4", "Ethernet2").await;
    let tasks = lab.api.ok(Method::GET, "/tasks", None).await.unwrap()["tasks"].clone();
    assert_eq!(tasks.as_array().unwrap().len(), 1, "{tasks}");
}

// Multi-threaded: the CLI runs as a blocking child process while the server answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_racks_create_show_import_delete() {
    let lab = Lab::start("").await;
    let dir = lab.dir.path().to_path_buf();
    let run = |args: &[&str]| lab.cli(&[&["racks"], args].concat());
    let (ok, out) = run(&[
        "create",
        "r7",
        "--remote-id",
        "leaf-r7",
        "--ports",
        "Ethernet1-2 -> U1-U2",
        "--address-plan",
        "127.0.12.1-127.0.12.4",
        "--location",
        "row 7",
        "--silent-after-minutes",
        "0",
    ]);
    assert!(ok && out.contains("created rack r7") && out.contains("U2    Ethernet2"), "{out}");
    let (ok, out) = run(&["create", "r8", "--remote-id", "leaf-r8", "--ports", "Ethernet1-2 -> U1-U3"]);
    assert!(!ok && out.contains("400") && out.contains("same length"), "{out}");
    let csv = dir.join("r7.csv");
    std::fs::write(&csv, format!("{},web1,,U3\n", mac_text(&mac(30)))).unwrap();
    let (ok, out) = run(&["import-csv", "r7", csv.to_str().unwrap()]);
    assert!(ok && out.contains("imported 1 machine(s)"), "{out}");
    assert!(lab.exchange(&msg(MessageType::Discover, mac(30), 500)).await.is_some());
    placed(&lab, mac(30), 3).await;
    let (ok, j) = run(&["show", "r7", "--json"]);
    assert!(ok && j.contains("\"slot_silent\""), "{j}");
    let (ok, out) = run(&["show", "r7"]);
    assert!(ok && out.contains("web1") && out.contains("127.0.12.3") && out.contains("FLAG slot_silent"), "{out}");
    let (ok, out) = run(&["list"]);
    assert!(ok && out.contains("r7") && out.contains("leaf-r7") && out.contains("row 7"), "{out}");
    let (ok, out) = run(&["delete", "r7"]);
    assert!(ok, "{out}");
    let (ok, out) = run(&["show", "r7"]);
    assert!(!ok && out.contains("404"), "{out}");
}
