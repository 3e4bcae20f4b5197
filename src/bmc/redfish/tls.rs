//! The rustls client config for a Redfish BMC's TLS policy: a pinned certificate (SHA-256 of
//! its DER, signatures still checked), the appliance CA, or anything (`insecure`).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::bmc::model::TlsPolicy;

/// The client config for `policy`; `ca_pem` is the appliance CA (for [`TlsPolicy::Ca`]).
pub fn client_config(policy: &TlsPolicy, ca_pem: &str) -> anyhow::Result<rustls::ClientConfig> {
    let pin = match policy {
        TlsPolicy::Ca => return crate::tls::client_config(ca_pem.as_bytes()),
        TlsPolicy::Fingerprint { sha256 } => Some(sha256.clone()),
        TlsPolicy::Insecure => None,
    };
    let provider = crate::tls::provider();
    let verifier = Arc::new(Pinned { pin, provider: provider.clone() });
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// Accepts the one certificate whose SHA-256 is `pin` (any certificate without a pin); the
/// handshake signatures are verified either way, so the peer holds the certificate's key.
#[derive(Debug)]
struct Pinned {
    pin: Option<String>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &self.pin {
            None => Ok(ServerCertVerified::assertion()),
            Some(pin) => {
                let got = crate::tls::fingerprint(end_entity);
                if &got == pin {
                    Ok(ServerCertVerified::assertion())
                } else {
                    Err(rustls::Error::General(format!(
                        "the BMC's certificate sha256:{got} does not match the pinned sha256:{pin}"
                    )))
                }
            }
        }
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
