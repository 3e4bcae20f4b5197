//! Boot nonces: the one-time secret a discovery boot carries on its kernel command line
//! (`rackboot.nonce=`), which its agent must present to enroll. Only hashes are stored, under
//! the boot MAC: the newest boot's and up to [`KEEP_EARLIER`] earlier unexpired ones, so a stray
//! (or spoofed) firmware request for the same MAC does not void the nonce a booting machine
//! already holds. A nonce admits only the machine whose MAC it was issued for; using one uses
//! up every nonce of that MAC.

use super::kv::Def;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::store::WriteCtx;
use super::store::{self, Record};
use super::{now_secs, Cmdb, CmdbError};
use rackboot_base::secret::same_secret;
use rackboot_model::mac::Mac;

/// Boot MAC (packed in a u64) -> JSON `BootNonce`. Created on first use (no schema change:
/// older files simply have no nonces).
pub const BOOT_NONCES: Def<u64, &[u8]> = Def::new("boot_nonces");

/// Nonces kept before expired ones are swept on the next issue.
const SWEEP_ABOVE: u64 = 4096;

/// Earlier unexpired nonces of a MAC kept beside its newest one.
pub const KEEP_EARLIER: usize = 3;

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
    /// Earlier boots' nonces of the same MAC that have not expired (newest first).
    #[serde(default)]
    pub earlier: Vec<EarlierNonce>,
}

/// An earlier nonce of the same MAC, still valid until it expires.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EarlierNonce {
    pub sha256: String,
    pub expires_at: u64,
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
    /// Unknown, already used, or replaced by later boots.
    Unknown,
    /// It was this MAC's nonce but has expired.
    Expired,
    /// A live nonce, but issued for a MAC that is not the matched machine's: it proves another
    /// boot, never this one (it is left unused).
    Foreign,
}

impl NonceCheck {
    /// A short name for events: `absent`, `valid`, `unknown`, `expired`.
    pub fn label(self) -> &'static str {
        match self {
            NonceCheck::Absent => "absent",
            NonceCheck::Valid => "valid",
            NonceCheck::Unknown => "unknown",
            NonceCheck::Expired => "expired",
            NonceCheck::Foreign => "foreign",
        }
    }

    /// Why an enrollment with this nonce was not admitted, for the refusal and the event.
    pub fn reason(self) -> &'static str {
        match self {
            NonceCheck::Absent => "no boot nonce presented",
            NonceCheck::Valid => "boot nonce valid",
            NonceCheck::Unknown => "boot nonce unknown, used or superseded",
            NonceCheck::Expired => "boot nonce expired",
            NonceCheck::Foreign => "boot nonce issued for a MAC that is not this machine's",
        }
    }
}

impl EarlierNonce {
    /// What stays good beside a new secret: the one it replaces (`sha256`, `expires_at`) and
    /// the ones before it (`earlier`), unexpired at `now`, newest first, at most [`KEEP_EARLIER`].
    pub(super) fn carried(sha256: String, expires_at: u64, earlier: Vec<EarlierNonce>, now: u64) -> Vec<EarlierNonce> {
        std::iter::once(EarlierNonce { sha256, expires_at })
            .chain(earlier)
            .filter(|e| e.expires_at > now)
            .take(KEEP_EARLIER)
            .collect()
    }

    /// The expiry of whichever of the newest secret and `earlier` hashes to `hash` (compared
    /// in constant time); `None` when none does.
    pub(super) fn expiry_of(newest: (&str, u64), earlier: &[EarlierNonce], hash: &str) -> Option<u64> {
        let earlier = earlier.iter().map(|e| (e.sha256.as_str(), e.expires_at));
        std::iter::once(newest).chain(earlier).find(|(h, _)| same_secret(h, hash)).map(|(_, at)| at)
    }
}

/// Hex SHA-256 of a presented nonce.
pub fn nonce_hash(nonce: &str) -> String {
    Sha256::digest(nonce.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks the nonce presented (`presented`: its hash) against the nonces of the enrolling
/// node's MACs (boot MAC first), inside the enrollment's transaction, without using it up. A
/// nonce found under a MAC for which `owned` is false (not the matched machine's) is
/// [`NonceCheck::Foreign`]; one found under an owned MAC comes with that MAC, whose nonces
/// [`spend`] uses up (expired or not).
pub(super) fn check(
    ctx: &mut WriteCtx<'_>,
    macs: &[Mac],
    presented: Option<&str>,
    owned: impl Fn(Mac) -> bool,
) -> Result<(NonceCheck, Option<Mac>), CmdbError> {
    let Some(hash) = presented else { return Ok((NonceCheck::Absent, None)) };
    for mac in macs {
        let Some(stored) = ctx.find::<BootNonce>(mac.to_u64())? else { continue };
        let newest = (stored.sha256.as_str(), stored.expires_at);
        let Some(expires_at) = EarlierNonce::expiry_of(newest, &stored.earlier, hash) else {
            continue;
        };
        if !owned(*mac) {
            return Ok((NonceCheck::Foreign, None));
        }
        let check = if expires_at <= now_secs() { NonceCheck::Expired } else { NonceCheck::Valid };
        return Ok((check, Some(*mac)));
    }
    Ok((NonceCheck::Unknown, None))
}

/// Uses up every nonce of `mac` (the one [`check`] found the presented nonce under).
pub(super) fn spend(ctx: &mut WriteCtx<'_>, mac: Option<Mac>) -> Result<(), CmdbError> {
    if let Some(mac) = mac {
        ctx.t.tx.open_table(BOOT_NONCES)?.remove(mac.to_u64())?;
    }
    Ok(())
}

impl Cmdb {
    /// Issues a fresh nonce for a boot of `mac` (replacing any earlier one), valid for
    /// `ttl_secs`; returns it. Only its hash is stored.
    pub async fn issue_boot_nonce(&self, mac: Mac, issued_to: String, ttl_secs: u64) -> Result<String, CmdbError> {
        let mut raw = [0u8; 16];
        getrandom::fill(&mut raw).map_err(|e| CmdbError::Storage(format!("no randomness for a boot nonce: {e}")))?;
        let nonce: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let now = now_secs();
        let sha256 = nonce_hash(&nonce);
        self.write(move |ctx| {
            let earlier = match ctx.find::<BootNonce>(mac.to_u64())? {
                Some(prev) => EarlierNonce::carried(prev.sha256, prev.expires_at, prev.earlier, now),
                None => Vec::new(),
            };
            ctx.put(&BootNonce { mac, sha256, issued_at: now, expires_at: now + ttl_secs, issued_to, earlier })?;
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
