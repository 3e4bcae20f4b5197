//! `[auth.oidc]`: logins through the company's OpenID provider (Keycloak, Entra ID, Auth0,
//! Okta, Dex...). The web UI logs in by the authorization code flow with PKCE; a claim of the
//! ID token (groups, roles) maps to a role and pools at each login.

use std::path::PathBuf;
use std::time::Duration;

use rackboot_model::role::Role;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireOidc {
    pub issuer: String,
    pub client_id: String,
    pub client_secret_file: String,
    pub redirect_url: String,
    pub ca_file: String,
    pub scopes: Vec<String>,
    pub username_claim: String,
    pub max_clock_skew_secs: u64,
    pub timeout_secs: u64,
    pub name: String,
    pub claims: Vec<ClaimRole>,
}

impl Default for WireOidc {
    fn default() -> Self {
        WireOidc {
            issuer: String::new(),
            client_id: String::new(),
            client_secret_file: String::new(),
            redirect_url: String::new(),
            ca_file: String::new(),
            scopes: vec!["openid".into(), "profile".into(), "email".into()],
            username_claim: "preferred_username".into(),
            max_clock_skew_secs: 60,
            timeout_secs: 10,
            name: "single sign-on".into(),
            claims: Vec::new(),
        }
    }
}

/// A claim value whose holders get a role: `groups` holding `ops`, say.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRole {
    /// The ID token's claim (a string or a list of strings), e.g. `groups` or `roles`.
    pub claim: String,
    /// The value (or one of the values) it must hold, compared exactly.
    pub value: String,
    pub role: Role,
    /// The resource pool the role is for; none: everywhere. A user whose claims give only
    /// pools is pool-scoped.
    #[serde(default)]
    pub pool: Option<String>,
}

/// Validated `[auth.oidc]`.
#[derive(Debug, Clone, PartialEq)]
pub struct OidcConfig {
    /// `https://...`: the provider's `/.well-known/openid-configuration` is under it.
    pub issuer: String,
    pub client_id: String,
    /// The file holding the client secret (never the config itself); `None`: a public client
    /// (PKCE alone).
    pub client_secret_file: Option<PathBuf>,
    /// This appliance's `https://<host>/ui/oidc/callback`, as registered with the provider.
    pub redirect_url: String,
    /// The provider's CA (PEM), when it is not in the system's bundle.
    pub ca_file: Option<PathBuf>,
    pub scopes: Vec<String>,
    /// The claim the username comes from (`preferred_username`, `email`, `sub`...).
    pub username_claim: String,
    /// How far the provider's clock may be off (the ID token's `iat` and `exp`).
    pub max_clock_skew: Duration,
    pub timeout: Duration,
    /// What the login page's button says ("Log in with ...").
    pub name: String,
    pub claims: Vec<ClaimRole>,
}

impl TryFrom<WireOidc> for OidcConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireOidc) -> anyhow::Result<Self> {
        let https = |what: &str, url: &str| {
            anyhow::ensure!(
                url.starts_with("https://") && url.len() > 8 && !url.contains(['#', ' ', '@']),
                "auth.oidc.{what} must be an https:// URL without user, fragment or spaces, got {url:?}"
            );
            Ok(())
        };
        https("issuer", &w.issuer)?;
        https("redirect_url", &w.redirect_url)?;
        anyhow::ensure!(
            w.redirect_url.ends_with("/ui/oidc/callback"),
            "auth.oidc.redirect_url is this appliance's https://<host>/ui/oidc/callback"
        );
        anyhow::ensure!(
            !w.client_id.is_empty() && w.client_id.len() <= 256,
            "auth.oidc.client_id: the client this appliance is at the provider"
        );
        anyhow::ensure!(w.scopes.iter().any(|s| s == "openid"), "auth.oidc.scopes must include openid");
        anyhow::ensure!(w.scopes.len() <= 16, "auth.oidc.scopes: at most 16");
        anyhow::ensure!(
            w.scopes.iter().all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && b != b'"')),
            "auth.oidc.scopes: a scope is printable ASCII without spaces"
        );
        anyhow::ensure!(!w.username_claim.is_empty(), "auth.oidc.username_claim: the claim the username comes from");
        anyhow::ensure!(w.max_clock_skew_secs <= 300, "auth.oidc.max_clock_skew_secs must be 0..=300");
        anyhow::ensure!((1..=60).contains(&w.timeout_secs), "auth.oidc.timeout_secs must be 1..=60");
        anyhow::ensure!(!w.name.is_empty() && w.name.len() <= 64, "auth.oidc.name: 1-64 characters");
        anyhow::ensure!(!w.claims.is_empty(), "auth.oidc.claims: map at least one claim value to a role");
        anyhow::ensure!(w.claims.len() <= 256, "auth.oidc.claims: at most 256");
        for c in &w.claims {
            anyhow::ensure!(!c.claim.is_empty() && !c.value.is_empty(), "auth.oidc.claims: a claim and its value");
            if let Some(pool) = &c.pool {
                rackboot_model::pools::check(pool).map_err(|e| anyhow::anyhow!("auth.oidc.claims: {e}"))?;
                anyhow::ensure!(
                    c.role != Role::Admin,
                    "auth.oidc.claims: {}: a pool grants viewer or operator",
                    c.value
                );
            }
        }
        Ok(OidcConfig {
            issuer: w.issuer.trim_end_matches('/').to_string(),
            client_id: w.client_id,
            client_secret_file: (!w.client_secret_file.is_empty()).then(|| PathBuf::from(w.client_secret_file)),
            redirect_url: w.redirect_url,
            ca_file: (!w.ca_file.is_empty()).then(|| PathBuf::from(w.ca_file)),
            scopes: w.scopes,
            username_claim: w.username_claim,
            max_clock_skew: Duration::from_secs(w.max_clock_skew_secs),
            timeout: Duration::from_secs(w.timeout_secs),
            name: w.name,
            claims: w.claims,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<OidcConfig> {
        OidcConfig::try_from(toml::from_str::<WireOidc>(text)?)
    }

    const BASE: &str = "client_id = \"rackboot\"\nredirect_url = \"https://rb.example/ui/oidc/callback\"\n\
        claims = [{ claim = \"groups\", value = \"ops\", role = \"operator\" }]\n";

    #[test]
    fn https_a_callback_here_and_claims_that_map() {
        let ok = parse(&format!("issuer = \"https://idp.example/realms/x/\"\n{BASE}")).unwrap();
        assert_eq!(ok.issuer, "https://idp.example/realms/x", "the trailing slash goes");
        assert_eq!((ok.max_clock_skew, ok.client_secret_file), (Duration::from_secs(60), None));
        let cases = [
            ("issuer = \"http://idp.example\"", "https://"),
            ("issuer = \"https://u:p@idp.example\"", "https://"),
            ("issuer = \"https://idp\"\nscopes = [\"profile\"]", "openid"),
            ("issuer = \"https://idp\"\nmax_clock_skew_secs = 3600", "max_clock_skew_secs"),
        ];
        for (text, why) in cases {
            let e = parse(&format!("{text}\n{BASE}")).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
        let wrong_callback = BASE.replace("/ui/oidc/callback", "/cb");
        let e = parse(&format!("issuer = \"https://idp\"\n{wrong_callback}")).unwrap_err().to_string();
        assert!(e.contains("/ui/oidc/callback"), "{e}");
        let admin_pool = BASE.replace("role = \"operator\"", "role = \"admin\", pool = \"team-a\"");
        let e = parse(&format!("issuer = \"https://idp\"\n{admin_pool}")).unwrap_err().to_string();
        assert!(e.contains("viewer or operator"), "{e}");
        let none = "client_id = \"rackboot\"\nredirect_url = \"https://rb/ui/oidc/callback\"\n";
        let e = parse(&format!("issuer = \"https://idp\"\n{none}")).unwrap_err().to_string();
        assert!(e.contains("map at least one"), "{e}");
    }
}
