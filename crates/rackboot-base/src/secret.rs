//! Secrets compared in constant time, and hex: the one copy the appliance uses (credential
//! hashes, boot nonces, installer tokens, CSRF tokens, checksums).

use sha2::{Digest, Sha256};

/// Compares two secrets in constant time (by their SHA-256, so their lengths do not show either).
pub fn same_secret(a: &str, b: &str) -> bool {
    same_bytes(&Sha256::digest(a.as_bytes()).into(), &Sha256::digest(b.as_bytes()).into())
}

/// Compares two 32-byte values without an early exit.
pub fn same_bytes(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Compares two strings without an early exit once their lengths agree (a length is no secret
/// where both are fixed-size tokens).
pub fn same_str(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Lowercase hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// 32 bytes from 64 hex digits; `None` for anything else.
pub fn unhex32(s: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if s.len() != 64 {
        return None;
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A new agent credential secret (64 hex digits from the OS's RNG) and the SHA-256 hex the
/// store keeps of it.
pub fn new_credential() -> Result<(String, String), getrandom::Error> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw)?;
    let secret = hex(&raw);
    let hash = hex(&Sha256::digest(secret.as_bytes()));
    Ok((secret, hash))
}

/// A presented bearer credential `<machine id>.<secret>` as (machine id, SHA-256 hex of the
/// secret); `None` when it does not have that shape.
pub fn presented_credential(bearer: Option<&str>) -> Option<(u64, String)> {
    let (id, secret) = bearer?.split_once('.')?;
    Some((id.parse().ok()?, hex(&Sha256::digest(secret.as_bytes()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_and_hex_round_trip() {
        assert!(same_secret("a", "a") && !same_secret("a", "b") && !same_secret("a", "aa"));
        assert!(same_str("abc", "abc") && !same_str("abc", "abd") && !same_str("abc", "ab"));
        let h = hex(&Sha256::digest(b"x"));
        assert_eq!(unhex32(&h).map(|b| hex(&b)), Some(h));
        assert_eq!(unhex32("zz"), None);
        assert_eq!(unhex32(&"zz".repeat(32)), None);
    }
}
