use super::*;
use serde_json::json;

fn networks() -> Vec<Network> {
    vec![
        Network {
            name: "prod".into(),
            cidr: "10.20.0.0/24".parse().unwrap(),
            gateway: Some("10.20.0.1".parse().unwrap()),
            vlan: Some(10),
            dns: vec!["10.20.0.53".parse().unwrap()],
            range: Some(crate::racks::AddressPlan {
                first: "10.20.0.100".parse().unwrap(),
                last: "10.20.0.199".parse().unwrap(),
            }),
            mtu: None,
        },
        Network {
            name: "storage".into(),
            cidr: "10.30.0.0/24".parse().unwrap(),
            gateway: None,
            vlan: None,
            dns: vec![],
            range: None,
            mtu: Some(9000),
        },
    ]
}

fn spec(v: serde_json::Value) -> NetSpec {
    serde_json::from_value(v).unwrap()
}

/// Two ports bonded, the tenant VLAN on top with a static address: the rack plan's shape.
fn bonded(address: Option<&str>) -> NetSpec {
    let mut vlan = json!({"id": 10, "link": "bond0", "network": "prod"});
    if let Some(a) = address {
        vlan["address"] = json!(a);
    }
    spec(json!({
        "ethernets": [{"name": "nic0", "port": 0}, {"name": "nic1", "port": 1}],
        "bonds": [{"name": "bond0", "members": ["nic0", "nic1"], "mode": "active-backup", "dhcp": true}],
        "vlans": [vlan],
    }))
}

fn refused(s: &NetSpec, rack: bool) -> NetError {
    check(s, &networks(), rack).expect_err("refused")
}

#[test]
fn the_plans_shape_passes_and_resolves_from_the_rack_plan() {
    let s = bonded(None);
    check(&s, &networks(), true).unwrap();
    let plans =
        check_plans(&[("prod".to_string(), "10.20.0.110-10.20.0.150".to_string())].into(), &networks()).unwrap();
    let ports: Vec<Mac> = vec!["52:54:00:00:00:01".parse().unwrap(), "52:54:00:00:00:02".parse().unwrap()];
    let r = resolve(&s, &networks(), &ports, Some(Slot { plans: &plans, slot: 3 })).unwrap();
    let vlan = r.device("bond0.10").unwrap();
    assert_eq!(vlan.address, Some("10.20.0.112/24".parse().unwrap()));
    assert_eq!(vlan.kind, Kind::Vlan { id: 10, link: "bond0".into() });
    let bond = r.device("bond0").unwrap();
    assert_eq!(bond.vlans, vec!["bond0.10".to_string()]);
    assert!(matches!(&bond.kind, Kind::Bond { mac: Some(m), .. } if *m == ports[0]));
    assert!(
        matches!(&r.device("nic1").unwrap().kind, Kind::Ethernet { mac: Some(m), bond: Some(b), .. } if *m == ports[1] && b == "bond0")
    );
    assert_eq!(r.gateway, Some(("bond0.10".into(), "10.20.0.1".parse().unwrap())));
    assert_eq!(r.dns, vec!["10.20.0.53".parse::<std::net::Ipv4Addr>().unwrap()]);
    assert_eq!(r.agent_via.as_deref(), Some("bond0"));
}

#[test]
fn a_machines_own_address_wins_and_a_missing_source_is_named() {
    let s = bonded(Some("10.20.0.120"));
    check(&s, &networks(), false).unwrap();
    let ports: Vec<Mac> = vec!["52:54:00:00:00:01".parse().unwrap(), "52:54:00:00:00:02".parse().unwrap()];
    let r = resolve(&s, &networks(), &ports, None).unwrap();
    assert_eq!(r.device("bond0.10").unwrap().address, Some("10.20.0.120/24".parse().unwrap()));
    let e = resolve(&bonded(None), &networks(), &ports, None).unwrap_err();
    assert!(e.contains("bond0.10") && e.contains("prod"), "{e}");
    let e = resolve(&bonded(None), &networks(), &ports[..1], None).unwrap_err();
    assert!(e.contains("port 1") && e.contains("1 physical port"), "{e}");
}

#[test]
fn each_refusal_names_its_field() {
    let mut s = bonded(None);
    s.bonds.push(Bond {
        name: "bond1".into(),
        members: vec!["nic1".into()],
        mode: BondMode::Lacp,
        miimon: 100,
        dhcp: false,
        network: None,
        address: None,
        mtu: None,
    });
    let e = refused(&s, false);
    assert_eq!(e.field, "bonds[1].members[0]");
    assert!(e.message.contains("bonds[0]"), "{e}");

    let mut s = bonded(None);
    s.vlans[0].id = 4095;
    assert_eq!(refused(&s, false).field, "vlans[0].id");
    s.vlans[0].id = 0;
    assert_eq!(refused(&s, false).field, "vlans[0].id");
    s.vlans[0].id = 20;
    assert!(refused(&s, false).message.contains("network prod is VLAN 10"));

    let e = refused(&bonded(Some("10.20.0.20")), false);
    assert_eq!(e.field, "vlans[0].address");
    assert!(refused(&bonded(Some("10.20.0.1")), false).message.contains("gateway"));
    assert_eq!(refused(&bonded(Some("10.20.0.120")), true).field, "vlans[0].address");

    let mut s = bonded(None);
    s.vlans[0].network = Some("nowhere".into());
    let e = refused(&s, false);
    assert_eq!(e.field, "vlans[0].network");
    assert!(e.message.contains("prod, storage"), "{e}");

    let mut s = bonded(None);
    s.gateway_network = Some("storage".into());
    assert_eq!(refused(&s, false).field, "gateway_network");
    s.ethernets.push(Ethernet {
        name: "nic2".into(),
        mac: None,
        match_name: Some("enp3s*".into()),
        port: None,
        dhcp: false,
        network: Some("storage".into()),
        address: None,
        mtu: None,
    });
    let e = refused(&s, false);
    assert!(e.field == "gateway_network" && e.message.contains("no gateway"), "{e}");

    let mut s = bonded(None);
    s.ethernets[0].dhcp = true;
    assert!(refused(&s, false).message.contains("bond member"));
    let mut s = bonded(None);
    s.ethernets[1].port = Some(0);
    assert_eq!(refused(&s, false).field, "ethernets[1].port");
    let mut s = bonded(None);
    s.ethernets[0].mac = Some("52:54:00:00:00:01".parse().unwrap());
    assert_eq!(refused(&s, false).field, "ethernets[0]");
    s.ethernets[0].port = None;
    check(&s, &networks(), false).unwrap();
    assert_eq!(refused(&s, true).field, "ethernets[0].mac");
    let mut s = bonded(None);
    s.bonds[0].name = "bond0;reboot".into();
    assert_eq!(refused(&s, false).field, "bonds[0].name");
    let mut s = bonded(None);
    s.vlans[0].link = "nic0".into();
    assert_eq!(refused(&s, false).field, "vlans[0].link");
    let mut s = bonded(None);
    s.bonds[0].network = Some("prod".into());
    s.bonds[0].dhcp = false;
    assert_eq!(refused(&s, false).field, "vlans[0].network");
    let mut s = bonded(None);
    s.agent_via = Some("nic0".into());
    assert_eq!(refused(&s, false).field, "agent_via");
    let mut s = bonded(None);
    s.bonds[0].mtu = Some(100);
    assert_eq!(refused(&s, false).field, "bonds[0].mtu");
}

#[test]
fn unknown_fields_and_modes_are_refused_when_read() {
    let bad = [
        json!({"ethernets": [{"name": "nic0", "port": 0, "netwrok": "prod"}]}),
        json!({"bonds": [{"name": "bond0", "members": ["nic0"], "mode": "round-robin"}]}),
        json!({"vlan": []}),
    ];
    for b in bad {
        assert!(serde_json::from_value::<NetSpec>(b.clone()).is_err(), "{b}");
    }
}

#[test]
fn rack_plans_stay_inside_their_network() {
    let plan = |p: &str| check_plans(&[("prod".to_string(), p.to_string())].into(), &networks());
    assert!(plan("10.20.0.100-10.20.0.199").is_ok());
    assert_eq!(plan("10.20.0.90-10.20.0.120").unwrap_err().field, "network_plans.prod");
    assert!(plan("10.20.0.120-10.20.0.110").is_err());
    assert!(plan("10.20.0.x-10.20.0.110").is_err());
    let e = check_plans(&[("dmz".to_string(), "10.0.0.1-10.0.0.2".to_string())].into(), &networks()).unwrap_err();
    assert_eq!(e.field, "network_plans.dmz");
    let storage = |p: &str| check_plans(&[("storage".to_string(), p.to_string())].into(), &networks());
    assert!(storage("10.30.0.0-10.30.0.10").is_err(), "the network address");
    assert!(storage("10.30.0.250-10.30.0.255").is_err(), "the broadcast address");
    assert!(storage("10.30.0.1-10.30.0.254").is_ok());
}

#[test]
fn mtu_comes_from_the_network_unless_the_device_sets_it() {
    let s = spec(json!({"ethernets": [
        {"name": "san", "match_name": "enp9s0", "network": "storage", "address": "10.30.0.7"},
        {"name": "pxe", "port": 0, "dhcp": true, "mtu": 1500}
    ]}));
    check(&s, &networks(), false).unwrap();
    let r = resolve(&s, &networks(), &["52:54:00:00:00:01".parse().unwrap()], None).unwrap();
    assert_eq!(r.device("san").unwrap().mtu, Some(9000));
    assert_eq!(r.device("pxe").unwrap().mtu, Some(1500));
    assert_eq!(r.gateway, None);
    assert_eq!(r.agent_via.as_deref(), Some("pxe"));
}

#[test]
fn what_came_up_is_compared_with_the_spec() {
    use rackboot_agent::wire::Link;
    let ports: Vec<Mac> = vec!["52:54:00:00:00:01".parse().unwrap(), "52:54:00:00:00:02".parse().unwrap()];
    let r = resolve(&bonded(Some("10.20.0.120")), &networks(), &ports, None).unwrap();
    let link = |name: &str, kind: &str| Link {
        name: name.into(),
        kind: kind.into(),
        mac: "52:54:00:00:00:01".into(),
        up: true,
        ..Default::default()
    };
    let mut links = vec![
        Link {
            bond_mode: Some("active-backup".into()),
            members: vec!["ens3".into(), "ens4".into()],
            addresses: vec!["198.18.0.60/24".into()],
            ..link("bond0", "bond")
        },
        Link {
            vlan_id: Some(10),
            parent: Some("bond0".into()),
            addresses: vec!["10.20.0.120/24".into()],
            ..link("bond0.10", "vlan")
        },
        link("ens3", "ether"),
        link("ens4", "ether"),
    ];
    assert_eq!(differences(&r, &links), Vec::<String>::new());
    links[0].members.pop();
    links[0].bond_mode = Some("balance-rr".into());
    links[1].addresses.clear();
    links[1].up = false;
    assert_eq!(
        differences(&r, &links),
        [
            "bond0 is balance-rr, not active-backup",
            "bond0 has 1 of its 2 members",
            "bond0.10 (bond0.10) is down",
            "bond0.10 (bond0.10) lacks 10.20.0.120/24",
        ]
    );
    links.remove(1);
    assert!(differences(&r, &links).contains(&"bond0.10 is missing".to_string()));
}
