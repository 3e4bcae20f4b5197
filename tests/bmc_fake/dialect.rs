//! Vendor dialects of the fake BMC, each after its vendor's public Redfish reference:
//!
//! - [`Mode::Dell`]: a PATCH (BIOS settings, boot override) is answered 202 with a task monitor
//!   (iDRAC's jobs), which says `Running` once and then `Completed`; the BIOS attribute
//!   registry is published under `Registries`.
//! - [`Mode::Hpe`]: the BIOS settings carry `@odata.etag` and a PATCH to them without that ETag in
//!   `If-Match` is refused 412 (iLO); HTTPS boot certificates live in `Bios/tlsconfig`.
//! - [`Mode::Supermicro`]: every resource has an `ETag` header and any PATCH without it is
//!   refused 412; the Systems collection answers 503 with `Retry-After` once.

use std::sync::atomic::Ordering;

use hyper::StatusCode;
use serde_json::{json, Value};

use super::{reply, Fake, Mode, Reply};

const MONITOR: &str = "/redfish/v1/TaskService/TaskMonitors/JID_";

impl Fake {
    /// The ETag every resource has now (each PATCH changes it).
    pub fn etag(&self) -> String {
        format!("W/\"{}\"", self.version.load(Ordering::SeqCst))
    }

    /// What a dialect answers before the resource does, if anything.
    pub(super) fn dialect_before(&self, method: &str, path: &str, if_match: Option<&str>) -> Option<Reply> {
        if let Some(m) = if_match {
            self.if_matches.lock().unwrap().push(m.to_string());
        }
        let wants_etag = match self.mode {
            Mode::Supermicro => method == "PATCH",
            Mode::Hpe => method == "PATCH" && path.ends_with("/Bios/Settings"),
            _ => false,
        };
        if wants_etag && if_match != Some(self.etag().as_str()) {
            let message = "The ETag supplied did not match the ETag required to change this resource.";
            return Some(reply(
                StatusCode::PRECONDITION_FAILED,
                json!({"error": {"code": "Base.1.8.PreconditionFailed", "message": message}}),
            ));
        }
        if self.mode == Mode::Supermicro
            && path == "/redfish/v1/Systems"
            && !self.busy_once.swap(true, Ordering::SeqCst)
        {
            let mut r = reply(StatusCode::SERVICE_UNAVAILABLE, json!({"error": {"message": "busy"}}));
            r.headers_mut().insert("retry-after", "0".parse().unwrap());
            return Some(r);
        }
        if self.mode == Mode::Dell && method == "GET" {
            if let Some(r) = registry(path) {
                return Some(r);
            }
        }
        if self.mode == Mode::Dell && method == "GET" && path.starts_with(MONITOR) {
            let polled = self.task_polls.fetch_add(1, Ordering::SeqCst);
            return Some(if polled.is_multiple_of(2) {
                let mut r = reply(StatusCode::ACCEPTED, json!({"TaskState": "Running", "PercentComplete": 50}));
                r.headers_mut().insert("retry-after", "0".parse().unwrap());
                r
            } else {
                reply(StatusCode::OK, json!({"TaskState": "Completed", "TaskStatus": "OK"}))
            });
        }
        None
    }

    /// A dialect's touches to the resource's answer.
    pub(super) fn dialect_after(&self, method: &str, mut r: Reply) -> Reply {
        if !r.status().is_success() {
            return r;
        }
        if method == "PATCH" {
            self.version.fetch_add(1, Ordering::SeqCst);
            if self.mode == Mode::Dell {
                let job = self.version.load(Ordering::SeqCst);
                let mut accepted = reply(StatusCode::ACCEPTED, Value::Null);
                accepted.headers_mut().insert("location", format!("{MONITOR}{job}").parse().unwrap());
                accepted.headers_mut().insert("retry-after", "0".parse().unwrap());
                return accepted;
            }
        }
        if method == "GET" && self.mode == Mode::Supermicro {
            r.headers_mut().insert("etag", self.etag().parse().unwrap());
        }
        r
    }
}

/// Dell's attribute registry, found through `Registries` as iDRAC publishes it.
fn registry(path: &str) -> Option<Reply> {
    const FILE: &str = "/redfish/v1/Registries/BiosAttributeRegistry.v1_0_0";
    let body = match path {
        "/redfish/v1/Registries" => {
            json!({"Members": [{"@odata.id": "/redfish/v1/Registries/Messages"}, {"@odata.id": FILE}]})
        }
        FILE => json!({"Location": [{"Language": "en", "Uri": format!("{FILE}/registry.json")}]}),
        p if p == format!("{FILE}/registry.json") => json!({"RegistryEntries": {"Attributes": [
            {"AttributeName": "EmbeddedSata", "Type": "Enumeration", "Value": [{"ValueName": "Raid"}, {"ValueName": "Ahci"}]},
            {"AttributeName": "ProcVirtualization", "Type": "Enumeration", "Value": [{"ValueName": "Enabled"}, {"ValueName": "Disabled"}]},
            {"AttributeName": "NumCores", "Type": "Integer", "LowerBound": 1, "UpperBound": 64}
        ]}}),
        _ => return None,
    };
    Some(reply(StatusCode::OK, body))
}
