//! `/ui/oidc/start` and `/ui/oidc/callback`: logging in through the company's OpenID provider
//! (`[auth.oidc]`), the authorization code flow with PKCE. The start sets a short-lived cookie
//! only this browser holds and sends it to the provider; the callback comes back with the code
//! and the state, which the appliance takes only from the browser holding that cookie, once.
//! The checks and the session are the API's (`api::oidc`); the session lands in the usual
//! cookie.

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{login, session, UiState};
use rackboot_store::now_ms;

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/oidc/start", get(start)).route("/ui/oidc/callback", get(callback))
}

/// The cookie binding a begun login to the browser that began it.
const COOKIE: &str = "rb_oidc";

/// The hash the appliance keeps of a browser's binding cookie.
fn binding(value: &str) -> String {
    rackboot_control::auth::hex(&Sha256::digest(format!("rackboot oidc browser\0{value}").as_bytes()))
}

fn cookie(value: &str, max_age: u64) -> String {
    format!("{COOKIE}={value}; HttpOnly; Secure; SameSite=Lax; Path=/ui/oidc; Max-Age={max_age}")
}

#[derive(Deserialize)]
struct StartQuery {
    next: Option<String>,
}

async fn start(
    State(s): State<UiState>,
    q: Result<Query<StartQuery>, axum::extract::rejection::QueryRejection>,
    req: axum::extract::Request,
) -> Response {
    let peer = session::peer(&req.into_parts().0).ip();
    let next = login::next_page(q.as_ref().ok().and_then(|q| q.next.as_deref()));
    let value = match rackboot_control::auth::new_token() {
        Ok((_, secret, _)) => secret,
        Err(e) => return login::form(&s, &next, "", Some(&e.to_string()), StatusCode::INTERNAL_SERVER_ERROR),
    };
    match rackboot_api::api::oidc::begin(&s.api, &binding(&value), &next, peer).await {
        Ok(url) => ([(header::SET_COOKIE, cookie(&value, 600))], Redirect::to(&url)).into_response(),
        Err(e) => login::form(&s, &next, "", Some(&format!("Login failed: {}", e.detail)), e.status),
    }
}

#[derive(Deserialize)]
struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

async fn callback(
    State(s): State<UiState>,
    q: Result<Query<Callback>, axum::extract::rejection::QueryRejection>,
    req: axum::extract::Request,
) -> Response {
    let (parts, _) = req.into_parts();
    let headers = &parts.headers;
    let home = login::next_page(None);
    let refuse = |why: String, status| {
        let mut resp = login::form(&s, &home, "", Some(&why), status);
        resp.headers_mut().append(header::SET_COOKIE, cookie("", 0).parse().expect("a cookie header"));
        resp
    };
    let Ok(Query(q)) = q else {
        return refuse("Login failed: the provider's answer is malformed.".into(), StatusCode::BAD_REQUEST);
    };
    if let Some(e) = q.error {
        let why: String = format!("{e}: {}", q.error_description.unwrap_or_default()).chars().take(300).collect();
        return refuse(format!("The provider refused the login ({why})."), StatusCode::UNAUTHORIZED);
    }
    let (Some(code), Some(state)) = (q.code, q.state) else {
        return refuse("Login failed: the provider sent no code.".into(), StatusCode::BAD_REQUEST);
    };
    let Some(value) = session::cookie_named(headers, COOKIE) else {
        return refuse(
            "Login failed: it was begun in another browser, or took longer than 10 minutes.".into(),
            StatusCode::UNAUTHORIZED,
        );
    };
    let peer = session::peer(&parts).ip();
    match rackboot_api::api::oidc::finish(&s.api, &state, &code, &binding(&value), peer).await {
        Ok((login, next)) => {
            let max_age = login.expires_ms.saturating_sub(now_ms()) / 1000;
            let mut resp = Redirect::to(&next).into_response();
            let h = resp.headers_mut();
            h.append(header::SET_COOKIE, session::set_cookie(&login.token, max_age).parse().expect("a cookie header"));
            h.append(header::SET_COOKIE, cookie("", 0).parse().expect("a cookie header"));
            resp
        }
        Err(e) => refuse(format!("Login failed: {}", e.detail), e.status),
    }
}
