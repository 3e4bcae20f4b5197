//! Small Redfish BMCs for the fault tests, over HTTPS (hyper + tokio-rustls): a well-behaved
//! one with sessions, and faulty ones (wrong credentials, silence, 500s, a redirect loop, a
//! restart that is advertised but fails). Each counts its requests and the sessions it had open
//! at once; a gauge shared by several counts sessions open over all of them.
#![allow(dead_code)]

pub mod certs;
pub mod dialect;
pub mod update;

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

pub const USER: &str = "admin";
pub const PASSWORD: &str = "fake-Secret-7";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Good,
    /// 401 to everything.
    WrongCredentials,
    /// Accepts connections and never answers.
    Silent,
    /// 500 to everything.
    Errors,
    /// The Systems collection redirects to itself, forever.
    RedirectLoop,
    /// Advertises ForceRestart but answers it with 500; On and ForceOff work.
    RestartFails,
    /// Has no virtual media, nor a place for firmware certificates.
    NoMedia,
    /// HPE's dialect: HTTPS boot's certificates in `Bios/tlsconfig` (no `Boot.Certificates`),
    /// the BIOS settings' `@odata.etag` required in `If-Match` (see `dialect`).
    Hpe,
    /// Dell's: PATCHes answered 202 with a task monitor.
    Dell,
    /// Supermicro's: an `ETag` on everything, required on every PATCH; one 503.
    Supermicro,
    /// Has a virtual CD whose insert fails (500).
    InsertFails,
    /// Has an UpdateService whose `SimpleUpdate` flashes the BIOS and the BMC (see `update`).
    Updates,
    /// Its `SimpleUpdate` task ends in `Exception`.
    UpdateFails,
    /// Has no `SimpleUpdate`: images are pushed to its `MultipartHttpPushUri` (4 KiB at most).
    UpdatesPush,
}

/// Sessions open at once, now and at most.
#[derive(Default)]
pub struct Gauge {
    now: AtomicUsize,
    pub max: AtomicUsize,
}

impl Gauge {
    fn up(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
    }
    fn down(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

pub struct Fake {
    pub mode: Mode,
    pub requests: AtomicUsize,
    pub sessions: Gauge,
    global: Arc<Gauge>,
    power: Mutex<&'static str>,
    boot: Mutex<Value>,
    pub resets: Mutex<Vec<String>>,
    /// The BIOS's current attributes and those pending until the next reset.
    pub bios: Mutex<(Value, Value)>,
    /// The virtual CD: the last InsertMedia body while inserted (`Null`: empty), and ejects.
    pub cd: Mutex<(Value, u32)>,
    /// Firmware certificates.
    pub certs: Mutex<certs::Certs>,
    /// Dialects: the resources' version (their ETag), the `If-Match` values sent, task
    /// monitor polls, whether the one 503 was sent.
    version: AtomicUsize,
    pub if_matches: Mutex<Vec<String>>,
    pub task_polls: AtomicUsize,
    busy_once: std::sync::atomic::AtomicBool,
    paths: Mutex<Vec<String>>,
    /// Firmware versions and updates (`update`).
    pub fw: Mutex<update::Firmware>,
    /// Added to every answer (so overlapping commands would overlap on the server).
    delay: Duration,
    pub port: u16,
    pub fingerprint: String,
}

pub struct Cert {
    pub chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    pub key: rustls::pki_types::PrivateKeyDer<'static>,
    pub fingerprint: String,
}

pub fn cert() -> Cert {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let der = ck.cert.der().clone();
    Cert {
        fingerprint: rackboot::tls::fingerprint(&der),
        chain: vec![der],
        key: rustls::pki_types::PrivateKeyDer::try_from(ck.signing_key.serialize_der()).unwrap(),
    }
}

/// Starts a fake BMC on a free loopback port; it runs until the runtime ends.
pub async fn start(mode: Mode, global: Arc<Gauge>, delay: Duration, cert: &Cert) -> Arc<Fake> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = rackboot::tls::server_config(cert.chain.clone(), cert.key.clone_key()).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let fake = Arc::new(Fake {
        mode,
        requests: AtomicUsize::new(0),
        sessions: Gauge::default(),
        global,
        power: Mutex::new("Off"),
        boot: Mutex::new(json!({"BootSourceOverrideTarget": "None", "BootSourceOverrideEnabled": "Disabled"})),
        resets: Mutex::default(),
        bios: Mutex::new((
            json!({"BootMode": "Uefi", "ProcVirtualization": "Disabled", "NumCores": 8, "Nested": {"a": 1},
                "EmbeddedSata": "Raid", "QuietBoot": true}),
            json!({"BootMode": "Uefi", "ProcVirtualization": "Enabled"}),
        )),
        cd: Mutex::new((Value::Null, 0)),
        certs: Mutex::default(),
        version: AtomicUsize::new(1),
        if_matches: Mutex::default(),
        task_polls: AtomicUsize::new(0),
        busy_once: Default::default(),
        paths: Mutex::default(),
        fw: Mutex::default(),
        delay,
        port,
        fingerprint: cert.fingerprint.clone(),
    });
    let f = fake.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            if f.mode == Mode::Silent {
                f.requests.fetch_add(1, Ordering::SeqCst);
                held.push(tcp);
                continue;
            }
            let (acceptor, f) = (acceptor.clone(), f.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let svc = hyper::service::service_fn(move |req| {
                    let f = f.clone();
                    async move { Ok::<_, Infallible>(f.answer(req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), svc).await;
            });
        }
    });
    fake
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, body: Value) -> Reply {
    let mut r = Response::new(Full::new(Bytes::from(if body.is_null() { String::new() } else { body.to_string() })));
    *r.status_mut() = status;
    r.headers_mut().insert("content-type", "application/json".parse().unwrap());
    r
}

impl Fake {
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    pub fn power_state(&self) -> &'static str {
        *self.power.lock().unwrap()
    }

    async fn answer(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        let (method, path) = (req.method().clone(), req.uri().path().to_string());
        self.paths.lock().unwrap().push(req.uri().to_string());
        let token_ok = req.headers().get("x-auth-token").is_some_and(|t| t == "tok");
        let if_match = req.headers().get("if-match").and_then(|v| v.to_str().ok()).map(str::to_string);
        let content_type = req.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let raw = req.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&raw).unwrap_or_default();
        match self.mode {
            Mode::WrongCredentials => {
                return reply(StatusCode::UNAUTHORIZED, json!({"error": {"message": "bad login"}}))
            }
            Mode::Errors => return reply(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": {"message": "busy"}})),
            _ => {}
        }
        if method == "POST" && path == "/redfish/v1/SessionService/Sessions" {
            if body["UserName"] != USER || body["Password"] != PASSWORD {
                return reply(StatusCode::UNAUTHORIZED, Value::Null);
            }
            self.sessions.up();
            self.global.up();
            let mut r = reply(StatusCode::CREATED, json!({"Id": "1"}));
            r.headers_mut().insert("x-auth-token", "tok".parse().unwrap());
            r.headers_mut().insert("location", "/redfish/v1/SessionService/Sessions/1".parse().unwrap());
            return r;
        }
        if !token_ok {
            return reply(StatusCode::UNAUTHORIZED, Value::Null);
        }
        if let Some(r) = self.dialect_before(method.as_str(), &path, if_match.as_deref()) {
            return r;
        }
        if let Some(r) = self.update_before(method.as_str(), &path, &body, (&content_type, &raw)) {
            return r;
        }
        let r = match (method.as_str(), path.as_str()) {
            ("DELETE", "/redfish/v1/SessionService/Sessions/1") => {
                self.sessions.down();
                self.global.down();
                reply(StatusCode::NO_CONTENT, Value::Null)
            }
            ("GET", "/redfish/v1/Systems") if self.mode == Mode::RedirectLoop => {
                let mut r = reply(StatusCode::TEMPORARY_REDIRECT, Value::Null);
                let loc = format!("https://127.0.0.1:{}/redfish/v1/Systems", self.port);
                r.headers_mut().insert("location", loc.parse().unwrap());
                r
            }
            ("GET", "/redfish/v1/Systems") => {
                reply(StatusCode::OK, json!({"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]}))
            }
            ("GET", "/redfish/v1/Systems/1") => {
                let mut sys = json!({"@odata.id": "/redfish/v1/Systems/1", "PowerState": self.power_state(), "BiosVersion": self.bios_version(),
                    "Bios": {"@odata.id": "/redfish/v1/Systems/1/Bios"},
                    "VirtualMedia": if self.mode == Mode::NoMedia { Value::Null } else { json!({"@odata.id": "/redfish/v1/Systems/1/VirtualMedia"}) },
                    "Boot": *self.boot.lock().unwrap(),
                    "Actions": {"#ComputerSystem.Reset": {"target": "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
                        "ResetType@Redfish.AllowableValues": ["On", "ForceOff", "GracefulShutdown", "ForceRestart"]}}});
                self.cert_links(&mut sys);
                reply(StatusCode::OK, sys)
            }
            ("PATCH", "/redfish/v1/Systems/1") => {
                *self.boot.lock().unwrap() = body["Boot"].clone();
                reply(StatusCode::NO_CONTENT, Value::Null)
            }
            ("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset") => {
                let kind = body["ResetType"].as_str().unwrap_or_default().to_string();
                self.resets.lock().unwrap().push(kind.clone());
                if kind == "On" || kind == "ForceRestart" {
                    self.reset_bios();
                    self.reset_certs();
                    self.reset_firmware();
                }
                let mut p = self.power.lock().unwrap();
                match kind.as_str() {
                    "On" => *p = "On",
                    "ForceOff" | "GracefulShutdown" => *p = "Off",
                    "ForceRestart" if self.mode == Mode::RestartFails => {
                        return reply(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            json!({"error": {"message": "restart broken"}}),
                        )
                    }
                    "ForceRestart" => *p = "On",
                    _ => return reply(StatusCode::BAD_REQUEST, Value::Null),
                }
                reply(StatusCode::NO_CONTENT, Value::Null)
            }
            // Firmware: BIOS attributes (one not plain), a pending change, and an inventory
            // longer than the appliance keeps, one member linked off the BMC.
            ("GET", "/redfish/v1/Systems/1/Bios") => reply(
                StatusCode::OK,
                json!({"AttributeRegistry": "BiosAttributeRegistry.v1_0_0",
                    "Oem": if self.mode == Mode::Hpe { json!({"Hpe": {"Links": {"TlsConfig": {"@odata.id": certs::HPE_TLS}}}}) } else { Value::Null },
                    "Attributes": self.bios.lock().unwrap().0.clone(),
                    "@Redfish.Settings": {"SettingsObject": {"@odata.id": "/redfish/v1/Systems/1/Bios/Settings"},
                        "SupportedApplyTimes": ["OnReset"]}}),
            ),
            ("GET", "/redfish/v1/Systems/1/Bios/Settings") => {
                let mut settings = json!({"Attributes": self.bios.lock().unwrap().1.clone()});
                if self.mode == Mode::Hpe {
                    settings["@odata.etag"] = json!(self.etag());
                }
                reply(StatusCode::OK, settings)
            }
            // Settings wait for the next reset. EmbeddedSata takes Raid or Ahci only; QuietBoot
            // is taken and then lost at the reset (a BMC that accepts what it cannot apply).
            ("PATCH", "/redfish/v1/Systems/1/Bios/Settings") => {
                if body["@Redfish.SettingsApplyTime"]["ApplyTime"] != "OnReset" {
                    return reply(StatusCode::BAD_REQUEST, json!({"error": {"message": "ApplyTime OnReset expected"}}));
                }
                let attrs = body["Attributes"].as_object().cloned().unwrap_or_default();
                if let Some(v) = attrs.get("EmbeddedSata").filter(|v| *v != "Raid" && *v != "Ahci") {
                    let message =
                        format!("The value {v} for the property EmbeddedSata is not in the list of acceptable values.");
                    return reply(
                        StatusCode::BAD_REQUEST,
                        json!({"error": {"code": "Base.1.8.PropertyValueNotInList",
                        "message": "See @Message.ExtendedInfo", "@Message.ExtendedInfo": [{"Message": message}]}}),
                    );
                }
                let mut bios = self.bios.lock().unwrap();
                for (k, v) in attrs {
                    bios.1[k] = v;
                }
                reply(StatusCode::NO_CONTENT, Value::Null)
            }
            // Virtual media: a floppy (passed over) and a CD.
            ("GET", "/redfish/v1/Systems/1/VirtualMedia") => reply(
                StatusCode::OK,
                json!({"Members": [{"@odata.id": "/redfish/v1/Systems/1/VirtualMedia/Floppy"},
                    {"@odata.id": "/redfish/v1/Systems/1/VirtualMedia/Cd"}]}),
            ),
            ("GET", "/redfish/v1/Systems/1/VirtualMedia/Floppy") => {
                reply(StatusCode::OK, json!({"MediaTypes": ["Floppy"], "Inserted": false}))
            }
            ("GET", "/redfish/v1/Systems/1/VirtualMedia/Cd") => {
                let cd = self.cd.lock().unwrap().0.clone();
                reply(
                    StatusCode::OK,
                    json!({"MediaTypes": ["CD", "DVD"], "Inserted": !cd.is_null(), "Image": cd["Image"],
                        "Actions": {"#VirtualMedia.InsertMedia": {"target": "/redfish/v1/Systems/1/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"},
                            "#VirtualMedia.EjectMedia": {"target": "/redfish/v1/Systems/1/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia"}}}),
                )
            }
            ("POST", "/redfish/v1/Systems/1/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia") => {
                if self.mode == Mode::InsertFails {
                    return reply(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        json!({"error": {"message": "image not reachable"}}),
                    );
                }
                self.cd.lock().unwrap().0 = body;
                reply(StatusCode::NO_CONTENT, Value::Null)
            }
            ("POST", "/redfish/v1/Systems/1/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia") => {
                let mut cd = self.cd.lock().unwrap();
                *cd = (Value::Null, cd.1 + 1);
                reply(StatusCode::NO_CONTENT, Value::Null)
            }
            ("GET", "/redfish/v1") => {
                reply(StatusCode::OK, json!({"UpdateService": {"@odata.id": "/redfish/v1/UpdateService"}}))
            }
            ("GET", "/redfish/v1/UpdateService") => reply(
                StatusCode::OK,
                json!({"FirmwareInventory": {"@odata.id": "/redfish/v1/UpdateService/FirmwareInventory"}}),
            ),
            ("GET", "/redfish/v1/UpdateService/FirmwareInventory") => {
                let mut members: Vec<Value> = (0..200)
                    .map(|i| json!({"@odata.id": format!("/redfish/v1/UpdateService/FirmwareInventory/fw{i}")}))
                    .collect();
                members.insert(1, json!({"@odata.id": "https://elsewhere/redfish/v1/x"}));
                reply(StatusCode::OK, json!({"Members": members}))
            }
            ("GET", p) if p.starts_with("/redfish/v1/UpdateService/FirmwareInventory/fw") => {
                let id = p.rsplit('/').next().unwrap_or_default();
                reply(
                    StatusCode::OK,
                    json!({"Id": id, "Name": format!("component {id}"), "Version": "1.0.0", "Updateable": true,
                        "Status": {"Health": "OK"}}),
                )
            }
            (m, p) => self.answer_certs(m, p, &body).unwrap_or_else(|| reply(StatusCode::NOT_FOUND, Value::Null)),
        };
        self.dialect_after(method.as_str(), r)
    }

    /// A reset applies the pending BIOS settings (all but QuietBoot).
    fn reset_bios(&self) {
        let mut bios = self.bios.lock().unwrap();
        let pending = std::mem::take(bios.1.as_object_mut().unwrap());
        for (k, v) in pending {
            if k != "QuietBoot" {
                bios.0[k] = v;
            }
        }
    }

    /// Every path asked for so far.
    pub fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}
