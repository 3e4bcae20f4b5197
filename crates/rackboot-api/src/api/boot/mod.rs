//! `/boot`: per-MAC iPXE scripts from the planner and templates, and boot assets (kernels,
//! initrds, images, iPXE binaries) from the boot directory with HEAD, Range and ETag; the
//! installers' answer files and report-back are in [`installer`].

mod cloudinit;
pub mod grub;
mod installer;
mod tokens;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Query, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use serde_json::json;
use tower_http::services::ServeDir;

use super::{ApiError, ApiState};
use crate::cmdb::EventKind;
use crate::cmdb::{Sighting, TokenUse};
use crate::config::Profile;
use crate::mac::Mac;
use crate::planner::{self, BootPlan};
use crate::render::{Loader, ScriptVars};

/// What the boot endpoints need.
pub struct BootState {
    /// The boot templates, defaults plus the CMDB's overrides; swapped when one changes.
    pub renderer: crate::templates::Templates,
    pub profiles: BTreeMap<String, Profile>,
    pub discovery_profile: String,
    pub http_base: String,
    /// The HTTPS base URL agents use (`{{ agent_url }}`).
    pub agent_url: String,
    /// The same two on the appliance's IPv6 address (beside the DHCPv6 server): a machine that
    /// asks over IPv6 is sent there.
    pub http_base6: Option<String>,
    pub agent_url6: Option<String>,
    /// `sha256:<hex>` of the CA certificate agents pin (`{{ ca_pin }}`).
    pub ca_pin: String,
    /// The CA certificate (PEM) installed nodes trust.
    pub ca_pem: String,
    /// The boot directory (also the TFTP root).
    pub root: PathBuf,
    /// The DNS domain machines live in (answer files).
    pub domain: String,
    /// Repository or mirror per answer-file kind.
    pub answer_repos: BTreeMap<String, String>,
    /// HTTP proxy for installers (empty: none).
    pub installer_proxy: String,
    /// How long a boot's enrollment nonce stays valid.
    pub nonce_ttl_secs: u64,
}

pub use rackboot_http::files::{etag_of, FILES_ROUTE};

pub fn routes(state: &ApiState) -> Router<ApiState> {
    let root = state.boot.as_ref().map(|b| b.root.clone()).unwrap_or_default();
    let files: Router = Router::new()
        // Larger reads than the 64 KiB default: each chunk is a hop to the blocking pool. 256 KiB
        // measured 1.4x the default; 1 MiB a little more, at 1 MiB of RSS per busy connection.
        .fallback_service(ServeDir::new(root).with_buf_chunk_size(256 << 10))
        .layer(middleware::from_fn_with_state(state.clone(), etag_and_timeline));
    Router::new()
        .route("/ipxe", get(ipxe))
        .merge(installer::routes())
        .merge(cloudinit::routes())
        .nest_service("/files", files)
        .layer(middleware::map_response(unexplained))
}

/// Firmware and unauthenticated callers learn nothing of the appliance's inside from a failure
/// (a 503 would otherwise name the store's host and database): a 5xx answer says only that
/// the log has the reason, which every failure above logged.
async fn unexplained(resp: Response) -> Response {
    if !resp.status().is_server_error() {
        return resp;
    }
    let text = "rackboot could not answer this boot request; the appliance's log says why\n";
    (resp.status(), [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

#[derive(Deserialize)]
struct ScriptQuery {
    mac: String,
    /// "efi" or "pcbios" (iPXE's `${platform}`); default: the arch DHCP last saw.
    platform: Option<String>,
}

/// `GET /boot/ipxe?mac=`: the machine's iPXE script from the planner's decision (see
/// [`script_for`]).
async fn ipxe(
    State(s): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(q): Query<ScriptQuery>,
) -> Result<Response, ApiError> {
    let mac: Mac =
        q.mac.parse().map_err(|e: crate::mac::ParseMacError| ApiError::new(StatusCode::BAD_REQUEST, e.to_string()))?;
    let uefi = q.platform.as_deref().map(|p| p == "efi");
    let script = script_for(&s, mac, peer.ip(), Loader::Ipxe, uefi).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], script).into_response())
}

/// The boot script of `mac` for `loader`, from the planner's decision; recorded on the
/// machine's timeline with the loader. A boot of an agent profile (BootOS) carries a fresh
/// one-time enrollment nonce, and an installer's boot a fresh token for its answer file, but
/// only when the request comes from the machine's own address (see
/// [`crate::cmdb::Cmdb::is_address_of`]). `uefi`: the firmware, when the client said; else
/// the arch DHCP last saw.
pub async fn script_for(
    s: &ApiState,
    mac: Mac,
    peer: IpAddr,
    loader: Loader,
    uefi: Option<bool>,
) -> Result<String, ApiError> {
    let boot = s.boot.as_ref().ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "boot endpoints are off"))?;
    let machine = s.cmdb.machine_by_mac(mac).await.ok();
    let profiles = super::profiles::all_profiles(s).await?;
    // A machine that asked over IPv6 (not an IPv4-mapped address) fetches the rest there too.
    let (http_base, agent_url) = match (peer, &boot.http_base6, &boot.agent_url6) {
        (IpAddr::V6(ip), Some(h), Some(a)) if ip.to_ipv4_mapped().is_none() => (h, a),
        _ => (&boot.http_base, &boot.agent_url),
    };
    let ctx = planner::PlanContext { http_base, discovery_profile: &boot.discovery_profile, profiles: &profiles };
    let mut plan = planner::plan_boot(mac, machine.as_ref(), &ctx).map_err(|e| {
        tracing::warn!(%mac, error = %e, "cannot plan a boot");
        ApiError::internal(e.to_string())
    })?;
    let uefi =
        uefi.unwrap_or_else(|| machine.as_ref().and_then(|m| m.last_arch.as_deref()).is_some_and(|a| a != "bios"));
    // The secrets of this boot go only to the machine's own address.
    let secrets = match &plan {
        BootPlan::Profile(p) if p.agent || p.answer.is_some() => {
            s.cmdb.is_address_of(peer, mac, machine.as_ref()).await
        }
        _ => false,
    };
    let mut boot_nonce = None;
    let mut answer_token = false;
    if let (BootPlan::Profile(p), true) = (&mut plan, secrets) {
        if p.agent {
            boot_nonce = Some(s.cmdb.issue_boot_nonce(mac, peer.to_string(), boot.nonce_ttl_secs).await?);
        }
        if let Some(kind) = p.answer.clone() {
            let ttl = Some(boot.nonce_ttl_secs);
            let token = s.cmdb.issue_boot_token(mac, TokenUse::Answer, peer.to_string(), ttl).await?;
            p.answer_url = Some(planner::answer_url(http_base, &kind, mac, Some(&token)));
            answer_token = true;
        }
    }
    let vars = ScriptVars {
        mac: mac.to_string(),
        hostname: machine.as_ref().and_then(|m| m.hostname.clone()),
        uefi,
        http_base: http_base.clone(),
        boot_nonce,
        agent_url: agent_url.clone(),
        ca_pin: boot.ca_pin.clone(),
    };
    let script = boot.renderer.current().script(loader, &plan, &vars).map_err(|e| {
        tracing::warn!(%mac, error = %e, "cannot render boot script");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    })?;
    let detail = match &plan {
        BootPlan::Profile(p) => {
            json!({"plan": "profile", "profile": p.name, "reason": p.reason, "uefi": uefi, "loader": loader, "nonce": vars.boot_nonce.is_some(), "answer_token": answer_token, "from": peer.to_string()})
        }
        BootPlan::LocalDisk => json!({"plan": "local-disk", "uefi": uefi, "loader": loader}),
        BootPlan::Windows { profile, media } => {
            json!({"plan": "windows", "profile": profile, "media": media, "uefi": uefi, "loader": loader})
        }
    };
    s.cmdb.record_firmware(
        Some(peer),
        Sighting { mac: Some(mac), ..Default::default() },
        vec![(EventKind::BootScript, detail)],
    );
    Ok(script)
}

/// Adds a strong ETag (size and mtime) to boot assets, answers If-None-Match with 304, and
/// records each served GET on the timeline of the machine leasing the client's address.
async fn etag_and_timeline(
    State(s): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
    next: Next,
) -> Response {
    let rel = req.uri().path().trim_start_matches('/').to_string();
    let (method, range) = (req.method().clone(), req.headers().get(header::RANGE).cloned());
    let tls = req.extensions().get::<rackboot_http::conn::OverTls>().is_some();
    let etag = s.boot.as_ref().and_then(|b| etag_for(&b.root, &rel));
    if let (Some(tag), Some(inm)) = (&etag, req.headers().get(header::IF_NONE_MATCH)) {
        if inm.as_bytes() == tag.as_bytes() || inm == "*" {
            return (StatusCode::NOT_MODIFIED, [(header::ETAG, tag.clone())]).into_response();
        }
    }
    let mut resp = next.run(req).await;
    let status = resp.status();
    if let Some(tag) = etag.filter(|_| status.is_success()) {
        resp.headers_mut().insert(header::ETAG, tag);
    }
    if method == Method::GET && status.is_success() {
        let bytes = resp.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        let detail = json!({"path": rel, "status": status.as_u16(), "bytes": bytes, "range": range.and_then(|r| r.to_str().ok().map(String::from)), "tls": tls});
        if let std::net::IpAddr::V4(ip) = peer.ip() {
            s.cmdb.record_for_ip(ip, EventKind::BootAsset, detail);
        }
    }
    resp
}

fn etag_for(root: &std::path::Path, rel: &str) -> Option<HeaderValue> {
    if rel.split('/').any(|c| c == "..") {
        return None;
    }
    let meta = std::fs::metadata(root.join(rel)).ok().filter(|m| m.is_file())?;
    HeaderValue::from_str(&etag_of(&meta)?).ok()
}

/// Shared boot state for [`ApiState`].
pub type SharedBoot = Option<Arc<BootState>>;
