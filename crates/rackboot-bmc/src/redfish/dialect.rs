//! What vendors' Redfish services ask of a client beyond the schema, each from a public
//! reference:
//!
//! - **ETags** (DMTF DSP0266 "Etags"; HPE iLO and Supermicro refuse a BIOS or boot PATCH
//!   without one): a PATCH carries `If-Match` with the resource's ETag (its `ETag` header, else
//!   `@odata.etag`), read just before; a 412 (the resource changed between) reads it again and
//!   tries once more.
//! - **Task monitors** (DSP0266 "Asynchronous operations"; Dell iDRAC answers a settings PATCH
//!   or an action with 202 and a job): a 202 with a `Location` is followed to its end, polled at
//!   its `Retry-After` (2 s without one) for at most [`TASK_WAIT`]; `TaskState` `Exception`,
//!   `Killed` or `Cancelled` fails with the task's messages, never retried.
//! - **503 with Retry-After** (DSP0266 "Retry-After"): handled per request in `http`.

use std::time::Duration;

use hyper::Method;
use serde_json::Value;

use super::http::Answer;
use super::Redfish;
use crate::BmcError;

/// How long a task the BMC started is followed.
pub const TASK_WAIT: Duration = Duration::from_secs(240);

impl Redfish {
    /// One call as the vendor wants it: `If-Match` on a PATCH, and a 202's task followed.
    pub(super) async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Answer, BmcError> {
        let mut etag = if method == Method::PATCH { self.etag(path).await } else { None };
        let mut retried = false;
        loop {
            let mut headers = vec![self.auth_header()];
            if let Some(e) = etag.as_deref() {
                headers.push(("if-match", e));
            }
            match self.ep.send(method.clone(), path, &headers, body).await {
                Err(BmcError::Status { status: 412, .. }) if method == Method::PATCH && !retried => {
                    retried = true;
                    etag = self.etag(path).await;
                }
                Ok(a) if a.status.as_u16() == 202 && a.headers.contains_key(hyper::header::LOCATION) => {
                    return self.follow_task(a).await;
                }
                r => return r,
            }
        }
    }

    /// The resource's ETag, if the BMC gives one.
    async fn etag(&self, path: &str) -> Option<String> {
        let a = self.ep.send(Method::GET, path, &[self.auth_header()], None).await.ok()?;
        let header = a.headers.get(hyper::header::ETAG).and_then(|v| v.to_str().ok()).map(str::to_string);
        header.or_else(|| a.json().ok()?["@odata.etag"].as_str().map(str::to_string)).filter(|e| e.len() <= 256)
    }

    /// Follows a 202's task monitor until the task ends.
    async fn follow_task(&self, accepted: Answer) -> Result<Answer, BmcError> {
        let monitor = self.ep.location(&accepted)?;
        let deadline = tokio::time::Instant::now() + TASK_WAIT;
        let mut wait = retry_after(&accepted).unwrap_or(Duration::from_secs(2));
        loop {
            if tokio::time::Instant::now() + wait > deadline {
                return Err(BmcError::Timeout(TASK_WAIT));
            }
            tokio::time::sleep(wait).await;
            let a = self.ep.send(Method::GET, &monitor, &[self.auth_header()], None).await?;
            let task = a.json().unwrap_or_default();
            let state = task["TaskState"].as_str().unwrap_or_default();
            match (a.status.as_u16(), state) {
                (_, "Exception" | "Killed" | "Cancelled") => {
                    return Err(BmcError::Other(format!("the BMC's task {monitor} ended {state}: {}", messages(&task))))
                }
                (202, _) | (_, "New" | "Starting" | "Running" | "Pending" | "Suspended" | "Stopping" | "Service") => {
                    wait = retry_after(&a).unwrap_or(Duration::from_secs(2));
                }
                _ => return Ok(a),
            }
        }
    }
}

/// A `Retry-After` in seconds, between 0.1 and 10 s.
pub(super) fn retry_after(a: &Answer) -> Option<Duration> {
    let secs: u64 = a.headers.get(hyper::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs.min(10)).max(Duration::from_millis(100)))
}

/// A task's messages, joined (at most five, each cut to 256 characters: a BMC's answer is not
/// trusted to be small).
pub(super) fn messages(task: &Value) -> String {
    let m: Vec<String> = task["Messages"]
        .as_array()
        .map(|m| {
            m.iter().filter_map(|m| m["Message"].as_str()).take(5).map(|s| s.chars().take(256).collect()).collect()
        })
        .unwrap_or_default();
    if m.is_empty() {
        "no message".into()
    } else {
        m.join("; ")
    }
}
