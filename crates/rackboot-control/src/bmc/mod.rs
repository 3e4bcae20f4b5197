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

pub mod bios;
pub mod inband;
pub use rackboot_model::bmc as model;
pub mod power;
pub mod vmedia;

pub use rackboot_bmc::{actions, driver, ipmi, redfish, BmcError};

pub use model::{Bmc, BmcInput, BmcView, BootMode, PowerAction, PowerReading, PowerState, Protocol, TlsPolicy};
pub use power::{Power, PowerOutcome};
