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

mod e2e;
mod hostile;

mod agent_inprocess;
mod agent_json;
mod answer_validators;
mod api;
mod api_contract;
// One of the longest tests outside the VM runs (a minute, three thousand requests): named to
// sort early, as the harness starts tests in name order, so it runs beside the others.
mod api_schemathesis;
mod assets;
mod audit;
mod backup;
mod bmc_api;
mod bmc_bench;
mod bmc_bios;
mod bmc_certs;
mod bmc_faults;
mod bmc_inband;
mod bmc_ipmi;
mod bmc_provision;
mod bmc_sushy;
mod bmc_vmedia;
mod boot_http;
mod boot_nonce;
mod boot_sendfile;
mod boot_storm;
mod boot_tls;
mod cloudinit;
mod completions;
mod dhcp_inprocess;
mod dhcp_pair;
mod disk_full;
mod dns_inprocess;
mod kill9;
mod kill9_provision;
mod layers;
mod lifecycle;
mod multi_appliance;
mod network;
mod plugin_agent;
mod plugins;
mod plugins_bench;
mod prometheus_rules;
mod provision_formats;
mod provision_image;
mod provision_installer;
mod racks;
mod shared_plugins;
mod sigterm;
mod tang;
mod templates;
mod test_command;
mod tftp_inprocess;
mod tls;
mod ui_bmc;
mod ui_browser;
mod ui_charts;
mod ui_pages;
mod ui_plugins;
mod ui_power;
mod ui_provisioning;
mod ui_racks;
mod ui_templates;
mod users;
mod webhooks;
