//! Power by remote control: machines' BMCs (Redfish or IPMI) and the power service that drives
//! them.
//!
//! - [`model`]: the stored record (password sealed), its API view and input, power actions.
//! - [`redfish`]: the Redfish driver (HTTPS, DMTF schema, sessions or basic auth).
//! - [`ipmi`]: the IPMI driver (`ipmitool` lanplus as a subprocess).
//! - [`actions`]: what each action does on a connected BMC (retries, read-back, fallbacks).
//! - [`driver`]: one connected BMC, whichever protocol, in the terms the power service uses.
//! - [`bios`]: BIOS settings written, the machine restarted, read back (Redfish).
//! - [`inband`]: the appliance's own account, set up in band by the machine's agent.
//! - [`vmedia`]: a virtual CD inserted, booted from once, ejected (Redfish).
//! - [`power`]: the power service: one command per BMC, a global cap, retries, read-back
//!   verification, fallbacks, events; and the periodic power-state refresh.

pub mod actions;
pub mod bios;
pub mod driver;
pub mod inband;
pub mod ipmi;
pub use rackboot_model::bmc as model;
pub mod power;
pub mod redfish;
pub mod vmedia;

pub use model::{Bmc, BmcInput, BmcView, BootMode, PowerAction, PowerReading, PowerState, Protocol, TlsPolicy};
pub use power::{Power, PowerOutcome};

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
