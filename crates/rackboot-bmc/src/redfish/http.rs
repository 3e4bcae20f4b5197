//! One Redfish request over HTTPS: a fresh TLS connection (hyper, HTTP/1.1), the whole exchange
//! under one timeout, a bounded body, 301/302/307/308 redirects followed on the same BMC only
//! (credentials never go to another host), at most [`MAX_REDIRECTS`] of them, and a 503 with a
//! `Retry-After` waited out up to [`MAX_BUSY`] times.

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;

use crate::BmcError;

/// Redirects followed per request.
pub const MAX_REDIRECTS: usize = 5;
/// Largest body read from a BMC.
pub const MAX_BODY: usize = 1 << 20;
/// 503s with a `Retry-After` waited out per request.
pub const MAX_BUSY: usize = 3;

/// Where requests go and how they are authenticated.
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub tls: tokio_rustls::TlsConnector,
    pub timeout: Duration,
}

/// A BMC's answer.
pub struct Answer {
    pub status: StatusCode,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl Answer {
    /// The body as JSON (an empty body is `null`).
    pub fn json(&self) -> Result<serde_json::Value, BmcError> {
        if self.body.is_empty() {
            return Ok(serde_json::Value::Null);
        }
        serde_json::from_slice(&self.body).map_err(|e| BmcError::Protocol(format!("answer is not JSON: {e}")))
    }
}

impl Endpoint {
    /// `host:port` as the Host header and error messages show it.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Sends `method path` with `headers` and a JSON body, following redirects; a 401/403 is
    /// [`BmcError::Auth`], any other non-2xx [`BmcError::Status`].
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, BmcError> {
        let mut path = path.to_string();
        let (mut busy, mut redirects) = (0, 0);
        while redirects <= MAX_REDIRECTS {
            let a = tokio::time::timeout(self.timeout, self.once(&method, &path, headers, body))
                .await
                .map_err(|_| BmcError::Timeout(self.timeout))??;
            match a.status.as_u16() {
                301 | 302 | 307 | 308 => {
                    redirects += 1;
                    path = self.location(&a)?;
                }
                // Busy, and saying when to come back (DSP0266): waited out a few times.
                503 if busy < MAX_BUSY && a.headers.contains_key(hyper::header::RETRY_AFTER) => {
                    busy += 1;
                    tokio::time::sleep(super::dialect::retry_after(&a).unwrap_or(Duration::from_secs(1))).await;
                }
                _ => return checked(&method, &path, a),
            }
        }
        Err(BmcError::Protocol(format!("more than {MAX_REDIRECTS} redirects (a redirect loop?) at {path}")))
    }

    /// The path a redirect or a task monitor's `Location` points at, if it stays on this BMC.
    pub fn location(&self, a: &Answer) -> Result<String, BmcError> {
        let loc = a.headers.get(hyper::header::LOCATION).and_then(|v| v.to_str().ok());
        let loc = loc.ok_or_else(|| BmcError::Protocol("a redirect without a Location".into()))?;
        let uri: hyper::Uri = loc.parse().map_err(|_| BmcError::Protocol(format!("bad redirect {loc:?}")))?;
        if let Some(auth) = uri.authority() {
            let port = auth.port_u16().unwrap_or(443);
            let host = auth.host().trim_start_matches('[').trim_end_matches(']');
            if host != self.host || port != self.port || uri.scheme_str() != Some("https") {
                return Err(BmcError::Protocol(format!("refusing a redirect to another host: {loc}")));
            }
        }
        Ok(uri.path_and_query().map_or("/".into(), |p| p.as_str().to_string()))
    }

    async fn once(
        &self,
        method: &Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, BmcError> {
        let mut req = self.request(method, path, headers);
        let bytes = match body {
            Some(b) => {
                req = req.header("content-type", "application/json");
                Bytes::from(b.to_string())
            }
            None => Bytes::new(),
        };
        let req = req.body(Full::new(bytes)).map_err(|e| BmcError::Protocol(e.to_string()))?;
        self.exchange(req).await
    }

    /// A request to this BMC with the headers every one carries, and `headers`.
    pub(super) fn request(
        &self,
        method: &Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> hyper::http::request::Builder {
        let mut req = Request::builder()
            .method(method.clone())
            .uri(path)
            .header("host", self.authority())
            .header("accept", "application/json")
            .header("odata-version", "4.0");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req
    }

    /// Sends `req` on a new TLS connection and reads the answer (bounded).
    pub(super) async fn exchange<B>(&self, req: Request<B>) -> Result<Answer, BmcError>
    where
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| BmcError::Connect(format!("{}: {e}", self.authority())))?;
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|e| BmcError::Connect(format!("bad host {}: {e}", self.host)))?;
        let stream = self.tls.connect(name, stream).await.map_err(|e| BmcError::Tls(tls_reason(&e)))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| BmcError::Connect(e.to_string()))?;
        tokio::spawn(conn);
        let resp = sender.send_request(req).await.map_err(|e| BmcError::Connect(e.to_string()))?;
        let (parts, body) = resp.into_parts();
        let body = Limited::new(body, MAX_BODY)
            .collect()
            .await
            .map_err(|e| BmcError::Protocol(format!("reading the answer: {e}")))?
            .to_bytes();
        Ok(Answer { status: parts.status, headers: parts.headers, body })
    }
}

/// An answer's status as an error where it is one: 401/403 [`BmcError::Auth`], any other
/// non-2xx [`BmcError::Status`].
pub(super) fn checked(method: &Method, path: &str, a: Answer) -> Result<Answer, BmcError> {
    match a.status.as_u16() {
        401 | 403 => Err(BmcError::Auth(format!("{} {path}: {}", a.status, brief(&a.body)))),
        s if !(200..300).contains(&s) => {
            Err(BmcError::Status { status: s, detail: format!("{method} {path}: {}", brief(&a.body)) })
        }
        _ => Ok(a),
    }
}

/// The reason a TLS handshake failed, without rustls's wrapping.
fn tls_reason(e: &std::io::Error) -> String {
    e.get_ref().map_or_else(|| e.to_string(), |inner| inner.to_string())
}

/// The start of a body for an error message (Redfish puts its reason in `error.message`).
fn brief(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        if let Some(m) = v["error"]["@Message.ExtendedInfo"][0]["Message"].as_str().or(v["error"]["message"].as_str()) {
            return m.chars().take(200).collect();
        }
    }
    String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()
}
