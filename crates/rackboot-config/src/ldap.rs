//! `[auth.ldap]`: logins from the company's directory. A login binds to the directory as the
//! user (their DN from a pattern, or found by a search), their groups map to a role, and the
//! groups are read again every `recheck_secs` while they use the appliance. TLS (LDAPS or
//! StartTLS) with the directory's CA; plain LDAP only when the config says so.

use std::path::PathBuf;
use std::time::Duration;

use rackboot_model::role::Role;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireLdap {
    pub url: String,
    pub starttls: bool,
    pub allow_plaintext: bool,
    pub ca_file: String,
    pub user_dn: String,
    pub search_base: String,
    pub search_filter: String,
    pub bind_dn: String,
    pub bind_password_file: String,
    pub group_base: String,
    pub group_filter: String,
    pub recheck_secs: u64,
    pub timeout_secs: u64,
    pub groups: Vec<GroupRole>,
}

impl Default for WireLdap {
    fn default() -> Self {
        WireLdap {
            url: String::new(),
            starttls: false,
            allow_plaintext: false,
            ca_file: String::new(),
            user_dn: String::new(),
            search_base: String::new(),
            search_filter: "(uid={user})".into(),
            bind_dn: String::new(),
            bind_password_file: String::new(),
            group_base: String::new(),
            group_filter: "(|(member={dn})(uniqueMember={dn}))".into(),
            recheck_secs: 300,
            timeout_secs: 5,
            groups: Vec::new(),
        }
    }
}

/// A directory group whose members get a role.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupRole {
    /// The group's DN, as the directory writes it (compared case-insensitively).
    pub group: String,
    pub role: Role,
    /// The resource pool the role is for; none: everywhere. A user whose groups name only
    /// pools is pool-scoped.
    #[serde(default)]
    pub pool: Option<String>,
}

/// How the connection to the directory is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LdapSecurity {
    /// `ldaps://`: TLS from the first byte.
    Ldaps,
    /// `ldap://` upgraded by StartTLS before anything is sent.
    StartTls,
    /// `ldap://` in the clear (`allow_plaintext = true`): passwords cross the network readable.
    Plain,
}

/// Validated `[auth.ldap]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LdapConfig {
    pub url: String,
    pub security: LdapSecurity,
    /// The directory's CA (PEM); `None` only in the clear.
    pub ca_file: Option<PathBuf>,
    /// A user's DN from their name (`{user}`), or `None`: found by `search_filter` under
    /// `search_base`.
    pub user_dn: Option<String>,
    pub search_base: String,
    pub search_filter: String,
    /// The account rackboot searches and re-reads groups as (`None`: anonymously), and the file
    /// holding its password.
    pub bind_dn: Option<String>,
    pub bind_password_file: Option<PathBuf>,
    pub group_base: String,
    /// Which groups a user is in: `{dn}` is their DN, `{user}` their name.
    pub group_filter: String,
    pub recheck: Duration,
    pub timeout: Duration,
    pub groups: Vec<GroupRole>,
}

impl TryFrom<WireLdap> for LdapConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireLdap) -> anyhow::Result<Self> {
        let security = match (w.url.split_once("://").map(|(s, _)| s), w.starttls, w.allow_plaintext) {
            (Some("ldaps"), false, _) => LdapSecurity::Ldaps,
            (Some("ldaps"), true, _) => anyhow::bail!("auth.ldap.starttls is for ldap:// URLs; ldaps:// is TLS already"),
            (Some("ldap"), true, _) => LdapSecurity::StartTls,
            (Some("ldap"), false, true) => LdapSecurity::Plain,
            (Some("ldap"), false, false) => anyhow::bail!(
                "auth.ldap.url is plain ldap://: set starttls = true, use ldaps://, or say allow_plaintext = true (passwords would cross the network readable)"
            ),
            _ => anyhow::bail!("auth.ldap.url must be ldaps://host[:port] or ldap://host[:port], got {:?}", w.url),
        };
        let host = w.url.split_once("://").map_or("", |(_, h)| h);
        anyhow::ensure!(
            !host.is_empty() && !host.contains('/') && !host.contains('@'),
            "auth.ldap.url: scheme, host and port only, got {:?}",
            w.url
        );
        let ca_file = (!w.ca_file.is_empty()).then(|| PathBuf::from(&w.ca_file));
        anyhow::ensure!(
            ca_file.is_some() || security == LdapSecurity::Plain,
            "auth.ldap.ca_file: the directory's CA certificate (PEM) is needed for TLS"
        );
        let user_dn = (!w.user_dn.is_empty()).then(|| w.user_dn.clone());
        match (&user_dn, w.search_base.is_empty()) {
            (Some(p), true) => anyhow::ensure!(p.contains("{user}"), "auth.ldap.user_dn must contain {{user}}"),
            (None, false) => {
                anyhow::ensure!(w.search_filter.contains("{user}"), "auth.ldap.search_filter must contain {{user}}")
            }
            _ => anyhow::bail!("auth.ldap: give user_dn (a pattern with {{user}}) or search_base, one of them"),
        }
        anyhow::ensure!(
            w.bind_dn.is_empty() == w.bind_password_file.is_empty(),
            "auth.ldap.bind_dn and auth.ldap.bind_password_file go together"
        );
        anyhow::ensure!(!w.group_base.is_empty(), "auth.ldap.group_base: where the groups are");
        anyhow::ensure!(
            w.group_filter.contains("{dn}") || w.group_filter.contains("{user}"),
            "auth.ldap.group_filter must contain {{dn}} or {{user}}"
        );
        anyhow::ensure!(!w.groups.is_empty(), "auth.ldap.groups: map at least one group to a role");
        anyhow::ensure!(w.groups.len() <= 256, "auth.ldap.groups: at most 256");
        anyhow::ensure!(w.groups.iter().all(|g| !g.group.trim().is_empty()), "auth.ldap.groups: a group needs its DN");
        for g in &w.groups {
            if let Some(pool) = &g.pool {
                rackboot_model::pools::check(pool).map_err(|e| anyhow::anyhow!("auth.ldap.groups: {e}"))?;
                anyhow::ensure!(
                    g.role != Role::Admin,
                    "auth.ldap.groups: {}: a pool grants viewer or operator",
                    g.group
                );
            }
        }
        anyhow::ensure!((1..=86_400).contains(&w.recheck_secs), "auth.ldap.recheck_secs must be 1..=86400");
        anyhow::ensure!((1..=60).contains(&w.timeout_secs), "auth.ldap.timeout_secs must be 1..=60");
        Ok(LdapConfig {
            url: w.url,
            security,
            ca_file,
            user_dn,
            search_base: w.search_base,
            search_filter: w.search_filter,
            bind_dn: (!w.bind_dn.is_empty()).then_some(w.bind_dn),
            bind_password_file: (!w.bind_password_file.is_empty()).then(|| PathBuf::from(w.bind_password_file)),
            group_base: w.group_base,
            group_filter: w.group_filter,
            recheck: Duration::from_secs(w.recheck_secs),
            timeout: Duration::from_secs(w.timeout_secs),
            groups: w.groups,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<LdapConfig> {
        LdapConfig::try_from(toml::from_str::<WireLdap>(text)?)
    }

    const GROUPS: &str =
        "group_base = \"ou=groups,dc=x\"\ngroups = [{ group = \"cn=ops,ou=groups,dc=x\", role = \"operator\" }]\n";

    #[test]
    fn tls_unless_said_and_one_way_to_find_a_user() {
        let ok = parse(&format!(
            "url = \"ldaps://ldap:636\"\nca_file = \"/ca.pem\"\nuser_dn = \"uid={{user}},dc=x\"\n{GROUPS}"
        ))
        .unwrap();
        assert_eq!((ok.security, ok.recheck), (LdapSecurity::Ldaps, Duration::from_secs(300)));
        let start = parse(&format!(
            "url = \"ldap://ldap\"\nstarttls = true\nca_file = \"/ca.pem\"\nsearch_base = \"dc=x\"\n{GROUPS}"
        ))
        .unwrap();
        assert_eq!(start.security, LdapSecurity::StartTls);
        let cases = [
            ("url = \"ldap://ldap\"\nca_file = \"/c\"\nuser_dn = \"uid={user}\"", "allow_plaintext"),
            ("url = \"ldaps://ldap\"\nuser_dn = \"uid={user}\"", "ca_file"),
            ("url = \"http://ldap\"\nca_file = \"/c\"\nuser_dn = \"uid={user}\"", "ldaps://host"),
            ("url = \"ldaps://ldap/dc=x\"\nca_file = \"/c\"\nuser_dn = \"uid={user}\"", "host and port only"),
            ("url = \"ldaps://ldap\"\nca_file = \"/c\"\nuser_dn = \"uid=x\"", "must contain {user}"),
            ("url = \"ldaps://ldap\"\nca_file = \"/c\"", "one of them"),
            ("url = \"ldaps://ldap\"\nca_file = \"/c\"\nuser_dn = \"uid={user}\"\nbind_dn = \"cn=r\"", "go together"),
        ];
        for (text, why) in cases {
            let e = parse(&format!("{text}\n{GROUPS}")).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
        let plain =
            parse(&format!("url = \"ldap://ldap\"\nallow_plaintext = true\nuser_dn = \"uid={{user}}\"\n{GROUPS}"));
        assert_eq!(plain.unwrap().security, LdapSecurity::Plain, "said explicitly");
        let e = parse("url = \"ldaps://ldap\"\nca_file = \"/c\"\nuser_dn = \"uid={user}\"\ngroup_base = \"dc=x\"\n");
        assert!(e.unwrap_err().to_string().contains("map at least one group"));
        let e = parse(&format!(
            "url = \"ldaps://ldap\"\nca_file = \"/c\"\nuser_dn = \"uid={{user}}\"\n{}",
            GROUPS.replace("operator", "root")
        ));
        assert!(e.is_err(), "an unknown role");
        let pooled = |role: &str| {
            parse(&format!(
                "url = \"ldaps://ldap\"\nca_file = \"/c\"\nuser_dn = \"uid={{user}}\"\ngroup_base = \"dc=x\"\n\
                 groups = [{{ group = \"cn=a,dc=x\", role = \"{role}\", pool = \"team-a\" }}]\n"
            ))
        };
        assert_eq!(pooled("operator").unwrap().groups[0].pool.as_deref(), Some("team-a"));
        assert!(pooled("admin").unwrap_err().to_string().contains("viewer or operator"), "admin is global");
    }
}
