//! The house itself: crate floors, module circles, the test command, shell completions, alert
//! rules.

mod completions;
mod layers;
mod module_circles;
mod prometheus_rules;
mod test_command;
