//! `rackboot api METHOD PATH`: any call of the REST API with the CLI's token and CA, so that a
//! script needs no curl line with a token in it; and the `--api`, `--ca`, `--token-file`
//! arguments every API command shares.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use http_body_util::BodyExt;
use hyper::Method;
use rackboot::client::ApiClient;

#[derive(Args)]
pub struct ApiArgs {
    /// Base URL of the rackboot API.
    #[arg(long, env = "RACKBOOT_API", default_value = "https://127.0.0.1", global = true)]
    api: String,
    /// The CA certificate (PEM) the server's certificate must chain to (`rackboot ca show`).
    #[arg(long, value_name = "FILE", default_value = "/var/lib/rackboot/tls/ca.pem", global = true)]
    ca: PathBuf,
    /// File holding an API token (`rackboot serve` writes the admin's, admin.token, into its
    /// data_dir on first start; `rackboot tokens create` makes others). Only from a file: a
    /// token in an argument or the environment would show in `ps` and /proc to every user.
    #[arg(long, value_name = "FILE", default_value = "/var/lib/rackboot/admin.token", global = true)]
    token_file: PathBuf,
}

impl ApiArgs {
    pub fn client(&self) -> anyhow::Result<ApiClient> {
        let token = std::fs::read_to_string(&self.token_file)
            .with_context(|| format!("reading the API token from {} (--token-file)", self.token_file.display()))?
            .trim()
            .to_string();
        let ca =
            std::fs::read(&self.ca).with_context(|| format!("reading the CA certificate {}", self.ca.display()))?;
        ApiClient::new(&self.api, token, &ca)
    }

    /// A client without a token (a login).
    pub fn anonymous(&self) -> anyhow::Result<ApiClient> {
        let ca =
            std::fs::read(&self.ca).with_context(|| format!("reading the CA certificate {}", self.ca.display()))?;
        ApiClient::new(&self.api, String::new(), &ca)
    }
}

#[derive(Args)]
pub struct ApiCall {
    /// GET, HEAD, POST, PUT, PATCH or DELETE.
    #[arg(value_parser = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"], ignore_case = true)]
    method: String,
    /// The path under /api/v1, with its query (e.g. '/machines?state=installed').
    path: String,
    /// The JSON body: inline, @FILE, or - for stdin (a body with a secret: never inline, where
    /// `ps` shows it).
    #[arg(long, short, value_name = "JSON|@FILE|-")]
    data: Option<String>,
}

pub async fn api(client: ApiClient, call: ApiCall) -> anyhow::Result<()> {
    anyhow::ensure!(call.path.starts_with('/'), "the path is under /api/v1 and starts with /, e.g. /machines");
    let method = Method::from_bytes(call.method.to_ascii_uppercase().as_bytes())?;
    let body = match call.data.as_deref() {
        None => Vec::new(),
        Some("-") => {
            let mut b = Vec::new();
            std::io::stdin().read_to_end(&mut b).context("reading the body from stdin")?;
            b
        }
        Some(d) => match d.strip_prefix('@') {
            Some(file) => std::fs::read(file).with_context(|| format!("reading the body from {file}"))?,
            None => d.as_bytes().to_vec(),
        },
    };
    if !body.is_empty() {
        serde_json::from_slice::<serde_json::Value>(&body).context("--data is not JSON")?;
    }
    let headers = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")];
    let resp = client.send(method, &call.path, &headers, body).await?;
    let status = resp.status();
    // `application/json` or `application/problem+json`, with parameters or without.
    let json = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or_default().trim().ends_with("json"));
    let mut out = std::io::stdout().lock();
    let mut body = resp.into_body();
    if json {
        let bytes = body.collect().await?.to_bytes();
        match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(v) => writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?,
            Err(_) => out.write_all(&bytes)?,
        }
    } else {
        // A stream (events) is written as it comes.
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                out.write_all(&data)?;
                out.flush()?;
            }
        }
    }
    anyhow::ensure!(status.is_success(), "API error {status}");
    Ok(())
}
