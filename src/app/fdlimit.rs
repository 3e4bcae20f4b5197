//! File descriptors for the configured caps. Every HTTP connection (on two listeners) and every
//! TFTP transfer holds a descriptor, so a soft `RLIMIT_NOFILE` of 1024 (a login shell's, or a
//! service manager's default) would make `accept` and `socket` fail long before the caps the
//! operator set. At start-up the soft limit is raised to the hard one, as Go's runtime does; if
//! even that is short of what the caps need, the operator is told by how much.

use tracing::{info, warn};

use crate::config::Config;

/// Descriptors the caps can hold at once, plus room for the CMDB, listeners, logs and DNS.
pub fn needed(cfg: &Config) -> u64 {
    const BASE: u64 = 256;
    // The plain and the TLS listener each admit `max_connections`.
    let http = 2 * cfg.http_limits.max_connections as u64;
    // A transfer holds its socket and its file.
    let tftp = if cfg.tftp.enabled { 2 * cfg.tftp.max_transfers as u64 } else { 0 };
    BASE + http + tftp
}

/// Raises the soft limit to the hard limit; returns the limit now in force.
pub fn raise(cfg: &Config) -> Option<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    let limit = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() { hard } else { soft };
    let need = needed(cfg);
    if limit < need {
        warn!(
            limit,
            need,
            "the open-file limit (RLIMIT_NOFILE) is below what http.max_connections and \
             tftp.max_transfers can hold at once; raise it (LimitNOFILE= in the unit) or lower them"
        );
    } else if limit != soft {
        info!(from = soft, to = limit, "raised the open-file limit");
    }
    Some(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caps_are_counted_and_raising_never_lowers_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let toml = format!("[server]\ndata_dir = \"{}\"\naddress = \"127.0.0.1\"\n", dir.path().display());
        let cfg = crate::config::Config::parse(&toml).unwrap();
        let want = 256 + 2 * cfg.http_limits.max_connections as u64 + 2 * cfg.tftp.max_transfers as u64;
        assert_eq!(needed(&cfg), want);
        let (before, _) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
        let now = raise(&cfg).unwrap();
        assert!(now >= before);
    }
}
