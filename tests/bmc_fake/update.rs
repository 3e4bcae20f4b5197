//! The fake BMC's `UpdateService` (DMTF DSP0268 UpdateService, `SimpleUpdate`; task monitors as
//! DSP0266 "Asynchronous operations" describes and iDRAC and iLO answer): a firmware inventory
//! of the BIOS and the BMC, `SimpleUpdate` answered 202 with a task monitor that runs 10 %,
//! 60 %, then completes. The BMC's new firmware is current at once; the BIOS's waits for the
//! next reset, as on real servers. [`Mode::UpdateFails`]: the task ends in `Exception` with the
//! BMC's message. [`Mode::UpdatesPush`]: no `SimpleUpdate`, a `MultipartHttpPushUri` (DSP0268)
//! taking `multipart/form-data` with `UpdateParameters` and `UpdateFile`, `MaxImageSizeBytes`.

use std::sync::atomic::Ordering;

use hyper::StatusCode;
use serde_json::{json, Value};

use super::{reply, Fake, Mode, Reply};

const MONITOR: &str = "/redfish/v1/TaskService/Tasks/7/Monitor";
const PUSH: &str = "/redfish/v1/UpdateService/upload";
/// The largest image [`Mode::UpdatesPush`] takes.
pub const MAX_PUSH: usize = 4096;
const INVENTORY: &str = "/redfish/v1/UpdateService/FirmwareInventory";
/// The versions a flash brings.
pub const NEW_BIOS: &str = "2.20.0";
pub const NEW_BMC: &str = "1.60";

/// The firmware: versions now, the BIOS's staged for the next reset, the `SimpleUpdate` bodies.
pub struct Firmware {
    pub bios: String,
    pub bmc: String,
    pub staged_bios: Option<String>,
    pub updates: Vec<Value>,
    /// The images pushed, whole.
    pub pushed: Vec<Vec<u8>>,
}

impl Default for Firmware {
    fn default() -> Self {
        Firmware {
            bios: "2.19.1".into(),
            bmc: "1.50".into(),
            staged_bios: None,
            updates: Vec::new(),
            pushed: Vec::new(),
        }
    }
}

impl Fake {
    fn updates(&self) -> bool {
        matches!(self.mode, Mode::Updates | Mode::UpdateFails | Mode::UpdatesPush)
    }

    /// The `UpdateService` answers of a BMC that has one, if this request is for it.
    pub(super) fn update_before(&self, method: &str, path: &str, body: &Value, raw: (&str, &[u8])) -> Option<Reply> {
        if !self.updates() {
            return None;
        }
        let fw = || self.fw.lock().unwrap();
        let accepted = || {
            self.task_polls.store(0, Ordering::SeqCst);
            let mut r = reply(StatusCode::ACCEPTED, json!({"TaskState": "New"}));
            r.headers_mut().insert("location", MONITOR.parse().unwrap());
            r.headers_mut().insert("retry-after", "0".parse().unwrap());
            r
        };
        Some(match (method, path) {
            ("GET", "/redfish/v1/UpdateService") if self.mode == Mode::UpdatesPush => reply(
                StatusCode::OK,
                json!({"FirmwareInventory": {"@odata.id": INVENTORY}, "MultipartHttpPushUri": PUSH, "MaxImageSizeBytes": MAX_PUSH}),
            ),
            ("POST", PUSH) if self.mode == Mode::UpdatesPush => {
                let Some((params, file)) = form(raw.0, raw.1) else {
                    return Some(reply(
                        StatusCode::BAD_REQUEST,
                        json!({"error": {"message": "not multipart/form-data"}}),
                    ));
                };
                if file.len() > MAX_PUSH {
                    return Some(reply(StatusCode::PAYLOAD_TOO_LARGE, json!({"error": {"message": "too large"}})));
                }
                let mut fw = fw();
                fw.updates.push(params);
                fw.pushed.push(file);
                drop(fw);
                accepted()
            }
            ("GET", "/redfish/v1/UpdateService") => reply(
                StatusCode::OK,
                json!({"FirmwareInventory": {"@odata.id": INVENTORY},
                    "Actions": {"#UpdateService.SimpleUpdate": {"target": "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"}}}),
            ),
            ("GET", INVENTORY) => reply(
                StatusCode::OK,
                json!({"Members": [{"@odata.id": format!("{INVENTORY}/BIOS")}, {"@odata.id": format!("{INVENTORY}/BMC")}]}),
            ),
            ("GET", p) if p == format!("{INVENTORY}/BIOS") => reply(
                StatusCode::OK,
                json!({"Id": "BIOS", "Name": "System BIOS", "Version": fw().bios, "Updateable": true, "Status": {"Health": "OK"}}),
            ),
            ("GET", p) if p == format!("{INVENTORY}/BMC") => reply(
                StatusCode::OK,
                json!({"Id": "BMC", "Name": "BMC Firmware", "Version": fw().bmc, "Updateable": true, "Status": {"Health": "OK"}}),
            ),
            ("POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate")
                if self.mode != Mode::UpdatesPush =>
            {
                fw().updates.push(body.clone());
                accepted()
            }
            ("GET", MONITOR) => {
                let polled = self.task_polls.fetch_add(1, Ordering::SeqCst);
                let running = |percent: u64, message: &str| {
                    let mut r = reply(
                        StatusCode::ACCEPTED,
                        json!({"TaskState": "Running", "PercentComplete": percent, "Messages": [{"Message": message}]}),
                    );
                    r.headers_mut().insert("retry-after", "0".parse().unwrap());
                    r
                };
                match polled {
                    0 => running(10, "Downloading the image."),
                    1 => running(60, "Flashing."),
                    _ if self.mode == Mode::UpdateFails => reply(
                        StatusCode::OK,
                        json!({"TaskState": "Exception", "TaskStatus": "Critical", "PercentComplete": 60,
                            "Messages": [{"Message": "Image verification failed: the signature does not match."}]}),
                    ),
                    _ => {
                        self.flashed();
                        reply(
                            StatusCode::OK,
                            json!({"TaskState": "Completed", "TaskStatus": "OK", "PercentComplete": 100,
                                "Messages": [{"Message": "The update completed."}]}),
                        )
                    }
                }
            }
            _ => return None,
        })
    }

    /// The last `SimpleUpdate`'s targets flashed: the BMC now, the BIOS at the next reset.
    fn flashed(&self) {
        let mut fw = self.fw.lock().unwrap();
        let targets: Vec<String> = fw.updates.last().unwrap()["Targets"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        for t in targets {
            if t.ends_with("/BMC") {
                fw.bmc = NEW_BMC.into();
            } else if t.ends_with("/BIOS") || t == "/redfish/v1/Systems/1" {
                fw.staged_bios = Some(NEW_BIOS.into());
            }
        }
    }

    /// A reset makes a staged BIOS current.
    pub(super) fn reset_firmware(&self) {
        let mut fw = self.fw.lock().unwrap();
        if let Some(v) = fw.staged_bios.take() {
            fw.bios = v;
        }
    }

    pub fn bios_version(&self) -> String {
        self.fw.lock().unwrap().bios.clone()
    }
}

/// A `multipart/form-data` body's `UpdateParameters` (JSON) and `UpdateFile` (bytes), if it is
/// one with both.
fn form(content_type: &str, raw: &[u8]) -> Option<(Value, Vec<u8>)> {
    let boundary = content_type.strip_prefix("multipart/form-data; boundary=")?;
    let delimiter = format!("\r\n--{boundary}");
    // Parts sit between delimiters; the body starts with one lacking its CRLF.
    let mut body = b"\r\n".to_vec();
    body.extend_from_slice(raw);
    let mut parts = Vec::new();
    let mut rest = &body[..];
    while let Some(at) = find(rest, delimiter.as_bytes()) {
        parts.push(&rest[..at]);
        rest = &rest[at + delimiter.len()..];
    }
    let (mut params, mut file) = (None, None);
    for part in parts.into_iter().skip(1) {
        let part = part.strip_prefix(b"\r\n")?;
        let split = find(part, b"\r\n\r\n")?;
        let (head, data) = (String::from_utf8_lossy(&part[..split]).to_string(), &part[split + 4..]);
        if head.contains("name=\"UpdateParameters\"") {
            params = serde_json::from_slice(data).ok();
        } else if head.contains("name=\"UpdateFile\"") {
            file = Some(data.to_vec());
        }
    }
    Some((params?, file?))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
