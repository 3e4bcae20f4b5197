//! Placement, pure: which rack and slot a machine's evidence points at. Evidence places it:
//! the operator's confirmation, the rack's CSV by MAC, option 82 from the relay (remote id =
//! the switch, circuit id = the port). What the node says of itself is a claim: the LLDP
//! neighbour its BootOS agent heard (chassis = the switch, port id = the port), or the CSV row
//! naming the DMI serial it reported. A claim places it only in a rack with `trust_lldp`, and
//! never in a slot another machine holds (the CMDB checks that); otherwise it waits for an
//! operator to confirm it.

use rackboot_agent::wire::LldpNeighbor;

use super::relay::{self, Sent, Unmatched};
use super::{CsvMachine, Rack};
use crate::mac::Mac;
use crate::records::Machine;

pub use crate::placement::{Claim, Evidence, Placement};

/// What every kind of evidence says about one machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub option82: Option<Claim>,
    pub lldp: Option<Claim>,
    /// The CSV row naming one of its MACs.
    pub csv: Option<(Claim, CsvMachine)>,
    /// The CSV row naming its reported serial.
    pub serial: Option<(Claim, CsvMachine)>,
    /// The operator's confirmation, while its rack still exists.
    pub confirmed: Option<Claim>,
    /// Option 82 it came with that names no mapped port of the switch it names (or no rack's
    /// switch at all).
    pub unmatched: Option<Unmatched>,
}

impl Found {
    /// What places the machine: the operator's confirmation, else the CSV by MAC, else option
    /// 82, else (in a rack that trusts LLDP) its LLDP neighbour or its serial in the CSV. With
    /// the CSV row that names it, if one does.
    pub fn chosen(&self, racks: &[Rack]) -> Option<(Claim, Evidence, Option<&CsvMachine>)> {
        let trusted = |c: &Claim| racks.iter().any(|r| r.name == c.rack && r.trust_lldp);
        if let Some(c) = &self.confirmed {
            let row = [&self.csv, &self.serial].into_iter().flatten().find(|(r, _)| same_slot(r, c));
            return Some((c.clone(), Evidence::Operator, row.map(|(_, m)| m)));
        }
        if let Some((c, row)) = &self.csv {
            return Some((c.clone(), Evidence::Csv, Some(row)));
        }
        if let Some(c) = &self.option82 {
            return Some((c.clone(), Evidence::Option82, None));
        }
        if let Some(c) = self.lldp.as_ref().filter(|c| trusted(c)) {
            return Some((c.clone(), Evidence::Lldp, None));
        }
        let (c, row) = self.serial.as_ref().filter(|(c, _)| trusted(c))?;
        Some((c.clone(), Evidence::Serial, Some(row)))
    }

    /// Whether it says what the stored placement records and places it by the same evidence
    /// (nothing to do then).
    pub fn same_as(&self, racks: &[Rack], p: Option<&Placement>) -> bool {
        let csv = |c: &Option<(Claim, CsvMachine)>| c.as_ref().map(|c| c.0.clone());
        match p {
            None => {
                self.option82.is_none()
                    && self.lldp.is_none()
                    && self.csv.is_none()
                    && self.serial.is_none()
                    && self.unmatched.is_none()
            }
            Some(p) => {
                p.option82 == self.option82
                    && p.lldp == self.lldp
                    && p.csv == csv(&self.csv)
                    && p.serial == csv(&self.serial)
                    && p.confirmed == self.confirmed
                    && p.unmatched == self.unmatched
                    && p.by == self.chosen(racks).map(|c| c.1)
            }
        }
    }
}

/// Whether two claims name the same slot of the same rack (ports aside).
pub fn same_slot(a: &Claim, b: &Claim) -> bool {
    a.rack == b.rack && a.slot == b.slot
}

/// Everything the machine's record says about where it is.
pub fn find(racks: &[Rack], m: &Machine) -> Found {
    let lldp = m.inventory.as_ref().map(|i| i.lldp.as_slice()).unwrap_or_default();
    let confirmed = m.placement.as_ref().and_then(|p| p.confirmed.clone());
    let sent = m.circuit_id.as_deref().map(|c| relay::decode(c, m.remote_id.as_deref()));
    let option82 = sent.as_ref().and_then(|s| claim_of(racks, s));
    let unmatched = match (&sent, &option82) {
        (Some(s), None) => {
            Some(relay::unmatched(s, racks.iter().find(|r| remote_matches(r, s)).map(|r| r.name.clone())))
        }
        _ => None,
    };
    Found {
        option82,
        unmatched,
        lldp: by_lldp(racks, lldp),
        csv: by_csv(racks, &m.macs, None),
        serial: m.serial.as_deref().and_then(|s| by_csv(racks, &[], Some(s))),
        confirmed: confirmed.filter(|c| racks.iter().any(|r| r.name == c.rack)),
    }
}

/// The text of a relay id the DHCP server stored as hex, when it is printable.
pub fn decode_hex_text(hex: &str) -> Option<String> {
    if !hex.len().is_multiple_of(2) || hex.len() > 512 {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok()).collect();
    let text = String::from_utf8(bytes?).ok()?;
    let text = text.trim_matches(char::from(0)).trim();
    (!text.is_empty() && !text.chars().any(char::is_control)).then(|| text.to_string())
}

/// Whether two identities are the same, ignoring case and `:`, `-`, `.` separators (chassis ids
/// are MACs written many ways).
pub fn same_id(a: Option<&str>, b: Option<&str>) -> bool {
    let norm = |s: &str| s.chars().filter(|c| !":-. ".contains(*c)).collect::<String>().to_ascii_lowercase();
    match (a, b) {
        (Some(a), Some(b)) => !norm(a).is_empty() && norm(a) == norm(b),
        _ => false,
    }
}

/// Whether the relay's remote id names this rack's switch: its text, or the MAC however sent.
fn remote_matches(rack: &Rack, sent: &Sent) -> bool {
    rack.switch.remote_id.as_deref().is_some_and(|want| sent.names_switch(want))
}

/// Where option 82 puts the machine (`relay` reads each switch family's form). A relay that
/// sends no remote id (`dhcrelay -a` sends only the circuit id) can place it only in a rack
/// that expects none, and only when exactly one such rack maps the port.
pub fn by_option82(racks: &[Rack], circuit_hex: Option<&str>, remote_hex: Option<&str>) -> Option<Claim> {
    let sent = relay::decode(circuit_hex?, remote_hex);
    claim_of(racks, &sent)
}

fn claim_of(racks: &[Rack], sent: &Sent) -> Option<Claim> {
    let claim = |r: &Rack| {
        let p = r.ports.iter().find(|p| sent.names_port(&p.port))?;
        Some(Claim { rack: r.name.clone(), slot: p.slot, port: Some(p.port.clone()) })
    };
    match sent.remote {
        Some(_) => racks.iter().filter(|r| remote_matches(r, sent)).find_map(claim),
        None => {
            let mut found = racks.iter().filter(|r| r.switch.remote_id.is_none()).filter_map(claim);
            let first = found.next();
            first.filter(|_| found.next().is_none())
        }
    }
}

/// Where the LLDP neighbours the agent heard put the machine (the first that matches a rack).
pub fn by_lldp(racks: &[Rack], neighbours: &[LldpNeighbor]) -> Option<Claim> {
    neighbours.iter().find_map(|n| {
        racks.iter().find_map(|r| {
            let by_name = r
                .switch
                .lldp_chassis_name
                .as_deref()
                .is_some_and(|want| n.system_name.as_deref().is_some_and(|s| s.eq_ignore_ascii_case(want)));
            if !by_name && !same_id(r.switch.lldp_chassis_id.as_deref(), Some(&n.chassis_id)) {
                return None;
            }
            let port_is = |p: &str| {
                relay::same_port(p, &n.port_id) || n.port_description.as_deref().is_some_and(|d| relay::same_port(p, d))
            };
            let p = r.ports.iter().find(|p| port_is(&p.port))?;
            Some(Claim { rack: r.name.clone(), slot: p.slot, port: Some(p.port.clone()) })
        })
    })
}

/// The CSV row that lists the machine, by any of its MACs or its serial.
pub fn by_csv(racks: &[Rack], macs: &[Mac], serial: Option<&str>) -> Option<(Claim, CsvMachine)> {
    racks.iter().find_map(|r| {
        let row = r.machines.iter().find(|row| row.names(macs, serial))?;
        Some((Claim { rack: r.name.clone(), slot: row.slot, port: None }, row.clone()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::racks::{validate, Catalog, RackSpec};

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("{b:02x}")).collect()
    }

    fn rack(name: &str, remote: &str, chassis: &str) -> Rack {
        let spec: RackSpec = serde_json::from_value(serde_json::json!({
            "name": name, "switch": {"remote_id": remote, "lldp_chassis_name": chassis},
            "ports": ["Ethernet1-42 -> U1-U42"], "machines_csv": "52:54:00:00:00:99,,,U43"
        }))
        .unwrap();
        validate(spec, &Catalog::default(), 0).unwrap()
    }

    fn lldp(system: &str, port: &str) -> LldpNeighbor {
        LldpNeighbor {
            interface: "eth0".into(),
            chassis_id: "00:11:22:33:44:55".into(),
            port_id: port.into(),
            system_name: Some(system.into()),
            port_description: None,
        }
    }

    #[test]
    fn option82_by_remote_id_text_or_hex_and_the_port_word() {
        let racks = [rack("r1", "leaf-r1", "leaf-r1"), rack("r2", "00:aa:bb:cc:dd:ee", "leaf-r2")];
        let c = by_option82(&racks, Some(&hex("Ethernet7")), Some(&hex("LEAF-R1"))).unwrap();
        assert_eq!((c.rack.as_str(), c.slot), ("r1", 7));
        let c = by_option82(&racks, Some(&hex("leaf-r2:Ethernet12")), Some("00aabbccddee")).unwrap();
        assert_eq!((c.rack.as_str(), c.slot), ("r2", 12));
        assert_eq!(by_option82(&racks, Some(&hex("Ethernet7")), Some(&hex("leaf-r9"))), None, "another switch");
        assert_eq!(by_option82(&racks, Some(&hex("Ethernet70")), Some(&hex("leaf-r1"))), None, "unmapped port");
        assert_eq!(by_option82(&racks, Some(&hex("Ethernet1")), None), None, "no remote id, and r1 expects one");
        let lldp_only = |name: &str| {
            let mut r = rack(name, "x", "leaf");
            r.switch.remote_id = None;
            r
        };
        let one = [racks[0].clone(), lldp_only("r3")];
        let c = by_option82(&one, Some(&hex("Ethernet5")), None).unwrap();
        assert_eq!((c.rack.as_str(), c.slot), ("r3", 5), "the one rack without a remote id that maps the port");
        let two = [lldp_only("r3"), lldp_only("r4")];
        assert_eq!(by_option82(&two, Some(&hex("Ethernet5")), None), None, "ambiguous: two racks map Ethernet5");
    }

    #[test]
    fn option82_that_places_nothing_is_kept_decoded_with_the_rack_whose_switch_sent_it() {
        let racks = [rack("r1", "00:1b:54:aa:bb:cc", "leaf-r1")];
        let mut m = Machine::new(1, vec!["52:54:00:00:00:01".parse().unwrap()], 0);
        (m.circuit_id, m.remote_id) = (Some("0004000a0105".into()), Some("0006001b54aabbcc".into()));
        let f = find(&racks, &m);
        assert_eq!(f.option82, None, "Cisco's module 1 port 5 is no Ethernet5");
        let u = f.unmatched.unwrap();
        assert_eq!((u.rack.as_deref(), u.vlan, u.form.as_str()), (Some("r1"), Some(10), "cisco-typed"));
        m.remote_id = Some(hex("other-switch"));
        assert_eq!(find(&racks, &m).unmatched.unwrap().rack, None, "no rack's switch");
        m.circuit_id = Some(hex("Ethernet5"));
        m.remote_id = Some("001b54aabbcc".into());
        let f = find(&racks, &m);
        assert_eq!((f.option82.map(|c| c.slot), f.unmatched), (Some(5), None));
    }

    #[test]
    fn lldp_by_system_name_or_chassis_id_and_csv_by_mac() {
        let racks = [rack("r1", "leaf-r1", "leaf-r1")];
        let c = by_lldp(&racks, &[lldp("other", "Ethernet3"), lldp("Leaf-R1", "ethernet3")]).unwrap();
        assert_eq!((c.rack.as_str(), c.slot), ("r1", 3));
        assert_eq!(by_lldp(&racks, &[lldp("leaf-r1", "Ethernet99")]), None);
        assert_eq!(by_lldp(&racks, &[lldp("leaf-r1", "Et4")]).map(|c| c.slot), Some(4), "the short form of Ethernet4");
        let mac: Mac = "52:54:00:00:00:99".parse().unwrap();
        assert_eq!(by_csv(&racks, &[mac], None).unwrap().0.slot, 43);
        assert!(by_csv(&racks, &["52:54:00:00:00:98".parse().unwrap()], None).is_none());
    }

    #[test]
    fn a_nodes_word_places_only_where_the_rack_trusts_it_and_the_operator_wins() {
        let mut racks = vec![rack("r1", "leaf-r1", "leaf-r1")];
        let claim = |slot| Claim { rack: "r1".into(), slot, port: None };
        let lldp = Some(Claim { port: Some("Ethernet3".into()), ..claim(3) });
        let row = CsvMachine { mac: None, serial: Some("SN1".into()), hostname: None, ip: None, slot: 43 };
        let said = Found { lldp: lldp.clone(), serial: Some((claim(43), row.clone())), ..Found::default() };
        assert_eq!(said.chosen(&racks), None, "LLDP and the serial are claims");
        racks[0].trust_lldp = true;
        let (c, by, _) = said.chosen(&racks).unwrap();
        assert_eq!((c.slot, by), (3, Evidence::Lldp), "trusted: LLDP before the serial");
        let serial_only = Found { serial: Some((claim(43), row.clone())), ..Found::default() };
        assert_eq!(serial_only.chosen(&racks).map(|c| (c.0.slot, c.1)), Some((43, Evidence::Serial)));

        let relayed = Found { option82: Some(claim(5)), ..said.clone() };
        assert_eq!(relayed.chosen(&racks).map(|c| c.1), Some(Evidence::Option82), "the network over the node");
        let listed = Found { csv: Some((claim(9), row.clone())), ..relayed.clone() };
        assert_eq!(listed.chosen(&racks).map(|c| c.1), Some(Evidence::Csv), "the CSV by MAC over option 82");
        let confirmed = Found { confirmed: Some(claim(43)), ..listed };
        let (c, by, row_of) = confirmed.chosen(&racks).unwrap();
        assert_eq!((c.slot, by), (43, Evidence::Operator), "the operator over everything");
        assert_eq!(row_of, Some(&row), "with the CSV row of its slot (its hostname and address)");
    }

    #[test]
    fn the_serial_is_matched_apart_from_the_macs() {
        let racks = [rack("r1", "leaf-r1", "leaf-r1")];
        let mut m = Machine::new(1, vec!["52:54:00:00:00:01".parse().unwrap()], 0);
        m.serial = Some("sn-7".into());
        let mut with_serial = racks[0].clone();
        with_serial.machines[0].serial = Some("SN-7".into());
        with_serial.machines[0].mac = None;
        let f = find(&[with_serial], &m);
        assert_eq!((f.csv.is_none(), f.serial.map(|s| s.0.slot)), (true, Some(43)));
    }

    #[test]
    fn relay_ids_decode_only_when_printable() {
        assert_eq!(decode_hex_text(&hex("swp7")).as_deref(), Some("swp7"));
        assert_eq!(decode_hex_text("0001ff"), None);
        assert_eq!(decode_hex_text("abc"), None);
    }
}
