//! Sealed secrets: the one home for secrets rackboot must keep and use again (BMC passwords,
//! plugin keys). A secret is sealed with XChaCha20-Poly1305 under a 256-bit data key kept in
//! `data_dir/secret.key` (mode 0600, made on first start) and stored as
//! `v1.<nonce hex>.<ciphertext hex>`; the record it belongs to is bound in as associated data,
//! so a sealed value copied onto another record does not open. The plaintext never goes into a
//! log, a URL or an API answer.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// Why a sealed value could not be opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("not a sealed value (expected v1.<nonce>.<ciphertext>)")]
    Malformed,
    #[error("sealed value does not open: another data key, another record, or tampered with")]
    Forged,
    #[error("no randomness: {0}")]
    Random(String),
}

/// Seals and opens secrets with the appliance's data key.
pub struct Sealer {
    aead: XChaCha20Poly1305,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

impl Sealer {
    /// Loads the data key from `data_dir/secret.key`, creating it (0600) on first start.
    pub fn load_or_create(data_dir: &Path) -> anyhow::Result<Sealer> {
        let path = data_dir.join("secret.key");
        let key = match std::fs::read(&path) {
            Ok(k) => {
                anyhow::ensure!(
                    k.len() == 32,
                    "{} must hold 32 bytes (delete it only with the secrets it sealed)",
                    path.display()
                );
                k
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut k = vec![0u8; 32];
                getrandom::fill(&mut k).map_err(|e| anyhow::anyhow!("no randomness for the data key: {e}"))?;
                let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
                f.write_all(&k)?;
                f.sync_all()?;
                tracing::info!(path = %path.display(), "data key for sealed secrets created (mode 0600)");
                k
            }
            Err(e) => return Err(anyhow::anyhow!("reading {}: {e}", path.display())),
        };
        Ok(Sealer::from_key(&key))
    }

    /// A sealer over a raw 32-byte key.
    pub fn from_key(key: &[u8]) -> Sealer {
        Sealer { aead: XChaCha20Poly1305::new_from_slice(key).expect("a 32-byte key") }
    }

    /// Seals `secret` for the record named `bound_to` (e.g. `bmc:7`).
    pub fn seal(&self, secret: &[u8], bound_to: &str) -> Result<String, SealError> {
        let mut nonce = [0u8; 24];
        getrandom::fill(&mut nonce).map_err(|e| SealError::Random(e.to_string()))?;
        let ct = self
            .aead
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: secret, aad: bound_to.as_bytes() })
            .map_err(|_| SealError::Forged)?;
        Ok(format!("v1.{}.{}", hex(&nonce), hex(&ct)))
    }

    /// Opens a value sealed for `bound_to`.
    pub fn open(&self, sealed: &str, bound_to: &str) -> Result<Vec<u8>, SealError> {
        let mut parts = sealed.split('.');
        let (Some("v1"), Some(n), Some(c), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(SealError::Malformed);
        };
        let (nonce, ct) = (unhex(n).ok_or(SealError::Malformed)?, unhex(c).ok_or(SealError::Malformed)?);
        if nonce.len() != 24 {
            return Err(SealError::Malformed);
        }
        self.aead
            .decrypt(XNonce::from_slice(&nonce), Payload { msg: &ct, aad: bound_to.as_bytes() })
            .map_err(|_| SealError::Forged)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_with_its_key_and_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sealer::load_or_create(dir.path()).unwrap();
        let sealed = s.seal(b"hunter2hunter2", "bmc:7").unwrap();
        assert!(!sealed.contains("hunter2") && sealed.starts_with("v1."), "{sealed}");
        assert_ne!(sealed, s.seal(b"hunter2hunter2", "bmc:7").unwrap(), "a fresh nonce each time");
        assert_eq!(s.open(&sealed, "bmc:7").unwrap(), b"hunter2hunter2");
        assert_eq!(s.open(&sealed, "bmc:8"), Err(SealError::Forged), "bound to its record");
        let mut tampered = sealed.clone();
        tampered.replace_range(sealed.len() - 2.., if sealed.ends_with("00") { "01" } else { "00" });
        assert_eq!(s.open(&tampered, "bmc:7"), Err(SealError::Forged));
        assert_eq!(s.open("v1.zz.00", "bmc:7"), Err(SealError::Malformed));
        assert_eq!(Sealer::from_key(&[7u8; 32]).open(&sealed, "bmc:7"), Err(SealError::Forged), "another key");

        // The key survives a restart, owner-only.
        let again = Sealer::load_or_create(dir.path()).unwrap();
        assert_eq!(again.open(&sealed, "bmc:7").unwrap(), b"hunter2hunter2");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("secret.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
