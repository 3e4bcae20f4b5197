//! The role table: which role a `/api/v1` call needs, by method and route template. The API's
//! one auth middleware asks it for every call, so no handler can forget a check.

use hyper::Method;

use super::Role;

/// What a call needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token: logging in (and the OpenAPI document where `auth.public_openapi` says so).
    Public,
    /// A token whose effective role is at least this.
    Role(Role),
}

/// Whether a method only reads (GET, HEAD, OPTIONS): these are never audited and a viewer may
/// make them.
pub fn is_read(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Whether a call to `route` goes into the audit log: every change, and the reads that hand
/// out the whole CMDB (a backup holds every credential hash).
pub fn is_audited(method: &Method, route: &str) -> bool {
    !is_read(method) || route == "/backup"
}

/// The access a call to `route` (a template under `/api/v1`, e.g. `/users/{name}`) needs;
/// `public_doc`: the OpenAPI document is readable without a token (`auth.public_openapi`).
///
/// Own tokens (`/tokens`) and `whoami` need only a valid token: the handler limits a non-admin
/// to their own tokens. Users, the audit log, backups and the quarantine are the admin's, read or write. Any other read is
/// a viewer's; changes to machines, racks, tasks, jobs, profiles (and power) are an operator's; any
/// other change (settings, trust stores, routes added later) is an admin's unless listed here.
pub fn required(method: &Method, route: &str, public_doc: bool) -> Access {
    let mut segments = route.trim_start_matches('/').split('/');
    let first = segments.next().unwrap_or("");
    match (first, is_read(method)) {
        ("openapi.json", true) if public_doc => Access::Public,
        ("auth", _) if matches!(route, "/auth/login" | "/auth/oidc/device" | "/auth/oidc/device/token") => {
            Access::Public
        }
        ("auth" | "tokens", _) => Access::Role(Role::Viewer),
        // Webhooks say where events go and hold a secret: an admin's, read or write.
        // Tang keys guard every encrypted disk: an admin's, read or write.
        ("users" | "audit" | "backup" | "quarantine" | "webhooks" | "tang", _) => Access::Role(Role::Admin),
        // Where a machine's BMC is and who logs in to it is an operator's business; so is
        // user-data, which may hold secrets.
        ("machines", true) if route.ends_with("/bmc") => Access::Role(Role::Operator),
        ("machines" | "racks", true) if route.ends_with("/user-data") => Access::Role(Role::Operator),
        (_, true) => Access::Role(Role::Viewer),
        // Which pool a machine is in says which team sees it: an admin's to change.
        ("machines", false) if route.ends_with("/pool") => Access::Role(Role::Admin),
        // Firmware images and updates are part of bringing up a rack.
        ("machines" | "racks" | "tasks" | "jobs" | "profiles" | "power" | "firmware", false) => {
            Access::Role(Role::Operator)
        }
        (_, false) => Access::Role(Role::Admin),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: Access = Access::Role(Role::Viewer);
    const O: Access = Access::Role(Role::Operator);
    const A: Access = Access::Role(Role::Admin);

    #[test]
    fn the_role_table() {
        let cases = [
            (Method::POST, "/auth/login", Access::Public),
            (Method::POST, "/auth/oidc/device", Access::Public),
            (Method::POST, "/auth/oidc/device/token", Access::Public),
            (Method::GET, "/auth/whoami", V),
            (Method::GET, "/machines", V),
            (Method::GET, "/machines/{id}/events", V),
            (Method::HEAD, "/leases", V),
            (Method::GET, "/events/stream", V),
            (Method::POST, "/machines", O),
            (Method::PATCH, "/machines/{id}", O),
            (Method::DELETE, "/machines/{id}", O),
            (Method::POST, "/machines/{id}/approve", O),
            (Method::GET, "/machines/{id}/bmc", O),
            (Method::PUT, "/machines/{id}/bmc", O),
            (Method::DELETE, "/machines/{id}/bmc", O),
            (Method::POST, "/machines/{id}/power", O),
            (Method::POST, "/machines/{id}/bmc/inband", O),
            (Method::GET, "/machines/{id}/firmware", V),
            (Method::POST, "/machines/{id}/firmware", O),
            (Method::GET, "/machines/{id}/firmware/drift", V),
            (Method::POST, "/machines/{id}/firmware/update", O),
            (Method::PUT, "/machines/{id}/pool", A),
            (Method::GET, "/firmware/images", V),
            (Method::PUT, "/firmware/images", O),
            (Method::DELETE, "/firmware/images/{sha256}", O),
            (Method::GET, "/firmware/baselines", V),
            (Method::GET, "/racks/{name}/firmware", V),
            (Method::POST, "/racks/{name}/firmware/update", O),
            (Method::GET, "/machines/{id}/network", V),
            (Method::PUT, "/machines/{id}/network", O),
            (Method::DELETE, "/machines/{id}/network", O),
            (Method::GET, "/networks", V),
            (Method::GET, "/inventory/ansible", V),
            (Method::GET, "/machines/{id}/user-data", O),
            (Method::PUT, "/machines/{id}/user-data", O),
            (Method::DELETE, "/machines/{id}/user-data", O),
            (Method::GET, "/racks/{name}/user-data", O),
            (Method::PUT, "/racks/{name}/user-data", O),
            (Method::DELETE, "/racks/{name}/user-data", O),
            (Method::POST, "/tasks", O),
            (Method::GET, "/racks/{name}", V),
            (Method::POST, "/racks", O),
            (Method::PUT, "/racks/{name}", O),
            (Method::DELETE, "/racks/{name}", O),
            (Method::POST, "/racks/{name}/csv", O),
            (Method::POST, "/tasks/{id}/cancel", O),
            (Method::POST, "/jobs", O),
            (Method::PUT, "/profiles/{name}", O),
            (Method::DELETE, "/profiles/{name}", O),
            (Method::GET, "/users", A),
            (Method::GET, "/users/{name}", A),
            (Method::POST, "/users", A),
            (Method::PATCH, "/users/{name}", A),
            (Method::DELETE, "/users/{name}", A),
            (Method::GET, "/audit", A),
            (Method::GET, "/webhooks", A),
            (Method::GET, "/webhooks/{id}", A),
            (Method::POST, "/webhooks", A),
            (Method::PATCH, "/webhooks/{id}", A),
            (Method::GET, "/tang/keys", A),
            (Method::GET, "/tang/bindings", A),
            (Method::POST, "/tang/rotate", A),
            (Method::GET, "/backup", A),
            (Method::GET, "/appliances", V),
            (Method::GET, "/quarantine", A),
            (Method::DELETE, "/quarantine", A),
            (Method::GET, "/tokens", V),
            (Method::POST, "/tokens", V),
            (Method::DELETE, "/tokens/{id}", V),
            // Plugins: anyone reads; uploads, trust and activation are an admin's.
            (Method::GET, "/plugins", V),
            (Method::GET, "/plugins/{name}/versions/{version}", V),
            (Method::GET, "/plugin-keys", V),
            (Method::POST, "/plugins", A),
            (Method::POST, "/plugins/{name}/activate", A),
            (Method::POST, "/plugins/{name}/rollback", A),
            (Method::DELETE, "/plugins/{name}/versions/{version}", A),
            (Method::POST, "/plugin-keys", A),
            (Method::POST, "/plugin-keys/{key_id}/revoke", A),
            // Boot templates: anyone reads; overrides and previews are an admin's.
            (Method::GET, "/templates", V),
            (Method::GET, "/templates/{name}", V),
            (Method::PUT, "/templates/{name}", A),
            (Method::DELETE, "/templates/{name}", A),
            (Method::POST, "/templates/{name}/preview", A),
            // Changes nobody listed are an admin's, never everyone's.
            (Method::POST, "/settings", A),
            (Method::PUT, "/trust/{key}", A),
            (Method::POST, "/openapi.json", A),
        ];
        for (method, route, want) in cases {
            assert_eq!(required(&method, route, false), want, "{method} {route}");
            assert_eq!(required(&method, route, true), want, "{method} {route} with a public document");
        }
        assert_eq!(required(&Method::GET, "/openapi.json", false), V, "the document needs a viewer by default");
        assert_eq!(required(&Method::GET, "/openapi.json", true), Access::Public, "unless configured public");
    }
}
