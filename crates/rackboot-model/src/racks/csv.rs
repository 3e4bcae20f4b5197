//! The machine list of a rack without managed switches: CSV rows
//! `mac-or-serial,hostname,ip,slot` (hostname and ip may be empty: the rack's pattern and
//! address plan fill them), bounded and checked before anything is stored.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ports::parse_slot;
use crate::mac::Mac;
use crate::records::valid_hostname;

/// Largest CSV accepted (bytes).
pub const MAX_CSV_BYTES: usize = 64 * 1024;
/// Longest serial number.
const MAX_SERIAL: usize = 64;

/// One machine the operator listed: by MAC or serial, in a slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CsvMachine {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<Mac>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub ip: Option<Ipv4Addr>,
    #[schema(minimum = 1, maximum = 64)]
    pub slot: u32,
}

impl CsvMachine {
    /// Whether this row names a machine with these MACs or this serial.
    pub fn names(&self, macs: &[Mac], serial: Option<&str>) -> bool {
        self.mac.is_some_and(|m| macs.contains(&m))
            || self.serial.as_deref().is_some_and(|s| serial.is_some_and(|x| x.eq_ignore_ascii_case(s)))
    }
}

/// Parses the CSV: at most `max_rows` rows and [`MAX_CSV_BYTES`]; each MAC, serial, slot,
/// hostname and address at most once. A first row starting with `mac` is a header.
pub fn parse(text: &str, max_rows: usize) -> Result<Vec<CsvMachine>, String> {
    if text.len() > MAX_CSV_BYTES {
        return Err(format!("the CSV is larger than {MAX_CSV_BYTES} bytes"));
    }
    let mut out: Vec<CsvMachine> = Vec::new();
    for (n, row) in text.lines().enumerate() {
        let row = row.trim();
        let at = |e: String| format!("line {}: {e}", n + 1);
        if row.is_empty() || (n == 0 && row.to_ascii_lowercase().starts_with("mac")) {
            continue;
        }
        let cols: Vec<&str> = row.split(',').map(str::trim).collect();
        let [key, hostname, ip, slot] = cols[..] else {
            return Err(at(format!("{row:?} is not mac-or-serial,hostname,ip,slot")));
        };
        let (mac, serial) = match key.parse::<Mac>() {
            Ok(m) => (Some(m), None),
            Err(_)
                if !key.is_empty()
                    && key.len() <= MAX_SERIAL
                    && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b)) =>
            {
                (None, Some(key.to_string()))
            }
            Err(_) => return Err(at(format!("{key:?} is neither a MAC nor a serial (letters, digits, -_./)"))),
        };
        let hostname = (!hostname.is_empty()).then(|| hostname.to_ascii_lowercase());
        if let Some(h) = hostname.as_deref().filter(|h| !valid_hostname(h)) {
            return Err(at(format!("hostname {h:?} is not a DNS label (letters, digits, '-', at most 63)")));
        }
        let ip = match ip {
            "" => None,
            t => Some(t.parse::<Ipv4Addr>().map_err(|_| at(format!("{t:?} is not an IPv4 address")))?),
        };
        let slot = parse_slot(slot).map_err(at)?;
        out.push(CsvMachine { mac, serial, hostname, ip, slot });
        if out.len() > max_rows {
            return Err(format!("at most {max_rows} machines per rack"));
        }
    }
    distinct(&out)?;
    Ok(out)
}

fn distinct(rows: &[CsvMachine]) -> Result<(), String> {
    let (mut keys, mut slots, mut names, mut ips) = (HashSet::new(), HashSet::new(), HashSet::new(), HashSet::new());
    for r in rows {
        let key = r.mac.map(|m| m.to_string()).or(r.serial.clone()).unwrap_or_default().to_ascii_lowercase();
        if !keys.insert(key.clone()) {
            return Err(format!("{key} is listed twice"));
        }
        if !slots.insert(r.slot) {
            return Err(format!("slot U{} is listed twice", r.slot));
        }
        if let Some(h) = &r.hostname {
            if !names.insert(h.clone()) {
                return Err(format!("hostname {h} is listed twice"));
            }
        }
        if let Some(ip) = r.ip {
            if !ips.insert(ip) {
                return Err(format!("{ip} is listed twice"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_by_mac_or_serial_with_a_header() {
        let rows = parse("mac,hostname,ip,slot\n52:54:00:00:00:01,db1,198.18.1.5,U3\nSN-42,,,4\n", 64).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].mac, Some("52:54:00:00:00:01".parse().unwrap()));
        assert_eq!((rows[0].hostname.as_deref(), rows[0].slot), (Some("db1"), 3));
        assert_eq!((rows[1].serial.as_deref(), rows[1].hostname.as_deref(), rows[1].ip), (Some("SN-42"), None, None));
    }

    #[test]
    fn bad_rows_are_refused_with_their_line() {
        for (text, why) in [
            ("52:54:00:00:00:01,db1,198.18.1.5", "line 1"),
            ("52:54:00:00:00:01,db_1,,U1", "DNS label"),
            ("52:54:00:00:00:01,db1,1.2.3,U1", "IPv4"),
            ("52:54:00:00:00:01,db1,,U99", "outside"),
            ("a b,db1,,U1", "neither"),
            ("x1,,,U1\nx1,,,U2", "twice"),
            ("x1,,,U1\nx2,,,U1", "slot U1 is listed twice"),
        ] {
            let err = parse(text, 64).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
        assert!(parse(&"x".repeat(MAX_CSV_BYTES + 1), 64).unwrap_err().contains("larger"));
        let rows: String = (1..=3).map(|i| format!("s{i},,,U{i}\n")).collect();
        assert!(parse(&rows, 2).unwrap_err().contains("at most 2"));
    }
}
