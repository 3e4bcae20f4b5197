//! rackboot's REST API over axum: machines, jobs, tasks, racks, plugins, users and the rest
//! under `/api/v1`, the agent API under `/agent/v1`, `/boot` for firmware and installers,
//! `/metrics`, `/healthz` and the OpenAPI document ([`api`]); the boot files a config needs and
//! their check ([`assets`]).
//!
//! The lower crates are re-exported under the names the code uses (`cmdb`, `config`, ...).

pub use rackboot_base::{metrics, net, secrets};
pub use rackboot_boot::{netcfg, planner, render, templates, uki};
pub use rackboot_config as config;
pub use rackboot_control::{
    auth, bmc, controller, firmware, plugins, provision, racks, secureboot, tang, tls, vmedia, webhooks, windows,
};
pub use rackboot_model::{jobs, mac};
pub use rackboot_store as cmdb;
pub use rackboot_tftp as tftp;

pub mod api;
pub mod assets;
