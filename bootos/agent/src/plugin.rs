//! Running a signed vendor plugin job: the bundle fetched by its SHA-256 and refused unless the
//! bytes hash to it, unpacked under caps into an empty directory, then `check` and, when it asks
//! for it, `apply`, each run directly (no shell) with the parameters as JSON on stdin.
//!
//! | program | exit | result |
//! |---|---|---|
//! | check | 0 | unchanged (already as wanted) |
//! | check | 1 | run apply |
//! | check | 20 | not applicable |
//! | check (check only) | 1 | failed: still not as wanted |
//! | apply | 0 | applied |
//! | apply | 10 | applied, reboot needed (the agent reboots after reporting, if allowed) |
//! | either | other, signal, timeout | failed |

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hyper::Method;
use tokio::process::Command;

use crate::bundle::{self, Limits};
use crate::jobs::Sink;
use crate::process::{supervise, Ended};
use crate::wire::{Action, JobResult, JobSpec, Outcome, PluginReport, PluginResult, PluginStep, Stream};

/// Longest a bundle download may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs a plugin job to its end and returns the result to report.
pub async fn run(sink: &mut Sink<'_>, spec: &JobSpec, heartbeat: Duration, workdir: &Path) -> JobResult {
    let start = Instant::now();
    let Action::Plugin { name, version, sha256, check, apply, params, check_only, .. } = &spec.action else {
        unreachable!("plugin::run is only called for plugins")
    };
    let mut report = PluginReport { result: PluginResult::Failed, check_exit: None, apply_exit: None };
    let bytes = match fetch(sink, sha256).await {
        Ok(b) => b,
        Err(e) => return failed(spec, start, report, Outcome::Error, e),
    };
    let got = bundle::sha256_hex(&bytes);
    if got != *sha256 {
        let why = format!("bundle sha256 mismatch: got {got}, the job names {sha256}; refusing to run it");
        sink.send(Stream::Stderr, format!("plugin: {why}\n")).await;
        return failed(spec, start, report, Outcome::Failed, why);
    }
    let dir = workdir.join(format!("plugin-{}-{}", spec.id, spec.attempt));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return failed(spec, start, report, Outcome::Error, format!("creating {}: {e}", dir.display()));
    }
    let _cleanup = Cleanup(dir.clone());
    if let Err(e) = bundle::unpack(bytes.as_slice(), &Limits::default(), Some(&dir)) {
        return failed(spec, start, report, Outcome::Failed, format!("unpacking the bundle: {e}"));
    }
    let stdin = serde_json::to_vec(params).unwrap_or_else(|_| b"{}".to_vec());
    sink.send(Stream::Stdout, format!("plugin: {name} {version} ({sha256}): check\n")).await;
    let c = match step(sink, &dir, check, &stdin, heartbeat).await {
        Ok(code) => code,
        Err((outcome, why)) => return failed(spec, start, report, outcome, format!("check: {why}")),
    };
    report.check_exit = Some(c);
    match c {
        0 => report.result = PluginResult::Unchanged,
        20 => report.result = PluginResult::NotApplicable,
        1 if *check_only => {
            let why = "check exited 1: still not as wanted (a check-only run: apply not run)".to_string();
            return failed(spec, start, report, Outcome::Failed, why);
        }
        1 => {
            sink.send(Stream::Stdout, format!("plugin: {name} {version}: apply\n")).await;
            let a = match step(sink, &dir, apply, &stdin, heartbeat).await {
                Ok(code) => code,
                Err((outcome, why)) => return failed(spec, start, report, outcome, format!("apply: {why}")),
            };
            report.apply_exit = Some(a);
            report.result = match a {
                0 => PluginResult::Applied,
                10 => PluginResult::AppliedReboot,
                other => return failed(spec, start, report, Outcome::Failed, format!("apply exited {other}")),
            };
        }
        other => {
            let why = format!("check exited {other} (0: as wanted, 1: apply needed, 20: not applicable)");
            return failed(spec, start, report, Outcome::Failed, why);
        }
    }
    let code = report.apply_exit.unwrap_or(c);
    sink.send(Stream::Stdout, format!("plugin: {name} {version}: {:?}\n", report.result)).await;
    JobResult {
        attempt: spec.attempt,
        outcome: Outcome::Succeeded,
        exit_code: Some(code),
        duration_ms: start.elapsed().as_millis() as u64,
        error: None,
        plugin: Some(report),
    }
}

async fn fetch(sink: &mut Sink<'_>, sha256: &str) -> Result<Vec<u8>, String> {
    let path = format!("/agent/v1/plugins/{sha256}");
    let r = sink
        .client
        .call::<()>(Method::GET, &path, None, FETCH_TIMEOUT)
        .await
        .map_err(|e| format!("fetching the bundle: {e:#}"))?;
    if !r.ok() {
        return Err(format!("fetching the bundle: HTTP {}: {}", r.status, r.error_text()));
    }
    Ok(r.body.to_vec())
}

/// Runs one program of the bundle; its exit code, or why there is none.
async fn step(
    sink: &mut Sink<'_>,
    dir: &Path,
    step: &PluginStep,
    stdin: &[u8],
    heartbeat: Duration,
) -> Result<i32, (Outcome, String)> {
    let clean = bundle::clean_path(step.run.as_bytes(), &Limits::default()).map_err(|e| (Outcome::Failed, e.0))?;
    let program = dir.join(&clean);
    let mut cmd = Command::new(&program);
    cmd.current_dir(dir).env("RACKBOOT_PLUGIN_DIR", dir);
    let timeout = Duration::from_secs(step.timeout_secs);
    let Ended { stopped, status } = supervise(sink, cmd, Some(stdin.to_vec()), timeout, heartbeat)
        .await
        .map_err(|e| (Outcome::Error, format!("starting {clean}: {e}")))?;
    match (stopped, status) {
        (Some(Outcome::TimedOut), _) => {
            Err((Outcome::TimedOut, format!("killed (its process group) after {} s", step.timeout_secs)))
        }
        (Some(o), _) => Err((o, "cancelled by the operator".into())),
        (None, Ok(s)) => {
            use std::os::unix::process::ExitStatusExt;
            s.code().ok_or_else(|| (Outcome::Failed, format!("killed by signal {}", s.signal().unwrap_or(0))))
        }
        (None, Err(e)) => Err((Outcome::Error, format!("waiting for {clean}: {e}"))),
    }
}

fn failed(spec: &JobSpec, start: Instant, mut report: PluginReport, outcome: Outcome, why: String) -> JobResult {
    report.result = PluginResult::Failed;
    JobResult {
        attempt: spec.attempt,
        outcome,
        exit_code: report.apply_exit.or(report.check_exit),
        duration_ms: start.elapsed().as_millis() as u64,
        error: Some(why),
        plugin: Some(report),
    }
}

/// Removes the unpacked bundle when the job ends.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
