use super::*;
use crate::cmdb::model::SCHEMA_VERSION;
use crate::cmdb::MachineState;

fn lease(ip: &str, mac: &str, expires_at: u64, state: LeaseState) -> Lease {
    Lease {
        v: SCHEMA_VERSION,
        ip: ip.parse().unwrap(),
        mac: mac.parse().unwrap(),
        hostname: None,
        client_hostname: None,
        expires_at,
        state,
        updated_at: 0,
    }
}

fn machine(id: u64, macs: &[&str]) -> Machine {
    Machine::new(id, macs.iter().map(|m| m.parse().unwrap()).collect(), 0)
}

#[test]
fn hosts_are_grouped_by_rack_state_tag_and_profile_with_their_addresses() {
    let mut web = machine(1, &["52:54:00:00:00:01", "52:54:00:00:00:11"]);
    web.hostname = Some("web-01".into());
    web.state = MachineState::Installed;
    web.rack = Some("r-12".into());
    web.slot = Some(7);
    web.tags = vec!["web".into(), "eu-west".into()];
    web.serial = Some("SN1".into());
    web.vendor = Some("QEMU".into());
    let mut spec = rackboot_model::network::NetSpec::default();
    spec.vlans.push(
        serde_json::from_value(
            serde_json::json!({"id": 10, "link": "nic0", "network": "prod", "address": "198.19.10.21"}),
        )
        .unwrap(),
    );
    web.network = Some(spec);
    let mut pinned = machine(2, &["52:54:00:00:00:02"]);
    pinned.boot_profile = Some("debian12".into());
    pinned.reserved_ip = Some("198.18.0.62".parse().unwrap());
    // Named like the unnamed machine 3 would be.
    let mut squatter = machine(4, &["52:54:00:00:00:04"]);
    squatter.hostname = Some("machine-3".into());
    let unnamed = machine(3, &["52:54:00:00:00:03"]);
    let leases = [
        lease("198.18.0.100", "52:54:00:00:00:01", 500, LeaseState::Active),
        // Its other NIC's lease is newer: that one is where it is now.
        lease("198.18.0.101", "52:54:00:00:00:11", 900, LeaseState::Active),
        lease("198.18.0.102", "52:54:00:00:00:03", 50, LeaseState::Active),
        lease("198.18.0.103", "52:54:00:00:00:04", 900, LeaseState::Released),
    ];
    let inv = build(&[web, pinned, unnamed, squatter], &leases, 100);
    let v = serde_json::to_value(&inv).unwrap();
    let hosts = |g: &str| v[g]["hosts"].clone();
    assert_eq!(hosts("rack_r_12"), serde_json::json!(["web-01"]));
    assert_eq!(hosts("tag_eu_west"), serde_json::json!(["web-01"]));
    assert_eq!(hosts("state_installed"), serde_json::json!(["web-01"]));
    assert_eq!(hosts("profile_debian12"), serde_json::json!(["machine-2"]));
    assert_eq!(hosts("state_discovered"), serde_json::json!(["machine-2", "machine-3-unnamed", "machine-3"]));
    let all: Vec<&str> = v["all"]["children"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert!(all.contains(&"rack_r_12") && all.contains(&"tag_web") && !all.contains(&"all"), "{all:?}");
    let web = &v["_meta"]["hostvars"]["web-01"];
    assert_eq!(web["ansible_host"], "198.18.0.101", "{web}");
    assert_eq!(web["rackboot_addresses"], serde_json::json!(["198.18.0.101", "198.19.10.21"]));
    assert_eq!(web["rackboot_macs"], serde_json::json!(["52:54:00:00:00:01", "52:54:00:00:00:11"]));
    assert_eq!((web["rackboot_rack"].as_str(), web["rackboot_slot"].as_u64()), (Some("r-12"), Some(7)));
    // What the node reported is marked unsafe for Ansible.
    assert_eq!(web["rackboot_serial"], serde_json::json!({"__ansible_unsafe": "SN1"}));
    assert_eq!(web["rackboot_vendor"], serde_json::json!({"__ansible_unsafe": "QEMU"}));
    assert_eq!(web["rackboot_state"], "installed");
    // The reservation wins over a lease; an expired or released lease is no address.
    assert_eq!(v["_meta"]["hostvars"]["machine-2"]["ansible_host"], "198.18.0.62");
    assert!(v["_meta"]["hostvars"]["machine-3-unnamed"].get("ansible_host").is_none());
    assert!(v["_meta"]["hostvars"]["machine-3"].get("ansible_host").is_none());
}

#[test]
fn group_names_keep_letters_digits_and_underscores_only() {
    assert_eq!(group_name("tag_a-b.c d/é"), "tag_a_b_c_d__");
    assert_eq!(group_name("rack_R12"), "rack_R12");
}
