//! The agent library against the appliance: in-process agents, the JSON wire, plugins run by
//! agents.

mod inprocess;
mod json;
mod plugin;
