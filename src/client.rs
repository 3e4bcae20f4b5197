//! A small HTTP/1.1 JSON client for the CLI's admin subcommands (hyper, already in the tree).

use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;

/// Talks to one rackboot REST API.
pub struct ApiClient {
    base: hyper::Uri,
    token: String,
}

impl ApiClient {
    /// `base` like `http://127.0.0.1:8080`.
    pub fn new(base: &str, token: String) -> anyhow::Result<Self> {
        let base: hyper::Uri = base.parse().with_context(|| format!("bad API URL {base:?}"))?;
        anyhow::ensure!(base.scheme_str() == Some("http"), "only http:// API URLs are supported");
        Ok(ApiClient { base, token })
    }

    /// Sends a request and returns the status and parsed JSON body (Null when empty).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<(u16, serde_json::Value)> {
        let authority = self.base.authority().context("API URL has no host")?.clone();
        let stream = tokio::net::TcpStream::connect(authority.as_str())
            .await
            .with_context(|| format!("connecting to {authority}"))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let req = Request::builder()
            .method(method)
            .uri(format!("/api/v1{path}"))
            .header("host", authority.as_str())
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(bytes)))?;
        let resp = sender.send_request(req).await?;
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
            let msg = json.get("error").and_then(|e| e.as_str()).unwrap_or("no message");
            anyhow::bail!("API error {status}: {msg}");
        }
        Ok(json)
    }
}
