//! The read-only SMB share of the imported media, `\\<address>\rackboot`: Debian's `smbd` with a
//! config rackboot writes (its own state directories, nothing of the host's Samba touched),
//! bound to the provisioning address only, started and restarted by rackboot and stopped with
//! it. Guest access, read-only: install media holds no secret, and WinPE maps it with no
//! account; the answer files on it must hold none either (see `templates/windows/unattend.xml`).

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::config::Ipv4Net;

/// The share's name.
pub const NAME: &str = "rackboot";
/// The state directories smbd is given under `<data_dir>/smb`.
const DIRS: [&str; 6] = ["lock", "state", "cache", "private", "run", "ncalrpc"];

/// Where the share is and who may reach it.
#[derive(Debug, Clone)]
pub struct ShareSpec {
    /// The shared directory (`<tftp root>/windows`).
    pub path: PathBuf,
    /// The only address smbd listens on.
    pub address: Ipv4Addr,
    /// The networks allowed in (the DHCP subnets); empty: anyone who reaches the address.
    pub allow: Vec<Ipv4Net>,
    /// smbd's own directories and config: `<data_dir>/smb`.
    pub state: PathBuf,
}

/// smbd's config for `spec`.
pub fn config(spec: &ShareSpec) -> String {
    let dir = |d: &str| spec.state.join(d).display().to_string();
    let mut c = String::from("# Written by rackboot at each start; edits are lost.\n[global]\n");
    let mut set = |k: &str, v: &str| {
        let _ = writeln!(c, "  {k} = {v}");
    };
    set("server role", "standalone server");
    set("interfaces", &spec.address.to_string());
    set("bind interfaces only", "yes");
    set("smb ports", "445");
    set("disable netbios", "yes");
    set("server min protocol", "SMB2_10");
    set("map to guest", "Bad User");
    set("guest account", "nobody");
    set("load printers", "no");
    set("printcap name", "/dev/null");
    set("disable spoolss", "yes");
    set("wide links", "no");
    set("unix extensions", "no");
    set("logging", "stdout");
    let allow: Vec<String> = spec.allow.iter().map(|n| n.to_string()).chain(["127.0.0.1".into()]).collect();
    if !spec.allow.is_empty() {
        set("hosts allow", &allow.join(" "));
        set("hosts deny", "0.0.0.0/0");
    }
    for (key, d) in [
        ("lock directory", "lock"),
        ("state directory", "state"),
        ("cache directory", "cache"),
        ("private dir", "private"),
        ("pid directory", "run"),
        ("ncalrpc dir", "ncalrpc"),
    ] {
        set(key, &dir(d));
    }
    let _ = write!(
        c,
        "[{NAME}]\n  path = {}\n  read only = yes\n  guest ok = yes\n  guest only = yes\n  browseable = yes\n",
        spec.path.display()
    );
    c
}

/// Writes the config and smbd's directories; returns the config's path.
pub fn prepare(spec: &ShareSpec) -> anyhow::Result<PathBuf> {
    for d in DIRS {
        std::fs::create_dir_all(spec.state.join(d))
            .with_context(|| format!("creating {}", spec.state.join(d).display()))?;
    }
    std::fs::create_dir_all(&spec.path).with_context(|| format!("creating {}", spec.path.display()))?;
    let conf = spec.state.join("smb.conf");
    stop_stale(&spec.state.join("run"), &conf);
    std::fs::write(&conf, config(spec)).with_context(|| format!("writing {}", conf.display()))?;
    Ok(conf)
}

/// The share of `cfg` on `address`.
pub fn spec(cfg: &crate::config::Config, address: Ipv4Addr) -> ShareSpec {
    ShareSpec {
        path: cfg.tftp.root.join(super::DIR),
        address,
        allow: cfg.dhcp.subnets.iter().map(|s| s.net).collect(),
        state: cfg.data_dir.join("smb"),
    }
}

/// Checks `[windows]` and writes smbd's config for it: the smbd binary and the config's path.
pub fn start(cfg: &crate::config::Config, address: Option<Ipv4Addr>) -> anyhow::Result<(PathBuf, PathBuf)> {
    let address =
        address.context("windows.share needs the provisioning address (server.address or server.interface)")?;
    let smbd = cfg.windows.smbd.clone();
    anyhow::ensure!(smbd.is_file(), "windows.share: {} not found (apt-get install samba)", smbd.display());
    let spec = spec(cfg, address);
    let conf = prepare(&spec)?;
    reachable_by_guests(&spec.path)?;
    Ok((smbd, conf))
}

/// smbd serves guests as `nobody`: every directory above the share must let others through.
fn reachable_by_guests(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for dir in path.ancestors() {
        let Ok(meta) = std::fs::metadata(dir) else { continue };
        anyhow::ensure!(
            meta.permissions().mode() & 0o001 != 0,
            "windows.share: guests (smbd's `nobody`) cannot reach {}: {} is mode {:o} (chmod o+x {})",
            path.display(),
            dir.display(),
            meta.permissions().mode() & 0o7777,
            dir.display()
        );
    }
    Ok(())
}

/// Stops an smbd of ours a previous run left behind (rackboot killed with no chance to stop it):
/// it would hold port 445 with the old config. Only a process whose command line names our
/// config is touched.
fn stop_stale(run: &Path, conf: &Path) {
    let Ok(dir) = std::fs::read_dir(run) else { return };
    for pidfile in dir.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "pid")) {
        let Some(pid) = std::fs::read_to_string(&pidfile).ok().and_then(|t| t.trim().parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let ours = cmdline.split(|b| *b == 0).any(|arg| arg == conf.as_os_str().as_encoded_bytes());
        if pid > 1 && ours {
            tracing::warn!(pid, "stopping the smbd a previous run left behind");
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Runs smbd until `shutdown`, restarting it when it exits (1 s, doubling to 30 s while it keeps
/// failing within a minute). Its output goes to the log.
pub async fn supervise(smbd: PathBuf, conf: PathBuf, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut backoff = Duration::from_secs(1);
    loop {
        let started = Instant::now();
        // A failure to start or watch smbd is retried like an exit: the share must not take
        // DHCP, TFTP and HTTP down with it.
        let status = run_once(&smbd, &conf, &shutdown).await;
        if shutdown.is_cancelled() {
            return Ok(());
        }
        backoff = if started.elapsed() > Duration::from_secs(60) { Duration::from_secs(1) } else { backoff };
        match status {
            Ok(status) => tracing::warn!(?status, retry_in = ?backoff, "smbd exited; restarting it"),
            Err(error) => tracing::warn!(%error, retry_in = ?backoff, "smbd could not be run; trying again"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

async fn run_once(
    smbd: &Path,
    conf: &Path,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<std::process::ExitStatus>> {
    let mut child = Command::new(smbd)
        .args(["--foreground", "--no-process-group", "--debug-stdout", "-s"])
        .arg(conf)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // Its own process group: the per-connection children are stopped with it.
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", smbd.display()))?;
    let pid = child.id();
    tracing::info!(?pid, "smbd started (share \\\\{NAME})");
    for out in [
        child.stdout.take().map(|o| Box::new(o) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        child.stderr.take().map(|o| Box::new(o) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
    ]
    .into_iter()
    .flatten()
    {
        tokio::spawn(async move {
            let (mut reader, mut buf) = (BufReader::new(out), Vec::new());
            // Bytes, not lines of text: one line that is not UTF-8 must not end the logging.
            while reader.read_until(b'\n', &mut buf).await.is_ok_and(|n| n > 0) {
                let line: String = String::from_utf8_lossy(&buf).trim().chars().take(512).collect();
                if !line.is_empty() {
                    tracing::info!(target: "rackboot::smbd", "{line}");
                }
                buf.clear();
            }
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_read_only_bound_to_one_address_and_keeps_to_its_own_directories() {
        let spec = ShareSpec {
            path: "/var/lib/rackboot/boot/windows".into(),
            address: "198.18.0.1".parse().unwrap(),
            allow: vec!["198.18.0.0/24".parse().unwrap()],
            state: "/var/lib/rackboot/smb".into(),
        };
        let c = config(&spec);
        for want in [
            "interfaces = 198.18.0.1",
            "bind interfaces only = yes",
            "hosts allow = 198.18.0.0/24 127.0.0.1",
            "private dir = /var/lib/rackboot/smb/private",
            "[rackboot]\n  path = /var/lib/rackboot/boot/windows\n  read only = yes",
        ] {
            assert!(c.contains(want), "{want:?} in\n{c}");
        }
        assert!(!c.contains("/etc/samba") && !c.contains("writ"), "{c}");
    }
}
