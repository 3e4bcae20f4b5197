use super::*;
use rackboot_model::network::{resolve, NetSpec, Network};
use serde_json::json;

fn networks() -> Vec<Network> {
    vec![Network {
        name: "prod".into(),
        cidr: "10.20.0.0/24".parse().unwrap(),
        gateway: Some("10.20.0.1".parse().unwrap()),
        vlan: Some(10),
        dns: vec!["10.20.0.53".parse().unwrap(), "10.20.0.54".parse().unwrap()],
        range: None,
        mtu: None,
    }]
}

fn resolved(spec: serde_json::Value) -> Resolved {
    let spec: NetSpec = serde_json::from_value(spec).unwrap();
    rackboot_model::network::check(&spec, &networks(), false).unwrap();
    resolve(&spec, &networks(), &[], None).unwrap()
}

/// An active-backup bond over two MACs that only carries VLAN 10, static in prod.
fn bond_vlan() -> Resolved {
    resolved(json!({
        "ethernets": [{"name": "nic0", "mac": "52:54:00:aa:00:01"}, {"name": "nic1", "mac": "52:54:00:aa:00:02"}],
        "bonds": [{"name": "bond0", "members": ["nic0", "nic1"], "mode": "active-backup"}],
        "vlans": [{"id": 10, "link": "bond0", "network": "prod", "address": "10.20.0.21"}],
    }))
}

#[test]
fn kickstart_defines_a_bond_that_only_carries_a_vlan_on_the_vlans_line() {
    assert_eq!(
        kickstart(&bond_vlan()).unwrap(),
        ["network --device=bond0 --bondslaves=$(port 52:54:00:aa:00:01),$(port 52:54:00:aa:00:02) \
             --bondopts=mode=active-backup,miimon=100 --bindto=mac --vlanid=10 --interfacename=bond0.10 \
             --bootproto=static --ip=10.20.0.21 --netmask=255.255.255.0 --gateway=10.20.0.1 \
             --nameserver=10.20.0.53,10.20.0.54 --onboot=yes --activate"]
    );
}

#[test]
fn kickstart_gives_a_bond_with_an_address_its_own_line() {
    let net = resolved(json!({
        "ethernets": [{"name": "nic0", "mac": "52:54:00:aa:00:01"}, {"name": "nic1", "match_name": "enp2s0"}],
        "bonds": [{"name": "bond0", "members": ["nic0", "nic1"], "mode": "802.3ad", "dhcp": true, "mtu": 9000}],
        "vlans": [{"id": 10, "link": "bond0", "network": "prod", "address": "10.20.0.21"}],
    }));
    assert_eq!(
        kickstart(&net).unwrap(),
        [
            "network --device=bond0 --bondslaves=$(port 52:54:00:aa:00:01),enp2s0 \
             --bondopts=mode=802.3ad,miimon=100,lacp_rate=fast,xmit_hash_policy=layer3+4 --bindto=mac \
             --bootproto=dhcp --nodefroute --mtu=9000 --onboot=yes --activate",
            "network --device=bond0 --vlanid=10 --interfacename=bond0.10 --bootproto=static --ip=10.20.0.21 \
             --netmask=255.255.255.0 --gateway=10.20.0.1 --nameserver=10.20.0.53,10.20.0.54 --onboot=yes --activate",
        ]
    );
}

#[test]
fn kickstart_names_ports_by_mac_or_through_port_and_keeps_a_carrier_without_addresses() {
    let net = resolved(json!({
        "ethernets": [
            {"name": "nic0", "mac": "52:54:00:aa:00:01", "dhcp": true},
            {"name": "nic1", "match_name": "enp*"},
        ],
        "vlans": [
            {"id": 10, "link": "nic1", "network": "prod", "address": "10.20.0.22"},
            {"id": 20, "link": "nic1", "name": "vlan20"},
        ],
    }));
    // nic1 carries two VLANs, so it has its own line and both VLANs name it as it does.
    assert_eq!(
        kickstart(&net).unwrap(),
        [
            "network --device=52:54:00:aa:00:01 --bootproto=dhcp --nodefroute --onboot=yes --activate",
            "network --device=$(port 'enp*') --noipv4 --noipv6 --onboot=yes --activate",
            "network --device=$(port 'enp*') --vlanid=10 --interfacename=nic1.10 --bootproto=static \
             --ip=10.20.0.22 --netmask=255.255.255.0 --gateway=10.20.0.1 --nameserver=10.20.0.53,10.20.0.54 \
             --onboot=yes --activate",
            "network --device=$(port 'enp*') --vlanid=20 --interfacename=vlan20 --noipv4 --noipv6 --onboot=yes --activate",
        ]
    );
    // The installer goes where the agent does: nic0, by DHCP, as it booted.
    assert_eq!(preseed(&net), ["d-i netcfg/choose_interface select 52:54:00:aa:00:01"]);
}

#[test]
fn kickstart_refuses_a_vlan_name_anaconda_refuses() {
    let mut net = bond_vlan();
    for d in net.devices.iter_mut().filter(|d| d.name == "bond0.10") {
        d.name = "vlan-prod".into();
    }
    assert!(kickstart(&net).unwrap_err().contains("NAME.ID or vlanID"));
}

#[test]
fn preseed_puts_the_installer_on_the_vlan_over_the_bonds_first_member() {
    assert_eq!(
        preseed(&bond_vlan()),
        [
            "# debian-installer cannot build a bond: it installs over bond0's first member, nic0.",
            "d-i netcfg/choose_interface select 52:54:00:aa:00:01",
            "d-i netcfg/use_vlan boolean true",
            "d-i netcfg/vlan_id string 10",
            "d-i netcfg/disable_autoconfig boolean true",
            "d-i netcfg/get_ipaddress string 10.20.0.21",
            "d-i netcfg/get_netmask string 255.255.255.0",
            "d-i netcfg/get_gateway string 10.20.0.1",
            "d-i netcfg/get_nameservers string 10.20.0.53 10.20.0.54",
            "d-i netcfg/confirm_static boolean true",
            "d-i preseed/early_command string kill-all-dhcp; netcfg",
        ]
    );
}

#[test]
fn a_dhcp_only_spec_keeps_dhcp_on_its_port() {
    let net = resolved(json!({"ethernets": [{"name": "nic0", "mac": "52:54:00:aa:00:01", "dhcp": true}]}));
    assert_eq!(
        kickstart(&net).unwrap(),
        ["network --device=52:54:00:aa:00:01 --bootproto=dhcp --onboot=yes --activate"]
    );
    // The installer is on DHCP already: no netcfg run again.
    assert_eq!(preseed(&net), ["d-i netcfg/choose_interface select 52:54:00:aa:00:01"]);
    let v2: serde_json::Value = serde_json::from_str(&render("autoinstall", Some(&net)).unwrap().network_v2).unwrap();
    assert_eq!(v2["ethernets"]["nic0"], json!({"match": {"macaddress": "52:54:00:aa:00:01"}, "dhcp4": true}));
}

#[test]
fn no_spec_renders_nothing_and_each_kind_gets_only_its_own() {
    for kind in ["kickstart", "preseed", "autoinstall"] {
        assert_eq!(render(kind, None).unwrap(), InstallerNetwork::default());
    }
    let net = bond_vlan();
    let ks = render("kickstart", Some(&net)).unwrap();
    assert!(!ks.network_lines.is_empty() && ks.netcfg_lines.is_empty() && ks.network_v2.is_empty());
    let ai = render("autoinstall", Some(&net)).unwrap();
    assert!(ai.network_lines.is_empty() && ai.network_v2.contains("\"bond0\""));
}

#[test]
fn names_that_could_start_another_option_or_command_are_refused() {
    for evil in ["bond0 --bootproto=dhcp", "a'b", "a\nnetwork", "$(reboot)", "a\"b"] {
        let mut net = bond_vlan();
        net.devices[2].name = evil.into();
        for kind in ["kickstart", "preseed", "autoinstall"] {
            assert!(render(kind, Some(&net)).is_err(), "{kind}: {evil:?}");
        }
    }
    let mut net = bond_vlan();
    if let Kind::Bond { members, .. } = &mut net.devices[2].kind {
        members[0] = "nic0;reboot".into();
    }
    assert!(render("kickstart", Some(&net)).is_err());
}
