//! Directory users in the store: where one comes from (its entry) and what the directory last
//! said of them, recorded at a login or a recheck.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::super::store::{decode, encode, USERS};
use super::super::{Cmdb, CmdbError};
use super::{User, MAX_USERS};
use rackboot_model::role::Role;

/// Where a directory user comes from, and what the directory last said of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DirectoryLink {
    /// `ldap` or `oidc`.
    pub kind: String,
    /// The user's entry (LDAP), or their subject at the provider (`sub at iss`, OpenID).
    pub dn: String,
    /// When the directory last confirmed their groups (Unix milliseconds).
    pub checked_ms: u64,
    /// In a group the appliance maps to a role; when not, their tokens stop working until a
    /// login finds them in one again.
    pub mapped: bool,
}

impl Cmdb {
    /// Records what the directory (`kind`: `ldap` or `oidc`) said of user `name` (entry or
    /// subject `dn`) at a login or a recheck: their role (`None`: in no mapped group). A login
    /// (`create`) makes the user if they are new and mapped; a local user of that name is never
    /// turned into a directory one, nor one directory's into another's, nor (OpenID) one
    /// subject's into another's (`Conflict`). Returns the user as stored (`None`: new and
    /// unmapped, not made).
    #[allow(clippy::too_many_arguments)]
    pub async fn directory_user(
        &self,
        kind: &'static str,
        name: String,
        dn: String,
        role: Option<Role>,
        pools: rackboot_model::pools::Grants,
        create: bool,
        now_ms: u64,
    ) -> Result<Option<User>, CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(USERS)?;
            let found: Option<User> = t.get(name.as_str())?.map(|v| decode(v.value())).transpose()?;
            let mapped = role.is_some() || !pools.is_empty();
            let link = DirectoryLink { kind: kind.into(), dn, checked_ms: now_ms, mapped };
            let user = match found {
                Some(u) if u.directory.is_none() => {
                    return Err(CmdbError::Conflict(format!("{name} is a local user, not the directory's")))
                }
                Some(u) if u.directory.as_ref().is_some_and(|d| d.kind != kind) => {
                    return Err(CmdbError::Conflict(format!("{name} is a user of another directory")))
                }
                // A username the provider gives another account now (renamed, reused): not a
                // way into this one's.
                Some(u) if kind == "oidc" && u.directory.as_ref().is_some_and(|d| d.dn != link.dn) => {
                    return Err(CmdbError::Conflict(format!("{name} is another account's at the provider")))
                }
                Some(mut u) => {
                    u.role = role.unwrap_or(Role::Viewer);
                    u.pools = pools;
                    u.directory = Some(link);
                    u.updated_ms = now_ms;
                    u
                }
                None if !create || !mapped => return Ok(None),
                None => {
                    if t.len()? as usize >= MAX_USERS {
                        return Err(CmdbError::Conflict(format!("the CMDB holds {MAX_USERS} users already")));
                    }
                    User {
                        v: rackboot_model::records::SCHEMA_VERSION,
                        name: name.clone(),
                        role: role.unwrap_or(Role::Viewer),
                        password_hash: String::new(),
                        disabled: false,
                        created_ms: now_ms,
                        updated_ms: now_ms,
                        directory: Some(link),
                        pools,
                    }
                }
            };
            t.insert(name.as_str(), encode(&user).as_slice())?;
            Ok(Some(user))
        })
        .await
        .inspect(|_| self.credentials_changed())
    }
}
