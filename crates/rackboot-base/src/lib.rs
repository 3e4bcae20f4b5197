//! rackboot's ground floor: what every layer above may use and that knows nothing of them.
//!
//! - [`clock`]: seconds and milliseconds since the Unix epoch.
//! - [`metrics`]: the Prometheus metrics every service counts into, and their rendering.
//! - [`net`]: socket binding and interface discovery.
//! - [`mmsg`]: datagrams received and sent in batches (`recvmmsg`, `sendmmsg`).
//! - [`secrets`]: sealed secrets (AEAD under the appliance's data key), their one home.
//! - [`secret`]: comparing secrets in constant time, and hex.
//! - [`periodic`]: the loop a periodic service runs.
//! - [`sandbox`]: a child program confined by Landlock to the files it is given.
//! - [`tls`]: the crypto provider and the client config that trusts only a given CA.

pub mod clock;
pub mod metrics;
pub mod mmsg;
pub mod net;
pub mod periodic;
pub mod sandbox;
pub mod secret;
pub mod secrets;
pub mod tls;
