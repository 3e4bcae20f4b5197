//! `[store]`: where the CMDB lives: the embedded file in the data dir (default), or a
//! PostgreSQL database that several appliances share.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireStore {
    pub backend: String,
    pub url: String,
    pub password_file: String,
    pub schema: String,
    pub pool_size: usize,
    pub tls_ca_file: String,
    pub allow_plaintext: bool,
}

impl Default for WireStore {
    fn default() -> Self {
        WireStore {
            backend: "embedded".into(),
            url: String::new(),
            password_file: String::new(),
            schema: String::new(),
            pool_size: 16,
            tls_ca_file: String::new(),
            allow_plaintext: false,
        }
    }
}

/// Validated store settings.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreConfig {
    /// `data_dir/rackboot.redb`.
    Embedded,
    Postgres {
        /// A libpq-style URL or `key=value` string, without a password.
        url: String,
        /// The password, read when the store is opened (owner-only file).
        password_file: Option<PathBuf>,
        schema: Option<String>,
        pool_size: usize,
        /// CA certificates the server's certificate must chain to: TLS or nothing.
        tls_ca_file: Option<PathBuf>,
        /// A server over the network may be reached without TLS (a network the operator
        /// trusts); without it, only a Unix socket or loopback may.
        allow_plaintext: bool,
    },
}

impl TryFrom<WireStore> for StoreConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireStore) -> anyhow::Result<Self> {
        let WireStore { backend, url, password_file, schema, pool_size, tls_ca_file, allow_plaintext } = w;
        match backend.as_str() {
            "embedded" => {
                anyhow::ensure!(
                    url.is_empty()
                        && password_file.is_empty()
                        && schema.is_empty()
                        && tls_ca_file.is_empty()
                        && !allow_plaintext,
                    "store.url, store.password_file, store.schema, store.tls_ca_file and store.allow_plaintext are for backend = \"postgres\""
                );
                Ok(StoreConfig::Embedded)
            }
            "postgres" => {
                anyhow::ensure!(
                    !url.is_empty(),
                    "store.backend = \"postgres\" needs store.url (e.g. \"postgres://rackboot@db.example/rackboot\")"
                );
                let parsed: tokio_postgres::Config = url.parse().map_err(|e| anyhow::anyhow!("store.url: {e}"))?;
                anyhow::ensure!(
                    parsed.get_password().is_none(),
                    "store.url must not carry the password (it would show in logs and process lists): put it in store.password_file"
                );
                anyhow::ensure!(
                    schema.is_empty()
                        || (schema.len() <= 63 && schema.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')),
                    "store.schema {schema:?}: up to 63 letters, digits and _"
                );
                anyhow::ensure!((2..=256).contains(&pool_size), "store.pool_size must be 2 to 256");
                if tls_ca_file.is_empty() && !allow_plaintext {
                    if let Some(host) = remote_host(&parsed) {
                        anyhow::bail!(
                            "store.url reaches PostgreSQL at {host} over the network without TLS: set store.tls_ca_file (the CA its certificate chains to), or store.allow_plaintext = true on a network you trust"
                        );
                    }
                }
                Ok(StoreConfig::Postgres {
                    url,
                    password_file: (!password_file.is_empty()).then(|| PathBuf::from(password_file)),
                    schema: (!schema.is_empty()).then_some(schema),
                    pool_size,
                    tls_ca_file: (!tls_ca_file.is_empty()).then(|| PathBuf::from(tls_ca_file)),
                    allow_plaintext,
                })
            }
            other => anyhow::bail!("store.backend {other:?}: \"embedded\" or \"postgres\""),
        }
    }
}

/// The first host of `cfg` reached over the network (TCP to anything but loopback), if any.
pub fn remote_host(cfg: &tokio_postgres::Config) -> Option<String> {
    cfg.get_hosts().iter().find_map(|h| match h {
        tokio_postgres::config::Host::Tcp(h) => {
            let local = h == "localhost" || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
            (!local).then(|| h.clone())
        }
        tokio_postgres::config::Host::Unix(_) => None,
    })
}

impl StoreConfig {
    /// The PostgreSQL connection settings, the password read from its file; `None` for the
    /// embedded store.
    pub fn postgres(&self) -> anyhow::Result<Option<PgConfig>> {
        let StoreConfig::Postgres { url, password_file, schema, pool_size, tls_ca_file, allow_plaintext } = self else {
            return Ok(None);
        };
        let tls_ca = match tls_ca_file {
            Some(p) => Some(std::fs::read(p).map_err(|e| anyhow::anyhow!("store.tls_ca_file {}: {e}", p.display()))?),
            None => None,
        };
        let password = match password_file {
            None => None,
            Some(p) => {
                use std::os::unix::fs::MetadataExt;
                let meta =
                    std::fs::metadata(p).map_err(|e| anyhow::anyhow!("store.password_file {}: {e}", p.display()))?;
                anyhow::ensure!(
                    meta.mode() & 0o077 == 0,
                    "store.password_file {} is readable by others (mode {:o}): chmod 600 it",
                    p.display(),
                    meta.mode() & 0o777
                );
                let text = std::fs::read_to_string(p)
                    .map_err(|e| anyhow::anyhow!("store.password_file {}: {e}", p.display()))?;
                let pw = text.trim_end_matches(['\n', '\r']).to_string();
                anyhow::ensure!(!pw.is_empty(), "store.password_file {} is empty", p.display());
                Some(pw)
            }
        };
        Ok(Some(PgConfig {
            url: url.clone(),
            password,
            schema: schema.clone(),
            pool_size: *pool_size,
            tls_ca,
            allow_plaintext: *allow_plaintext,
        }))
    }
}

/// Where the store is and how to log in.
#[derive(Clone)]
pub struct PgConfig {
    /// `postgres://user@host/db` or `host=/run/postgresql dbname=...`; no password in it.
    pub url: String,
    /// Read from `[store] password_file`, never from the URL or the environment.
    pub password: Option<String>,
    /// A schema other than `public`, for several CMDBs in one database.
    pub schema: Option<String>,
    pub pool_size: usize,
    /// CA certificates (PEM) the server's certificate must chain to: with them the connection
    /// is TLS or nothing; without, plain (a Unix socket or a trusted network).
    pub tls_ca: Option<Vec<u8>>,
    /// Without a CA, a server over the network is refused unless this is set.
    pub allow_plaintext: bool,
}

/// Everything but the password.
impl std::fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConfig")
            .field("url", &self.url)
            .field("password", &self.password.as_ref().map(|_| "(from password_file)"))
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .field("tls", &self.tls_ca.is_some())
            .field("allow_plaintext", &self.allow_plaintext)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn postgres(url: &str, extra: impl FnOnce(&mut WireStore)) -> anyhow::Result<StoreConfig> {
        let mut w = WireStore { backend: "postgres".into(), url: url.into(), ..Default::default() };
        extra(&mut w);
        StoreConfig::try_from(w)
    }

    /// Someone on the path to a remote database would read and change every record: over the
    /// network it is TLS, or plaintext the operator chose in so many words.
    #[test]
    fn a_remote_postgres_without_tls_is_refused_unless_plaintext_is_allowed() {
        let err = postgres("postgres://rackboot@db.example/rackboot", |_| {}).unwrap_err().to_string();
        assert!(err.contains("db.example") && err.contains("tls_ca_file") && err.contains("allow_plaintext"), "{err}");
        assert!(postgres("host=198.18.0.5 dbname=rackboot", |_| {}).is_err());
        assert!(postgres("postgres://rackboot@db.example/rackboot", |w| w.allow_plaintext = true).is_ok());
        assert!(postgres("postgres://rackboot@db.example/rackboot", |w| w.tls_ca_file = "/etc/ca.pem".into()).is_ok());
        for local in ["postgres://rackboot@localhost/r", "host=127.0.0.1 dbname=r", "host=/run/postgresql dbname=r"] {
            assert!(postgres(local, |_| {}).is_ok(), "{local}");
        }
        let embedded = WireStore { allow_plaintext: true, ..Default::default() };
        assert!(StoreConfig::try_from(embedded).is_err(), "a postgres key on the embedded store");
    }
}
