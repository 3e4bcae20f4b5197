//! The OpenAPI document of `/api/v1`, generated from the handlers' `#[utoipa::path]`
//! annotations and the types they take and return, and served at `/api/v1/openapi.json`.
//!
//! Responses every operation shares are added here once: 401 and 403 (bearer token and its role;
//! not on the public login; this document needs a viewer unless `auth.public_openapi`), 400 for anything
//! with parameters or a body, 404 for anything with a path parameter or `machine=`, 413/415 for a
//! body, 500 for a CMDB that cannot be read or written. Each error is a [`Problem`]. The
//! `kind=` filters get their pattern from the list of event kinds.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr};
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::problem::{Problem, PROBLEM_JSON};
use super::ApiState;
use crate::cmdb::EventKind;

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "rackboot API",
        version = "1",
        description = "Machines, leases, timeline events (pages and a live stream), agents' jobs, boot profiles and provisioning tasks of a rackboot appliance. Every path except `POST /auth/login` and the OpenID device login (`POST /auth/oidc/device`, `POST /auth/oidc/device/token`) (and this document where `auth.public_openapi` is set) needs `Authorization: Bearer <token>`: a user's API token (`/tokens`) or login session; the first admin's token is in <data_dir>/admin.token. Roles: viewer reads; operator also changes machines, racks, tasks, jobs and profiles; admin also manages users, every token, the audit log, backups and the quarantine (403 names the role a call needs). Every change is in the audit log. Errors are application/problem+json (RFC 9457). Lists take `limit` and `cursor` and return `next_cursor`."
    ),
    servers((url = "/api/v1")),
    components(schemas(Problem, EventKind)),
    tags(
        (name = "machines", description = "The CMDB's machines and their agents"),
        (name = "events", description = "Every machine's timeline, paged or live"),
        (name = "leases", description = "DHCP and DHCPv6 leases"),
        (name = "jobs", description = "Jobs run by node agents"),
        (name = "tasks", description = "Provisioning tasks and their runs"),
        (name = "profiles", description = "Boot profiles"),
        (name = "templates", description = "Boot templates (iPXE scripts, installer answer files): overrides and previews (admin)"),
        (name = "racks", description = "Racks: where machines are placed by how they are cabled, named and addressed"),
        (name = "network", description = "Installed nodes' networks: the named networks, and each machine's ports, bonds, VLANs and static addresses"),
        (name = "cloud-init", description = "cloud-init user-data of machines and racks (an operator's: it may hold secrets)"),
        (name = "power", description = "Machines' BMCs (Redfish, IPMI) and power actions through them"),
        (name = "firmware", description = "Firmware baselines, their images, and machines brought to them through their BMCs"),
        (name = "auth", description = "Logging in, and who the caller is"),
        (name = "users", description = "Users and their roles (admin)"),
        (name = "tokens", description = "API tokens: one's own, or everyone's (admin)"),
        (name = "audit", description = "The audit log of every change (admin)"),
        (name = "tang", description = "The Tang server encrypted file systems are bound to: keys, bindings, rotation (admin)"),
        (name = "webhooks", description = "Webhook subscriptions: events POSTed to receivers, signed, in order, at least once (admin)"),
        (name = "backup", description = "Consistent snapshots of the CMDB (admin)"),
        (name = "quarantine", description = "Records that did not decode at a start, moved aside (admin)"),
        (name = "appliances", description = "The appliances sharing this CMDB: where each answers, its version, when it last beat, its DHCP pair role"),
        (name = "meta", description = "This document")
    )
)]
struct Base;

/// This document (public, see `auth::policy`).
pub(super) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(openapi_json))
}

/// This OpenAPI document.
#[utoipa::path(get, path = "/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object)))]
async fn openapi_json() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document_json())
}

/// The whole document, built once.
pub fn document() -> &'static OpenApi {
    static DOC: OnceLock<OpenApi> = OnceLock::new();
    DOC.get_or_init(|| {
        let router = OpenApiRouter::with_openapi(Base::openapi()).merge(super::protected_routes());
        let mut doc = router.into_openapi();
        finish(&mut doc);
        doc
    })
}

/// The document as served.
pub fn document_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| document().to_pretty_json().expect("the OpenAPI document serializes"))
}

/// Paths anyone may call (see `auth::policy`; the document itself only when configured public).
const PUBLIC: [&str; 3] = ["/auth/login", "/auth/oidc/device", "/auth/oidc/device/token"];

/// Adds the bearer scheme and the responses every operation shares.
fn finish(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    components
        .add_security_scheme("bearer", SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()));
    let problem = |what: &str| {
        ResponseBuilder::new()
            .description(what)
            .content(PROBLEM_JSON, ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem"))).build())
            .build()
    };
    let kinds = kind_list_pattern();
    for (path, item) in doc.paths.paths.iter_mut() {
        let ops: [&mut Option<Operation>; 5] =
            [&mut item.get, &mut item.post, &mut item.put, &mut item.patch, &mut item.delete];
        for op in ops.into_iter().flatten() {
            // `kind=`: comma-separated event kinds, from the one list of them.
            for p in op.parameters.iter_mut().flatten() {
                if let RefOr::T(p) = p {
                    if p.name == "kind" && p.parameter_in == ParameterIn::Query {
                        let kind = ObjectBuilder::new().schema_type(Type::String).pattern(Some(kinds.clone()));
                        p.schema = Some(RefOr::T(kind.into()));
                    }
                    // An optional header is absent or a number, never `null`.
                    if p.name == "Last-Event-ID" {
                        let id = ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                            .minimum(Some(0));
                        p.schema = Some(RefOr::T(id.into()));
                    }
                }
            }
            let params = op.parameters.as_deref().unwrap_or_default();
            // A path parameter, or `machine=` naming one, may name nothing.
            let has_path = params
                .iter()
                .any(|p| matches!(p, RefOr::T(p) if p.parameter_in == ParameterIn::Path || p.name == "machine"));
            let has_input = !params.is_empty() || op.request_body.is_some();
            let responses = &mut op.responses.responses;
            let mut add = |code: &str, what: &str| {
                responses.entry(code.to_string()).or_insert_with(|| problem(what).into());
            };
            if !PUBLIC.contains(&path.as_str()) {
                add("401", "Missing, unknown, expired or revoked bearer token");
                add("403", "The token's role is too low for this call (the detail names the role needed)");
                op.security = Some(vec![SecurityRequirement::new("bearer", Vec::<String>::new())]);
            }
            if path != "/openapi.json" {
                add("500", "The CMDB could not be read or written");
            }
            if has_input {
                add("400", "A parameter or the body is malformed or out of range (`field` names it)");
            }
            if has_path {
                add("404", "No such machine, job, task, rack or profile");
            }
            if op.request_body.is_some() {
                add("413", "The body is too large");
                add("415", "The body is not application/json");
            }
        }
    }
}

/// `kind=`'s pattern: empty, or event kinds separated by commas.
fn kind_list_pattern() -> String {
    let one = EventKind::ALL.iter().map(|(_, name, _, _)| name.replace('.', "\\.")).collect::<Vec<_>>().join("|");
    format!("^(({one})(,({one}))*)?$")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_with_every_operation_secured_and_its_errors() {
        let v: serde_json::Value = serde_json::from_str(document_json()).unwrap();
        assert!(v["openapi"].as_str().unwrap().starts_with("3."), "{}", v["openapi"]);
        let paths = v["paths"].as_object().unwrap();
        for p in [
            "/machines",
            "/machines/{id}",
            "/events",
            "/events/stream",
            "/jobs",
            "/tasks",
            "/racks",
            "/racks/{name}",
            "/racks/{name}/csv",
            "/machines/{id}/placement",
            "/profiles",
            "/leases",
            "/leases6",
            "/users",
            "/tokens",
            "/audit",
            "/auth/login",
        ] {
            assert!(paths.contains_key(p), "{p} is missing");
        }
        for (path, item) in paths {
            for (method, op) in item.as_object().unwrap() {
                let codes = op["responses"].as_object().unwrap();
                assert!(codes.keys().any(|c| c.starts_with('2')), "{method} {path} has no success response");
                if !PUBLIC.contains(&path.as_str()) {
                    assert!(codes.contains_key("401"), "{method} {path} lacks 401");
                    assert!(codes.contains_key("403"), "{method} {path} lacks 403");
                    assert_eq!(op["security"][0]["bearer"], serde_json::json!([]), "{method} {path}");
                }
                for (code, r) in codes.iter().filter(|(c, _)| c.as_str() >= "400") {
                    assert!(r["content"][PROBLEM_JSON].is_object(), "{method} {path} {code} is not a problem");
                }
            }
        }
        let kinds = v["components"]["schemas"]["EventKind"]["enum"].as_array().unwrap();
        assert_eq!(kinds.len(), EventKind::ALL.len());
    }

    /// Routes under `/api/v1` are only ever registered through `routes!` (which documents them):
    /// a plain axum `.route(` in an API module would serve a path the document does not have.
    #[test]
    fn no_api_module_registers_an_undocumented_route() {
        let modules = [
            ("machines.rs", include_str!("machines.rs")),
            ("events.rs", include_str!("events.rs")),
            ("jobs.rs", include_str!("jobs.rs")),
            ("tasks.rs", include_str!("tasks.rs")),
            ("racks.rs", include_str!("racks.rs")),
            ("placement.rs", include_str!("placement.rs")),
            ("profiles.rs", include_str!("profiles.rs")),
            ("auth.rs", include_str!("auth.rs")),
            ("users.rs", include_str!("users.rs")),
            ("audit.rs", include_str!("audit.rs")),
        ];
        for (name, text) in modules {
            let code: String = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<String>()
                .replace("OpenApiRouter", "");
            let bad = [".route(", ".route_service(", ".nest(", ".nest_service(", "Router::new()"];
            if let Some(b) = bad.iter().find(|b| code.contains(*b)) {
                panic!("{name} calls {b}: register /api/v1 routes with OpenApiRouter::routes(routes!(...))");
            }
        }
        let mod_rs: String = include_str!("mod.rs").lines().filter(|l| !l.trim_start().starts_with("//")).collect();
        let between = mod_rs.split("fn protected_routes").nth(1).unwrap().split("fn router").next().unwrap();
        assert!(!between.contains(".route("), "protected_routes must only merge documented modules");
    }

    /// No documented change is open to everyone or to a viewer, except logging in and a user's
    /// own tokens.
    #[test]
    fn every_documented_change_needs_more_than_a_viewer() {
        use crate::auth::policy::{is_read, required, Access};
        use crate::auth::Role;
        use hyper::Method;
        let doc: serde_json::Value = serde_json::from_str(crate::api::document_json()).unwrap();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                let m: Method = method.to_uppercase().parse().unwrap();
                if is_read(&m) || PUBLIC.contains(&path.as_str()) || path.starts_with("/tokens") {
                    continue;
                }
                assert!(matches!(required(&m, path, true), Access::Role(r) if r > Role::Viewer), "{method} {path}");
            }
        }
    }
}
