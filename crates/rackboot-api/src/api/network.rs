//! `/api/v1/networks` (the config's named networks) and `/api/v1/machines/{id}/network` (a
//! machine's installed network: its spec, and what it resolves to).

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::machines::resolve;
use super::{ApiError, ApiState};
use crate::cmdb::Machine;
use crate::provision::network::{effective, Source};
use rackboot_model::network::{check, Kind, NetSpec, Network};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(networks)).routes(routes!(show, put, clear))
}

/// The named networks of the config (`[[provision.networks]]`); none while provisioning is off.
pub fn named(s: &ApiState) -> Vec<Network> {
    s.engine.as_ref().map(|e| e.cfg.networks.clone()).unwrap_or_default()
}

/// The named networks installed nodes take static addresses in.
#[derive(Serialize, ToSchema)]
pub struct NetworkList {
    pub networks: Vec<Network>,
}

/// The config's named networks.
#[utoipa::path(get, path = "/networks", tag = "network",
    responses((status = 200, description = "The named networks", body = NetworkList)))]
async fn networks(State(s): State<ApiState>) -> Json<NetworkList> {
    Json(NetworkList { networks: named(&s) })
}

/// One device as the installed system will have it.
#[derive(Serialize, ToSchema)]
pub struct DeviceView {
    pub name: String,
    /// `ethernet`, `bond` or `vlan`.
    pub kind: String,
    /// An Ethernet port's (found by its `port` in the inventory) or a bond's MAC.
    pub mac: Option<String>,
    pub dhcp: bool,
    /// `address/prefix`.
    pub address: Option<String>,
    pub network: Option<String>,
    pub mtu: Option<u16>,
}

/// A machine's installed network.
#[derive(Serialize, ToSchema)]
pub struct NetworkView {
    pub machine_id: u64,
    pub source: Source,
    /// The spec in force (its own or its rack's); `null`: DHCP on every Ethernet port.
    pub spec: Option<NetSpec>,
    pub devices: Vec<DeviceView>,
    /// The default route: `device via gateway`.
    pub gateway: Option<String>,
    #[schema(value_type = Vec<String>)]
    pub dns: Vec<std::net::Ipv4Addr>,
    /// Why the spec cannot be written for this machine yet (a port the inventory does not
    /// list, a network without an address for it); the install would fail with this.
    pub problem: Option<String>,
    /// The same as cloud-init network-config version 2.
    #[schema(value_type = Option<Object>)]
    pub network_config: Option<serde_json::Value>,
}

async fn view(s: &ApiState, m: &Machine) -> Result<NetworkView, ApiError> {
    let eff = effective(&s.cmdb, &named(s), m).await?;
    let mut v = NetworkView {
        machine_id: m.id,
        source: eff.source,
        spec: eff.spec.clone(),
        devices: vec![],
        gateway: None,
        dns: vec![],
        problem: None,
        network_config: None,
    };
    match eff.resolved {
        Err(e) => v.problem = Some(e),
        Ok(None) => {}
        Ok(Some(r)) => {
            v.network_config = Some(crate::netcfg::netplan_v2(&r));
            v.gateway = r.gateway.as_ref().map(|(d, g)| format!("{d} via {g}"));
            v.dns = r.dns.clone();
            v.devices = r
                .devices
                .into_iter()
                .map(|d| {
                    let (kind, mac) = match &d.kind {
                        Kind::Ethernet { mac, .. } => ("ethernet", *mac),
                        Kind::Bond { mac, .. } => ("bond", *mac),
                        Kind::Vlan { .. } => ("vlan", None),
                    };
                    DeviceView {
                        name: d.name,
                        kind: kind.into(),
                        mac: mac.map(|m| m.to_string()),
                        dhcp: d.dhcp,
                        address: d.address.map(|a| a.to_string()),
                        network: d.network,
                        mtu: d.mtu,
                    }
                })
                .collect();
        }
    }
    Ok(v)
}

/// A machine's installed network: the spec in force, where it comes from, and the devices,
/// addresses and routes it resolves to.
#[utoipa::path(get, path = "/machines/{id}/network", tag = "network",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The machine's network", body = NetworkView)))]
async fn show(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<NetworkView>, ApiError> {
    let m = resolve(&s, &key).await?;
    Ok(Json(view(&s, &m).await?))
}

/// Sets a machine's installed network (used by its next install). Refused with the field at
/// fault (`network.bonds[0].members[1]`), and nothing stored, when the spec is bad; 409 when an
/// address is another machine's or in a rack's plan. An empty spec `{}` returns the machine to
/// its rack's default.
#[utoipa::path(put, path = "/machines/{id}/network", tag = "network", request_body = NetSpec,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The machine's network", body = NetworkView),
        (status = 400, description = "A bad spec (the field is named)", body = super::Problem, content_type = "application/problem+json"),
        (status = 409, description = "An address is held by another machine or a rack's plan", body = super::Problem, content_type = "application/problem+json")))]
async fn put(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<NetSpec>, JsonRejection>,
) -> Result<Json<NetworkView>, ApiError> {
    let Json(spec) = body?;
    let m = resolve(&s, &key).await?;
    check(&spec, &named(&s), false).map_err(|e| ApiError::field(&format!("network.{}", e.field), e.to_string()))?;
    let m = s.cmdb.set_machine_network(m.id, Some(spec)).await?;
    Ok(Json(view(&s, &m).await?))
}

/// Removes a machine's own network: its rack's default (or DHCP everywhere) applies again.
#[utoipa::path(delete, path = "/machines/{id}/network", tag = "network",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The machine's network now", body = NetworkView)))]
async fn clear(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<NetworkView>, ApiError> {
    let m = resolve(&s, &key).await?;
    let m = s.cmdb.set_machine_network(m.id, None).await?;
    Ok(Json(view(&s, &m).await?))
}
