//! Option 82 as the switch families send it, against the whole appliance in-process: a rack per
//! family, slot U5 on its port 5 written as the operator writes it on that switch, and one
//! relayed DISCOVER each in the family's default encoding; all four placed. A DISCOVER on a
//! port the rack maps to nothing keeps its option 82 decoded on the machine, with a
//! `rack.unmatched` event on its timeline and an `unmatched` flag on the rack page.

use crate::common::*;
use hyper::Method;
use serde_json::{json, Value};

fn mac(last: u8) -> [u8; 6] {
    [0x52, 0x54, 0, 0x7b, 0, last]
}

/// Waits until the machine with MAC `m` is placed in `rack` U5.
async fn placed(lab: &Lab, m: [u8; 6], rack: &str) -> Value {
    eventually(|| async move {
        let (status, v) = lab.api.call(Method::GET, &format!("/machines/{}", mac_text(&m)), None).await?;
        anyhow::ensure!(status == 200 && v["rack"] == rack && v["slot"] == 5, "not in {rack} U5 yet: {v}");
        Ok(v)
    })
    .await
}

/// A rack per family: its name, its remote id and ports as written in the form, and the circuit
/// id and remote id its switch sends.
type Family = (&'static str, &'static str, &'static str, Vec<u8>, Option<Vec<u8>>);

#[tokio::test]
async fn each_switch_familys_default_option_82_places_its_machine() {
    let lab = Lab::start("").await;
    let switch_mac = [0x00, 0x1b, 0x54, 0xaa, 0xbb, 0xcc];
    let families: [Family; 4] = [
        // Cisco IOS-XE's default: typed VLAN 10, module 1, port 5; the switch MAC typed.
        (
            "cisco",
            "00:1b:54:aa:bb:cc",
            "Gi1/0/1-8 -> U1-U8",
            vec![0, 4, 0, 10, 1, 5],
            Some([&[0, 6][..], &switch_mac].concat()),
        ),
        // Juniper's default interface.unit:vlan, the hostname as remote id.
        ("juniper", "ex-r2", "ge-0/0/1-8 -> U1-U8", b"ge-0/0/5.0:default".to_vec(), Some(b"ex-r2".to_vec())),
        // Arista: the interface name, the switch MAC as six raw bytes.
        ("arista", "001c.7301.0203", "Ethernet1-8 -> U1-U8", b"Ethernet5".to_vec(), Some(vec![0, 0x1c, 0x73, 1, 2, 3])),
        // SONiC: host:interface, the hostname.
        ("sonic", "sonic-r4", "Ethernet1-8 -> U1-U8", b"sonic-r4:Ethernet5".to_vec(), Some(b"sonic-r4".to_vec())),
    ];
    for (i, (name, remote, ports, circuit, sent_remote)) in families.iter().enumerate() {
        let spec = json!({"name": name, "switch": {"remote_id": remote}, "ports": [ports]});
        let (s, v) = lab.api.call(Method::POST, "/racks", Some(spec)).await.unwrap();
        assert_eq!(s, 201, "{name}: {v}");
        let m = mac(i as u8 + 1);
        assert!(lab.exchange(&relayed_bytes(m, 300 + i as u32, circuit, sent_remote.as_deref())).await.is_some());
        let v = placed(&lab, m, name).await;
        assert_eq!(v["placement"]["by"], "option82", "{name}: {v}");
        assert!(v["placement"]["unmatched"].is_null(), "{name}: {v}");
    }

    // Cisco's module 1 port 9: the cisco rack maps Gi1/0/1-8 only.
    let stray = mac(9);
    let circuit = [0u8, 4, 0, 10, 1, 9];
    let remote = [&[0u8, 6][..], &switch_mac].concat();
    assert!(lab.exchange(&relayed_bytes(stray, 400, &circuit, Some(&remote))).await.is_some());
    let lab = &lab;
    let m = eventually(|| async move {
        let v = lab.api.ok(Method::GET, &format!("/machines/{}", mac_text(&stray)), None).await?;
        anyhow::ensure!(!v["placement"]["unmatched"].is_null(), "not decoded yet: {v}");
        Ok(v)
    })
    .await;
    let u = &m["placement"]["unmatched"];
    assert_eq!(
        (u["rack"].as_str(), u["port"].as_str(), u["vlan"].as_u64()),
        (Some("cisco"), Some("module 1 port 9"), Some(10))
    );
    assert!(m["rack"].is_null(), "placed nowhere: {m}");
    // Again from the same port: the timeline says it once.
    assert!(lab.exchange(&relayed_bytes(stray, 410, &circuit, Some(&remote))).await.is_some());
    let events = lab.api.ok(Method::GET, &format!("/machines/{}/events", m["id"]), None).await.unwrap();
    let unmatched: Vec<&Value> =
        events["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "rack.unmatched").collect();
    assert_eq!(unmatched.len(), 1, "{events}");
    assert_eq!(unmatched[0]["detail"]["form"], "cisco-typed");
    assert!(unmatched[0]["detail"]["detail"].as_str().unwrap().contains("which rack cisco maps to no slot"));
    let view = lab.api.ok(Method::GET, "/racks/cisco", None).await.unwrap();
    let flags: Vec<&Value> = view["flags"].as_array().unwrap().iter().filter(|f| f["kind"] == "unmatched").collect();
    assert_eq!(flags.len(), 1, "{view}");
    assert!(flags[0]["detail"].as_str().unwrap().contains("port module 1 port 9 (VLAN 10)"), "{view}");
    assert_eq!(flags[0]["machines"], json!([m["id"]]));
    let other = lab.api.ok(Method::GET, "/racks/juniper", None).await.unwrap();
    assert!(other["flags"].as_array().unwrap().iter().all(|f| f["kind"] != "unmatched"), "{other}");
}
