//! Firmware updates through Redfish's `UpdateService` (DMTF DSP0268 UpdateService):
//! `SimpleUpdate`, the BMC fetching the image from a URL the appliance serves, or
//! `MultipartHttpPushUri`, the appliance pushing it (see `push`), as `firmware.transfer` says;
//! the BMC flashes the targets named (inventory entries, or the system for its BIOS). A 202's
//! task is followed to
//! its end with its `PercentComplete` and messages reported as it goes (DSP0266 "Asynchronous
//! operations"; Dell iDRAC and HPE iLO answer so); a 200 or 204 is an update done at once
//! (sushy-tools). A task that ends `Exception`, `Killed` or `Cancelled`, or `Completed` with a
//! `Critical` status, fails with the BMC's messages: a flash is never tried twice by itself.

use std::path::Path;
use std::time::Duration;

use hyper::Method;
pub use rackboot_model::baseline::Transfer;
use serde_json::{json, Value};

use super::dialect::{messages, retry_after};
use super::firmware::link;
use super::Redfish;
use crate::BmcError;

/// A task's progress as the BMC reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// `TaskState` (New, Running, Completed, ...).
    pub state: String,
    pub percent: Option<u8>,
    /// The task's latest message.
    pub message: Option<String>,
}

/// An update the BMC finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Updated {
    /// The task monitor followed (absent: done at once).
    pub task: Option<String>,
    /// The task's messages at its end.
    pub messages: String,
}

/// The image an update flashes: its URL on this appliance (a BMC fetches it) and its file (the
/// appliance pushes it).
pub struct Image<'a> {
    pub url: &'a str,
    pub file: &'a Path,
    pub transfer: Transfer,
}

impl Redfish {
    /// Flashes `image` into `targets` (empty: the system, for its BIOS) and follows the BMC's
    /// task for at most `wait`, calling `progress` when it moves.
    pub async fn update(
        &self,
        image: &Image<'_>,
        targets: &[String],
        wait: Duration,
        progress: &mut (dyn FnMut(Progress) + Send),
    ) -> Result<Updated, BmcError> {
        let root = self.get("/redfish/v1").await?;
        let service = match link(&root["UpdateService"]) {
            Some(s) => self.get(&s).await?,
            None => return Err(BmcError::Other("the BMC has no UpdateService to update firmware with".into())),
        };
        let simple = service["Actions"]["#UpdateService.SimpleUpdate"]["target"].as_str();
        let simple = simple.and_then(|t| link(&json!({ "@odata.id": t })));
        let push = service["MultipartHttpPushUri"].as_str().and_then(|t| link(&json!({ "@odata.id": t })));
        let targets: Vec<String> = if targets.is_empty() { vec![self.system.clone()] } else { targets.to_vec() };
        let a = match (image.transfer, simple, push) {
            (Transfer::Auto | Transfer::Fetch, Some(action), _) => {
                // The URI's scheme says the protocol (TransferProtocol is for a URI without one).
                let body = json!({ "ImageURI": image.url, "Targets": targets });
                self.ep.send(Method::POST, &action, &[self.auth_header()], Some(&body)).await?
            }
            (Transfer::Auto | Transfer::Push, _, Some(uri)) => {
                let max = service["MaxImageSizeBytes"].as_u64();
                self.push(&uri, image.file, &targets, max, wait).await?
            }
            (Transfer::Fetch, None, _) => {
                return Err(BmcError::Other(
                    "the BMC offers no UpdateService.SimpleUpdate (firmware.transfer = \"fetch\")".into(),
                ))
            }
            (Transfer::Push, _, None) => {
                return Err(BmcError::Other(
                    "the BMC offers no MultipartHttpPushUri (firmware.transfer = \"push\")".into(),
                ))
            }
            (Transfer::Auto, None, None) => {
                return Err(BmcError::Other(
                    "the BMC's UpdateService offers neither SimpleUpdate nor MultipartHttpPushUri".into(),
                ))
            }
        };
        self.follow(a, wait, progress).await
    }

    /// An update's answer followed: done at once, or its task monitor polled to its end.
    async fn follow(
        &self,
        a: super::http::Answer,
        wait: Duration,
        progress: &mut (dyn FnMut(Progress) + Send),
    ) -> Result<Updated, BmcError> {
        if a.status.as_u16() != 202 || !a.headers.contains_key(hyper::header::LOCATION) {
            // Done at once (200, 204: a Location beside a 204 names no task to follow).
            return Ok(Updated { task: None, messages: messages(&a.json().unwrap_or_default()) });
        }
        let monitor = self.ep.location(&a)?;
        let deadline = tokio::time::Instant::now() + wait;
        let mut pause = retry_after(&a).unwrap_or(Duration::from_secs(2));
        let mut last: Option<Progress> = None;
        loop {
            if tokio::time::Instant::now() + pause > deadline {
                return Err(BmcError::Timeout(wait));
            }
            tokio::time::sleep(pause).await;
            let a = match self.ep.send(Method::GET, &monitor, &[self.auth_header()], None).await {
                Ok(a) => a,
                // A monitor some BMCs drop once the task ended: the version read after says.
                Err(BmcError::Status { status: 404 | 410, .. }) if last.is_some() => {
                    return Ok(Updated { task: Some(monitor), messages: "the task monitor is gone".into() })
                }
                Err(e) if e.transient() => continue,
                Err(e) => return Err(e),
            };
            let task = a.json().unwrap_or_default();
            let now = Progress {
                state: task["TaskState"].as_str().unwrap_or("Running").chars().take(32).collect(),
                percent: task["PercentComplete"].as_u64().map(|p| p.min(100) as u8),
                message: latest(&task),
            };
            if last.as_ref() != Some(&now) {
                progress(now.clone());
            }
            let status = task["TaskStatus"].as_str().unwrap_or("OK");
            match (a.status.as_u16(), now.state.as_str()) {
                (_, "Exception" | "Killed" | "Cancelled") => {
                    return Err(BmcError::Other(format!("the BMC's update ended {}: {}", now.state, messages(&task))))
                }
                (_, "Completed") if status == "Critical" => {
                    return Err(BmcError::Other(format!("the BMC's update failed: {}", messages(&task))))
                }
                (202, _) | (_, "New" | "Starting" | "Running" | "Pending" | "Suspended" | "Stopping" | "Service") => {
                    pause = retry_after(&a).unwrap_or(Duration::from_secs(2));
                }
                _ => return Ok(Updated { task: Some(monitor), messages: messages(&task) }),
            }
            last = Some(now);
        }
    }
}

/// A task's latest message (cut to 256 characters).
fn latest(task: &Value) -> Option<String> {
    let m = task["Messages"].as_array()?.iter().rev().find_map(|m| m["Message"].as_str())?;
    Some(m.chars().filter(|c| !c.is_control()).take(256).collect())
}
