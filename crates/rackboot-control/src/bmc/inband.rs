//! BMC accounts set up in band, as MAAS does during commissioning: nobody types a BMC password
//! into a form. A BootOS agent that finds a BMC through `/dev/ipmi0` on a machine with no BMC
//! on record gets a `bmc_account` job (`[bmc] inband_accounts`); the agent makes a random
//! password, sets its user up and reports the account on its own connection; the appliance
//! checks the report against the job, seals the password and makes that account the machine's
//! BMC, then reads the power state through it (out of band) to show it works. An operator
//! resets the password through the same job.

use rackboot_agent::wire::{Action, BmcAccountReport};
use serde_json::json;

use super::model::InbandAccount;
use super::power::Caller;
use super::{Bmc, Power, PowerAction, Protocol, TlsPolicy};
use crate::cmdb::{now_ms, Cmdb, CmdbError, EventKind, JobFilter};
use crate::config::BmcConfig;
use crate::jobs::{Job, JobState, NewJob};

/// The job's timeout (ipmitool runs a handful of commands).
pub const JOB_TIMEOUT_SECS: u64 = 180;
/// An automatic set-up is not queued again within this of the last one (a BMC that refuses it
/// is not asked at every boot).
pub const AUTO_EVERY_MS: u64 = 3_600_000;

/// Why a reported account was not taken.
#[derive(Debug, thiserror::Error)]
pub enum InbandError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Cmdb(#[from] CmdbError),
    #[error("sealing the password: {0}")]
    Seal(String),
}

/// The job's action under `cfg`.
pub fn action(cfg: &BmcConfig) -> Action {
    Action::BmcAccount { username: cfg.inband_username.clone(), channel: cfg.inband_channel }
}

/// Queues the set-up for machine `id` now (an operator's: set it up, or a new password).
pub async fn queue(cmdb: &Cmdb, cfg: &BmcConfig, id: u64) -> Result<Job, CmdbError> {
    // Delivered once: a second delivery would make another password.
    let new = NewJob { action: action(cfg), timeout_secs: JOB_TIMEOUT_SECS, max_attempts: 1 };
    let mut jobs = cmdb.submit_jobs(vec![id], new).await?;
    jobs.pop().ok_or_else(|| CmdbError::NotFound(format!("machine {id}")))
}

/// After a BootOS agent's inventory: queues the set-up when the config asks for it, the agent
/// `found` a BMC in band (with a LAN address), the machine has none on record, and no set-up
/// was queued for it lately.
pub async fn queue_if_due(
    cmdb: &Cmdb,
    cfg: &BmcConfig,
    id: u64,
    found: bool,
    bootos: bool,
) -> Result<Option<Job>, CmdbError> {
    if !cfg.inband_accounts || !bootos || !found || cmdb.bmc(id).await?.is_some() {
        return Ok(None);
    }
    let filter = JobFilter { machine: Some(id), limit: Some(500), ..Default::default() };
    let now = now_ms();
    let recent = cmdb.jobs(filter).await?.0.into_iter().any(|j| {
        matches!(j.action, Action::BmcAccount { .. })
            && (matches!(j.state, JobState::Queued | JobState::Running)
                || now.saturating_sub(j.created_at_ms) < AUTO_EVERY_MS)
    });
    if recent {
        return Ok(None);
    }
    queue(cmdb, cfg, id).await.map(Some)
}

/// Checks what machine `machine`'s agent reported for job `job_id`, seals the password and
/// makes the account the machine's BMC; then reads the power state through it in the
/// background.
pub async fn register(
    power: &std::sync::Arc<Power>,
    cmdb: &Cmdb,
    machine: u64,
    job_id: u64,
    r: BmcAccountReport,
) -> Result<Bmc, InbandError> {
    let job = match cmdb.job(job_id).await {
        Ok(j) if j.machine_id == machine => j,
        Ok(_) | Err(CmdbError::NotFound(_)) => return Err(InbandError::NotFound(format!("job {job_id}"))),
        Err(e) => return Err(e.into()),
    };
    if job.state != JobState::Running {
        return Err(InbandError::Refused(format!("job {job_id} is not running")));
    }
    match &job.action {
        Action::BmcAccount { username, channel } if *username == r.username && *channel == r.channel => {}
        _ => return Err(InbandError::Refused(format!("job {job_id} did not ask for this account"))),
    }
    check(&r, &power.config().inband_networks).map_err(InbandError::Refused)?;
    let ip: std::net::IpAddr = r.address.parse().map_err(|_| InbandError::Refused("not an IP address".into()))?;
    if let Some(other) =
        cmdb.bmcs().await?.into_iter().find(|b| b.machine_id != machine && host_of(&b.address) == Some(ip))
    {
        return Err(InbandError::Refused(format!("{ip} is machine {}'s BMC", other.machine_id)));
    }
    let address = match r.address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => format!("[{v6}]"),
        Ok(v4) => v4.to_string(),
        Err(_) => return Err(InbandError::Refused(format!("address {:?} is not an IP address", r.address))),
    };
    let sealed = power.seal(machine, &r.password).map_err(|e| InbandError::Seal(e.to_string()))?;
    let rotated = cmdb.bmc(machine).await?.is_some_and(|b| b.inband.is_some());
    let detail = json!({"job": job_id, "user_id": r.user_id, "username": r.username, "channel": r.channel,
        "address": address, "mac": r.mac, "rotated": rotated});
    let inband =
        InbandAccount { user_id: r.user_id, channel: r.channel, mac: r.mac.clone(), job: job_id, set_at_ms: now_ms() };
    let b = Bmc {
        machine_id: machine,
        address,
        protocol: Protocol::Ipmi,
        username: r.username,
        password_sealed: sealed,
        tls: TlsPolicy::Ca,
        system_id: None,
        boot_mode: None,
        power: None,
        updated_at: 0,
        firmware: None,
        inband: Some(inband),
        boot_via: Default::default(),
    };
    let stored = cmdb.put_inband_bmc(b, (EventKind::BmcInband, detail)).await?;
    // Out of band through the new account: the reading (or why it failed) is on the record.
    let power = power.clone();
    tokio::spawn(async move {
        if let Err(error) = power.act(machine, PowerAction::Status, false, Caller::Operator).await {
            tracing::warn!(machine, %error, "the in-band BMC account does not work out of band (yet)");
        }
    });
    Ok(stored)
}

/// The address part of a BMC record's `address` (`ip`, `ip:port`, `[v6]`, `[v6]:port`).
fn host_of(address: &str) -> Option<std::net::IpAddr> {
    if let Ok(ip) = address.parse() {
        return Some(ip);
    }
    if let Ok(sa) = address.parse::<std::net::SocketAddr>() {
        return Some(sa.ip());
    }
    address.strip_prefix('[').and_then(|a| a.strip_suffix(']')).and_then(|a| a.parse().ok())
}

/// The report's bounds: a slot IPMI has, a plain password of 8 to 20 characters, an address in
/// `networks`, a short MAC.
fn check(r: &BmcAccountReport, networks: &[ipnet::IpNet]) -> Result<(), String> {
    if !(2..=63).contains(&r.user_id) || r.channel > 15 {
        return Err(format!("user {} on channel {}: not an IPMI user slot", r.user_id, r.channel));
    }
    if !(8..=20).contains(&r.password.len()) || !r.password.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("the password must be 8 to 20 printable ASCII characters".into());
    }
    let ip: std::net::IpAddr =
        r.address.parse().map_err(|_| format!("address {:?} is not an IP address", r.address))?;
    if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() {
        return Err(format!("address {ip} cannot be a BMC's"));
    }
    if !networks.iter().any(|n| n.contains(&ip)) {
        return Err(format!("address {ip} is outside bmc.inband_networks"));
    }
    if r.mac.as_ref().is_some_and(|m| m.len() > 17 || !m.chars().all(|c| c.is_ascii_hexdigit() || c == ':')) {
        return Err("the MAC address is not one".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> BmcAccountReport {
        BmcAccountReport {
            user_id: 3,
            username: "rackboot".into(),
            password: "Abcdefgh12345678".into(),
            channel: 1,
            address: "198.18.0.5".into(),
            mac: Some("52:54:00:ee:00:77".into()),
        }
    }

    fn nets() -> Vec<ipnet::IpNet> {
        vec!["198.18.0.0/24".parse().unwrap()]
    }

    #[test]
    fn host_of_reads_every_form_of_a_bmc_address() {
        for a in ["198.18.0.5", "198.18.0.5:623", "[fd00::5]", "[fd00::5]:443", "fd00::5"] {
            assert!(host_of(a).is_some(), "{a}");
        }
        assert_eq!(host_of("bmc.example:443"), None);
    }

    #[test]
    fn a_report_is_bounded() {
        assert!(check(&report(), &nets()).is_ok());
        for (bad, why) in [
            (BmcAccountReport { user_id: 1, ..report() }, "slot"),
            (BmcAccountReport { user_id: 64, ..report() }, "slot"),
            (BmcAccountReport { password: "short".into(), ..report() }, "8 to 20"),
            (BmcAccountReport { password: "with space 12345".into(), ..report() }, "printable"),
            (BmcAccountReport { address: "bmc.example".into(), ..report() }, "not an IP"),
            (BmcAccountReport { address: "127.0.0.1".into(), ..report() }, "cannot be"),
            (BmcAccountReport { address: "0.0.0.0".into(), ..report() }, "cannot be"),
            (BmcAccountReport { mac: Some("zz:zz".into()), ..report() }, "MAC"),
            (BmcAccountReport { address: "10.1.2.3".into(), ..report() }, "outside bmc.inband_networks"),
        ] {
            let e = check(&bad, &nets()).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert!(!format!("{:?}", report()).contains("Abcdefgh"), "the password is never in a log line");
    }
}
