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
    },
}

impl TryFrom<WireStore> for StoreConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireStore) -> anyhow::Result<Self> {
        let WireStore { backend, url, password_file, schema, pool_size, tls_ca_file } = w;
        match backend.as_str() {
            "embedded" => {
                anyhow::ensure!(
                    url.is_empty() && password_file.is_empty() && schema.is_empty() && tls_ca_file.is_empty(),
                    "store.url, store.password_file, store.schema and store.tls_ca_file are for backend = \"postgres\""
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
                Ok(StoreConfig::Postgres {
                    url,
                    password_file: (!password_file.is_empty()).then(|| PathBuf::from(password_file)),
                    schema: (!schema.is_empty()).then_some(schema),
                    pool_size,
                    tls_ca_file: (!tls_ca_file.is_empty()).then(|| PathBuf::from(tls_ca_file)),
                })
            }
            other => anyhow::bail!("store.backend {other:?}: \"embedded\" or \"postgres\""),
        }
    }
}

impl StoreConfig {
    /// The PostgreSQL connection settings, the password read from its file; `None` for the
    /// embedded store.
    pub fn postgres(&self) -> anyhow::Result<Option<crate::cmdb::kv::PgConfig>> {
        let StoreConfig::Postgres { url, password_file, schema, pool_size, tls_ca_file } = self else {
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
        Ok(Some(crate::cmdb::kv::PgConfig {
            url: url.clone(),
            password,
            schema: schema.clone(),
            pool_size: *pool_size,
            tls_ca,
        }))
    }
}
