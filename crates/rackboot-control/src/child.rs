//! Helper daemons from Debian that rackboot runs itself (smbd for the Windows share, squid for
//! the package proxy, iperf3 for commissioning): started with a config rackboot wrote, restarted
//! when they exit, their output in rackboot's log, stopped with it. Each runs in its own process
//! group, with an empty environment but for `PATH`: nothing of rackboot's reaches it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// A daemon to run in the foreground.
#[derive(Debug, Clone)]
pub struct Program {
    /// Its name in the log (`rackboot::<name>`).
    pub name: &'static str,
    pub path: PathBuf,
    pub args: Vec<OsString>,
}

impl Program {
    pub fn new(
        name: &'static str,
        path: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        Program { name, path: path.into(), args: args.into_iter().map(Into::into).collect() }
    }
}

/// Stops a daemon of ours that a previous run left behind (rackboot killed with no chance to stop
/// it): it would hold its port with the old config. Only the process in `pidfile` whose command
/// line names `conf` is touched, with its process group.
pub fn stop_stale(pidfile: &Path, conf: &Path) {
    let Some(pid) = std::fs::read_to_string(pidfile).ok().and_then(|t| t.trim().parse::<i32>().ok()) else {
        return;
    };
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let ours = cmdline.split(|b| *b == 0).any(|arg| arg == conf.as_os_str().as_encoded_bytes());
    if pid > 1 && ours {
        tracing::warn!(pid, pidfile = %pidfile.display(), "stopping a daemon a previous run left behind");
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        for _ in 0..50 {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A helper that drops to a user of its own (smbd's guests as `nobody`, squid as `proxy`) must
/// get through every directory above `path`: refused, saying which, when one lets others not pass.
pub fn reachable_by_others(path: &Path, who: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for dir in path.ancestors() {
        let Ok(meta) = std::fs::metadata(dir) else { continue };
        anyhow::ensure!(
            meta.permissions().mode() & 0o001 != 0,
            "{who} cannot reach {}: {} is mode {:o} (chmod o+x {})",
            path.display(),
            dir.display(),
            meta.permissions().mode() & 0o7777,
            dir.display()
        );
    }
    Ok(())
}

/// Runs `program` until `shutdown`, restarting it when it exits (1 s, doubling to 30 s while it
/// keeps failing within a minute). A failure to start it is retried like an exit: a helper must
/// not take DHCP, TFTP and HTTP down with it.
pub async fn supervise(program: Program, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut backoff = Duration::from_secs(1);
    loop {
        let started = Instant::now();
        let status = run_once(&program, &shutdown).await;
        if shutdown.is_cancelled() {
            return Ok(());
        }
        backoff = if started.elapsed() > Duration::from_secs(60) { Duration::from_secs(1) } else { backoff };
        let name = program.name;
        match status {
            Ok(status) => tracing::warn!(name, ?status, retry_in = ?backoff, "helper exited; restarting it"),
            Err(error) => tracing::warn!(name, %error, retry_in = ?backoff, "helper could not be run; trying again"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

async fn run_once(program: &Program, shutdown: &CancellationToken) -> anyhow::Result<Option<std::process::ExitStatus>> {
    let mut child = Command::new(&program.path)
        .args(&program.args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // Its own process group: its children are stopped with it.
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", program.path.display()))?;
    let pid = child.id();
    tracing::info!(name = program.name, ?pid, "helper started");
    let outputs = [
        child.stdout.take().map(|o| Box::new(o) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        child.stderr.take().map(|o| Box::new(o) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
    ];
    for out in outputs.into_iter().flatten() {
        tokio::spawn(log_lines(program.name, out));
    }
    tokio::select! {
        status = child.wait() => Ok(Some(status?)),
        _ = shutdown.cancelled() => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                let group = nix::unistd::Pid::from_raw(pid);
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
                if tokio::time::timeout(Duration::from_secs(5), child.wait()).await.is_err() {
                    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                }
            }
            let _ = child.wait().await;
            Ok(None)
        }
    }
}

/// The helper's output, a line at a time (at most 512 characters each), into the log.
async fn log_lines(name: &'static str, out: Box<dyn tokio::io::AsyncRead + Unpin + Send>) {
    let (mut reader, mut buf) = (BufReader::new(out), Vec::new());
    // Bytes, not lines of text: one line that is not UTF-8 must not end the logging.
    while reader.read_until(b'\n', &mut buf).await.is_ok_and(|n| n > 0) {
        let line: String = String::from_utf8_lossy(&buf).trim().chars().take(512).collect();
        if !line.is_empty() {
            tracing::info!(target: "rackboot::helper", name, "{line}");
        }
        buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_helper_that_exits_is_restarted_and_shutdown_stops_it() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("count");
        let script = format!("echo x >> {}; sleep 0.2", count.display());
        let token = CancellationToken::new();
        let task = tokio::spawn(supervise(Program::new("test", "/bin/sh", ["-c", script.as_str()]), token.clone()));
        // Started, exited after 0.2 s, restarted after 1 s.
        tokio::time::sleep(Duration::from_millis(1600)).await;
        token.cancel();
        tokio::time::timeout(Duration::from_secs(6), task).await.unwrap().unwrap().unwrap();
        let runs = std::fs::read_to_string(&count).unwrap().lines().count();
        assert_eq!(runs, 2, "runs: {runs}");
    }

    #[tokio::test]
    async fn shutdown_stops_a_running_helper_and_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
        let token = CancellationToken::new();
        let task = tokio::spawn(supervise(Program::new("test", "/bin/sh", ["-c", script.as_str()]), token.clone()));
        let mut pid = None;
        for _ in 0..100 {
            pid = std::fs::read_to_string(&pidfile).ok().and_then(|t| t.trim().parse::<u32>().ok());
            if pid.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pid = pid.expect("the helper started its child");
        token.cancel();
        tokio::time::timeout(Duration::from_secs(6), task).await.unwrap().unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z "), "the helper's child still runs: {state}");
    }
}
