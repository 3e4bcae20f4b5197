//! The admin's pages: `/ui/audit` (the audit log, filtered and paged, newest first) and
//! `/ui/users` (users and every token, never a secret). Who may read them is the API's role
//! table (`auth::policy` for `GET /audit` and `GET /users`), asked here, not re-decided.

use axum::extract::{Query, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value as V;
use serde::{Deserialize, Serialize};

use super::session::Session;
use super::view::{message, urlencode};
use super::UiState;
use rackboot_control::auth::policy::{self, Access};
use rackboot_store::{AuditFilter, Outcome};

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/audit", get(audit)).route("/ui/users", get(users))
}

/// Audit entries a page shows.
const PAGE: usize = 100;

/// Whether `session` may make the API read `route` (the same table the API's gate asks).
fn may_read(s: &UiState, session: &Session, route: &str) -> bool {
    match policy::required(&Method::GET, route, s.api.auth.cfg.public_openapi) {
        Access::Public => true,
        Access::Role(need) => session.caller.role >= need,
    }
}

/// The audit page's URL query.
#[derive(Debug, Default, Deserialize, Serialize)]
pub struct AuditQuery {
    #[serde(default)]
    user: String,
    #[serde(default)]
    method: String,
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    pool: String,
    before: Option<u64>,
}

async fn audit(
    State(s): State<UiState>,
    session: Session,
    q: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if !may_read(&s, &session, "/audit") {
        return message(&s.views, StatusCode::FORBIDDEN, "Audit log", "the audit log is the admin's", &session);
    }
    let q = q.map(|Query(q)| q).unwrap_or_default();
    if q.user.len() > 64 || q.method.len() > 16 {
        return message(&s.views, StatusCode::BAD_REQUEST, "Audit log", "user or method too long", &session);
    }
    let pool = Some(q.pool.trim().to_string()).filter(|p| !p.is_empty());
    if let Some(Err(e)) = pool.as_deref().map(rackboot_model::pools::check) {
        return message(&s.views, StatusCode::BAD_REQUEST, "Audit log", &e, &session);
    }
    let outcome = match q.outcome.as_str() {
        "" => None,
        o => match serde_json::from_value::<Outcome>(serde_json::Value::String(o.into())) {
            Ok(o) => Some(o),
            Err(_) => {
                return message(&s.views, StatusCode::BAD_REQUEST, "Audit log", "no such outcome", &session);
            }
        },
    };
    let some = |v: &str| Some(v.trim().to_string()).filter(|v| !v.is_empty());
    let filter = AuditFilter {
        user: some(&q.user),
        method: some(&q.method).map(|m| m.to_ascii_uppercase()),
        status: None,
        outcome,
        pool,
        since_ms: None,
        until_ms: None,
        before: q.before,
        limit: PAGE,
    };
    let (entries, next) = match s.api.cmdb.audit_page(filter).await {
        Ok(page) => page,
        Err(e) => return message(&s.views, StatusCode::INTERNAL_SERVER_ERROR, "Audit log", &e.to_string(), &session),
    };
    let keep = format!(
        "user={}&method={}&outcome={}&pool={}",
        urlencode(&q.user),
        urlencode(&q.method),
        urlencode(&q.outcome),
        urlencode(&q.pool)
    );
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), q => V::from(Serde(&q)), entries => V::from(Serde(&entries)),
        next => next.map(|n| format!("{keep}&before={n}")),
        outcomes => ["ok", "denied", "limited", "failed"],
    };
    s.views.page("audit.html", ctx)
}

async fn users(State(s): State<UiState>, session: Session) -> Response {
    if !may_read(&s, &session, "/users") {
        return message(&s.views, StatusCode::FORBIDDEN, "Users", "users and tokens are the admin's", &session);
    }
    let (users, tokens) = match (s.api.cmdb.users().await, s.api.cmdb.tokens(None).await) {
        (Ok(u), Ok(t)) => (u, t),
        (Err(e), _) | (_, Err(e)) => {
            return message(&s.views, StatusCode::INTERNAL_SERVER_ERROR, "Users", &e.to_string(), &session)
        }
    };
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), users => V::from(Serde(&users)), tokens => V::from(Serde(&tokens)),
    };
    s.views.page("users.html", ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_users_page_tells_local_users_from_the_directory_s() {
        let views = super::super::view::Views::new().unwrap();
        let users = json!([
            {"name": "admin", "role": "admin", "disabled": false, "created_ms": 1, "updated_ms": 1},
            {"name": "alice", "role": "operator", "disabled": false, "created_ms": 1, "updated_ms": 1,
             "directory": {"kind": "ldap", "dn": "uid=alice,ou=people,dc=example,dc=com", "checked_ms": 1, "mapped": false}},
        ]);
        let ctx = minijinja::context! {
            user => "admin", role => "admin", csrf => "c", operator => true,
            users => V::from(Serde(users)), tokens => V::from(Serde(json!([]))),
        };
        let html = views.render("users.html", ctx).unwrap();
        assert!(html.contains("<td>local</td>"), "{html}");
        assert!(
            html.contains("uid=alice,ou=people,dc=example,dc=com") && html.contains("in no mapped group"),
            "{html}"
        );
    }
}
