//! Users and their API tokens in redb: a user's password is an argon2id PHC string, a token is
//! stored as the SHA-256 of its secret; neither ever leaves this module in a view. Checks that
//! span records (the last admin, a token's role under its user's, caps) run in the write's
//! transaction.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

mod directory;

pub use directory::DirectoryLink;

use super::store::{decode, encode, scan, META, TOKENS, USERS};
use super::{Cmdb, CmdbError};
use rackboot_base::secret::same_str as same;
use rackboot_model::role::Role;

/// API tokens (not sessions) one user may hold.
pub const MAX_TOKENS_PER_USER: usize = 100;
/// Live login sessions one user may hold; a new login past this ends the oldest.
pub const MAX_SESSIONS_PER_USER: usize = 64;
/// Users the CMDB holds at most.
pub const MAX_USERS: usize = 10_000;

/// A user as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct User {
    pub v: u64,
    pub name: String,
    pub role: Role,
    /// argon2id PHC string.
    pub password_hash: String,
    pub disabled: bool,
    pub created_ms: u64,
    pub updated_ms: u64,
    /// A user from the company's directory (none: a local user, with a password here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<DirectoryLink>,
    /// Roles per resource pool; any: the user is pool-scoped (`role` does not apply).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub pools: rackboot_model::pools::Grants,
}

impl User {
    /// The highest role the user acts with anywhere: their role, or for a pool-scoped user the
    /// highest of their pools' (the role their tokens may have at most).
    pub fn ceiling(&self) -> Role {
        self.pools.values().max().copied().unwrap_or(self.role)
    }
}

/// A user as the API shows it (no password hash).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct UserView {
    pub name: String,
    pub role: Role,
    /// A disabled user cannot log in and their tokens stop working.
    pub disabled: bool,
    /// Unix milliseconds.
    pub created_ms: u64,
    /// Unix milliseconds.
    pub updated_ms: u64,
    /// Present for a user from the company's directory: their role follows their groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<DirectoryLink>,
    /// Roles per resource pool: a pool-scoped user acts only there (`role` does not apply).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schema(value_type = std::collections::BTreeMap<String, Role>)]
    pub pools: rackboot_model::pools::Grants,
}

impl From<&User> for UserView {
    fn from(u: &User) -> Self {
        UserView {
            name: u.name.clone(),
            role: u.role,
            disabled: u.disabled,
            created_ms: u.created_ms,
            updated_ms: u.updated_ms,
            directory: u.directory.clone(),
            pools: u.pools.clone(),
        }
    }
}

/// A change to a user (the password already hashed).
#[derive(Debug, Clone, Default)]
pub struct UserChange {
    pub role: Option<Role>,
    pub password_hash: Option<String>,
    pub disabled: Option<bool>,
    /// Roles per pool (checked by the caller); empty: a global user again.
    pub pools: Option<rackboot_model::pools::Grants>,
}

/// An API token or login session as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenRecord {
    pub v: u64,
    pub id: String,
    pub user: String,
    pub name: String,
    pub role: Role,
    /// Hex SHA-256 of the secret.
    pub hash: String,
    /// Made by a login (ends with its expiry; capped per user).
    pub session: bool,
    pub created_ms: u64,
    pub expires_ms: Option<u64>,
    pub last_used_ms: Option<u64>,
}

/// A token as the API shows it: never its secret or hash.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenView {
    /// The id in `rbt_<id>_<secret>`; revoke it with `DELETE /tokens/{id}`.
    pub id: String,
    pub name: String,
    pub user: String,
    pub role: Role,
    /// Made by `POST /auth/login`.
    pub session: bool,
    /// Unix milliseconds.
    pub created_ms: u64,
    /// Unix milliseconds; none: it does not expire.
    pub expires_ms: Option<u64>,
    /// Unix milliseconds, to the minute.
    pub last_used_ms: Option<u64>,
}

impl From<&TokenRecord> for TokenView {
    fn from(t: &TokenRecord) -> Self {
        TokenView {
            id: t.id.clone(),
            name: t.name.clone(),
            user: t.user.clone(),
            role: t.role,
            session: t.session,
            created_ms: t.created_ms,
            expires_ms: t.expires_ms,
            last_used_ms: t.last_used_ms,
        }
    }
}

/// Who is calling: the token's user and the role the call runs with (the lower of the token's
/// and its user's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub role: Role,
    pub token_id: String,
    /// The token is a login session.
    pub session: bool,
    /// A directory user's: when the directory last confirmed their groups (Unix ms).
    pub checked_ms: Option<u64>,
    /// A pool-scoped caller's roles per pool (each no higher than the token's role); `None`:
    /// `role` applies everywhere.
    pub pools: Option<rackboot_model::pools::Grants>,
}

impl Caller {
    /// The role the caller acts with on something of pool `pool`; `None`: they may not see it.
    pub fn role_in(&self, pool: &str) -> Option<Role> {
        match &self.pools {
            None => Some(self.role),
            Some(p) => p.get(pool).copied(),
        }
    }
}

/// Why a bearer token was refused (every one is a 401; the detail says which).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token")]
    Missing,
    #[error("unknown or revoked token")]
    Unknown,
    #[error("token expired")]
    Expired,
    #[error("the token's user is disabled or deleted")]
    UserGone,
    #[error("{0}")]
    Storage(String),
}

/// What importing the `admin.token` file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Import {
    /// Its token is in the CMDB (now or already).
    Valid,
    /// It was imported once and has been revoked since: it stays revoked.
    Revoked,
}

/// Last-used times are written at most this often per token.
const TOUCH_MS: u64 = 60_000;

/// Enabled local admins other than `name`: the break-glass accounts that must remain (a
/// directory's admins come and go with the directory).
fn enabled_admins_besides(users: &[User], name: &str) -> usize {
    let admin = |u: &&User| u.role == Role::Admin && !u.disabled && u.directory.is_none() && u.pools.is_empty();
    users.iter().filter(|u| u.name != name).filter(admin).count()
}

impl Cmdb {
    /// Every user, by name.
    pub async fn users(&self) -> Result<Vec<UserView>, CmdbError> {
        self.read(|rtx| Ok(scan::<&str, User>(&rtx.open_table(USERS)?)?.iter().map(UserView::from).collect())).await
    }

    /// The user `name` as stored (for the login check).
    pub async fn user(&self, name: String) -> Result<User, CmdbError> {
        self.read(move |rtx| match rtx.open_table(USERS)?.get(name.as_str())? {
            Some(v) => decode(v.value()),
            None => Err(CmdbError::NotFound(format!("user {name}"))),
        })
        .await
    }

    /// Creates a user; `Conflict` if the name is taken. With `only_if_none`, only when the
    /// CMDB has no user at all (the first start's `admin`); returns whether it was created.
    pub async fn create_user(&self, user: User, only_if_none: bool) -> Result<bool, CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(USERS)?;
            if only_if_none && !t.is_empty()? {
                return Ok(false);
            }
            if t.get(user.name.as_str())?.is_some() {
                return Err(CmdbError::Conflict(format!("user {} exists", user.name)));
            }
            if t.len()? as usize >= MAX_USERS {
                return Err(CmdbError::Conflict(format!("the CMDB holds {MAX_USERS} users already")));
            }
            t.insert(user.name.as_str(), encode(&user).as_slice())?;
            Ok(true)
        })
        .await
    }

    /// Changes a user; the last enabled admin cannot be demoted or disabled.
    pub async fn update_user(&self, name: String, change: UserChange, now_ms: u64) -> Result<UserView, CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(USERS)?;
            let all: Vec<User> = scan(&t)?;
            let mut u = all
                .iter()
                .find(|u| u.name == name)
                .cloned()
                .ok_or_else(|| CmdbError::NotFound(format!("user {name}")))?;
            let UserChange { role, password_hash, disabled, pools } = change;
            if u.directory.is_some() && (role.is_some_and(|r| r != u.role) || password_hash.is_some()) {
                return Err(CmdbError::Conflict(format!(
                    "{name} is a directory user: their role follows their groups and their password is the directory's"
                )));
            }
            u.role = role.unwrap_or(u.role);
            u.disabled = disabled.unwrap_or(u.disabled);
            if let Some(p) = pools {
                u.pools = p;
            }
            if (u.role != Role::Admin || u.disabled || !u.pools.is_empty()) && enabled_admins_besides(&all, &name) == 0
            {
                return Err(CmdbError::Conflict(format!("{name} is the last enabled admin")));
            }
            if let Some(h) = password_hash {
                u.password_hash = h;
            }
            u.updated_ms = now_ms;
            t.insert(name.as_str(), encode(&u).as_slice())?;
            Ok(UserView::from(&u))
        })
        .await
        .inspect(|_| self.credentials_changed())
    }

    /// Deletes a user and every token of theirs; the last enabled admin cannot be deleted.
    pub async fn delete_user(&self, name: String) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let mut users = ctx.t.tx.open_table(USERS)?;
            let all: Vec<User> = scan(&users)?;
            if !all.iter().any(|u| u.name == name) {
                return Err(CmdbError::NotFound(format!("user {name}")));
            }
            if enabled_admins_besides(&all, &name) == 0 {
                return Err(CmdbError::Conflict(format!("{name} is the last enabled admin")));
            }
            users.remove(name.as_str())?;
            let mut tokens = ctx.t.tx.open_table(TOKENS)?;
            tokens.retain(|_, v| decode::<TokenRecord>(v).map_or(true, |t| t.user != name))?;
            Ok(())
        })
        .await
        .inspect(|_| self.credentials_changed())
    }

    /// Tokens, of one user or of everyone, oldest first.
    pub async fn tokens(&self, user: Option<String>) -> Result<Vec<TokenView>, CmdbError> {
        self.read(move |rtx| {
            let mut all: Vec<TokenRecord> = scan(&rtx.open_table(TOKENS)?)?;
            all.retain(|t| user.as_ref().is_none_or(|u| &t.user == u));
            all.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
            Ok(all.iter().map(TokenView::from).collect())
        })
        .await
    }

    /// Stores a new token for an enabled user whose role is at least the token's. A session
    /// also drops the user's expired tokens and, past the cap, their oldest session.
    pub async fn create_token(&self, rec: TokenRecord, now_ms: u64) -> Result<TokenView, CmdbError> {
        self.write(move |ctx| {
            let user: User = match ctx.t.tx.open_table(USERS)?.get(rec.user.as_str())? {
                Some(v) => decode(v.value())?,
                None => return Err(CmdbError::NotFound(format!("user {}", rec.user))),
            };
            if user.disabled {
                return Err(CmdbError::Conflict(format!("user {} is disabled", user.name)));
            }
            if rec.role > user.ceiling() {
                return Err(CmdbError::Forbidden(format!(
                    "a token of {} can have role {} at most",
                    user.name,
                    user.ceiling().as_str()
                )));
            }
            let mut t = ctx.t.tx.open_table(TOKENS)?;
            let expired = |x: &TokenRecord| x.expires_ms.is_some_and(|e| e <= now_ms);
            t.retain(|_, v| decode::<TokenRecord>(v).map_or(true, |x| x.user != rec.user || !expired(&x)))?;
            let mine: Vec<TokenRecord> = scan::<&str, TokenRecord>(&t)?
                .into_iter()
                .filter(|x| x.user == rec.user && x.session == rec.session)
                .collect();
            if rec.session && mine.len() >= MAX_SESSIONS_PER_USER {
                if let Some(oldest) = mine.iter().min_by_key(|x| x.created_ms) {
                    t.remove(oldest.id.as_str())?;
                }
            } else if !rec.session && mine.len() >= MAX_TOKENS_PER_USER {
                return Err(CmdbError::Conflict(format!("{} holds {MAX_TOKENS_PER_USER} tokens already", rec.user)));
            }
            if t.get(rec.id.as_str())?.is_some() {
                return Err(CmdbError::Conflict(format!("token {} exists", rec.id)));
            }
            t.insert(rec.id.as_str(), encode(&rec).as_slice())?;
            Ok(TokenView::from(&rec))
        })
        .await
        // A login past the session cap deletes the user's oldest session.
        .inspect(|_| self.credentials_changed())
    }

    /// Revokes (deletes) a token; with `owner`, only one of that user's (another user's token
    /// reads as not found).
    pub async fn revoke_token(&self, id: String, owner: Option<String>) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(TOKENS)?;
            let rec: Option<TokenRecord> = t.get(id.as_str())?.map(|v| decode(v.value())).transpose()?;
            match rec {
                Some(r) if owner.as_ref().is_none_or(|o| *o == r.user) => {
                    t.remove(id.as_str())?;
                    Ok(())
                }
                _ => Err(CmdbError::NotFound(format!("token {id}"))),
            }
        })
        .await
        .inspect(|_| self.credentials_changed())
    }

    fn credentials_changed(&self) {
        self.inner.credentials.send_modify(|generation| *generation += 1);
    }

    /// Checks a presented token (its id and the hash of its secret) at `now_ms`: known, not
    /// expired, its user enabled. Refreshes its last-used time now and then, without waiting.
    pub async fn authenticate(&self, id: String, hash: String, now_ms: u64) -> Result<Caller, AuthError> {
        let (caller, touch) = self
            .read(move |rtx| {
                let found: Option<TokenRecord> =
                    rtx.open_table(TOKENS)?.get(id.as_str())?.map(|v| decode(v.value())).transpose()?;
                let Some(tok) = found.filter(|t| same(&t.hash, &hash)) else { return Ok(Err(AuthError::Unknown)) };
                if tok.expires_ms.is_some_and(|e| e <= now_ms) {
                    return Ok(Err(AuthError::Expired));
                }
                let user: Option<User> =
                    rtx.open_table(USERS)?.get(tok.user.as_str())?.map(|v| decode(v.value())).transpose()?;
                let usable = |u: &User| !u.disabled && u.directory.as_ref().is_none_or(|d| d.mapped);
                let Some(user) = user.filter(usable) else { return Ok(Err(AuthError::UserGone)) };
                let touch = tok.last_used_ms.is_none_or(|t| now_ms.saturating_sub(t) >= TOUCH_MS);
                let scoped = !user.pools.is_empty();
                let pools = scoped.then(|| user.pools.iter().map(|(p, r)| (p.clone(), (*r).min(tok.role))).collect());
                let caller = Caller {
                    user: user.name,
                    // A pool-scoped user's global role is the lowest; the guard lets them call
                    // only what knows pools.
                    role: if scoped { Role::Viewer } else { tok.role.min(user.role) },
                    token_id: tok.id,
                    session: tok.session,
                    // LDAP users' groups are read again while they work; an OpenID user's
                    // claims are read at each login.
                    checked_ms: user.directory.filter(|d| d.kind == "ldap").map(|d| d.checked_ms),
                    pools,
                };
                Ok(Ok((caller, touch)))
            })
            .await
            .map_err(|e| AuthError::Storage(e.to_string()))??;
        if touch {
            let id = caller.token_id.clone();
            self.write_detached(move |ctx| {
                let mut t = ctx.t.tx.open_table(TOKENS)?;
                let rec: Option<TokenRecord> = t.get(id.as_str())?.map(|v| decode(v.value())).transpose()?;
                if let Some(mut rec) = rec {
                    rec.last_used_ms = Some(now_ms);
                    t.insert(id.as_str(), encode(&rec).as_slice())?;
                }
                Ok(())
            });
        }
        Ok(caller)
    }

    /// Makes the `admin.token` file's token (`rec`) valid: stores it unless it is there, or was
    /// imported once and revoked since (a revoked file token is not resurrected by a restart).
    pub async fn import_file_token(&self, rec: TokenRecord) -> Result<Import, CmdbError> {
        self.write(move |ctx| {
            let marker = format!("imported_token:{}", rec.id);
            let mut meta = ctx.t.tx.open_table(META)?;
            let mut t = ctx.t.tx.open_table(TOKENS)?;
            let stored: Option<TokenRecord> = t.get(rec.id.as_str())?.map(|v| decode(v.value())).transpose()?;
            match stored {
                Some(s) if same(&s.hash, &rec.hash) => Ok(Import::Valid),
                Some(_) => Ok(Import::Revoked),
                None if meta.get(marker.as_str())?.is_some() => Ok(Import::Revoked),
                None => {
                    if ctx.t.tx.open_table(USERS)?.get(rec.user.as_str())?.is_none() {
                        return Err(CmdbError::NotFound(format!("user {}", rec.user)));
                    }
                    t.insert(rec.id.as_str(), encode(&rec).as_slice())?;
                    meta.insert(marker.as_str(), rec.created_ms)?;
                    Ok(Import::Valid)
                }
            }
        })
        .await
    }
}
