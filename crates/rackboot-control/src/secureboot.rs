//! The appliance's Secure Boot key: BootOS's one image is signed with it, so firmware with
//! Secure Boot on and its certificate enrolled in `db` boots that image and refuses any other
//! (a changed initrd, a neighbour's image). Made at first start beside the image (RSA 2048,
//! what every UEFI firmware verifies; a self-signed certificate, 20 years), the key sealed with
//! the appliance's data key in `<data_dir>/secureboot/db.key.sealed`, the certificate in
//! `db.crt` (`rackboot secureboot export-cert`). Images are signed with Debian's `sbsign`
//! (sbsigntool); the key reaches it through a memory file, never a file on disk.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rcgen::{CertificateParams, DistinguishedName, DnType};

use crate::secrets::Sealer;

/// The certificate to enrol in firmware's `db` (PEM).
pub const CERT: &str = "db.crt";
/// The certificate of the key before the last rotation (PEM): still in machines' `db` until the
/// operator removes it.
pub const PREVIOUS_CERT: &str = "db.previous.crt";
const SEALED_KEY: &str = "db.key.sealed";
/// What the sealed key is bound to.
const BOUND_TO: &str = "secureboot:db";
/// Where Debian's sbsigntool puts sbsign.
pub const SBSIGN: &str = "/usr/bin/sbsign";

/// The key's directory.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("secureboot")
}

/// The signing key: its certificate (PEM) and its private key (PKCS#8 PEM, in memory only).
pub struct SigningKey {
    pub cert_pem: String,
    key_pem: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

/// Loads the signing key, making it on first use.
pub fn ensure(data_dir: &Path, sealer: &Sealer) -> anyhow::Result<SigningKey> {
    let dir = dir(data_dir);
    let (cert_path, sealed_path) = (dir.join(CERT), dir.join(SEALED_KEY));
    if cert_path.exists() && sealed_path.exists() {
        let sealed =
            std::fs::read_to_string(&sealed_path).with_context(|| format!("reading {}", sealed_path.display()))?;
        let key = sealer.open(sealed.trim(), BOUND_TO).with_context(|| format!("opening {}", sealed_path.display()))?;
        let key_pem = String::from_utf8(key).context("the sealed Secure Boot key is not PEM")?;
        let cert_pem =
            std::fs::read_to_string(&cert_path).with_context(|| format!("reading {}", cert_path.display()))?;
        return Ok(SigningKey { cert_pem, key_pem });
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let key = crate::tls::ca::rsa_key().context("the Secure Boot key")?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "rackboot");
    dn.push(DnType::CommonName, "rackboot BootOS signing key");
    params.distinguished_name = dn;
    let now = std::time::SystemTime::now();
    params.not_before = (now - std::time::Duration::from_secs(86_400)).into();
    params.not_after = (now + std::time::Duration::from_secs(20 * 365 * 86_400)).into();
    let cert = params.self_signed(&key).context("signing the Secure Boot certificate")?;
    let key_pem = key.serialize_pem();
    let sealed = sealer.seal(key_pem.as_bytes(), BOUND_TO).context("sealing the Secure Boot key")?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&sealed_path)
        .with_context(|| format!("creating {}", sealed_path.display()))?;
    f.write_all(sealed.as_bytes())?;
    f.sync_all()?;
    std::fs::write(&cert_path, cert.pem()).with_context(|| format!("writing {}", cert_path.display()))?;
    tracing::info!(cert = %cert_path.display(), "Secure Boot signing key created (enrol its certificate in the machines' db)");
    Ok(SigningKey { cert_pem: cert.pem(), key_pem })
}

/// Replaces the signing key with a new one: the old certificate is kept as
/// [`PREVIOUS_CERT`], the old key is destroyed. Each step leaves a state [`ensure`] goes on
/// from (a certificate without its key is made anew), so a crash midway loses nothing.
pub fn rotate(data_dir: &Path, sealer: &Sealer) -> anyhow::Result<SigningKey> {
    let dir = dir(data_dir);
    let (cert_path, sealed_path) = (dir.join(CERT), dir.join(SEALED_KEY));
    anyhow::ensure!(
        cert_path.exists() && sealed_path.exists(),
        "no Secure Boot key in {} to rotate: the appliance makes the first at start",
        dir.display()
    );
    // Opens the old key first: a data key that cannot open it rotates nothing.
    ensure(data_dir, sealer)?;
    let previous = dir.join(PREVIOUS_CERT);
    let staged = dir.join(format!("{PREVIOUS_CERT}.new"));
    std::fs::copy(&cert_path, &staged).with_context(|| format!("copying {}", cert_path.display()))?;
    std::fs::rename(&staged, &previous).with_context(|| format!("writing {}", previous.display()))?;
    std::fs::remove_file(&sealed_path).with_context(|| format!("removing {}", sealed_path.display()))?;
    std::fs::remove_file(&cert_path).with_context(|| format!("removing {}", cert_path.display()))?;
    ensure(data_dir, sealer)
}

/// A memory file holding `bytes`, readable by a child as `/dev/fd/<fd>`.
fn memory_file(name: &str, bytes: &[u8]) -> anyhow::Result<std::fs::File> {
    let fd = nix::sys::memfd::memfd_create(name, nix::sys::memfd::MFdFlags::empty())
        .with_context(|| format!("a memory file for {name}"))?;
    let mut f = std::fs::File::from(fd);
    f.write_all(bytes)?;
    Ok(f)
}

/// Signs the PE image `input` into `output` with `key` (sbsign at `sbsign`).
pub fn sign(sbsign: &Path, key: &SigningKey, input: &Path, output: &Path) -> anyhow::Result<()> {
    let key_file = memory_file("rackboot-db-key", key.key_pem.as_bytes())?;
    let cert_file = memory_file("rackboot-db-cert", key.cert_pem.as_bytes())?;
    let out = std::process::Command::new(sbsign)
        .arg("--key")
        .arg(format!("/dev/fd/{}", key_file.as_raw_fd()))
        .arg("--cert")
        .arg(format!("/dev/fd/{}", cert_file.as_raw_fd()))
        .arg("--output")
        .arg(output)
        .arg(input)
        .output()
        .with_context(|| format!("running {} (Debian's sbsigntool)", sbsign.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{} failed: {}",
        sbsign.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_sealed_and_signs_what_sbverify_accepts() {
        let dir = tempfile::tempdir().unwrap();
        let sealer = Sealer::from_key(&[7u8; 32]);
        let a = ensure(dir.path(), &sealer).unwrap();
        let b = ensure(dir.path(), &sealer).unwrap();
        assert_eq!(a.cert_pem, b.cert_pem, "made once");
        let sealed = std::fs::read_to_string(super::dir(dir.path()).join(SEALED_KEY)).unwrap();
        assert!(!sealed.contains("PRIVATE KEY") && sealed.starts_with("v1."), "sealed at rest");
        assert!(ensure(dir.path(), &Sealer::from_key(&[8u8; 32])).is_err(), "another data key opens nothing");
        assert!(rotate(dir.path(), &Sealer::from_key(&[8u8; 32])).is_err(), "nor rotates");
        let kept = std::fs::read_to_string(super::dir(dir.path()).join(SEALED_KEY)).unwrap();
        assert_eq!(kept, sealed, "a refused rotation leaves the key");
        let fresh = tempfile::tempdir().unwrap();
        assert!(rotate(fresh.path(), &sealer).unwrap_err().to_string().contains("no Secure Boot key"));
        let stub = Path::new(rackboot_config::EFI_STUB);
        if !Path::new(SBSIGN).exists() || !stub.exists() {
            eprintln!("SKIPPED the signature: sbsigntool or systemd-boot-efi is missing");
            return;
        }
        let signed = dir.path().join("stub.signed");
        sign(Path::new(SBSIGN), &a, stub, &signed).unwrap();
        let cert = super::dir(dir.path()).join(CERT);
        let verify = |file: &Path| {
            std::process::Command::new("sbverify").arg("--cert").arg(&cert).arg(file).output().unwrap().status.success()
        };
        assert!(verify(&signed), "sbverify refused the signed stub");
        assert!(!verify(stub), "sbverify accepted the unsigned stub");
    }

    #[test]
    fn rotation_keeps_the_old_certificate_and_makes_a_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let sealer = Sealer::from_key(&[7u8; 32]);
        let old = ensure(dir.path(), &sealer).unwrap();
        let new = rotate(dir.path(), &sealer).unwrap();
        assert_ne!(old.cert_pem, new.cert_pem);
        assert_ne!(old.key_pem, new.key_pem);
        let d = super::dir(dir.path());
        assert_eq!(std::fs::read_to_string(d.join(PREVIOUS_CERT)).unwrap(), old.cert_pem);
        assert_eq!(ensure(dir.path(), &sealer).unwrap().cert_pem, new.cert_pem, "the new one stays");
        // A crash after the old key was removed: the next start makes a new one.
        std::fs::remove_file(d.join(SEALED_KEY)).unwrap();
        let after = ensure(dir.path(), &sealer).unwrap();
        assert_ne!(after.cert_pem, new.cert_pem);
        assert!(!std::fs::read_dir(&d).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".new")));
    }
}
