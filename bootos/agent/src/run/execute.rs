//! One job, carried out: a script (with a heartbeat that keeps its lease and hears a cancel), an
//! image write, a plugin, an erase, or one of the agent's own actions.

use super::*;

impl Agent {
    pub(super) async fn execute(&mut self, spec: &JobSpec) -> JobResult {
        tracing::info!(job = spec.id, attempt = spec.attempt, "job started");
        // A heartbeat keeps the lease and is when a cancel is heard: a third of the lease, at
        // most 10 s apart.
        let lease = Duration::from_secs(self.session.as_ref().map_or(60, |s| s.lease_secs));
        let heartbeat = (lease / 3).clamp(Duration::from_secs(1), Duration::from_secs(10));
        let started = std::time::Instant::now();
        let done = |outcome, error: Option<String>| JobResult::ended(spec.attempt, started, outcome, error);
        match &spec.action {
            Action::Script { .. } => {
                let workdir = self.opts.workdir.clone();
                // Scripts may carry the agent on (the identity step writes the session into the
                // installed system): they get the appliance URL and a file (0600, removed after
                // the job) holding this session; the credential never goes into an environment.
                let session_file = match &self.session {
                    Some(s) => save_session(&workdir, s).ok().map(|()| workdir.join("session.json")),
                    None => None,
                };
                let mut extra = vec![("RACKBOOT_URL".to_string(), self.opts.url.clone())];
                if let Some(f) = &session_file {
                    extra.push(("RACKBOOT_SESSION_FILE".to_string(), f.display().to_string()));
                }
                let mut sink = Sink::new(&mut self.client, spec);
                let result = run_script(&mut sink, spec, heartbeat, &workdir, &extra).await;
                // The BootOS state dir may be the work dir: keep a session the agent relies on.
                if session_file.is_some() && self.opts.state_dir.as_deref() != Some(workdir.as_path()) {
                    let _ = std::fs::remove_file(workdir.join("session.json"));
                }
                result
            }
            Action::Plugin { .. } => {
                let workdir = self.opts.workdir.clone();
                let mut sink = Sink::new(&mut self.client, spec);
                crate::plugin::run(&mut sink, spec, heartbeat, &workdir).await
            }
            Action::DeployImage { url, sha256, disk } => {
                let mut sink = Sink::new(&mut self.client, spec);
                crate::deploy::deploy_image(&mut sink, spec, url, sha256, disk).await
            }
            Action::Erase { .. } if !self.opts.machine_actions => done(
                Outcome::Failed,
                Some("this agent does not act on its machine (a simulation): nothing was erased".into()),
            ),
            Action::Erase { .. } if self.opts.mode != AgentMode::Bootos => {
                done(Outcome::Failed, Some("only BootOS erases disks: an installed system runs from them".into()))
            }
            Action::Erase { disks, mode } => {
                let mut sink = Sink::new(&mut self.client, spec);
                crate::erase::erase(&mut sink, spec, disks, *mode).await
            }
            Action::RefreshInventory => match self.send_inventory().await {
                Ok(s) if (200..300).contains(&s) => done(Outcome::Succeeded, None),
                Ok(s) => done(Outcome::Error, Some(format!("inventory refused: HTTP {s}"))),
                Err(e) => done(Outcome::Error, Some(format!("{e:#}"))),
            },
            Action::Reboot { network, disk } if self.opts.machine_actions && (*network || disk.is_some()) => {
                let said = match disk {
                    Some(disk) if !*network => crate::bootdisk::disk_next(disk),
                    _ => crate::bootnext::network_next(&self.macs()),
                };
                let mut sink = Sink::new(&mut self.client, spec);
                sink.send(crate::wire::Stream::Stdout, format!("reboot: {said}\n")).await;
                done(Outcome::Succeeded, None)
            }
            Action::Reboot { .. } | Action::PowerOff => done(Outcome::Succeeded, None),
            Action::BmcAccount { .. } if !self.opts.machine_actions => done(
                Outcome::Failed,
                Some("this agent does not act on its machine (a simulation): no BMC account was touched".into()),
            ),
            Action::BmcAccount { username, channel } => {
                let (workdir, ipmitool) = (self.opts.workdir.clone(), self.opts.ipmitool.clone());
                let mut sink = Sink::new(&mut self.client, spec);
                let report = crate::bmcuser::set_up(&mut sink, &ipmitool, &workdir, username, *channel).await;
                let report = match report {
                    Ok(r) => r,
                    Err(e) => return done(Outcome::Failed, Some(e)),
                };
                // The password goes to the appliance on its own, never into the output.
                let path = format!("/agent/v1/jobs/{}/bmc-account", spec.id);
                match self.client.call(Method::POST, &path, Some(&report), Duration::from_secs(30)).await {
                    Ok(r) if r.ok() => done(Outcome::Succeeded, None),
                    Ok(r) => {
                        done(Outcome::Failed, Some(format!("the appliance refused the account: {}", r.error_text())))
                    }
                    Err(e) => done(Outcome::Error, Some(format!("the account was set up but not reported: {e:#}"))),
                }
            }
        }
    }
}
