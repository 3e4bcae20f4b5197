//! More than one appliance: backups, several appliances on one store, the DHCP pair.

mod backup;
mod dhcp_pair;
mod multi_appliance;
