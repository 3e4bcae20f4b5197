//! rackboot's records and their pure rules, with no I/O: what the store keeps and every layer
//! above reads.
//!
//! - [`mac`]: the MAC address type used everywhere.
//! - [`jobs`]: the agent job record and its state machine.
//! - [`bmc`]: a machine's BMC record, its power states and actions, and the input that sets it.
//! - [`bios`]: BIOS settings a hardware profile declares, and how a reading differs from them.
//! - [`baseline`]: firmware baselines per component, and a machine's drift from one.
//! - [`role`]: the roles of users and tokens.
//! - [`events`]: the kinds of a machine's timeline events.
//! - [`boot`]: the UEFI loader a machine is handed.
//! - [`cloudinit`]: cloud-init user-data's bounds and precedence, NoCloud's meta-data.
//! - [`records`]: the CMDB's records: machines, leases, events, agents, sightings.
//! - [`lease6`]: DHCPv6 leases, and a DHCPv6 client's MAC from its DUID or link-local address.
//! - [`placement`]: where a machine stands in a rack, and what says so.
//! - [`provision`]: provisioning tasks and runs, the step sequence, hostname patterns, IP plans.
//! - [`network`]: the installed node's network: ports, bonds, VLANs, static addresses from
//!   named networks; checked, and resolved per machine.
//! - [`racks`]: racks (switch, port -> slot map, address plan, CSV), placement by option 82,
//!   LLDP or CSV, and the flags a person must look at.
//! - [`plugins`]: vendor plugins: manifest, parameter schema, minisign signatures, references.
//! - [`webhooks`]: webhook subscriptions: URL, filter, TLS check, delivery status.

pub mod baseline;
pub mod bios;
pub mod bmc;
pub mod boot;
pub mod cloudinit;
pub mod commission;
pub mod events;
pub mod firmware;
pub mod jobs;
pub mod lease6;
pub mod mac;
pub mod network;
pub mod placement;
pub mod plugins;
pub mod pools;
pub mod provision;
pub mod racks;
pub mod records;
pub mod role;
pub mod tang;
pub mod webhooks;
