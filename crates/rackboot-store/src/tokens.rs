//! Boot tokens: the per-machine secrets in the URLs of files that are not public. An
//! installer's answer file (preseed, kickstart, autoinstall) is read at a URL with a token
//! minted for that boot, which only the boot script sent to the machine's own address carries;
//! an installed node's cloud-init seed is read at a URL with a token minted for that install,
//! which reaches the node only through its agent or its installer's report-back. Only hashes
//! are stored, under the MAC and the token's use: the newest and up to
//! [`KEEP_EARLIER`](super::nonces::KEEP_EARLIER) earlier unexpired ones (a stray firmware request
//! does not void what a booting machine already holds). Unlike a boot nonce, a token is not
//! used up: an installer reads several files with it.

use serde::{Deserialize, Serialize};

use super::kv::Def;
use super::nonces::{nonce_hash, EarlierNonce};
use super::store::WriteCtx;
use super::store::{self, Record};
use super::{now_secs, Cmdb, CmdbError};
use rackboot_model::mac::Mac;

/// `use << 48 | MAC` -> JSON [`BootToken`].
pub const BOOT_TOKENS: Def<u64, &[u8]> = Def::new("boot_tokens");

/// Tokens kept before expired ones are swept on the next issue.
const SWEEP_ABOVE: u64 = 4096;

/// What a token opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenUse {
    /// An installer's answer file, for one boot.
    Answer,
    /// An installed node's cloud-init seed (user-data, network-config), for one install.
    Seed,
}

impl TokenUse {
    fn key(self, mac: Mac) -> u64 {
        let tag: u64 = match self {
            TokenUse::Answer => 1,
            TokenUse::Seed => 2,
        };
        tag << 48 | mac.to_u64()
    }
}

/// The stored hashes of one MAC's tokens for one use.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BootToken {
    pub mac: Mac,
    #[serde(rename = "use")]
    pub used_for: TokenUse,
    /// Hex SHA-256 of the newest token.
    pub sha256: String,
    pub issued_at: u64,
    /// `u64::MAX`: never (a seed lasts as long as the install).
    pub expires_at: u64,
    /// The address the token went to (a boot script's client; empty for an agent's job).
    pub issued_to: String,
    /// Earlier tokens of the same MAC and use that have not expired (newest first).
    #[serde(default)]
    pub earlier: Vec<EarlierNonce>,
}

impl Record for BootToken {
    const TABLE: Def<u64, &'static [u8]> = BOOT_TOKENS;
    const NAME: &'static str = "boot token of";
    fn key(&self) -> u64 {
        self.used_for.key(self.mac)
    }
}

/// What a presented token turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCheck {
    /// One of the MAC's live tokens for this use.
    Valid,
    /// It was, and has expired.
    Expired,
    /// Never issued for this MAC and use, or pushed out by later ones.
    Unknown,
}

impl Cmdb {
    /// Issues a fresh token of `used_for` for `mac`, valid for `ttl_secs` (`None`: until later
    /// ones push it out); returns it. Only its hash is stored.
    pub async fn issue_boot_token(
        &self,
        mac: Mac,
        used_for: TokenUse,
        issued_to: String,
        ttl_secs: Option<u64>,
    ) -> Result<String, CmdbError> {
        let mut raw = [0u8; 16];
        getrandom::fill(&mut raw).map_err(|e| CmdbError::Storage(format!("no randomness for a boot token: {e}")))?;
        let token = rackboot_base::secret::hex(&raw);
        let now = now_secs();
        let sha256 = nonce_hash(&token);
        let expires_at = ttl_secs.map_or(u64::MAX, |t| now.saturating_add(t));
        self.write(move |ctx| {
            let earlier = match ctx.find::<BootToken>(used_for.key(mac))? {
                Some(prev) => EarlierNonce::carried(prev.sha256, prev.expires_at, prev.earlier, now),
                None => Vec::new(),
            };
            ctx.put(&BootToken { mac, used_for, sha256, issued_at: now, expires_at, issued_to, earlier })?;
            sweep_expired(ctx, now)
        })
        .await?;
        Ok(token)
    }

    /// Voids every token of `used_for` for `mac` (an installer boot that has ended).
    pub async fn revoke_boot_tokens(&self, mac: Mac, used_for: TokenUse) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            ctx.t.tx.open_table(BOOT_TOKENS)?.remove(used_for.key(mac))?;
            Ok(())
        })
        .await
    }

    /// Whether `token` is one of `mac`'s tokens for `used_for` (compared in constant time).
    pub async fn check_boot_token(&self, mac: Mac, used_for: TokenUse, token: &str) -> Result<TokenCheck, CmdbError> {
        let hash = nonce_hash(token);
        let stored: Option<BootToken> = self
            .read(move |rtx| match rtx.open_table_if_any(BOOT_TOKENS)? {
                Some(t) => store::find(&t, used_for.key(mac)),
                None => Ok(None),
            })
            .await?;
        let Some(stored) = stored else { return Ok(TokenCheck::Unknown) };
        Ok(match EarlierNonce::expiry_of((&stored.sha256, stored.expires_at), &stored.earlier, &hash) {
            Some(at) if at > now_secs() => TokenCheck::Valid,
            Some(_) => TokenCheck::Expired,
            None => TokenCheck::Unknown,
        })
    }
}

/// Removes tokens whose every hash has expired, once there are many.
fn sweep_expired(ctx: &mut WriteCtx<'_>, now: u64) -> Result<(), CmdbError> {
    let mut t = ctx.t.tx.open_table(BOOT_TOKENS)?;
    if t.len()? <= SWEEP_ABOVE {
        return Ok(());
    }
    let stale: Vec<u64> =
        store::scan::<u64, BootToken>(&t)?.into_iter().filter(|b| b.expires_at <= now).map(|b| b.key()).collect();
    for k in stale {
        t.remove(k)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::nonces::KEEP_EARLIER;
    use super::*;

    #[tokio::test]
    async fn a_token_opens_only_its_mac_and_use_and_later_ones_push_it_out() {
        let dir = tempfile::tempdir().unwrap();
        let cmdb = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
        let (a, b): (Mac, Mac) = ("52:54:00:00:00:0a".parse().unwrap(), "52:54:00:00:00:0b".parse().unwrap());
        let t = cmdb.issue_boot_token(a, TokenUse::Answer, "198.18.0.10".into(), Some(600)).await.unwrap();
        assert_eq!(t.len(), 32);
        assert_eq!(cmdb.check_boot_token(a, TokenUse::Answer, &t).await.unwrap(), TokenCheck::Valid);
        // Not used up by reading.
        assert_eq!(cmdb.check_boot_token(a, TokenUse::Answer, &t).await.unwrap(), TokenCheck::Valid);
        assert_eq!(cmdb.check_boot_token(b, TokenUse::Answer, &t).await.unwrap(), TokenCheck::Unknown);
        assert_eq!(cmdb.check_boot_token(a, TokenUse::Seed, &t).await.unwrap(), TokenCheck::Unknown);
        assert_eq!(cmdb.check_boot_token(a, TokenUse::Answer, "").await.unwrap(), TokenCheck::Unknown);
        // A stray request's token does not void the booting machine's...
        for _ in 0..KEEP_EARLIER {
            cmdb.issue_boot_token(a, TokenUse::Answer, "198.18.0.10".into(), Some(600)).await.unwrap();
        }
        assert_eq!(cmdb.check_boot_token(a, TokenUse::Answer, &t).await.unwrap(), TokenCheck::Valid);
        // ...but enough later ones do.
        cmdb.issue_boot_token(a, TokenUse::Answer, "198.18.0.10".into(), Some(600)).await.unwrap();
        assert_eq!(cmdb.check_boot_token(a, TokenUse::Answer, &t).await.unwrap(), TokenCheck::Unknown);
        // A seed never expires; an answer token does.
        let seed = cmdb.issue_boot_token(a, TokenUse::Seed, String::new(), None).await.unwrap();
        assert_eq!(cmdb.check_boot_token(a, TokenUse::Seed, &seed).await.unwrap(), TokenCheck::Valid);
        cmdb.revoke_boot_tokens(a, TokenUse::Seed).await.unwrap();
        assert_eq!(cmdb.check_boot_token(a, TokenUse::Seed, &seed).await.unwrap(), TokenCheck::Unknown);
        let gone = cmdb.issue_boot_token(b, TokenUse::Answer, "198.18.0.11".into(), Some(0)).await.unwrap();
        assert_eq!(cmdb.check_boot_token(b, TokenUse::Answer, &gone).await.unwrap(), TokenCheck::Expired);
    }
}
