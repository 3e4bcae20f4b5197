//! `GET /boot/cloud-init/{mac}/{token}/{meta-data|user-data|vendor-data|network-config}`: the
//! NoCloud seed of an installed node, which its cloud-init finds through the `seedfrom` the
//! identity step writes. Only the machine itself is answered: with the seed token of its
//! install (which reached it through its agent or its installer's report-back, never a boot
//! script), from its own address. User-data may hold secrets, and plain HTTP carries it on the
//! provisioning network only. The instance id
//! changes with each install (its provisioning run), so cloud-init runs once per install.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::api::{ApiError, ApiState};
use crate::cmdb::userdata::Owner;
use crate::cmdb::{EventKind, TokenUse};
use crate::mac::Mac;
use rackboot_model::cloudinit::{instance_id, meta_data, pick};

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/cloud-init/{mac}/{token}/{file}", get(seed))
        .route("/cloud-init/{mac}/{file}", get(super::tokens::tokenless))
}

/// Events of a machine looked through for its last provisioning run.
const SCAN: usize = 20_000;

async fn seed(
    State(s): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((mac, token, file)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    let mac: Mac = mac.parse().map_err(|e: crate::mac::ParseMacError| ApiError::not_found(e.to_string()))?;
    let m = s.cmdb.machine_by_mac(mac).await?;
    super::tokens::require(&s, mac, TokenUse::Seed, &token, peer).await?;
    if !s.cmdb.is_address_of(peer.ip(), mac, Some(&m)).await {
        return Err(ApiError::new(StatusCode::FORBIDDEN, format!("{} is not this machine's address", peer.ip())));
    }
    // The run that installed it: from its last `provision.queued` event.
    let queued = s.cmdb.last_event_of(m.id, EventKind::ProvisionQueued, SCAN).await?;
    let field = |k: &str| queued.as_ref().and_then(|e| e.detail[k].as_u64());
    let (task, run) = (field("task"), field("run"));
    let text = match file.as_str() {
        "meta-data" => {
            let hostname = m.hostname.clone().unwrap_or_else(|| format!("node-{}", m.id));
            meta_data(&instance_id(m.id, run), &hostname)
        }
        "user-data" => {
            let own = s.cmdb.user_data(Owner::Machine(m.id)).await?;
            let of_task = match task {
                Some(t) => s.cmdb.user_data(Owner::Task(t)).await?,
                None => None,
            };
            let of_rack = match &m.rack {
                Some(r) => s.cmdb.user_data(Owner::Rack(r.clone())).await?,
                None => None,
            };
            let text = |u: &Option<crate::cmdb::userdata::UserData>| u.as_ref().map(|u| u.text.clone());
            let (own, of_task, of_rack) = (text(&own), text(&of_task), text(&of_rack));
            pick(own.as_deref(), of_task.as_deref(), of_rack.as_deref()).unwrap_or("#cloud-config\n{}\n").to_string()
        }
        "vendor-data" => "#cloud-config\n{}\n".to_string(),
        "network-config" => {
            let networks = super::super::network::named(&s);
            let eff = crate::provision::network::effective(&s.cmdb, &networks, &m).await?;
            match eff.resolved {
                Ok(Some(r)) => crate::netcfg::netplan_v2(&r).to_string(),
                Ok(None) => return Err(ApiError::not_found("the machine has no network spec")),
                Err(e) => return Err(ApiError::new(StatusCode::CONFLICT, e)),
            }
        }
        other => return Err(ApiError::not_found(format!("no NoCloud file {other:?}"))),
    };
    s.cmdb.record_firmware(
        Some(peer.ip()),
        crate::cmdb::Sighting { mac: Some(mac), ..Default::default() },
        vec![(EventKind::BootAnswer, serde_json::json!({"kind": format!("cloud-init/{file}")}))],
    );
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}
