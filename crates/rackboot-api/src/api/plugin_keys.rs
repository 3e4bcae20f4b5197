//! `/api/v1/plugin-keys`: the vendors' minisign keys rackboot trusts (admin to change). A
//! revoked key verifies nothing more, and the versions it signed are disabled.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::cmdb::Caller;
use crate::plugins::{manifest::valid_name, verify, TrustedKey};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list, add)).routes(routes!(revoke))
}

/// A key to trust.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// The vendor whose plugins it may sign (letters, digits, '-').
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")]
    pub vendor: String,
    /// The `minisign.pub` file's text, or its base64 line.
    #[schema(pattern = r"^(untrusted comment: [^\r\n]*\n)?RW[Q-T][A-Za-z0-9+/]{53}\n?$")]
    pub public_key: String,
}

/// Every trusted key.
#[derive(Serialize, ToSchema)]
pub struct KeyList {
    pub keys: Vec<TrustedKey>,
}

/// Every trusted key, revoked ones included.
#[utoipa::path(get, path = "/plugin-keys", tag = "plugins",
    responses((status = 200, description = "Every key", body = KeyList)))]
async fn list(State(s): State<ApiState>) -> Result<Json<KeyList>, ApiError> {
    Ok(Json(KeyList { keys: s.cmdb.plugin_keys().await? }))
}

/// Trusts a minisign public key for one vendor.
#[utoipa::path(post, path = "/plugin-keys", tag = "plugins", request_body = NewKey,
    responses((status = 201, description = "Trusted", body = TrustedKey),
        (status = 409, description = "The key is already trusted", body = super::Problem, content_type = "application/problem+json")))]
async fn add(
    State(s): State<ApiState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<NewKey>, JsonRejection>,
) -> Result<(StatusCode, Json<TrustedKey>), ApiError> {
    let Json(k) = body?;
    if !valid_name(&k.vendor) {
        return Err(ApiError::field("vendor", format!("vendor {:?} must be 1-64 letters, digits and '-'", k.vendor)));
    }
    if !minisign_public_key_text(&k.public_key) {
        let why = "not a minisign public key: its base64 line (RW..., 56 characters), after its untrusted comment line if given";
        return Err(ApiError::field("public_key", why));
    }
    let parsed = verify::parse_public_key(&k.public_key).map_err(|e| ApiError::field("public_key", e))?;
    let key = TrustedKey {
        key_id: parsed.key_id,
        vendor: k.vendor,
        public_key: parsed.public_key,
        added_at: crate::cmdb::now_secs(),
        added_by: caller.user,
        revoked_at: None,
    };
    Ok((StatusCode::CREATED, Json(s.cmdb.add_plugin_key(key).await?)))
}

/// Exactly the document's pattern for `public_key`: `untrusted comment: ...` and a line break
/// if given, then the key's base64 line (an Ed25519 key: `RW` and a third character of Q-T),
/// then at most one line break.
fn minisign_public_key_text(text: &str) -> bool {
    let key = match text.strip_prefix("untrusted comment: ") {
        Some(rest) => match rest.split_once('\n') {
            Some((comment, key)) if !comment.contains('\r') => key,
            _ => return false,
        },
        None => text,
    };
    let key = key.strip_suffix('\n').unwrap_or(key).as_bytes();
    key.len() == 56
        && key.starts_with(b"RW")
        && (b'Q'..=b'T').contains(&key[2])
        && key.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

/// Revokes a key: it verifies no more uploads, and the versions it signed are disabled (not
/// delivered to agents, not activated).
#[utoipa::path(post, path = "/plugin-keys/{key_id}/revoke", tag = "plugins",
    params(("key_id" = String, Path, description = "Key id (hex, as minisign prints it)")),
    responses((status = 200, description = "Revoked", body = TrustedKey)))]
async fn revoke(State(s): State<ApiState>, Path(key_id): Path<String>) -> Result<Json<TrustedKey>, ApiError> {
    let key = s.cmdb.revoke_plugin_key(key_id.to_ascii_uppercase()).await?;
    tracing::warn!(key = %key.key_id, vendor = %key.vendor, "plugin key revoked; its plugins are disabled");
    Ok(Json(key))
}

#[cfg(test)]
mod tests {
    use super::minisign_public_key_text as ok;

    #[test]
    fn a_public_key_text_is_what_minisign_writes_and_nothing_more() {
        let key = "RWQ0UdrdAIPD+UTB9KD0UrrHfCDHjz8Dy/sOdfRwxRwEeusOCLMCZ49h";
        assert!(ok(key) && ok(&format!("{key}\n")));
        assert!(ok(&format!("untrusted comment: minisign public key F9C38300DDDA5134\n{key}\n")));
        for bad in [
            format!("{key}\n*"),
            format!(" {key}"),
            format!("{key}\n\n"),
            key[..55].to_string(),
            key.replace("RWQ", "RWA"),
        ] {
            assert!(!ok(&bad), "{bad:?}");
        }
    }
}
