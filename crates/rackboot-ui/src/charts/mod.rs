//! The dashboard's last hour as per-minute series, computed from timeline events (pure: events
//! in, counts out); [`plot`] lays them out for the SVG, [`pool`] samples DHCP pool use, which
//! the timeline does not hold.
//!
//! The hour is sixty one-minute slots ending now: slot 59 is the minute up to now, slot 0 the
//! one that began an hour ago. What each event counts as:
//! - a boot started: `boot.script`. Every network boot the appliance serves, whatever it boots
//!   (discovery, BootOS, an installer, the chain to the local disk, Windows), fetches its script
//!   once; `dhcp.offer` also answers renewals and is folded when it repeats, and
//!   `provision.power_on` sees only the boots a run asks a BMC for.
//! - a boot finished: `agent.enrolled` (the booted system's agent called in: BootOS, or an
//!   installed node) or `provision.installer_finished` (an OS installer, which has no agent,
//!   reported back). A boot into a system without either is never seen to finish.
//! - a failed job: `job.finished` or `job.lease_expired` whose `state` is `failed`,
//!   `timed_out` or `error` (a cancelled job is not a failure); a failed run: `provision.failed`.
//! - machines by state: today's counts, walked back minute by minute through `machine.state`
//!   (`from`, `to`) and the machines created in the hour (`machine.discovered`,
//!   `machine.registered`, in the state the event records). A deleted machine's events go
//!   with it, so it is missing from the earlier minutes too.

pub mod figures;
pub mod plot;
pub mod pool;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use rackboot_model::jobs::JobState;
use rackboot_store::{Event, EventKind, MachineState};

/// Slots in the hour.
pub const MINUTES: usize = 60;
/// One slot.
pub const MINUTE_MS: u64 = 60_000;
/// The hour the charts show.
pub const HOUR_MS: u64 = MINUTES as u64 * MINUTE_MS;

/// Every state, in lifecycle order (the order of the stacked bars and their legend).
pub const LIFECYCLE: [MachineState; 12] = [
    MachineState::Discovered,
    MachineState::Commissioning,
    MachineState::Ready,
    MachineState::Queued,
    MachineState::Configuring,
    MachineState::Installing,
    MachineState::PostInstall,
    MachineState::Installed,
    MachineState::Releasing,
    MachineState::Rescue,
    MachineState::Failed,
    MachineState::Retired,
];

/// The kinds of event the charts read.
pub fn kinds() -> Vec<EventKind> {
    vec![
        EventKind::BootScript,
        EventKind::AgentEnrolled,
        EventKind::ProvisionInstallerFinished,
        EventKind::JobFinished,
        EventKind::JobLeaseExpired,
        EventKind::ProvisionFailed,
        EventKind::MachineState,
        EventKind::MachineDiscovered,
        EventKind::MachineRegistered,
    ]
}

/// The slot (0 = the oldest) the moment `at_ms` falls in, if within the hour ending at `now_ms`:
/// slot `i` holds the moments after the end of slot `i - 1` up to its own end. A moment after
/// `now_ms` (another appliance's clock) is in the newest.
pub fn slot(at_ms: u64, now_ms: u64) -> Option<usize> {
    let ago = (now_ms.saturating_sub(at_ms) / MINUTE_MS) as usize;
    (ago < MINUTES).then(|| MINUTES - 1 - ago)
}

/// When slot `i` ends (its last moment, inclusive).
pub fn slot_end(i: usize, now_ms: u64) -> u64 {
    now_ms.saturating_sub((MINUTES - 1 - i) as u64 * MINUTE_MS)
}

/// The last hour, per minute (each series is [`MINUTES`] long, oldest first).
#[derive(Debug, Clone, PartialEq)]
pub struct Hour {
    pub now_ms: u64,
    pub boots_started: Vec<u64>,
    pub boots_finished: Vec<u64>,
    pub failed_jobs: Vec<u64>,
    pub failed_runs: Vec<u64>,
    /// Machines in each state at the end of each minute: the states that had any in the
    /// hour's known minutes, in [`LIFECYCLE`] order.
    pub states: Vec<(MachineState, Vec<u64>)>,
    /// The first slot whose events were all read: 0 unless the read was cut short, in which
    /// case the slots before it are unknown (drawn as such, not as zero).
    pub first_known: usize,
    /// When the read was cut short: events before this moment were not read.
    pub cut_ms: Option<u64>,
}

/// What an event counts as.
enum Mark {
    Started,
    Finished,
    FailedJob,
    FailedRun,
    /// A state change, undone going back in time.
    Changed {
        from: MachineState,
        to: MachineState,
    },
    /// A machine created in this state; before it, there was none.
    Created(MachineState),
}

fn mark(e: &Event) -> Option<Mark> {
    fn field<T: serde::de::DeserializeOwned>(e: &Event, k: &str) -> Option<T> {
        e.detail.get(k).and_then(|v| T::deserialize(v).ok())
    }
    match e.kind {
        EventKind::BootScript => Some(Mark::Started),
        EventKind::AgentEnrolled | EventKind::ProvisionInstallerFinished => Some(Mark::Finished),
        EventKind::JobFinished | EventKind::JobLeaseExpired => match field(e, "state")? {
            JobState::Failed | JobState::TimedOut | JobState::Error => Some(Mark::FailedJob),
            _ => None,
        },
        EventKind::ProvisionFailed => Some(Mark::FailedRun),
        EventKind::MachineState => Some(Mark::Changed { from: field(e, "from")?, to: field(e, "to")? }),
        EventKind::MachineDiscovered | EventKind::MachineRegistered => e.state.map(Mark::Created),
        _ => None,
    }
}

/// The hour ending at `now_ms` from `events` (any order; other kinds are ignored) and
/// `counts_now`, the machines in each state now. `cut_ms`: the read was cut short, and events
/// before that moment were not read.
pub fn hour(events: &[Event], now_ms: u64, counts_now: &HashMap<MachineState, usize>, cut_ms: Option<u64>) -> Hour {
    // A slot is known when it began at or after the cut.
    let first_known = match cut_ms {
        Some(cut) => (0..MINUTES).find(|&i| slot_end(i, now_ms).saturating_sub(MINUTE_MS) >= cut).unwrap_or(MINUTES),
        None => 0,
    };
    let mut out = Hour {
        now_ms,
        boots_started: vec![0; MINUTES],
        boots_finished: vec![0; MINUTES],
        failed_jobs: vec![0; MINUTES],
        failed_runs: vec![0; MINUTES],
        states: Vec::new(),
        first_known,
        cut_ms,
    };
    let mut changes = Vec::new();
    for e in events {
        let (Some(i), Some(m)) = (slot(e.at_ms, now_ms), mark(e)) else { continue };
        let series = match m {
            Mark::Started => &mut out.boots_started,
            Mark::Finished => &mut out.boots_finished,
            Mark::FailedJob => &mut out.failed_jobs,
            Mark::FailedRun => &mut out.failed_runs,
            change => {
                changes.push((e.seq, e.at_ms, change));
                continue;
            }
        };
        series[i] += 1;
    }
    out.states = states_back(changes, now_ms, counts_now, first_known);
    out
}

/// Machines by state at the end of each slot from `first_known` on: the counts now, with each
/// change after a slot's end undone (newest first). Counts cannot go below zero (an event may be
/// missing: pruned with its machine).
fn states_back(
    mut changes: Vec<(u64, u64, Mark)>,
    now_ms: u64,
    counts_now: &HashMap<MachineState, usize>,
    first_known: usize,
) -> Vec<(MachineState, Vec<u64>)> {
    changes.sort_by_key(|(seq, _, _)| std::cmp::Reverse(*seq));
    let mut counts: HashMap<MachineState, i64> = counts_now.iter().map(|(s, n)| (*s, *n as i64)).collect();
    let mut per_state: HashMap<MachineState, Vec<u64>> = HashMap::new();
    let mut pending = changes.into_iter().peekable();
    for i in (first_known..MINUTES).rev() {
        let end = slot_end(i, now_ms);
        while let Some((_, _, m)) = pending.next_if(|(_, at, _)| *at > end) {
            match m {
                Mark::Changed { from, to } => {
                    *counts.entry(to).or_default() -= 1;
                    *counts.entry(from).or_default() += 1;
                }
                Mark::Created(s) => *counts.entry(s).or_default() -= 1,
                _ => {}
            }
        }
        for (s, n) in &counts {
            per_state.entry(*s).or_insert_with(|| vec![0; MINUTES])[i] = (*n).max(0) as u64;
        }
    }
    LIFECYCLE.iter().filter_map(|s| per_state.remove(s).filter(|v| v.iter().any(|n| *n > 0)).map(|v| (*s, v))).collect()
}
