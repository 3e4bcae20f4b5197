//! rackboot's records and their pure rules, with no I/O: what the store keeps and every layer
//! above reads.
//!
//! - [`mac`]: the MAC address type used everywhere.
//! - [`jobs`]: the agent job record and its state machine.
//! - [`bmc`]: a machine's BMC record, its power states and actions, and the input that sets it.
//! - [`role`]: the roles of users and tokens.

pub mod bmc;
pub mod jobs;
pub mod mac;
pub mod role;
