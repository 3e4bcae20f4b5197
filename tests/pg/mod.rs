//! A throwaway PostgreSQL cluster for tests (tests/pg/cluster.sh), stopped and removed when
//! dropped; `None` where PostgreSQL is not installed.
#![allow(dead_code)] // each test crate uses part of it

/// A running cluster on a Unix socket.
pub struct Cluster {
    dir: tempfile::TempDir,
    pub url: String,
}

impl Cluster {
    pub fn start() -> Option<Cluster> {
        Self::start_with(&[])
    }

    /// A cluster on 127.0.0.1 that takes TLS connections only; its CA is [`Cluster::ca`].
    pub fn start_tls() -> Option<Cluster> {
        Self::start_with(&["--tls"])
    }

    /// The CA of a TLS cluster's server certificate.
    pub fn ca(&self) -> std::path::PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn start_with(args: &[&str]) -> Option<Cluster> {
        // The PID in the name tells tools/cleanup.sh whose cluster this is.
        let prefix = format!("rackboot-pg.{}.", std::process::id());
        let dir = tempfile::Builder::new().prefix(&prefix).tempdir_in("/tmp").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let out =
            std::process::Command::new("tests/pg/cluster.sh").arg("start").arg(dir.path()).args(args).output().unwrap();
        match out.status.code() {
            Some(0) => {
                let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
                Some(Cluster { dir, url })
            }
            Some(3) => None,
            _ => panic!("starting PostgreSQL: {}", String::from_utf8_lossy(&out.stderr)),
        }
    }

    /// Stops the server hard (`down`) or starts it again (`up`).
    pub fn set(&self, state: &str) {
        let ok = std::process::Command::new("tests/pg/cluster.sh").arg(state).arg(self.dir.path()).status().unwrap();
        assert!(ok.success(), "cluster.sh {state}");
    }

    /// A `[store]` table for an appliance on this cluster.
    pub fn store(&self) -> String {
        format!("\n[store]\nbackend = \"postgres\"\nurl = \"{}\"\n", self.url)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tests/pg/cluster.sh").arg("stop").arg(self.dir.path()).status();
    }
}
