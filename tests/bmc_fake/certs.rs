//! The fake BMC's firmware certificates: the system's `Boot.Certificates` and Secure Boot's
//! `db` as DMTF collections (db members show only their fingerprint, as iLO's do), or, in
//! [`Mode::Hpe`], HTTPS boot's certificates in HPE's `Bios/tlsconfig`, pending until the next
//! reset. A POST or PATCH must carry a PEM certificate.

use hyper::StatusCode;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};

use super::{reply, Fake, Mode, Reply};

pub const BOOT: &str = "/redfish/v1/Systems/1/Boot/Certificates";
pub const DB: &str = "/redfish/v1/Systems/1/SecureBoot/SecureBootDatabases/db/Certificates";
pub const HPE_TLS: &str = "/redfish/v1/Systems/1/Bios/tlsconfig/";

/// The certificates (PEM) each place holds.
#[derive(Default, Debug)]
pub struct Certs {
    pub boot: Vec<String>,
    pub db: Vec<String>,
    pub hpe_current: Vec<String>,
    pub hpe_pending: Vec<String>,
}

fn fingerprint(pem: &str) -> String {
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
    let hex = rackboot::tls::fingerprint(&der).to_uppercase();
    hex.as_bytes().chunks(2).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join(":")
}

fn is_pem_cert(pem: &str) -> bool {
    CertificateDer::from_pem_slice(pem.as_bytes()).is_ok()
}

fn collection(path: &str, n: usize) -> Value {
    json!({"Members": (0..n).map(|i| json!({"@odata.id": format!("{path}/{i}")})).collect::<Vec<_>>()})
}

impl Fake {
    /// What the system resource links to (merged into its answer).
    pub(super) fn cert_links(&self, sys: &mut Value) {
        if self.mode == Mode::NoMedia {
            return;
        }
        if self.mode != Mode::Hpe {
            sys["Boot"]["Certificates"] = json!({"@odata.id": BOOT});
        }
        sys["SecureBoot"] = json!({"@odata.id": "/redfish/v1/Systems/1/SecureBoot"});
    }

    /// A reset makes HPE's pending certificates current.
    pub(super) fn reset_certs(&self) {
        let mut c = self.certs.lock().unwrap();
        let pending = std::mem::take(&mut c.hpe_pending);
        c.hpe_current.extend(pending);
    }

    /// The answer to a certificate request, if it is one.
    pub(super) fn answer_certs(&self, method: &str, path: &str, body: &Value) -> Option<Reply> {
        let mut c = self.certs.lock().unwrap();
        let bad = || reply(StatusCode::BAD_REQUEST, json!({"error": {"message": "Empty or malformed certificate"}}));
        let ok = match (method, path) {
            ("GET", "/redfish/v1/Systems/1/SecureBoot") => reply(
                StatusCode::OK,
                json!({"SecureBootEnable": true,
                    "SecureBootDatabases": {"@odata.id": "/redfish/v1/Systems/1/SecureBoot/SecureBootDatabases"}}),
            ),
            ("GET", "/redfish/v1/Systems/1/SecureBoot/SecureBootDatabases") => {
                let members = ["PK", "KEK", "db", "dbx"]
                    .map(|d| json!({"@odata.id": format!("/redfish/v1/Systems/1/SecureBoot/SecureBootDatabases/{d}")}));
                reply(StatusCode::OK, json!({ "Members": members }))
            }
            ("GET", "/redfish/v1/Systems/1/SecureBoot/SecureBootDatabases/db") => {
                reply(StatusCode::OK, json!({"Id": "db", "Certificates": {"@odata.id": DB}}))
            }
            ("GET", BOOT) if self.mode != Mode::Hpe => reply(StatusCode::OK, collection(BOOT, c.boot.len())),
            ("GET", DB) => reply(StatusCode::OK, collection(DB, c.db.len())),
            ("POST", BOOT | DB) if self.mode != Mode::Hpe || path == DB => {
                let pem = body["CertificateString"].as_str().unwrap_or_default();
                if body["CertificateType"] != "PEM" || !is_pem_cert(pem) {
                    return Some(bad());
                }
                if path == BOOT { &mut c.boot } else { &mut c.db }.push(pem.to_string());
                reply(StatusCode::CREATED, Value::Null)
            }
            ("GET", p) if p.starts_with(&format!("{BOOT}/")) || p.starts_with(&format!("{DB}/")) => {
                let i: usize = p.rsplit('/').next()?.parse().ok()?;
                let pem = if p.starts_with(BOOT) { c.boot.get(i)? } else { c.db.get(i)? };
                let entry = if p.starts_with(BOOT) {
                    json!({"CertificateString": pem, "CertificateType": "PEM"})
                } else {
                    json!({"Fingerprint": fingerprint(pem), "FingerprintHashAlgorithm": "TPM_ALG_SHA256"})
                };
                reply(StatusCode::OK, entry)
            }
            ("GET", HPE_TLS) if self.mode == Mode::Hpe => reply(
                StatusCode::OK,
                json!({"Certificates": c.hpe_current.iter().map(|p| json!({"FingerPrint": fingerprint(p)})).collect::<Vec<_>>(),
                    "@Redfish.Settings": {"SettingsObject": {"@odata.id": format!("{HPE_TLS}settings/")}}}),
            ),
            ("GET", p) if self.mode == Mode::Hpe && p == format!("{HPE_TLS}settings/") => reply(
                StatusCode::OK,
                json!({"NewCertificates": c.hpe_pending.iter().map(|p| json!({"X509Certificate": p})).collect::<Vec<_>>()}),
            ),
            ("PATCH", p) if self.mode == Mode::Hpe && p == format!("{HPE_TLS}settings/") => {
                let new = body["NewCertificates"].as_array().cloned().unwrap_or_default();
                let pems: Vec<String> =
                    new.iter().filter_map(|n| n["X509Certificate"].as_str()).map(str::to_string).collect();
                if pems.is_empty() || pems.len() != new.len() || !pems.iter().all(|p| is_pem_cert(p)) {
                    return Some(bad());
                }
                c.hpe_pending.extend(pems);
                reply(StatusCode::NO_CONTENT, Value::Null)
            }
            _ => return None,
        };
        Some(ok)
    }
}
