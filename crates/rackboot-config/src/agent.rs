//! `[agent]`: the agent controller (enrollment policy, long-poll, job lease and defaults).

use std::time::Duration;

use serde::Deserialize;

use super::value::{parse_nets, Ipv4Net};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireAgent {
    pub enroll: String,
    pub networks: Vec<String>,
    pub poll_secs: u64,
    pub lease_secs: u64,
    pub stats_secs: u64,
    pub job_timeout_secs: u64,
    pub max_attempts: u32,
    pub nonce_ttl_secs: u64,
    pub enrollments_per_minute: u32,
    pub enrollments_per_minute_per_source: u32,
}

impl Default for WireAgent {
    fn default() -> Self {
        WireAgent {
            enroll: "auto".into(),
            networks: Vec::new(),
            poll_secs: 25,
            lease_secs: 60,
            stats_secs: 30,
            job_timeout_secs: 3600,
            max_attempts: 3,
            nonce_ttl_secs: 1800,
            enrollments_per_minute: 12,
            enrollments_per_minute_per_source: 120,
        }
    }
}

/// Who may enroll an agent without an operator's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnrollPolicy {
    /// A BootOS agent presenting its boot's nonce from a provisioning network is accepted at
    /// once; every other new enrollment waits for approval.
    Auto,
    /// `manual` (or `approve`): every new enrollment waits for
    /// `POST /api/v1/machines/{id}/approve`.
    Approve,
}

/// Validated agent-controller settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    pub enroll: EnrollPolicy,
    /// Networks counted as the provisioning network for `Auto`. Empty: the DHCP subnets, or
    /// the server address's /24 when there are none.
    pub networks: Vec<Ipv4Net>,
    /// Longest a long-poll is held before an empty answer.
    pub poll: Duration,
    /// A claimed job not heard from within this goes back to the queue.
    pub lease: Duration,
    /// How often agents send stats.
    pub stats: Duration,
    /// Default job timeout.
    pub job_timeout_secs: u64,
    /// Default deliveries per job before it fails.
    pub max_attempts: u32,
    /// How long a boot's enrollment nonce stays valid after its iPXE script was served.
    pub nonce_ttl: Duration,
    /// Proven enrollments one known machine may make a minute; more get 429 and write nothing.
    /// 0: no limit.
    pub enrollments_per_minute: u32,
    /// Enrollments one source address may make a minute; more get 429. 0: no limit.
    pub enrollments_per_minute_per_source: u32,
}

impl TryFrom<WireAgent> for AgentConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireAgent) -> anyhow::Result<Self> {
        let WireAgent {
            enroll,
            networks,
            poll_secs,
            lease_secs,
            stats_secs,
            job_timeout_secs,
            max_attempts,
            nonce_ttl_secs,
            enrollments_per_minute,
            enrollments_per_minute_per_source,
        } = w;
        let enroll = match enroll.as_str() {
            "auto" => EnrollPolicy::Auto,
            "manual" | "approve" => EnrollPolicy::Approve,
            other => anyhow::bail!("agent.enroll must be \"auto\" or \"manual\", not {other:?}"),
        };
        let networks = parse_nets("agent.networks", &networks)?;
        anyhow::ensure!((1..=300).contains(&poll_secs), "agent.poll_secs must be 1..=300");
        anyhow::ensure!(lease_secs > poll_secs.min(30), "agent.lease_secs must be longer than a few seconds");
        anyhow::ensure!(stats_secs >= 1, "agent.stats_secs must be at least 1");
        anyhow::ensure!(job_timeout_secs >= 1, "agent.job_timeout_secs must be at least 1");
        anyhow::ensure!((1..=100).contains(&max_attempts), "agent.max_attempts must be 1..=100");
        anyhow::ensure!((1..=86_400).contains(&nonce_ttl_secs), "agent.nonce_ttl_secs must be 1..=86400");
        Ok(AgentConfig {
            enroll,
            networks,
            poll: Duration::from_secs(poll_secs),
            lease: Duration::from_secs(lease_secs),
            stats: Duration::from_secs(stats_secs),
            job_timeout_secs,
            max_attempts,
            nonce_ttl: Duration::from_secs(nonce_ttl_secs),
            enrollments_per_minute,
            enrollments_per_minute_per_source,
        })
    }
}
