use serde_json::json;

use super::*;

fn spec(v: serde_json::Value) -> RackSpec {
    serde_json::from_value(v).unwrap()
}

fn base() -> serde_json::Value {
    json!({"name": "r1", "switch": {"remote_id": "leaf-r1"}, "ports": ["Ethernet1-4 -> U1-U4"],
           "address_plan": "198.18.1.1-198.18.1.8"})
}

fn catalog() -> Catalog {
    Catalog { networks: vec!["198.18.0.0/16".parse().unwrap()], ..Default::default() }
}

fn refused(v: serde_json::Value) -> String {
    validate(spec(v), &catalog(), 0).unwrap_err()
}

#[test]
fn a_rack_from_ranges_names_and_addresses_slots_in_order() {
    let r = validate(spec(base()), &catalog(), 100).unwrap();
    assert_eq!(r.ports.len(), 4);
    assert_eq!(r.hostname(3).unwrap(), "r1-u03");
    assert_eq!(r.address(1), Some("198.18.1.1".parse().unwrap()));
    assert_eq!(r.address(4), Some("198.18.1.4".parse().unwrap()));
    assert_eq!(r.address(9), None);
    assert_eq!((r.silent_after_minutes, r.created_at), (DEFAULT_SILENT_MINUTES, 100));
}

#[test]
fn patterns() {
    assert_eq!(render_pattern("{rack}-u{slot:03}", "R7", 5).unwrap(), "r7-u005");
    assert_eq!(render_pattern("node{slot}", "x", 12).unwrap(), "node12");
    assert!(render_pattern("{rack}-{unit}", "x", 1).unwrap_err().contains("unknown placeholder"));
    assert!(render_pattern("{rack", "x", 1).unwrap_err().contains("unclosed"));
}

#[test]
fn bad_specs_are_refused_with_the_reason() {
    let with = |k: &str, v: serde_json::Value| {
        let mut b = base();
        b[k] = v;
        b
    };
    for (v, why) in [
        (with("name", json!("Rack_1")), "lowercase DNS label"),
        (with("name", json!("a".repeat(33))), "lowercase DNS label"),
        (with("ports", json!(["Ethernet1-4 -> U1-U3"])), "same length"),
        (with("hostname_pattern", json!("{rack}_{slot}")), "RFC 1123"),
        (with("hostname_pattern", json!("{rack}")), "must name the slot"),
        (
            json!({"name": "a".repeat(32), "hostname_pattern": "{rack}-{rack}-u{slot:02}", "switch": {"remote_id": "x"}}),
            "RFC 1123",
        ),
        (with("hostname_pattern", json!("{rack}-u{slot}-")), "RFC 1123"),
        (with("address_plan", json!("10.0.0.1-10.0.0.9")), "outside the provisioning networks"),
        (with("address_plan", json!("198.18.1.9-198.18.1.1")), "ends before"),
        (with("address_plan", json!("198.18.1.1-198.18.1.2")), "too few addresses"),
        (with("address_plan", json!("198.18.0.0-198.18.255.255")), "longer than"),
        (with("switch", json!({})), "needs the switch"),
        (with("os_profile", json!("nope")), "neither a boot profile"),
        (with("hardware_profile", json!("nope")), "no hardware profile"),
        (with("auto_provision", json!(true)), "needs an os_profile"),
        (with("location", json!("x".repeat(129))), "at most 128"),
        (with("silent_after_minutes", json!(20000)), "at most 10080"),
        (with("machines_csv", json!("52:54:00:00:00:01,,,U60")), "too few addresses"),
    ] {
        let err = refused(v.clone());
        assert!(err.contains(why), "{v}: {err}");
    }
}

#[test]
fn racks_may_not_share_addresses_switch_ports_or_machines() {
    let a = validate(spec(base()), &catalog(), 0).unwrap();
    let mut b = base();
    b["name"] = json!("r2");
    let overlap = validate(spec(b.clone()), &catalog(), 0).unwrap();
    assert!(check_against(&overlap, std::slice::from_ref(&a)).unwrap_err().contains("overlaps rack r1"));
    b["address_plan"] = json!("198.18.2.1-198.18.2.8");
    let same_port = validate(spec(b.clone()), &catalog(), 0).unwrap();
    assert!(check_against(&same_port, std::slice::from_ref(&a)).unwrap_err().contains("same switch"));
    b["switch"] = json!({"remote_id": "leaf-r2"});
    let fine = validate(spec(b), &catalog(), 0).unwrap();
    check_against(&fine, std::slice::from_ref(&a)).unwrap();
    check_against(&a, std::slice::from_ref(&a)).unwrap();
}

#[test]
fn a_racks_root_device_hints_are_checked_and_kept() {
    let mut v = base();
    v["root_device"] = json!({"model": "PERC H730", "min_size_gib": 200});
    let r = validate(spec(v.clone()), &catalog(), 0).unwrap();
    assert_eq!(r.root_device.as_ref().and_then(|h| h.model.as_deref()), Some("PERC H730"));
    v["root_device"] = json!({});
    assert!(refused(v.clone()).contains("root_device has no hint"), "{}", refused(v.clone()));
    v["root_device"] = json!({"min_size_gib": 10, "max_size_gib": 5});
    assert!(refused(v).contains("root_device.min_size_gib"));
}

#[test]
fn a_racks_layout_is_checked_and_kept() {
    let mut v = base();
    v["layout"] = json!({"mirror": {"serial": "S2"}, "lvm": true});
    let r = validate(spec(v.clone()), &catalog(), 0).unwrap();
    assert_eq!(r.layout.as_ref().map(|l| l.lvm), Some(true));
    v["layout"] = json!({"filesystems": [{"mount": "/srv", "fstype": "ext4", "size_mib": 64}]});
    assert!(refused(v).contains("need layout.lvm"));
}
