//! rackboot's HTTP serving below the API: the accept loop both web listeners share ([`conn`]:
//! connection caps, the TLS handshake, hyper with its timeouts) and the sendfile path for boot
//! files on plain HTTP ([`files`]). What is routed is the layers above's (an axum `Router`).

pub mod conn;
pub mod files;

use std::time::Duration;

/// How long open requests may run on after shutdown before their connections are dropped.
pub const DRAIN: Duration = Duration::from_secs(5);
