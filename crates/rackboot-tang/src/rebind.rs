//! Bindings and rotation: a machine's encrypted volumes are recorded as bound to the advertised
//! key when its layout is handed to its agent; a rotation makes a new key the advertised one
//! and queues a re-bind job on every bound machine (Clevis binds each volume to the new key
//! with the old binding's key, then drops the old binding); a sweep records each job's end and
//! deletes an older key once no machine is bound to it.

use std::sync::Arc;
use std::time::Duration;

use rackboot_agent::wire::Action;
use rackboot_model::tang::{TangBinding, TangKey};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{Tang, TangError};
use crate::cmdb::{now_secs, EventKind, MachineState};
use crate::jobs::{JobState, NewJob};

/// How often the sweep looks at re-bind jobs.
const SWEEP: Duration = Duration::from_secs(5);
/// A re-bind job's time limit (Clevis's exchange with the appliance, per volume).
const REBIND_TIMEOUT_SECS: u64 = 300;

/// The re-bind script (run by the installed system's agent, with the volumes as arguments and
/// the new advertisement in `RACKBOOT_TANG_ADV`): each volume gets a Clevis binding to the
/// new key, unlocked through its current binding (the key never leaves the pipe), and then
/// its older Tang bindings are removed. A retry after a partial run ends the same way.
const REBIND: &str = r#"set -eu
cfg=$(printf '{"url":"%s","adv":%s}' "$RACKBOOT_TANG_URL" "$RACKBOOT_TANG_ADV")
for dev in "$@"; do
  old=$(clevis luks list -d "$dev" | sed -n 's/^\([0-9]*\): tang .*/\1/p')
  [ -n "$old" ] || { echo "rebind: $dev has no tang binding" >&2; exit 1; }
  bound=""
  for s in $old; do
    if clevis luks pass -d "$dev" -s "$s" | clevis luks bind -y -d "$dev" -k - tang "$cfg"; then bound=$s; break; fi
  done
  [ -n "$bound" ] || { echo "rebind: no tang binding of $dev unlocks it now" >&2; exit 1; }
  for s in $old; do clevis luks unbind -f -d "$dev" -s "$s"; done
  echo "rebind: $dev is bound to the new key (older tang slots $(echo $old) removed)"
done
"#;

impl Tang {
    /// Records `machine`'s `volumes` as bound to the advertised key (made first if there is
    /// none), with a `disk.bound` event (not again while nothing changed); answers what the layout binds them with: the URL and
    /// the advertisement.
    pub async fn bind(&self, machine: u64, run: u64, volumes: Vec<String>) -> Result<(String, String), TangError> {
        let (key, adv) = self.advertised().await?;
        let known = self.cmdb.tang_bindings().await?.into_iter().find(|b| b.machine == machine);
        if known.is_some_and(|b| b.key == key && b.volumes == volumes && b.rebind_job.is_none()) {
            return Ok((self.url.clone(), adv));
        }
        let detail = json!({"key": key, "volumes": volumes, "run": run});
        let binding = TangBinding {
            machine,
            key,
            volumes,
            bound_at: now_secs(),
            rebind_job: None,
            rebind_to: None,
            rebind_error: None,
        };
        self.cmdb.put_tang_binding(binding, Some((machine, EventKind::DiskBound, detail))).await?;
        Ok((self.url.clone(), adv))
    }

    /// Makes a new key the advertised one and queues a re-bind job on every installed machine
    /// bound to an older one: the new key, and (machine, job id) for each job queued.
    pub async fn rotate(&self, cfg: &crate::config::AgentConfig) -> Result<(TangKey, Vec<(u64, u64)>), TangError> {
        let key = self.add_key(true).await?.ok_or_else(|| TangError::Keys("no key was made".into()))?;
        let (_, adv) = self.advertised().await?;
        let mut queued = Vec::new();
        for mut b in self.cmdb.tang_bindings().await? {
            if b.key == key.id || b.volumes.is_empty() {
                continue;
            }
            // Only an installed system has Clevis to re-bind with; a machine being provisioned
            // (or released) stays on the older key, which is kept, until a later rotation.
            let state = self.cmdb.machine(b.machine).await.ok().map(|m| m.state);
            if state != Some(MachineState::Installed) {
                b.rebind_error =
                    Some(format!("not re-bound: the machine is {:?}, not installed", state).to_lowercase());
                self.cmdb.put_tang_binding(b, None).await?;
                continue;
            }
            let env = [("RACKBOOT_TANG_URL", self.url.as_str()), ("RACKBOOT_TANG_ADV", adv.as_str())];
            let action = Action::Script {
                interpreter: "/bin/sh".into(),
                body: REBIND.into(),
                args: b.volumes.clone(),
                env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            };
            let new = NewJob { action, timeout_secs: REBIND_TIMEOUT_SECS, max_attempts: cfg.max_attempts.max(1) };
            let job = self.cmdb.submit_jobs(vec![b.machine], new).await?;
            let Some(job) = job.first() else { continue };
            (b.rebind_job, b.rebind_to, b.rebind_error) = (Some(job.id), Some(key.id), None);
            self.cmdb.put_tang_binding(b.clone(), None).await?;
            queued.push((b.machine, job.id));
        }
        info!(key = key.id, rebinds = queued.len(), "tang key rotated");
        Ok((key, queued))
    }

    /// Records the end of each re-bind job, then deletes every older key no machine is bound
    /// to any more.
    pub async fn sweep(&self) -> Result<(), TangError> {
        let bindings = self.cmdb.tang_bindings().await?;
        for mut b in bindings.iter().cloned() {
            // A machine that is gone, or back in the pool (released, commissioned), keeps no
            // key alive: what was on its disks stays locked for good once the key goes.
            let state = match self.cmdb.machine(b.machine).await {
                Ok(m) => Some(m.state),
                Err(crate::cmdb::CmdbError::NotFound(_)) => None,
                Err(e) => return Err(e.into()),
            };
            if matches!(state, None | Some(MachineState::Ready | MachineState::Discovered)) {
                let state = state.map_or("gone".to_string(), |s| format!("{s:?}").to_lowercase());
                info!(machine = b.machine, key = b.key, %state, "tang binding forgotten");
                let event = (b.machine, EventKind::DiskForgotten, json!({"key": b.key, "state": state}));
                self.cmdb.delete_tang_binding(b.machine, Some(event)).await?;
                continue;
            }
            let (Some(jid), Some(to)) = (b.rebind_job, b.rebind_to) else { continue };
            let job = match self.cmdb.job(jid).await {
                Ok(j) => j,
                Err(crate::cmdb::CmdbError::NotFound(_)) => {
                    (b.rebind_job, b.rebind_to) = (None, None);
                    b.rebind_error = Some(format!("re-bind job {jid} is gone"));
                    self.cmdb.put_tang_binding(b, None).await?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let event = match job.state {
                JobState::Queued | JobState::Running => continue,
                JobState::Succeeded => {
                    let detail = json!({"from_key": b.key, "to_key": to, "job": jid});
                    (b.key, b.bound_at, b.rebind_error) = (to, now_secs(), None);
                    (b.machine, EventKind::DiskRebound, detail)
                }
                other => {
                    let error = job.error.clone().unwrap_or_else(|| format!("the job ended {other:?}").to_lowercase());
                    warn!(machine = b.machine, job = jid, %error, "tang re-bind failed: the older key is kept");
                    b.rebind_error = Some(error.clone());
                    (b.machine, EventKind::DiskRebindFailed, json!({"key": b.key, "job": jid, "error": error}))
                }
            };
            (b.rebind_job, b.rebind_to) = (None, None);
            self.cmdb.put_tang_binding(b, Some(event)).await?;
        }
        let bindings = self.cmdb.tang_bindings().await?;
        for key in self.cmdb.tang_keys().await? {
            if !key.active && !bindings.iter().any(|b| b.key == key.id || b.rebind_to == Some(key.id)) {
                self.cmdb.delete_tang_key(key.id).await?;
                info!(key = key.id, "tang key deleted: no machine is bound to it any more");
            }
        }
        self.keys(true).await?;
        Ok(())
    }

    /// The sweep, every few seconds, until `stop`.
    pub async fn serve(self: Arc<Self>, stop: CancellationToken) -> anyhow::Result<()> {
        rackboot_base::periodic::every(SWEEP, stop, || async {
            if let Err(error) = self.sweep().await {
                warn!(%error, "tang sweep failed");
            }
        })
        .await
    }
}
