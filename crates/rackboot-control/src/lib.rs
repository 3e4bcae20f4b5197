//! rackboot's control layer: what acts on machines and decides, over the store and below the
//! web layer. Nothing here answers a protocol or serves a page.
//!
//! - [`controller`]: the agent controller's live side (long-poll wake-ups, credentials, output
//!   followers, the lease sweeper).
//! - [`provision`]: provisioning runs' engine and its decisions (the records are the model's).
//! - [`bmc`]: machines' BMCs (Redfish, IPMI) and the power service.
//! - [`plugins`]: the plugin upload pipeline, the blob directory and reference resolving.
//! - [`auth`]: roles, API tokens, passwords, the role table and the login rate limiter.
//! - [`racks`]: the rack sweep and a rack's machines into a provisioning task.
//! - [`windows`]: Windows media import, the SMB share, TFTP names and answer files.
//! - [`proxy`]: the package proxy (squid) installing nodes reach their mirrors through.
//! - [`child`]: the helper daemons rackboot runs (smbd, squid, iperf3): started, restarted, stopped.
//! - [`tls`]: the appliance CA, its server certificate and the rustls server config.
//! - [`webhooks`]: webhook subscriptions and their signed, ordered, resumable delivery.
//! - [`tang`]: the Tang server encrypted volumes are bound to, key rotation and re-binding.
//! - [`vmedia`]: BootOS from a virtual CD where no DHCP answers: the ISO, its serving, its ejection.
//!
//! The lower crates are re-exported under the names the code above uses (`cmdb`, `config`, ...).

pub use rackboot_base::{net, secrets};
pub use rackboot_boot::{netcfg, planner, render, templates};
pub use rackboot_config as config;
pub use rackboot_model::{commission, jobs, mac};
pub use rackboot_store as cmdb;
pub use rackboot_tftp as tftp;

pub mod auth;
pub mod bmc;
pub mod child;
pub mod controller;
pub mod plugins;
pub mod provision;
pub mod proxy;
pub mod racks;
pub mod secureboot;
pub mod tang;
pub mod tls;
pub mod vmedia;
pub mod webhooks;
pub mod windows;
