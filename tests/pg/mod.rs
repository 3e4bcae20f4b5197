//! A throwaway PostgreSQL cluster for tests (tests/pg/cluster.sh), stopped and removed when
//! dropped; `None` where PostgreSQL is not installed.

/// A running cluster on a Unix socket.
pub struct Cluster {
    dir: tempfile::TempDir,
    pub url: String,
}

impl Cluster {
    pub fn start() -> Option<Cluster> {
        let dir = tempfile::Builder::new().prefix("rackboot-pg").tempdir_in("/tmp").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = std::process::Command::new("tests/pg/cluster.sh").arg("start").arg(dir.path()).output().unwrap();
        match out.status.code() {
            Some(0) => {
                let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
                Some(Cluster { dir, url })
            }
            Some(3) => None,
            _ => panic!("starting PostgreSQL: {}", String::from_utf8_lossy(&out.stderr)),
        }
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
