//! What a relay's option 82 says, as each switch family sends it, and whether it names a port
//! the way an operator writes it on that switch. Pure: the DHCP server stores the circuit and
//! remote ids as hex; this reads them.
//!
//! | family | circuit id (default) | remote id (default) |
//! |---|---|---|
//! | Cisco IOS, IOS-XE, NX-OS | typed: type 0, length 4, VLAN (2 bytes), module, port | typed: type 0, length 6, the switch MAC |
//! | Cisco, `format string` | the text configured per interface | the text configured (often the hostname) |
//! | Juniper | `ge-0/0/5.0:default` (interface.unit:VLAN), with `prefix hostname` `leaf1:ge-0/0/5.0:vlan10`, or the interface description | the hostname or a string, when configured |
//! | Arista | the interface name, `Ethernet5` | the switch MAC, six bytes |
//! | SONiC | `host:Ethernet5` | the switch MAC or hostname |
//! | Cumulus, ISC dhcrelay | the interface name, `swp5` | the switch MAC, or none |
//! | Dell OS10 | the interface name, `ethernet1/1/5` | the system MAC |
//! | Nokia SR Linux | `ethernet-1/5` (with a subinterface, `ethernet-1/5.0`) | the system MAC |
//!
//! A port matches as written on the switch: the same name in any case; Cisco's short and long
//! forms of one interface (`Gi1/0/5`, `GigabitEthernet1/0/5`); a Junos or SR Linux interface
//! without its unit (`ge-0/0/5` for `ge-0/0/5.0`); Cisco's typed module 1 port 5 for `Gi1/0/5`
//! or `Gi1/5` of any speed. Never by a prefix of a number (`Ethernet1` is not `Ethernet12`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::place::{decode_hex_text, same_id};
pub use crate::placement::Unmatched;

/// A port name taken apart: the letters of its family (lowercase, no `-`), its numbers, and a
/// unit or subinterface after a `.`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PortName {
    family: String,
    numbers: Vec<u32>,
    unit: Option<u32>,
}

impl PortName {
    fn parse(s: &str) -> Option<PortName> {
        let s = s.trim();
        let split = s.find(|c: char| c.is_ascii_digit())?;
        let (head, tail) = s.split_at(split);
        let family: String = head.chars().filter(|c| c.is_ascii_alphabetic()).collect::<String>().to_ascii_lowercase();
        if head.chars().any(|c| !(c.is_ascii_alphabetic() || c == '-' || c == ' ')) {
            return None;
        }
        let (body, unit) = match tail.split_once('.') {
            Some((b, u)) => (b, Some(u.parse().ok()?)),
            None => (tail, None),
        };
        let numbers: Option<Vec<u32>> = body.split('/').map(|n| n.parse().ok()).collect();
        let numbers = numbers?;
        (!numbers.is_empty() && numbers.len() <= 4).then_some(PortName { family, numbers, unit })
    }

    /// Whether the port written `self` is the port sent `sent` (a unit the operator left out
    /// is any unit).
    fn names(&self, sent: &PortName) -> bool {
        let families = self.family == sent.family
            || (self.family.len() >= 2 && sent.family.starts_with(&self.family))
            || (sent.family.len() >= 2 && self.family.starts_with(&sent.family));
        families && self.numbers == sent.numbers && (self.unit.is_none() || self.unit == sent.unit)
    }
}

/// Whether `written` (a rack's port as the operator wrote it) names the port `sent` (a word of
/// what a relay or an LLDP neighbour sent).
pub fn same_port(written: &str, sent: &str) -> bool {
    if written.trim().eq_ignore_ascii_case(sent.trim()) {
        return true;
    }
    match (PortName::parse(written), PortName::parse(sent)) {
        (Some(w), Some(s)) => w.names(&s),
        _ => false,
    }
}

/// Cisco's typed circuit id: VLAN, module, port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CiscoPort {
    pub vlan: u16,
    pub module: u8,
    pub port: u8,
}

/// Option 82 as read: the port words and switch ids it may name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sent {
    /// The circuit id's text and its words (`leaf1:ge-0/0/5.0:default` gives the whole, then
    /// `leaf1`, `ge-0/0/5.0`, `default`); the hex when it is not text.
    pub words: Vec<String>,
    /// Cisco's typed circuit id.
    pub cisco: Option<CiscoPort>,
    /// The remote id: its text, the MAC of Cisco's typed form, or its hex.
    pub remote: Option<String>,
    /// What the circuit id looked like: `cisco-typed`, `text`, `binary`.
    pub form: &'static str,
}

fn bytes(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || hex.len() > 512 {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

fn mac_text(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// Reads option 82's circuit id and remote id (hex, as the DHCP server stores them).
pub fn decode(circuit_hex: &str, remote_hex: Option<&str>) -> Sent {
    let raw = bytes(circuit_hex).unwrap_or_default();
    let mut sent = Sent::default();
    if let [0, 4, v1, v2, module, port] = raw[..] {
        sent.cisco = Some(CiscoPort { vlan: u16::from_be_bytes([v1, v2]), module, port });
        sent.form = "cisco-typed";
    } else if let Some(text) = decode_hex_text(circuit_hex) {
        sent.words.push(text.clone());
        let parts = text.split(|c: char| c.is_whitespace() || ",;|:@".contains(c)).filter(|w| !w.is_empty());
        sent.words.extend(parts.map(String::from).filter(|w| *w != text));
        sent.form = "text";
    } else {
        sent.words.push(circuit_hex.to_ascii_lowercase());
        sent.form = "binary";
    }
    sent.remote = remote_hex.map(|r| match bytes(r).as_deref() {
        Some([0, 6, mac @ ..]) if mac.len() == 6 => mac_text(mac),
        Some(b) if b.len() == 6 => mac_text(b),
        _ => decode_hex_text(r).unwrap_or_else(|| r.to_ascii_lowercase()),
    });
    sent
}

impl Sent {
    /// Whether it names the port the operator wrote as `written`.
    pub fn names_port(&self, written: &str) -> bool {
        if let Some(c) = self.cisco {
            let Some(w) = PortName::parse(written) else { return false };
            let (m, p) = (u32::from(c.module), u32::from(c.port));
            return w.unit.is_none() && (w.numbers == [m, p] || w.numbers == [m, 0, p]);
        }
        self.words.iter().any(|s| same_port(written, s))
    }

    /// Whether its remote id names the switch the operator wrote as `want`: the same text in
    /// any case, or the same MAC however written.
    pub fn names_switch(&self, want: &str) -> bool {
        self.remote.as_deref().is_some_and(|r| r.eq_ignore_ascii_case(want) || same_id(Some(r), Some(want)))
    }

    /// The port it names, in words: `Gi1/0/5`-style for Cisco's typed form, else the word that
    /// looks most like an interface (the circuit id's text otherwise).
    pub fn port(&self) -> Option<String> {
        if let Some(c) = self.cisco {
            return Some(format!("module {} port {}", c.module, c.port));
        }
        let looks = self.words.iter().skip(1).find(|w| PortName::parse(w).is_some());
        looks.or(self.words.first()).cloned()
    }

    /// The VLAN it names, where the form carries one.
    pub fn vlan(&self) -> Option<u16> {
        self.cisco.map(|c| c.vlan)
    }
}

/// Option 82 that placed the machine nowhere, decoded: the rack whose switch it names, if any.
pub fn unmatched(sent: &Sent, rack: Option<String>) -> Unmatched {
    Unmatched { rack, port: sent.port(), vlan: sent.vlan(), switch: sent.remote.clone(), form: sent.form.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn each_family_names_its_port_as_the_operator_writes_it() {
        // (circuit id as sent, remote id as sent, what the operator wrote, matches)
        let cisco = hex(&[0, 4, 0, 10, 1, 5]);
        let cisco_remote = hex(&[0, 6, 0x00, 0x1b, 0x54, 0xaa, 0xbb, 0xcc]);
        for (circuit, written, yes) in [
            (cisco.as_str(), "Gi1/0/5", true),
            (&cisco, "GigabitEthernet1/0/5", true),
            (&cisco, "Te1/0/5", true),
            (&cisco, "Gi1/5", true),
            (&cisco, "Gi1/0/15", false),
            (&cisco, "Gi2/0/5", false),
            (&hex(b"ge-0/0/5.0:default"), "ge-0/0/5", true),
            (&hex(b"ge-0/0/5.0:default"), "ge-0/0/5.0", true),
            (&hex(b"ge-0/0/5.0:default"), "ge-0/0/5.1", false),
            (&hex(b"ge-0/0/5.0:default"), "xe-0/0/5", false),
            (&hex(b"leaf1:ge-0/0/5.0:vlan10"), "ge-0/0/5", true),
            (&hex(b"Ethernet5"), "Ethernet5", true),
            (&hex(b"Ethernet5"), "Et5", true),
            (&hex(b"Ethernet5"), "Ethernet50", false),
            (&hex(b"leaf1:Ethernet5"), "Ethernet5", true),
            (&hex(b"swp5"), "swp5", true),
            (&hex(b"swp5"), "swp51", false),
            (&hex(b"ethernet1/1/5"), "ethernet1/1/5", true),
            (&hex(b"ethernet-1/5.0"), "ethernet-1/5", true),
            (&hex(b"Eth1/5"), "Ethernet1/5", true),
            (&hex(b"rack7 u5 uplink"), "rack7 u5 uplink", true),
        ] {
            assert_eq!(decode(circuit, None).names_port(written), yes, "{circuit} as {written}");
        }
        let sent = decode(&cisco, Some(&cisco_remote));
        assert_eq!(
            (sent.form, sent.vlan(), sent.port().as_deref()),
            ("cisco-typed", Some(10), Some("module 1 port 5"))
        );
        assert!(sent.names_switch("00:1B:54:AA:BB:CC") && sent.names_switch("001b.54aa.bbcc"));
        assert!(!sent.names_switch("00:1b:54:aa:bb:cd"));
        let arista = decode(&hex(b"Ethernet5"), Some(&hex(&[0x00, 0x1c, 0x73, 1, 2, 3])));
        assert!(arista.names_switch("00:1c:73:01:02:03"));
        assert!(decode(&hex(b"x"), Some(&hex(b"LEAF1"))).names_switch("leaf1"));
    }

    #[test]
    fn port_names_compare_by_family_and_whole_numbers() {
        assert!(same_port("GigabitEthernet1/0/5", "Gi1/0/5"));
        assert!(same_port("gi1/0/5", "GI1/0/5"));
        assert!(!same_port("G1/0/5", "Gi1/0/5"), "one letter is no family");
        assert!(!same_port("Ethernet1/5", "Ethernet1/5/1"));
        assert!(!same_port("Port-channel5", "Ethernet5"));
        assert!(same_port("ethernet-1/5", "ethernet-1/5.3"), "a unit left out is any unit");
        assert!(!same_port("ethernet-1/5.2", "ethernet-1/5.3"));
        assert!(PortName::parse("eth0; rm -rf /").is_none());
        assert!(PortName::parse("").is_none() && PortName::parse("Ethernet").is_none());
    }

    #[test]
    fn what_is_not_text_stays_hex_and_matches_nothing_by_name() {
        let sent = decode("01ff02", None);
        assert_eq!((sent.form, sent.words.as_slice()), ("binary", ["01ff02".to_string()].as_slice()));
        assert!(!sent.names_port("Ethernet1"));
        assert!(sent.names_port("01FF02"), "the hex itself, as the operator may copy it");
        let u = unmatched(&decode(&hex(&[0, 4, 0, 20, 2, 7]), None), Some("r1".into()));
        assert_eq!(u.describe(), "port module 2 port 7 (VLAN 20)");
    }
}
