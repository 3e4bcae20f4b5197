//! One delivery over the wire: the receiver's URL checked once (HTTPS, or plain HTTP to
//! loopback and the configured networks; no credentials in it), a fresh connection per POST
//! (hyper, HTTP/1.1) under one timeout, the receiver's certificate checked as its subscription
//! says, the answer's body read at most [`MAX_ANSWER`] and dropped.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::config::value::Ipv4Net;
use crate::config::WebhooksConfig;
use rackboot_model::webhooks::WebhookTls;

/// The longest receiver URL.
pub const MAX_URL: usize = 2048;
/// The most of an answer's body read.
const MAX_ANSWER: usize = 64 * 1024;

/// Where deliveries go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// Path and query, `/` at least.
    pub path: String,
}

impl Target {
    fn authority(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match (self.https, self.port) {
            (true, 443) | (false, 80) => host,
            _ => format!("{host}:{}", self.port),
        }
    }
}

/// Checks a receiver URL against the rules: `https://`, or `http://` to a loopback address,
/// `localhost` or an address inside `allow_http`; no user or password, no fragment.
pub fn check_url(url: &str, allow_http: &[Ipv4Net]) -> Result<Target, String> {
    if url.len() > MAX_URL {
        return Err(format!("the URL is longer than {MAX_URL} characters"));
    }
    if url.contains('#') || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the URL must not hold a fragment, spaces or control characters".into());
    }
    let uri: hyper::Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err("the URL must start with https:// (or http:// where allowed)".into()),
    };
    if url.contains('@') {
        return Err("the URL must not hold '@' (a user or password): the signature authenticates deliveries".into());
    }
    let auth = uri.authority().ok_or("the URL has no host")?;
    let host = auth.host().trim_start_matches('[').trim_end_matches(']').to_string();
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    let port = auth.port_u16().unwrap_or(if https { 443 } else { 80 });
    if !https && !plain_http_allowed(&host, allow_http) {
        return Err(format!(
            "plain http:// is allowed only to loopback or the networks in webhooks.allow_http; {host} is neither: use https://"
        ));
    }
    let path = uri.path_and_query().map_or("/".to_string(), |p| p.as_str().to_string());
    Ok(Target { https, host, port, path })
}

fn plain_http_allowed(host: &str, allow_http: &[Ipv4Net]) -> bool {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback() || allow_http.iter().any(|n| n.contains(&ip)),
        Ok(IpAddr::V6(ip)) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

/// The TLS client a subscription's deliveries use.
pub fn connector(tls: &WebhookTls, cfg: &WebhooksConfig) -> anyhow::Result<tokio_rustls::TlsConnector> {
    let provider = crate::tls::provider();
    let config = match tls {
        WebhookTls::Ca { pem } => crate::tls::client_config(pem.as_bytes())?,
        WebhookTls::System => {
            let pem = std::fs::read(&cfg.ca_bundle)
                .map_err(|e| anyhow::anyhow!("reading the CA bundle {}: {e}", cfg.ca_bundle.display()))?;
            let mut roots = rustls::RootCertStore::empty();
            roots.add_parsable_certificates(CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok));
            anyhow::ensure!(!roots.is_empty(), "no CA certificate in {}", cfg.ca_bundle.display());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
                .with_root_certificates(roots)
                .with_no_client_auth()
        }
        WebhookTls::Fingerprint { sha256 } => {
            crate::tls::pinned::client_config(Some(sha256.trim_start_matches("sha256:").to_string()), "the receiver")?
        }
    };
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// POSTs `body` with `headers` to `target` within `timeout`: the answer's status, or why there
/// was none.
pub async fn post(
    target: &Target,
    tls: &tokio_rustls::TlsConnector,
    headers: &[(&str, String)],
    body: Bytes,
    timeout: Duration,
) -> Result<u16, String> {
    tokio::time::timeout(timeout, once(target, tls, headers, body))
        .await
        .map_err(|_| format!("no answer within {} s", timeout.as_secs()))?
}

async fn once(
    target: &Target,
    tls: &tokio_rustls::TlsConnector,
    headers: &[(&str, String)],
    body: Bytes,
) -> Result<u16, String> {
    let tcp = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("connecting to {}: {e}", target.authority()))?;
    tcp.set_nodelay(true).ok();
    let mut req = Request::post(target.path.as_str())
        .header("host", target.authority())
        .header("content-type", "application/json")
        .header("user-agent", concat!("rackboot/", env!("CARGO_PKG_VERSION")));
    for (k, v) in headers {
        req = req.header(*k, v.as_str());
    }
    let req = req.body(Full::new(body)).map_err(|e| e.to_string())?;
    if target.https {
        let name = rustls::pki_types::ServerName::try_from(target.host.clone())
            .map_err(|e| format!("bad host {}: {e}", target.host))?;
        let stream = tls.connect(name, tcp).await.map_err(|e| {
            format!("TLS with {}: {}", target.authority(), e.get_ref().map_or_else(|| e.to_string(), |i| i.to_string()))
        })?;
        exchange(TokioIo::new(stream), req).await
    } else {
        exchange(TokioIo::new(tcp), req).await
    }
}

async fn exchange<IO>(io: IO, req: Request<Full<Bytes>>) -> Result<u16, String>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let resp = sender.send_request(req).await.map_err(|e| format!("sending: {e}"))?;
    let status = resp.status().as_u16();
    // The body says nothing rackboot acts on; it is read (bounded) so the exchange completes.
    let _ = Limited::new(resp.into_body(), MAX_ANSWER).collect().await;
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_urls_follow_the_rules() {
        let lab: Vec<Ipv4Net> = vec!["198.18.0.0/15".parse().unwrap()];
        let ok = |u: &str| check_url(u, &lab).unwrap();
        assert_eq!(
            ok("https://hooks.example.org/rackboot?x=1"),
            Target { https: true, host: "hooks.example.org".into(), port: 443, path: "/rackboot?x=1".into() }
        );
        assert_eq!(ok("http://127.0.0.1:8080").path, "/");
        assert_eq!(ok("http://[::1]:9/h").host, "::1");
        assert!(ok("http://198.19.1.1/h").port == 80);
        assert!(ok("http://localhost:1/").host == "localhost");
        for bad in [
            "http://203.0.113.9/h",
            "http://hooks.example.org/",
            "https://user:pw@hooks.example.org/",
            "ftp://x/",
            "https://x/#frag",
            "https:///nohost",
            "hooks.example.org",
            "https://x/ y",
        ] {
            assert!(check_url(bad, &lab).is_err(), "{bad}");
        }
        assert!(check_url(&format!("https://x/{}", "a".repeat(MAX_URL)), &lab).is_err());
    }
}
