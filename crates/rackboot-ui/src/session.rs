//! UI sessions: the login's bearer token in an HttpOnly, Secure, SameSite=Strict cookie that
//! only `/ui` reads (the JSON API stays header-only), a CSRF token derived from it for every
//! form, and the checks every UI POST passes (CSRF token, same origin).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use sha2::{Digest, Sha256};

use super::UiState;
use rackboot_control::auth::{self, Role};
use rackboot_store::Caller;

/// The session cookie's name.
pub const COOKIE: &str = "rackboot_session";

/// A signed-in person on a UI request.
#[derive(Clone)]
pub struct Session {
    pub caller: Caller,
    /// The bearer token the cookie holds (forwarded to the API for changes).
    pub bearer: String,
    /// The CSRF token every form of this session carries.
    pub csrf: String,
    pub peer: SocketAddr,
    /// The `Host` the browser asked for (the page's own origin).
    pub host: String,
}

impl Session {
    /// Whether this session may change machines (what the API's role table asks of a change).
    /// Whether the forms that change machines are for them: a global operator or admin, or a
    /// pool-scoped user who operates a pool (the API checks each machine's pool).
    pub fn operator(&self) -> bool {
        let best = self.caller.pools.as_ref().and_then(|p| p.values().max().copied()).unwrap_or(self.caller.role);
        best >= Role::Operator
    }

    /// Whether the user acts only in some resource pools.
    pub fn scoped(&self) -> bool {
        self.caller.pools.is_some()
    }

    /// The pools a pool-scoped user sees (`None`: every pool).
    pub fn pools(&self) -> Option<Vec<String>> {
        self.caller.pools.as_ref().map(|p| p.keys().cloned().collect())
    }

    /// A pool-scoped user's roles, as the header shows them (`team-a: operator`); empty for
    /// others.
    pub fn pools_text(&self) -> String {
        let pools = self.caller.pools.iter().flatten();
        pools.map(|(p, r)| format!("{p}: {}", r.as_str())).collect::<Vec<_>>().join(", ")
    }

    /// Whether something of `pool` is theirs to see.
    pub fn sees(&self, pool: &str) -> bool {
        self.caller.pools.as_ref().is_none_or(|p| p.contains_key(pool))
    }
}

/// The pages a pool-scoped user may open: those that filter or check by pool (machines, a
/// machine and its live feed, racks to read, the bulk actions, which are API calls as them)
/// and logging out. The rest read the CMDB whole.
fn pool_page(method: &axum::http::Method, path: &str) -> bool {
    let parts: Vec<&str> = path.trim_start_matches("/ui/").split('/').collect();
    if *method == axum::http::Method::GET {
        matches!(
            parts.as_slice(),
            ["machines"] | ["machines", _] | ["machines", _, "live"] | ["racks"] | ["racks", _] | ["racks", _, "live"]
        )
    } else {
        matches!(parts.as_slice(), ["machines", "bulk"] | ["logout"])
    }
}

/// The CSRF token of a session: a hash of its bearer under a fixed label, so it needs no
/// storage, differs per session, and reveals nothing of the bearer.
pub fn csrf_of(bearer: &str) -> String {
    let d = Sha256::digest(format!("rackboot ui csrf\0{bearer}").as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The peer's address as the listener recorded it.
pub fn peer(parts: &Parts) -> SocketAddr {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0), |c| c.0)
}

/// The session cookie's value, if the request carries one.
pub fn cookie(headers: &HeaderMap) -> Option<String> {
    cookie_named(headers, COOKIE)
}

/// The value of the cookie `name`, if the request carries one (1-256 bytes).
pub fn cookie_named(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
        .filter(|v| !v.is_empty() && v.len() <= 256)
}

/// The `Set-Cookie` value that holds `bearer` for `max_age` seconds (0: clears it).
pub fn set_cookie(bearer: &str, max_age: u64) -> String {
    format!("{COOKIE}={bearer}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age={max_age}")
}

impl FromRequestParts<UiState> for Session {
    type Rejection = Response;

    /// A valid session, or a redirect to the login page (the cookie cleared if it was stale).
    async fn from_request_parts(parts: &mut Parts, s: &UiState) -> Result<Session, Response> {
        let to_login = || {
            let next = parts.uri.path_and_query().map_or("/ui/", |p| p.as_str());
            let target = format!("/ui/login?next={}", super::view::urlencode(next));
            ([(header::SET_COOKIE, set_cookie("", 0))], Redirect::to(&target)).into_response()
        };
        let Some(bearer) = cookie(&parts.headers) else { return Err(to_login()) };
        let Some((id, hash)) = auth::presented(&bearer) else { return Err(to_login()) };
        let caller = rackboot_api::api::auth::bearer_caller(&s.api, id, hash).await.map_err(|_| to_login())?;
        if caller.pools.is_some() && !pool_page(&parts.method, parts.uri.path()) {
            // Their home is the machine list: the dashboard counts every pool.
            if matches!(parts.uri.path(), "/ui" | "/ui/" | "/ui/dashboard") {
                return Err(Redirect::to("/ui/machines").into_response());
            }
            let why = "this page reads every resource pool; this user acts only in some: see Machines and Racks, or use the API or the CLI";
            return Err((axum::http::StatusCode::FORBIDDEN, why).into_response());
        }
        let host = parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("").to_string();
        Ok(Session { caller, csrf: csrf_of(&bearer), bearer, peer: peer(parts), host })
    }
}

/// Refuses (403, see [`refuse`]) a POST whose CSRF token is not the session's or that comes
/// from another origin (`Origin` or `Sec-Fetch-Site` say so); the error says why.
pub fn check_post(session: &Session, headers: &HeaderMap, csrf: Option<&str>) -> Result<(), &'static str> {
    if !same_origin(headers, &session.host) {
        return Err("this form was sent from another site");
    }
    match csrf {
        Some(t) if auth::same(t, &session.csrf) => Ok(()),
        _ => Err("the form's CSRF token is missing or not this session's; reload the page and try again"),
    }
}

/// Whether a request comes from a page of this origin: `Sec-Fetch-Site`, where the browser
/// sends it, must say `same-origin`; an `Origin` other than `https://<host>` is refused, except
/// `null`, which is what a browser sends under `Referrer-Policy: no-referrer` (then
/// `Sec-Fetch-Site` decides). A client that sends neither (curl) still needs the CSRF token.
pub fn same_origin(headers: &HeaderMap, host: &str) -> bool {
    let get = |h: &str| headers.get(h).and_then(|v| v.to_str().ok());
    let site = get("sec-fetch-site");
    if site.is_some_and(|s| s != "same-origin") {
        return false;
    }
    match get("origin") {
        None => true,
        Some("null") => site.is_some(),
        Some(o) => !host.is_empty() && o == format!("https://{host}"),
    }
}

/// The 403 answer to a refused POST.
pub fn refuse(why: &str) -> Response {
    (StatusCode::FORBIDDEN, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("403 Forbidden: {why}\n"))
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_found_among_others_and_bounded() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, "a=1; rackboot_session=rbt_x_y; b=2".parse().unwrap());
        assert_eq!(cookie(&h).as_deref(), Some("rbt_x_y"));
        h.insert(header::COOKIE, format!("rackboot_session={}", "x".repeat(300)).parse().unwrap());
        assert_eq!(cookie(&h), None);
        assert!(set_cookie("t", 60).contains("HttpOnly; Secure; SameSite=Strict; Path=/"));
    }

    #[test]
    fn csrf_tokens_differ_per_session_and_hide_the_bearer() {
        let (a, b) = (csrf_of("rbt_a_secret"), csrf_of("rbt_b_secret"));
        assert_ne!(a, b);
        assert!(!a.contains("secret") && a.len() == 64);
    }

    #[test]
    fn a_foreign_origin_is_refused() {
        let mut h = HeaderMap::new();
        assert!(same_origin(&h, "10.0.0.1:8443"));
        h.insert("origin", "https://10.0.0.1:8443".parse().unwrap());
        assert!(same_origin(&h, "10.0.0.1:8443"));
        h.insert("origin", "https://evil.example".parse().unwrap());
        assert!(!same_origin(&h, "10.0.0.1:8443"));
        h.insert("origin", "null".parse().unwrap());
        assert!(!same_origin(&h, "10.0.0.1:8443"), "null without Sec-Fetch-Site");
        h.insert("sec-fetch-site", "same-origin".parse().unwrap());
        assert!(same_origin(&h, "10.0.0.1:8443"), "a no-referrer page's own form");
        for other in ["cross-site", "same-site", "none"] {
            h.insert("sec-fetch-site", other.parse().unwrap());
            assert!(!same_origin(&h, "10.0.0.1:8443"), "{other}");
        }
    }
}
