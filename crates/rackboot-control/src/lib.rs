//! rackboot's control layer: what acts on machines and decides, over the store and below the
//! web layer. Nothing here answers a protocol or serves a page.
//!
//! - [`controller`]: the agent controller's live side (long-poll wake-ups, credentials, output
//!   followers, the lease sweeper).
//! - [`provision`]: provisioning runs' engine and its decisions (the records are the model's).
//! - [`bmc`]: the power service over machines' BMCs (the drivers are `rackboot-bmc`'s).
//! - [`firmware`]: firmware baselines: a machine's drift, the images by SHA-256, updates through
//!   the BMC's UpdateService.
//! - [`plugins`]: the plugin upload pipeline, the blob directory and reference resolving.
//! - [`auth`]: roles, API tokens, passwords, the role table and the login rate limiter.
//! - [`racks`]: the rack sweep and a rack's machines into a provisioning task.
//! - [`integrations`]: webhooks, the package proxy (squid) and Windows media (import, the SMB
//!   share, TFTP names, answer files); re-exported at the top under their own names.
//! - [`child`]: the helper daemons rackboot runs (smbd, squid, iperf3): started, restarted, stopped.
//! - [`tls`]: the appliance CA, its server certificate and the rustls server config; the boot
//!   CA and the boot listener's firmware-compatible TLS.
//! - [`secureboot`]: the key BootOS's image is signed with.
//! - [`vmedia`]: BootOS from a virtual CD where no DHCP answers: the ISO, its serving, its ejection.
//!
//! The lower crates are re-exported under the names the code above uses (`cmdb`, `config`,
//! `tang`, ...).

pub use rackboot_base::{net, secrets};
pub use rackboot_boot::{netcfg, planner, render, templates};
pub use rackboot_config as config;
pub use rackboot_model::{commission, jobs, mac};
pub use rackboot_store as cmdb;
pub use rackboot_tang as tang;
pub use rackboot_tftp as tftp;

pub mod auth;
pub mod bmc;
pub mod child;
pub mod controller;
pub mod firmware;
pub mod integrations;
pub mod plugins;
pub mod provision;
pub mod racks;
pub mod secureboot;
pub mod tls;
pub mod vmedia;

pub use integrations::{proxy, webhooks, windows};
