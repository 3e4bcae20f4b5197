//! node-oidc-provider (an OpenID Certified provider) run by the tests: `tests/oidc/provider.mjs`
//! on HTTPS on loopback with a CA made here, one confidential client, and the accounts of a
//! JSON file a test rewrites to change a user's claims. Skips (None, "SKIPPED: ...") without
//! node or without `tests/oidc/node_modules` (tools/setup.sh runs `npm ci` there).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct OidcProvider {
    child: Child,
    dir: tempfile::TempDir,
    pub issuer: String,
    pub ca_pem: String,
    pub client_id: String,
    pub client_secret: String,
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl OidcProvider {
    /// Starts the provider for a client whose callback is `redirect_uri`, with `accounts`
    /// (`{"olivia": {"groups": ["rack-ops"]}}`); returns once it listens.
    pub fn start(redirect_uri: &str, accounts: serde_json::Value) -> Option<OidcProvider> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc");
        if !root.join("node_modules/oidc-provider").is_dir() || Command::new("node").arg("--version").output().is_err()
        {
            println!("SKIPPED: node or tests/oidc/node_modules missing (tools/setup.sh runs npm ci in tests/oidc)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (ca_pem, cert, key, _) = super::loopback_pki("OpenID provider test CA");
        std::fs::write(d.join("cert.pem"), &cert).unwrap();
        std::fs::write(d.join("key.pem"), &key).unwrap();
        std::fs::write(d.join("accounts.json"), accounts.to_string()).unwrap();
        let port = super::free_port();
        let issuer = format!("https://127.0.0.1:{port}");
        let (client_id, client_secret) = ("rackboot".to_string(), "a-test-client-secret-of-some-length".to_string());
        let cfg = serde_json::json!({"port": port, "issuer": issuer, "cert": d.join("cert.pem"),
            "key": d.join("key.pem"), "accounts": d.join("accounts.json"), "client_id": client_id,
            "client_secret": client_secret, "redirect_uri": redirect_uri});
        std::fs::write(d.join("config.json"), cfg.to_string()).unwrap();
        let mut child = Command::new("node")
            .arg(root.join("provider.mjs"))
            .arg(d.join("config.json"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let ready = std::thread::spawn(move || {
            use std::io::BufRead;
            let mut lines = std::io::BufReader::new(stdout).lines();
            let ok = lines.by_ref().map_while(Result::ok).any(|l| l.trim() == "ready");
            std::thread::spawn(move || lines.for_each(drop));
            ok
        });
        let provider = OidcProvider { child, dir, issuer, ca_pem, client_id, client_secret };
        assert!(ready.join().unwrap(), "the OpenID provider did not start");
        Some(provider)
    }

    /// Its certificate's file (for the browser's pin).
    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    /// Gives `user` these groups from their next login on.
    pub fn set_groups(&self, user: &str, groups: &[&str]) {
        let path = self.dir.path().join("accounts.json");
        let mut a: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        a[user] = serde_json::json!({"groups": groups});
        std::fs::write(path, a.to_string()).unwrap();
    }
}
