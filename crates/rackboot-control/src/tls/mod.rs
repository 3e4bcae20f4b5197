//! TLS for the appliance: its CA and server certificate (see [`ca`]) or the operator's own,
//! the rustls server config of the HTTPS listener (TLS 1.2 and 1.3, rustls's default cipher
//! suites, ring), and the client config the CLI uses to trust only that CA.

pub mod boot;
pub mod ca;
pub mod efi;
pub mod pinned;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

use crate::config::Config;

/// What the HTTPS listener serves and what nodes are told to trust.
#[derive(Clone)]
pub struct ServerTls {
    pub config: Arc<rustls::ServerConfig>,
    /// The CA certificate nodes trust (PEM): the appliance CA, or the last certificate of the
    /// operator's chain.
    pub ca_pem: String,
    /// `sha256:<hex>` of the CA certificate (DER): the pin on BootOS's kernel command line.
    pub ca_pin: String,
}

pub use rackboot_base::net::url_host;
pub use rackboot_base::tls::{client_config, provider};

/// The `[https]` certificate: the operator's files, or the appliance CA's (made or renewed
/// here) for `names`.
pub fn load(cfg: &Config, names: &[String]) -> anyhow::Result<ServerTls> {
    let (chain_path, key_path) = match &cfg.https.own_cert {
        Some((c, k)) => (c.clone(), k.clone()),
        None => {
            let issued = ca::ensure(&dir(&cfg.data_dir), names)?;
            (issued.chain, issued.key)
        }
    };
    let chain = read_certs(&chain_path)?;
    let key = PrivateKeyDer::from_pem_file(&key_path).with_context(|| format!("reading key {}", key_path.display()))?;
    let ca = chain.last().context("the certificate chain is empty")?;
    let ca_pem = pem("CERTIFICATE", ca);
    let ca_pin = format!("sha256:{}", fingerprint(ca));
    let config = server_config(chain, key)?;
    Ok(ServerTls { config: Arc::new(config), ca_pem, ca_pin })
}

/// The boot listener's TLS (see [`boot`]): its server config and the boot CA's certificate,
/// which firmware is given to trust.
pub struct BootTls {
    pub config: Arc<rustls::ServerConfig>,
    pub ca: CertificateDer<'static>,
}

/// The boot CA's RSA chain for `names` (the CA made, the certificate issued or renewed here)
/// and the boot listener's server config on it.
pub fn load_boot(cfg: &Config, names: &[String]) -> anyhow::Result<BootTls> {
    let issued = ca::ensure_kind(&dir(&cfg.data_dir), names, &ca::BOOT)?;
    let chain = read_certs(&issued.chain)?;
    let key =
        PrivateKeyDer::from_pem_file(&issued.key).with_context(|| format!("reading key {}", issued.key.display()))?;
    let ca = chain.last().context("the boot certificate chain is empty")?.clone();
    Ok(BootTls { config: Arc::new(server_config_with(boot::provider(), chain, key)?), ca })
}

/// The directory of the appliance CA and its issued certificate.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("tls")
}

/// The server config: TLS 1.3 and 1.2 only, HTTP/1.1.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> anyhow::Result<rustls::ServerConfig> {
    server_config_with(provider(), chain, key)
}

/// [`server_config`] on `provider`'s suites and key exchanges.
pub fn server_config_with(
    provider: Arc<rustls::crypto::CryptoProvider>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> anyhow::Result<rustls::ServerConfig> {
    let mut c = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("the certificate does not match its key")?;
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(c)
}

/// Every certificate in a PEM file.
pub fn read_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("reading {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading certificates from {}", path.display()))?;
    anyhow::ensure!(!certs.is_empty(), "no certificate in {}", path.display());
    Ok(certs)
}

/// Lower-case hex SHA-256 of a certificate's DER.
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der).iter().map(|b| format!("{b:02x}")).collect()
}

fn pem(label: &str, der: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::new();
    for chunk in der.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                b64.push(B64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The names the appliance's certificate covers: its addresses, loopback, the public URL's
/// host and the host name.
pub fn names(cfg: &Config, server_ip: Option<std::net::Ipv4Addr>) -> Vec<String> {
    let mut n: Vec<String> = Vec::new();
    let mut add = |s: String| {
        if !s.is_empty() && !n.contains(&s) {
            n.push(s);
        }
    };
    if let Some(ip) = server_ip.or(cfg.address) {
        add(ip.to_string());
    }
    if !cfg.https.listen.ip().is_unspecified() {
        add(cfg.https.listen.ip().to_string());
    }
    // Nodes that fell back to the last-resort network reach the appliance there.
    if let Some(net) = cfg.fallback {
        add(crate::config::fallback_address(net).to_string());
    }
    if let Some(host) = url_host(&cfg.public_url) {
        add(host);
    }
    add("127.0.0.1".into());
    add("::1".into());
    add("localhost".into());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim();
    if !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.') {
        add(host.to_string());
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_round_trips_through_rustls() {
        let der: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let text = pem("CERTIFICATE", &der);
        let back = CertificateDer::pem_slice_iter(text.as_bytes()).next().unwrap().unwrap();
        assert_eq!(back.as_ref(), der.as_slice());
    }

    #[test]
    fn url_hosts() {
        assert_eq!(url_host("https://boot.example:8443/x").as_deref(), Some("boot.example"));
        assert_eq!(url_host("http://198.18.0.1").as_deref(), Some("198.18.0.1"));
        assert_eq!(url_host("http://[fd00::1]:80/").as_deref(), Some("fd00::1"));
        assert_eq!(url_host(""), None);
    }
}
