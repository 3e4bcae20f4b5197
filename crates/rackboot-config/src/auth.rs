//! `[auth]`: the audit log's size, login sessions' lifetime, the login rate limit, and logins
//! from the company's directory (`[auth.ldap]`, see `ldap`) and OpenID provider (`[auth.oidc]`,
//! see `oidc`).

use std::time::Duration;

use serde::Deserialize;

/// Longest session a login may ask for: 7 days.
pub const MAX_SESSION_SECS: u64 = 7 * 24 * 3600;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireAuth {
    pub audit_max_entries: u64,
    pub session_ttl_secs: u64,
    pub login_failures_per_user: u32,
    pub login_failures_per_address: u32,
    pub login_window_secs: u64,
    pub public_metrics: bool,
    pub public_openapi: bool,
    /// Logins from the company's directory (`[auth.ldap]`).
    pub ldap: Option<crate::ldap::WireLdap>,
    /// Logins through the company's OpenID provider (`[auth.oidc]`).
    pub oidc: Option<crate::oidc::WireOidc>,
}

impl Default for WireAuth {
    fn default() -> Self {
        WireAuth {
            audit_max_entries: 100_000,
            session_ttl_secs: 12 * 3600,
            login_failures_per_user: 5,
            login_failures_per_address: 20,
            login_window_secs: 300,
            public_metrics: false,
            public_openapi: false,
            ldap: None,
            oidc: None,
        }
    }
}

/// Validated `[auth]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthConfig {
    /// Audit entries kept; older ones are deleted as new ones arrive.
    pub audit_max_entries: usize,
    /// A login session's lifetime when the login does not ask for one.
    pub session_ttl: Duration,
    /// Failed logins per username within `login_window` before logins for it get 429.
    pub login_failures_per_user: u32,
    /// Failed logins per source address within `login_window` before its logins get 429.
    pub login_failures_per_address: u32,
    /// The rate limit's window; a limited key is free again when the window ends.
    pub login_window: Duration,
    /// `/metrics` without a token (otherwise a viewer's token is needed).
    pub public_metrics: bool,
    /// `/api/v1/openapi.json` without a token (otherwise a viewer's token is needed).
    pub public_openapi: bool,
    /// Logins from the company's directory.
    pub ldap: Option<crate::ldap::LdapConfig>,
    /// Logins through the company's OpenID provider.
    pub oidc: Option<crate::oidc::OidcConfig>,
}

impl TryFrom<WireAuth> for AuthConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireAuth) -> anyhow::Result<Self> {
        let WireAuth {
            audit_max_entries,
            session_ttl_secs,
            login_failures_per_user,
            login_failures_per_address,
            login_window_secs,
            public_metrics,
            public_openapi,
            ldap,
            oidc,
        } = w;
        anyhow::ensure!(
            (100..=10_000_000).contains(&audit_max_entries),
            "auth.audit_max_entries must be 100..=10000000"
        );
        anyhow::ensure!(
            (60..=MAX_SESSION_SECS).contains(&session_ttl_secs),
            "auth.session_ttl_secs must be 60..={MAX_SESSION_SECS} (7 days)"
        );
        anyhow::ensure!((1..=1000).contains(&login_failures_per_user), "auth.login_failures_per_user must be 1..=1000");
        anyhow::ensure!(
            (1..=100_000).contains(&login_failures_per_address),
            "auth.login_failures_per_address must be 1..=100000"
        );
        anyhow::ensure!((1..=86_400).contains(&login_window_secs), "auth.login_window_secs must be 1..=86400");
        Ok(AuthConfig {
            audit_max_entries: audit_max_entries as usize,
            session_ttl: Duration::from_secs(session_ttl_secs),
            login_failures_per_user,
            login_failures_per_address,
            login_window: Duration::from_secs(login_window_secs),
            public_metrics,
            public_openapi,
            ldap: ldap.map(crate::ldap::LdapConfig::try_from).transpose()?,
            oidc: oidc.map(crate::oidc::OidcConfig::try_from).transpose()?,
        })
    }
}
