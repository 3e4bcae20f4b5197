//! The appliance's own CAs: made once in `data_dir/tls/`, each issues a server certificate for
//! the appliance's names and issues it again when those change or it nears expiry. The
//! appliance CA (ECDSA P-256) is what nodes, the CLI and browsers trust; the boot CA (RSA 2048,
//! `boot-*` files) is what firmware's HTTPS boot trusts: EDK2's TLS has no elliptic curves.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tracing::info;

/// The CA certificate nodes and the CLI trust (PEM).
pub const CA_PEM: &str = "ca.pem";
/// The boot CA's certificate (PEM): what firmware's HTTPS boot is given to trust.
pub const BOOT_CA_PEM: &str = "boot-ca.pem";
const CA_KEY: &str = "ca.key";
/// The server chain (leaf, then the CA) and its key.
const SERVER_PEM: &str = "server.pem";
const SERVER_KEY: &str = "server.key";
/// What the server certificate covers and until when: compared at start to decide re-issue.
const SERVER_NAMES: &str = "server.names";

/// Which of the appliance's CAs: its files' prefix, its name, its key type.
pub struct Kind {
    prefix: &'static str,
    name: &'static str,
    rsa: bool,
}

/// The appliance CA (ECDSA P-256): nodes, the CLI and browsers trust it.
pub const APPLIANCE: Kind = Kind { prefix: "", name: "rackboot appliance CA", rsa: false };
/// The boot CA (RSA 2048): firmware's HTTPS boot trusts it.
pub const BOOT: Kind = Kind { prefix: "boot-", name: "rackboot boot CA", rsa: true };

impl Kind {
    fn file(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// A new key of this CA's type.
    fn new_key(&self) -> anyhow::Result<KeyPair> {
        match self.rsa {
            true => rsa_key(),
            false => KeyPair::generate().context("generating an ECDSA key"),
        }
    }

    fn load_key(&self, pem: &str) -> Result<KeyPair, rcgen::Error> {
        match self.rsa {
            true => KeyPair::from_pem_and_sign_algo(pem, &rcgen::PKCS_RSA_SHA256),
            false => KeyPair::from_pem(pem),
        }
    }
}

const DAY: u64 = 86_400;
const CA_DAYS: u64 = 20 * 365;
const SERVER_DAYS: u64 = 365;
/// A server certificate with less left than this is issued again at start.
const RENEW_DAYS: u64 = 30;

/// Paths of the PEM chain and key the HTTPS listener serves.
pub struct Issued {
    pub chain: PathBuf,
    pub key: PathBuf,
}

/// A new RSA 2048 key, signing with SHA-256 (PKCS#1 v1.5): made by `rsa`, used by ring.
pub fn rsa_key() -> anyhow::Result<KeyPair> {
    use rsa::pkcs8::EncodePrivateKey;
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).context("generating an RSA key")?;
    let der = key.to_pkcs8_der().context("encoding the RSA key")?;
    let der = rustls::pki_types::PrivatePkcs8KeyDer::from(der.as_bytes().to_vec());
    KeyPair::from_pkcs8_der_and_sign_algo(&der, &rcgen::PKCS_RSA_SHA256).context("loading the RSA key")
}

/// Makes the appliance CA on first start and (re-)issues the server certificate for `names`
/// (IP addresses and DNS names) when needed; returns the files to serve.
pub fn ensure(dir: &Path, names: &[String]) -> anyhow::Result<Issued> {
    ensure_kind(dir, names, &APPLIANCE)
}

/// [`ensure`] for CA `kind`.
pub fn ensure_kind(dir: &Path, names: &[String], kind: &Kind) -> anyhow::Result<Issued> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let ca_key_path = dir.join(kind.file(CA_KEY));
    let ca_key = if ca_key_path.exists() {
        let pem =
            std::fs::read_to_string(&ca_key_path).with_context(|| format!("reading {}", ca_key_path.display()))?;
        kind.load_key(&pem).with_context(|| format!("{} is not a usable key", ca_key_path.display()))?
    } else {
        make_ca(dir, kind)?
    };
    let issued = Issued { chain: dir.join(kind.file(SERVER_PEM)), key: dir.join(kind.file(SERVER_KEY)) };
    let record = std::fs::read_to_string(dir.join(kind.file(SERVER_NAMES))).unwrap_or_default();
    if !covers(&record, names, now_secs()) || !issued.chain.exists() || !issued.key.exists() {
        issue_server(dir, &ca_key, names, kind)?;
    }
    Ok(issued)
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// The CA's parameters: rebuilt identically whenever it signs (its subject and key identify it).
fn ca_params(kind: &Kind) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "rackboot");
    dn.push(DnType::CommonName, kind.name);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    p.use_authority_key_identifier_extension = false;
    p
}

fn make_ca(dir: &Path, kind: &Kind) -> anyhow::Result<KeyPair> {
    let key = kind.new_key().context("the CA key")?;
    let mut params = ca_params(kind);
    let now = SystemTime::now();
    params.not_before = (now - Duration::from_secs(DAY)).into();
    params.not_after = (now + Duration::from_secs(CA_DAYS * DAY)).into();
    let cert = params.self_signed(&key).context("signing the CA certificate")?;
    write_secret(&dir.join(kind.file(CA_KEY)), &key.serialize_pem())?;
    let pem_path = dir.join(kind.file(CA_PEM));
    std::fs::write(&pem_path, cert.pem()).with_context(|| format!("writing {}", pem_path.display()))?;
    info!(ca = %pem_path.display(), name = kind.name, "CA created");
    Ok(key)
}

fn issue_server(dir: &Path, ca_key: &KeyPair, names: &[String], kind: &Kind) -> anyhow::Result<()> {
    let key = kind.new_key().context("the server key")?;
    let mut params = CertificateParams::new(names.to_vec()).context("server certificate names")?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "rackboot");
    dn.push(DnType::CommonName, names.first().cloned().unwrap_or_else(|| "rackboot".into()));
    params.distinguished_name = dn;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let now = SystemTime::now();
    let not_after = now + Duration::from_secs(SERVER_DAYS * DAY);
    params.not_before = (now - Duration::from_secs(DAY)).into();
    params.not_after = not_after.into();
    let issuer = Issuer::new(ca_params(kind), ca_key);
    let cert = params.signed_by(&key, &issuer).context("signing the server certificate")?;
    let ca_pem = std::fs::read_to_string(dir.join(kind.file(CA_PEM))).context("reading the CA certificate")?;
    // Key first, under a temporary name, so a crash never pairs a new chain with an old key.
    let tmp_key = dir.join(format!("{}.new", kind.file(SERVER_KEY)));
    let _ = std::fs::remove_file(&tmp_key);
    write_secret(&tmp_key, &key.serialize_pem())?;
    std::fs::write(dir.join(kind.file(SERVER_PEM)), format!("{}{ca_pem}", cert.pem()))?;
    std::fs::rename(&tmp_key, dir.join(kind.file(SERVER_KEY)))?;
    let until = not_after.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    std::fs::write(dir.join(kind.file(SERVER_NAMES)), record(names, until))?;
    info!(names = ?names, ca = kind.name, "server certificate issued");
    Ok(())
}

/// The coverage record: one name a line, then `not_after=<unix seconds>`.
fn record(names: &[String], not_after: u64) -> String {
    let mut s: String = names.iter().map(|n| format!("{n}\n")).collect();
    s.push_str(&format!("not_after={not_after}\n"));
    s
}

/// Whether the recorded certificate covers exactly `names` and is not near its expiry.
fn covers(record_text: &str, names: &[String], now: u64) -> bool {
    let Some((body, until)) = record_text.trim_end().rsplit_once("not_after=") else { return false };
    let Ok(until) = until.parse::<u64>() else { return false };
    let recorded: Vec<&str> = body.lines().collect();
    recorded == names.iter().map(String::as_str).collect::<Vec<_>>() && until > now + RENEW_DAYS * DAY
}

/// Writes a new key file, mode 0600, refusing to follow or replace an existing file.
fn write_secret(path: &Path, pem: &str) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(pem.as_bytes())?;
    f.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn coverage_record_decides_reissue() {
        let n = names(&["198.18.0.1", "127.0.0.1", "boot.example"]);
        let r = record(&n, 100 * DAY);
        assert!(covers(&r, &n, 0));
        assert!(!covers(&r, &names(&["198.18.0.2", "127.0.0.1", "boot.example"]), 0), "a new address");
        assert!(!covers(&r, &n, 100 * DAY - RENEW_DAYS * DAY), "near expiry");
        assert!(!covers("", &n, 0) && !covers("garbage", &n, 0));
    }

    #[test]
    fn ca_is_made_once_and_the_server_cert_follows_the_names() {
        let dir = tempfile::tempdir().unwrap();
        let tls = dir.path().join("tls");
        ensure(&tls, &names(&["127.0.0.1"])).unwrap();
        let ca = std::fs::read(tls.join(CA_PEM)).unwrap();
        let first = std::fs::read(tls.join(SERVER_PEM)).unwrap();
        for f in [CA_KEY, SERVER_KEY] {
            let mode = std::fs::metadata(tls.join(f)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{f}");
        }
        ensure(&tls, &names(&["127.0.0.1"])).unwrap();
        assert_eq!(std::fs::read(tls.join(SERVER_PEM)).unwrap(), first, "same names: kept");
        ensure(&tls, &names(&["127.0.0.1", "198.18.0.1"])).unwrap();
        assert_ne!(std::fs::read(tls.join(SERVER_PEM)).unwrap(), first, "new name: re-issued");
        assert_eq!(std::fs::read(tls.join(CA_PEM)).unwrap(), ca, "the CA stays");
        let chain = String::from_utf8(std::fs::read(tls.join(SERVER_PEM)).unwrap()).unwrap();
        assert!(chain.ends_with(&String::from_utf8(ca).unwrap()), "leaf, then the CA");
    }

    /// A second appliance given the first one's CA (`ca.pem` and `ca.key` copied into its data
    /// dir before its first start) issues its own server certificate from that CA, which a
    /// client trusting the first appliance's CA accepts, and one trusting another CA refuses.
    #[test]
    fn a_copied_ca_issues_the_second_appliances_certificate() {
        let (a, b, c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (a, b, c) = (a.path().join("tls"), b.path().join("tls"), c.path().join("tls"));
        ensure(&a, &names(&["198.18.0.1"])).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        for f in [CA_PEM, CA_KEY] {
            std::fs::copy(a.join(f), b.join(f)).unwrap();
        }
        ensure(&b, &names(&["198.18.0.2"])).unwrap();
        ensure(&c, &names(&["198.18.0.3"])).unwrap();
        assert_eq!(std::fs::read(b.join(CA_PEM)).unwrap(), std::fs::read(a.join(CA_PEM)).unwrap(), "kept, not made");

        let verify = |ca: &Path, chain: &Path, name: &str| {
            let mut roots = rustls::RootCertStore::empty();
            for cert in super::super::read_certs(&ca.join(CA_PEM)).unwrap() {
                roots.add(cert).unwrap();
            }
            let verifier =
                rustls::client::WebPkiServerVerifier::builder_with_provider(roots.into(), super::super::provider())
                    .build()
                    .unwrap();
            let chain = super::super::read_certs(&chain.join(SERVER_PEM)).unwrap();
            let name = rustls::pki_types::ServerName::try_from(name.to_string()).unwrap();
            rustls::client::danger::ServerCertVerifier::verify_server_cert(
                verifier.as_ref(),
                &chain[0],
                &chain[1..],
                &name,
                &[],
                rustls::pki_types::UnixTime::now(),
            )
            .map(|_| ())
        };
        verify(&a, &b, "198.18.0.2").expect("B's certificate chains to A's CA");
        verify(&a, &a, "198.18.0.1").expect("and A's own still does");
        assert!(verify(&a, &c, "198.18.0.3").is_err(), "an appliance with a CA of its own is not trusted");
    }
}
