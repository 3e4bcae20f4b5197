//! A firmware image pushed to the BMC, for BMCs that do not fetch one: a `multipart/form-data`
//! POST to `UpdateService.MultipartHttpPushUri` (DMTF DSP0268 UpdateService, from 2019.2) with
//! an `UpdateParameters` part (JSON: `Targets`, `@Redfish.OperationApplyTime`) and an
//! `UpdateFile` part (the image, streamed from its file with its length declared). An image
//! past the service's `MaxImageSizeBytes` is refused before a byte is sent.

use std::path::Path;
use std::time::Duration;

use futures_util::TryStreamExt;
use http_body_util::StreamBody;
use hyper::Method;
use serde_json::json;
use tokio::io::AsyncReadExt;

use super::http::{checked, Answer};
use super::Redfish;
use crate::BmcError;

/// The multipart body around the image: what goes before it, what after, and the boundary.
pub(crate) fn envelope(targets: &[String], filename: &str) -> Result<(Vec<u8>, Vec<u8>, String), BmcError> {
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).map_err(|e| BmcError::Other(format!("no randomness for a boundary: {e}")))?;
    let boundary: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let boundary = format!("rackboot-{boundary}");
    let params = json!({"Targets": targets, "@Redfish.OperationApplyTime": "Immediate"});
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\nContent-Type: application/json\r\n\r\n{params}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"UpdateFile\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    Ok((head.into_bytes(), tail.into_bytes(), boundary))
}

impl Redfish {
    /// Pushes the image in `file` to `uri` for `targets`; `max`: the service's
    /// `MaxImageSizeBytes`, if it says. The whole exchange under `wait`.
    pub(super) async fn push(
        &self,
        uri: &str,
        file: &Path,
        targets: &[String],
        max: Option<u64>,
        wait: Duration,
    ) -> Result<Answer, BmcError> {
        let f = tokio::fs::File::open(file)
            .await
            .map_err(|e| BmcError::Other(format!("opening the image {}: {e}", file.display())))?;
        let len = f.metadata().await.map_err(|e| BmcError::Other(format!("the image's size: {e}")))?.len();
        if let Some(max) = max.filter(|m| len > *m) {
            return Err(BmcError::Other(format!(
                "the image is {len} bytes, larger than the BMC takes (MaxImageSizeBytes {max}): nothing sent"
            )));
        }
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("image");
        let (head, tail, boundary) = envelope(targets, &format!("{name}.bin"))?;
        let total = head.len() as u64 + len + tail.len() as u64;
        let reader = std::io::Cursor::new(head).chain(f).chain(std::io::Cursor::new(tail));
        let frames = tokio_util::io::ReaderStream::with_capacity(reader, 256 << 10).map_ok(hyper::body::Frame::data);
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let length = total.to_string();
        let auth = self.auth_header();
        let headers = [auth, ("content-type", content_type.as_str()), ("content-length", length.as_str())];
        let req = self
            .ep
            .request(&Method::POST, uri, &headers)
            .body(StreamBody::new(frames))
            .map_err(|e| BmcError::Protocol(e.to_string()))?;
        let a = tokio::time::timeout(wait, self.ep.exchange(req)).await.map_err(|_| BmcError::Timeout(wait))??;
        checked(&Method::POST, uri, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_is_form_data_with_the_parameters_then_the_file() {
        let (head, tail, b) = envelope(&["/redfish/v1/Systems/1".into()], "abc.bin").unwrap();
        let (head, tail) = (String::from_utf8(head).unwrap(), String::from_utf8(tail).unwrap());
        assert!(b.starts_with("rackboot-") && b.len() == 9 + 32, "{b}");
        assert!(head.starts_with(&format!("--{b}\r\nContent-Disposition: form-data; name=\"UpdateParameters\"")));
        assert!(head.contains(r#"{"@Redfish.OperationApplyTime":"Immediate","Targets":["/redfish/v1/Systems/1"]}"#));
        assert!(head.ends_with("filename=\"abc.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"), "{head}");
        assert_eq!(tail, format!("\r\n--{b}--\r\n"));
        assert_ne!(envelope(&[], "x").unwrap().2, b, "a new boundary each time");
    }
}
