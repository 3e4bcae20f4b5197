//! A small HTTPS (HTTP/1.1) JSON client for the CLI's admin subcommands: hyper over
//! tokio-rustls, trusting only the appliance's CA.

use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;

/// Talks to one rackboot REST API.
pub struct ApiClient {
    base: hyper::Uri,
    token: String,
    tls: tokio_rustls::TlsConnector,
}

impl ApiClient {
    /// `base` like `https://127.0.0.1:8443`; the server must prove itself with a certificate
    /// issued by a CA in `ca_pem`.
    pub fn new(base: &str, token: String, ca_pem: &[u8]) -> anyhow::Result<Self> {
        let base: hyper::Uri = base.parse().with_context(|| format!("bad API URL {base:?}"))?;
        anyhow::ensure!(
            base.scheme_str() == Some("https"),
            "the API is served over https:// only (plain HTTP refuses it)"
        );
        let config = crate::tls::client_config(ca_pem)?;
        Ok(ApiClient { base, token, tls: tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)) })
    }

    /// Sends a request and returns the status and parsed JSON body (Null when empty).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<(u16, serde_json::Value)> {
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let resp = self.send(method, path, &[("content-type", "application/json")], bytes).await?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await?.to_bytes();
        let json = if body.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&body).context("API answered non-JSON")?
        };
        Ok((status, json))
    }

    /// Sends a request under `/api/v1` with the token and `headers`, and returns the response
    /// with its body still to be read (event streams are read as they arrive).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> anyhow::Result<hyper::Response<hyper::body::Incoming>> {
        self.send_body(method, path, headers, Full::new(body.into())).await
    }

    /// [`ApiClient::send`] with a file as the body, read as it is sent (a firmware image may be
    /// gigabytes), its length declared so that a server that bounds it can refuse at once.
    pub async fn send_file(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        file: &std::path::Path,
    ) -> anyhow::Result<hyper::Response<hyper::body::Incoming>> {
        use futures_util::TryStreamExt;
        let f = tokio::fs::File::open(file).await.with_context(|| format!("opening {}", file.display()))?;
        let len = f.metadata().await.with_context(|| format!("reading {}", file.display()))?.len().to_string();
        let frames = tokio_util::io::ReaderStream::with_capacity(f, 256 << 10).map_ok(hyper::body::Frame::data);
        let headers = [("content-type", content_type), ("content-length", len.as_str())];
        self.send_body(method, path, &headers, http_body_util::StreamBody::new(frames)).await
    }

    async fn send_body<B>(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: B,
    ) -> anyhow::Result<hyper::Response<hyper::body::Incoming>>
    where
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let authority = self.base.authority().context("API URL has no host")?.clone();
        // The URL's port, else HTTPS's.
        let target = format!("{}:{}", authority.host(), authority.port_u16().unwrap_or(443));
        let stream =
            tokio::net::TcpStream::connect(&target).await.with_context(|| format!("connecting to {target}"))?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']');
        let name = rustls::pki_types::ServerName::try_from(host.to_string()).context("bad API host")?;
        let stream = self.tls.connect(name, stream).await.with_context(|| format!("TLS with {authority}"))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let mut req = Request::builder()
            .method(method)
            .uri(format!("/api/v1{path}"))
            .header("host", authority.as_str())
            .header("authorization", format!("Bearer {}", self.token));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Ok(sender.send_request(req.body(body)?).await?)
    }

    /// Opens a server-sent event stream under `/api/v1`, resuming after `last_event_id`.
    pub async fn events(&self, path: &str, last_event_id: Option<u64>) -> anyhow::Result<EventStream> {
        let id = last_event_id.map(|i| i.to_string());
        let mut headers = vec![("accept", "text/event-stream")];
        if let Some(id) = &id {
            headers.push(("last-event-id", id.as_str()));
        }
        let resp = self.send(Method::GET, path, &headers, String::new()).await?;
        if !resp.status().is_success() {
            let status = resp.status();
            let body = resp.into_body().collect().await?.to_bytes();
            anyhow::bail!("API error {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(EventStream { body: resp.into_body(), buf: Vec::new() })
    }

    /// Posts a multipart form (`parts`: field name, file name, bytes) and returns the status and
    /// parsed JSON body.
    pub async fn post_form(
        &self,
        path: &str,
        parts: &[(&str, &str, &[u8])],
    ) -> anyhow::Result<(u16, serde_json::Value)> {
        let boundary = format!("rackboot-{:016x}", rand_u64());
        let mut body = Vec::new();
        for (name, file, bytes) in parts {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file}\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let ct = format!("multipart/form-data; boundary={boundary}");
        let resp = self.send(Method::POST, path, &[("content-type", ct.as_str())], body).await?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await?.to_bytes();
        let json = if body.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&body).context("API answered non-JSON")?
        };
        Ok((status, json))
    }

    /// Like [`ApiClient::call`] but turns a non-2xx answer into an error carrying its message.
    pub async fn ok(
        &self,
        method: Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<serde_json::Value> {
        let (status, json) = self.call(method, path, body).await?;
        if !(200..300).contains(&status) {
            let msg = json.get("detail").or_else(|| json.get("error")).and_then(|e| e.as_str()).unwrap_or("no message");
            anyhow::bail!("API error {status}: {msg}");
        }
        Ok(json)
    }
}

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// A server-sent event stream being read.
pub struct EventStream {
    body: hyper::body::Incoming,
    buf: Vec<u8>,
}

/// Largest event accepted from the server.
const MAX_EVENT: usize = 1 << 20;

impl EventStream {
    /// The next event; `None` when the server ended the stream. Comments (keep-alives) are
    /// skipped.
    pub async fn next(&mut self) -> anyhow::Result<Option<SseEvent>> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                if let Some(ev) = parse_block(&String::from_utf8_lossy(&block)) {
                    return Ok(Some(ev));
                }
                continue;
            }
            anyhow::ensure!(self.buf.len() <= MAX_EVENT, "event larger than {MAX_EVENT} bytes");
            match self.body.frame().await {
                None => return Ok(None),
                Some(frame) => {
                    if let Ok(data) = frame?.into_data() {
                        self.buf.extend(data.iter().filter(|b| **b != b'\r'));
                    }
                }
            }
        }
    }
}

/// One event from its lines (`field: value`); `None` for a comment-only block.
fn parse_block(block: &str) -> Option<SseEvent> {
    let mut ev = SseEvent::default();
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => ev.id = Some(value.to_string()),
            "event" => ev.event = Some(value.to_string()),
            "data" => data.push(value),
            _ => {}
        }
    }
    if data.is_empty() && ev.id.is_none() && ev.event.is_none() {
        return None;
    }
    ev.data = data.join("\n");
    Some(ev)
}

fn rand_u64() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("the OS has randomness");
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_blocks_parse_and_comments_are_skipped() {
        assert_eq!(parse_block(": keep-alive\n"), None);
        let ev = parse_block("id: 7\nevent: dhcp.ack\ndata: {\"a\":1}\n").unwrap();
        assert_eq!(
            (ev.id.as_deref(), ev.event.as_deref(), ev.data.as_str()),
            (Some("7"), Some("dhcp.ack"), "{\"a\":1}")
        );
        assert_eq!(parse_block("data: a\ndata: b\n").unwrap().data, "a\nb");
    }
}
