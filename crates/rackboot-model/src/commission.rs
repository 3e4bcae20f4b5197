//! Commissioning tests: a test profile says what to run in BootOS (CPU, memory, disks, SMART,
//! the network to the appliance)
//! and the floors the figures must reach; the commissioning script measures and prints one line
//! per test (`rackboot-test: NAME FIGURE UNIT STATUS [message]`), and [`judge`] decides here,
//! in Rust, what passed. The results are kept on the run.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A test profile (`[[provision.test_profiles]]`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestProfile {
    pub name: String,
    /// stress-ng on every CPU for this many seconds; an error fails.
    #[serde(default)]
    pub cpu_secs: Option<u32>,
    /// memtester over this many MiB, one pass; a bad bit fails.
    #[serde(default)]
    pub memory_mib: Option<u32>,
    /// fio on every disk for this many seconds per pattern: sequential read and write (1 MiB
    /// blocks), random 4 KiB reads. The write pattern overwrites the disks.
    #[serde(default)]
    pub disk_secs: Option<u32>,
    /// Floors for every disk: sequential MB/s read and written, random-read IOPS.
    #[serde(default)]
    pub min_read_mbps: Option<f64>,
    #[serde(default)]
    pub min_write_mbps: Option<f64>,
    #[serde(default)]
    pub min_iops: Option<f64>,
    /// smartctl's health verdict on every disk that has SMART (others are skipped).
    #[serde(default)]
    pub smart: bool,
    /// iperf3 to the appliance for this many seconds each way (`network-tx`: the machine
    /// sends, `network-rx`: it receives); the appliance runs the server.
    #[serde(default)]
    pub network_secs: Option<u32>,
    /// Floor for both directions, in Mbit/s.
    #[serde(default)]
    pub min_network_mbps: Option<f64>,
}

/// Longest test a profile may ask for, and most memory.
const MAX_SECS: u32 = 24 * 3600;
const MAX_MIB: u32 = 16 << 20;

impl TestProfile {
    /// Why the profile cannot run, naming the field.
    pub fn check(&self) -> Result<(), String> {
        let at = format!("test profile {:?}", self.name);
        if !crate::records::valid_hostname(&self.name) {
            return Err(format!("{at}: the name must be letters, digits and '-'"));
        }
        for (field, v) in
            [("cpu_secs", self.cpu_secs), ("disk_secs", self.disk_secs), ("network_secs", self.network_secs)]
        {
            if v.is_some_and(|v| v == 0 || v > MAX_SECS) {
                return Err(format!("{at}: {field} must be 1-{MAX_SECS}"));
            }
        }
        if self.memory_mib.is_some_and(|v| v == 0 || v > MAX_MIB) {
            return Err(format!("{at}: memory_mib must be 1-{MAX_MIB}"));
        }
        let floors = [
            ("min_read_mbps", self.min_read_mbps),
            ("min_write_mbps", self.min_write_mbps),
            ("min_iops", self.min_iops),
        ];
        for (field, v) in floors {
            if v.is_some_and(|v| !v.is_finite() || v < 0.0) {
                return Err(format!("{at}: {field} must be a number of at least 0"));
            }
            if v.is_some() && self.disk_secs.is_none() {
                return Err(format!("{at}: {field} needs disk_secs (how long fio runs)"));
            }
        }
        if self.min_network_mbps.is_some_and(|v| !v.is_finite() || v < 0.0) {
            return Err(format!("{at}: min_network_mbps must be a number of at least 0"));
        }
        if self.min_network_mbps.is_some() && self.network_secs.is_none() {
            return Err(format!("{at}: min_network_mbps needs network_secs (how long iperf3 runs)"));
        }
        let none = self.cpu_secs.is_none() && self.memory_mib.is_none() && self.disk_secs.is_none();
        if none && self.network_secs.is_none() && !self.smart {
            return Err(format!("{at}: it tests nothing (cpu_secs, memory_mib, disk_secs, network_secs, smart)"));
        }
        Ok(())
    }
}

/// One test's outcome, as stored on the run and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TestResult {
    /// `cpu`, `memory`, `disk-read:vda`, `disk-write:vda`, `disk-iops:vda`, `smart:vda`,
    /// `network-tx`, `network-rx`.
    pub name: String,
    pub passed: bool,
    /// What was measured, if a figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<f64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// The floor it had to reach, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<f64>,
    /// `skipped` (the device cannot do it: no SMART) or what went wrong, in words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Prefix of a result line in the commissioning job's output.
pub const LINE: &str = "rackboot-test: ";

/// The results `output` reports, judged against `profile`. A test the profile asks for that
/// reported nothing fails ("no result"); the job's own failure (`job_error`) is a result too.
pub fn judge(profile: &TestProfile, output: &str, job_error: Option<&str>) -> Vec<TestResult> {
    let mut out: Vec<TestResult> = Vec::new();
    for line in output.lines().filter_map(|l| l.strip_prefix(LINE)) {
        let mut f = line.split_whitespace();
        let (Some(name), Some(figure), Some(unit), Some(status)) = (f.next(), f.next(), f.next(), f.next()) else {
            continue;
        };
        if out.len() >= 256 || name.len() > 64 || out.iter().any(|r| r.name == name) {
            continue;
        }
        let figure = figure.parse::<f64>().ok().filter(|v| v.is_finite());
        let floor = match name.split(':').next() {
            Some("disk-read") => profile.min_read_mbps,
            Some("disk-write") => profile.min_write_mbps,
            Some("disk-iops") => profile.min_iops,
            Some("network-tx" | "network-rx") => profile.min_network_mbps,
            _ => None,
        };
        let message: String = f.collect::<Vec<_>>().join(" ").chars().take(200).collect();
        let (passed, note) = match (status, figure, floor) {
            ("skipped", _, _) => (true, format!("skipped: {message}")),
            ("ok", Some(v), Some(min)) if v < min => (false, format!("{v} {unit} is below the floor of {min}")),
            ("ok", None, Some(_)) => (false, "no figure to compare with the floor".into()),
            ("ok", _, _) => (true, message),
            (_, _, _) => (false, if message.is_empty() { status.to_string() } else { message }),
        };
        let unit = if unit == "-" { String::new() } else { unit.chars().take(16).collect() };
        out.push(TestResult { name: name.into(), passed, figure, unit, floor, note });
    }
    let mut want: Vec<&str> = Vec::new();
    if profile.cpu_secs.is_some() {
        want.push("cpu");
    }
    if profile.memory_mib.is_some() {
        want.push("memory");
    }
    if profile.disk_secs.is_some() {
        want.extend(["disk-read", "disk-write", "disk-iops"]);
    }
    if profile.network_secs.is_some() {
        want.extend(["network-tx", "network-rx"]);
    }
    for kind in want {
        if !out.iter().any(|r| r.name.split(':').next() == Some(kind)) {
            out.push(TestResult {
                name: kind.into(),
                passed: false,
                figure: None,
                unit: String::new(),
                floor: None,
                note: "no result".into(),
            });
        }
    }
    if let Some(e) = job_error {
        out.push(TestResult {
            name: "job".into(),
            passed: false,
            figure: None,
            unit: String::new(),
            floor: None,
            note: e.chars().take(200).collect(),
        });
    }
    out
}

/// Why a run's tests failed, in one line (the first failures named); `None`: all passed.
pub fn failure(results: &[TestResult]) -> Option<String> {
    let failed: Vec<String> =
        results.iter().filter(|r| !r.passed).take(3).map(|r| format!("{}: {}", r.name, r.note)).collect();
    (!failed.is_empty()).then(|| format!("test {}", failed.join("; ")))
}

#[cfg(test)]
mod tests;
