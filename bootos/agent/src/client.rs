//! HTTPS (HTTP/1.1) JSON client for the agent API: one kept-alive connection, re-opened when it
//! breaks, to a server that passes the agent's [`Trust`], and the machine's bearer credential on
//! every call.

use std::time::Duration;

use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::tls::Trust;

/// A status and body from the appliance.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Bytes,
}

impl Reply {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn json<T: DeserializeOwned>(&self) -> anyhow::Result<T> {
        serde_json::from_slice(&self.body).with_context(|| format!("HTTP {}: unexpected body", self.status))
    }

    /// The `detail` of a problem+json error body (or an older `error`), or the raw text.
    pub fn error_text(&self) -> String {
        serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v.get("detail").or_else(|| v.get("error")).and_then(|e| e.as_str()).map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&self.body).into_owned())
    }
}

/// A connection to the appliance.
pub struct Client {
    authority: String,
    /// `host:port` to connect to (443 when the URL names no port).
    target: String,
    host: rustls::pki_types::ServerName<'static>,
    /// `None` only for [`Client::loopback_plain`].
    tls: Option<tokio_rustls::TlsConnector>,
    base_path: String,
    pub credential: Option<String>,
    /// The source address to connect from (the boot-storm simulator's machines each have their
    /// own); the kernel picks one when `None`.
    pub local_addr: Option<std::net::IpAddr>,
    conn: Option<SendRequest<Full<Bytes>>>,
}

impl Client {
    /// `base` is the appliance's URL, e.g. `https://198.18.0.1:8443`; the server must pass `trust`.
    pub fn new(base: &str, trust: &Trust) -> anyhow::Result<Client> {
        let rest = base.strip_prefix("https://").context("the appliance URL must start with https://")?;
        Client::parse(rest, Some(trust.connector()?))
    }

    /// Plain HTTP to an appliance on this host (`http://127.0.0.1:PORT` with `http.loopback_api`),
    /// for agent-load's side-by-side with TLS; the agent itself never uses it.
    pub fn loopback_plain(base: &str) -> anyhow::Result<Client> {
        let rest = base.strip_prefix("http://").context("a plain URL starts with http://")?;
        let c = Client::parse(rest, None)?;
        let ip: std::net::SocketAddr = c.target.parse().context("plain HTTP needs an IP address and port")?;
        anyhow::ensure!(ip.ip().is_loopback(), "plain HTTP only to a loopback address");
        Ok(c)
    }

    fn parse(rest: &str, tls: Option<tokio_rustls::TlsConnector>) -> anyhow::Result<Client> {
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        anyhow::ensure!(!authority.is_empty(), "the appliance URL has no host");
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
        };
        let has_port = authority.rsplit_once(':').is_some_and(|(_, p)| !p.is_empty() && !p.contains(']'));
        let target = if has_port { authority.to_string() } else { format!("{authority}:443") };
        let host = rustls::pki_types::ServerName::try_from(host.to_string()).context("bad appliance host")?;
        Ok(Client {
            authority: authority.to_string(),
            target,
            host,
            tls,
            base_path: path.to_string(),
            credential: None,
            local_addr: None,
            conn: None,
        })
    }

    /// Sends one request; `timeout` bounds the whole exchange.
    pub async fn call<B: Serialize>(
        &mut self,
        method: Method,
        path: &str,
        body: Option<&B>,
        timeout: Duration,
    ) -> anyhow::Result<Reply> {
        let bytes = match body {
            Some(b) => Bytes::from(serde_json::to_vec(b)?),
            None => Bytes::new(),
        };
        match tokio::time::timeout(timeout, self.exchange(method, path, bytes)).await {
            Ok(r) => r,
            Err(_) => {
                self.conn = None;
                anyhow::bail!("no answer from {} within {timeout:?}", self.authority)
            }
        }
    }

    /// A new connection: TCP, then TLS unless this is a loopback-plain client.
    async fn open(&self) -> anyhow::Result<SendRequest<Full<Bytes>>> {
        let stream = connect(&self.target, self.local_addr)
            .await
            .with_context(|| format!("connecting to {}", self.authority))?;
        let _ = stream.set_nodelay(true);
        let Some(tls) = &self.tls else {
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(conn);
            return Ok(sender);
        };
        let stream = tls
            .connect(self.host.clone(), stream)
            .await
            .with_context(|| format!("TLS with {} (is it our appliance?)", self.authority))?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        Ok(sender)
    }

    async fn exchange(&mut self, method: Method, path: &str, body: Bytes) -> anyhow::Result<Reply> {
        let reuse = match self.conn.take() {
            Some(mut s) => s.ready().await.is_ok().then_some(s),
            None => None,
        };
        let mut sender = match reuse {
            Some(s) => s,
            None => self.open().await?,
        };
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base_path))
            .header("host", &self.authority)
            .header("content-type", "application/json");
        if let Some(c) = &self.credential {
            req = req.header("authorization", format!("Bearer {c}"));
        }
        let resp = sender.send_request(req.body(Full::new(body))?).await?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await?.to_bytes();
        self.conn = Some(sender);
        Ok(Reply { status, body })
    }
}

/// A streamed HTTP GET response body.
pub struct BodyStream {
    body: hyper::body::Incoming,
    /// Content-Length, when the server sent one.
    pub size: Option<u64>,
}

impl BodyStream {
    /// The next piece of the body; `None` at its end.
    pub async fn next_chunk(&mut self) -> anyhow::Result<Option<Bytes>> {
        loop {
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }
}

/// A TCP connection to `target` (`host:port`), from `local` when given.
pub async fn connect(target: &str, local: Option<std::net::IpAddr>) -> std::io::Result<tokio::net::TcpStream> {
    let Some(local) = local else { return tokio::net::TcpStream::connect(target).await };
    let to = tokio::net::lookup_host(target).await?.find(|a| a.is_ipv4() == local.is_ipv4()).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, format!("{target}: no address of {local}'s family"))
    })?;
    let socket = if local.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.bind(std::net::SocketAddr::new(local, 0))?;
    socket.connect(to).await
}

/// GETs an `http://` URL on a connection of its own and streams the body (images are large).
pub async fn get_stream(url: &str) -> anyhow::Result<BodyStream> {
    let rest = url.strip_prefix("http://").context("only http:// URLs")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let stream =
        tokio::net::TcpStream::connect(authority).await.with_context(|| format!("connecting to {authority}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req =
        Request::builder().method(Method::GET).uri(path).header("host", authority).body(Full::new(Bytes::new()))?;
    let resp = sender.send_request(req).await?;
    anyhow::ensure!(resp.status().is_success(), "HTTP {}", resp.status());
    let size = resp.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    Ok(BodyStream { body: resp.into_body(), size })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_urls_connect_to_443_unless_they_name_a_port() {
        let trust = Trust::Pin([0; 32]);
        let c = Client::new("https://198.18.0.1", &trust).unwrap();
        assert_eq!((c.target.as_str(), c.authority.as_str()), ("198.18.0.1:443", "198.18.0.1"));
        let c = Client::new("https://boot.example:8443/base/", &trust).unwrap();
        assert_eq!((c.target.as_str(), c.base_path.as_str()), ("boot.example:8443", "/base"));
        assert_eq!(Client::new("https://[fd00::1]", &trust).unwrap().target, "[fd00::1]:443");
        assert!(Client::new("http://198.18.0.1:8080", &trust).is_err(), "plain HTTP is refused");
        assert!(Client::loopback_plain("http://198.18.0.1:8080").is_err(), "plain only to loopback");
        assert!(Client::loopback_plain("http://127.0.0.1:8080").is_ok());
    }
}
