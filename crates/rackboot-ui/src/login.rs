//! `/ui/login` and `/ui/logout`: the login form goes through `POST /api/v1/auth/login` (its
//! rate limit and audit entry apply) and keeps the new session's token in the cookie; logging
//! out revokes the session's token through the API.

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::json;

use super::form::Form;
use super::session::{self, Session};
use super::{forward, UiState};
use rackboot_store::now_ms;

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/login", get(show).post(login)).route("/ui/logout", post(logout))
}

#[derive(Deserialize)]
struct LoginQuery {
    next: Option<String>,
}

/// Where to go after logging in: a UI path only (never another origin).
pub(super) fn next_page(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/ui/") && !n.contains("//") && !n.contains('\\') && super::view::url_safe(n) => {
            n.into()
        }
        _ => "/ui/dashboard".into(),
    }
}

/// The login page: the form, and the provider's button where `[auth.oidc]` is set.
pub(super) fn form(s: &UiState, next: &str, username: &str, error: Option<&str>, status: StatusCode) -> Response {
    let oidc = rackboot_api::api::oidc::name(&s.api);
    let oidc_start = format!("/ui/oidc/start?next={}", super::view::urlencode(next));
    let ctx = minijinja::context! { next, username, error, oidc, oidc_start, user => None::<String>, csrf => "", operator => false };
    let mut resp = s.views.page("login.html", ctx);
    *resp.status_mut() = status;
    resp
}

async fn show(
    State(s): State<UiState>,
    q: Result<Query<LoginQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let next = next_page(q.as_ref().ok().and_then(|q| q.next.as_deref()));
    form(&s, &next, "", None, StatusCode::OK)
}

async fn login(State(s): State<UiState>, req: axum::extract::Request) -> Response {
    let (parts, body) = req.into_parts();
    let host = parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !session::same_origin(&parts.headers, host) {
        return (StatusCode::FORBIDDEN, "403 Forbidden: this form was sent from another site\n").into_response();
    }
    let f = match Form::read(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let next = next_page(f.get("next"));
    let username = f.get("username").unwrap_or("").chars().take(64).collect::<String>();
    let body = json!({"username": username, "password": f.get("password").unwrap_or("")});
    let peer = session::peer(&parts);
    let answer = forward::call(&s, None, peer, Method::POST, "/auth/login", Some(body)).await;
    let (Some(token), Some(expires)) = (answer.body["token"].as_str(), answer.body["expires_ms"].as_u64()) else {
        let (error, status) = match answer.status {
            StatusCode::UNAUTHORIZED | StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => {
                ("Wrong username or password.".to_string(), StatusCode::UNAUTHORIZED)
            }
            StatusCode::TOO_MANY_REQUESTS => {
                ("Too many failed logins; try again later.".to_string(), StatusCode::TOO_MANY_REQUESTS)
            }
            _ => (format!("Login failed: {}", answer.message()), StatusCode::SERVICE_UNAVAILABLE),
        };
        return form(&s, &next, &username, Some(&error), status);
    };
    let max_age = expires.saturating_sub(now_ms()) / 1000;
    ([(header::SET_COOKIE, session::set_cookie(token, max_age))], Redirect::to(&next)).into_response()
}

async fn logout(State(s): State<UiState>, session: Session, headers: HeaderMap, body: axum::body::Body) -> Response {
    let f = match Form::read(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    if let Err(why) = session::check_post(&session, &headers, f.get("csrf")) {
        return session::refuse(why);
    }
    let path = format!("/tokens/{}", session.caller.token_id);
    let answer = forward::as_session(&s, &session, Method::DELETE, &path, None).await;
    if !answer.status.is_success() {
        tracing::warn!(status = %answer.status, "ui logout: the session token was not revoked");
    }
    ([(header::SET_COOKIE, session::set_cookie("", 0))], Redirect::to("/ui/login")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_login_only_ui_pages() {
        assert_eq!(next_page(Some("/ui/machines?q=52%3A54")), "/ui/machines?q=52%3A54");
        for bad in [
            "https://evil.example/",
            "//evil.example/ui/",
            "/ui//evil",
            "/api/v1/users",
            "/ui\\x",
            "/ui/\r\nx: y",
            "/ui/é",
        ] {
            assert_eq!(next_page(Some(bad)), "/ui/dashboard", "{bad}");
        }
        assert_eq!(next_page(None), "/ui/dashboard");
    }
}
