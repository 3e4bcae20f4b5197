//! A delivery's signature, the way Stripe signs: the header `Rackboot-Signature:
//! t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. A receiver recomputes the MAC
//! over the timestamp and the raw body, compares in constant time, and refuses a timestamp
//! further than [`TOLERANCE_SECS`] from its clock (a replay of an old delivery).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header that carries the signature.
pub const HEADER: &str = "rackboot-signature";
/// How far a delivery's timestamp may be from the receiver's clock.
pub const TOLERANCE_SECS: u64 = 300;

/// The MAC of `body` sent at `t`, as lowercase hex.
fn mac(secret: &[u8], t: u64, body: &[u8]) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    rackboot_base::secret::hex(&m.finalize().into_bytes())
}

/// The header's value for `body` sent at `t`.
pub fn signature(secret: &[u8], t: u64, body: &[u8]) -> String {
    format!("t={t},v1={}", mac(secret, t, body))
}

/// Why a delivery was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the signature header is malformed")]
    Malformed,
    #[error("the timestamp is {0} s from now (at most {TOLERANCE_SECS})")]
    Stale(u64),
    #[error("no v1 signature matches")]
    Mismatch,
}

/// The documented check: `header` signs `body` with `secret`, at most [`TOLERANCE_SECS`] from
/// `now` (Unix seconds). Any one of several `v1=` values may match (a receiver during a secret
/// rotation gets one per secret).
pub fn verify(secret: &[u8], header: &str, body: &[u8], now: u64) -> Result<(), Refused> {
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = Some(v.parse::<u64>().map_err(|_| Refused::Malformed)?),
            Some(("v1", v)) => sigs.push(v),
            Some(_) => {}
            None => return Err(Refused::Malformed),
        }
    }
    let t = t.ok_or(Refused::Malformed)?;
    if sigs.is_empty() {
        return Err(Refused::Malformed);
    }
    let off = now.abs_diff(t);
    if off > TOLERANCE_SECS {
        return Err(Refused::Stale(off));
    }
    let want = mac(secret, t, body);
    if sigs.iter().any(|s| rackboot_base::secret::same_str(s, &want)) {
        Ok(())
    } else {
        Err(Refused::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_and_nothing_else_does() {
        let (secret, body, now) = (b"s3cret".as_slice(), br#"{"seq":7}"#.as_slice(), 1_800_000_000);
        let h = signature(secret, now, body);
        assert_eq!(verify(secret, &h, body, now), Ok(()));
        assert_eq!(verify(secret, &h, body, now + TOLERANCE_SECS), Ok(()));
        assert_eq!(verify(b"other", &h, body, now), Err(Refused::Mismatch));
        assert_eq!(verify(secret, &h, br#"{"seq":8}"#, now), Err(Refused::Mismatch));
        assert_eq!(verify(secret, &h, body, now + 301), Err(Refused::Stale(301)));
        // The timestamp is signed: moving it breaks the MAC.
        let moved = h.replacen(&format!("t={now}"), &format!("t={}", now + 1), 1);
        assert_eq!(verify(secret, &moved, body, now), Err(Refused::Mismatch));
        for bad in ["", "v1=00", "t=x,v1=00", "t=1", "garbage"] {
            assert_eq!(verify(secret, bad, body, now), Err(Refused::Malformed), "{bad:?}");
        }
        // Known answer: HMAC-SHA256("key", "1.{}"), as `printf '1.{}' | openssl dgst -sha256 -hmac key`.
        assert_eq!(
            signature(b"key", 1, b"{}"),
            "t=1,v1=1ba6b8171186efc613e8bcc0cbdab2748f24984d7c5a84faa2637afa0e40d224"
        );
    }
}
