//! The rustls client config for a Redfish BMC's TLS policy: a pinned certificate (SHA-256 of
//! its DER, signatures still checked), the appliance CA, or anything (`insecure`).

use std::sync::Arc;

use rackboot_agent::tls::CertCheck;
use rustls::client::danger::ServerCertVerified;

use crate::bmc::model::TlsPolicy;

/// The client config for `policy`; `ca_pem` is the appliance CA (for [`TlsPolicy::Ca`]).
pub fn client_config(policy: &TlsPolicy, ca_pem: &str) -> anyhow::Result<rustls::ClientConfig> {
    let pin = match policy {
        TlsPolicy::Ca => return crate::tls::client_config(ca_pem.as_bytes()),
        TlsPolicy::Fingerprint { sha256 } => Some(sha256.clone()),
        TlsPolicy::Insecure => None,
    };
    let provider = crate::tls::provider();
    let verifier = Arc::new(pinned(pin, provider.clone()));
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// Accepts the one certificate whose SHA-256 is `pin` (any certificate without a pin); the
/// handshake signatures are verified either way, so the peer holds the certificate's key.
fn pinned(pin: Option<String>, provider: Arc<rustls::crypto::CryptoProvider>) -> CertCheck {
    CertCheck::new(
        provider,
        Box::new(move |end_entity, _, _, _, _| match &pin {
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
        }),
    )
}
