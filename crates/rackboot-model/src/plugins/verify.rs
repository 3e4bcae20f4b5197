//! Minisign signatures of bundles: which trusted key a signature names, and whether it holds.
//! Checked on the bundle's bytes before anything in it is read.

use base64::Engine;
use minisign_verify::{PublicKey, Signature};

use super::TrustedKey;

/// Largest signature file read (minisign's are about 300 bytes).
pub const MAX_SIG_BYTES: usize = 4096;

/// A minisign public key: its id (as `minisign` prints it in the key file's comment) and its
/// base64 line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedKey {
    pub key_id: String,
    pub public_key: String,
}

/// Reads a public key from a `minisign.pub` file's text (comment line + base64) or the base64
/// line alone.
pub fn parse_public_key(text: &str) -> Result<ParsedKey, String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
        .ok_or("no public key in the text")?;
    PublicKey::from_base64(line).map_err(|e| format!("not a minisign public key: {e}"))?;
    Ok(ParsedKey { key_id: key_id(line)?, public_key: line.to_string() })
}

/// The key id in a key's or signature's base64 line (bytes 2..10), as `minisign` prints it
/// (uppercase hex of the little-endian u64, no leading zeros).
fn key_id(b64: &str) -> Result<String, String> {
    let bin = base64::engine::general_purpose::STANDARD.decode(b64.trim()).map_err(|_| "not base64")?;
    let id: [u8; 8] = bin.get(2..10).and_then(|s| s.try_into().ok()).ok_or("too short")?;
    Ok(format!("{:X}", u64::from_le_bytes(id)))
}

/// Checks a stored version's bytes again before they are served: its kept signature is made by
/// one of `keys` (this appliance's trust set), that key is the one its record names, and it
/// belongs to the version's vendor.
pub fn stored(keys: &[TrustedKey], v: &super::PluginVersion, bundle: &[u8]) -> Result<(), String> {
    let key = signer(keys, bundle, v.signature.as_bytes())?;
    if key.key_id != v.key_id || key.vendor != v.vendor {
        return Err(format!(
            "signed by key {} of vendor {}, but the record says key {} of vendor {}",
            key.key_id, key.vendor, v.key_id, v.vendor
        ));
    }
    Ok(())
}

/// The trusted key that made `sig` over `bundle`; the error says why there is none.
pub fn signer<'a>(keys: &'a [TrustedKey], bundle: &[u8], sig: &[u8]) -> Result<&'a TrustedKey, String> {
    if sig.is_empty() {
        return Err("no signature: a bundle needs its detached minisign signature".into());
    }
    if sig.len() > MAX_SIG_BYTES {
        return Err(format!("signature larger than {MAX_SIG_BYTES} bytes"));
    }
    let text = std::str::from_utf8(sig).map_err(|_| "signature: not a minisign signature (not text)")?;
    let parsed = Signature::decode(text).map_err(|e| format!("signature: not a minisign signature: {e}"))?;
    let id = text
        .lines()
        .nth(1)
        .ok_or("signature: not a minisign signature")
        .and_then(|l| key_id(l).map_err(|_| "signature: not a minisign signature"))?;
    let key = keys
        .iter()
        .find(|k| k.key_id == id)
        .ok_or_else(|| format!("signed by key {id}, which is not trusted (rackboot plugins trust add)"))?;
    let pk = PublicKey::from_base64(&key.public_key).map_err(|e| format!("trusted key {id}: {e}"))?;
    pk.verify(bundle, &parsed, false)
        .map_err(|e| format!("signature by key {id} ({}) does not match the bundle: {e}", key.vendor))?;
    if let Some(at) = key.revoked_at {
        return Err(format!("signed by key {id} of vendor {}, revoked at {at}", key.vendor));
    }
    Ok(key)
}
