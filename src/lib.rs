//! rackboot: a network-boot appliance in one process.
//!
//! The layers below live in their own crates (`crates/`, ARCHITECTURE.md): `rackboot-base`
//! (sockets, sealed secrets, constant-time compare and hex, the periodic loop) and
//! `rackboot-model` (records and pure rules); [`mac`], [`jobs`], [`net`] and [`secrets`] are
//! re-exported here under their old paths.
//!
//! Module map (see ARCHITECTURE.md for the longer version):
//! - [`config`]: the TOML wire shape and its validated runtime form.
//! - [`app`]: wires the appliance: resolves its addresses, binds every socket, starts the services.
//! - [`service`]: the service contract: the shared [`service::Core`] and the set of running
//!   services (the first to stop stops the rest).
//! - [`http`]: the HTTP and HTTPS services (the [`api`] router on its listeners, with their
//!   own accept loop: TLS handshake, timeouts, connection caps).
//! - [`tls`]: the appliance CA, its server certificate and the rustls configs.
//! - [`ra`]: IPv6 router advertisements that end iPXE's wait for one.
//! - [`assets`]: the boot files a config needs (iPXE, BootOS), the check `/healthz` reports, and
//!   `rackboot assets install`.
//! - [`auth`]: roles, API tokens, passwords, the role table and the login rate limiter.
//! - [`bmc`]: machines' BMCs (Redfish, IPMI) and the power service (caps, retries, read-back,
//!   the periodic power-state refresh).
//! - [`cmdb`]: the redb-backed CMDB (machines, leases, events) with a group-commit writer.
//! - [`planner`]: the one policy seam that decides what a machine boots.
//! - [`render`]: pure template rendering of boot scripts (minijinja, strict).
//! - [`templates`]: the boot templates admins override at run time, and the shared renderer.
//! - [`secrets`]: sealed secrets (AEAD under the appliance's data key) for BMC passwords and
//!   plugin keys.
//! - [`dhcp`]: the DHCP server (full and proxy modes), mechanics only.
//! - [`dns`]: the authoritative DNS server for the machines' names, on hickory-server.
//! - [`controller`]: the agent controller's live side (long-poll wake-ups, credentials, output
//!   followers, the lease sweeper).
//! - [`jobs`]: the agent job record and its state machine (pure).
//! - [`provision`]: provisioning tasks and runs (pure model) and the engine that drives them
//!   through the agent.
//! - [`racks`]: racks (switch, port -> slot map, hostname pattern, address plan, CSV), where
//!   machines are placed by option 82, LLDP or CSV, and the flags a person must look at.
//! - [`plugins`]: signed vendor hardware plugins (manifest, signature, safe unpacking, the store).
//! - [`api`]: the REST API, health and metrics over axum.
//! - [`ui`]: the operator's web UI under `/ui/` (server-rendered pages over the same core; its
//!   changes are REST API calls made in-process).
//! - [`metrics`]: Prometheus counters shared by every service.
//! - [`net`]: socket binding and interface discovery.
//! - [`tftp`]: the read-only TFTP server for the boot directory, mechanics only.
//! - [`client`]: the small HTTP client the CLI uses to talk to the REST API.
//! - [`mac`]: the MAC address type used everywhere.
//! - [`watch`]: `rackboot watch`, the live event stream in a terminal.

pub use rackboot_api::api;
pub mod app;
pub use rackboot_api::assets;
pub use rackboot_control::auth;
pub use rackboot_control::bmc;
pub mod client;
pub use rackboot_base::metrics;
pub use rackboot_base::net;
pub use rackboot_base::secrets;
pub use rackboot_boot::planner;
pub use rackboot_boot::render;
pub use rackboot_config as config;
pub use rackboot_control::controller;
pub use rackboot_control::plugins;
pub use rackboot_control::provision;
pub use rackboot_control::racks;
pub use rackboot_dhcp as dhcp;
pub use rackboot_dhcp::ra;
pub use rackboot_dns as dns;
pub use rackboot_model::jobs;
pub use rackboot_model::mac;
pub use rackboot_store as cmdb;
pub mod service;
pub use rackboot_boot::templates;
pub use rackboot_control::tls;
pub use rackboot_tftp as tftp;
pub use rackboot_ui as ui;
pub mod watch;
pub use rackboot_control::windows;
