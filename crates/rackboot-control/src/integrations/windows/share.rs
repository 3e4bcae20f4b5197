//! The read-only SMB share of the imported media, `\\<address>\rackboot`: Debian's `smbd` with a
//! config rackboot writes (its own state directories, nothing of the host's Samba touched),
//! bound to the provisioning address only, started and restarted by rackboot and stopped with
//! it. Guest access, read-only: install media holds no secret, and WinPE maps it with no
//! account; the answer files on it must hold none either (see `templates/windows/unattend.xml`).

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use anyhow::Context;

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
    crate::child::stop_stale(&spec.state.join("run").join("smbd.pid"), &conf);
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

/// Checks `[windows]` and writes smbd's config for it: smbd, to be run by [`crate::child::supervise`].
pub fn start(cfg: &crate::config::Config, address: Option<Ipv4Addr>) -> anyhow::Result<crate::child::Program> {
    let address =
        address.context("windows.share needs the provisioning address (server.address or server.interface)")?;
    let smbd = cfg.windows.smbd.clone();
    anyhow::ensure!(smbd.is_file(), "windows.share: {} not found (apt-get install samba)", smbd.display());
    let spec = spec(cfg, address);
    let conf = prepare(&spec)?;
    crate::child::reachable_by_others(&spec.path, "windows.share: guests (smbd's `nobody`)")?;
    let mut args: Vec<std::ffi::OsString> =
        ["--foreground", "--no-process-group", "--debug-stdout", "-s"].map(Into::into).into();
    args.push(conf.into());
    Ok(crate::child::Program::new("smbd", smbd, args))
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
