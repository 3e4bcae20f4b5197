//! OpenID Connect logins at the gate (`[auth.oidc]`): what the web UI's login through the
//! provider asks of the appliance. [`begin`] starts the authorization code flow; [`finish`]
//! takes the provider's answer, checks it (`auth::oidc`), records the user as their claims say
//! (a new user made, an existing one's role and pools set anew: a changed claim takes effect at
//! this login) and opens a session. Every finish is audited as a login (`GET /ui/oidc/callback`,
//! 200 or the refusal's status). Nothing is guessed here (the state is one use and bound to the
//! browser), so the password rate limit does not apply; what bounds a flood is how many logins
//! may be begun at once, in all and per address (`auth::oidc`).

use std::net::IpAddr;

use axum::http::StatusCode;

use super::auth::LoginResponse;
use super::{ApiError, ApiState};
use crate::auth::oidc::OidcError;
use crate::cmdb::{now_ms, AuditEntry, Outcome};

/// The route the audit log names for a login through the provider.
const ROUTE: &str = "/ui/oidc/callback";

/// The provider of this appliance, or 404 when `[auth.oidc]` is not set.
fn provider(s: &ApiState) -> Result<&crate::auth::oidc::Provider, ApiError> {
    s.auth.oidc.as_ref().ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "this appliance has no [auth.oidc]"))
}

fn refusal(e: OidcError) -> ApiError {
    match e {
        OidcError::Unreachable(why) => {
            tracing::warn!(%why, "the OpenID provider could not be reached");
            ApiError::retry_after(
                StatusCode::SERVICE_UNAVAILABLE,
                "the OpenID provider did not answer (local accounts still work)",
                5,
            )
        }
        OidcError::Busy => ApiError::retry_after(StatusCode::SERVICE_UNAVAILABLE, e.to_string(), 60),
        OidcError::Refused(_) => ApiError::new(StatusCode::UNAUTHORIZED, e.to_string()),
    }
}

/// Begins a login through the provider for the browser whose login cookie hashes to `browser`,
/// from `peer`: the provider's authorization URL to send it to.
pub async fn begin(s: &ApiState, browser: &str, next: &str, peer: IpAddr) -> Result<String, ApiError> {
    let p = provider(s)?;
    p.begin(browser, next, peer).await.map(|b| b.url).map_err(refusal)
}

/// The name the login page's button gives the provider, when there is one.
pub fn name(s: &ApiState) -> Option<String> {
    s.auth.oidc.as_ref().map(|p| p.cfg.name.clone())
}

/// Finishes the login the provider sent back (`state`, `code`) in the browser whose login
/// cookie hashes to `browser`, from `peer`: the new session and where the browser goes.
pub async fn finish(
    s: &ApiState,
    state: &str,
    code: &str,
    browser: &str,
    peer: IpAddr,
) -> Result<(LoginResponse, String), ApiError> {
    let result = login(s, state, code, browser).await;
    let (user, status) = match &result {
        Ok((r, _)) => (r.user.clone(), 200),
        Err((user, e)) => (user.clone().unwrap_or_else(|| "-".into()), e.status.as_u16()),
    };
    let entry = AuditEntry {
        seq: 0,
        at_ms: now_ms(),
        user,
        token: result.as_ref().ok().map(|(r, _)| r.id.clone()),
        from: peer.to_string(),
        method: "GET".into(),
        route: ROUTE.into(),
        params: Default::default(),
        status,
        outcome: Outcome::of(status),
        pools: vec![],
    };
    if let Err(error) = s.cmdb.append_audit(entry, s.auth.cfg.audit_max_entries).await {
        tracing::error!(%error, "audit entry not written");
    }
    result.map_err(|(_, e)| e)
}

/// The login itself; on failure, the username if it was learnt.
async fn login(
    s: &ApiState,
    state: &str,
    code: &str,
    browser: &str,
) -> Result<(LoginResponse, String), (Option<String>, ApiError)> {
    let p = provider(s).map_err(|e| (None, e))?;
    let (who, next) = p.finish(state, code, browser).await.map_err(|e| (None, refusal(e)))?;
    let name = Some(who.username.clone());
    if who.access.none() {
        let detail = format!("{}: no claim of theirs maps to a role on this appliance", who.username);
        return Err((name, ApiError::new(StatusCode::FORBIDDEN, detail)));
    }
    let (role, pools) = (who.access.role, who.access.pools);
    let stored = s.cmdb.directory_user("oidc", who.username.clone(), who.subject, role, pools, true, now_ms()).await;
    let user = match stored {
        Ok(Some(user)) if !user.disabled => user,
        // Disabled here by an admin: the provider's word does not undo that.
        Ok(_) => return Err((name, ApiError::new(StatusCode::FORBIDDEN, "this account is disabled here"))),
        Err(e) => return Err((name, ApiError::from(e))),
    };
    let ttl = s.auth.cfg.session_ttl.as_secs();
    let session = super::auth::session(s, &user, ttl).await.map_err(|_| (name, ApiError::internal("no session")))?;
    Ok((session.0, next))
}
