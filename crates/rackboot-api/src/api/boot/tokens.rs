//! The boot tokens in the URLs of a machine's files that are not public (answer files, the
//! NoCloud seed): a request is answered only with one of the machine's live tokens for that
//! file, never for its source address alone. A token travels only in the URL path, which
//! rackboot never logs or records (events say what was served, not where from).

use std::net::SocketAddr;

use axum::http::StatusCode;

use crate::api::{ApiError, ApiState};
use crate::cmdb::{TokenCheck, TokenUse};
use crate::mac::Mac;
use crate::planner::NO_TOKEN;

/// The longest token looked up (an issued one is 32 hex digits).
const MAX_TOKEN: usize = 64;

/// Refuses (403) a request for `mac`'s `used` file whose `token` is not one of its live ones.
pub(super) async fn require(
    s: &ApiState,
    mac: Mac,
    used: TokenUse,
    token: &str,
    peer: SocketAddr,
) -> Result<(), ApiError> {
    let refuse = |why: &str| {
        tracing::warn!(%mac, from = %peer.ip(), file = ?used, "{why}");
        Err(ApiError::new(StatusCode::FORBIDDEN, why.to_string()))
    };
    if token == NO_TOKEN {
        return refuse(
            "this URL carries no boot token: the boot script that named it did not go to the machine's own address",
        );
    }
    if token.is_empty() || token.len() > MAX_TOKEN || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return refuse("not a boot token");
    }
    match s.cmdb.check_boot_token(mac, used, token).await? {
        TokenCheck::Valid => Ok(()),
        TokenCheck::Expired => refuse("the boot token has expired: boot the machine again"),
        TokenCheck::Unknown => refuse("unknown boot token (not this machine's, or replaced by later boots)"),
    }
}

/// The answer to a URL of the shape before boot tokens (`/boot/answer/{kind}?mac=`,
/// `/boot/nocloud/{mac}/{file}`, `/boot/cloud-init/{mac}/{file}`): what a machine's own
/// address could read once now needs the token its boot script or install gave it.
pub(super) async fn tokenless() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "a machine's answer files and cloud-init seed are served only at the URL with its boot token \
         (the one its boot script or installed system names)",
    )
}
