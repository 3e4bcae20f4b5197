//! Agent jobs: the record and its state machine, pure (no I/O, time passed in).
//!
//! ```text
//!            claim                 result (first one wins)
//!   queued ─────────> running ───────────────────────────> succeeded | failed | timed_out | error
//!     ^                 │  lease runs out (no output or heartbeat):
//!     └─────────────────┘  back to queued, or failed once max_attempts deliveries are used up
//!   queued | running ──cancel──> cancelled   (a running agent learns it from its next ack)
//! ```
//!
//! Delivery is at least once: a job whose agent goes quiet is delivered again. A result is
//! accepted once, from any attempt; later ones are acknowledged and ignored.

use rackboot_agent::wire::{Action, JobResult, Outcome};
use serde::{Deserialize, Serialize};

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
    TimedOut,
    Cancelled,
    Error,
}

impl JobState {
    pub fn is_terminal(self) -> bool {
        !matches!(self, JobState::Queued | JobState::Running)
    }
}

impl std::str::FromStr for JobState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| format!("unknown job state {s:?}"))
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Job {
    pub v: u64,
    pub id: u64,
    pub machine_id: u64,
    pub action: Action,
    pub timeout_secs: u64,
    pub max_attempts: u32,
    pub state: JobState,
    /// Deliveries so far.
    pub attempt: u32,
    pub created_at_ms: u64,
    pub claimed_at_ms: Option<u64>,
    /// A running job must be heard from before this, or it goes back to the queue.
    pub lease_until_ms: Option<u64>,
    pub finished_at_ms: Option<u64>,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<u64>,
    pub error: Option<String>,
    /// Output bytes received (all attempts).
    pub output_bytes: u64,
}

/// The longest timeout a job may ask for (a week).
pub const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

/// A new job's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub action: Action,
    pub timeout_secs: u64,
    pub max_attempts: u32,
}

impl Job {
    pub fn new(id: u64, machine_id: u64, new: NewJob, now_ms: u64) -> Job {
        Job {
            v: 1,
            id,
            machine_id,
            action: new.action,
            timeout_secs: new.timeout_secs,
            max_attempts: new.max_attempts.max(1),
            state: JobState::Queued,
            attempt: 0,
            created_at_ms: now_ms,
            claimed_at_ms: None,
            lease_until_ms: None,
            finished_at_ms: None,
            exit_code: None,
            duration_ms: None,
            error: None,
            output_bytes: 0,
        }
    }

    /// Hands a queued job to an agent: one more attempt, with a lease.
    pub fn claim(&mut self, now_ms: u64, lease_ms: u64) -> bool {
        if self.state != JobState::Queued {
            return false;
        }
        self.state = JobState::Running;
        self.attempt += 1;
        self.claimed_at_ms = Some(now_ms);
        self.lease_until_ms = Some(now_ms + lease_ms);
        true
    }

    /// Applies the clock: a running job whose lease ran out goes back to the queue (or fails when
    /// its attempts are used up); one running past its timeout plus a lease is timed out (the
    /// agent should have stopped it and said so). Returns whether anything changed.
    pub fn expire(&mut self, now_ms: u64, lease_ms: u64) -> bool {
        if self.state != JobState::Running {
            return false;
        }
        let started = self.claimed_at_ms.unwrap_or(now_ms);
        if now_ms > started.saturating_add(self.timeout_secs.saturating_mul(1000)).saturating_add(lease_ms) {
            self.finish_as(JobState::TimedOut, now_ms, Some(format!("no result within {} s", self.timeout_secs)));
            return true;
        }
        if self.lease_until_ms.is_some_and(|t| now_ms >= t) {
            if self.attempt >= self.max_attempts {
                let why = format!("the agent stopped reporting ({} of {} attempts)", self.attempt, self.max_attempts);
                self.finish_as(JobState::Failed, now_ms, Some(why));
            } else {
                self.state = JobState::Queued;
                self.lease_until_ms = None;
            }
            return true;
        }
        false
    }

    /// Output or a heartbeat from the agent running `attempt`: extends the lease. Returns
    /// whether the agent should stop (the job is finished or cancelled). A job that went back to
    /// the queue while its agent was in fact still at it is taken back by that agent.
    pub fn heard_from(&mut self, attempt: u32, now_ms: u64, lease_ms: u64) -> bool {
        match self.state {
            JobState::Running => {
                self.lease_until_ms = Some(now_ms + lease_ms);
                false
            }
            JobState::Queued if attempt == self.attempt && attempt > 0 => {
                self.state = JobState::Running;
                self.lease_until_ms = Some(now_ms + lease_ms);
                false
            }
            JobState::Queued => false,
            _ => true,
        }
    }

    /// Records the agent's result. The first result wins; returns whether this one did.
    pub fn finish(&mut self, r: &JobResult, now_ms: u64) -> bool {
        if self.state.is_terminal() {
            return false;
        }
        let state = match r.outcome {
            Outcome::Succeeded => JobState::Succeeded,
            Outcome::Failed => JobState::Failed,
            Outcome::TimedOut => JobState::TimedOut,
            Outcome::Cancelled => JobState::Cancelled,
            Outcome::Error => JobState::Error,
        };
        self.exit_code = r.exit_code;
        self.duration_ms = Some(r.duration_ms);
        self.finish_as(state, now_ms, r.error.clone());
        true
    }

    /// The operator cancels the job.
    pub fn cancel(&mut self, now_ms: u64) -> Result<(), String> {
        if self.state.is_terminal() {
            return Err(format!("job {} is already {:?}", self.id, self.state).to_lowercase());
        }
        self.finish_as(JobState::Cancelled, now_ms, Some("cancelled by the operator".into()));
        Ok(())
    }

    fn finish_as(&mut self, state: JobState, now_ms: u64, error: Option<String>) {
        self.state = state;
        self.finished_at_ms = Some(now_ms);
        self.lease_until_ms = None;
        if error.is_some() {
            self.error = error;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: u64 = 60_000;

    fn job() -> Job {
        let new = NewJob { action: Action::RefreshInventory, timeout_secs: 600, max_attempts: 2 };
        Job::new(7, 1, new, 0)
    }

    fn result(outcome: Outcome, code: Option<i32>) -> JobResult {
        JobResult { attempt: 1, outcome, exit_code: code, duration_ms: 5, error: None, plugin: None }
    }

    #[test]
    fn claim_then_result() {
        let mut j = job();
        assert!(j.claim(1_000, LEASE));
        assert!(!j.claim(1_001, LEASE), "a running job is not handed out twice");
        assert_eq!((j.state, j.attempt, j.lease_until_ms), (JobState::Running, 1, Some(61_000)));
        assert!(j.finish(&result(Outcome::Failed, Some(3)), 2_000));
        assert_eq!((j.state, j.exit_code, j.finished_at_ms), (JobState::Failed, Some(3), Some(2_000)));
        // The same result again (a retry after a lost answer) changes nothing.
        assert!(!j.finish(&result(Outcome::Succeeded, Some(0)), 3_000));
        assert_eq!(j.state, JobState::Failed);
    }

    #[test]
    fn a_quiet_agent_loses_the_job_which_is_delivered_again_then_fails() {
        let mut j = job();
        j.claim(0, LEASE);
        assert!(!j.expire(59_999, LEASE));
        assert!(!j.heard_from(1, 30_000, LEASE), "a heartbeat extends the lease");
        assert!(!j.expire(89_999, LEASE));
        assert!(j.expire(90_000, LEASE));
        assert_eq!(j.state, JobState::Queued, "redelivered after its lease ran out");
        assert!(j.claim(91_000, LEASE));
        assert_eq!(j.attempt, 2);
        assert!(j.expire(151_000, LEASE));
        assert_eq!(j.state, JobState::Failed, "attempts used up");
        assert!(j.error.as_deref().unwrap().contains("2 of 2"));
    }

    #[test]
    fn an_agent_that_was_only_slow_takes_its_job_back() {
        let mut j = job();
        j.claim(0, LEASE);
        j.expire(60_000, LEASE);
        assert_eq!(j.state, JobState::Queued);
        assert!(!j.heard_from(1, 61_000, LEASE));
        assert_eq!((j.state, j.attempt), (JobState::Running, 1));
        // A stale attempt's result still completes the job: it ran.
        assert!(j.finish(&result(Outcome::Succeeded, Some(0)), 62_000));
    }

    #[test]
    fn cancel_stops_the_agent_and_is_final() {
        let mut j = job();
        j.claim(0, LEASE);
        j.cancel(1_000).unwrap();
        assert_eq!(j.state, JobState::Cancelled);
        assert!(j.heard_from(1, 2_000, LEASE), "the next ack tells the agent to stop");
        assert!(!j.finish(&result(Outcome::Cancelled, None), 3_000));
        assert!(j.cancel(4_000).is_err());
        let mut q = job();
        q.cancel(0).unwrap();
        assert!(!q.claim(1, LEASE), "a cancelled job is never delivered");
    }

    #[test]
    fn a_job_running_past_its_timeout_is_timed_out() {
        let mut j = job();
        j.claim(0, LEASE);
        for t in (10_000..=600_000).step_by(10_000) {
            j.heard_from(1, t, LEASE);
            assert!(!j.expire(t, LEASE));
        }
        assert!(j.expire(660_001, LEASE));
        assert_eq!(j.state, JobState::TimedOut);
    }
}
