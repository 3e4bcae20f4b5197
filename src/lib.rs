//! rackboot: a network-boot appliance in one process.
//!
//! This package is the binary and its wiring: [`app`] resolves the addresses, binds every
//! socket and starts the services over one core ([`service`]); `cli` is the command line,
//! [`client`] the HTTP client it talks to the REST API with, [`watch`] the live event stream in
//! a terminal. Everything else lives in the workspace's crates, bottom to top (ARCHITECTURE.md
//! has the map; `tests/it/house/layers.rs` keeps a crate from naming one above it):
//!
//! - `rackboot-base`: sockets, sealed secrets, constant-time compare, metrics, the clock, the
//!   periodic loop, the TLS client config.
//! - `rackboot-model`: records and their pure rules (machines, jobs, runs, racks, plugins).
//! - `rackboot-config`: the TOML wire shape, its validated form and the resolved addresses.
//! - `rackboot-kv`: ordered typed tables on redb or PostgreSQL.
//! - `rackboot-store`: the CMDB over them (index, writer, follower).
//! - `rackboot-boot`: what a machine boots, the templates and their rendering.
//! - `rackboot-dhcp`, `rackboot-dns`, `rackboot-tftp`, `rackboot-http`: the protocol services.
//! - `rackboot-control`: the agent controller, provisioning, BMCs, plugins, auth, Windows, racks.
//! - `rackboot-api`, `rackboot-ui`: the REST API and the web UI.
//!
//! The crates' modules are re-exported here under the paths the tests and the CLI use
//! (`rackboot::cmdb`, `rackboot::dhcp`, ...).

pub mod app;
pub mod client;
pub mod watch;

pub use app::service;
pub use rackboot_api::{api, assets};
pub use rackboot_base::{metrics, net, secrets};
pub use rackboot_boot::{planner, render, templates, uki};
pub use rackboot_config as config;
pub use rackboot_control::{
    auth, bmc, child, controller, plugins, provision, proxy, racks, secureboot, tang, tls, vmedia, webhooks, windows,
};
pub use rackboot_dhcp as dhcp;
pub use rackboot_dhcp::ra;
pub use rackboot_dns as dns;
pub use rackboot_model::{firmware, jobs, mac};
pub use rackboot_store as cmdb;
pub use rackboot_tftp as tftp;
pub use rackboot_ui as ui;
