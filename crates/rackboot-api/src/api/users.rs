//! `/api/v1/users` (the admin's) and `/api/v1/tokens` (everyone's own; the admin's for all).
//! Password and token hashes never leave the CMDB; a new token's secret is shown once.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::auth::{self, Role};
use crate::cmdb::{now_ms, Caller, TokenRecord, TokenView, User, UserChange, UserView};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list_users, create_user))
        .routes(routes!(show_user, update_user, delete_user))
        .routes(routes!(list_tokens, create_token))
        .routes(routes!(revoke_token))
}

/// Every user.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct UserList {
    pub users: Vec<UserView>,
}

/// A new user.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// 1-64 of `a-z 0-9 . _ -`.
    #[schema(max_length = 64, pattern = "^[a-z0-9._-]{1,64}$")]
    pub name: String,
    pub role: Role,
    /// At least 12 characters, at most 1024 bytes.
    #[schema(min_length = 12, max_length = 1024)]
    pub password: String,
    /// Roles per resource pool (`viewer` or `operator`): any makes the user pool-scoped, acting
    /// only on those pools' machines (`role` does not apply).
    #[serde(default)]
    #[schema(value_type = Option<std::collections::BTreeMap<String, Role>>)]
    pub pools: rackboot_model::pools::Grants,
}

/// A change to a user; absent members stay as they are.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserPatch {
    pub role: Option<Role>,
    /// A new password: at least 12 characters, at most 1024 bytes.
    #[schema(min_length = 12, max_length = 1024)]
    pub password: Option<String>,
    /// A disabled user cannot log in and their tokens stop working.
    pub disabled: Option<bool>,
    /// Roles per resource pool; `{}`: a global user again.
    #[schema(value_type = Option<std::collections::BTreeMap<String, Role>>)]
    pub pools: Option<rackboot_model::pools::Grants>,
}

fn checked_name(name: &str) -> Result<(), ApiError> {
    if auth::valid_username(name) {
        Ok(())
    } else {
        Err(ApiError::field("name", "a username is 1-64 of a-z, 0-9, '.', '_' and '-'"))
    }
}

async fn hashed(password: String) -> Result<String, ApiError> {
    auth::check_password(&password).map_err(|e| ApiError::field("password", e))?;
    auth::hash_password_async(password).await.map_err(|e| ApiError::internal(e.to_string()))
}

/// Every user (admin).
#[utoipa::path(get, path = "/users", tag = "users",
    responses((status = 200, description = "Every user", body = UserList),
        (status = 403, description = "Needs role admin", body = super::Problem, content_type = "application/problem+json")))]
async fn list_users(State(s): State<ApiState>) -> Result<Json<UserList>, ApiError> {
    Ok(Json(UserList { users: s.cmdb.users().await? }))
}

/// Creates a user (admin).
#[utoipa::path(post, path = "/users", tag = "users", request_body = NewUser,
    responses((status = 201, description = "The new user", body = UserView),
        (status = 403, description = "Needs role admin", body = super::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The name is taken", body = super::Problem, content_type = "application/problem+json")))]
async fn create_user(
    State(s): State<ApiState>,
    body: Result<Json<NewUser>, JsonRejection>,
) -> Result<(StatusCode, Json<UserView>), ApiError> {
    let Json(NewUser { name, role, password, pools }) = body?;
    checked_name(&name)?;
    rackboot_model::pools::check_grants(&pools).map_err(|e| ApiError::field("pools", e))?;
    let now = now_ms();
    let user = User {
        v: crate::cmdb::model::SCHEMA_VERSION,
        name,
        role,
        password_hash: hashed(password).await?,
        disabled: false,
        created_ms: now,
        updated_ms: now,
        directory: None,
        pools,
    };
    let view = UserView::from(&user);
    s.cmdb.create_user(user, false).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// One user (admin).
#[utoipa::path(get, path = "/users/{name}", tag = "users",
    params(("name" = String, Path, description = "Username", pattern = "^[a-z0-9._-]{1,64}$")),
    responses((status = 200, description = "The user", body = UserView),
        (status = 403, description = "Needs role admin", body = super::Problem, content_type = "application/problem+json")))]
async fn show_user(State(s): State<ApiState>, Path(name): Path<String>) -> Result<Json<UserView>, ApiError> {
    checked_name(&name)?;
    Ok(Json(UserView::from(&s.cmdb.user(name).await?)))
}

/// Changes a user's role, password or disabled flag (admin). Nobody can demote or disable
/// themselves, nor the last enabled admin.
#[utoipa::path(patch, path = "/users/{name}", tag = "users", request_body = UserPatch,
    params(("name" = String, Path, description = "Username", pattern = "^[a-z0-9._-]{1,64}$")),
    responses((status = 200, description = "The changed user", body = UserView),
        (status = 403, description = "Needs role admin", body = super::Problem, content_type = "application/problem+json"),
        (status = 409, description = "It is the caller or the last enabled admin", body = super::Problem, content_type = "application/problem+json")))]
async fn update_user(
    State(s): State<ApiState>,
    Extension(c): Extension<Caller>,
    Path(name): Path<String>,
    body: Result<Json<UserPatch>, JsonRejection>,
) -> Result<Json<UserView>, ApiError> {
    let Json(UserPatch { role, password, disabled, pools }) = body?;
    checked_name(&name)?;
    if let Some(p) = &pools {
        rackboot_model::pools::check_grants(p).map_err(|e| ApiError::field("pools", e))?;
    }
    let scoping = pools.as_ref().is_some_and(|p| !p.is_empty());
    if name == c.user && (disabled == Some(true) || role.is_some_and(|r| r != Role::Admin) || scoping) {
        return Err(ApiError::conflict("an admin cannot disable or demote themselves; another admin can"));
    }
    let password_hash = match password {
        Some(p) => Some(hashed(p).await?),
        None => None,
    };
    Ok(Json(s.cmdb.update_user(name, UserChange { role, password_hash, disabled, pools }, now_ms()).await?))
}

/// Deletes a user and every token of theirs (admin). Nobody can delete themselves, nor the last
/// enabled admin.
#[utoipa::path(delete, path = "/users/{name}", tag = "users",
    params(("name" = String, Path, description = "Username", pattern = "^[a-z0-9._-]{1,64}$")),
    responses((status = 204, description = "Deleted, with their tokens"),
        (status = 403, description = "Needs role admin", body = super::Problem, content_type = "application/problem+json"),
        (status = 409, description = "It is the caller or the last enabled admin", body = super::Problem, content_type = "application/problem+json")))]
async fn delete_user(
    State(s): State<ApiState>,
    Extension(c): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    checked_name(&name)?;
    if name == c.user {
        return Err(ApiError::conflict("an admin cannot delete themselves; another admin can"));
    }
    s.cmdb.delete_user(name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Whose tokens to list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TokenQuery {
    /// Only this user's (an admin may name anyone; others only themselves). Default: an
    /// admin sees everyone's, others their own.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(max_length = 64, pattern = "^[a-z0-9._-]{0,64}$")]
    user: Option<String>,
}

/// Tokens, never their secrets.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenView>,
}

/// A new API token of the caller.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// What it is for, e.g. `ci` (1-64 printable characters).
    #[schema(min_length = 1, max_length = 64, pattern = r"^[^\u0000-\u001f\u007f-\u009f]{1,64}$")]
    pub name: String,
    /// Default: the caller's role; never above it.
    pub role: Option<Role>,
    /// Lifetime in seconds; none: it does not expire.
    #[schema(minimum = 60, maximum = 315360000)]
    pub ttl_secs: Option<u64>,
}

/// A new token: `secret` is the bearer, shown only here.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct CreatedToken {
    /// `Authorization: Bearer <secret>`.
    pub secret: String,
    pub token: TokenView,
}

/// Longest lifetime of an API token: ten years.
const MAX_TOKEN_SECS: u64 = 315_360_000;

/// Tokens: the caller's own, or (admin) everyone's.
#[utoipa::path(get, path = "/tokens", tag = "tokens", params(TokenQuery),
    responses((status = 200, description = "Tokens, oldest first", body = TokenList),
        (status = 403, description = "Another user's tokens need role admin", body = super::Problem, content_type = "application/problem+json")))]
async fn list_tokens(
    State(s): State<ApiState>,
    Extension(c): Extension<Caller>,
    q: Result<Query<TokenQuery>, QueryRejection>,
) -> Result<Json<TokenList>, ApiError> {
    let Query(q) = q?;
    if let Some(u) = q.user.as_deref().filter(|u| !auth::valid_username(u)) {
        return Err(ApiError::field("user", format!("{u:?} is not a username")));
    }
    let user = match (q.user, c.role) {
        (u, Role::Admin) => u,
        (Some(u), _) if u != c.user => {
            return Err(ApiError::new(StatusCode::FORBIDDEN, "another user's tokens need role admin"));
        }
        _ => Some(c.user),
    };
    Ok(Json(TokenList { tokens: s.cmdb.tokens(user).await? }))
}

/// Creates an API token of the caller, with a role no higher than the caller's.
#[utoipa::path(post, path = "/tokens", tag = "tokens", request_body = NewToken,
    responses((status = 201, description = "The new token and its secret (shown once)", body = CreatedToken),
        (status = 403, description = "The role is above the caller's", body = super::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The caller holds too many tokens", body = super::Problem, content_type = "application/problem+json")))]
async fn create_token(
    State(s): State<ApiState>,
    Extension(c): Extension<Caller>,
    body: Result<Json<NewToken>, JsonRejection>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    let Json(NewToken { name, role, ttl_secs }) = body?;
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(ApiError::field("name", "a token name is 1-64 printable characters"));
    }
    if let Some(t) = ttl_secs.filter(|t| !(60..=MAX_TOKEN_SECS).contains(t)) {
        return Err(ApiError::field("ttl_secs", format!("ttl_secs {t} is outside 60..={MAX_TOKEN_SECS}")));
    }
    // A pool-scoped caller acts with their pools' roles: their token may have the highest of
    // those, and acts in each pool with no more than the role they hold there.
    let most = c.pools.as_ref().and_then(|p| p.values().max().copied()).unwrap_or(c.role);
    let role = role.unwrap_or(most);
    if role > most {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("a token of this caller can have role {} at most", most.as_str()),
        ));
    }
    let (id, secret, hash) = auth::new_token().map_err(|e| ApiError::internal(e.to_string()))?;
    let now = now_ms();
    let rec = TokenRecord {
        v: crate::cmdb::model::SCHEMA_VERSION,
        id,
        user: c.user,
        name,
        role,
        hash,
        session: false,
        created_ms: now,
        expires_ms: ttl_secs.map(|t| now + t * 1000),
        last_used_ms: None,
    };
    let token = s.cmdb.create_token(rec, now).await?;
    Ok((StatusCode::CREATED, Json(CreatedToken { secret, token })))
}

/// Revokes a token: one's own, or (admin) anyone's. It stops working at once. An API token
/// cannot revoke itself (use another); a session can (logging out).
#[utoipa::path(delete, path = "/tokens/{id}", tag = "tokens",
    params(("id" = String, Path, description = "Token id")),
    responses((status = 204, description = "Revoked"),
        (status = 409, description = "An API token tried to revoke itself", body = super::Problem, content_type = "application/problem+json")))]
async fn revoke_token(
    State(s): State<ApiState>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if !auth::valid_token_id(&id) {
        return Err(ApiError::not_found(format!("token {id}")));
    }
    if id == c.token_id && !c.session {
        return Err(ApiError::conflict("a token cannot revoke itself (a login session can: that is logging out)"));
    }
    let owner = (c.role != Role::Admin).then_some(c.user);
    s.cmdb.revoke_token(id, owner).await?;
    Ok(StatusCode::NO_CONTENT)
}
