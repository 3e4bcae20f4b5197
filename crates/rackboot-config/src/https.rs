//! `[https]` and the connection limits in `[http]`: the TLS listener (API, agent API, metrics)
//! and how long and how many connections either listener keeps open.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireHttps {
    pub listen: SocketAddr,
    pub cert: String,
    pub key: String,
    pub handshake_timeout_secs: u64,
    pub boot_port: u16,
}

impl Default for WireHttps {
    fn default() -> Self {
        WireHttps {
            listen: ([0, 0, 0, 0], 443).into(),
            cert: String::new(),
            key: String::new(),
            handshake_timeout_secs: 10,
            boot_port: 0,
        }
    }
}

/// The HTTPS listener.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpsConfig {
    pub listen: SocketAddr,
    /// The operator's certificate chain and key (PEM); `None`: the appliance CA issues one.
    pub own_cert: Option<(PathBuf, PathBuf)>,
    /// A TLS handshake that takes longer is dropped.
    pub handshake_timeout: Duration,
    /// The boot listener (firmware's HTTPS boot: `/boot` only, the boot CA's RSA certificate,
    /// DHE for EDK2's TLS) on `listen`'s address; `None`: off.
    pub boot_listen: Option<SocketAddr>,
}

impl TryFrom<WireHttps> for HttpsConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireHttps) -> anyhow::Result<Self> {
        let WireHttps { listen, cert, key, handshake_timeout_secs, boot_port } = w;
        anyhow::ensure!(
            boot_port == 0 || boot_port != listen.port(),
            "https.boot_port must differ from https.listen's port"
        );
        let boot_listen = (boot_port != 0).then(|| SocketAddr::new(listen.ip(), boot_port));
        let own_cert = match (cert.is_empty(), key.is_empty()) {
            (true, true) => None,
            (false, false) => Some((PathBuf::from(cert), PathBuf::from(key))),
            _ => anyhow::bail!("https.cert and https.key go together: set both or neither"),
        };
        anyhow::ensure!((1..=300).contains(&handshake_timeout_secs), "https.handshake_timeout_secs must be 1..=300");
        Ok(HttpsConfig {
            listen,
            own_cert,
            handshake_timeout: Duration::from_secs(handshake_timeout_secs),
            boot_listen,
        })
    }
}

/// Timeouts and caps every HTTP and HTTPS connection is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnLimits {
    /// A request head that takes longer to arrive closes the connection.
    pub header_timeout: Duration,
    /// A kept-alive connection with no request in flight for this long is closed.
    pub idle_timeout: Duration,
    /// Open connections per listener; more are closed at once.
    pub max_connections: usize,
    /// Open connections per client address and listener; more are closed at once.
    pub max_connections_per_client: usize,
}

/// `[http]`'s limit keys, validated.
pub fn conn_limits(header_secs: u64, idle_secs: u64, max: usize, per_client: usize) -> anyhow::Result<ConnLimits> {
    anyhow::ensure!((1..=600).contains(&header_secs), "http.header_timeout_secs must be 1..=600");
    anyhow::ensure!((1..=3600).contains(&idle_secs), "http.idle_timeout_secs must be 1..=3600");
    anyhow::ensure!((1..=1_000_000).contains(&max), "http.max_connections must be 1..=1000000");
    anyhow::ensure!(
        (1..=max).contains(&per_client),
        "http.max_connections_per_client must be 1..=http.max_connections"
    );
    Ok(ConnLimits {
        header_timeout: Duration::from_secs(header_secs),
        idle_timeout: Duration::from_secs(idle_secs),
        max_connections: max,
        max_connections_per_client: per_client,
    })
}
