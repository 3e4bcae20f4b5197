//! Parsing the port -> slot map (`Ethernet1-42 -> U1-U42`, `Ethernet43 -> U43`, or CSV
//! `port,slot` rows) into one entry per port, with bounds.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{MAX_PORTS, MAX_SLOTS};

/// Longest switch port name.
pub const MAX_PORT_NAME: usize = 64;

/// One switch port and the slot (rack unit) it is cabled to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PortSlot {
    pub port: String,
    /// Rack unit, 1-based (shown as `U<slot>`).
    #[schema(minimum = 1, maximum = 64)]
    pub slot: u32,
}

/// A port name: letters, digits and `/:._-`, starting with a letter or digit.
fn valid_port(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= MAX_PORT_NAME
        && p.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"/:._-".contains(&b))
}

/// A slot number: `U7`, `u7` or `7`, within 1..=MAX_SLOTS.
pub fn parse_slot(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let digits = t.strip_prefix(['U', 'u']).unwrap_or(t);
    let n: u32 = digits
        .parse()
        .ok()
        .filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("slot {t:?} is not U<number>"))?;
    if !(1..=MAX_SLOTS).contains(&n) {
        return Err(format!("slot {t:?} is outside U1-U{MAX_SLOTS}"));
    }
    Ok(n)
}

/// Splits `Ethernet1-42` into (`Ethernet`, 1, 42) and `Ethernet7` into (`Ethernet`, 7, 7): the
/// range is the trailing number, or two numbers joined by `-` at the end.
fn port_range(s: &str) -> Result<(&str, u32, u32), String> {
    let digits_at = |t: &str| t.len() - t.bytes().rev().take_while(u8::is_ascii_digit).count();
    let end = digits_at(s);
    if end == s.len() {
        return Err(format!("port {s:?} does not end in a number"));
    }
    let last: u32 = s[end..].parse().map_err(|_| format!("port number in {s:?} is too large"))?;
    let head = &s[..end];
    let (prefix, first) = match head.strip_suffix('-') {
        Some(h) if digits_at(h) < h.len() => {
            let start = digits_at(h);
            (&h[..start], h[start..].parse().map_err(|_| format!("port number in {s:?} is too large"))?)
        }
        _ => (head, last),
    };
    if first > last {
        return Err(format!("port range {s:?} ends before it starts"));
    }
    if !valid_port(&format!("{prefix}{first}")) {
        return Err(format!("port {s:?}: names are letters, digits and /:._- (at most {MAX_PORT_NAME})"));
    }
    Ok((prefix, first, last))
}

/// A slot range: `U1-U42`, `U1-42`, `1-42` or a single `U7`.
fn slot_range(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (parse_slot(a)?, parse_slot(b)?),
        None => {
            let n = parse_slot(s)?;
            (n, n)
        }
    };
    if a > b {
        return Err(format!("slot range {s:?} ends before it starts"));
    }
    Ok((a, b))
}

/// Parses one map line, `PORTS -> SLOTS`; both sides must have the same length.
pub fn parse_line(line: &str) -> Result<Vec<PortSlot>, String> {
    let (ports, slots) = line.split_once("->").ok_or_else(|| format!("{line:?} is not `PORTS -> SLOTS`"))?;
    let (prefix, p1, p2) = port_range(ports.trim())?;
    let (s1, s2) = slot_range(slots.trim())?;
    if p2 - p1 != s2 - s1 {
        return Err(format!(
            "{:?}: {} ports for {} slots (the ranges must have the same length)",
            line.trim(),
            p2 - p1 + 1,
            s2 - s1 + 1
        ));
    }
    let out: Vec<PortSlot> =
        (0..=p2 - p1).map(|i| PortSlot { port: format!("{prefix}{}", p1 + i), slot: s1 + i }).collect();
    if out.iter().any(|p| p.port.len() > MAX_PORT_NAME) {
        return Err(format!("{line:?}: a port name is longer than {MAX_PORT_NAME}"));
    }
    Ok(out)
}

/// Parses `port,slot` rows (a `port,slot` header and blank lines are skipped).
pub fn parse_csv(text: &str) -> Result<Vec<PortSlot>, String> {
    let mut out = Vec::new();
    for (n, row) in text.lines().enumerate() {
        let row = row.trim();
        if row.is_empty() || (n == 0 && row.eq_ignore_ascii_case("port,slot")) {
            continue;
        }
        let (port, slot) = row.split_once(',').ok_or_else(|| format!("line {}: {row:?} is not port,slot", n + 1))?;
        let port = port.trim();
        if !valid_port(port) {
            return Err(format!("line {}: port {port:?}: letters, digits and /:._- (at most {MAX_PORT_NAME})", n + 1));
        }
        let slot = parse_slot(slot).map_err(|e| format!("line {}: {e}", n + 1))?;
        out.push(PortSlot { port: port.to_string(), slot });
        if out.len() > MAX_PORTS {
            return Err(format!("at most {MAX_PORTS} ports per rack"));
        }
    }
    Ok(out)
}

/// Every map line (an entry may hold several, one per line) plus CSV rows, checked: at most
/// [`MAX_PORTS`] ports, each port once (case-insensitive).
pub fn parse_map(lines: &[String], csv: Option<&str>) -> Result<Vec<PortSlot>, String> {
    let mut out = Vec::new();
    for line in lines.iter().flat_map(|l| l.lines()).map(str::trim).filter(|l| !l.is_empty()) {
        if line.len() > 256 {
            return Err("a port map line is longer than 256 characters".into());
        }
        out.extend(parse_line(line)?);
        if out.len() > MAX_PORTS {
            return Err(format!("at most {MAX_PORTS} ports per rack"));
        }
    }
    out.extend(parse_csv(csv.unwrap_or(""))?);
    if out.len() > MAX_PORTS {
        return Err(format!("at most {MAX_PORTS} ports per rack"));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = out.iter().find(|p| !seen.insert(p.port.to_ascii_lowercase())) {
        return Err(format!("port {} is mapped twice", dup.port));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ps(port: &str, slot: u32) -> PortSlot {
        PortSlot { port: port.into(), slot }
    }

    #[test]
    fn ranges_and_single_entries() {
        let m = parse_line("Ethernet1-42 -> U1-U42").unwrap();
        assert_eq!((m.len(), &m[0], &m[41]), (42, &ps("Ethernet1", 1), &ps("Ethernet42", 42)));
        assert_eq!(parse_line("swp3-4 -> 10-11").unwrap(), vec![ps("swp3", 10), ps("swp4", 11)]);
        assert_eq!(parse_line("Ethernet1/7 -> U9").unwrap(), vec![ps("Ethernet1/7", 9)]);
        assert_eq!(parse_line("ge-0/0/1-2 -> U1-U2").unwrap(), vec![ps("ge-0/0/1", 1), ps("ge-0/0/2", 2)]);
    }

    #[test]
    fn malformed_maps_are_refused_with_the_reason() {
        for (line, why) in [
            ("Ethernet1-42 -> U1-U40", "same length"),
            ("Ethernet1-42 U1-U42", "PORTS -> SLOTS"),
            ("Ethernet -> U1", "does not end in a number"),
            ("Ethernet5-2 -> U1-U4", "ends before"),
            ("Ethernet1 -> U0", "outside"),
            ("Ethernet1 -> U65", "outside"),
            ("Ethernet1 -> rack", "not U<number>"),
            ("Eth ernet1 -> U1", "letters, digits"),
            ("Ethernet1-99999999999 -> U1-U2", "too large"),
        ] {
            let err = parse_line(line).unwrap_err();
            assert!(err.contains(why), "{line}: {err}");
        }
        let dup = parse_map(&["Ethernet1-2 -> U1-U2".into(), "ethernet2 -> U3".into()], None).unwrap_err();
        assert!(dup.contains("mapped twice"), "{dup}");
        let many = parse_map(&["Ethernet1-64 -> U1-U64".into(), "swp1-64 -> U1-U64".into(), "x1 -> U1".into()], None);
        assert!(many.unwrap_err().contains("at most"));
    }

    #[test]
    fn csv_rows_with_a_header() {
        let m = parse_map(&[], Some("port,slot\nEthernet1,U1\n\nEthernet2, 2\n")).unwrap();
        assert_eq!(m, vec![ps("Ethernet1", 1), ps("Ethernet2", 2)]);
        assert!(parse_csv("Ethernet1;U1").unwrap_err().contains("line 1"));
    }
}
