//! Certificates put into a system's firmware through Redfish, for the BIOS step
//! ([`FirmwareCert`]): the boot CA, so the firmware's HTTPS boot trusts the boot listener, and
//! BootOS's signing certificate, so Secure Boot's `db` admits the appliance's image.
//!
//! | certificate | where it goes | how |
//! |---|---|---|
//! | HTTPS boot | the system's `Boot.Certificates` (DMTF ComputerSystem 1.7 and later) | POST `{CertificateString, CertificateType: "PEM"}` |
//! | HTTPS boot | HPE: the Bios resource's `Oem.Hpe.Links.TlsConfig` (iLO 5 `Bios/tlsconfig`, iLO 6 `Bios/oem/hpe/tlsconfig`) | PATCH its settings object `{NewCertificates: [{X509Certificate}]}`; current after the next reset |
//! | Secure Boot db | `SecureBoot` -> `SecureBootDatabases` -> `db` -> `Certificates` (DMTF; HPE iLO 5 and later, Dell iDRAC 9 4.x and later) | POST as for `Boot.Certificates` |
//!
//! A certificate the firmware has already (the same PEM, SHA-256 or SHA-1 fingerprint, or serial
//! number) is not sent again, so the step can run any number of times. A BMC that offers none
//! of these places gets a clear error, not a guess at vendor paths.

use hyper::Method;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};
use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::firmware::link;
use super::Redfish;
use crate::BmcError;
use rackboot_model::bios::FirmwareCert;

/// Members of a certificate collection read, at most.
const MAX_MEMBERS: usize = 64;

/// Where a certificate goes on this BMC.
enum Place {
    /// A DMTF CertificateCollection: POST to add, members to read back.
    Collection(String),
    /// HPE's HTTPS boot TLS configuration: its current resource and its settings object.
    HpeTls { current: String, settings: String },
}

/// A certificate to put in: its PEM, and its DER to compare with.
struct Wanted {
    pem: String,
    der: Vec<u8>,
}

fn wanted(pem: &str) -> Result<Wanted, BmcError> {
    let der = CertificateDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| BmcError::Other(format!("the certificate to enrol is not PEM: {e}")))?;
    Ok(Wanted { pem: pem.trim().to_string(), der: der.to_vec() })
}

impl Redfish {
    /// Puts `cert` into the firmware unless it is there already; whether it was sent (it takes
    /// effect at the next reset).
    pub async fn enrol(&self, cert: FirmwareCert, pem: &str) -> Result<bool, BmcError> {
        let w = wanted(pem)?;
        match self.place(cert).await? {
            Place::Collection(path) => {
                if self.collection_has(&path, &w).await? {
                    return Ok(false);
                }
                let body = json!({"CertificateString": w.pem, "CertificateType": "PEM"});
                self.call(Method::POST, &path, Some(&body)).await.map_err(|e| refused(cert, e))?;
                Ok(true)
            }
            Place::HpeTls { current, settings } => {
                if has(&self.get(&current).await?["Certificates"], &w)
                    || has(&self.get(&settings).await.unwrap_or_default()["NewCertificates"], &w)
                {
                    return Ok(false);
                }
                let body = json!({"NewCertificates": [{"X509Certificate": w.pem}]});
                self.call(Method::PATCH, &settings, Some(&body)).await.map_err(|e| refused(cert, e))?;
                Ok(true)
            }
        }
    }

    /// Whether the firmware has `cert` now (HPE: current, not only pending).
    pub async fn enrolled(&self, cert: FirmwareCert, pem: &str) -> Result<bool, BmcError> {
        let w = wanted(pem)?;
        match self.place(cert).await? {
            Place::Collection(path) => self.collection_has(&path, &w).await,
            Place::HpeTls { current, .. } => Ok(has(&self.get(&current).await?["Certificates"], &w)),
        }
    }

    async fn place(&self, cert: FirmwareCert) -> Result<Place, BmcError> {
        let sys = self.get(&self.system).await?;
        let none = |what: &str| BmcError::Other(format!("this BMC offers no place for {}: {what}", cert.describe()));
        match cert {
            FirmwareCert::HttpsBoot => {
                if let Some(path) = link(&sys["Boot"]["Certificates"]) {
                    return Ok(Place::Collection(path));
                }
                let bios = match link(&sys["Bios"]) {
                    Some(path) => self.get(&path).await?,
                    None => Value::Null,
                };
                let Some(current) = link(&bios["Oem"]["Hpe"]["Links"]["TlsConfig"]) else {
                    return Err(none("neither Boot.Certificates nor HPE's Bios TlsConfig"));
                };
                let tls = self.get(&current).await?;
                let settings = link(&tls["@Redfish.Settings"]["SettingsObject"])
                    .unwrap_or_else(|| format!("{}/settings/", current.trim_end_matches('/')));
                Ok(Place::HpeTls { current, settings })
            }
            FirmwareCert::SecureBootDb => {
                let secure = link(&sys["SecureBoot"]).ok_or_else(|| none("no SecureBoot resource"))?;
                let dbs = link(&self.get(&secure).await?["SecureBootDatabases"])
                    .ok_or_else(|| none("no SecureBootDatabases"))?;
                let members = self.get(&dbs).await?["Members"].as_array().cloned().unwrap_or_default();
                let db = members
                    .iter()
                    .filter_map(link)
                    .find(|p| {
                        p.trim_end_matches('/').rsplit('/').next().is_some_and(|id| id.eq_ignore_ascii_case("db"))
                    })
                    .ok_or_else(|| none("no db among the SecureBootDatabases"))?;
                let path =
                    link(&self.get(&db).await?["Certificates"]).ok_or_else(|| none("the db has no Certificates"))?;
                Ok(Place::Collection(path))
            }
        }
    }

    async fn collection_has(&self, path: &str, w: &Wanted) -> Result<bool, BmcError> {
        let members = self.get(path).await?["Members"].as_array().cloned().unwrap_or_default();
        for member in members.iter().take(MAX_MEMBERS) {
            let entry = match link(member) {
                Some(p) => self.get(&p).await?,
                None => member.clone(),
            };
            if matches(&entry, w) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn refused(cert: FirmwareCert, e: BmcError) -> BmcError {
    match e {
        BmcError::Status { status, detail } if (400..500).contains(&status) => {
            BmcError::Status { status, detail: format!("refused {}: {detail}", cert.describe()) }
        }
        e => e,
    }
}

/// Whether a list of certificate entries (HPE's `Certificates`, `NewCertificates`) has `w`.
fn has(list: &Value, w: &Wanted) -> bool {
    list.as_array().is_some_and(|l| l.iter().take(MAX_MEMBERS).any(|e| matches(e, w)))
}

/// Whether a certificate entry is `w`: the same PEM body, fingerprint or serial number.
fn matches(entry: &Value, w: &Wanted) -> bool {
    let text = |k: &str| entry[k].as_str().unwrap_or_default();
    let body = |s: &str| -> String {
        s.lines().filter(|l| !l.starts_with("-----")).flat_map(|l| l.chars()).filter(|c| !c.is_whitespace()).collect()
    };
    let pem = [text("CertificateString"), text("X509Certificate")];
    if pem.iter().any(|p| !p.is_empty() && body(p) == body(&w.pem)) {
        return true;
    }
    let print = [text("Fingerprint"), text("FingerPrint")].into_iter().map(hex).find(|h| !h.is_empty());
    if let Some(print) = print {
        let sha1 = text("FingerprintHashAlgorithm").to_ascii_uppercase().contains("SHA1");
        let ours = if sha1 { hex_of(&Sha1::digest(&w.der)) } else { hex_of(&Sha256::digest(&w.der)) };
        return print == ours;
    }
    let serial = hex(text("SerialNumber"));
    !serial.is_empty() && serial_of(&w.der).is_some_and(|s| s.trim_start_matches('0') == serial.trim_start_matches('0'))
}

/// Upper-case hex digits only (`"ab:CD 01"` -> `"ABCD01"`).
fn hex(s: &str) -> String {
    s.chars().filter(char::is_ascii_hexdigit).map(|c| c.to_ascii_uppercase()).collect()
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02X}")).collect()
}

/// A DER certificate's serial number, in upper-case hex.
fn serial_of(der: &[u8]) -> Option<String> {
    let (cert, _) = tlv(der, 0x30)?;
    let (tbs, _) = tlv(cert, 0x30)?;
    let after_version = match tbs.first() {
        Some(0xa0) => tlv(tbs, 0xa0)?.1,
        _ => tbs,
    };
    let (serial, _) = tlv(after_version, 0x02)?;
    Some(hex_of(serial))
}

/// One DER element of tag `tag` at the start of `b`: its content and what follows it.
fn tlv(b: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    if *b.first()? != tag {
        return None;
    }
    let (len, header) = match *b.get(1)? {
        n if n < 0x80 => (usize::from(n), 2usize),
        0x81 => (usize::from(*b.get(2)?), 3),
        0x82 => (usize::from(*b.get(2)?) << 8 | usize::from(*b.get(3)?), 4),
        _ => return None,
    };
    let end = header.checked_add(len)?;
    Some((b.get(header..end)?, b.get(end..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert() -> (String, Vec<u8>) {
        let mut params = rcgen::CertificateParams::new(vec!["boot".to_string()]).unwrap();
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&[0x00, 0x8a, 0x01, 0x02]));
        let key = rcgen::KeyPair::generate().unwrap();
        let c = params.self_signed(&key).unwrap();
        (c.pem(), c.der().to_vec())
    }

    #[test]
    fn an_entry_is_the_certificate_by_pem_fingerprint_or_serial() {
        let (pem, der) = cert();
        let w = wanted(&pem).unwrap();
        assert_eq!(w.der, der);
        let sha256 = hex_of(&Sha256::digest(&der));
        let colons: String = sha256
            .as_bytes()
            .chunks(2)
            .map(|c| String::from_utf8_lossy(c).to_lowercase())
            .collect::<Vec<_>>()
            .join(":");
        for entry in [
            json!({"CertificateString": pem.replace('\n', "\r\n")}),
            json!({"X509Certificate": pem}),
            json!({"Fingerprint": sha256, "FingerprintHashAlgorithm": "TPM_ALG_SHA256"}),
            json!({"FingerPrint": colons}),
            json!({"Fingerprint": hex_of(&Sha1::digest(&der)), "FingerprintHashAlgorithm": "TPM_ALG_SHA1"}),
            json!({"SerialNumber": "8a:01:02"}),
        ] {
            assert!(matches(&entry, &w), "{entry}");
        }
        let (other, _) = cert();
        for entry in [
            json!({"CertificateString": other}),
            json!({"Fingerprint": "00".repeat(32), "SerialNumber": "8A0102"}),
            json!({"SerialNumber": "8A0103"}),
            json!({"Subject": {"CommonName": "boot"}}),
        ] {
            assert!(!matches(&entry, &w), "{entry}");
        }
        assert!(wanted("not a certificate").is_err());
    }

    #[test]
    fn der_reading_stops_at_truncation() {
        let (_, der) = cert();
        assert_eq!(serial_of(&der).unwrap().trim_start_matches('0'), "8A0102");
        for cut in [0, 1, 3, 10, 20] {
            assert_eq!(serial_of(&der[..cut]), None, "cut at {cut}");
        }
    }
}
