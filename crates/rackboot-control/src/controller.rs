//! The agent controller's in-memory side: wakes long-polling agents when a job arrives for
//! them, checks agent credentials (cached), fans job output out to live followers, and sweeps
//! job leases. Everything durable (jobs, output, agents) lives in the CMDB.
//!
//! An idle long-poll is the HTTP connection's own task waiting on its machine's `Notify`: no
//! extra task, thread or timer wheel entry beyond the poll's deadline.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rackboot_base::secret::{same_bytes as same, unhex32 as unhex};
use sha2::{Digest, Sha256};
use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::cmdb::{Cmdb, CmdbError, StoredChunk};
use crate::config::{in_network, AgentConfig, EnrollPolicy, Ipv4Net};
use crate::jobs::Job;

/// What live followers of a job see.
#[derive(Debug, Clone)]
pub enum JobEvent {
    Output(StoredChunk),
    Done(Box<Job>),
}

/// Why an agent call was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum AuthError {
    /// No credential, a malformed one, or one that is not (or no longer) the machine's.
    Unauthorized,
    /// The credential is right but an operator has yet to approve the machine.
    NotApproved,
    Storage(String),
}

#[derive(Clone, Copy)]
struct Cred {
    sha256: [u8; 32],
    approved: bool,
    /// A newer enrollment awaiting approval.
    pending: Option<[u8; 32]>,
    /// When it was read from the CMDB.
    loaded: std::time::Instant,
}

/// How long a cached credential is trusted on a store other appliances share before it is read
/// again: an enrollment, approval, hand-over or delete through another appliance reaches this
/// one's cache within it. (On the embedded store every change goes through this appliance,
/// which forgets the credential as it commits.)
pub const SHARED_CRED_TTL: Duration = Duration::from_millis(500);

/// Shared controller state.
pub struct Hub {
    pub cmdb: Cmdb,
    pub cfg: AgentConfig,
    /// Networks whose agents `Auto` enrollment accepts (empty: any).
    networks: Vec<Ipv4Net>,
    /// The same on IPv6: the DHCPv6 subnets' prefixes (an IPv6 agent outside them needs an
    /// operator whenever `networks` is not empty).
    networks6: Vec<ipnet::Ipv6Net>,
    waiters: Mutex<HashMap<u64, Arc<Notify>>>,
    creds: RwLock<HashMap<u64, Cred>>,
    followers: Mutex<HashMap<u64, broadcast::Sender<JobEvent>>>,
    stats_seen: Mutex<HashMap<u64, tokio::time::Instant>>,
    /// Enrollments counted per source address, a minute at a time.
    pub enrollments: crate::auth::limiter::Limiter,
    /// Proven enrollments counted per machine, a minute at a time (inside the enrollment's
    /// transaction: an unproven one, whose MACs are only the caller's word, spends nothing).
    pub machine_enrollments: Arc<crate::auth::limiter::Limiter>,
    /// When each machine's timeline last said its enrollments were limited (once a minute).
    limited_noted: Mutex<HashMap<u64, std::time::Instant>>,
    /// The appliance's shutdown: long-polls and live-output streams end with it.
    pub shutdown: CancellationToken,
}

impl Hub {
    pub fn new(cmdb: Cmdb, cfg: AgentConfig, networks: Vec<Ipv4Net>, shutdown: CancellationToken) -> Hub {
        let or_off = |n: u32| if n == 0 { u32::MAX } else { n };
        let minute = std::time::Duration::from_secs(60);
        let enrollments =
            crate::auth::limiter::Limiter::new(u32::MAX, or_off(cfg.enrollments_per_minute_per_source), minute);
        let machine_enrollments =
            Arc::new(crate::auth::limiter::Limiter::new(or_off(cfg.enrollments_per_minute), u32::MAX, minute));
        Hub {
            enrollments,
            machine_enrollments,
            limited_noted: Mutex::default(),
            cmdb,
            cfg,
            networks,
            networks6: Vec::new(),
            waiters: Mutex::default(),
            creds: RwLock::default(),
            followers: Mutex::default(),
            stats_seen: Mutex::default(),
            shutdown,
        }
    }

    /// The IPv6 prefixes whose agents `Auto` enrollment accepts too.
    /// The per-machine bound on proven enrollments, for the enrollment's transaction (`None`
    /// when `agent.enrollments_per_minute` is 0).
    pub fn per_machine(&self) -> Option<rackboot_store::PerMachine> {
        if self.cfg.enrollments_per_minute == 0 {
            return None;
        }
        let limiter = self.machine_enrollments.clone();
        let unspecified = std::net::IpAddr::from([0u8; 4]);
        let admit = move |id: u64| limiter.reserve(&id.to_string(), unspecified, std::time::Instant::now()).is_ok();
        Some(rackboot_store::PerMachine(Arc::new(admit)))
    }

    /// Whether machine `id`'s timeline should say now that its enrollments are limited: at
    /// most once a minute, so a flood writes one event, not one per request.
    pub fn note_limited(&self, id: u64, now: std::time::Instant) -> bool {
        let mut noted = self.limited_noted.lock().expect("noted lock");
        if noted.get(&id).is_some_and(|t| now.duration_since(*t) < std::time::Duration::from_secs(60)) {
            return false;
        }
        if noted.len() >= 10_000 {
            noted.retain(|_, t| now.duration_since(*t) < std::time::Duration::from_secs(60));
        }
        noted.insert(id, now);
        true
    }

    pub fn with_networks6(self, networks6: Vec<ipnet::Ipv6Net>) -> Hub {
        Hub { networks6, ..self }
    }

    /// Whether an enrollment from `from` is accepted without an operator.
    pub fn auto_approves(&self, from: IpAddr) -> bool {
        if self.cfg.enroll == EnrollPolicy::Approve {
            return false;
        }
        let v4 = match from {
            IpAddr::V4(ip) => Some(ip),
            IpAddr::V6(ip) => ip.to_ipv4_mapped(),
        };
        let v6 = match from {
            IpAddr::V6(ip) if v4.is_none() => Some(ip),
            _ => None,
        };
        self.networks.is_empty()
            || v4.is_some_and(|ip| self.networks.iter().any(|n| in_network(ip, *n)))
            || v6.is_some_and(|ip| self.networks6.iter().any(|n| n.contains(&ip)))
    }

    /// A fresh credential secret and its hash. The agent gets `<machine id>.<secret>`; the
    /// CMDB keeps only the hash.
    pub fn new_secret() -> Result<(String, String), getrandom::Error> {
        rackboot_base::secret::new_credential()
    }

    /// Drops a machine's cached credential (after an enrollment, an approval or a delete); the
    /// next call reloads it from the CMDB, so the cache never outlives what was committed.
    pub fn forget(&self, machine_id: u64) {
        self.creds.write().expect("creds lock").remove(&machine_id);
    }

    /// Whether a machine's stats report should be stored: at most one per half `stats_secs`,
    /// so a misbehaving agent cannot flood the writer.
    pub fn stats_due(&self, machine_id: u64) -> bool {
        let now = tokio::time::Instant::now();
        let mut seen = self.stats_seen.lock().expect("stats lock");
        match seen.get(&machine_id) {
            Some(t) if now.duration_since(*t) < self.cfg.stats / 2 => false,
            _ => {
                seen.insert(machine_id, now);
                true
            }
        }
    }

    /// A presented bearer credential `<machine id>.<secret>` as (machine id, hex SHA-256 of the
    /// secret), for the CMDB to compare with what it stores, inside its own transaction.
    pub fn presented(bearer: Option<&str>) -> Option<(u64, String)> {
        rackboot_base::secret::presented_credential(bearer)
    }

    /// Checks a bearer credential `<machine id>.<secret>`; returns the machine id.
    pub async fn authenticate(&self, bearer: Option<&str>) -> Result<u64, AuthError> {
        let (id, secret) = bearer.and_then(|b| b.split_once('.')).ok_or(AuthError::Unauthorized)?;
        let id: u64 = id.parse().map_err(|_| AuthError::Unauthorized)?;
        let shared = self.cmdb.shared();
        let cached = self.creds.read().expect("creds lock").get(&id).copied();
        let cached = cached.filter(|c| !shared || c.loaded.elapsed() < SHARED_CRED_TTL);
        let cred = match cached {
            Some(c) => c,
            None => {
                let rec = self.cmdb.agent(id).await.map_err(|e| AuthError::Storage(e.to_string()))?;
                let rec = rec.ok_or(AuthError::Unauthorized)?;
                let c = Cred {
                    sha256: unhex(&rec.secret_sha256).ok_or(AuthError::Unauthorized)?,
                    approved: rec.approved,
                    pending: rec.pending_sha256.as_deref().and_then(unhex),
                    loaded: std::time::Instant::now(),
                };
                self.creds.write().expect("creds lock").insert(id, c);
                c
            }
        };
        let given: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        if same(&given, &cred.sha256) {
            return if cred.approved { Ok(id) } else { Err(AuthError::NotApproved) };
        }
        if cred.pending.is_some_and(|p| same(&given, &p)) {
            return Err(AuthError::NotApproved);
        }
        Err(AuthError::Unauthorized)
    }

    /// The `Notify` a machine's long-polls wait on.
    pub fn waiter(&self, machine_id: u64) -> Arc<Notify> {
        self.waiters.lock().expect("waiters lock").entry(machine_id).or_default().clone()
    }

    /// Wakes the machine's waiting long-polls (a job arrived or came back to the queue).
    pub fn wake(&self, machine_id: u64) {
        if let Some(n) = self.waiters.lock().expect("waiters lock").get(&machine_id) {
            n.notify_waiters();
        }
    }

    /// Follows a job's output and end. Call [`Hub::release`] when done following.
    pub fn subscribe(&self, job_id: u64) -> broadcast::Receiver<JobEvent> {
        let mut f = self.followers.lock().expect("followers lock");
        f.entry(job_id).or_insert_with(|| broadcast::channel(FOLLOW_BUFFER).0).subscribe()
    }

    /// Drops a job's channel once nobody follows it (call after dropping the receiver).
    pub fn release(&self, job_id: u64) {
        let mut f = self.followers.lock().expect("followers lock");
        if f.get(&job_id).is_some_and(|tx| tx.receiver_count() == 0) {
            f.remove(&job_id);
        }
    }

    /// Tells a job's followers, if it has any.
    pub fn publish(&self, job_id: u64, ev: JobEvent) {
        let mut f = self.followers.lock().expect("followers lock");
        let done = matches!(ev, JobEvent::Done(_));
        if let Some(tx) = f.get(&job_id) {
            let _ = tx.send(ev);
        }
        if done {
            f.remove(&job_id);
        }
    }

    /// Every quarter lease: jobs whose agents went quiet go back to the queue (their machine's
    /// polls are woken) or fail; timed-out jobs end.
    pub async fn sweep(self: Arc<Self>, token: CancellationToken) -> anyhow::Result<()> {
        let every = (self.cfg.lease / 4).max(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = token.cancelled() => return Ok(()),
                _ = tokio::time::sleep(every) => {}
            }
            match self.cmdb.expire_jobs(self.cfg.lease.as_millis() as u64).await {
                Ok(changed) => {
                    for job in changed {
                        debug!(job = job.id, state = ?job.state, "job lease expired");
                        if job.state.is_terminal() {
                            self.publish(job.id, JobEvent::Done(Box::new(job)));
                        } else {
                            self.wake(job.machine_id);
                        }
                    }
                }
                Err(CmdbError::Storage(e)) if token.is_cancelled() => debug!(%e, "sweep after shutdown"),
                Err(error) => warn!(%error, "job lease sweep failed"),
            }
        }
    }
}

impl Hub {
    /// On a store other appliances share, wakes this appliance's long-polls for jobs queued
    /// through any of them (their `job.queued` events come through the change log).
    pub async fn wake_on_queued(self: Arc<Self>, token: CancellationToken) -> anyhow::Result<()> {
        let mut events = self.cmdb.subscribe_events();
        loop {
            tokio::select! {
                _ = token.cancelled() => return Ok(()),
                e = events.recv() => match e {
                    Ok(e) if e.kind == crate::cmdb::EventKind::JobQueued => self.wake(e.machine_id),
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}

/// Chunks a slow follower may fall behind by before it is told it lagged.
const FOLLOW_BUFFER: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use rackboot_base::secret::hex;

    #[test]
    fn credentials_hash_round_trip() {
        let (secret, hash) = Hub::new_secret().unwrap();
        assert_eq!(secret.len(), 64);
        assert_eq!(unhex(&hash).map(|h| hex(&h)), Some(hash.clone()));
        assert_eq!(hex(&Sha256::digest(secret.as_bytes())), hash);
        assert_ne!(Hub::new_secret().unwrap().0, secret, "every enrollment gets a new secret");
        assert_eq!(unhex("zz"), None);
    }
}
