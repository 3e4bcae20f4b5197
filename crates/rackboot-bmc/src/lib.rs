//! BMC drivers: the mechanics of talking to a machine's baseboard management controller, with
//! no store and no engine. The appliance's power service (`rackboot-control`'s `bmc::Power`)
//! opens a [`driver::Driver`] for a stored BMC record and asks it to act.
//!
//! - [`redfish`]: the Redfish driver (HTTPS, DMTF schema, sessions or basic auth): power,
//!   one-time boot, BIOS attributes, firmware certificates, firmware inventory, virtual media.
//! - [`ipmi`]: the IPMI driver (`ipmitool` lanplus as a subprocess).
//! - [`driver`]: one connected BMC, whichever protocol, in the terms the power service uses.
//! - [`actions`]: what each power action does on a connected BMC (retries, read-back,
//!   fallbacks).
//!
//! TLS towards a Redfish BMC is the caller's: it hands a client config built for the record's
//! policy (a pinned certificate, the appliance CA, or none), so this crate holds no CA.

pub mod actions;
pub mod driver;
pub mod ipmi;
pub mod redfish;

pub use rackboot_model::bmc as model;

use std::time::Duration;

/// Why a BMC command failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BmcError {
    /// The BMC refused the credentials: never retried.
    #[error("the BMC refused the credentials: {0}")]
    Auth(String),
    #[error("the BMC did not answer within {0:?}")]
    Timeout(Duration),
    #[error("cannot reach the BMC: {0}")]
    Connect(String),
    /// The certificate does not pass the TLS policy (pin, CA): never retried.
    #[error("TLS: {0}")]
    Tls(String),
    /// A non-2xx answer (status 0: ipmitool's completion code).
    #[error("the BMC answered {status}: {detail}")]
    Status { status: u16, detail: String },
    /// The answer made no sense (not JSON, a redirect loop, no system).
    #[error("BMC protocol: {0}")]
    Protocol(String),
    /// The state read back is not the one asked for.
    #[error("not verified: {0}")]
    Verify(String),
    #[error("{0}")]
    Other(String),
}

impl BmcError {
    /// Whether trying again may help: no answer, or a server error.
    pub fn transient(&self) -> bool {
        match self {
            BmcError::Timeout(_) | BmcError::Connect(_) => true,
            BmcError::Status { status, .. } => *status >= 500 && *status != 501,
            _ => false,
        }
    }

    /// A short name of the kind, for events and API errors.
    pub fn kind(&self) -> &'static str {
        match self {
            BmcError::Auth(_) => "auth",
            BmcError::Timeout(_) => "timeout",
            BmcError::Connect(_) => "connect",
            BmcError::Tls(_) => "tls",
            BmcError::Status { .. } => "status",
            BmcError::Protocol(_) => "protocol",
            BmcError::Verify(_) => "verify",
            BmcError::Other(_) => "other",
        }
    }
}
