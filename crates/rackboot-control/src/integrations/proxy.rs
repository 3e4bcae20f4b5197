//! The package proxy for installing nodes: Debian's `squid` with a config rackboot writes at each
//! start (its own cache, log and pid file under `<data_dir>/proxy`; the host's squid untouched),
//! bound to the provisioning address, answering the DHCP subnets only, fetching from the
//! configured upstream hosts only (plain HTTP on port 80, or a CONNECT tunnel to their port 443),
//! run by [`crate::child::supervise`]. Installers reach their mirror through it
//! (`provision.installer_proxy` defaults to it), so a provisioning network needs no route out
//! and a rack's second install of a release comes from the cache.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::{Ipv4Net, ProxyConfig};

/// The access log is set aside (one old copy kept) at start once it is this large.
const LOG_KEEP: u64 = 64 << 20;

/// What the proxy serves and where it keeps its state.
#[derive(Debug, Clone)]
pub struct ProxySpec {
    pub address: Ipv4Addr,
    pub port: u16,
    /// The networks allowed in (the DHCP subnets); empty: the provisioning address's /24.
    pub allow: Vec<Ipv4Net>,
    pub cfg: ProxyConfig,
    /// `<data_dir>/proxy`: config, pid file, access log, `cache/`.
    pub state: PathBuf,
    /// The user squid drops to when started as root (`cache_effective_user`).
    pub user: Option<String>,
}

/// The URL installers are pointed at.
pub fn url(address: Ipv4Addr, port: u16) -> String {
    format!("http://{address}:{port}/")
}

/// squid's config for `spec`.
pub fn config(spec: &ProxySpec) -> String {
    let state = |f: &str| spec.state.join(f).display().to_string();
    let mut c = String::from("# Written by rackboot at each start; edits are lost.\n");
    let mut line = |l: &str| {
        c.push_str(l);
        c.push('\n');
    };
    line(&format!("http_port {}:{}", spec.address, spec.port));
    line(&format!("pid_filename {}", state("squid.pid")));
    if let Some(user) = &spec.user {
        line(&format!("cache_effective_user {user}"));
    }
    line("visible_hostname rackboot");
    let allow: Vec<String> = if spec.allow.is_empty() {
        vec![format!("{}/24", spec.address)]
    } else {
        spec.allow.iter().map(|n| n.to_string()).collect()
    };
    line(&format!("acl provisioning src {}", allow.join(" ")));
    // -n: URLs naming an address are matched as written, never by a reverse lookup.
    line(&format!("acl upstream dstdomain -n {}", spec.cfg.upstream_hosts.join(" ")));
    line("acl http_port port 80");
    line("acl tls_port port 443");
    line("acl CONNECT method CONNECT");
    line("http_access deny CONNECT !tls_port");
    line("http_access deny !CONNECT !http_port");
    line("http_access allow provisioning upstream");
    line("http_access deny all");
    line("icp_port 0");
    line("htcp_port 0");
    if let Some((host, port)) = &spec.cfg.parent {
        line(&format!("cache_peer {host} parent {port} 0 no-query no-digest default"));
        line("never_direct allow all");
    }
    line(&format!("cache_dir ufs {} {} 16 256", state("cache"), spec.cfg.cache_mb));
    line(&format!("maximum_object_size {} MB", spec.cfg.max_object_mb));
    line("cache_mem 64 MB");
    // Indexes change in place: checked at every use after an hour. Packages never change under
    // their name: kept as long as the cache has room.
    line(
        r"refresh_pattern -i (/|Release|Release\.gpg|InRelease|Packages|Sources|Contents-[a-z0-9]+|Index|SHA256SUMS|repomd\.xml)(\.(gz|xz|bz2|zst))?$ 0 20% 60 refresh-ims",
    );
    line(r"refresh_pattern -i \.(deb|udeb|rpm|drpm|snap|squashfs|iso|img)$ 129600 100% 129600");
    line("refresh_pattern . 0 20% 4320");
    line(&format!("access_log stdio:{}", state("access.log")));
    // Its own messages go to standard error (`-d 1`), into rackboot's log.
    line("cache_log /dev/null");
    line("cache_store_log none");
    line("logfile_rotate 0");
    line(&format!("coredump_dir {}", spec.state.display()));
    // The upstream mirror learns nothing of the nodes behind the proxy.
    line("forwarded_for delete");
    line("via off");
    line("shutdown_lifetime 1 seconds");
    c
}

/// The proxy of `cfg` on `address`.
pub fn spec(cfg: &crate::config::Config, address: Ipv4Addr) -> ProxySpec {
    let root = nix::unistd::geteuid().is_root();
    let user =
        root.then(|| nix::unistd::User::from_name("proxy").ok().flatten().map(|_| "proxy".to_string())).flatten();
    ProxySpec {
        address,
        port: cfg.proxy.port,
        allow: cfg.dhcp.subnets.iter().map(|s| s.net).collect(),
        cfg: cfg.proxy.clone(),
        state: cfg.data_dir.join("proxy"),
        user,
    }
}

/// Writes the config, the cache and log (owned by squid's user), stops a squid of ours a killed
/// run left behind, and makes the cache's directories (`squid -z`) the first time.
pub fn prepare(spec: &ProxySpec) -> anyhow::Result<PathBuf> {
    let cache = spec.state.join("cache");
    std::fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
    let conf = spec.state.join("squid.conf");
    crate::child::stop_stale(&spec.state.join("squid.pid"), &conf);
    let log = spec.state.join("access.log");
    if std::fs::metadata(&log).is_ok_and(|m| m.len() > LOG_KEEP) {
        std::fs::rename(&log, spec.state.join("access.log.1")).context("setting the proxy's access log aside")?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .with_context(|| format!("creating {}", log.display()))?;
    if let Some(user) = &spec.user {
        crate::child::reachable_by_others(&cache, &format!("proxy: squid (running as `{user}`)"))?;
        let u = nix::unistd::User::from_name(user)?.with_context(|| format!("no user {user}"))?;
        for p in [&cache, &log] {
            nix::unistd::chown(p.as_path(), Some(u.uid), Some(u.gid))
                .with_context(|| format!("chown {}", p.display()))?;
        }
    }
    std::fs::write(&conf, config(spec)).with_context(|| format!("writing {}", conf.display()))?;
    if !cache.join("00").is_dir() {
        init_cache(&spec.cfg.squid, &conf)?;
    }
    Ok(conf)
}

/// `squid -z`: the cache's directory tree.
fn init_cache(squid: &Path, conf: &Path) -> anyhow::Result<()> {
    let out = std::process::Command::new(squid)
        .args(["-z", "-N", "-f"])
        .arg(conf)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("running {} -z", squid.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{} -z failed: {}",
        squid.display(),
        String::from_utf8_lossy(&out.stderr).lines().rev().take(3).collect::<Vec<_>>().join(" / ")
    );
    Ok(())
}

/// Checks `[proxy]` and prepares squid for it: squid, to be run by [`crate::child::supervise`].
pub fn start(cfg: &crate::config::Config, address: Option<Ipv4Addr>) -> anyhow::Result<crate::child::Program> {
    let address =
        address.context("proxy.enable needs the provisioning address (server.address or server.interface)")?;
    let squid = cfg.proxy.squid.clone();
    anyhow::ensure!(squid.is_file(), "proxy: {} not found (apt-get install squid)", squid.display());
    let conf = prepare(&spec(cfg, address))?;
    let args: Vec<std::ffi::OsString> = vec!["-N".into(), "-d".into(), "1".into(), "-f".into(), conf.into()];
    Ok(crate::child::Program::new("squid", squid, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(parent: Option<(String, u16)>) -> ProxySpec {
        let mut cfg = crate::config::Config::parse("[proxy]\nupstream_hosts = [\"deb.debian.org\", \".ubuntu.com\"]")
            .unwrap()
            .proxy;
        cfg.parent = parent;
        ProxySpec {
            address: "198.18.0.1".parse().unwrap(),
            port: 3128,
            allow: vec!["198.18.0.0/24".parse().unwrap(), "198.18.1.0/24".parse().unwrap()],
            cfg,
            state: "/var/lib/rackboot/proxy".into(),
            user: Some("proxy".into()),
        }
    }

    #[test]
    fn the_proxy_listens_on_one_address_for_the_subnets_and_fetches_from_the_listed_hosts_only() {
        let c = config(&spec(None));
        for want in [
            "http_port 198.18.0.1:3128\n",
            "acl provisioning src 198.18.0.0/24 198.18.1.0/24\n",
            "acl upstream dstdomain -n deb.debian.org .ubuntu.com\n",
            "http_access deny CONNECT !tls_port\nhttp_access deny !CONNECT !http_port\nhttp_access allow provisioning upstream\nhttp_access deny all\n",
            "cache_dir ufs /var/lib/rackboot/proxy/cache 8192 16 256\n",
            "cache_effective_user proxy\n",
            "forwarded_for delete\n",
        ] {
            assert!(c.contains(want), "{want:?} in\n{c}");
        }
        assert!(!c.contains("/etc/squid") && !c.contains("never_direct"), "{c}");
        // The last word on access is a deny.
        let access: Vec<&str> = c.lines().filter(|l| l.starts_with("http_access")).collect();
        assert_eq!(access.last(), Some(&"http_access deny all"));
    }

    #[test]
    fn with_a_parent_every_fetch_goes_through_it() {
        let c = config(&spec(Some(("proxy.corp".into(), 8080))));
        assert!(
            c.contains("cache_peer proxy.corp parent 8080 0 no-query no-digest default\nnever_direct allow all\n"),
            "{c}"
        );
    }
}
