//! A client config that trusts one certificate by its SHA-256 (of its DER), or any certificate
//! when there is no pin: for peers that bring their own certificate (a BMC, a webhook receiver).
//! The handshake signatures are verified either way, so the peer holds the certificate's key.

use std::sync::Arc;

use rackboot_agent::tls::CertCheck;
use rustls::client::danger::ServerCertVerified;

/// The config; `who` names the peer in a mismatch ("the BMC", "the receiver").
pub fn client_config(pin: Option<String>, who: &'static str) -> anyhow::Result<rustls::ClientConfig> {
    let provider = super::provider();
    let check = CertCheck::new(
        provider.clone(),
        Box::new(move |end_entity, _, _, _, _| match &pin {
            None => Ok(ServerCertVerified::assertion()),
            Some(pin) => {
                let got = super::fingerprint(end_entity);
                if &got == pin {
                    Ok(ServerCertVerified::assertion())
                } else {
                    Err(rustls::Error::General(format!(
                        "{who}'s certificate sha256:{got} does not match the pinned sha256:{pin}"
                    )))
                }
            }
        }),
    );
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(check))
        .with_no_client_auth())
}
