//! rackboot's web layer: the REST API, the operator's UI and the listeners that serve them,
//! over the control layer. Nothing below names it.
//!
//! - [`api`]: the REST API, health and metrics over axum, and `/boot` for firmware.
//! - [`ui`]: the operator's web UI under `/ui/` (server-rendered pages over the same state; its
//!   changes are REST API calls made in-process).
//! - [`http`]: the HTTP and HTTPS listeners (their own accept loop: TLS handshake, timeouts,
//!   connection caps) and the boot files served over plain HTTP.
//! - [`assets`]: the boot files a config needs (iPXE, BootOS), the check `/healthz` reports, and
//!   `rackboot assets install`.
//!
//! The lower crates are re-exported under the names the code uses (`cmdb`, `config`, ...).

pub use rackboot_base::{metrics, net, secrets};
pub use rackboot_boot::{planner, render, templates};
pub use rackboot_config as config;
pub use rackboot_control::{auth, bmc, controller, plugins, provision, racks, tls, windows};
pub use rackboot_model::{jobs, mac};
pub use rackboot_store as cmdb;
pub use rackboot_tftp as tftp;

pub mod api;
pub mod assets;
pub mod http;
pub mod ui;
