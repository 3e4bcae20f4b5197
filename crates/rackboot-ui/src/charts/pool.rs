//! DHCP pool use over the last hour. The timeline does not hold it, so a sampler reads the DHCP
//! service's gauges (which it sets every 5 s) once a minute and keeps the newest hour in
//! memory: the chart starts when the appliance started.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rackboot_base::metrics::Metrics;
use tokio_util::sync::CancellationToken;

use super::{slot_end, MINUTES, MINUTE_MS};

/// One reading of the gauges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub at_ms: u64,
    /// Active leases.
    pub leased: u64,
    /// Addresses in the pools (0: DHCP hands none out here).
    pub pool: u64,
}

/// Samples kept: an hour's, and the one before it.
const KEPT: usize = MINUTES + 1;
/// How old a sample may be and still stand for a minute's end.
const STALE_MS: u64 = 2 * MINUTE_MS;

/// The newest hour of samples; cheap to clone (one list behind an `Arc`).
#[derive(Debug, Clone, Default)]
pub struct PoolHistory {
    samples: Arc<Mutex<VecDeque<Sample>>>,
}

impl PoolHistory {
    /// Keeps `s`, dropping the oldest past an hour's worth.
    pub fn record(&self, s: Sample) {
        let mut q = self.samples.lock().expect("pool history lock");
        q.push_back(s);
        while q.len() > KEPT {
            q.pop_front();
        }
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        self.samples.lock().expect("pool history lock").iter().copied().collect()
    }
}

/// The gauges now.
pub fn reading(metrics: &Metrics, at_ms: u64) -> Sample {
    let gauge = |v: i64| u64::try_from(v).unwrap_or(0);
    Sample { at_ms, leased: gauge(metrics.leases_in_use.get()), pool: gauge(metrics.pool_addresses.get()) }
}

/// Samples the gauges into `history` now and once a minute until `stop`.
pub async fn sample(history: PoolHistory, metrics: Metrics, stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_millis(MINUTE_MS));
    // Late ticks move the rest along rather than bunch up: one sample a minute either way.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => history.record(reading(&metrics, rackboot_base::clock::now_ms())),
        }
    }
}

/// Leases in use at the end of each minute of the hour ending at `now.at_ms` (oldest first):
/// `now` for the newest minute, else the newest of `samples` (oldest first) at or before the
/// minute's end and at most two minutes older; with the first minute that has one (the ones
/// before are unknown: the appliance had not started). Samples of no pool do not count.
pub fn series(samples: &[Sample], now: Sample) -> (Vec<u64>, usize) {
    let mut values = vec![0; MINUTES];
    let mut first = MINUTES;
    for (i, v) in values.iter_mut().enumerate() {
        let end = slot_end(i, now.at_ms);
        let found = if i == MINUTES - 1 {
            Some(now).filter(|s| s.pool > 0)
        } else {
            samples.iter().rev().find(|s| s.at_ms <= end && s.pool > 0).filter(|s| end - s.at_ms <= STALE_MS).copied()
        };
        if let Some(s) = found {
            *v = s.leased;
            first = first.min(i);
        }
    }
    (values, first)
}
