//! The HTTP client the OpenID provider is reached with: HTTPS only (hyper over rustls), no
//! redirect followed, each exchange within the configured timeout, an answer read to
//! [`MAX_ANSWER`]. Given to the `openidconnect` crate as its client ([`Http`]).

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

/// The most of one answer from the provider read.
const MAX_ANSWER: usize = 1 << 20;

/// Why an exchange with the provider failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(pub(super) String);

/// The HTTP client the `openidconnect` crate is given.
pub(super) struct Http {
    pub(super) tls: tokio_rustls::TlsConnector,
    pub(super) timeout: Duration,
}

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<openidconnect::HttpResponse, HttpError>> + Send + 'c>,
    >;

    fn call(&'c self, req: openidconnect::HttpRequest) -> Self::Future {
        let (tls, timeout) = (self.tls.clone(), self.timeout);
        Box::pin(async move { fetch(&tls, timeout, req).await })
    }
}

/// One exchange with the provider: HTTPS only, no redirect followed, within `timeout`, the
/// answer read to [`MAX_ANSWER`].
pub(super) async fn fetch(
    tls: &tokio_rustls::TlsConnector,
    timeout: Duration,
    req: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, HttpError> {
    tokio::time::timeout(timeout, exchange(tls, req))
        .await
        .map_err(|_| HttpError(format!("no answer within {} s", timeout.as_secs())))?
}

async fn exchange(
    tls: &tokio_rustls::TlsConnector,
    req: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, HttpError> {
    let uri = req.uri().clone();
    if uri.scheme_str() != Some("https") {
        return Err(HttpError(format!("{uri}: the provider is reached over https only")));
    }
    let host = uri.host().ok_or_else(|| HttpError(format!("{uri}: no host")))?.trim_matches(['[', ']']).to_string();
    let port = uri.port_u16().unwrap_or(443);
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| HttpError(format!("connecting to {host}:{port}: {e}")))?;
    let name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| HttpError(e.to_string()))?;
    let stream = tls.connect(name, tcp).await.map_err(|e| HttpError(format!("TLS with {host}:{port}: {e}")))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| HttpError(e.to_string()))?;
    tokio::spawn(conn);
    let (mut parts, body) = req.into_parts();
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    parts.uri = path.parse().map_err(|e: hyper::http::uri::InvalidUri| HttpError(e.to_string()))?;
    let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
    parts.headers.insert(hyper::header::HOST, authority.parse().map_err(|_| HttpError("bad host".into()))?);
    let resp = sender
        .send_request(hyper::Request::from_parts(parts, Full::new(Bytes::from(body))))
        .await
        .map_err(|e| HttpError(format!("{uri}: {e}")))?;
    let (parts, body) = resp.into_parts();
    let body = Limited::new(body, MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| HttpError(format!("{uri}: the answer ({e})")))?
        .to_bytes();
    Ok(openidconnect::HttpResponse::from_parts(parts, body.to_vec()))
}
