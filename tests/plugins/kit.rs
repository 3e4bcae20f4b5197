//! Test kit for plugins: bundles built entry by entry (hostile names included), keys made and
//! bundles signed with the real `minisign`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub const F: tar::EntryType = tar::EntryType::Regular;

/// Whether Debian's `minisign` is installed (tools/setup.sh installs it).
pub fn have_minisign() -> bool {
    Command::new("minisign").arg("-v").output().is_ok_and(|o| o.status.success())
}

/// A minisign key pair without a password in `dir`: (public key file, secret key file).
pub fn keypair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let (p, s) = (dir.join(format!("{name}.pub")), dir.join(format!("{name}.key")));
    let out = Command::new("minisign").args(["-G", "-W", "-f", "-p"]).arg(&p).arg("-s").arg(&s).output().unwrap();
    assert!(out.status.success(), "minisign -G: {}", String::from_utf8_lossy(&out.stderr));
    (p, s)
}

/// The detached signature of `bytes` by `key`.
pub fn sign(dir: &Path, key: &Path, bytes: &[u8]) -> Vec<u8> {
    let file = dir.join("to-sign.tar.gz");
    std::fs::write(&file, bytes).unwrap();
    let sig = dir.join("to-sign.tar.gz.minisig");
    let out = Command::new("minisign")
        .arg("-S")
        .arg("-s")
        .arg(key)
        .arg("-m")
        .arg(&file)
        .arg("-x")
        .arg(&sig)
        .output()
        .unwrap();
    assert!(out.status.success(), "minisign -S: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(sig).unwrap()
}

/// A tar.gz from (name, type, mode, content), names written raw.
pub fn tgz(entries: &[(&str, tar::EntryType, u32, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for (name, kind, mode, data) in entries {
        b.append(&header(name, *kind, *mode, data.len() as u64), *data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

/// A tar header with the name written raw (tar's `set_path` refuses hostile ones).
pub fn header(name: &str, kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    if matches!(kind, tar::EntryType::Symlink | tar::EntryType::Link) {
        h.set_link_name("../../etc/passwd").unwrap();
    }
    h.set_cksum();
    h
}

/// A manifest for plugin `name` `version` of `vendor`.
pub fn manifest(name: &str, version: &str, vendor: &str) -> String {
    format!(
        r#"name = "{name}"
version = "{version}"
vendor = "{vendor}"
description = "test plugin"

[match]
dmi_vendor = ["rackboot-lab"]

[check]
run = "bin/check"
timeout = 5

[apply]
run = "bin/apply"
timeout = 5
reboot = true

[params]
type = "object"
required = ["marker"]
additionalProperties = false
[params.properties.marker]
type = "string"
maxLength = 64
"#
    )
}

/// A good bundle: the manifest and its two scripts.
pub fn good(name: &str, version: &str, vendor: &str, check: &str, apply: &str) -> Vec<u8> {
    let m = manifest(name, version, vendor);
    tgz(&[
        ("manifest.toml", F, 0o644, m.as_bytes()),
        ("bin/check", F, 0o755, check.as_bytes()),
        ("bin/apply", F, 0o755, apply.as_bytes()),
    ])
}
