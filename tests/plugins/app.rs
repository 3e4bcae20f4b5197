//! Appliance-side helpers of the plugin tests: an appliance trusting a lab key, uploads, and
//! the check that nothing beyond what was stored is left (record, blob, tmp/).
#![allow(dead_code)]

use hyper::Method;
use serde_json::{json, Value};

use super::kit::*;
use crate::common::appliance::Appliance;

pub const CHECK: &str = "#!/bin/sh\nexit 1\n";
pub const APPLY: &str = "#!/bin/sh\nexit 0\n";

pub struct Setup {
    pub app: Appliance,
    pub keys: tempfile::TempDir,
    pub lab_key: std::path::PathBuf,
}

/// An appliance that trusts one key for vendor `rackboot-lab`; `None` without minisign.
pub async fn setup(extra: &str) -> Option<Setup> {
    if !have_minisign() {
        eprintln!("SKIPPED: minisign is not installed (tools/setup.sh installs it)");
        return None;
    }
    let app = Appliance::start(extra).await;
    let keys = tempfile::tempdir().unwrap();
    let (public, lab_key) = keypair(keys.path(), "lab");
    let text = std::fs::read_to_string(public).unwrap();
    let k = app
        .api
        .ok(Method::POST, "/plugin-keys", Some(json!({"vendor": "rackboot-lab", "public_key": text})))
        .await
        .unwrap();
    let comment = text.lines().next().unwrap();
    assert!(
        comment.ends_with(&format!(" {}", k["key_id"].as_str().unwrap())),
        "the id minisign prints: {comment} / {k}"
    );
    Some(Setup { app, keys, lab_key })
}

pub async fn upload(app: &Appliance, bundle: &[u8], sig: &[u8], downgrade: bool) -> (u16, Value) {
    let flag: &[u8] = if downgrade { b"true" } else { b"false" };
    let parts: [(&str, &str, &[u8]); 3] =
        [("bundle", "b.tar.gz", bundle), ("signature", "b.minisig", sig), ("allow_downgrade", "f", flag)];
    app.api.post_form("/plugins", &parts).await.unwrap()
}

pub fn entries(dir: std::path::PathBuf) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// Nothing stored beyond `versions` plugin versions: the list, the blobs and tmp/ agree.
pub async fn stored(s: &Setup, versions: usize) {
    let list = s.app.api.ok(Method::GET, "/plugins", None).await.unwrap();
    let n: usize = list["plugins"].as_array().unwrap().iter().map(|p| p["versions"].as_array().unwrap().len()).sum();
    assert_eq!(n, versions, "{list}");
    let plugins = s.app.dir.path().join("plugins");
    assert_eq!(entries(plugins.join("blobs")).len(), versions, "one blob per stored version");
    assert!(entries(plugins.join("tmp")).is_empty(), "tmp/ is empty: {:?}", entries(plugins.join("tmp")));
}
