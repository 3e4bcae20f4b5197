//! The appliance's Tang server (a service crate like DNS or TFTP; the API mounts its two
//! routes): the keys encrypted volumes are bound to with Clevis, so they
//! unlock at boot only while the appliance answers (network-bound disk encryption).
//!
//! - [`jose`]: the protocol's cryptography (JWKs, thumbprints, the signed advertisement, the
//!   McCallum-Relyea exchange).
//! - [`rebind`]: rotation's second half: re-bind jobs on installed machines, and old keys
//!   deleted once no machine is bound to them.
//!
//! Keys live in the store (private halves sealed with the data key), so every appliance of a
//! shared store with the same `secret.key` serves the same keys, and a backup holds them. The
//! first key pair is made when it is first needed.

pub mod jose;
pub mod rebind;

// The lower crates under the names the code uses (as in the control crate).
use rackboot_base::secrets;
use rackboot_config as config;
use rackboot_model::jobs;
use rackboot_store as cmdb;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use p521::SecretKey;
use rackboot_model::tang::TangKey;
use serde_json::Value;

use crate::cmdb::{now_secs, Cmdb, CmdbError};
use crate::secrets::Sealer;

/// How long the opened keys are used before they are read again (another appliance of a
/// shared store may have rotated them).
const RELOAD: Duration = Duration::from_secs(5);
/// Recovery exchanges at once; more are refused (503) rather than queued: the protocol takes no
/// credentials, so a flood from the VLAN must not take the appliance's CPU.
pub const MAX_EXCHANGES: usize = 8;

/// The Tang server over the store's keys.
pub struct Tang {
    cmdb: Cmdb,
    sealer: Arc<Sealer>,
    /// The URL bound volumes reach it at (`<http_base>/tang`).
    pub url: String,
    loaded: Mutex<Option<(Instant, Arc<Keys>)>>,
    exchanges: Arc<tokio::sync::Semaphore>,
}

/// The keys as served: opened, with their thumbprints and the advertisement.
pub struct Keys {
    keys: Vec<Opened>,
    /// The advertisement of the advertised key pairs, signed by their signing keys.
    pub adv: String,
    /// The advertised key's id.
    pub active: Option<u64>,
}

struct Opened {
    record: TangKey,
    signing: SecretKey,
    exchange: SecretKey,
    /// The exchange key's thumbprints (SHA-256, SHA-1).
    exchange_thp: [String; 2],
    signing_thp: [String; 2],
}

/// The advertisement of the advertised key pairs, signed by their signing keys (and by `also`).
fn advertise(keys: &[Opened], also: Option<&SecretKey>) -> String {
    let active: Vec<&Opened> = keys.iter().filter(|k| k.record.active).collect();
    let pairs: Vec<_> = active.iter().map(|k| (&k.record.signing, &k.record.exchange)).collect();
    let signers: Vec<&SecretKey> = active.iter().map(|k| &k.signing).chain(also).collect();
    jose::advertisement(&pairs, &signers)
}

/// Why a Tang request was not answered.
#[derive(Debug, thiserror::Error)]
pub enum TangError {
    #[error("{0}")]
    BadRequest(#[from] jose::BadRequest),
    #[error("no tang key has thumbprint {0}")]
    UnknownKey(String),
    #[error("the tang keys: {0}")]
    Keys(String),
    #[error("{MAX_EXCHANGES} recovery exchanges are under way: try again")]
    Busy,
    #[error(transparent)]
    Cmdb(#[from] CmdbError),
}

impl Tang {
    pub fn new(cmdb: Cmdb, sealer: Arc<Sealer>, http_base: &str) -> Tang {
        let exchanges = Arc::new(tokio::sync::Semaphore::new(MAX_EXCHANGES));
        Tang { cmdb, sealer, url: format!("{http_base}/tang"), loaded: Mutex::new(None), exchanges }
    }

    /// The keys, read again when they are older than [`RELOAD`] or `fresh` asks for it.
    pub async fn keys(&self, fresh: bool) -> Result<Arc<Keys>, TangError> {
        if !fresh {
            if let Some((at, keys)) = self.loaded.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                if at.elapsed() < RELOAD {
                    return Ok(keys.clone());
                }
            }
        }
        let records = self.cmdb.tang_keys().await?;
        let keys = Arc::new(self.open(records)?);
        *self.loaded.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), keys.clone()));
        Ok(keys)
    }

    fn open(&self, records: Vec<TangKey>) -> Result<Keys, TangError> {
        let mut keys = Vec::new();
        for record in records {
            let plain = self.sealer.open(&record.private_sealed, &TangKey::seal_binding(record.id)).map_err(|e| {
                TangError::Keys(format!(
                    "key {} cannot be opened with this appliance's data key ({e}): on a shared store every \
                     appliance needs the same secret.key",
                    record.id
                ))
            })?;
            if plain.len() != 132 {
                return Err(TangError::Keys(format!("key {}: its private half is not two P-521 scalars", record.id)));
            }
            let (signing, exchange) = (jose::secret(&plain[..66]), jose::secret(&plain[66..]));
            let (signing, exchange) = (signing.map_err(TangError::Keys)?, exchange.map_err(TangError::Keys)?);
            let exchange_thp = jose::thumbprints(&record.exchange);
            let signing_thp = jose::thumbprints(&record.signing);
            keys.push(Opened { record, signing, exchange, exchange_thp, signing_thp });
        }
        let adv = advertise(&keys, None);
        let active = keys.iter().rfind(|k| k.record.active).map(|k| k.record.id);
        Ok(Keys { keys, adv, active })
    }

    /// The advertised key pair, made first when there is none (once, whichever appliance of a
    /// shared store gets there first): its id and the advertisement.
    pub async fn advertised(&self) -> Result<(u64, String), TangError> {
        let keys = self.keys(false).await?;
        if let Some(id) = keys.active {
            return Ok((id, keys.adv.clone()));
        }
        self.add_key(false).await?;
        let keys = self.keys(true).await?;
        let id = keys.active.ok_or_else(|| TangError::Keys("no key is advertised after making one".into()))?;
        Ok((id, keys.adv.clone()))
    }

    /// A new key pair; with `rotate` it becomes the advertised one (the others are kept for
    /// the machines bound to them); without, it is made only when none is advertised.
    pub async fn add_key(&self, rotate: bool) -> Result<Option<TangKey>, TangError> {
        let (signing, exchange) =
            (jose::generate().map_err(TangError::Keys)?, jose::generate().map_err(TangError::Keys)?);
        let mut private = signing.to_bytes().to_vec();
        private.extend_from_slice(&exchange.to_bytes());
        let sealer = self.sealer.clone();
        let build = move |id: u64| {
            let sealed = sealer
                .seal(&private, &TangKey::seal_binding(id))
                .map_err(|e| CmdbError::Invalid(format!("sealing the tang key: {e}")))?;
            let exchange_point = jose::public(&exchange);
            let [thumbprint, _] = jose::thumbprints(&exchange_point);
            Ok(TangKey {
                id,
                created_at: now_secs(),
                active: true,
                signing: jose::public(&signing),
                exchange: exchange_point,
                thumbprint,
                private_sealed: sealed,
            })
        };
        let keep = move |keys: &[TangKey]| rotate || !keys.iter().any(|k| k.active);
        let key = self.cmdb.add_tang_key(keep, rotate, build).await?;
        self.keys(true).await?;
        Ok(key.map(TangKey::shown))
    }

    /// `GET /adv/{thp}`: the advertisement, signed also by the signing key `thp` names when
    /// that is an older one (a client that trusts only it can then trust the new keys).
    pub async fn advertisement_by(&self, thp: &str) -> Result<String, TangError> {
        self.advertised().await?;
        let keys = self.keys(false).await?;
        let signer = keys.keys.iter().find(|k| k.signing_thp.iter().any(|t| t == thp));
        let Some(signer) = signer else { return Err(TangError::UnknownKey(thp.into())) };
        if signer.record.active {
            return Ok(keys.adv.clone());
        }
        Ok(advertise(&keys.keys, Some(&signer.signing)))
    }

    /// `POST /rec/{kid}`: the exchange with the key (advertised or older) whose thumbprint is
    /// `kid`.
    /// At most [`MAX_EXCHANGES`] at once, each on the blocking pool.
    pub async fn recover(&self, kid: &str, body: &[u8]) -> Result<Value, TangError> {
        let permit = self.exchanges.clone().try_acquire_owned().map_err(|_| TangError::Busy)?;
        for fresh in [false, true] {
            let keys = self.keys(fresh).await?;
            if let Some(k) = keys.keys.iter().find(|k| k.exchange_thp.iter().any(|t| t == kid)) {
                let (key, body) = (k.exchange.clone(), body.to_vec());
                let exchange = tokio::task::spawn_blocking(move || {
                    let _permit = permit;
                    jose::recover(&key, &body)
                });
                return Ok(exchange.await.map_err(|e| TangError::Keys(format!("the exchange: {e}")))??);
            }
        }
        Err(TangError::UnknownKey(kid.into()))
    }

    /// Every key as the API shows it, with how many machines are bound to each.
    pub async fn list(&self) -> Result<Vec<(TangKey, usize)>, TangError> {
        let bindings = self.cmdb.tang_bindings().await?;
        let keys = self.cmdb.tang_keys().await?;
        let bound = |id: u64| bindings.iter().filter(|b| b.key == id).count();
        Ok(keys.into_iter().map(|k| (bound(k.id), k.shown())).map(|(n, k)| (k, n)).collect())
    }
}
