//! The API's one gate: every `/api/v1` call passes [`guard`], which authenticates the bearer
//! token, authorizes the call by method and route template (`auth::policy`), and appends every
//! change (and every refused change) to the audit log once it has its answer. Also
//! `POST /auth/login` (rate-limited sessions; directory users checked by the directory, see
//! `directory`) and `GET /auth/whoami`. What a pool-scoped caller may reach is `scope`'s.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::rejection::JsonRejection;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::auth::hashing::{self, HashPool};
use crate::auth::limiter::Limiter;
use crate::auth::policy::{self, Access};
use crate::auth::{self, Role};
use crate::cmdb::{now_ms, AuditEntry, AuthError, Caller, CmdbError, Outcome, TokenRecord};
use crate::config::{AuthConfig, MAX_SESSION_SECS};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(login)).routes(routes!(whoami))
}

/// The login settings, the rate limiter's state, the password hashing pool and the company's
/// directory.
pub struct AuthState {
    pub cfg: AuthConfig,
    pub limiter: Limiter,
    pub hashing: HashPool,
    /// `[auth.ldap]`, when set.
    pub directory: Option<crate::auth::ldap::Directory>,
    /// `[auth.oidc]`, when set.
    pub oidc: Option<crate::auth::oidc::Provider>,
}

impl AuthState {
    /// Settings from the config, with an empty limiter and the hashing threads started; the
    /// directory's CA and service password read (an unreadable one is an error).
    pub fn new(cfg: AuthConfig) -> anyhow::Result<AuthState> {
        let limiter = Limiter::new(cfg.login_failures_per_user, cfg.login_failures_per_address, cfg.login_window);
        let directory = cfg.ldap.clone().map(crate::auth::ldap::Directory::new).transpose()?;
        let oidc = cfg.oidc.clone().map(crate::auth::oidc::Provider::new).transpose()?;
        Ok(AuthState { cfg, limiter, hashing: HashPool::new(hashing::WORKERS, hashing::QUEUE), directory, oidc })
    }
}

/// The peer's address, for handlers (the login limiter).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub IpAddr);

/// The username a login tried, set on its response for the audit entry.
#[derive(Debug, Clone)]
pub(super) struct LoginAttempt(pub String);

/// Authenticates, authorizes and audits one `/api/v1` call.
pub async fn guard(State(s): State<ApiState>, mut req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let matched = req.extensions().get::<MatchedPath>().map(|m| m.as_str().to_string()).unwrap_or_default();
    let route = matched.strip_prefix("/api/v1").unwrap_or(&matched).to_string();
    let path = req.uri().path();
    let params = path_params(&route, path.strip_prefix("/api/v1").unwrap_or(path));
    let peer =
        req.extensions().get::<ConnectInfo<SocketAddr>>().map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
    req.extensions_mut().insert(Peer(peer));
    let mut caller = None;
    let pools = super::scope::Touched::default();
    let resp = super::scope::touching(pools.clone(), async {
        match policy::required(&method, &route, s.auth.cfg.public_openapi) {
            Access::Public => next.run(req).await,
            Access::Role(need) => match authenticate(&s, req.headers()).await {
                Err(e) => e.into_response(),
                Ok(c) if c.pools.is_some() => {
                    let pools = c.pools.clone().unwrap_or_default();
                    let best = pools.values().max().copied();
                    req.extensions_mut().insert(c.clone());
                    caller = Some(c);
                    if !super::scope::pool_aware(&method, &route) {
                        let names: Vec<&str> = pools.keys().map(String::as_str).collect();
                        let detail = format!(
                            "this user acts only in pools {}: {method} {route} is not for them",
                            names.join(", ")
                        );
                        ApiError::new(StatusCode::FORBIDDEN, detail).into_response()
                    } else if best < Some(need) {
                        let detail = format!("{method} {route} needs role {} in a pool", need.as_str());
                        ApiError::new(StatusCode::FORBIDDEN, detail).into_response()
                    } else {
                        super::scope::within(pools, need, next.run(req)).await
                    }
                }
                Ok(c) if c.role < need => {
                    let detail = format!(
                        "{method} {route} needs role {}; this token acts as {}",
                        need.as_str(),
                        c.role.as_str()
                    );
                    caller = Some(c);
                    ApiError::new(StatusCode::FORBIDDEN, detail).into_response()
                }
                Ok(c) => {
                    req.extensions_mut().insert(c.clone());
                    caller = Some(c);
                    next.run(req).await
                }
            },
        }
    })
    .await;
    if policy::is_audited(&method, &route) {
        let tried = resp.extensions().get::<LoginAttempt>().map(|a| a.0.clone());
        let status = resp.status().as_u16();
        let entry = AuditEntry {
            seq: 0,
            at_ms: now_ms(),
            user: caller.as_ref().map(|c| c.user.clone()).or(tried).unwrap_or_else(|| "-".into()),
            token: caller.map(|c| c.token_id),
            from: peer.to_string(),
            method: method.to_string(),
            route,
            params,
            status,
            outcome: Outcome::of(status),
            pools: pools.take(),
        };
        if let Err(error) = s.cmdb.append_audit(entry, s.auth.cfg.audit_max_entries).await {
            tracing::error!(%error, "audit entry not written");
        }
    }
    resp
}

/// Checks a call outside `/api/v1` (e.g. `/metrics`) for a token acting as at least `need`; the
/// refusal (401 or 403) as the API answers it.
pub async fn require(s: &ApiState, headers: &HeaderMap, need: crate::auth::Role) -> Result<Caller, Response> {
    match authenticate(s, headers).await {
        Err(e) => Err(e.into_response()),
        Ok(c) if c.pools.is_some() => {
            Err(ApiError::new(StatusCode::FORBIDDEN, "a pool-scoped user may not read this").into_response())
        }
        Ok(c) if c.role < need => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("this needs role {}; this token acts as {}", need.as_str(), c.role.as_str()),
        )
        .into_response()),
        Ok(c) => Ok(c),
    }
}

/// A failed authentication as the API answers it: 401, or 503 when the store could not be read
/// (the token may be good; the caller should retry, not log in again).
pub(super) fn refusal(e: AuthError) -> ApiError {
    match e {
        AuthError::Storage(why) => {
            // The reason names the store (host, database): logged, not told to a caller who
            // has not proven who it is.
            tracing::warn!(%why, "a credential could not be checked");
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, super::STORE_UNREACHABLE)
        }
        e => ApiError::new(StatusCode::UNAUTHORIZED, e.to_string()),
    }
}

async fn authenticate(s: &ApiState, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let bearer = bearer(headers).ok_or(AuthError::Missing).map_err(refusal)?;
    let (id, hash) = auth::presented(bearer).ok_or(AuthError::Unknown).map_err(refusal)?;
    bearer_caller(s, id, hash).await
}

/// The caller a token (`id`, its secret's hash) stands for; a directory user's groups read
/// again first when they are due (see `directory`).
pub async fn bearer_caller(s: &ApiState, id: String, hash: String) -> Result<Caller, ApiError> {
    let c = s.cmdb.authenticate(id.clone(), hash.clone(), now_ms()).await.map_err(refusal)?;
    super::directory::checked(s, c, id, hash).await
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ").map(str::trim)
}

/// Returns once the token the call presented stops authenticating (revoked, expired, its user
/// disabled or deleted), or stops acting as it did when the call began (a directory user's
/// groups read again and changed or gone, a pool-scoped user's pools or role changed): an
/// answer that stays open (an event stream, filtered by the caller's pools as they were) ends
/// then, and the client reconnects as who they are now. At once if it presented none. Takes the
/// token from `headers` first, so the wait holds no request.
pub fn refused(s: &ApiState, headers: &HeaderMap) -> impl std::future::Future<Output = ()> + Send + 'static {
    let presented = bearer(headers).and_then(auth::presented);
    // Watching from here: a revocation or change while the stream is set up is not missed.
    let held = presented.clone().map(|(id, hash)| auth::held::until_refused(&s.cmdb, id, hash));
    let mut changes = s.cmdb.credential_changes();
    let s = s.clone();
    async move {
        let (Some(held), Some((id, hash))) = (held, presented) else { return };
        let acts = |c: &Caller| (c.role, c.pools.clone());
        let Ok(first) = bearer_caller(&s, id.clone(), hash.clone()).await.map(|c| acts(&c)) else { return };
        // A directory's users are read again as often as it says, at least every RECHECK.
        let every = s.auth.directory.as_ref().map_or(auth::held::RECHECK, |d| d.recheck_after());
        let every = every.clamp(std::time::Duration::from_secs(1), auth::held::RECHECK);
        let same = async move {
            // False once the store is gone (its watch closed): then only the clock wakes the check.
            let mut watching = true;
            loop {
                if watching {
                    tokio::select! {
                        r = changes.changed() => watching = r.is_ok(),
                        () = tokio::time::sleep(every) => {}
                    }
                } else {
                    tokio::time::sleep(every).await;
                }
                match bearer_caller(&s, id.clone(), hash.clone()).await {
                    Ok(c) if acts(&c) == first => {}
                    _ => return,
                }
            }
        };
        tokio::select! {
            () = held => {}
            () = same => {}
        }
    }
}

/// Longest path parameter kept in an audit entry.
const MAX_PARAM: usize = 128;

/// The path parameters of `path` by the route template's `{name}` segments.
fn path_params(route: &str, path: &str) -> BTreeMap<String, String> {
    let segments = route.trim_start_matches('/').split('/').zip(path.trim_start_matches('/').split('/'));
    segments
        .filter_map(|(t, p)| {
            let name = t.strip_prefix('{')?.strip_suffix('}')?;
            Some((name.to_string(), p.chars().take(MAX_PARAM).collect()))
        })
        .collect()
}

/// A login.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// 1-64 of `a-z 0-9 . _ -`.
    #[schema(max_length = 64)]
    pub username: String,
    #[schema(max_length = 1024)]
    pub password: String,
    /// The session's lifetime in seconds (default `auth.session_ttl_secs`, at most 7 days).
    #[schema(minimum = 60, maximum = 604800)]
    pub ttl_secs: Option<u64>,
}

/// A new session: its bearer token, shown only here.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct LoginResponse {
    /// `Authorization: Bearer <token>` until it expires or is revoked.
    pub token: String,
    /// The token's id (`DELETE /tokens/{id}` ends the session).
    pub id: String,
    /// Unix milliseconds.
    pub expires_ms: u64,
    pub user: String,
    pub role: Role,
}

/// A hash to check unknown usernames against, so they take as long as known ones.
fn decoy_hash() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| auth::hash_password("no user has this password").unwrap_or_default())
}

/// Logs in with a username and password and returns a session token: a local user's password
/// is checked here, anyone else's by the company's directory (`[auth.ldap]`). Failed logins are
/// audited and rate-limited per username and per source address (429 with Retry-After); while
/// too many logins are being checked at once, 503 with Retry-After.
#[utoipa::path(post, path = "/auth/login", tag = "auth", request_body = LoginRequest,
    responses((status = 200, description = "A new session", body = LoginResponse),
        (status = 401, description = "Wrong username or password", body = super::Problem, content_type = "application/problem+json"),
        (status = 403, description = "A directory user in no group this appliance maps to a role", body = super::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many failed logins; retry after Retry-After seconds", body = super::Problem, content_type = "application/problem+json"),
        (status = 503, description = "Too many logins being checked at once, or the directory did not answer; retry after Retry-After seconds", body = super::Problem, content_type = "application/problem+json")))]
async fn login(
    State(s): State<ApiState>,
    Extension(Peer(peer)): Extension<Peer>,
    body: Result<Json<LoginRequest>, JsonRejection>,
) -> Response {
    let (name, resp) = match body {
        Ok(Json(req)) => {
            let name = auth::valid_username(&req.username).then(|| req.username.clone());
            (name, try_login(&s, peer, req).await.map_or_else(IntoResponse::into_response, IntoResponse::into_response))
        }
        Err(e) => (None, ApiError::from(e).into_response()),
    };
    let mut resp = resp;
    resp.extensions_mut().insert(LoginAttempt(name.unwrap_or_else(|| "-".into())));
    resp
}

async fn try_login(s: &ApiState, peer: IpAddr, req: LoginRequest) -> Result<Json<LoginResponse>, Response> {
    let LoginRequest { username, password, ttl_secs } = req;
    if password.len() > auth::MAX_PASSWORD {
        return Err(ApiError::field("password", "the password is too long").into_response());
    }
    let ttl = ttl_secs.unwrap_or(s.auth.cfg.session_ttl.as_secs());
    if !(60..=MAX_SESSION_SECS).contains(&ttl) {
        return Err(ApiError::field("ttl_secs", format!("ttl_secs must be 60..={MAX_SESSION_SECS}")).into_response());
    }
    let limiter = &s.auth.limiter;
    // The limiter keys on usernames that can exist; anything else shares one key, so a body of
    // made-up names cannot grow its memory.
    let valid = auth::valid_username(&username);
    let key = if valid { username.as_str() } else { "(invalid)" };
    // The attempt counts as failed from here; only a success hands it back.
    if let Err(wait) = limiter.reserve(key, peer, Instant::now()) {
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        let detail = "too many failed logins; try again later";
        return Err(ApiError::retry_after(StatusCode::TOO_MANY_REQUESTS, detail, secs).into_response());
    }
    let user = match valid.then(|| s.cmdb.user(username.clone())) {
        None => None,
        Some(found) => match found.await {
            Ok(u) => Some(u),
            Err(CmdbError::NotFound(_)) => None,
            Err(why) => {
                // Not yet anybody: the reason (naming the store) goes to the log only.
                tracing::warn!(%why, "a login could not be checked");
                return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, super::STORE_UNREACHABLE).into_response());
            }
        },
    };
    // A directory user (or a name no local user has) is the directory's to check; a local
    // user always logs in here, so a local admin gets in when the directory does not answer.
    let of_ldap = |u: &crate::cmdb::User| u.directory.as_ref().is_some_and(|d| d.kind == "ldap");
    if let (Some(dir), true) = (&s.auth.directory, user.as_ref().is_none_or(of_ldap)) {
        let user = match super::directory::login(s, dir, &username, &password).await {
            Ok(user) => user,
            Err((resp, counted)) => {
                if !counted {
                    limiter.unreserve(key);
                }
                return Err(resp);
            }
        };
        limiter.succeeded(key, peer);
        return session(s, &user, ttl).await;
    }
    let phc = user.as_ref().map(|u| u.password_hash.clone());
    let checked = s
        .auth
        .hashing
        .run(move || auth::verify_password(&password, phc.as_deref().unwrap_or_else(|| decoy_hash())))
        .await;
    let matches = match checked {
        Ok(matches) => matches,
        // Not checked: not a guess either, so the attempt goes back (the address keeps it, so
        // a flood still reaches its limit).
        Err(busy) => {
            limiter.unreserve(key);
            return Err(ApiError::retry_after(StatusCode::SERVICE_UNAVAILABLE, busy.to_string(), 1).into_response());
        }
    };
    let Some(user) = user.filter(|u| matches && !u.disabled) else {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "wrong username or password").into_response());
    };
    limiter.succeeded(key, peer);
    session(s, &user, ttl).await
}

/// A new login session of `user` for `ttl` seconds.
pub(super) async fn session(s: &ApiState, user: &crate::cmdb::User, ttl: u64) -> Result<Json<LoginResponse>, Response> {
    let (id, token, hash) = auth::new_token().map_err(|e| ApiError::internal(e.to_string()).into_response())?;
    let now = now_ms();
    let expires_ms = now + ttl * 1000;
    let rec = TokenRecord {
        v: crate::cmdb::model::SCHEMA_VERSION,
        id: id.clone(),
        user: user.name.clone(),
        name: "session".into(),
        // A pool-scoped user's session acts with their pools' roles (see `Caller::pools`).
        role: user.ceiling(),
        hash,
        session: true,
        created_ms: now,
        expires_ms: Some(expires_ms),
        last_used_ms: None,
    };
    s.cmdb.create_token(rec, now).await.map_err(|e| ApiError::from(e).into_response())?;
    Ok(Json(LoginResponse { token, id, expires_ms, user: user.name.clone(), role: user.ceiling() }))
}

/// Who the caller is.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct Whoami {
    pub user: String,
    /// The role this token acts with: the lower of its own and its user's.
    pub role: Role,
    /// The token's id.
    pub token: String,
}

/// The caller's user, effective role and token id.
#[utoipa::path(get, path = "/auth/whoami", tag = "auth",
    responses((status = 200, description = "The caller", body = Whoami)))]
async fn whoami(Extension(c): Extension<Caller>) -> Json<Whoami> {
    Json(Whoami { user: c.user, role: c.role, token: c.token_id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_params_follow_the_template() {
        let p = path_params("/users/{name}", "/users/alice");
        assert_eq!(p.into_iter().collect::<Vec<_>>(), [("name".to_string(), "alice".to_string())]);
        assert!(path_params("/machines", "/machines").is_empty());
        let long = format!("/tokens/{}", "x".repeat(500));
        assert_eq!(path_params("/tokens/{id}", &long)["id"].len(), MAX_PARAM);
    }
}
