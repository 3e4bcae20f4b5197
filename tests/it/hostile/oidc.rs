//! A lying OpenID provider and a meddling browser (`[auth.oidc]`, against the fake provider in
//! tests/common/oidc_fake.rs): a good login opens a session with the role the groups claim maps
//! to; an ID token forged with another key, expired, issued in the future, for another client,
//! from another issuer, with another nonce, HS256 keyed with the client secret, or unsigned, is
//! refused; a replayed callback, a changed state, a callback without the browser's cookie or
//! with another browser's is refused; another account at the provider claiming a known username,
//! or a local user's, is refused; a changed claim gives the new role at the next login; a user
//! disabled here stays out. No refusal leaves a session behind; every login is audited.

use std::net::SocketAddr;

use hyper::Method;
use serde_json::{json, Value};

use crate::api::directory::client;
use crate::common::oidc_fake::{FakeIdp, Mode};
use crate::common::Lab;

/// An HTTPS GET that follows nothing: status, headers, body.
async fn get(url: &str, ca: &str, cookie: Option<&str>) -> (u16, Vec<(String, String)>, String) {
    use http_body_util::BodyExt;
    let rest = url.strip_prefix("https://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let addr: SocketAddr = authority.parse().unwrap();
    let config = rackboot::tls::client_config(ca.as_bytes()).unwrap();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from(addr.ip().to_string()).unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)).connect(name, tcp).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await.unwrap();
    tokio::spawn(conn);
    let mut req = hyper::Request::get(path).header("host", authority);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    let resp =
        sender.send_request(req.body(http_body_util::Empty::<hyper::body::Bytes>::new()).unwrap()).await.unwrap();
    let status = resp.status().as_u16();
    let headers =
        resp.headers().iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string())).collect::<Vec<_>>();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The value of cookie `name` a response sets.
fn set_cookie(h: &[(String, String)], name: &str) -> Option<String> {
    h.iter()
        .filter(|(k, _)| k == "set-cookie")
        .filter_map(|(_, v)| v.split(';').next()?.strip_prefix(&format!("{name}=")).map(str::to_string))
        .find(|v| !v.is_empty())
}

/// A login begun at the appliance and answered by the provider: the callback's path and the
/// browser's binding cookie.
async fn begun(lab: &Lab, idp: &FakeIdp) -> (String, String) {
    let ca = lab.ca_pem();
    let (s, h, body) = get(&format!("{}/ui/oidc/start?next=/ui/machines", lab.https_url()), &ca, None).await;
    assert!(s == 303 || s == 302 || s == 307, "{s} {body}");
    let to_idp = header(&h, "location").unwrap().to_string();
    assert!(to_idp.starts_with(&idp.issuer) && to_idp.contains("code_challenge_method=S256"), "{to_idp}");
    let binding = set_cookie(&h, "rb_oidc").expect("the browser's binding cookie");
    let (s, h, _) = get(&to_idp, &idp.ca_pem, None).await;
    assert_eq!(s, 302);
    let back = header(&h, "location").unwrap();
    let path = back.strip_prefix("https://127.0.0.1").unwrap().to_string();
    (path, format!("rb_oidc={binding}"))
}

/// The callback as the browser sends it: status, the session's bearer token if one was set,
/// and the body.
async fn callback(lab: &Lab, path: &str, cookie: Option<&str>) -> (u16, Option<String>, String) {
    let (s, h, body) = get(&format!("{}{path}", lab.https_url()), &lab.ca_pem(), cookie).await;
    (s, set_cookie(&h, "rackboot_session"), body)
}

async fn whoami(lab: &Lab, token: &str) -> Value {
    client(lab, token).ok(Method::GET, "/auth/whoami", None).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_provider_and_a_meddling_browser_open_no_session() {
    let idp = FakeIdp::start().await;
    let files = tempfile::tempdir().unwrap();
    let (ca, secret) = (files.path().join("idp-ca.pem"), files.path().join("oidc.secret"));
    std::fs::write(&ca, &idp.ca_pem).unwrap();
    std::fs::write(&secret, format!("{}\n", idp.client_secret)).unwrap();
    let extra = format!(
        "[auth.oidc]\nissuer = \"{}\"\nclient_id = \"{}\"\nclient_secret_file = \"{}\"\n\
         redirect_url = \"https://127.0.0.1/ui/oidc/callback\"\nca_file = \"{}\"\nname = \"Example SSO\"\n\
         claims = [{{ claim = \"groups\", value = \"rack-ops\", role = \"operator\" }},\n\
         {{ claim = \"groups\", value = \"team-a\", role = \"viewer\", pool = \"team-a\" }}]\n",
        idp.issuer,
        idp.client_id,
        secret.display(),
        ca.display()
    );
    let lab = Lab::start(&extra).await;
    let (_, _, page) = get(&format!("{}/ui/login", lab.https_url()), &lab.ca_pem(), None).await;
    assert!(page.contains("Log in with Example SSO") && page.contains("id=\"oidc-login\""), "{page}");

    // A good login: a session with the role the groups claim maps to.
    let (path, cookie) = begun(&lab, &idp).await;
    let (s, token, body) = callback(&lab, &path, Some(&cookie)).await;
    assert_eq!(s, 303, "{body}");
    let token = token.expect("a session cookie");
    let me = whoami(&lab, &token).await;
    assert_eq!((me["user"].as_str(), me["role"].as_str()), (Some("olivia"), Some("operator")), "{me}");
    // The same callback again (a replayed code and state): refused, no session.
    let (s, token, _) = callback(&lab, &path, Some(&cookie)).await;
    assert_eq!((s, token), (401, None), "a replay");

    // A changed state, no cookie, another browser's cookie: refused.
    let (path, cookie) = begun(&lab, &idp).await;
    let changed = path.replace("state=", "state=x");
    assert_eq!(callback(&lab, &changed, Some(&cookie)).await.0, 401, "a state not issued");
    let (path, _) = begun(&lab, &idp).await;
    assert_eq!(callback(&lab, &path, None).await.0, 401, "no binding cookie");
    let (other_path, other_cookie) = begun(&lab, &idp).await;
    let (s, token, body) = callback(&lab, &path, Some(&other_cookie)).await;
    assert_eq!((s, token), (401, None), "another browser's cookie: {body}");
    assert!(body.contains("another browser"), "{body}");
    // (That state was used up by the refusal: its own browser cannot finish it either.)
    assert_eq!(callback(&lab, &path, Some(&cookie)).await.0, 401);
    assert_eq!(callback(&lab, &other_path, Some(&other_cookie)).await.0, 303, "the other browser's own login");

    // Forged, stale, misdirected or unsigned ID tokens.
    for mode in [
        Mode::ForgedKey,
        Mode::Expired,
        Mode::FromTheFuture,
        Mode::WrongAudience,
        Mode::WrongIssuer,
        Mode::WrongNonce,
        Mode::Hs256,
        Mode::AlgNone,
    ] {
        idp.mode(mode);
        let (path, cookie) = begun(&lab, &idp).await;
        let (s, token, body) = callback(&lab, &path, Some(&cookie)).await;
        assert_eq!((s, token.is_some()), (401, false), "{mode:?}: {body}");
    }
    idp.mode(Mode::Good);

    // Another account at the provider naming a known user, or a local one: refused.
    for (name, sub) in [("olivia", "sub-mallory"), ("admin", "sub-admin")] {
        idp.user(name, sub, &["rack-ops"]);
        let (path, cookie) = begun(&lab, &idp).await;
        let (s, token, body) = callback(&lab, &path, Some(&cookie)).await;
        assert!(s == 409 && token.is_none(), "{name} as {sub}: {s} {body}");
    }
    // In no mapped group: 403.
    idp.user("nobody", "sub-nobody", &["elsewhere"]);
    let (path, cookie) = begun(&lab, &idp).await;
    assert_eq!(callback(&lab, &path, Some(&cookie)).await.0, 403);

    // The claim changes: the next login acts with the new role, in the pool.
    idp.user("olivia", "sub-olivia", &["team-a"]);
    let (path, cookie) = begun(&lab, &idp).await;
    let (s, token, _) = callback(&lab, &path, Some(&cookie)).await;
    assert_eq!(s, 303);
    let users = lab.api.ok(Method::GET, "/users", None).await.unwrap();
    let o = users["users"].as_array().unwrap().iter().find(|u| u["name"] == "olivia").cloned().unwrap();
    assert_eq!(
        (o["pools"].clone(), o["directory"]["kind"].clone()),
        (json!({"team-a": "viewer"}), json!("oidc")),
        "{o}"
    );
    let ro = client(&lab, &token.unwrap());
    let (s, _) = ro.call(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:0d:00:01"]}))).await.unwrap();
    assert_eq!(s, 403, "a viewer of team-a now");
    // An OpenID user has no password here.
    let (s, _) = crate::api::directory::login(&lab, "olivia", "any-password-at-all").await;
    assert_eq!(s, 401);

    // Disabled here: their sessions stop, and the provider's word does not let them back in.
    lab.api.ok(Method::PATCH, "/users/olivia", Some(json!({"disabled": true}))).await.unwrap();
    assert_eq!(ro.call(Method::GET, "/auth/whoami", None).await.unwrap().0, 401);
    let (path, cookie) = begun(&lab, &idp).await;
    let (s, token, _) = callback(&lab, &path, Some(&cookie)).await;
    assert_eq!((s, token), (403, None));

    // The device flow: a handle never handed out is refused; a provider without a device
    // endpoint is said to be unreachable, not trusted.
    let (s, v) =
        lab.api.call(Method::POST, "/auth/oidc/device/token", Some(json!({"handle": "made-up"}))).await.unwrap();
    assert_eq!(s, 401, "{v}");
    let (s, v) = lab.api.call(Method::POST, "/auth/oidc/device", None).await.unwrap();
    assert_eq!(s, 503, "{v}");

    // Every finish is in the audit log, with its outcome.
    let audit = lab.api.ok(Method::GET, "/audit?limit=1000", None).await.unwrap();
    let logins: Vec<(String, u64)> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["route"] == "/ui/oidc/callback")
        .map(|e| (e["user"].as_str().unwrap().to_string(), e["status"].as_u64().unwrap()))
        .collect();
    assert!(logins.len() >= 18, "{logins:?}");
    assert!(logins.contains(&("olivia".into(), 200)) && logins.contains(&("-".into(), 401)), "{logins:?}");
    assert!(logins.contains(&("nobody".into(), 403)), "{logins:?}");
}
