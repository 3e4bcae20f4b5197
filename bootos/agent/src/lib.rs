//! rackboot-agent: the small program on every node (in BootOS, and as a service on installed
//! systems) that calls the appliance in, since the appliance cannot reach nodes. It enrolls,
//! uploads its inventory, long-polls for jobs, streams their output back, reports results and
//! periodic stats.
//!
//! - [`wire`]: the `/agent/v1` request and response types, shared with the appliance.
//! - [`inventory`]: hardware facts from sysfs/procfs (and ipmitool for the BMC).
//! - [`lldp`]: a small LLDP listener and TLV parser (neighbour switch and port).
//! - [`stats`]: load, memory, uptime and disk use.
//! - [`client`]: the HTTPS client with the per-machine credential.
//! - [`tls`]: whom the agent trusts: the appliance's CA, as a file or as a pinned hash.
//! - [`bundle`]: plugin bundles unpacked under caps (shared with the appliance).
//! - [`plugin`]: running a signed vendor plugin: fetch by hash, check, unpack, check/apply.
//! - [`process`]: one job's child process: output streamed, timeout and cancel kill its group.
//! - [`bootdisk`]: boot the installed disk once (UEFI `BootNext`), for a machine whose network comes first.
//! - [`bootnext`]: boot from the network once (UEFI `BootNext`), for a machine whose disk comes first.
//! - [`bmcuser`]: the appliance's own BMC account, set up in band (ipmitool on `/dev/ipmi0`).
//! - [`erase`]: a release's disk erase (quick, zero, or the device's own secure erase).
//! - [`jobs`]: running a job (script or built-in action) with streamed output and a timeout.
//! - [`net`]: network bring-up the G8OS way (kernel command line, else DHCP per interface).
//! - [`fallback`]: the last-resort network: an ARP-probed address, the appliance at `.254`.
//! - [`run`]: the agent's main loop.

pub mod bmcuser;
pub mod bootdisk;
pub mod bootnext;
pub mod bundle;
pub mod client;
pub mod deploy;
pub mod erase;
pub mod fallback;
pub mod image;
pub mod inventory;
pub mod jobs;
pub mod lldp;
pub mod net;
pub mod plugin;
pub mod process;
pub mod run;
pub mod sparse;
pub mod stats;
pub mod tls;
pub mod wire;
