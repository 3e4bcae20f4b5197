//! The UI's static files, embedded in the binary: vendored htmx (pinned, see `ui/VENDOR.md`),
//! the style sheet and the page script.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::UiState;

const HTMX: &[u8] = include_bytes!("../../../assets/ui/htmx.min.js");
const CSS: &[u8] = include_bytes!("../../../assets/ui/ui.css");
const JS: &[u8] = include_bytes!("../../../assets/ui/ui.js");

/// The pinned htmx version and the sha512 (base64) of its `dist/htmx.min.js`, as in
/// `ui/VENDOR.md`.
pub const HTMX_VERSION: &str = "2.0.11";
pub const HTMX_SHA512: &str =
    "YdHy6FzjD4qoyI/yWGIbsKnJHe98r96np9XeYp3ovFL+0sNP/NbDrYlSLDr5a6Ndi5sRi9GgJj+suE7yLeUMNQ==";

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/assets/{name}", get(asset))
}

/// One embedded file by name; anything else is 404.
async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "htmx.min.js" => (HTMX, "text/javascript; charset=utf-8"),
        "ui.js" => (JS, "text/javascript; charset=utf-8"),
        "ui.css" => (CSS, "text/css; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such asset\n").into_response(),
    };
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "private, max-age=3600")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use sha2::{Digest, Sha512};

    #[test]
    fn the_embedded_htmx_is_the_pinned_file() {
        let sum = base64::engine::general_purpose::STANDARD.encode(Sha512::digest(HTMX));
        assert_eq!(sum, HTMX_SHA512, "assets/ui/htmx.min.js is not htmx.org {HTMX_VERSION} as pinned");
        let vendor = include_str!("../../../ui/VENDOR.md");
        assert!(vendor.contains(&format!("sha512-{HTMX_SHA512}")), "ui/VENDOR.md records another sum");
        let lock = include_str!("../../../ui/package-lock.json");
        assert!(lock.contains(&format!("htmx.org-{HTMX_VERSION}.tgz")), "package-lock.json pins another version");
        assert!(std::str::from_utf8(HTMX).unwrap().contains(&format!("version:\"{HTMX_VERSION}\"")));
    }

    #[test]
    fn embedded_files_name_no_other_origin() {
        for (name, body) in [("ui.js", JS), ("ui.css", CSS)] {
            let text = std::str::from_utf8(body).unwrap();
            assert!(!text.contains("http://") && !text.contains("https://") && !text.contains("//cdn"), "{name}");
        }
    }
}
