//! The installed node's network through the API of an in-process appliance: a machine's spec
//! (two ports bonded, the tenant VLAN on top at a static address) is stored and resolved into
//! devices, a route and network-config v2; every bad spec is refused naming its field, and
//! nothing is stored; an address is never given twice (another machine's, a rack's plan); a
//! rack's default and its plan give a placed machine its address by slot.

use crate::common::appliance::Appliance;
use hyper::Method;
use serde_json::{json, Value};

const NETWORKS: &str = "\n[provision]\n[[provision.networks]]\nname = \"prod\"\ncidr = \"198.19.10.0/24\"\ngateway = \"198.19.10.1\"\nvlan = 10\ndns = [\"198.19.10.53\"]\nrange = \"198.19.10.20-198.19.10.99\"\n[[provision.networks]]\nname = \"storage\"\ncidr = \"198.19.20.0/24\"\nmtu = 9000\n";

fn bonded(address: Option<&str>) -> Value {
    let mut vlan = json!({"id": 10, "link": "bond0", "network": "prod"});
    if let Some(a) = address {
        vlan["address"] = json!(a);
    }
    json!({
        "ethernets": [{"name": "nic0", "port": 0}, {"name": "nic1", "port": 1}],
        "bonds": [{"name": "bond0", "members": ["nic0", "nic1"], "mode": "active-backup", "dhcp": true}],
        "vlans": [vlan],
    })
}

async fn call(a: &Appliance, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    a.api.call(method, path, body).await.unwrap()
}

async fn machine(a: &Appliance, macs: &[&str]) -> u64 {
    let (st, m) = call(a, Method::POST, "/machines", Some(json!({"macs": macs}))).await;
    assert_eq!(st, 201, "{m}");
    m["id"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_spec_is_checked_stored_and_resolved_and_addresses_are_never_given_twice() {
    let a = Appliance::start(NETWORKS).await;
    let (st, nets) = call(&a, Method::GET, "/networks", None).await;
    assert_eq!(st, 200);
    assert_eq!(nets["networks"][0]["name"], "prod");
    assert_eq!(nets["networks"][0]["vlan"], 10);
    let m1 = machine(&a, &["52:54:00:10:00:01", "52:54:00:10:00:02"]).await;
    let m2 = machine(&a, &["52:54:00:10:00:11", "52:54:00:10:00:12"]).await;

    // Each refusal names the field; nothing is stored.
    let mut in_two_bonds = bonded(Some("198.19.10.21"));
    in_two_bonds["bonds"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "bond1", "members": ["nic1"], "mode": "802.3ad"}));
    let mut vlan_out = bonded(Some("198.19.10.21"));
    vlan_out["vlans"][0]["id"] = json!(4095);
    let mut no_gateway = bonded(Some("198.19.10.21"));
    no_gateway["gateway_network"] = json!("storage");
    let mut unknown = bonded(None);
    unknown["vlans"][0]["netwrok"] = json!("prod");
    let refusals = [
        (in_two_bonds, "network.bonds[1].members[0]"),
        (vlan_out, "network.vlans[0].id"),
        (bonded(Some("198.19.10.200")), "network.vlans[0].address"),
        (bonded(Some("198.19.20.5")), "network.vlans[0].address"),
        (no_gateway, "network.gateway_network"),
    ];
    for (spec, field) in refusals {
        let (st, p) = call(&a, Method::PUT, &format!("/machines/{m1}/network"), Some(spec)).await;
        assert_eq!((st, p["field"].as_str()), (400, Some(field)), "{p}");
    }
    let (st, p) = call(&a, Method::PUT, &format!("/machines/{m1}/network"), Some(unknown)).await;
    assert!(st == 400 || st == 422, "unknown field: {st} {p}");
    assert!(p.to_string().contains("netwrok"), "{p}");
    let (_, m) = call(&a, Method::GET, &format!("/machines/{m1}"), None).await;
    assert!(m.get("network").is_none(), "a refused spec stored nothing: {m}");

    // A good spec: stored, and resolved against the machine's ports (its MACs, before any
    // inventory) into devices, the default route and network-config v2.
    let (st, v) = call(&a, Method::PUT, &format!("/machines/{m1}/network"), Some(bonded(Some("198.19.10.21")))).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["source"], "machine");
    assert_eq!(v["problem"], Value::Null, "{v}");
    let dev = |name: &str| v["devices"].as_array().unwrap().iter().find(|d| d["name"] == name).cloned().unwrap();
    assert_eq!(dev("nic1")["mac"], "52:54:00:10:00:02");
    assert_eq!(dev("bond0")["mac"], "52:54:00:10:00:01", "the bond keeps its first member's MAC");
    assert_eq!(dev("bond0.10")["address"], "198.19.10.21/24");
    assert_eq!(v["gateway"], "bond0.10 via 198.19.10.1");
    assert_eq!(v["network_config"]["vlans"]["bond0.10"]["id"], 10);
    assert_eq!(v["network_config"]["bonds"]["bond0"]["parameters"]["mode"], "active-backup");
    let (_, m) = call(&a, Method::GET, &format!("/machines/{m1}"), None).await;
    assert_eq!(m["network"]["vlans"][0]["address"], "198.19.10.21");

    // The same address for another machine: 409 naming the holder, nothing stored.
    let (st, p) = call(&a, Method::PUT, &format!("/machines/{m2}/network"), Some(bonded(Some("198.19.10.21")))).await;
    assert_eq!(st, 409, "{p}");
    assert!(p["detail"].as_str().unwrap().contains(&format!("machine {m1}")), "{p}");
    let (_, v2) = call(&a, Method::GET, &format!("/machines/{m2}/network"), None).await;
    assert_eq!(v2["source"], "default");

    // A rack's plan may not hold a machine's own address, nor overlap another rack's plan.
    let rack = |name: &str, plan: &str, csv: &str| json!({"name": name, "network": bonded(None), "network_plans": {"prod": plan}, "machines_csv": csv});
    let (st, p) = call(&a, Method::POST, "/racks", Some(rack("r1", "198.19.10.20-198.19.10.29", ""))).await;
    assert_eq!(st, 409, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("198.19.10.21"), "{p}");
    let (st, p) = call(&a, Method::POST, "/racks", Some(rack("r1", "198.19.10.100-198.19.10.109", ""))).await;
    assert_eq!(st, 400, "outside the network's range: {p}");
    assert!(p.to_string().contains("network_plans.prod"), "{p}");
    let mut with_mac = rack("r1", "198.19.10.30-198.19.10.39", "");
    with_mac["network"]["ethernets"][0] = json!({"name": "nic0", "mac": "52:54:00:10:00:01"});
    let (st, p) = call(&a, Method::POST, "/racks", Some(with_mac)).await;
    assert_eq!(st, 400, "a rack's default names no MAC: {p}");
    assert!(p.to_string().contains("network.ethernets[0].mac"), "{p}");
    let (_, racks) = call(&a, Method::GET, "/racks", None).await;
    assert_eq!(racks["racks"].as_array().unwrap().len(), 0, "nothing stored: {racks}");

    // The rack's default and plan: machine 2 in slot U3 gets FIRST + 2 in prod.
    let (st, r) =
        call(&a, Method::POST, "/racks", Some(rack("r1", "198.19.10.30-198.19.10.39", "52:54:00:10:00:11,,,3\n")))
            .await;
    assert_eq!(st, 201, "{r}");
    let (st, p) = call(&a, Method::POST, "/racks", Some(rack("r2", "198.19.10.35-198.19.10.45", ""))).await;
    assert_eq!(st, 409, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("rack r1"), "{p}");
    let (_, v2) = call(&a, Method::GET, &format!("/machines/{m2}/network"), None).await;
    assert_eq!(v2["source"], "rack", "{v2}");
    let dev2 = |name: &str| v2["devices"].as_array().unwrap().iter().find(|d| d["name"] == name).cloned().unwrap();
    assert_eq!(dev2("bond0.10")["address"], "198.19.10.32/24", "{v2}");
    assert_eq!(dev2("nic0")["mac"], "52:54:00:10:00:11");
    // A machine's own address inside a rack's plan is refused too.
    let (st, p) = call(&a, Method::PUT, &format!("/machines/{m1}/network"), Some(bonded(Some("198.19.10.33")))).await;
    assert_eq!(st, 409, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("rack r1"), "{p}");

    // Cleared: back to DHCP everywhere; its address is free for machine 2.
    let (st, v) = call(&a, Method::DELETE, &format!("/machines/{m1}/network"), None).await;
    assert_eq!((st, v["source"].as_str()), (200, Some("default")), "{v}");
    let (st, v) = call(&a, Method::PUT, &format!("/machines/{m2}/network"), Some(bonded(Some("198.19.10.21")))).await;
    assert_eq!((st, v["source"].as_str()), (200, Some("machine")), "{v}");
}
