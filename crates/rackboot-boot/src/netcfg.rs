//! A resolved network (`rackboot_model::network::Resolved`) in the installed system's own
//! terms: systemd-networkd files (what the identity step writes into an image) and cloud-init's
//! network-config version 2 (the NoCloud datasource and Ubuntu's autoinstall `network:` key;
//! JSON, which YAML readers take as it is). [`installer`] says it in each OS installer's terms.

pub mod installer;

use std::fmt::Write;

use rackboot_model::network::{Device, Kind, Resolved};
use serde_json::{json, Map, Value};

/// The files for `/etc/systemd/network/`, `(name, text)`, in the order written. Every name
/// starts `10-rackboot-` so they come before a distribution's catch-all DHCP file.
pub fn networkd(net: &Resolved) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for d in &net.devices {
        let stem = format!("10-rackboot-{}", d.name);
        match &d.kind {
            Kind::Ethernet { mac, match_name, bond } => {
                let mut t = String::from("[Match]\n");
                match (mac, match_name) {
                    // The permanent address: a bond gives its members its own MAC, and its VLANs share it.
                    (Some(m), _) => writeln!(t, "PermanentMACAddress={m}").ok(),
                    (None, Some(n)) => writeln!(t, "Name={n}").ok(),
                    (None, None) => None,
                };
                // A bond's members carry the bond's MTU; others their own.
                if let Some(mtu) = d.mtu.or_else(|| bond.as_ref().and_then(|b| net.device(b)?.mtu)) {
                    writeln!(t, "\n[Link]\nMTUBytes={mtu}").ok();
                }
                t.push_str("\n[Network]\n");
                match bond {
                    Some(b) => writeln!(t, "Bond={b}").ok(),
                    None => {
                        network_section(&mut t, net, d);
                        None
                    }
                };
                files.push((format!("{stem}.network"), t));
            }
            Kind::Bond { mode, miimon, mac, .. } => {
                let mut t = format!("[NetDev]\nName={}\nKind=bond\n", d.name);
                if let Some(m) = mac {
                    writeln!(t, "MACAddress={m}").ok();
                }
                if let Some(mtu) = d.mtu {
                    writeln!(t, "MTUBytes={mtu}").ok();
                }
                writeln!(t, "\n[Bond]\nMode={}\nMIIMonitorSec={miimon}ms", mode.as_str()).ok();
                if mode.as_str() == "802.3ad" {
                    t.push_str("LACPTransmitRate=fast\nTransmitHashPolicy=layer3+4\n");
                }
                files.push((format!("{stem}.netdev"), t));
                files.push((format!("{stem}.network"), matched(net, d)));
            }
            Kind::Vlan { id, .. } => {
                let mut t = format!("[NetDev]\nName={}\nKind=vlan\n", d.name);
                if let Some(mtu) = d.mtu {
                    writeln!(t, "MTUBytes={mtu}").ok();
                }
                writeln!(t, "\n[VLAN]\nId={id}").ok();
                files.push((format!("{stem}.netdev"), t));
                files.push((format!("{stem}.network"), matched(net, d)));
            }
        }
    }
    files
}

fn matched(net: &Resolved, d: &Device) -> String {
    let mut t = format!("[Match]\nName={}\n\n[Network]\n", d.name);
    network_section(&mut t, net, d);
    t
}

/// The `[Network]` lines of a device that is no bond member.
fn network_section(t: &mut String, net: &Resolved, d: &Device) {
    if d.dhcp {
        t.push_str("DHCP=ipv4\n");
    }
    if let Some(a) = d.address {
        writeln!(t, "Address={a}").ok();
    }
    if !d.dhcp && d.address.is_none() {
        // A VLAN's or bond's carrier only: no addresses, no link-local chatter.
        t.push_str("LinkLocalAddressing=no\nConfigureWithoutCarrier=yes\n");
    }
    if d.address.is_some() {
        for s in &net.dns {
            writeln!(t, "DNS={s}").ok();
        }
    }
    if let Some((_, gw)) = net.gateway.as_ref().filter(|(dev, _)| *dev == d.name) {
        writeln!(t, "Gateway={gw}").ok();
    }
    for v in &d.vlans {
        writeln!(t, "VLAN={v}").ok();
    }
    if d.dhcp && net.gateway.as_ref().is_some_and(|(dev, _)| *dev != d.name) {
        // The static network's gateway is the default route; DHCP's router must not compete.
        t.push_str("\n[DHCPv4]\nUseRoutes=no\n");
    }
}

/// cloud-init network-config version 2 (netplan's schema) as a JSON value.
pub fn netplan_v2(net: &Resolved) -> Value {
    let mut sections: [(&str, Map<String, Value>); 3] =
        [("ethernets", Map::new()), ("bonds", Map::new()), ("vlans", Map::new())];
    for d in &net.devices {
        let mut v = Map::new();
        let i = match &d.kind {
            Kind::Ethernet { mac, match_name, .. } => {
                let m = match (mac, match_name) {
                    (Some(m), _) => json!({"macaddress": m.to_string()}),
                    (None, Some(n)) => json!({"name": n}),
                    (None, None) => json!({}),
                };
                v.insert("match".into(), m);
                0
            }
            Kind::Bond { mode, miimon, members, mac } => {
                v.insert("interfaces".into(), json!(members));
                v.insert("parameters".into(), json!({"mode": mode.as_str(), "mii-monitor-interval": miimon}));
                if let Some(m) = mac {
                    v.insert("macaddress".into(), json!(m.to_string()));
                }
                1
            }
            Kind::Vlan { id, link } => {
                v.insert("id".into(), json!(id));
                v.insert("link".into(), json!(link));
                2
            }
        };
        if let Some(mtu) = d.mtu {
            v.insert("mtu".into(), json!(mtu));
        }
        v.insert("dhcp4".into(), json!(d.dhcp));
        if let Some(a) = d.address {
            v.insert("addresses".into(), json!([a.to_string()]));
            if !net.dns.is_empty() {
                v.insert("nameservers".into(), json!({"addresses": net.dns}));
            }
        }
        if let Some((_, gw)) = net.gateway.as_ref().filter(|(dev, _)| *dev == d.name) {
            v.insert("routes".into(), json!([{"to": "default", "via": gw}]));
        }
        if d.dhcp && net.gateway.as_ref().is_some_and(|(dev, _)| *dev != d.name) {
            v.insert("dhcp4-overrides".into(), json!({"use-routes": false}));
        }
        sections[i].1.insert(d.name.clone(), Value::Object(v));
    }
    let mut out = Map::new();
    out.insert("version".into(), json!(2));
    for (k, m) in sections {
        if !m.is_empty() {
            out.insert(k.into(), Value::Object(m));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rackboot_model::network::{resolve, NetSpec, Network};

    fn resolved() -> Resolved {
        let networks = vec![Network {
            name: "prod".into(),
            cidr: "10.20.0.0/24".parse().unwrap(),
            gateway: Some("10.20.0.1".parse().unwrap()),
            vlan: Some(10),
            dns: vec!["10.20.0.53".parse().unwrap()],
            range: None,
            mtu: None,
        }];
        let spec: NetSpec = serde_json::from_value(json!({
            "ethernets": [{"name": "nic0", "port": 0}, {"name": "nic1", "match_name": "enp2s0"}],
            "bonds": [{"name": "bond0", "members": ["nic0", "nic1"], "mode": "active-backup", "dhcp": true}],
            "vlans": [{"id": 10, "link": "bond0", "network": "prod", "address": "10.20.0.21"}],
        }))
        .unwrap();
        resolve(&spec, &networks, &["52:54:00:aa:00:01".parse().unwrap()], None).unwrap()
    }

    #[test]
    fn networkd_files_for_a_bond_with_a_vlan() {
        let files = networkd(&resolved());
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "10-rackboot-nic0.network",
                "10-rackboot-nic1.network",
                "10-rackboot-bond0.netdev",
                "10-rackboot-bond0.network",
                "10-rackboot-bond0.10.netdev",
                "10-rackboot-bond0.10.network"
            ]
        );
        let text = |n: &str| files.iter().find(|(f, _)| f == n).unwrap().1.clone();
        assert_eq!(
            text("10-rackboot-nic0.network"),
            "[Match]\nPermanentMACAddress=52:54:00:aa:00:01\n\n[Network]\nBond=bond0\n"
        );
        assert_eq!(text("10-rackboot-nic1.network"), "[Match]\nName=enp2s0\n\n[Network]\nBond=bond0\n");
        assert_eq!(
            text("10-rackboot-bond0.netdev"),
            "[NetDev]\nName=bond0\nKind=bond\nMACAddress=52:54:00:aa:00:01\n\n[Bond]\nMode=active-backup\nMIIMonitorSec=100ms\n"
        );
        assert_eq!(
            text("10-rackboot-bond0.network"),
            "[Match]\nName=bond0\n\n[Network]\nDHCP=ipv4\nVLAN=bond0.10\n\n[DHCPv4]\nUseRoutes=no\n"
        );
        assert_eq!(text("10-rackboot-bond0.10.netdev"), "[NetDev]\nName=bond0.10\nKind=vlan\n\n[VLAN]\nId=10\n");
        assert_eq!(
            text("10-rackboot-bond0.10.network"),
            "[Match]\nName=bond0.10\n\n[Network]\nAddress=10.20.0.21/24\nDNS=10.20.0.53\nGateway=10.20.0.1\n"
        );
    }

    #[test]
    fn network_config_v2_for_the_same() {
        let v = netplan_v2(&resolved());
        assert_eq!(v["version"], 2);
        assert_eq!(v["ethernets"]["nic0"]["match"]["macaddress"], "52:54:00:aa:00:01");
        assert_eq!(v["ethernets"]["nic1"]["match"]["name"], "enp2s0");
        assert_eq!(v["bonds"]["bond0"]["interfaces"], json!(["nic0", "nic1"]));
        assert_eq!(v["bonds"]["bond0"]["parameters"]["mode"], "active-backup");
        assert_eq!(v["bonds"]["bond0"]["dhcp4-overrides"]["use-routes"], false);
        assert_eq!(v["vlans"]["bond0.10"]["id"], 10);
        assert_eq!(v["vlans"]["bond0.10"]["link"], "bond0");
        assert_eq!(v["vlans"]["bond0.10"]["addresses"], json!(["10.20.0.21/24"]));
        assert_eq!(v["vlans"]["bond0.10"]["routes"], json!([{"to": "default", "via": "10.20.0.1"}]));
        assert_eq!(v["vlans"]["bond0.10"]["nameservers"]["addresses"], json!(["10.20.0.53"]));
    }
}
