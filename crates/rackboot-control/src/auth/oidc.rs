//! Logins through the company's OpenID provider (`[auth.oidc]`, the `openidconnect` crate): the
//! authorization code flow with PKCE. [`Provider::begin`] makes a login's state, nonce and PKCE
//! verifier, keeps them here (one use, ten minutes, bound to the browser that began it) and
//! names the provider's authorization URL; [`Provider::finish`] takes them back by the state the
//! provider returns, exchanges the code (with the verifier and the client secret), and checks the
//! ID token: signed by a key of the issuer's JWKS with an asymmetric algorithm, for this client,
//! from this issuer, with this login's nonce, not expired and issued within the allowed clock
//! skew. Its claims map to a role and pools as `[[auth.oidc.claims]]` say.
//!
//! The provider is reached over HTTPS only (the system's CAs, or `ca_file`), without following
//! redirects, each exchange under `timeout_secs`, an answer read to 1 MiB at most (`oidc_http`). Its metadata
//! and keys are read at the first login and again after [`META_FOR`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreJwsSigningAlgorithm, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope, TokenResponse,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::Value;

use super::ldap::Access;
use crate::config::OidcConfig;

/// Logins begun and not finished, kept at most (a flood of begun logins is refused past it).
pub const MAX_PENDING: usize = 4096;
/// Logins begun and not finished from one address, at most: one address cannot take them all.
pub const MAX_PENDING_PER_PEER: usize = 32;
/// How long a begun login may take at the provider.
pub const PENDING_FOR: Duration = Duration::from_secs(600);
/// How long the provider's metadata and keys are used before they are read again.
pub const META_FOR: Duration = Duration::from_secs(900);
/// The oldest ID token taken (its `iat`), besides the clock skew: it comes from a login now.
const MAX_TOKEN_AGE: i64 = 600;
/// Where the system's CAs are.
const SYSTEM_CAS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Why a login through the provider failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    /// The provider did not answer, or not in time, or not as OpenID Connect says.
    #[error("the OpenID provider did not answer: {0}")]
    Unreachable(String),
    /// What came back is not a login of this appliance's (an unknown or used state, another
    /// browser's, a refused code, an ID token that does not verify).
    #[error("the login was refused: {0}")]
    Refused(String),
    /// Too many logins are in progress.
    #[error("too many logins are in progress; try again in a minute")]
    Busy,
}

/// A login begun: where to send the browser, and the state it must bring back.
#[derive(Debug, Clone)]
pub struct Begun {
    pub url: String,
    pub state: String,
}

/// Who logged in, as the provider says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// From `username_claim`, lowercase.
    pub username: String,
    /// `sub` at `iss`: who they are at the provider, whatever their username.
    pub subject: String,
    pub access: Access,
}

/// A begun login's secrets, kept here until the provider sends the browser back.
struct Pending {
    nonce: Nonce,
    verifier: PkceCodeVerifier,
    /// A hash of the browser's login cookie: only the browser that began the login finishes it.
    browser: String,
    /// Where the browser goes once logged in.
    next: String,
    /// The address that began it.
    peer: std::net::IpAddr,
    born: Instant,
}

/// The company's OpenID provider.
pub struct Provider {
    pub cfg: OidcConfig,
    secret: Option<String>,
    tls: tokio_rustls::TlsConnector,
    meta: tokio::sync::Mutex<Option<(CoreProviderMetadata, Instant)>>,
    pending: Mutex<HashMap<String, Pending>>,
    /// The CLI's device logins (`oidc_device`).
    pub(super) devices: Mutex<super::oidc_device::DeviceLogins>,
}

impl Provider {
    /// The provider of `cfg`, its client secret read and its CA loaded (an unreadable one is an
    /// error); nothing is asked of the provider yet.
    pub fn new(cfg: OidcConfig) -> anyhow::Result<Provider> {
        let secret = match &cfg.client_secret_file {
            Some(f) => {
                let s = std::fs::read_to_string(f)
                    .map_err(|e| anyhow::anyhow!("reading auth.oidc.client_secret_file {}: {e}", f.display()))?;
                let s = s.trim().to_string();
                anyhow::ensure!(!s.is_empty(), "auth.oidc.client_secret_file {} is empty", f.display());
                Some(s)
            }
            None => None,
        };
        let ca = cfg.ca_file.clone().unwrap_or_else(|| SYSTEM_CAS.into());
        let pem = std::fs::read(&ca).map_err(|e| anyhow::anyhow!("reading the provider's CA {}: {e}", ca.display()))?;
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok));
        anyhow::ensure!(!roots.is_empty(), "no CA certificate in {}", ca.display());
        let config = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Provider {
            cfg,
            secret,
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            meta: tokio::sync::Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            devices: Mutex::new(HashMap::new()),
        })
    }

    /// Begins a login for the browser whose login cookie hashes to `browser`, from `peer`, to
    /// land on `next`.
    pub async fn begin(&self, browser: &str, next: &str, peer: std::net::IpAddr) -> Result<Begun, OidcError> {
        let client = self.client().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut req =
            client.authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random);
        for s in self.cfg.scopes.iter().filter(|s| *s != "openid") {
            req = req.add_scope(Scope::new(s.clone()));
        }
        let (url, state, nonce) = req.set_pkce_challenge(challenge).url();
        let mut pending = self.pending.lock().expect("pending logins");
        pending.retain(|_, p| p.born.elapsed() < PENDING_FOR);
        if pending.len() >= MAX_PENDING || pending.values().filter(|p| p.peer == peer).count() >= MAX_PENDING_PER_PEER {
            return Err(OidcError::Busy);
        }
        let (browser, next) = (browser.to_string(), next.to_string());
        let p = Pending { nonce, verifier, browser, next, peer, born: Instant::now() };
        pending.insert(state.secret().clone(), p);
        Ok(Begun { url: url.to_string(), state: state.secret().clone() })
    }

    /// Finishes the login whose `state` the provider sent back with `code`, in the browser whose
    /// login cookie hashes to `browser`: who logged in, and where they were going. The state is
    /// used up whatever happens.
    pub async fn finish(&self, state: &str, code: &str, browser: &str) -> Result<(Identity, String), OidcError> {
        let p = self.pending.lock().expect("pending logins").remove(state);
        let p = p.ok_or_else(|| OidcError::Refused("no login of this browser is waiting for that state".into()))?;
        if p.born.elapsed() >= PENDING_FOR {
            return Err(OidcError::Refused("the login took longer than 10 minutes: begin again".into()));
        }
        if !super::same(&p.browser, browser) {
            return Err(OidcError::Refused("the login was begun in another browser".into()));
        }
        let client = self.client().await?;
        let http = self.http();
        let exchange = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| OidcError::Unreachable(e.to_string()))?
            .set_pkce_verifier(p.verifier);
        let answer = exchange.request_async(&http).await.map_err(|e| OidcError::Refused(format!("the code: {e}")))?;
        let token = answer.id_token().ok_or_else(|| OidcError::Refused("the provider sent no ID token".into()))?;
        let verifier = self.verifier(&client);
        let claims = token.claims(&verifier, &p.nonce).map_err(|e| OidcError::Refused(format!("the ID token: {e}")))?;
        let subject = format!("{} at {}", claims.subject().as_str(), claims.issuer().as_str());
        // The token's signature is checked: its payload is read as the provider wrote it, for
        // the claims OpenID Connect does not name (groups, roles).
        let raw = payload(&token.to_string())?;
        let username = self.username(&raw)?;
        Ok((Identity { username, subject, access: self.access(&raw) }, p.next))
    }

    /// How an ID token of `client`'s is checked: the issuer's keys with an asymmetric
    /// algorithm, this client, this issuer, expiry and issue time within the clock skew.
    pub(super) fn verifier<'a>(&self, client: &'a Client) -> openidconnect::core::CoreIdTokenVerifier<'a> {
        let skew = chrono::Duration::from_std(self.cfg.max_clock_skew).unwrap_or_default();
        client
            .id_token_verifier()
            .set_allowed_algs(ASYMMETRIC)
            // Expired only once past `exp` by more than the skew.
            .set_time_fn(move || chrono::Utc::now() - skew)
            .set_issue_time_verifier_fn(move |iat| {
                let now = chrono::Utc::now();
                if iat > now + skew {
                    Err(format!("issued in the future ({iat})"))
                } else if iat < now - skew - chrono::Duration::seconds(MAX_TOKEN_AGE) {
                    Err(format!("issued too long ago ({iat})"))
                } else {
                    Ok(())
                }
            })
    }

    /// The client secret, for a confidential client.
    pub(super) fn secret(&self) -> Option<&str> {
        self.secret.as_deref()
    }

    /// One exchange with the provider (see `oidc_http::fetch`).
    pub(super) async fn send(&self, req: openidconnect::HttpRequest) -> Result<openidconnect::HttpResponse, OidcError> {
        super::oidc_http::fetch(&self.tls, self.cfg.timeout, req).await.map_err(|e| OidcError::Unreachable(e.0))
    }

    /// The username from `username_claim`, lowercase, as rackboot allows usernames.
    pub(super) fn username(&self, claims: &Value) -> Result<String, OidcError> {
        let claim = &self.cfg.username_claim;
        let raw = claims[claim.as_str()]
            .as_str()
            .ok_or_else(|| OidcError::Refused(format!("the ID token has no {claim}")))?;
        let name = raw.to_lowercase();
        if !super::valid_username(&name) {
            return Err(OidcError::Refused(format!(
                "{claim} {raw:?} is not a rackboot username (1-64 of a-z 0-9 . _ -): set auth.oidc.username_claim"
            )));
        }
        Ok(name)
    }

    /// What the token's claims map to: the highest global role, else roles per pool.
    pub fn access(&self, claims: &Value) -> Access {
        let holds = |claim: &str, value: &str| match &claims[claim] {
            Value::String(s) => s == value,
            Value::Array(a) => a.iter().any(|v| v.as_str() == Some(value)),
            _ => false,
        };
        Access::of(self.cfg.claims.iter().filter(|c| holds(&c.claim, &c.value)).map(|c| (c.role, c.pool.as_ref())))
    }

    fn http(&self) -> super::oidc_http::Http {
        super::oidc_http::Http { tls: self.tls.clone(), timeout: self.cfg.timeout }
    }

    /// The client, from the provider's metadata (read when missing or older than [`META_FOR`]).
    pub(super) async fn client(&self) -> Result<Client, OidcError> {
        let mut meta = self.meta.lock().await;
        let fresh = meta.as_ref().is_some_and(|(_, at)| at.elapsed() < META_FOR);
        if !fresh {
            let issuer = IssuerUrl::new(self.cfg.issuer.clone()).map_err(|e| OidcError::Unreachable(e.to_string()))?;
            let http = self.http();
            let found = CoreProviderMetadata::discover_async(issuer, &http)
                .await
                .map_err(|e| OidcError::Unreachable(format!("discovery at {}: {e}", self.cfg.issuer)))?;
            *meta = Some((found, Instant::now()));
        }
        let (found, _) = meta.clone().expect("read above");
        let redirect =
            RedirectUrl::new(self.cfg.redirect_url.clone()).map_err(|e| OidcError::Unreachable(e.to_string()))?;
        let secret = self.secret.clone().map(ClientSecret::new);
        let client = CoreClient::from_provider_metadata(found, ClientId::new(self.cfg.client_id.clone()), secret)
            .set_redirect_uri(redirect);
        Ok(client)
    }
}

/// The client as discovery leaves it: the token endpoint may or may not be named.
pub(super) type Client = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// Signature algorithms taken: asymmetric ones only (never `none`, never an HMAC keyed with the
/// client secret).
const ASYMMETRIC: [CoreJwsSigningAlgorithm; 9] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// The claims of a compact JWT whose signature was checked.
pub(super) fn payload(jwt: &str) -> Result<Value, OidcError> {
    let part = jwt.split('.').nth(1).ok_or_else(|| OidcError::Refused("the ID token is not a JWT".into()))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|e| OidcError::Refused(format!("the ID token's claims: {e}")))?;
    serde_json::from_slice(&bytes).map_err(|e| OidcError::Refused(format!("the ID token's claims: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_map_to_the_highest_role_and_pools() {
        let wire: crate::config::WireOidc = toml::from_str(
            r#"issuer = "https://idp"
client_id = "rb"
redirect_url = "https://rb/ui/oidc/callback"
claims = [
  { claim = "groups", value = "ops", role = "operator" },
  { claim = "groups", value = "admins", role = "admin" },
  { claim = "roles", value = "team-a", role = "operator", pool = "team-a" },
  { claim = "roles", value = "team-b-ro", role = "viewer", pool = "team-b" },
]"#,
        )
        .unwrap();
        let cfg = OidcConfig::try_from(wire).unwrap();
        let p = Provider {
            cfg,
            secret: None,
            tls: tokio_rustls::TlsConnector::from(Arc::new(
                rustls::ClientConfig::builder_with_provider(crate::tls::provider())
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth(),
            )),
            meta: tokio::sync::Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            devices: Mutex::new(HashMap::new()),
        };
        let a = p.access(&serde_json::json!({"groups": ["ops", "admins"], "roles": "team-a"}));
        assert_eq!((a.role, a.pools.len()), (Some(crate::auth::Role::Admin), 0), "a global role covers every pool");
        let a = p.access(&serde_json::json!({"roles": ["team-a", "team-b-ro"]}));
        assert_eq!(a.role, None);
        assert_eq!(a.pools.get("team-a"), Some(&crate::auth::Role::Operator));
        assert_eq!(a.pools.get("team-b"), Some(&crate::auth::Role::Viewer));
        assert!(p.access(&serde_json::json!({"groups": "nobody", "roles": 7})).none());
        assert!(p.username(&serde_json::json!({"preferred_username": "Alice"})).is_ok_and(|u| u == "alice"));
        assert!(p.username(&serde_json::json!({"preferred_username": "a b"})).is_err());
        assert!(p.username(&serde_json::json!({"sub": "x"})).is_err());
    }

    #[test]
    fn the_payload_of_a_compact_jwt() {
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"groups":["ops"]}"#);
        assert_eq!(payload(&format!("e30.{claims}.sig")).unwrap()["groups"][0], "ops");
        assert!(payload("nodots").is_err());
    }
}
