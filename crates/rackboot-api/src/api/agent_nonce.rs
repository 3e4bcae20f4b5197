//! `POST /agent/v1/nonce`: this boot's enrollment nonce for a BootOS that came from its one
//! UEFI image over HTTPS boot, whose command line is the same for every machine. The agent asks
//! over TLS pinned to the appliance's CA; the nonce is issued as a boot script's is, only for a
//! MAC whose address the request comes from (see [`crate::cmdb::Cmdb::is_address_of`]), and
//! counts against the per-source enrollment budget.

use std::net::SocketAddr;

use axum::extract::rejection::JsonRejection;
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::Json;
use rackboot_agent::wire::{NonceRequest, NonceResponse};
use serde_json::json;

use super::{ApiError, ApiState};
use crate::cmdb::{EventKind, Sighting};
use crate::mac::Mac;

/// MACs looked at, at most (a server has a handful of NICs).
const MAX_MACS: usize = 16;

pub(super) async fn boot_nonce(
    State(s): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    body: Result<Json<NonceRequest>, JsonRejection>,
) -> Result<Json<NonceResponse>, ApiError> {
    let Json(req) = body.map_err(super::agent::bad_json)?;
    if req.macs.is_empty() || req.macs.len() > MAX_MACS {
        return Err(ApiError::field("macs", format!("macs: 1 to {MAX_MACS} MACs")));
    }
    let macs = req
        .macs
        .iter()
        .map(|m| m.parse::<Mac>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::field("macs", format!("macs: {e}")))?;
    super::agent::limit_source(&s, peer.ip())?;
    let boot = s.boot.as_ref().ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "boot endpoints are off"))?;
    for mac in macs {
        let machine = s.cmdb.machine_by_mac(mac).await.ok();
        if !s.cmdb.is_address_of(peer.ip(), mac, machine.as_ref()).await {
            continue;
        }
        let nonce = s.cmdb.issue_boot_nonce(mac, peer.to_string(), boot.nonce_ttl_secs).await?;
        let detail = json!({"plan": "image", "loader": "image", "nonce": true, "from": peer.to_string()});
        s.cmdb.record_firmware(
            Some(peer.ip()),
            Sighting { mac: Some(mac), ..Default::default() },
            vec![(EventKind::BootScript, detail)],
        );
        return Ok(Json(NonceResponse { mac: mac.to_string(), nonce }));
    }
    tracing::warn!(from = %peer.ip(), "boot nonce refused: none of the MACs has this address");
    Err(ApiError::new(StatusCode::FORBIDDEN, format!("{} is the address of none of these MACs", peer.ip())))
}
