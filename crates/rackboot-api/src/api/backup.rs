//! `GET /api/v1/backup` (admin, audited): a consistent snapshot of the CMDB, taken while the
//! appliance serves, streamed as a redb file that `rackboot restore` puts back.

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(backup))
}

/// A consistent snapshot of the whole CMDB (machines, leases, jobs, runs, events, users with
/// their password and token hashes): keep it as safe as the data directory. Writes pause only
/// while the file is copied.
#[utoipa::path(get, path = "/backup", tag = "backup",
    responses((status = 200, description = "The CMDB file (redb)", content_type = "application/octet-stream",
            body = Vec<u8>),
        (status = 403, description = "Needs role admin", body = super::Problem, content_type = "application/problem+json"),
        (status = 500, description = "The snapshot could not be written (e.g. the data disk is full)", body = super::Problem,
            content_type = "application/problem+json")))]
async fn backup(State(s): State<ApiState>) -> Result<Response, ApiError> {
    let (file, contents) = s.cmdb.snapshot_to_stream().await?;
    let len =
        file.metadata().map_err(|e| ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?.len();
    tracing::info!(%contents, "backup downloaded");
    let stream = tokio_util::io::ReaderStream::with_capacity(tokio::fs::File::from_std(file), 256 << 10);
    let headers = [
        (header::CONTENT_TYPE, "application/octet-stream".to_string()),
        (header::CONTENT_LENGTH, len.to_string()),
        (header::CONTENT_DISPOSITION, "attachment; filename=\"rackboot.redb\"".to_string()),
        (header::CACHE_CONTROL, "no-store".to_string()),
    ];
    Ok((headers, Body::from_stream(stream)).into_response())
}
