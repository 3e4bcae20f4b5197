//! What one storm measured: each machine's outcome, and the table of stages made from them.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::time::Duration;

/// The steps of a network boot, in order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Stage {
    DhcpRom,
    Tftp,
    DhcpIpxe,
    Script,
    Kernel,
    Initrd,
    Enroll,
    Inventory,
    Poll,
}

impl Stage {
    pub const ALL: [Stage; 9] = [
        Stage::DhcpRom,
        Stage::Tftp,
        Stage::DhcpIpxe,
        Stage::Script,
        Stage::Kernel,
        Stage::Initrd,
        Stage::Enroll,
        Stage::Inventory,
        Stage::Poll,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::DhcpRom => "DHCP (PXE ROM)",
            Stage::Tftp => "TFTP boot program",
            Stage::DhcpIpxe => "DHCP (iPXE)",
            Stage::Script => "HTTP boot script",
            Stage::Kernel => "HTTP kernel",
            Stage::Initrd => "HTTP initrd",
            Stage::Enroll => "agent enroll",
            Stage::Inventory => "agent inventory",
            Stage::Poll => "agent first poll",
        }
    }
}

/// One simulated machine's boot.
#[derive(Debug, Default)]
pub struct Outcome {
    pub mac: String,
    /// The address DHCP leased it.
    pub address: Option<Ipv4Addr>,
    /// Each finished stage and how long it took.
    pub stages: Vec<(Stage, Duration)>,
    /// Retransmissions and retries per stage.
    pub retries: HashMap<Stage, u32>,
    /// The stage that failed, and why; the machine went no further.
    pub failed: Option<(Stage, String)>,
    /// Power-on to the last stage asked for.
    pub total: Option<Duration>,
    /// When (since the storm began) it finished.
    pub finished_at: Option<Duration>,
    /// The machine id its enrollment got.
    pub machine_id: Option<u64>,
    /// Its script said: boot the local disk (nothing after the script).
    pub local_boot: bool,
}

pub struct Report {
    pub outcomes: Vec<Outcome>,
    pub wall: Duration,
    /// DHCP answers that matched no machine's transaction.
    pub stray_dhcp: u64,
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

impl Report {
    pub fn completed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.total.is_some()).count()
    }

    /// (stage, machines that failed there, one example reason).
    pub fn failures(&self) -> Vec<(Stage, usize, String)> {
        let mut by: HashMap<Stage, (usize, String)> = HashMap::new();
        for (stage, why) in self.outcomes.iter().filter_map(|o| o.failed.as_ref()) {
            let e = by.entry(*stage).or_insert((0, why.clone()));
            e.0 += 1;
        }
        let mut v: Vec<_> = by.into_iter().map(|(s, (n, why))| (s, n, why)).collect();
        v.sort();
        v
    }

    /// Addresses leased to more than one machine (each extra holder counts).
    pub fn duplicate_addresses(&self) -> usize {
        duplicates(self.outcomes.iter().filter_map(|o| o.address))
    }

    /// Machine ids two enrollments got (a lost enrollment: one machine record for two machines).
    pub fn duplicate_machine_ids(&self) -> usize {
        duplicates(self.outcomes.iter().filter_map(|o| o.machine_id))
    }

    /// The per-stage table and the totals.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<26} {:>6} {:>9} {:>9} {:>9} {:>8} {:>7}",
            "stage", "done", "p50 ms", "p99 ms", "max ms", "retries", "failed"
        );
        let failures = self.failures();
        let mut row = |name: &str, mut ms: Vec<f64>, retries: u32, failed: usize| {
            ms.sort_by(f64::total_cmp);
            let (p50, p99, max) =
                if ms.is_empty() { (0.0, 0.0, 0.0) } else { (pct(&ms, 0.5), pct(&ms, 0.99), ms[ms.len() - 1]) };
            let _ =
                writeln!(out, "{name:<26} {:>6} {p50:>9.1} {p99:>9.1} {max:>9.1} {retries:>8} {failed:>7}", ms.len());
        };
        for stage in Stage::ALL {
            let ms: Vec<f64> = self
                .outcomes
                .iter()
                .flat_map(|o| o.stages.iter().filter(|(s, _)| *s == stage).map(|(_, d)| d.as_secs_f64() * 1e3))
                .collect();
            let retries = self.outcomes.iter().filter_map(|o| o.retries.get(&stage)).sum();
            let failed = failures.iter().find(|(s, ..)| *s == stage).map_or(0, |f| f.1);
            if !ms.is_empty() || failed > 0 {
                row(stage.name(), ms, retries, failed);
            }
        }
        let totals: Vec<f64> = self.outcomes.iter().filter_map(|o| o.total).map(|d| d.as_secs_f64() * 1e3).collect();
        let all_retries = self.outcomes.iter().flat_map(|o| o.retries.values()).sum();
        row("power-on -> done", totals, all_retries, self.outcomes.len() - self.completed());
        let done = self.completed();
        let last = self.outcomes.iter().filter_map(|o| o.finished_at).max().unwrap_or_default();
        let _ = writeln!(
            out,
            "{done} of {} machines done in {:.1} s ({:.1} machines/s); {} local boots; duplicate addresses {}, duplicate enrollments {}, stray DHCP answers {}",
            self.outcomes.len(),
            last.as_secs_f64(),
            done as f64 / last.as_secs_f64().max(1e-3),
            self.outcomes.iter().filter(|o| o.local_boot).count(),
            self.duplicate_addresses(),
            self.duplicate_machine_ids(),
            self.stray_dhcp
        );
        for (stage, n, why) in failures {
            let _ = writeln!(out, "failed at {}: {n} machines, e.g. {why}", stage.name());
        }
        out
    }
}

fn duplicates<T: std::hash::Hash + Eq + Copy>(items: impl Iterator<Item = T>) -> usize {
    let mut seen = std::collections::HashSet::new();
    items.filter(|i| !seen.insert(*i)).count()
}
