//! The sequences behind each power action on a connected BMC: retries of transient failures
//! with a doubling backoff, the state read back until it is the one asked for, graceful off
//! before forced off, and off + on where a restart the BMC advertises fails.

use std::time::Duration;

use tokio::time::Instant;

use crate::driver::{Driver, Op};
use crate::model::{PowerAction, PowerState};
use crate::redfish::BootOverride;
use crate::BmcError;

/// How hard to try.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub retries: u32,
    pub backoff: Duration,
    pub poll: Duration,
    pub soft_off: Duration,
    /// When the whole action must be over.
    pub deadline: Instant,
}

/// What an action did.
#[derive(Debug, Clone, Default)]
pub struct Done {
    pub state: Option<PowerState>,
    /// Requests sent (retries included).
    pub attempts: u32,
    /// Why the direct way was left for another (e.g. "ForceRestart failed: ...").
    pub fallback: Option<String>,
    pub boot: Option<BootOverride>,
}

/// Runs `action` on `d`.
pub async fn perform(d: &Driver, action: PowerAction, uefi: bool, p: &Pace) -> Result<Done, BmcError> {
    let mut done = Done::default();
    let state = match action {
        PowerAction::Status => retry(p, &mut done, || d.power_state()).await?,
        PowerAction::On => on(d, p, &mut done).await?,
        PowerAction::Off => off(d, p, &mut done).await?,
        PowerAction::Cycle => cycle(d, p, &mut done).await?,
        PowerAction::PxeOnce => {
            retry(p, &mut done, || d.pxe_once(uefi)).await?;
            if let Some(b) = retry(p, &mut done, || d.boot_override()).await? {
                check_boot(&b, uefi)?;
                done.boot = Some(b);
            }
            retry(p, &mut done, || d.power_state()).await?
        }
    };
    done.state = Some(state);
    Ok(done)
}

/// The override read back must be a network boot (BMCs that cannot do "Once" may keep it
/// "Continuous": rackboot's boot script then decides each boot) in the mode asked for.
pub fn check_boot(b: &BootOverride, uefi: bool) -> Result<(), BmcError> {
    let want_mode = if uefi { "UEFI" } else { "Legacy" };
    let target_ok = b.target.as_deref() == Some("Pxe");
    let enabled_ok = matches!(b.enabled.as_deref(), Some("Once" | "Continuous"));
    let mode_ok = b.mode.as_deref().is_none_or(|m| m == want_mode);
    if target_ok && enabled_ok && mode_ok {
        Ok(())
    } else {
        Err(BmcError::Verify(format!(
            "boot override read back as target {:?}, enabled {:?}, mode {:?} (asked Pxe, Once, {want_mode})",
            b.target, b.enabled, b.mode
        )))
    }
}

async fn on(d: &Driver, p: &Pace, done: &mut Done) -> Result<PowerState, BmcError> {
    if retry(p, done, || d.power_state()).await? == PowerState::On {
        return Ok(PowerState::On);
    }
    retry(p, done, || d.run(Op::On)).await?;
    wait_for(d, PowerState::On, p.deadline, p, done).await
}

async fn off(d: &Driver, p: &Pace, done: &mut Done) -> Result<PowerState, BmcError> {
    if retry(p, done, || d.power_state()).await? == PowerState::Off {
        return Ok(PowerState::Off);
    }
    if d.offers(Op::SoftOff) {
        match retry(p, done, || d.run(Op::SoftOff)).await {
            Ok(()) => {
                let soft_until = (Instant::now() + p.soft_off).min(p.deadline);
                match wait_for(d, PowerState::Off, soft_until, p, done).await {
                    Ok(s) => return Ok(s),
                    Err(BmcError::Verify(_)) => done.fallback = Some("graceful shutdown timed out: forced off".into()),
                    Err(e) => return Err(e),
                }
            }
            Err(e @ BmcError::Auth(_)) => return Err(e),
            Err(e) => done.fallback = Some(format!("graceful shutdown failed ({e}): forced off")),
        }
    }
    retry(p, done, || d.run(Op::ForceOff)).await?;
    wait_for(d, PowerState::Off, p.deadline, p, done).await
}

async fn cycle(d: &Driver, p: &Pace, done: &mut Done) -> Result<PowerState, BmcError> {
    if retry(p, done, || d.power_state()).await? == PowerState::Off {
        return on(d, p, done).await;
    }
    if d.offers(Op::Restart) {
        match retry(p, done, || d.run(Op::Restart)).await {
            Ok(()) => return wait_for(d, PowerState::On, p.deadline, p, done).await,
            Err(e @ BmcError::Auth(_)) => return Err(e),
            Err(e) => done.fallback = Some(format!("restart failed ({e}): off + on")),
        }
    } else {
        done.fallback = Some("the BMC offers no restart: off + on".into());
    }
    retry(p, done, || d.run(Op::ForceOff)).await?;
    wait_for(d, PowerState::Off, p.deadline, p, done).await?;
    retry(p, done, || d.run(Op::On)).await?;
    wait_for(d, PowerState::On, p.deadline, p, done).await
}

/// Reads the state every `p.poll` until it is `want` or `until` passes (a failed read on the
/// way is not the end: the BMC may be busy switching).
async fn wait_for(
    d: &Driver,
    want: PowerState,
    until: Instant,
    p: &Pace,
    done: &mut Done,
) -> Result<PowerState, BmcError> {
    loop {
        done.attempts += 1;
        let last = match d.power_state().await {
            Ok(s) if s == want => return Ok(s),
            Err(e @ (BmcError::Auth(_) | BmcError::Tls(_))) => return Err(e),
            other => other,
        };
        if Instant::now() + p.poll > until {
            let seen = match &last {
                Ok(s) => format!("{s:?}"),
                Err(e) => format!("unreadable ({e})"),
            };
            return Err(BmcError::Verify(format!("power state still {seen}, not {want:?}")));
        }
        tokio::time::sleep(p.poll).await;
    }
}

/// Runs `f`, again after a doubling backoff while it fails transiently, `p.retries` times at
/// most and never past the deadline.
async fn retry<T, F, Fut>(p: &Pace, done: &mut Done, mut f: F) -> Result<T, BmcError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, BmcError>>,
{
    let mut wait = p.backoff;
    let mut tries = 0;
    loop {
        done.attempts += 1;
        match f().await {
            Err(e) if e.transient() && tries < p.retries && Instant::now() + wait < p.deadline => {
                tracing::debug!(error = %e, ?wait, "bmc request failed; retrying");
                tokio::time::sleep(wait).await;
                wait = wait.saturating_mul(2);
                tries += 1;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_override_must_read_back_as_pxe_in_the_mode_asked() {
        let b = |t: &str, e: &str, m: Option<&str>| BootOverride {
            target: Some(t.into()),
            enabled: Some(e.into()),
            mode: m.map(str::to_string),
        };
        assert!(check_boot(&b("Pxe", "Once", Some("UEFI")), true).is_ok());
        assert!(check_boot(&b("Pxe", "Continuous", Some("Legacy")), false).is_ok(), "libvirt keeps Continuous");
        assert!(check_boot(&b("Pxe", "Once", None), true).is_ok(), "a BMC without modes");
        assert!(matches!(check_boot(&b("Pxe", "Once", Some("Legacy")), true), Err(BmcError::Verify(_))));
        assert!(matches!(check_boot(&b("Hdd", "Once", Some("UEFI")), true), Err(BmcError::Verify(_))));
        assert!(matches!(check_boot(&b("Pxe", "Disabled", Some("UEFI")), true), Err(BmcError::Verify(_))));
    }
}
