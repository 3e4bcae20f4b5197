//! When and how the zones follow the CMDB: a change after a quiet stretch is rebuilt at once,
//! churn is spaced by the rebuilds' own CPU time, and a change that only adds names makes the
//! next snapshot from the last one ([`Zones::with_added`]) instead of from every name.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use rackboot_store::{now_secs, Cmdb};
use tokio::time::Instant;

use super::zone::{ZoneSettings, Zones};

/// The least time between two rebuilds, and how long a change seen under churn waits for
/// others to fold into its rebuild.
pub const SETTLE: Duration = Duration::from_millis(50);
/// A rebuild reads every name and lease, so under heavy churn (a DHCP storm commits many
/// times a second) rebuilds are spaced by this many times the last one's CPU time, keeping
/// them near a hundredth of a core (a twentieth was a sixth of the appliance's CPU under
/// 2,000 DHCP exchanges a second, BENCHMARKS.md)...
const SETTLE_FACTOR: u32 = 99;
/// ...but never further apart than this: a new name still answers within a couple of seconds
/// in a storm, and as soon as the zones are rebuilt when it follows a quiet stretch.
const SETTLE_MAX: Duration = Duration::from_secs(2);

/// How far apart rebuilds are kept, given the CPU time the last one took.
pub fn spacing_after(last_rebuild_cpu: Duration) -> Duration {
    (last_rebuild_cpu * SETTLE_FACTOR).clamp(SETTLE, SETTLE_MAX)
}

/// When to rebuild for a change seen at `now`. After a quiet stretch (the last rebuild ended
/// `spacing` ago or more) at once: a name added by hand answers within the rebuild's own time.
/// Under churn no sooner than `spacing` after the last rebuild ended, nor than [`SETTLE`] from
/// now, so the changes of a burst fold into one rebuild: a burst costs at most one rebuild more
/// than before (its first change's), and rebuilds stay one per spacing.
pub fn rebuild_at(now: Instant, last_end: Instant, spacing: Duration) -> Instant {
    if now >= last_end + spacing {
        now
    } else {
        (now + SETTLE).max(last_end + spacing)
    }
}

/// CPU time of the calling thread. A rebuild runs on one worker thread without yielding, so this
/// is what it cost, not the time it spent preempted on a busy machine (which, measured in wall
/// time, once spaced a small zone's rebuilds two seconds apart under the VM tests' load).
pub fn thread_cpu() -> Option<Duration> {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).ok().map(Duration::from)
}

/// Rebuilds the zone snapshot from the CMDB when its names or addresses changed, moving the
/// serial forward: to the current Unix time, or by one when that would not be higher.
pub struct Refresher {
    settings: ZoneSettings,
    cmdb: Cmdb,
    hosts: Vec<(String, Ipv4Addr)>,
    hosts6: Vec<(String, std::net::Ipv6Addr)>,
    /// When the earliest lease behind a name expires (Unix seconds).
    pub next_expiry: Option<u64>,
    /// The zones as last made.
    pub current: Arc<Zones>,
}

impl Refresher {
    pub fn new(settings: ZoneSettings, cmdb: Cmdb) -> Refresher {
        let now = now_secs();
        let dh = cmdb.dns_hosts(now);
        let current = Arc::new(build(&settings, &dh, now as u32));
        Refresher { settings, cmdb, hosts: dh.hosts, hosts6: dh.hosts6, next_expiry: dh.next_expiry, current }
    }

    /// Returns whether a new snapshot was made: the last one with the new names added when
    /// names were only added (and not too many since the last full build), else a full build.
    pub fn refresh(&mut self) -> bool {
        let now = now_secs();
        let dh = self.cmdb.dns_hosts(now);
        self.next_expiry = dh.next_expiry;
        if dh.hosts == self.hosts && dh.hosts6 == self.hosts6 {
            return false;
        }
        let serial = next_serial(self.current.serial(), now as u32);
        let (added, added6) = (only_added(&self.hosts, &dh.hosts), only_added(&self.hosts6, &dh.hosts6));
        let next = match (added, added6) {
            (Some(a), Some(a6)) if self.current.added_len() + 3 * (a.len() + a6.len()) <= MAX_ADDED => {
                self.current.with_added(&self.settings, &a, &a6, serial)
            }
            _ => build(&self.settings, &dh, serial),
        };
        self.current = Arc::new(next);
        self.hosts = dh.hosts;
        self.hosts6 = dh.hosts6;
        true
    }
}

/// Names a snapshot may have added since the last full build before the next change builds
/// all of them again (each host adds up to three: its name, its PTR and a reverse zone's empty
/// non-terminal). A snapshot copies the added ones, so this bounds what a change costs.
const MAX_ADDED: usize = 1024;

/// The entries of `new` that `old` lacks, when `new` has every entry of `old` (both sorted, as
/// the store gives them); `None` when one of `old` is gone.
fn only_added<T: Ord + Clone>(old: &[T], new: &[T]) -> Option<Vec<T>> {
    let mut added = Vec::new();
    let mut old = old.iter().peekable();
    for n in new {
        match old.peek() {
            Some(o) if *o == n => {
                old.next();
            }
            Some(o) if *o < n => return None,
            _ => added.push(n.clone()),
        }
    }
    old.next().is_none().then_some(added)
}

/// Every zone from the CMDB's names and addresses, IPv4 and IPv6.
fn build(settings: &ZoneSettings, dh: &rackboot_store::DnsHosts, serial: u32) -> Zones {
    let mut zones = Zones::build(settings, &dh.hosts, serial);
    zones.add_hosts6(settings, &dh.hosts6);
    zones.fold();
    zones
}

/// The serial after `old`: the clock when it is ahead, else one more.
fn next_serial(old: u32, now: u32) -> u32 {
    if now > old {
        now
    } else {
        old.wrapping_add(1)
    }
}

#[cfg(test)]
mod tests {
    use super::{next_serial, only_added, rebuild_at, spacing_after, thread_cpu, SETTLE, SETTLE_MAX};
    use std::time::Duration;
    use tokio::time::Instant;

    #[test]
    fn costly_rebuilds_are_spaced_further_apart_but_never_past_the_cap() {
        assert_eq!(spacing_after(Duration::from_micros(100)), SETTLE);
        assert_eq!(spacing_after(Duration::from_millis(10)), Duration::from_millis(990));
        assert_eq!(spacing_after(Duration::from_secs(1)), SETTLE_MAX);
    }

    #[test]
    fn a_change_after_a_quiet_stretch_rebuilds_at_once_and_churn_keeps_the_spacing() {
        let last_end = Instant::now();
        let spacing = Duration::from_millis(990);
        // Under churn: the next rebuild keeps its distance from the last.
        let now = last_end + Duration::from_millis(10);
        assert_eq!(rebuild_at(now, last_end, spacing), last_end + spacing);
        // Late in the spacing: still the settle from now, for a burst's changes to fold in.
        let now = last_end + Duration::from_millis(980);
        assert_eq!(rebuild_at(now, last_end, spacing), now + SETTLE);
        // After a quiet stretch as long as the spacing or longer: at once.
        for quiet in [spacing, Duration::from_secs(5)] {
            let now = last_end + quiet;
            assert_eq!(rebuild_at(now, last_end, spacing), now);
        }
    }

    #[test]
    fn thread_cpu_counts_work_not_sleep() {
        let a = thread_cpu().expect("CLOCK_THREAD_CPUTIME_ID");
        std::thread::sleep(Duration::from_millis(50));
        let b = thread_cpu().expect("CLOCK_THREAD_CPUTIME_ID");
        assert!(b - a < Duration::from_millis(25), "sleeping cost {:?} of CPU", b - a);
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        assert!(thread_cpu().unwrap() > b, "spinning cost no CPU");
    }

    #[test]
    fn only_added_names_what_is_new_or_none_when_something_went() {
        let v = |xs: &[u8]| xs.to_vec();
        assert_eq!(only_added(&v(&[1, 3, 5]), &v(&[0, 1, 2, 3, 5, 6])), Some(v(&[0, 2, 6])));
        assert_eq!(only_added(&v(&[1, 3]), &v(&[1, 3])), Some(v(&[])));
        assert_eq!(only_added(&v(&[]), &v(&[4])), Some(v(&[4])));
        assert_eq!(only_added(&v(&[1, 3, 5]), &v(&[1, 2, 5])), None, "3 went");
        assert_eq!(only_added(&v(&[1, 3, 5]), &v(&[1, 3])), None, "the last went");
        assert_eq!(only_added(&v(&[1]), &v(&[])), None);
    }

    #[test]
    fn serial_always_moves_forward() {
        assert_eq!(next_serial(100, 200), 200);
        assert_eq!(next_serial(200, 200), 201);
        assert_eq!(next_serial(201, 200), 202);
    }
}
