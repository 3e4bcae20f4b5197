//! The one TLS crypto provider (ring) and the client config that trusts only a given CA: for
//! the CLI talking to its appliance and for a PostgreSQL store over the network.

use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

/// The crypto provider everywhere in rackboot (ring).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client config that trusts only the CA certificates in `ca_pem` (TLS 1.3 and 1.2).
pub fn client_config(ca_pem: &[u8]) -> anyhow::Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.context("reading the CA certificate")?).context("adding the CA certificate")?;
    }
    anyhow::ensure!(!roots.is_empty(), "no CA certificate in the CA file");
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
