//! A hostile OpenID provider for the tests: HTTPS on loopback (its own CA), discovery, a JWKS
//! with one RSA key, an authorization endpoint that sends the browser straight back with a code,
//! and a token endpoint that checks PKCE and the redirect URI, takes each code once, and answers
//! an ID token made as [`Mode`] says: good, or forged in one way. The real flow in a browser is
//! tested against `oidc-provider` (tests/it/ui/oidc.rs); this one lies on purpose.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use openidconnect::core::{CoreHmacKey, CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey};
use openidconnect::{JsonWebKeyId, PrivateSigningKey};
use serde_json::{json, Value};
use sha2::Digest;

/// How the next ID token is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Good,
    /// Signed by another key that claims the JWKS key's id.
    ForgedKey,
    /// `exp` an hour ago.
    Expired,
    /// For another client.
    WrongAudience,
    /// Not the nonce the login sent.
    WrongNonce,
    /// From another issuer.
    WrongIssuer,
    /// HS256 keyed with the client secret (an algorithm confusion).
    Hs256,
    /// `alg: none`, no signature.
    AlgNone,
    /// Issued an hour from now.
    FromTheFuture,
}

/// A code handed out, and what its token request must match.
struct Grant {
    nonce: String,
    challenge: String,
    redirect_uri: String,
}

struct State {
    mode: Mode,
    username: String,
    subject: String,
    groups: Vec<String>,
    grants: HashMap<String, Grant>,
    next_code: u64,
}

pub struct FakeIdp {
    pub issuer: String,
    pub ca_pem: String,
    pub client_id: String,
    pub client_secret: String,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeIdp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An RSA key (PKCS#1 PEM), made by openssl.
fn rsa_pem() -> String {
    let out = std::process::Command::new("openssl").args(["genrsa", "-traditional", "2048"]).output().unwrap();
    assert!(out.status.success(), "openssl genrsa: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

impl FakeIdp {
    pub async fn start() -> FakeIdp {
        let (ca_pem, cert, key, _) = crate::common::loopback_pki("fake OpenID provider CA");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("https://127.0.0.1:{}/realm", listener.local_addr().unwrap().port());
        let cert: rustls::pki_types::CertificateDer<'static> =
            rustls::pki_types::pem::PemObject::from_pem_slice(cert.as_bytes()).unwrap();
        let certs = vec![cert];
        let key: rustls::pki_types::PrivateKeyDer<'static> =
            rustls::pki_types::pem::PemObject::from_pem_slice(key.as_bytes()).unwrap();
        let tls = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let state = Arc::new(Mutex::new(State {
            mode: Mode::Good,
            username: "olivia".into(),
            subject: "sub-olivia".into(),
            groups: vec!["rack-ops".into()],
            grants: HashMap::new(),
            next_code: 1,
        }));
        let keys = Arc::new(Keys {
            good: CoreRsaPrivateSigningKey::from_pem(&rsa_pem(), Some(JsonWebKeyId::new("k1".into()))).unwrap(),
            evil: CoreRsaPrivateSigningKey::from_pem(&rsa_pem(), Some(JsonWebKeyId::new("k1".into()))).unwrap(),
        });
        let (client_id, client_secret) = ("rackboot".to_string(), "a-client-secret-of-32-characters".to_string());
        let ctx = Arc::new(Ctx {
            issuer: issuer.clone(),
            client_id: client_id.clone(),
            client_secret: client_secret.clone(),
            keys,
            state: state.clone(),
        });
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let (acceptor, ctx) = (acceptor.clone(), ctx.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(move |req| {
                        let ctx = ctx.clone();
                        async move { Ok::<_, std::convert::Infallible>(ctx.answer(req).await) }
                    });
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
                });
            }
        });
        FakeIdp { issuer, ca_pem, client_id, client_secret, state, task }
    }

    /// How the next ID tokens are made.
    pub fn mode(&self, mode: Mode) {
        self.state.lock().unwrap().mode = mode;
    }

    /// Who logs in next: username, subject and groups.
    pub fn user(&self, username: &str, subject: &str, groups: &[&str]) {
        let mut s = self.state.lock().unwrap();
        s.username = username.into();
        s.subject = subject.into();
        s.groups = groups.iter().map(|g| g.to_string()).collect();
    }
}

struct Keys {
    good: CoreRsaPrivateSigningKey,
    evil: CoreRsaPrivateSigningKey,
}

struct Ctx {
    issuer: String,
    client_id: String,
    client_secret: String,
    keys: Arc<Keys>,
    state: Arc<Mutex<State>>,
}

fn json_answer(status: u16, v: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(v.to_string())))
        .unwrap()
}

fn query(q: &str) -> HashMap<String, String> {
    form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}

impl Ctx {
    async fn answer(&self, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let path = req.uri().path().trim_start_matches("/realm").to_string();
        let q = query(req.uri().query().unwrap_or(""));
        match path.as_str() {
            "/.well-known/openid-configuration" => json_answer(
                200,
                json!({"issuer": self.issuer, "authorization_endpoint": format!("{}/auth", self.issuer),
                    "token_endpoint": format!("{}/token", self.issuer), "jwks_uri": format!("{}/jwks", self.issuer),
                    "response_types_supported": ["code"], "subject_types_supported": ["public"],
                    "id_token_signing_alg_values_supported": ["RS256"]}),
            ),
            "/jwks" => json_answer(200, json!({"keys": [self.keys.good.as_verification_key()]})),
            "/auth" => {
                let mut s = self.state.lock().unwrap();
                let code = format!("code-{}", s.next_code);
                s.next_code += 1;
                let grant = Grant {
                    nonce: q.get("nonce").cloned().unwrap_or_default(),
                    challenge: q.get("code_challenge").cloned().unwrap_or_default(),
                    redirect_uri: q.get("redirect_uri").cloned().unwrap_or_default(),
                };
                let to =
                    format!("{}?code={code}&state={}", grant.redirect_uri, q.get("state").cloned().unwrap_or_default());
                s.grants.insert(code, grant);
                Response::builder().status(302).header("location", to).body(Full::new(Bytes::new())).unwrap()
            }
            "/token" => {
                let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                let f = query(&String::from_utf8_lossy(&body));
                self.token(&f)
            }
            _ => json_answer(404, json!({"error": "not_found"})),
        }
    }

    fn token(&self, f: &HashMap<String, String>) -> Response<Full<Bytes>> {
        let refused = |why: &str| json_answer(400, json!({"error": "invalid_grant", "error_description": why}));
        let mut s = self.state.lock().unwrap();
        // Each code once, as a real provider.
        let Some(grant) = f.get("code").and_then(|c| s.grants.remove(c)) else {
            return refused("unknown or used code");
        };
        let verifier = f.get("code_verifier").cloned().unwrap_or_default();
        if b64(&sha2::Sha256::digest(verifier.as_bytes())) != grant.challenge {
            return refused("PKCE verifier does not match");
        }
        if f.get("redirect_uri") != Some(&grant.redirect_uri) {
            return refused("redirect_uri differs");
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
        let mode = s.mode;
        let mut claims = json!({"iss": self.issuer, "sub": s.subject, "aud": self.client_id, "exp": now + 300,
            "iat": now, "nonce": grant.nonce, "preferred_username": s.username, "groups": s.groups});
        match mode {
            Mode::Expired => claims["exp"] = json!(now - 3600),
            Mode::WrongAudience => claims["aud"] = json!("another-client"),
            Mode::WrongNonce => claims["nonce"] = json!("not-the-nonce"),
            Mode::WrongIssuer => claims["iss"] = json!("https://127.0.0.1:1/evil"),
            Mode::FromTheFuture => claims["iat"] = json!(now + 3600),
            _ => {}
        }
        let alg = match mode {
            Mode::Hs256 => "HS256",
            Mode::AlgNone => "none",
            _ => "RS256",
        };
        let head = b64(json!({"alg": alg, "kid": "k1", "typ": "JWT"}).to_string().as_bytes());
        let input = format!("{head}.{}", b64(claims.to_string().as_bytes()));
        let sig = match mode {
            Mode::AlgNone => Vec::new(),
            Mode::Hs256 => CoreHmacKey::new(self.client_secret.as_bytes())
                .sign(&CoreJwsSigningAlgorithm::HmacSha256, input.as_bytes())
                .unwrap(),
            Mode::ForgedKey => {
                self.keys.evil.sign(&CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256, input.as_bytes()).unwrap()
            }
            _ => self.keys.good.sign(&CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256, input.as_bytes()).unwrap(),
        };
        let id_token = format!("{input}.{}", b64(&sig));
        json_answer(
            200,
            json!({"access_token": "at-1", "token_type": "Bearer", "expires_in": 300, "id_token": id_token}),
        )
    }
}
