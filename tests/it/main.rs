//! The one integration-test binary: the whole appliance driven through its public interfaces,
//! one module per area (`cargo test --test it api::`), the attacks in [`hostile`], the
//! end-to-end runs with real peers in [`e2e`]. One binary links the crate once, where 60 did.
//!
//! Shared helpers: [`common`] (the appliance in-process on loopback, DHCP as a relay, the API),
//! [`netns`] (namespaces, real clients, the binary as a process; the lab lock), [`pg`] (a
//! throwaway PostgreSQL cluster), [`raw`] and [`browser`] (HTTPS by hand, Chromium over
//! WebDriver), [`kit`] and [`app`] (signed plugin bundles), [`bmc_fake`] (a Redfish BMC).

#[path = "../plugins/app.rs"]
mod app;
#[path = "../bmc_fake/mod.rs"]
mod bmc_fake;
#[path = "../common/browser.rs"]
mod browser;
#[path = "../common/mod.rs"]
mod common;
#[path = "../plugins/kit.rs"]
mod kit;
#[path = "../netns/mod.rs"]
mod netns;
#[path = "../pg/mod.rs"]
mod pg;
#[path = "../common/raw.rs"]
mod raw;

mod agent;
mod api;
mod bmc;
mod crash;
mod e2e;
mod estate;
mod hostile;
mod house;
mod plugins;
mod protocols;
mod provision;
mod ui;
