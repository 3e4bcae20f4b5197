//! Logins from the company's directory over LDAP (`[auth.ldap]`, the `ldap3` client): a login
//! binds as the user (their DN from the configured pattern, or found by a search as the
//! service account), reads the groups they are in and maps them to a role (the highest of the
//! mapped groups'); a recheck reads them again as the service account. Every exchange runs
//! under `timeout_secs` over LDAPS or StartTLS checked against the directory's CA; a directory
//! that does not answer refuses, it never lets anyone in.
//!
//! A username reaches the directory escaped (RFC 4515 in filters, RFC 4514 in a DN) and only
//! in the shape rackboot allows usernames; an empty password is refused before any bind (an
//! LDAP bind without a password is an anonymous one, which a directory accepts).

use std::sync::Arc;

use ldap3::{dn_escape, ldap_escape, Ldap, LdapConnAsync, LdapConnSettings, Scope, SearchEntry, SearchOptions};

use crate::config::{LdapConfig, LdapSecurity};
use rackboot_model::role::Role;

/// Groups of one user read at most (a larger answer is refused, not cut).
const MAX_GROUPS: i32 = 1000;
/// LDAP's result code for a wrong DN or password.
const INVALID_CREDENTIALS: u32 = 49;
/// LDAP's result code for an entry that is not there.
const NO_SUCH_OBJECT: u32 = 32;

/// Why the directory did not let a user in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectoryError {
    /// No such user, or a wrong password (the two are not told apart).
    #[error("wrong username or password")]
    Refused,
    /// The directory did not answer, or not in time: nobody from it gets in meanwhile.
    #[error("the directory did not answer: {0}")]
    Unreachable(String),
    /// The directory answered with an error (a search refused, too many groups, ...).
    #[error("the directory refused a lookup: {0}")]
    Failed(String),
}

/// A user as the directory knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub dn: String,
    /// What their groups map to.
    pub access: Access,
}

/// What a directory user's groups map to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// The highest global role (of the groups that name no pool).
    pub role: Option<Role>,
    /// Roles per pool, when no group gives a global role (a pool-scoped user).
    pub pools: rackboot_model::pools::Grants,
}

impl Access {
    /// In no group the appliance maps.
    pub fn none(&self) -> bool {
        self.role.is_none() && self.pools.is_empty()
    }

    /// What mapped grants (a role, everywhere or in a pool) give together: the highest global
    /// role, else the highest role per pool (a global role covers every pool).
    pub fn of<'a>(grants: impl IntoIterator<Item = (Role, Option<&'a String>)>) -> Access {
        let mut access = Access::default();
        for (role, pool) in grants {
            match pool {
                None => access.role = access.role.max(Some(role)),
                Some(pool) => {
                    let r = access.pools.entry(pool.clone()).or_insert(role);
                    *r = (*r).max(role);
                }
            }
        }
        if access.role.is_some() {
            access.pools.clear();
        }
        access
    }
}

/// The company's directory.
pub struct Directory {
    cfg: LdapConfig,
    tls: Option<Arc<rustls::ClientConfig>>,
    bind_password: Option<String>,
    /// One recheck at a time (a burst of a user's requests asks the directory once).
    pub rechecks: tokio::sync::Mutex<()>,
}

impl Directory {
    /// Reads the CA and the service account's password file now, so a bad one stops the start.
    pub fn new(cfg: LdapConfig) -> anyhow::Result<Directory> {
        use anyhow::Context;
        let tls = match &cfg.ca_file {
            Some(path) => {
                let pem = std::fs::read(path).with_context(|| format!("auth.ldap.ca_file {}", path.display()))?;
                Some(Arc::new(rackboot_base::tls::client_config(&pem).context("auth.ldap.ca_file")?))
            }
            None => None,
        };
        let bind_password = match &cfg.bind_password_file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("auth.ldap.bind_password_file {}", path.display()))?;
                Some(text.trim_end_matches(['\r', '\n']).to_string())
            }
            None => None,
        };
        Ok(Directory { cfg, tls, bind_password, rechecks: tokio::sync::Mutex::new(()) })
    }

    /// How long a directory user's groups hold before they are read again.
    pub fn recheck_after(&self) -> std::time::Duration {
        self.cfg.recheck
    }

    /// Checks `user`'s password by binding as them, and reads their groups.
    pub async fn login(&self, user: &str, password: &str) -> Result<Found, DirectoryError> {
        if password.is_empty() || !crate::auth::valid_username(user) {
            return Err(DirectoryError::Refused);
        }
        self.bounded(async {
            let mut ldap = self.connect().await?;
            let dn = match &self.cfg.user_dn {
                Some(pattern) => pattern.replace("{user}", &dn_escape(user)),
                None => {
                    self.service_bind(&mut ldap).await?;
                    self.find_user(&mut ldap, user).await?.ok_or(DirectoryError::Refused)?
                }
            };
            let bound = ldap.simple_bind(&dn, password).await.map_err(lost)?;
            match bound.rc {
                0 => {}
                INVALID_CREDENTIALS => return Err(DirectoryError::Refused),
                _ => return Err(DirectoryError::Failed(bound.to_string())),
            }
            // The groups as the service account where there is one (users may not read them).
            if self.cfg.bind_dn.is_some() {
                self.service_bind(&mut ldap).await?;
            }
            let access = self.access(&mut ldap, &dn, user).await?;
            let _ = ldap.unbind().await;
            Ok(Found { dn, access })
        })
        .await
    }

    /// Reads again, as the service account, whether `dn` is still there and what its groups
    /// map to (nothing: gone, or in no mapped group).
    pub async fn recheck(&self, user: &str, dn: &str) -> Result<Access, DirectoryError> {
        self.bounded(async {
            let mut ldap = self.connect().await?;
            self.service_bind(&mut ldap).await?;
            let entry = ldap.search(dn, Scope::Base, "(objectClass=*)", vec!["1.1"]).await.map_err(lost)?;
            match entry.1.rc {
                0 if !entry.0.is_empty() => {}
                0 | NO_SUCH_OBJECT => return Ok(Access::default()),
                _ => return Err(DirectoryError::Failed(entry.1.to_string())),
            }
            let access = self.access(&mut ldap, dn, user).await?;
            let _ = ldap.unbind().await;
            Ok(access)
        })
        .await
    }

    async fn bounded<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, DirectoryError>>,
    ) -> Result<T, DirectoryError> {
        tokio::time::timeout(self.cfg.timeout, work)
            .await
            .map_err(|_| DirectoryError::Unreachable(format!("no answer within {} s", self.cfg.timeout.as_secs())))?
    }

    async fn connect(&self) -> Result<Ldap, DirectoryError> {
        let mut settings = LdapConnSettings::new()
            .set_conn_timeout(self.cfg.timeout)
            .set_starttls(self.cfg.security == LdapSecurity::StartTls);
        if let Some(tls) = &self.tls {
            settings = settings.set_config(tls.clone());
        }
        let (conn, ldap) = LdapConnAsync::with_settings(settings, &self.cfg.url)
            .await
            .map_err(|e| DirectoryError::Unreachable(e.to_string()))?;
        ldap3::drive!(conn);
        Ok(ldap)
    }

    /// Binds as the service account (or stays anonymous without one).
    async fn service_bind(&self, ldap: &mut Ldap) -> Result<(), DirectoryError> {
        let (Some(dn), Some(password)) = (&self.cfg.bind_dn, &self.bind_password) else { return Ok(()) };
        let r = ldap.simple_bind(dn, password).await.map_err(lost)?;
        match r.rc {
            0 => Ok(()),
            _ => Err(DirectoryError::Failed(format!("the service account's bind: {r}"))),
        }
    }

    /// The one entry `search_filter` finds for `user` (none, or more than one: `None`).
    async fn find_user(&self, ldap: &mut Ldap, user: &str) -> Result<Option<String>, DirectoryError> {
        let filter = self.cfg.search_filter.replace("{user}", &ldap_escape(user));
        let r = ldap
            .with_search_options(SearchOptions::new().sizelimit(2))
            .search(&self.cfg.search_base, Scope::Subtree, &filter, vec!["1.1"])
            .await
            .map_err(lost)?;
        match (r.1.rc, r.0.len()) {
            (0, 1) => Ok(r.0.into_iter().next().map(|e| SearchEntry::construct(e).dn)),
            // Two entries for one name (or none) let nobody in under it.
            (0 | 4, _) => Ok(None),
            _ => Err(DirectoryError::Failed(r.1.to_string())),
        }
    }

    /// What the mapped groups `dn` is in give: the highest global role, else roles per pool.
    async fn access(&self, ldap: &mut Ldap, dn: &str, user: &str) -> Result<Access, DirectoryError> {
        let filter = self.cfg.group_filter.replace("{dn}", &ldap_escape(dn)).replace("{user}", &ldap_escape(user));
        let r = ldap
            .with_search_options(SearchOptions::new().sizelimit(MAX_GROUPS))
            .search(&self.cfg.group_base, Scope::Subtree, &filter, vec!["1.1"])
            .await
            .map_err(lost)?;
        if r.1.rc != 0 {
            return Err(DirectoryError::Failed(r.1.to_string()));
        }
        let groups: Vec<String> = r.0.into_iter().map(|e| normal_dn(&SearchEntry::construct(e).dn)).collect();
        let mapped = self.cfg.groups.iter().filter(|g| groups.contains(&normal_dn(&g.group)));
        Ok(Access::of(mapped.map(|g| (g.role, g.pool.as_ref()))))
    }
}

/// A connection lost mid-exchange.
fn lost(e: ldap3::LdapError) -> DirectoryError {
    DirectoryError::Unreachable(e.to_string())
}

/// A DN as compared: lowercase, no spaces around `,` and `=`.
fn normal_dn(dn: &str) -> String {
    dn.split(',')
        .map(|rdn| rdn.split('=').map(str::trim).collect::<Vec<_>>().join("="))
        .collect::<Vec<_>>()
        .join(",")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_compare_without_case_or_spaces() {
        assert_eq!(normal_dn("CN=Rack Admins, OU=Groups,dc=Example"), "cn=rack admins,ou=groups,dc=example");
        assert_eq!(normal_dn("cn = x ,dc=y"), "cn=x,dc=y");
    }

    #[test]
    fn a_username_is_escaped_wherever_it_goes() {
        assert_eq!(ldap_escape("*)(uid=*"), "\\2a\\29\\28uid=\\2a");
        assert_eq!(dn_escape("a,b=c"), "a\\2cb\\3dc");
    }
}
