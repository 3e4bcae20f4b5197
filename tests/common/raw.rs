//! One raw HTTP/1.1 request over TLS to an in-process appliance (trusting its CA), for what a
//! browser will not send: forged `Origin` headers, cookies aimed at the JSON API.
#![allow(dead_code)]

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use hyper::Method;
use serde_json::json;

use crate::common::appliance::Appliance;

/// A TLS connection to the appliance's HTTPS port.
pub async fn connect(app: &Appliance) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let ca = std::fs::read(app.dir.path().join("tls/ca.pem")).unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(rackboot::tls::client_config(&ca).unwrap()));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", app.tls_port)).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1".to_string()).unwrap();
    tls.connect(name, tcp).await.unwrap()
}

/// Sends `method path` with `headers` and `body`; the status and the whole response text.
pub async fn raw(app: &Appliance, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut s = connect(app).await;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: {}\r\n",
        app.tls_port,
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    // A body the server refuses early (413) may not be read in full: that is not an error here.
    let _ = s.write_all(body.as_bytes()).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

/// The `rackboot_session=...` cookie pair a `Set-Cookie` in `response` sets.
pub fn session_cookie(response: &str) -> Option<String> {
    response
        .lines()
        .filter_map(|l| l.strip_prefix("set-cookie: "))
        .filter_map(|c| c.split(';').next())
        .find(|kv| kv.starts_with("rackboot_session=") && kv.len() > "rackboot_session=".len())
        .map(str::to_string)
}

/// The password the UI tests give their users.
pub const PASSWORD: &str = "correct horse battery";
/// A posted form's content type.
pub const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

/// Creates user `name` with `role` and [`PASSWORD`] through the API.
pub async fn user(app: &Appliance, name: &str, role: &str) {
    app.api.ok(Method::POST, "/users", Some(json!({"name": name, "role": role, "password": PASSWORD}))).await.unwrap();
}

/// Logs `name` in through the UI's form: the session cookie and the CSRF token its pages carry.
pub async fn ui_login(app: &Appliance, name: &str) -> (String, String) {
    let body = format!("username={name}&password={}", PASSWORD.replace(' ', "+"));
    let (status, resp) = raw(app, "POST", "/ui/login", &[FORM], &body).await;
    assert_eq!(status, 303, "{resp}");
    let cookie = session_cookie(&resp).expect("a session cookie");
    let (_, page) = raw(app, "GET", "/ui/machines", &[("cookie", &cookie)], "").await;
    let csrf = page.split("name=\"csrf\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    (cookie, csrf)
}

/// [`user`], then [`ui_login`].
pub async fn login_as(app: &Appliance, name: &str, role: &str) -> (String, String) {
    user(app, name, role).await;
    ui_login(app, name).await
}
