//! Directory users at the gate (`[auth.ldap]`): a login checked by the directory (a bind as the
//! user, their groups mapped to a role, the user recorded or updated), and a directory user's
//! groups read again at their first request once `recheck_secs` have passed: out of every mapped
//! group (or gone from the directory), their tokens stop working; moved to another group, they
//! act with its role. A directory that does not answer refuses directory users (503) until it
//! does; local users are never asked of it.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{ApiError, ApiState};
use crate::auth::ldap::{Directory, DirectoryError};
use crate::cmdb::{now_ms, Caller, CmdbError, User};

/// What a directory user is told while the directory does not answer.
const DIRECTORY_DOWN: &str =
    "the directory did not answer: its users cannot be checked until it does (local accounts still work)";

/// Checks `username`'s password with the directory and records what it says. The refusal, and
/// whether it counts as a failed login (a directory that did not answer does not).
pub(super) async fn login(
    s: &ApiState,
    dir: &Directory,
    username: &str,
    password: &str,
) -> Result<User, (Response, bool)> {
    let refused = || ApiError::new(StatusCode::UNAUTHORIZED, "wrong username or password").into_response();
    let found = match dir.login(username, password).await {
        Ok(found) => found,
        Err(DirectoryError::Refused) => return Err((refused(), true)),
        Err(e) => {
            tracing::warn!(user = username, error = %e, "a directory login could not be checked");
            return Err((
                ApiError::retry_after(StatusCode::SERVICE_UNAVAILABLE, DIRECTORY_DOWN, 5).into_response(),
                false,
            ));
        }
    };
    if found.access.none() {
        let detail = format!("{username} is in no directory group this appliance maps to a role");
        return Err((ApiError::new(StatusCode::FORBIDDEN, detail).into_response(), true));
    }
    let (role, pools) = (found.access.role, found.access.pools);
    match s.cmdb.directory_user("ldap", username.into(), found.dn, role, pools, true, now_ms()).await {
        Ok(Some(user)) if !user.disabled => Ok(user),
        // Disabled here by an admin: the directory's word does not undo that.
        Ok(_) => Err((refused(), true)),
        Err(e) => Err((ApiError::from(e).into_response(), false)),
    }
}

/// `c` once its directory user's groups are current: read again when due.
pub async fn checked(s: &ApiState, c: Caller, id: String, hash: String) -> Result<Caller, ApiError> {
    let Some(at) = c.checked_ms else { return Ok(c) };
    let Some(dir) = &s.auth.directory else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            format!("{} is a directory user and this appliance has no [auth.ldap] to check them", c.user),
        ));
    };
    let due = |checked: u64| now_ms().saturating_sub(checked) >= dir.recheck_after().as_millis() as u64;
    if !due(at) {
        return Ok(c);
    }
    let _one = dir.rechecks.lock().await;
    let user = s.cmdb.user(c.user.clone()).await.map_err(|e| match e {
        CmdbError::NotFound(_) => ApiError::new(StatusCode::UNAUTHORIZED, "the token's user is gone"),
        e => ApiError::from(e),
    })?;
    let Some(link) = user.directory.filter(|l| due(l.checked_ms)) else {
        // Read again meanwhile by another request of theirs.
        return s.cmdb.authenticate(id, hash, now_ms()).await.map_err(super::auth::refusal);
    };
    let access = match dir.recheck(&user.name, &link.dn).await {
        Ok(access) => access,
        Err(e) => {
            tracing::warn!(user = %user.name, error = %e, "a directory user's groups could not be read again");
            return Err(ApiError::retry_after(StatusCode::SERVICE_UNAVAILABLE, DIRECTORY_DOWN, 5));
        }
    };
    if access.role != Some(user.role) || access.pools != user.pools {
        tracing::info!(user = %user.name, role = ?access.role, pools = ?access.pools,
            "a directory user's access changed with their groups");
    }
    s.cmdb.directory_user("ldap", user.name, link.dn, access.role, access.pools, false, now_ms()).await?;
    s.cmdb.authenticate(id, hash, now_ms()).await.map_err(super::auth::refusal)
}
