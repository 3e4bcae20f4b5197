//! Placement, pure: which rack and slot a machine's evidence points at. Option 82 from the
//! relay (remote id = the switch, circuit id = the port), the LLDP neighbour its BootOS agent
//! heard (chassis = the switch, port id = the port), or the rack's CSV (its MAC or serial).

use rackboot_agent::wire::LldpNeighbor;

use super::{CsvMachine, Rack};
use crate::mac::Mac;
use crate::records::Machine;

pub use crate::placement::{Claim, Evidence, Placement};

/// What every kind of evidence says about one machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub option82: Option<Claim>,
    pub lldp: Option<Claim>,
    pub csv: Option<(Claim, CsvMachine)>,
}

impl Found {
    /// The claim that places the machine: the operator's CSV, else option 82, else LLDP.
    pub fn chosen(&self) -> Option<(Claim, Evidence)> {
        if let Some((c, _)) = &self.csv {
            return Some((c.clone(), Evidence::Csv));
        }
        (self.option82.clone().map(|c| (c, Evidence::Option82)))
            .or_else(|| self.lldp.clone().map(|c| (c, Evidence::Lldp)))
    }

    /// Whether it says what the stored placement says (nothing to do then).
    pub fn same_as(&self, p: Option<&Placement>) -> bool {
        match p {
            None => self.chosen().is_none(),
            Some(p) => {
                p.option82 == self.option82 && p.lldp == self.lldp && p.csv == self.csv.as_ref().map(|c| c.0.clone())
            }
        }
    }
}

/// Everything the machine's record says about where it is.
pub fn find(racks: &[Rack], m: &Machine) -> Found {
    let lldp = m.inventory.as_ref().map(|i| i.lldp.as_slice()).unwrap_or_default();
    Found {
        option82: by_option82(racks, m.circuit_id.as_deref(), m.remote_id.as_deref()),
        lldp: by_lldp(racks, lldp),
        csv: by_csv(racks, &m.macs, m.serial.as_deref()),
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

/// Whether the relay's remote id (hex as stored) names this rack's switch: its text, or its hex.
fn remote_matches(rack: &Rack, remote_hex: &str) -> bool {
    let Some(want) = rack.switch.remote_id.as_deref() else { return false };
    decode_hex_text(remote_hex).is_some_and(|t| t.eq_ignore_ascii_case(want)) || same_id(Some(remote_hex), Some(want))
}

/// The port a circuit id names: its text whole, or one of its words (`leaf1:Ethernet7`,
/// `Ethernet7 vlan10` both name `Ethernet7`). A port is never matched by a prefix of a word.
fn circuit_words(circuit_hex: &str) -> Vec<String> {
    let Some(text) = decode_hex_text(circuit_hex) else { return vec![circuit_hex.to_string()] };
    let mut words = vec![text.clone()];
    words.extend(
        text.split(|c: char| c.is_whitespace() || ",;|:@".contains(c)).filter(|w| !w.is_empty()).map(String::from),
    );
    words
}

/// Where option 82 puts the machine. A relay that sends no remote id (`dhcrelay -a` sends
/// only the circuit id) can place it only in a rack that expects none, and only when exactly
/// one such rack maps the port.
pub fn by_option82(racks: &[Rack], circuit_hex: Option<&str>, remote_hex: Option<&str>) -> Option<Claim> {
    let words = circuit_words(circuit_hex?);
    let claim = |r: &Rack| {
        let p = r.ports.iter().find(|p| words.iter().any(|w| w.eq_ignore_ascii_case(&p.port)))?;
        Some(Claim { rack: r.name.clone(), slot: p.slot, port: Some(p.port.clone()) })
    };
    match remote_hex {
        Some(remote) => racks.iter().filter(|r| remote_matches(r, remote)).find_map(claim),
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
                n.port_id.eq_ignore_ascii_case(p)
                    || n.port_description.as_deref().is_some_and(|d| d.eq_ignore_ascii_case(p))
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
    fn lldp_by_system_name_or_chassis_id_and_csv_by_mac() {
        let racks = [rack("r1", "leaf-r1", "leaf-r1")];
        let c = by_lldp(&racks, &[lldp("other", "Ethernet3"), lldp("Leaf-R1", "ethernet3")]).unwrap();
        assert_eq!((c.rack.as_str(), c.slot), ("r1", 3));
        assert_eq!(by_lldp(&racks, &[lldp("leaf-r1", "Ethernet99")]), None);
        let mac: Mac = "52:54:00:00:00:99".parse().unwrap();
        assert_eq!(by_csv(&racks, &[mac], None).unwrap().0.slot, 43);
        assert!(by_csv(&racks, &["52:54:00:00:00:98".parse().unwrap()], None).is_none());
    }

    #[test]
    fn relay_ids_decode_only_when_printable() {
        assert_eq!(decode_hex_text(&hex("swp7")).as_deref(), Some("swp7"));
        assert_eq!(decode_hex_text("0001ff"), None);
        assert_eq!(decode_hex_text("abc"), None);
    }
}
