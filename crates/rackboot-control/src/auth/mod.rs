//! People's access to the REST API: roles, API token format and hashing, password hashing
//! (argon2id, on its own small pool: [`hashing`]), the role table ([`policy`]), the login rate limiter ([`limiter`]) and the first
//! start's `admin` user and `admin.token` file ([`bootstrap`]), the end of an open answer whose
//! token stops authenticating ([`held`]), and the company's directory ([`ldap`]) and OpenID
//! provider ([`oidc`]).

pub mod bootstrap;
pub mod hashing;
pub mod held;
pub mod ldap;
pub mod limiter;
pub mod oidc;
pub mod oidc_device;
mod oidc_http;
pub mod policy;

use sha2::{Digest, Sha256};

pub use rackboot_model::role::Role;

/// Shortest password accepted.
pub const MIN_PASSWORD: usize = 12;
/// Longest password accepted (argon2 hashes any length; this bounds the work a request causes).
pub const MAX_PASSWORD: usize = 1024;

/// Whether `name` is a valid username: 1-64 of `a-z 0-9 . _ -`.
pub fn valid_username(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// Checks the password policy; the error says why, never echoing the password.
pub fn check_password(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if n < MIN_PASSWORD {
        return Err(format!("a password needs at least {MIN_PASSWORD} characters"));
    }
    if password.len() > MAX_PASSWORD {
        return Err(format!("a password may be at most {MAX_PASSWORD} bytes"));
    }
    Ok(())
}

/// The argon2id PHC string of `password` (blocking: call it on the blocking pool).
pub fn hash_password(password: &str) -> anyhow::Result<String> {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| anyhow::anyhow!("no randomness for a salt: {e}"))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| anyhow::anyhow!("salt: {e}"))?;
    let phc = argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map_err(|e| anyhow::anyhow!("hashing a password: {e}"))?;
    Ok(phc.to_string())
}

/// Whether `password` matches the PHC string `phc` (blocking: call it on the blocking pool).
pub fn verify_password(password: &str, phc: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    let Ok(parsed) = PasswordHash::new(phc) else { return false };
    argon2::Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok()
}

/// Runs a blocking password hash on the blocking pool.
pub async fn hash_password_async(password: String) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || hash_password(&password)).await?
}

/// The token id every bearer that is not `rbt_<id>_<secret>` is looked up under: the
/// `admin.token` of data dirs from before users existed.
pub const LEGACY_TOKEN_ID: &str = "legacy";

/// A new API token: (id, the whole bearer string to hand out once, the stored hash).
pub fn new_token() -> anyhow::Result<(String, String, String)> {
    let mut id = [0u8; 8];
    let mut secret = [0u8; 32];
    getrandom::fill(&mut id).map_err(|e| anyhow::anyhow!("no randomness for a token: {e}"))?;
    getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("no randomness for a token: {e}"))?;
    let (id, secret) = (hex(&id), hex(&secret));
    let hash = secret_hash(&secret);
    Ok((id.clone(), format!("rbt_{id}_{secret}"), hash))
}

/// A presented bearer as (token id, hex SHA-256 of its secret); `None` if it cannot be one.
pub fn presented(bearer: &str) -> Option<(String, String)> {
    if bearer.is_empty() || bearer.len() > 256 {
        return None;
    }
    match bearer.strip_prefix("rbt_").and_then(|rest| rest.split_once('_')) {
        Some((id, secret)) if valid_token_id(id) && !secret.is_empty() => Some((id.to_string(), secret_hash(secret))),
        _ if bearer.starts_with("rbt_") => None,
        _ => Some((LEGACY_TOKEN_ID.to_string(), secret_hash(bearer))),
    }
}

/// Whether `id` has the shape of a token id (16 hex digits, or the legacy one).
pub fn valid_token_id(id: &str) -> bool {
    id == LEGACY_TOKEN_ID || (id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
}

/// Hex SHA-256 of a token secret: what the CMDB stores (the secret is 32 random bytes, so a
/// fast hash is enough).
pub fn secret_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

pub use rackboot_base::secret::{hex, same_str as same};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_and_parse() {
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Admin);
        assert_eq!("operator".parse::<Role>().unwrap(), Role::Operator);
        assert!("root".parse::<Role>().is_err());
        assert_eq!(serde_json::to_value(Role::Admin).unwrap(), "admin");
    }

    #[test]
    fn usernames_and_passwords_are_bounded() {
        assert!(valid_username("alice.b-2_x"));
        for bad in ["", "Alice", "a b", "a/b", &"a".repeat(65)] {
            assert!(!valid_username(bad), "{bad:?}");
        }
        assert!(check_password("short").is_err());
        assert!(check_password("twelve chars").is_ok());
        assert!(check_password(&"x".repeat(MAX_PASSWORD + 1)).is_err());
    }

    #[test]
    fn a_password_verifies_against_its_hash_only() {
        let phc = hash_password("correct horse battery").unwrap();
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        assert!(verify_password("correct horse battery", &phc));
        assert!(!verify_password("correct horse batterx", &phc));
        assert!(!verify_password("anything", "not a phc string"));
    }

    #[test]
    fn tokens_are_looked_up_by_id_and_compared_by_hash() {
        let (id, bearer, hash) = new_token().unwrap();
        assert!(bearer.starts_with(&format!("rbt_{id}_")));
        assert_eq!(presented(&bearer), Some((id, hash.clone())));
        assert!(!bearer.contains(&hash));
        assert_eq!(presented("0123abcd0123abcd0123abcd").unwrap().0, LEGACY_TOKEN_ID);
        assert_eq!(presented("rbt_XYZ_secret"), None);
        assert_eq!(presented("rbt_0123456789abcdef_"), None);
        assert_eq!(presented(""), None);
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
