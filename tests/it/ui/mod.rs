//! The web UI: pages rendered, and Chromium through WebDriver.

mod bmc;
mod browser;
mod charts;
mod directory;
mod firmware;
mod oidc;
mod pages;
mod plugins;
mod pools;
mod power;
mod provisioning;
mod racks;
mod templates;
