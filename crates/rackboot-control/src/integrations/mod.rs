//! The appliance's integrations with what it does not implement itself: webhook receivers,
//! the package proxy (squid) installing nodes reach their mirrors through, and Windows media
//! (WIM images, the SMB share, answer files). Each runs beside the provisioning engine rather
//! than in it: the engine never names them.
//!
//! A module, not a crate: they lean on the control crate's helper supervisor ([`crate::child`])
//! and its TLS ([`crate::tls`]), which the engine uses too, so a crate of their own would first
//! need both moved below control, for no gain in build time (they are about a tenth of it).

pub mod proxy;
pub mod webhooks;
pub mod windows;
