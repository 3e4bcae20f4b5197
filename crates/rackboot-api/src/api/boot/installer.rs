//! What OS installers fetch: their answer files (`/boot/answer`, `/boot/nocloud`) and the
//! post-install report-back (`/boot/installed`) that hands the installed node to its agent.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

use crate::api::{ApiError, ApiState};
use crate::cmdb::{EventKind, TokenUse};
use crate::controller::Hub;
use crate::mac::Mac;

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/answer/{kind}/{token}", get(answer))
        .route("/nocloud/{mac}/{token}/{file}", get(nocloud))
        .route("/answer/{kind}", get(super::tokens::tokenless))
        .route("/nocloud/{mac}/{file}", get(super::tokens::tokenless))
        .route("/installed", get(installed))
}

#[derive(Deserialize)]
struct AnswerQuery {
    mac: String,
    /// Target disk; default: the machine's provisioning task's, else the largest in its inventory.
    disk: Option<String>,
}

/// A machine about to be installed by an installer: its record, its active run and that run's
/// task, if any.
struct Installing {
    mac: Mac,
    machine: crate::cmdb::Machine,
    run: Option<crate::provision::Run>,
    spec: Option<crate::provision::TaskSpec>,
}

impl Installing {
    async fn load(s: &ApiState, mac: &str) -> Result<Installing, ApiError> {
        let mac: Mac = mac
            .parse()
            .map_err(|e: crate::mac::ParseMacError| ApiError::new(StatusCode::BAD_REQUEST, e.to_string()))?;
        let machine = s.cmdb.machine_by_mac(mac).await?;
        let run = s.cmdb.active_runs().await?.into_iter().find(|r| r.machine_id == Some(machine.id));
        let spec = match &run {
            Some(r) => Some(s.cmdb.task(r.task_id).await?.spec),
            None => None,
        };
        Ok(Installing { mac, machine, run, spec })
    }

    fn hostname(&self) -> String {
        let m = &self.machine;
        self.run
            .as_ref()
            .and_then(|r| r.hostname.clone())
            .or(m.hostname.clone())
            .unwrap_or_else(|| format!("node-{}", m.id))
    }

    fn ssh_keys(&self) -> Vec<String> {
        self.spec.as_ref().map(|sp| sp.ssh_keys.clone()).unwrap_or_default()
    }
}

/// `GET /boot/answer/{kickstart|preseed|autoinstall}/{token}?mac=`: the installer answer file
/// for one machine (`token`: the answer token its boot script carried; see [`super::tokens`]), rendered from `templates/installer/` with its hostname, the DNS domain, its target
/// disk, the SSH keys of its provisioning task and its network spec in the installer's terms
/// (422 when the spec cannot be resolved or said there). An installer boot profile's command line
/// points at it with `{{ answer_url }}` (set `answer` on the profile). Its post-install step
/// fetches `/boot/installed` (with the run's token in an `Authorization` header when a
/// provisioning run set the boot up).
async fn answer(
    State(s): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    axum::extract::Path((kind, token)): axum::extract::Path<(String, String)>,
    Query(q): Query<AnswerQuery>,
) -> Result<Response, ApiError> {
    let text = render_answer(&s, &kind, (&q.mac, &token), q.disk, peer).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

/// `GET /boot/nocloud/{mac}/{token}/{user-data|meta-data|vendor-data}`: the autoinstall answer
/// file as a cloud-init NoCloud seed, which is how Ubuntu's installer takes it
/// (`ds=nocloud-net;s={{ answer_url }}`: cloud-init appends the file names to the URL).
async fn nocloud(
    State(s): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    axum::extract::Path((mac, token, file)): axum::extract::Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    let text = match file.as_str() {
        "user-data" => render_answer(&s, "autoinstall", (&mac, &token), None, peer).await?,
        "meta-data" => {
            let it = Installing::load(&s, &mac).await?;
            super::tokens::require(&s, it.mac, TokenUse::Answer, &token, peer).await?;
            format!("instance-id: rackboot-{}\nlocal-hostname: {}\n", it.machine.id, it.hostname())
        }
        "vendor-data" => {
            let it = Installing::load(&s, &mac).await?;
            super::tokens::require(&s, it.mac, TokenUse::Answer, &token, peer).await?;
            String::new()
        }
        other => return Err(ApiError::new(StatusCode::NOT_FOUND, format!("no NoCloud file {other:?}"))),
    };
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

/// Whether the request comes from the machine itself, as far as rackboot can tell (see
/// [`crate::cmdb::Cmdb::is_address_of`]): only then does it see or use the installer token.
/// An installer that brought up the machine's network spec calls from one of its static
/// addresses, which the CMDB gives to this machine only.
async fn from_machine(s: &ApiState, peer: SocketAddr, it: &Installing) -> bool {
    if s.cmdb.is_address_of(peer.ip(), it.mac, Some(&it.machine)).await {
        return true;
    }
    let networks = super::super::network::named(s);
    let Ok(eff) = crate::provision::network::effective(&s.cmdb, &networks, &it.machine).await else { return false };
    let Ok(Some(net)) = eff.resolved else { return false };
    net.devices.iter().filter_map(|d| d.address).any(|a| std::net::IpAddr::V4(a.addr()) == peer.ip())
}

/// Renders answer file `kind` for the machine with `mac`, given its answer token (see
/// [`answer`]). The report-back step gets the installer token (sent back in a header) only for
/// a request from the machine's own address.
async fn render_answer(
    s: &ApiState,
    kind: &str,
    (mac, token): (&str, &str),
    disk: Option<String>,
    peer: SocketAddr,
) -> Result<String, ApiError> {
    let boot = s.boot.as_ref().ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "no boot service"))?;
    if !crate::render::ANSWER_KINDS.contains(&kind) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no answer file {kind:?} (kickstart, preseed, autoinstall)"),
        ));
    }
    let it = Installing::load(s, mac).await?;
    super::tokens::require(s, it.mac, TokenUse::Answer, token, peer).await?;
    let disk = match (disk, &it.spec) {
        (Some(d), _) => d,
        (None, sp) => {
            let choice = sp.as_ref().map_or("auto", |sp| sp.disk.as_str());
            let hints = sp.as_ref().and_then(|sp| sp.root_device.as_ref());
            crate::provision::action::target_disk(choice, hints, &it.machine)
                .map_err(|e| ApiError::new(StatusCode::CONFLICT, e))?
        }
    };
    let repo_url = boot.answer_repos.get(kind).cloned().unwrap_or_default();
    let rest = repo_url.split_once("://").map_or(repo_url.as_str(), |(_, r)| r);
    let (repo_host, repo_path) = match rest.find('/') {
        Some(i) => (rest[..i].to_string(), rest[i..].to_string()),
        None => (rest.to_string(), "/".to_string()),
    };
    let finish_token = match &it.machine.installer {
        Some(b) if from_machine(s, peer, &it).await => b.token.clone(),
        _ => String::new(),
    };
    let finish_url = format!("{}/boot/installed?mac={}", boot.http_base, it.mac);
    let network = {
        let networks = super::super::network::named(s);
        let eff = crate::provision::network::effective(&s.cmdb, &networks, &it.machine).await?;
        let unfit = |e: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, format!("the machine's network: {e}"));
        let net = eff.resolved.map_err(unfit)?;
        crate::netcfg::installer::render(kind, net.as_ref()).map_err(unfit)?
    };
    let vars = crate::render::AnswerVars {
        mac: it.mac.to_string(),
        hostname: it.hostname(),
        domain: boot.domain.clone(),
        disk_name: disk.rsplit('/').next().unwrap_or(&disk).to_string(),
        disk,
        ssh_keys: it.ssh_keys(),
        appliance_url: boot.http_base.clone(),
        repo_url,
        repo_host,
        repo_path,
        proxy: boot.installer_proxy.clone(),
        finish_url,
        finish_token,
        network,
    };
    let text = boot
        .renderer
        .current()
        .answer(kind, &vars)
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    s.cmdb.record_firmware(
        Some(peer.ip()),
        crate::cmdb::Sighting { mac: Some(it.mac), ..Default::default() },
        vec![(EventKind::BootAnswer, serde_json::json!({"kind": kind}))],
    );
    Ok(text)
}

#[derive(Deserialize)]
struct InstalledQuery {
    mac: String,
    /// Refused: the token travels in the `Authorization` header, never in a URL (URLs end up
    /// in proxy and access logs).
    token: Option<String>,
}

/// The installer token of a `/boot/installed` report: `Authorization: Bearer <token>`.
fn bearer(headers: &axum::http::HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let token = v
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty() && t.len() <= 128)
        .ok_or_else(|| ApiError::new(StatusCode::BAD_REQUEST, "Authorization must be \"Bearer <installer token>\""))?;
    Ok(Some(token.to_string()))
}

/// `GET /boot/installed?mac=` (`Authorization: Bearer <token>`): an installer's post-install
/// step reports back. The
/// answer is the machine's identity script, to run as `sh script ROOT` against the installed
/// system. With the token of the machine's installer boot (from the machine's own address) it
/// carries a fresh agent credential, the machine boots its disk from now on, and its run waits
/// for the installed agent (a retried report gets another credential, until that agent checks
/// in); without an installer boot (an operator booted an installer by hand) the agent
/// enrolls like any other.
async fn installed(
    State(s): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
    Query(q): Query<InstalledQuery>,
) -> Result<Response, ApiError> {
    let boot = s.boot.as_ref().ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "no boot service"))?;
    if q.token.is_some() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "the installer token goes in the Authorization header (Bearer), not in the URL",
        ));
    }
    let token = bearer(&headers)?;
    let it = Installing::load(&s, &q.mac).await?;
    let id = it.machine.id;
    if token.is_some() && !from_machine(&s, peer, &it).await {
        return Err(ApiError::new(StatusCode::FORBIDDEN, format!("{} is not this machine's address", peer.ip())));
    }
    // With the token: a fresh agent credential goes into the script. The script is rendered
    // before the token is used up, so a script that cannot be rendered costs nothing.
    let (secret_hash, session, seed_token) = match (&it.machine.installer, &token) {
        (Some(_), Some(_)) => {
            let (secret, hash) =
                Hub::new_secret().map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
            let cfg = &s.hub.cfg;
            let session = rackboot_agent::wire::EnrollResponse {
                machine_id: id,
                credential: format!("{id}.{secret}"),
                approved: true,
                poll_secs: cfg.poll.as_secs(),
                stats_secs: cfg.stats.as_secs(),
                lease_secs: cfg.lease.as_secs(),
            };
            let json = serde_json::to_string(&session)
                .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
            // The seed token of this install, in the seed URL the installed system keeps.
            let seed = match crate::provision::action::seed_mac(&it.machine) {
                Some(mac) => s.cmdb.issue_boot_token(mac, TokenUse::Seed, peer.ip().to_string(), None).await?,
                None => String::new(),
            };
            (Some(hash), Some(json), seed)
        }
        (Some(_), None) => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "this machine's installer must report back with its token",
            ))
        }
        (None, Some(_)) => {
            return Err(ApiError::new(StatusCode::CONFLICT, "no installer boot is pending (the token was used)"))
        }
        // Installed by hand: no seed token (the node's cloud-init finds no seed).
        (None, None) => (None, None, crate::planner::NO_TOKEN.to_string()),
    };
    let vars = crate::render::IdentityVars {
        disk: "/".into(),
        hostname: it.hostname(),
        domain: boot.domain.clone(),
        appliance_url: boot.http_base.clone(),
        agent_url: boot.agent_url.clone(),
        ca_pem: boot.ca_pem.clone(),
        agent_sha256: agent_sha256(&boot.root).await,
        ssh_keys: it.ssh_keys(),
        session,
        network_files: {
            let networks = super::super::network::named(&s);
            let eff = crate::provision::network::effective(&s.cmdb, &networks, &it.machine).await?;
            eff.files().map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e))?
        },
        cloud_init_url: crate::provision::action::cloud_init_url(&boot.http_base, &it.machine, &seed_token),
        boot_mac: crate::provision::action::boot_mac(&it.machine),
    };
    let text = boot
        .renderer
        .current()
        .identity(&vars)
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    if let (Some(hash), Some(token)) = (secret_hash, token) {
        s.cmdb.installer_finished(id, token, hash).await?;
        // The installer boot is over: its answer file with it.
        s.cmdb.revoke_boot_tokens(it.mac, TokenUse::Answer).await?;
        s.hub.forget(id);
        if let Some(engine) = &s.engine {
            engine.wake();
        }
    }
    tracing::info!(machine = id, mac = %it.mac, "installer reported back");
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

/// SHA-256 (hex) of the agent binary installers download (`bootos/rackboot-agent` in the boot
/// directory); empty when there is none.
async fn agent_sha256(root: &std::path::Path) -> String {
    let path = root.join("bootos/rackboot-agent");
    tokio::task::spawn_blocking(move || {
        use sha2::Digest;
        let bytes = std::fs::read(path).ok()?;
        Some(sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>())
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_default()
}
