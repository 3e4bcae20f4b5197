//! OpenID Connect logins at the gate (`[auth.oidc]`): what the web UI's login through the
//! provider asks of the appliance. [`begin`] starts the authorization code flow; [`finish`]
//! takes the provider's answer, checks it (`auth::oidc`), records the user as their claims say
//! (a new user made, an existing one's role and pools set anew: a changed claim takes effect at
//! this login) and opens a session. Every finish is audited as a login (`GET /ui/oidc/callback`,
//! 200 or the refusal's status). Nothing is guessed here (the state is one use and bound to the
//! browser), so the password rate limit does not apply; what bounds a flood is how many logins
//! may be begun at once, in all and per address (`auth::oidc`).

use std::net::IpAddr;

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{LoginAttempt, LoginResponse, Peer};
use super::{ApiError, ApiState};
use crate::auth::oidc::{Identity, OidcError};
use crate::auth::oidc_device::DevicePoll;
use crate::cmdb::{now_ms, AuditEntry, Outcome, User};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(device)).routes(routes!(device_token))
}

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
    Ok((session_of(s, who).await?, next))
}

/// Records who the provider says logged in (their role and pools from their claims now) and
/// opens their session; on failure, the username.
async fn session_of(s: &ApiState, who: Identity) -> Result<LoginResponse, (Option<String>, ApiError)> {
    let name = Some(who.username.clone());
    if who.access.none() {
        let detail = format!("{}: no claim of theirs maps to a role on this appliance", who.username);
        return Err((name, ApiError::new(StatusCode::FORBIDDEN, detail)));
    }
    let (role, pools) = (who.access.role, who.access.pools);
    let stored = s.cmdb.directory_user("oidc", who.username.clone(), who.subject, role, pools, true, now_ms()).await;
    let user: User = match stored {
        Ok(Some(user)) if !user.disabled => user,
        // Disabled here by an admin: the provider's word does not undo that.
        Ok(_) => return Err((name, ApiError::new(StatusCode::FORBIDDEN, "this account is disabled here"))),
        Err(e) => return Err((name, ApiError::from(e))),
    };
    let ttl = s.auth.cfg.session_ttl.as_secs();
    let session = super::auth::session(s, &user, ttl).await.map_err(|_| (name, ApiError::internal("no session")))?;
    Ok(session.0)
}

/// A device login begun: what the user is told to do.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct DeviceStart {
    /// What the CLI polls `POST /auth/oidc/device/token` with (not the provider's device code,
    /// which stays here).
    pub handle: String,
    /// The code the user enters at `verification_uri`.
    pub user_code: String,
    pub verification_uri: String,
    /// The same with the code in it, where the provider gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_uri_complete: Option<String>,
    /// Seconds the code is good for.
    pub expires_in: u64,
    /// Seconds between polls.
    pub interval: u64,
}

/// Begins a login through the company's OpenID provider for a client without a browser (the
/// CLI): the device authorization flow. The user opens `verification_uri` anywhere, enters
/// `user_code` and logs in there; meanwhile the client polls `POST /auth/oidc/device/token`.
#[utoipa::path(post, path = "/auth/oidc/device", tag = "auth",
    responses((status = 200, description = "The code to enter and where", body = DeviceStart),
        (status = 404, description = "This appliance has no [auth.oidc]", body = super::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The provider did not answer, or too many logins are in progress", body = super::Problem, content_type = "application/problem+json")))]
async fn device(
    State(s): State<ApiState>,
    Extension(Peer(peer)): Extension<Peer>,
) -> Result<Json<DeviceStart>, ApiError> {
    let p = provider(&s)?;
    let b = p.device_begin(peer).await.map_err(refusal)?;
    Ok(Json(DeviceStart {
        handle: b.handle,
        user_code: b.user_code,
        verification_uri: b.verification_uri,
        verification_uri_complete: b.verification_uri_complete,
        expires_in: b.expires_in,
        interval: b.interval,
    }))
}

/// A device login's poll.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DevicePollRequest {
    #[schema(max_length = 128)]
    pub handle: String,
}

/// Not yet: the user has not confirmed the code.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct DevicePending {
    /// Seconds to wait before polling again.
    pub interval: u64,
}

/// Polls a device login: 202 while the user has not logged in at the provider, then the new
/// session (once; the handle is used up). Asking sooner than `interval` asks the provider
/// nothing.
#[utoipa::path(post, path = "/auth/oidc/device/token", tag = "auth", request_body = DevicePollRequest,
    responses((status = 200, description = "A new session", body = LoginResponse),
        (status = 202, description = "Not yet; poll again after interval seconds", body = DevicePending),
        (status = 401, description = "Refused: no such login, the code expired or was denied, the ID token did not verify", body = super::Problem, content_type = "application/problem+json"),
        (status = 403, description = "No claim of theirs maps to a role, or the account is disabled here", body = super::Problem, content_type = "application/problem+json"),
        (status = 404, description = "This appliance has no [auth.oidc]", body = super::Problem, content_type = "application/problem+json")))]
async fn device_token(State(s): State<ApiState>, body: Result<Json<DevicePollRequest>, JsonRejection>) -> Response {
    let answer = async {
        let anon = |e: ApiError| (None::<String>, e);
        let Json(req) = body.map_err(|e| anon(e.into()))?;
        if req.handle.len() > 128 {
            return Err((None, ApiError::field("handle", "at most 128 characters")));
        }
        let p = provider(&s).map_err(anon)?;
        match p.device_poll(&req.handle).await.map_err(|e| anon(refusal(e)))? {
            DevicePoll::Pending { interval } => Ok(Err(interval)),
            DevicePoll::Done(who) => session_of(&s, who).await.map(Ok),
        }
    };
    let mut resp = match answer.await {
        Ok(Ok(session)) => {
            let user = session.user.clone();
            let mut r = Json(session).into_response();
            r.extensions_mut().insert(LoginAttempt(user));
            r
        }
        Ok(Err(interval)) => (StatusCode::ACCEPTED, Json(DevicePending { interval })).into_response(),
        Err((user, e)) => {
            let mut r = e.into_response();
            r.extensions_mut().insert(LoginAttempt(user.unwrap_or_else(|| "-".into())));
            r
        }
    };
    resp.headers_mut().insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    resp
}
