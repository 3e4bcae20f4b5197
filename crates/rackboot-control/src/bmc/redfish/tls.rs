//! The rustls client config for a Redfish BMC's TLS policy: a pinned certificate (SHA-256 of
//! its DER, signatures still checked), the appliance CA, or anything (`insecure`).

use crate::bmc::model::TlsPolicy;

/// The client config for `policy`; `ca_pem` is the appliance CA (for [`TlsPolicy::Ca`]).
pub fn client_config(policy: &TlsPolicy, ca_pem: &str) -> anyhow::Result<rustls::ClientConfig> {
    match policy {
        TlsPolicy::Ca => crate::tls::client_config(ca_pem.as_bytes()),
        TlsPolicy::Fingerprint { sha256 } => crate::tls::pinned::client_config(Some(sha256.clone()), "the BMC"),
        TlsPolicy::Insecure => crate::tls::pinned::client_config(None, "the BMC"),
    }
}
