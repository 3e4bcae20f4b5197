//! Boot nonces: the one-time secret a discovery boot carries on its kernel command line
//! (`rackboot.nonce=`), which its agent must present to enroll. Only a hash is stored, one per
//! boot MAC (a new boot replaces the last one's), until it is used or expires.

use super::kv::Def;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::store::{self, Record};
use super::writer::WriteCtx;
use super::{now_secs, Cmdb, CmdbError};
use crate::mac::Mac;

/// Boot MAC (packed in a u64) -> JSON `BootNonce`. Created on first use (no schema change:
/// older files simply have no nonces).
pub const BOOT_NONCES: Def<u64, &[u8]> = Def::new("boot_nonces");

/// Nonces kept before expired ones are swept on the next issue.
const SWEEP_ABOVE: u64 = 4096;

/// A stored nonce: the hash of what went into one boot script.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BootNonce {
    pub mac: Mac,
    /// Hex SHA-256 of the nonce.
    pub sha256: String,
    pub issued_at: u64,
    pub expires_at: u64,
    /// The address the boot script went to.
    pub issued_to: String,
}

impl Record for BootNonce {
    const TABLE: Def<u64, &'static [u8]> = BOOT_NONCES;
    const NAME: &'static str = "boot nonce of";
    fn key(&self) -> u64 {
        self.mac.to_u64()
    }
}

/// What a presented nonce turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceCheck {
    /// None was presented.
    Absent,
    /// It is the boot MAC's current nonce, unexpired; it is now used up.
    Valid,
    /// Unknown, already used, replaced by a later boot, or issued for another MAC.
    Unknown,
    /// It was this MAC's nonce but has expired.
    Expired,
}

impl NonceCheck {
    /// A short name for events: `absent`, `valid`, `unknown`, `expired`.
    pub fn label(self) -> &'static str {
        match self {
            NonceCheck::Absent => "absent",
            NonceCheck::Valid => "valid",
            NonceCheck::Unknown => "unknown",
            NonceCheck::Expired => "expired",
        }
    }

    /// Why an enrollment with this nonce was not admitted, for the refusal and the event.
    pub fn reason(self) -> &'static str {
        match self {
            NonceCheck::Absent => "no boot nonce presented",
            NonceCheck::Valid => "boot nonce valid",
            NonceCheck::Unknown => "boot nonce unknown, used, superseded or for another MAC",
            NonceCheck::Expired => "boot nonce expired",
        }
    }
}

/// Hex SHA-256 of a presented nonce.
pub fn nonce_hash(nonce: &str) -> String {
    Sha256::digest(nonce.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks the nonce presented (`presented`: its hash) against the nonces of the enrolling
/// node's MACs (boot MAC first) and uses it up when it is valid, inside the enrollment's
/// transaction; an expired one is removed too.
pub(super) fn take(ctx: &mut WriteCtx<'_>, macs: &[Mac], presented: Option<&str>) -> Result<NonceCheck, CmdbError> {
    let Some(hash) = presented else { return Ok(NonceCheck::Absent) };
    for mac in macs {
        let Some(stored) = ctx.find::<BootNonce>(mac.to_u64())? else { continue };
        if !crate::controller::same_secret(&stored.sha256, hash) {
            continue;
        }
        ctx.t.tx.open_table(BOOT_NONCES)?.remove(mac.to_u64())?;
        return Ok(if stored.expires_at <= now_secs() { NonceCheck::Expired } else { NonceCheck::Valid });
    }
    Ok(NonceCheck::Unknown)
}

impl Cmdb {
    /// Issues a fresh nonce for a boot of `mac` (replacing any earlier one), valid for
    /// `ttl_secs`; returns it. Only its hash is stored.
    pub async fn issue_boot_nonce(&self, mac: Mac, issued_to: String, ttl_secs: u64) -> Result<String, CmdbError> {
        let mut raw = [0u8; 16];
        getrandom::fill(&mut raw).map_err(|e| CmdbError::Storage(format!("no randomness for a boot nonce: {e}")))?;
        let nonce: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let now = now_secs();
        let rec = BootNonce { mac, sha256: nonce_hash(&nonce), issued_at: now, expires_at: now + ttl_secs, issued_to };
        self.write(move |ctx| {
            ctx.put(&rec)?;
            sweep_expired(ctx, now)
        })
        .await?;
        Ok(nonce)
    }
}

/// Removes expired nonces once there are many (a boot that never enrolled leaves one behind).
fn sweep_expired(ctx: &mut WriteCtx<'_>, now: u64) -> Result<(), CmdbError> {
    let mut t = ctx.t.tx.open_table(BOOT_NONCES)?;
    if t.len()? <= SWEEP_ABOVE {
        return Ok(());
    }
    let stale: Vec<u64> = store::scan::<u64, BootNonce>(&t)?
        .into_iter()
        .filter(|n| n.expires_at <= now)
        .map(|n| n.mac.to_u64())
        .collect();
    for k in stale {
        t.remove(k)?;
    }
    Ok(())
}
