//! The agent library against the appliance: in-process agents, the JSON wire, plugins run by
//! agents (firmware flashed by plugins in BootOS among them).

mod firmware_plugin;
mod inprocess;
mod json;
mod plugin;
