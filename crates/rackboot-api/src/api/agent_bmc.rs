//! `/agent/v1` for in-band BMC accounts: after an inventory that found a BMC, the set-up job is
//! queued if due; `POST /agent/v1/jobs/{id}/bmc-account` takes what the job set up (the
//! password only ever travels here, on the agent's TLS connection, and is sealed at once).

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use rackboot_agent::wire::{AgentMode, BmcAccountReport};

use super::agent::{bad_json, machine};
use super::{ApiError, ApiState};
use crate::bmc::inband::{self, InbandError};

/// Queues the set-up for a BootOS agent's machine whose inventory found a BMC, if it is due (failures are logged: the
/// inventory itself was taken).
pub(super) async fn inventoried(s: &ApiState, power: &crate::bmc::Power, id: u64) {
    let bootos = match s.hub.cmdb.agent(id).await {
        Ok(a) => a.is_some_and(|a| a.mode == AgentMode::Bootos),
        Err(_) => false,
    };
    match inband::queue_if_due(&s.hub.cmdb, power.config(), id, true, bootos).await {
        Ok(Some(job)) => {
            tracing::info!(machine = id, job = job.id, "in-band BMC account queued");
            s.hub.wake(id);
        }
        Ok(None) => {}
        Err(error) => tracing::warn!(machine = id, %error, "in-band BMC account not queued"),
    }
}

/// What a `bmc_account` job set up, from the agent running it.
pub(super) async fn bmc_account(
    State(s): State<ApiState>,
    headers: HeaderMap,
    Path(job_id): Path<u64>,
    body: Result<Json<BmcAccountReport>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let id = machine(&s, &headers).await?;
    let Json(report) = body.map_err(bad_json)?;
    let power = s.power.as_ref().ok_or_else(|| ApiError::not_found("BMC power control is off"))?;
    match inband::register(power, &s.hub.cmdb, id, job_id, report).await {
        Ok(_) => Ok(StatusCode::NO_CONTENT),
        Err(InbandError::NotFound(what)) => Err(ApiError::not_found(format!("no {what} on this machine"))),
        Err(InbandError::Refused(why)) => Err(ApiError::new(StatusCode::CONFLICT, why)),
        Err(InbandError::Cmdb(e)) => Err(e.into()),
        Err(e @ InbandError::Seal(_)) => Err(ApiError::internal(e.to_string())),
    }
}
