//! The PostgreSQL backend of the storage contract: a pool of tokio-postgres connections on a
//! small runtime of its own, so the CMDB's synchronous readers (the blocking pool) and its
//! writer thread can wait on it from outside any async context. Each CMDB table is a SQL table
//! of the same name: key columns `k` (or `k1`, `k2`), value column `v` (JSON documents as
//! `json`, counters as `bigint`). The schema is `migrations/postgres/*.sql`, applied in order.

mod blobs;
mod cols;
mod estate;
mod tx;

use std::future::Future;
use std::sync::Arc;

pub use cols::{Param, PgCols};
pub use estate::{ApplianceRow, Change};
pub use tx::{PgRange, PgTx};

use crate::CmdbError;

/// The migrations, in order: (version, SQL). A version is applied once, in one transaction.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../../migrations/postgres/0001_cmdb.sql")),
    (2, include_str!("../../migrations/postgres/0002_changes_trimmed.sql")),
    (3, include_str!("../../migrations/postgres/0003_plugin_blobs.sql")),
    (4, include_str!("../../migrations/postgres/0004_appliances.sql")),
    (5, include_str!("../../migrations/postgres/0005_user_data.sql")),
    (6, include_str!("../../migrations/postgres/0006_machine_runs.sql")),
    (7, include_str!("../../migrations/postgres/0007_webhooks.sql")),
    (8, include_str!("../../migrations/postgres/0008_tang.sql")),
    (9, include_str!("../../migrations/postgres/0009_leases6.sql")),
    (10, include_str!("../../migrations/postgres/0010_boot_tokens.sql")),
];

/// Rows a range reads per round trip, at most; the first read of each end asks for
/// `FIRST_CHUNK`.
const CHUNK: i64 = 512;
const FIRST_CHUNK: i64 = 8;

pub use rackboot_config::PgConfig;

/// An open PostgreSQL store.
pub struct Pg {
    pool: deadpool_postgres::Pool,
    /// TLS to the server, when `[store] tls_ca_file` is set.
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// For the follower's own connection (LISTEN).
    config: tokio_postgres::Config,
    /// "table.column" -> its type's name (int8, text, json, bytea), for array casts.
    columns: std::sync::RwLock<std::collections::HashMap<String, String>>,
    handle: tokio::runtime::Handle,
    rt: Option<tokio::runtime::Runtime>,
    /// Host and database, for messages (never the password).
    pub label: String,
}

impl Drop for Pg {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Pg {
    /// Connects and brings the schema up to date. Call from outside an async context.
    pub fn connect(cfg: &PgConfig) -> Result<Arc<Pg>, CmdbError> {
        let mut pg_cfg: tokio_postgres::Config =
            cfg.url.parse().map_err(|e| CmdbError::Invalid(format!("[store] url: {e}")))?;
        if pg_cfg.get_password().is_some() {
            return Err(CmdbError::Invalid(
                "[store] url carries a password: put it in [store] password_file instead".into(),
            ));
        }
        if let Some(p) = &cfg.password {
            pg_cfg.password(p.as_bytes());
        }
        // A statement, a lock wait or an open transaction of a vanished appliance ends on its own
        // (the writers' lock with it), and a dead peer is noticed by keepalives.
        let mut options =
            "-c statement_timeout=60000 -c lock_timeout=60000 -c idle_in_transaction_session_timeout=120000"
                .to_string();
        if let Some(schema) = &cfg.schema {
            if schema.is_empty() || !schema.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(CmdbError::Invalid(format!("[store] schema {schema:?}: letters, digits and _ only")));
            }
            options.push_str(&format!(" -c search_path={schema}"));
        }
        pg_cfg.options(options);
        pg_cfg.keepalives(true);
        pg_cfg.keepalives_idle(std::time::Duration::from_secs(30));
        let tls = match &cfg.tls_ca {
            Some(pem) => {
                let config = rackboot_base::tls::client_config(pem)
                    .map_err(|e| CmdbError::Invalid(format!("[store] tls_ca_file: {e:#}")))?;
                // With a CA to check against, the connection is TLS or nothing.
                pg_cfg.ssl_mode(tokio_postgres::config::SslMode::Require);
                Some(tokio_postgres_rustls::MakeRustlsConnect::new(config))
            }
            None => {
                match rackboot_config::remote_host(&pg_cfg) {
                    Some(host) if !cfg.allow_plaintext => {
                        return Err(CmdbError::Invalid(format!(
                            "[store] reaches PostgreSQL at {host} over the network without TLS: set store.tls_ca_file, or store.allow_plaintext = true on a network you trust"
                        )))
                    }
                    Some(host) => tracing::warn!(%host, "[store] reaches PostgreSQL over the network without TLS (store.allow_plaintext)"),
                    None => {}
                }
                None
            }
        };
        pg_cfg.application_name("rackboot");
        pg_cfg.connect_timeout(std::time::Duration::from_secs(10));
        let label = format!(
            "PostgreSQL {} database {}",
            pg_cfg
                .get_hosts()
                .iter()
                .map(|h| match h {
                    tokio_postgres::config::Host::Tcp(h) => h.clone(),
                    tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
                })
                .collect::<Vec<_>>()
                .join(","),
            pg_cfg.get_dbname().unwrap_or("(default)")
        );
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("cmdb-pg")
            .enable_all()
            .build()
            .map_err(|e| CmdbError::Storage(format!("starting the PostgreSQL runtime: {e}")))?;
        let mgr_cfg = deadpool_postgres::ManagerConfig { recycling_method: deadpool_postgres::RecyclingMethod::Fast };
        let mgr = match &tls {
            Some(tls) => deadpool_postgres::Manager::from_config(pg_cfg.clone(), tls.clone(), mgr_cfg),
            None => deadpool_postgres::Manager::from_config(pg_cfg.clone(), tokio_postgres::NoTls, mgr_cfg),
        };
        let pool = {
            let _in_rt = rt.enter();
            deadpool_postgres::Pool::builder(mgr)
                .max_size(cfg.pool_size.max(2))
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(std::time::Duration::from_secs(30)))
                .create_timeout(Some(std::time::Duration::from_secs(10)))
                .build()
                .map_err(|e| CmdbError::Storage(format!("PostgreSQL pool: {e}")))?
        };
        let pg = Arc::new(Pg {
            pool,
            tls,
            config: pg_cfg,
            columns: Default::default(),
            handle: rt.handle().clone(),
            rt: Some(rt),
            label,
        });
        pg.migrate()?;
        pg.read_columns()?;
        Ok(pg)
    }

    /// Learns the column types of this schema's tables.
    fn read_columns(&self) -> Result<(), CmdbError> {
        let client = self.client()?;
        let rows = self
            .block(client.query(
                "SELECT table_name::text, column_name::text, udt_name::text FROM information_schema.columns
                 WHERE table_schema = current_schema()",
                &[],
            ))
            .map_err(|e| self.error(e))?;
        let mut columns = self.columns.write().expect("columns lock");
        for r in rows {
            columns.insert(format!("{}.{}", r.get::<_, String>(0), r.get::<_, String>(1)), r.get(2));
        }
        Ok(())
    }

    /// The type name of `table`.`column` (as `pg_type` names it).
    pub fn column_type(&self, table: &str, column: &str) -> String {
        self.columns
            .read()
            .expect("columns lock")
            .get(&format!("{table}.{column}"))
            .cloned()
            .unwrap_or_else(|| "text".into())
    }

    /// Runs `f` on the store's runtime and waits for it.
    pub fn block<F: Future>(&self, f: F) -> F::Output {
        self.handle.block_on(f)
    }

    fn client(&self) -> Result<deadpool_postgres::Object, CmdbError> {
        self.block(self.pool.get()).map_err(|e| CmdbError::Unavailable(format!("{}: {e}", self.label)))
    }

    /// Applies the migrations this store has not had, under a lock so appliances starting
    /// together apply each once.
    fn migrate(&self) -> Result<(), CmdbError> {
        let mut client = self.client()?;
        self.block(async {
            let tx = client.transaction().await?;
            tx.batch_execute(
                "SELECT pg_advisory_xact_lock(7306495720118120563);
                 CREATE TABLE IF NOT EXISTS schema_migrations (
                     version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
            )
            .await?;
            let newest: Option<i64> = tx.query_one("SELECT max(version) FROM schema_migrations", &[]).await?.get(0);
            let newest = newest.unwrap_or(0);
            let known = MIGRATIONS.last().map(|m| m.0).unwrap_or(0);
            if newest > known {
                return Ok(Err(CmdbError::Storage(format!(
                    "{}: schema version {newest} is newer than this rackboot ({known}); refusing to touch it",
                    self.label
                ))));
            }
            for (version, sql) in MIGRATIONS.iter().filter(|m| m.0 > newest) {
                tx.batch_execute(sql).await?;
                tx.execute("INSERT INTO schema_migrations (version) VALUES ($1)", &[version]).await?;
                tracing::info!(version, store = %self.label, "applied PostgreSQL migration");
            }
            tx.commit().await?;
            Ok(Ok(()))
        })
        .map_err(|e| self.error(e))?
    }

    /// A transaction: a repeatable-read snapshot for reads, read-committed for a writer batch
    /// (which takes the writers' lock first, see [`PgTx::lock_writers`]).
    pub fn begin(self: &Arc<Self>, read_only: bool) -> Result<PgTx, CmdbError> {
        let client = self.client()?;
        let begin = if read_only { "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" } else { "BEGIN" };
        self.block(client.batch_execute(begin)).map_err(|e| self.error(e))?;
        Ok(PgTx::new(self.clone(), client))
    }

    /// A driver error as the CMDB reports it: a lost or refused connection makes the store
    /// unavailable (writes refused until it answers again), a duplicate key is a conflict.
    pub fn error(&self, e: tokio_postgres::Error) -> CmdbError {
        let text = match e.as_db_error() {
            Some(db) => format!("{}: {}", self.label, db.message()),
            None => format!("{}: {e}", self.label),
        };
        match e.code().map(|c| c.code()) {
            Some("23505") => CmdbError::Conflict(text),
            Some(c) if c.starts_with("08") || c.starts_with("57P") || c.starts_with("53") => {
                CmdbError::Unavailable(text)
            }
            Some(_) => CmdbError::Storage(text),
            None => CmdbError::Unavailable(text),
        }
    }

    /// Runs `f` on the store's runtime without waiting for it.
    pub fn spawn<F: Future<Output = ()> + Send + 'static>(&self, f: F) {
        self.handle.spawn(f);
    }

    /// A connection of its own (not from the pool), e.g. to LISTEN on; its driver runs on the
    /// store's runtime and hands asynchronous messages to `messages`.
    pub async fn dedicated(
        &self,
        messages: tokio::sync::mpsc::UnboundedSender<tokio_postgres::AsyncMessage>,
    ) -> Result<tokio_postgres::Client, CmdbError> {
        let Some(tls) = &self.tls else {
            let (client, conn) = self.config.connect(tokio_postgres::NoTls).await.map_err(|e| self.error(e))?;
            tokio::spawn(forward(conn, messages));
            return Ok(client);
        };
        let (client, conn) = self.config.connect(tls.clone()).await.map_err(|e| self.error(e))?;
        tokio::spawn(forward(conn, messages));
        Ok(client)
    }
}

/// Drives a connection, handing its asynchronous messages (notifications) to `messages`.
async fn forward<S, T>(
    mut conn: tokio_postgres::Connection<S, T>,
    messages: tokio::sync::mpsc::UnboundedSender<tokio_postgres::AsyncMessage>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(m) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
        let Ok(m) = m else { break };
        if messages.send(m).is_err() {
            break;
        }
    }
}

/// The store a test runs on when `RACKBOOT_TEST_POSTGRES` names a PostgreSQL (a `host=...`
/// connection string for a throwaway cluster): a schema of its own, created here.
#[doc(hidden)]
pub fn test_config() -> Option<PgConfig> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    test_config_named(&format!("t{}_{n}_{}", std::process::id(), rackboot_base::clock::now_ms() % 1_000_000))
}

/// Like [`test_config`], in the schema `schema` (created if missing): an appliance a test
/// restarts on the same data dir finds its CMDB again.
#[doc(hidden)]
pub fn test_config_named(schema: &str) -> Option<PgConfig> {
    let url = std::env::var("RACKBOOT_TEST_POSTGRES").ok().filter(|u| !u.is_empty())?;
    let schema = schema.to_string();
    let cfg = PgConfig {
        url,
        password: None,
        schema: Some(schema.clone()),
        pool_size: 4,
        tls_ca: None,
        allow_plaintext: false,
    };
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async {
            let (client, conn) =
                tokio_postgres::connect(&cfg.url, tokio_postgres::NoTls).await.expect("test PostgreSQL");
            tokio::spawn(conn);
            client
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .await
                .expect("creating the test schema");
        });
        cfg
    })
    .join()
    .map(Some)
    .expect("RACKBOOT_TEST_POSTGRES is set: the tests run on that PostgreSQL or fail")
}
