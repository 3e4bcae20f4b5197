//! Users, roles and API tokens against the whole appliance: each role gets what it may and a
//! problem naming the role it lacks otherwise, expired, revoked and orphaned tokens get 401,
//! a token never outranks its user, wrong passwords are rate-limited (on every listener by one
//! limiter), and the `admin.token` file (old or new) keeps working across restarts.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::common::*;
use hyper::Method;
use rackboot::auth::Role;
use rackboot::client::ApiClient;
use rackboot::cmdb::{now_ms, TokenRecord};
use serde_json::{json, Value};

fn url(lab: &Lab) -> String {
    lab.https_url()
}

fn client(lab: &Lab, token: &str) -> ApiClient {
    ApiClient::new(&url(lab), token.to_string(), lab.ca_pem().as_bytes()).unwrap()
}

/// Creates a user with `role` and returns a session token of theirs.
async fn user(lab: &Lab, name: &str, role: &str) -> String {
    let password = format!("{name}-password-123");
    let (s, v) = lab
        .api
        .call(Method::POST, "/users", Some(json!({"name": name, "role": role, "password": password})))
        .await
        .unwrap();
    assert_eq!(s, 201, "{v}");
    login(lab, name, &password).await
}

async fn login(lab: &Lab, name: &str, password: &str) -> String {
    let (s, v) = client(lab, "")
        .call(Method::POST, "/auth/login", Some(json!({"username": name, "password": password})))
        .await
        .unwrap();
    assert_eq!(s, 200, "{v}");
    v["token"].as_str().unwrap().to_string()
}

async fn status(c: &ApiClient, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    c.call(method, path, body).await.unwrap()
}

async fn audit(lab: &Lab, query: &str) -> Vec<Value> {
    let v = lab.api.ok(Method::GET, &format!("/audit?limit=10000&{query}"), None).await.unwrap();
    v["entries"].as_array().unwrap().clone()
}

#[tokio::test]
async fn each_role_gets_what_it_may_and_a_refusal_naming_the_role_otherwise() {
    let lab = Lab::start("").await;
    let viewer = client(&lab, &user(&lab, "vera", "viewer").await);
    let operator = client(&lab, &user(&lab, "otto", "operator").await);
    let machine = json!({"macs": ["52:54:00:aa:00:01"]});

    assert_eq!(status(&viewer, Method::GET, "/machines", None).await.0, 200);
    let (s, p) = status(&viewer, Method::POST, "/machines", Some(machine.clone())).await;
    assert_eq!(s, 403, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("needs role operator"), "{p}");
    assert_eq!(status(&viewer, Method::GET, "/users", None).await.0, 403, "users are the admin's");
    assert_eq!(status(&viewer, Method::GET, "/audit", None).await.0, 403);

    let (s, m) = status(&operator, Method::POST, "/machines", Some(machine)).await;
    assert_eq!(s, 201, "{m}");
    // An operator can start provisioning...
    let images = lab.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), vec![7u8; 4096]).unwrap();
    let task = json!({"select": {"macs": ["52:54:00:aa:00:01"]}, "image": "lab.img", "disk": "/dev/vda"});
    let (s, p) = status(&operator, Method::POST, "/tasks", Some(task.clone())).await;
    assert_eq!(s, 201, "{p}");
    assert_eq!(status(&viewer, Method::POST, "/tasks", Some(task)).await.0, 403);
    // ...but cannot make users.
    let (s, p) = status(
        &operator,
        Method::POST,
        "/users",
        Some(json!({"name": "eve", "role": "admin", "password": "x".repeat(12)})),
    )
    .await;
    assert_eq!(s, 403, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("needs role admin"), "{p}");
    let (_, who) = status(&operator, Method::GET, "/auth/whoami", None).await;
    assert_eq!((who["user"].as_str(), who["role"].as_str()), (Some("otto"), Some("operator")));

    // The viewer's refusal is in the audit log, with who, from where and what.
    let refused = audit(&lab, "user=vera&outcome=denied").await;
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(refused[0]["route"], "/tasks", "newest first");
    let e = &refused[1];
    assert_eq!(
        (e["method"].as_str(), e["route"].as_str(), e["status"].as_u64()),
        (Some("POST"), Some("/machines"), Some(403))
    );
    assert_eq!(e["from"], "127.0.0.1");
    assert!(e["token"].as_str().is_some());
    let made = audit(&lab, "user=otto&method=POST&status=201").await;
    let routes: Vec<&str> = made.iter().map(|e| e["route"].as_str().unwrap()).collect();
    assert_eq!(routes, ["/tasks", "/machines"]);
    // Reads are not audited.
    assert!(audit(&lab, "method=GET").await.is_empty());
    // The operator's refused user creation too.
    assert_eq!(audit(&lab, "user=otto&outcome=denied").await[0]["route"], "/users");
}

#[tokio::test]
async fn expired_revoked_and_unknown_tokens_get_401() {
    let lab = Lab::start("").await;
    let otto = user(&lab, "otto", "operator").await;
    let otto_api = client(&lab, &otto);
    let (s, created) = status(&otto_api, Method::POST, "/tokens", Some(json!({"name": "ci"}))).await;
    assert_eq!(s, 201, "{created}");
    let secret = created["secret"].as_str().unwrap();
    let ci = client(&lab, secret);
    assert_eq!(status(&ci, Method::GET, "/machines", None).await.0, 200);
    assert_eq!(created["token"]["role"], "operator", "defaults to the caller's role");
    assert!(created["token"].get("hash").is_none());

    // Listed without its secret, then revoked: 401 at once, with WWW-Authenticate.
    let (_, list) = status(&otto_api, Method::GET, "/tokens", None).await;
    let text = list.to_string();
    assert!(text.contains(created["token"]["id"].as_str().unwrap()) && !text.contains(secret), "{text}");
    let id = created["token"]["id"].as_str().unwrap();
    assert_eq!(status(&otto_api, Method::DELETE, &format!("/tokens/{id}"), None).await.0, 204);
    let resp = ci.send(Method::GET, "/machines", &[], String::new()).await.unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.headers().get("www-authenticate").unwrap(), "Bearer");

    // An expired token.
    let (id, bearer, hash) = rackboot::auth::new_token().unwrap();
    let now = now_ms();
    let rec = TokenRecord {
        v: 7,
        id,
        user: "otto".into(),
        name: "old".into(),
        role: Role::Viewer,
        hash,
        session: false,
        created_ms: now - 120_000,
        expires_ms: Some(now - 1),
        last_used_ms: None,
    };
    lab.app.as_ref().unwrap().cmdb.create_token(rec, now - 60_000).await.unwrap();
    let (s, p) = status(&client(&lab, &bearer), Method::GET, "/machines", None).await;
    assert_eq!(s, 401, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("expired"), "{p}");

    // Made-up tokens, and a real id with a wrong secret.
    for bad in
        ["", "rbt_0123456789abcdef_00", &format!("{}x", &otto[..otto.len() - 1]), "rbt_", "legacy-looking-garbage"]
    {
        assert_eq!(status(&client(&lab, bad), Method::GET, "/machines", None).await.0, 401, "{bad:?}");
    }
    // A user cannot revoke another user's token (it reads as not found); the admin can.
    let vera = client(&lab, &user(&lab, "vera", "viewer").await);
    let (_, who) = status(&otto_api, Method::GET, "/auth/whoami", None).await;
    let otto_session = who["token"].as_str().unwrap();
    assert_eq!(status(&vera, Method::DELETE, &format!("/tokens/{otto_session}"), None).await.0, 404);
    assert_eq!(status(&vera, Method::GET, "/tokens?user=otto", None).await.0, 403);
    assert_eq!(status(&lab.api, Method::DELETE, &format!("/tokens/{otto_session}"), None).await.0, 204);
    assert_eq!(status(&otto_api, Method::GET, "/machines", None).await.0, 401);
    // A session may end itself (logging out).
    let (_, who) = status(&vera, Method::GET, "/auth/whoami", None).await;
    assert_eq!(
        status(&vera, Method::DELETE, &format!("/tokens/{}", who["token"].as_str().unwrap()), None).await.0,
        204
    );
    assert_eq!(status(&vera, Method::GET, "/machines", None).await.0, 401);
}

#[tokio::test]
async fn a_token_never_acts_above_its_user() {
    let lab = Lab::start("").await;
    let otto = client(&lab, &user(&lab, "otto", "operator").await);
    let (s, p) = status(&otto, Method::POST, "/tokens", Some(json!({"name": "up", "role": "admin"}))).await;
    assert_eq!(s, 403, "{p}");
    let (s, low) = status(&otto, Method::POST, "/tokens", Some(json!({"name": "ro", "role": "viewer"}))).await;
    assert_eq!(s, 201, "{low}");
    let ro = client(&lab, low["secret"].as_str().unwrap());
    assert_eq!(status(&ro, Method::POST, "/machines", Some(json!({"macs": ["52:54:00:aa:00:02"]}))).await.0, 403);
    // A viewer token of an operator cannot mint an operator token.
    assert_eq!(status(&ro, Method::POST, "/tokens", Some(json!({"name": "x", "role": "operator"}))).await.0, 403);
    let (s, op) = status(&otto, Method::POST, "/tokens", Some(json!({"name": "op", "ttl_secs": 3600}))).await;
    assert_eq!(s, 201, "{op}");
    assert!(op["token"]["expires_ms"].as_u64().unwrap() > now_ms());
    let op = client(&lab, op["secret"].as_str().unwrap());
    // Demoting the user demotes every token of theirs.
    let (s, v) = status(&lab.api, Method::PATCH, "/users/otto", Some(json!({"role": "viewer"}))).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(status(&op, Method::POST, "/machines", Some(json!({"macs": ["52:54:00:aa:00:03"]}))).await.0, 403);
    assert_eq!(status(&op, Method::GET, "/auth/whoami", None).await.1["role"], "viewer");
    // The last admin cannot be demoted, disabled or deleted.
    for (m, body) in [
        (Method::PATCH, Some(json!({"role": "operator"}))),
        (Method::PATCH, Some(json!({"disabled": true}))),
        (Method::DELETE, None),
    ] {
        assert_eq!(status(&lab.api, m, "/users/admin", body).await.0, 409);
    }
}

#[tokio::test]
async fn disabling_or_deleting_a_user_ends_their_tokens() {
    let lab = Lab::start("").await;
    let otto = client(&lab, &user(&lab, "otto", "operator").await);
    assert_eq!(status(&otto, Method::GET, "/machines", None).await.0, 200);
    assert_eq!(status(&lab.api, Method::PATCH, "/users/otto", Some(json!({"disabled": true}))).await.0, 200);
    assert_eq!(status(&otto, Method::GET, "/machines", None).await.0, 401);
    let (s, _) = client(&lab, "")
        .call(Method::POST, "/auth/login", Some(json!({"username": "otto", "password": "otto-password-123"})))
        .await
        .unwrap();
    assert_eq!(s, 401, "a disabled user cannot log in");
    assert_eq!(status(&lab.api, Method::PATCH, "/users/otto", Some(json!({"disabled": false}))).await.0, 200);
    assert_eq!(status(&otto, Method::GET, "/machines", None).await.0, 200);
    assert_eq!(status(&lab.api, Method::DELETE, "/users/otto", None).await.0, 204);
    assert_eq!(status(&otto, Method::GET, "/machines", None).await.0, 401);
    // A new user of the same name does not inherit the old one's tokens.
    user(&lab, "otto", "operator").await;
    assert_eq!(status(&otto, Method::GET, "/machines", None).await.0, 401);
    assert!(lab.api.ok(Method::GET, "/tokens?user=otto", None).await.unwrap()["tokens"].as_array().unwrap().len() == 1);
}

#[tokio::test]
async fn wrong_passwords_are_rate_limited_and_audited_then_the_window_ends() {
    let lab = Lab::start("[auth]\nlogin_window_secs = 2\n").await;
    user(&lab, "otto", "operator").await;
    let anon = client(&lab, "");
    let mut codes = Vec::new();
    for _ in 0..10 {
        let resp = anon
            .send(
                Method::POST,
                "/auth/login",
                &[("content-type", "application/json")],
                json!({"username": "otto", "password": "guess-guess-guess"}).to_string(),
            )
            .await
            .unwrap();
        if resp.status() == 429 {
            let wait: u64 = resp.headers().get("retry-after").unwrap().to_str().unwrap().parse().unwrap();
            assert!((1..=2).contains(&wait), "{wait}");
        }
        codes.push(resp.status().as_u16());
    }
    assert_eq!(codes, [401, 401, 401, 401, 401, 429, 429, 429, 429, 429]);
    // The right password is refused too while the window lasts...
    let right = json!({"username": "otto", "password": "otto-password-123"});
    assert_eq!(anon.call(Method::POST, "/auth/login", Some(right.clone())).await.unwrap().0, 429);
    let failed = audit(&lab, "user=otto").await;
    assert_eq!(failed.iter().filter(|e| e["route"] == "/auth/login" && e["outcome"] == "denied").count(), 5);
    assert_eq!(failed.iter().filter(|e| e["route"] == "/auth/login" && e["outcome"] == "limited").count(), 6);
    // ...and works once it has passed.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(anon.call(Method::POST, "/auth/login", Some(right)).await.unwrap().0, 200);
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn the_admin_files_work_and_an_old_token_file_survives_the_upgrade() {
    let mut lab = Lab::start("").await;
    let dir = lab.dir.path().to_path_buf();
    assert_eq!((mode(&dir.join("admin.token")), mode(&dir.join("admin.password"))), (0o600, 0o600));
    let password = std::fs::read_to_string(dir.join("admin.password")).unwrap();
    let session = client(&lab, &login(&lab, "admin", password.trim()).await);
    assert_eq!(status(&session, Method::GET, "/auth/whoami", None).await.1["role"], "admin");
    let token = lab.app.as_ref().unwrap().admin_token.clone();
    assert!(token.starts_with("rbt_"), "{token}");
    lab.restart().await;
    assert_eq!(lab.app.as_ref().unwrap().admin_token, token);
    assert_eq!(status(&lab.api, Method::GET, "/machines", None).await.0, 200);

    // A data dir from before users: a plain hex token in admin.token and no user at all.
    lab.stop().await;
    std::fs::remove_file(dir.join("rackboot.redb")).unwrap();
    let old = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978";
    std::fs::write(dir.join("admin.token"), format!("{old}\n")).unwrap();
    for i in 0..2 {
        lab.restart().await;
        let api = client(&lab, old);
        let (s, who) = status(&api, Method::GET, "/auth/whoami", None).await;
        assert_eq!((s, who["user"].as_str(), who["role"].as_str()), (200, Some("admin"), Some("admin")), "{who}");
        assert_eq!(
            status(&api, Method::POST, "/machines", Some(json!({"macs": [format!("52:54:00:aa:00:0{i}")]}))).await.0,
            201
        );
    }
    assert_eq!(
        status(&client(&lab, "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6979"), Method::GET, "/machines", None)
            .await
            .0,
        401
    );
    // Revoked (not by itself: an API token cannot revoke itself), it stays revoked across a restart.
    assert_eq!(status(&client(&lab, old), Method::DELETE, "/tokens/legacy", None).await.0, 409);
    let password = std::fs::read_to_string(dir.join("admin.password")).unwrap();
    let session = client(&lab, &login(&lab, "admin", password.trim()).await);
    assert_eq!(status(&session, Method::DELETE, "/tokens/legacy", None).await.0, 204);
    lab.restart().await;
    assert_eq!(status(&client(&lab, old), Method::GET, "/machines", None).await.0, 401);
}

fn cli(lab: &Lab, args: &[&str], stdin: &str) -> (bool, String, String) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .args(args)
        .arg("--api")
        .arg(url(lab))
        .arg("--ca")
        .arg(lab.dir.path().join("tls/ca.pem"))
        .arg("--token-file")
        .arg(lab.dir.path().join("admin.token"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

// Multi-threaded: the CLI runs as a blocking child process while the server answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_users_tokens_and_audit() {
    let lab = Lab::start("").await;
    let (ok, out, err) = cli(&lab, &["users", "add", "alice", "--role", "operator"], "alice-password-1\n");
    assert!(ok, "{out}{err}");
    let (ok, out, _) = cli(&lab, &["users", "add", "bob", "--role", "viewer"], "short\n");
    assert!(!ok && !out.contains("short"), "the password policy holds: {out}");
    let (ok, out, _) = cli(&lab, &["users", "list"], "");
    assert!(ok && out.contains("alice") && out.contains("operator"), "{out}");
    let (ok, out, _) = cli(&lab, &["users", "set", "alice", "--password"], "alice-password-2\n");
    assert!(ok, "{out}");
    login(&lab, "alice", "alice-password-2").await;

    let (ok, secret, err) = cli(&lab, &["tokens", "create", "ci", "--role", "viewer", "--ttl", "3600"], "");
    assert!(ok && secret.trim().starts_with("rbt_") && secret.lines().count() == 1, "{secret}{err}");
    let ci = client(&lab, secret.trim());
    assert_eq!(status(&ci, Method::GET, "/auth/whoami", None).await.1["role"], "viewer");
    let id = secret.trim().split('_').nth(1).unwrap().to_string();
    let (ok, out, _) = cli(&lab, &["tokens", "list"], "");
    assert!(ok && out.contains(&id) && !out.contains(secret.trim()), "{out}");
    let (ok, out, _) = cli(&lab, &["tokens", "revoke", &id], "");
    assert!(ok, "{out}");
    assert_eq!(status(&ci, Method::GET, "/machines", None).await.0, 401);

    let (ok, out, _) = cli(&lab, &["audit", "--user", "admin", "--limit", "50"], "");
    assert!(ok && out.contains("/users/{name}") && out.contains("name=alice") && out.contains("/tokens/{id}"), "{out}");
    assert!(!out.contains("alice-password"), "{out}");
    let (ok, out, _) = cli(&lab, &["users", "delete", "alice"], "");
    assert!(ok, "{out}");
}

/// A login over plain HTTP (`http.loopback_api`): HTTP/1.0, the whole response back.
async fn plain_login(addr: std::net::SocketAddr, name: &str, password: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = json!({"username": name, "password": password}).to_string();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/v1/auth/login HTTP/1.0\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status line: {out:?}"))
}

/// With `http.loopback_api` the whole API answers on the plain listener too. Both listeners
/// share one login limiter: wrong passwords over plain HTTP lock the user out over HTTPS as
/// well, so a second listener is not a second quota of guesses.
#[tokio::test]
async fn both_listeners_share_one_login_limiter() {
    let dir = tempfile::tempdir().unwrap();
    let text = config_text(dir.path(), 0, "").replace("[http]\n", "[http]\nloopback_api = true\n");
    let running = rackboot::app::start(rackboot::config::Config::parse(&text).unwrap()).await.unwrap();
    let https = format!("https://{}", running.https_addr);
    let admin = ApiClient::new(&https, running.admin_token.clone(), running.ca_pem.as_bytes()).unwrap();
    let (s, v) = admin
        .call(
            Method::POST,
            "/users",
            Some(json!({"name": "otto", "role": "operator", "password": "otto-password-123"})),
        )
        .await
        .unwrap();
    assert_eq!(s, 201, "{v}");
    // The plain listener really serves the API: the right password logs in there.
    assert_eq!(plain_login(running.http_addr, "otto", "otto-password-123").await, 200);
    let mut codes = Vec::new();
    for _ in 0..5 {
        codes.push(plain_login(running.http_addr, "otto", "guess-guess-guess").await);
    }
    assert_eq!(codes, [401; 5]);
    let anon = ApiClient::new(&https, String::new(), running.ca_pem.as_bytes()).unwrap();
    let right = json!({"username": "otto", "password": "otto-password-123"});
    assert_eq!(anon.call(Method::POST, "/auth/login", Some(right)).await.unwrap().0, 429, "limited over HTTPS too");
    running.wait(async {}).await.unwrap();
}
