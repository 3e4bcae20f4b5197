//! A posted form (`application/x-www-form-urlencoded`), read with a size cap; a field may
//! repeat (the machine list's checkboxes).

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Largest form body read (a selection of a few thousand machine ids fits).
pub const MAX_FORM: usize = 256 << 10;

/// A form's fields in order.
pub struct Form(Vec<(String, String)>);

impl Form {
    /// Reads and decodes `body`; 413 past [`MAX_FORM`].
    pub async fn read(body: Body) -> Result<Form, Response> {
        let bytes = axum::body::to_bytes(body, MAX_FORM)
            .await
            .map_err(|_| (StatusCode::PAYLOAD_TOO_LARGE, "the form is too large\n").into_response())?;
        Ok(Form(form_urlencoded::parse(&bytes).into_owned().collect()))
    }

    /// Reads a form an operator posted from one of these pages: refused (403) unless it came
    /// from this site with the session's CSRF token.
    pub async fn posted(
        body: Body,
        session: &super::session::Session,
        headers: &axum::http::HeaderMap,
    ) -> Result<Form, Response> {
        let f = Form::read(body).await?;
        super::session::check_post(session, headers, f.get("csrf")).map_err(super::session::refuse)?;
        Ok(f)
    }

    /// A form an operator posted from rack `name`'s page (checked as [`Form::posted`]); 404 for
    /// a name no rack can have.
    pub async fn rack_posted(
        s: &super::UiState,
        session: &super::session::Session,
        name: &str,
        headers: &axum::http::HeaderMap,
        body: Body,
    ) -> Result<Form, Response> {
        let f = Form::posted(body, session, headers).await?;
        if rackboot_control::racks::check_name(name).is_err() {
            return Err(super::view::message(&s.views, StatusCode::NOT_FOUND, "Rack", "no such rack", session));
        }
        Ok(f)
    }

    /// The first value of `name`, if given and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, v)| k == name && !v.is_empty()).map(|(_, v)| v.as_str())
    }

    /// Every value of `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The disk layout of the `mirror` (comma-separated `KEY=VALUE` hints), `lvm` (a checkbox)
    /// and `filesystems` (`MOUNT:FSTYPE:SIZE_MIB[:encrypted]` per line) fields; None when all are empty.
    pub fn layout(&self) -> Result<Option<rackboot_model::provision::Layout>, String> {
        let mirror = self.get("mirror").unwrap_or("");
        let filesystems = self.get("filesystems").unwrap_or("");
        if mirror.len() > 1024 || filesystems.len() > 4096 {
            return Err("the layout's fields are too long".into());
        }
        rackboot_model::provision::Layout::from_words(mirror.split(','), self.get("lvm").is_some(), filesystems.lines())
            .map_err(|e| format!("the disk layout: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn repeated_fields_and_the_cap() {
        let f = Form::read(Body::from("id=1&id=2&csrf=x+y&empty=")).await.unwrap();
        assert_eq!(f.all("id").collect::<Vec<_>>(), ["1", "2"]);
        assert_eq!(f.get("csrf"), Some("x y"));
        assert_eq!(f.get("empty"), None);
        let l = Form::read(Body::from(
            "mirror=serial%3DS2&lvm=1&filesystems=%2Fsrv%3Axfs%3A512%0D%0A%2Fvar%2Flog%3Aext4%3A64",
        ))
        .await
        .unwrap()
        .layout()
        .unwrap()
        .unwrap();
        assert_eq!((l.lvm, l.filesystems.len()), (true, 2));
        let bad = Form::read(Body::from("filesystems=%2Fsrv%3Aext4%3A64")).await.unwrap().layout().unwrap_err();
        assert!(bad.contains("need layout.lvm"), "{bad}");
        assert!(Form::read(Body::from("csrf=x")).await.unwrap().layout().unwrap().is_none());
        let big = "a".repeat(MAX_FORM + 1);
        assert_eq!(Form::read(Body::from(big)).await.err().unwrap().status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}

/// A page's `?notice=`: what the last action did, as the redirect after it says (at most 300
/// characters; anything longer is not ours).
#[derive(Debug, Default, serde::Deserialize)]
pub struct NoticeQuery {
    #[serde(default)]
    notice: String,
}

impl NoticeQuery {
    pub fn notice(
        q: Result<axum::extract::Query<NoticeQuery>, axum::extract::rejection::QueryRejection>,
    ) -> Option<String> {
        q.ok().map(|axum::extract::Query(q)| q.notice).filter(|n| !n.is_empty() && n.len() <= 300)
    }
}
