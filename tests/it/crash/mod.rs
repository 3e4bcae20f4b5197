//! Crashes and stops: kill -9 mid-write and mid-provisioning, SIGTERM, a full disk.

mod disk_full;
mod kill9;
mod kill9_provision;
mod sigterm;
