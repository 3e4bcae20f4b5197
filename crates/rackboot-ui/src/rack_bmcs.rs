//! The rack form's BMCs: CSV rows `mac,bmc-address,protocol[,boot-mode[,sha256[,boot-via]]]` with one user
//! and password for the rack's BMCs (as racks are usually delivered). Every row is checked with
//! the API's own bounds before the rack is created, so a bad row refuses the whole form and
//! nothing is stored; once the rack exists, each row is an API call (the machine registered by
//! its MAC if rackboot has not seen it yet, then `PUT /machines/{mac}/bmc`), so the password is
//! sealed, never stored with the rack, and each call is audited as the session's user.

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::forward;
use super::session::Session;
use super::UiState;
use rackboot_control::bmc::model::BootVia;
use rackboot_control::bmc::{BmcInput, BootMode, Protocol};
use rackboot_model::mac::Mac;

/// Most BMC rows in one form (a rack's slots).
pub const MAX_ROWS: usize = 64;
/// Largest BMC CSV accepted (bytes).
pub const MAX_BYTES: usize = 16 * 1024;

/// One checked row.
#[derive(Debug, Clone)]
pub struct Row {
    pub mac: Mac,
    pub input: BmcInput,
}

/// Checks the CSV and the shared credentials; errors name the line.
pub fn parse(text: &str, username: &str, password: &str, insecure: bool) -> Result<Vec<Row>, String> {
    if text.len() > MAX_BYTES {
        return Err(format!("the BMC CSV is larger than {MAX_BYTES} bytes"));
    }
    let mut rows: Vec<Row> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        let at = |e: &str| format!("BMC CSV line {}: {e}", n + 1);
        if line.is_empty() || (n == 0 && line.to_ascii_lowercase().starts_with("mac")) {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if !(3..=6).contains(&cols.len()) {
            return Err(at("expected mac,bmc-address,protocol[,boot-mode[,sha256[,boot-via]]]"));
        }
        let mac: Mac = cols[0].parse().map_err(|_| at(&format!("{:?} is not a MAC", cols[0])))?;
        let protocol = match cols[2].to_ascii_lowercase().as_str() {
            "redfish" => Protocol::Redfish,
            "ipmi" => Protocol::Ipmi,
            p => return Err(at(&format!("protocol {p:?} is not redfish or ipmi"))),
        };
        let boot_mode = match cols.get(3).map(|m| m.to_ascii_lowercase()).as_deref() {
            None | Some("") => None,
            Some("uefi") => Some(BootMode::Uefi),
            Some("legacy") => Some(BootMode::Legacy),
            Some(m) => return Err(at(&format!("boot mode {m:?} is not uefi or legacy"))),
        };
        let boot_via = match cols.get(5).map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("pxe") => BootVia::Pxe,
            Some("virtual-media") => BootVia::VirtualMedia,
            Some(v) => return Err(at(&format!("boot-via {v:?} is not pxe or virtual-media"))),
        };
        let input = BmcInput {
            address: cols[1].to_string(),
            protocol,
            username: username.to_string(),
            password: Some(password.to_string()),
            fingerprint: cols.get(4).filter(|f| !f.is_empty()).map(|f| f.to_string()),
            insecure: insecure && protocol == Protocol::Redfish,
            system_id: None,
            boot_mode,
            boot_via,
        };
        input.validate().map_err(|(field, why)| at(&format!("{field} {why}")))?;
        if rows.iter().any(|r| r.mac == mac) {
            return Err(at(&format!("{mac} is listed twice")));
        }
        rows.push(Row { mac, input });
        if rows.len() > MAX_ROWS {
            return Err(format!("at most {MAX_ROWS} BMC rows"));
        }
    }
    if !rows.is_empty() && (username.is_empty() || password.is_empty()) {
        return Err("the rack's BMC user and password are needed for its BMC rows".into());
    }
    Ok(rows)
}

/// Sets every row's BMC through the API; returns how many were set and why the others were not.
pub async fn apply(s: &UiState, session: &Session, rows: &[Row]) -> (usize, Vec<String>) {
    let (mut done, mut failed) = (0, Vec::new());
    for r in rows {
        let path = format!("/machines/{}", r.mac);
        let known = forward::as_session(s, session, Method::GET, &path, None).await;
        if known.status == StatusCode::NOT_FOUND {
            let made = forward::as_session(s, session, Method::POST, "/machines", Some(json!({"macs": [r.mac]}))).await;
            if !made.status.is_success() {
                failed.push(format!("{}: {}", r.mac, made.message()));
                continue;
            }
        }
        let i = &r.input;
        let body = json!({"address": i.address, "protocol": i.protocol, "username": i.username,
            "password": i.password, "fingerprint": i.fingerprint, "insecure": i.insecure, "boot_mode": i.boot_mode});
        let set = forward::as_session(s, session, Method::PUT, &format!("{path}/bmc"), Some(body)).await;
        match set.status.is_success() {
            true => done += 1,
            false => failed.push(format!("{}: {}", r.mac, set.message())),
        }
    }
    (done, failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_checked_with_the_apis_bounds_and_name_their_line() {
        let ok = parse("mac,address,protocol\n52:54:00:00:00:01,10.0.9.1,ipmi,legacy\n52:54:00:00:00:02,10.0.9.2:8443,Redfish,uefi,\n", "admin", "pw", true)
            .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(
            (ok[0].input.protocol, ok[0].input.boot_mode, ok[0].input.insecure),
            (Protocol::Ipmi, Some(BootMode::Legacy), false)
        );
        assert_eq!((ok[1].input.address.as_str(), ok[1].input.insecure), ("10.0.9.2:8443", true));
        let edge = parse("52:54:00:00:00:03,10.0.9.3,redfish,uefi,,virtual-media\n", "admin", "pw", true).unwrap();
        assert_eq!(edge[0].input.boot_via, BootVia::VirtualMedia, "a rack's machine booted from virtual media");
        assert!(parse("", "", "", false).unwrap().is_empty(), "no rows, no credentials needed");
        for (text, why) in [
            ("52:54:00:00:00:01,10.0.9.1", "line 1: expected"),
            ("nope,10.0.9.1,ipmi", "not a MAC"),
            ("52:54:00:00:00:01,https://x/,redfish", "address"),
            ("52:54:00:00:00:01,10.0.9.1,telnet", "telnet"),
            ("52:54:00:00:00:01,10.0.9.1,ipmi,bios", "boot mode"),
            ("52:54:00:00:00:01,10.0.9.1,redfish,,abcd", "fingerprint"),
            ("52:54:00:00:00:01,10.0.9.1,redfish,,,usb", "boot-via"),
            ("52:54:00:00:00:01,10.0.9.1,ipmi,,,virtual-media", "needs a Redfish BMC"),
            (
                "52:54:00:00:00:01,10.0.9.1,ipmi\n52:54:00:00:00:01,10.0.9.2,ipmi",
                "line 2: 52:54:00:00:00:01 is listed twice",
            ),
        ] {
            let err = parse(text, "admin", "pw", false).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
        assert!(parse("52:54:00:00:00:01,10.0.9.1,ipmi", "admin", "", false).unwrap_err().contains("password"));
        assert!(parse(&"x".repeat(MAX_BYTES + 1), "a", "b", false).unwrap_err().contains("larger"));
    }
}
