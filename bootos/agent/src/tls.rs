//! TLS to the appliance: the agent trusts only the appliance's CA, given as a PEM file
//! (installed nodes, `--ca`) or as the SHA-256 pin of the CA certificate (BootOS, from
//! `rackboot.ca=sha256:<hex>` on the kernel command line). With a pin, the server must send the
//! CA certificate in its chain; the agent accepts it only if its hash matches, and then
//! verifies the leaf against it like any trust anchor. No public roots are ever trusted.

use std::sync::Arc;

use anyhow::Context;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};
use tokio_rustls::TlsConnector;

/// What the agent trusts.
#[derive(Debug, Clone, PartialEq)]
pub enum Trust {
    /// CA certificates (PEM).
    CaPem(Vec<u8>),
    /// SHA-256 of the CA certificate's DER.
    Pin([u8; 32]),
}

impl Trust {
    /// Parses `sha256:<64 hex digits>`.
    pub fn pin(text: &str) -> anyhow::Result<Trust> {
        let hex = text.strip_prefix("sha256:").context("the CA pin must be sha256:<hex>")?;
        anyhow::ensure!(hex.len() == 64, "the CA pin must have 64 hex digits");
        let mut pin = [0u8; 32];
        for (i, b) in pin.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).context("the CA pin is not hex")?;
        }
        Ok(Trust::Pin(pin))
    }

    /// A connector that accepts only servers this trust allows.
    pub fn connector(&self) -> anyhow::Result<TlsConnector> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?;
        let config = match self {
            Trust::CaPem(pem) => {
                let mut roots = RootCertStore::empty();
                for cert in CertificateDer::pem_slice_iter(pem) {
                    roots.add(cert.context("reading the CA file")?).context("adding the CA certificate")?;
                }
                anyhow::ensure!(!roots.is_empty(), "no certificate in the CA file");
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Trust::Pin(pin) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(pin_verifier(*pin, provider)))
                .with_no_client_auth(),
        };
        Ok(TlsConnector::from(Arc::new(config)))
    }
}

/// A server certificate check: the end entity, the intermediates, the server name, OCSP, now.
pub type CertCheckFn = dyn Fn(
        &CertificateDer<'_>,
        &[CertificateDer<'_>],
        &ServerName<'_>,
        &[u8],
        UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error>
    + Send
    + Sync;

/// A verifier that decides on the server's certificate with its own check and verifies the
/// handshake signatures with the provider's algorithms, so the peer holds the certificate's
/// key whatever the check accepts. The agent's pin and the appliance's BMC pins use it.
pub struct CertCheck {
    check: Box<CertCheckFn>,
    provider: Arc<CryptoProvider>,
}

impl CertCheck {
    pub fn new(provider: Arc<CryptoProvider>, check: Box<CertCheckFn>) -> CertCheck {
        CertCheck { check, provider }
    }
}

impl std::fmt::Debug for CertCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertCheck")
    }
}

impl ServerCertVerifier for CertCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        (self.check)(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// Accepts a chain that carries the CA whose SHA-256 is `pin` and a leaf that verifies
/// against it.
fn pin_verifier(pin: [u8; 32], provider: Arc<CryptoProvider>) -> CertCheck {
    let inner = provider.clone();
    CertCheck::new(
        provider,
        Box::new(move |end_entity, intermediates, server_name, ocsp_response, now| {
            let ca = intermediates
                .iter()
                .find(|c| Sha256::digest(c.as_ref()).as_slice() == pin)
                .ok_or(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer))?;
            let mut roots = RootCertStore::empty();
            roots.add(ca.clone().into_owned())?;
            let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), inner.clone())
                .build()
                .map_err(|e| rustls::Error::General(e.to_string()))?;
            verifier.verify_server_cert(end_entity, &[], server_name, ocsp_response, now)
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_strictly() {
        let hex = "ab".repeat(32);
        assert_eq!(Trust::pin(&format!("sha256:{hex}")).unwrap(), Trust::Pin([0xab; 32]));
        for bad in ["", "ab", &hex, &format!("sha1:{hex}"), &format!("sha256:{}", "zz".repeat(32)), "sha256:abcd"] {
            assert!(Trust::pin(bad).is_err(), "{bad}");
        }
    }
}
