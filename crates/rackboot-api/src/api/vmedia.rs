//! `/vmedia/{machine}.iso` on HTTPS: a machine's virtual-media boot ISO, to the BMC that was
//! told to insert it and no one else: the one-time credentials it was given with the URL (401
//! without them), from the BMC's own address (403 from any other). HEAD and ranges are served
//! (BMCs read ISOs in pieces). No ISO is inserted for the machine: 404.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use tower::ServiceExt;
use tower_http::services::ServeFile;

use super::{ApiError, ApiState};
use crate::vmedia::Refusal;

pub(super) async fn iso(
    State(s): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
    req: Request,
) -> Result<Response, ApiError> {
    let vmedia = s.vmedia.as_ref().ok_or_else(|| ApiError::not_found("virtual media is off"))?;
    let id = name
        .strip_suffix(".iso")
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| ApiError::not_found("no such ISO"))?;
    let auth = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    match vmedia.authorize(id, peer.ip(), auth) {
        Ok(path) => {
            let served = ServeFile::new(path).oneshot(req).await.map_err(|e| ApiError::internal(e.to_string()))?;
            Ok(served.into_response())
        }
        Err(Refusal::NotFound) => Err(ApiError::not_found(format!("no ISO is inserted for machine {id}"))),
        Err(Refusal::Unauthorized) => Ok((
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Basic realm=\"rackboot-vmedia\"")],
            "the credentials the BMC was given with this URL are needed",
        )
            .into_response()),
        Err(Refusal::Forbidden) => {
            tracing::warn!(machine = id, %peer, "a virtual-media ISO asked for from another address than its BMC's");
            Err(ApiError::new(StatusCode::FORBIDDEN, "only the machine's BMC fetches its ISO"))
        }
    }
}
