//! The PostgreSQL backend of the storage contract: a pool of tokio-postgres connections on a
//! small runtime of its own, so the CMDB's synchronous readers (the blocking pool) and its
//! writer thread can wait on it from outside any async context. Each CMDB table is a SQL table
//! of the same name: key columns `k` (or `k1`, `k2`), value column `v` (JSON documents as
//! `json`, counters as `bigint`). The schema is `migrations/postgres/*.sql`, applied in order.

use std::collections::VecDeque;
use std::future::Future;
use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::Arc;

use bytes::BufMut;
use redb::{Key, Value};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};
use tokio_postgres::Row;

use super::Guard;
use crate::cmdb::CmdbError;

/// The migrations, in order: (version, SQL). A version is applied once, in one transaction.
const MIGRATIONS: &[(i64, &str)] = &[(1, include_str!("../../../migrations/postgres/0001_cmdb.sql"))];

/// Rows a range reads per round trip, at most; the first read of each end asks for
/// `FIRST_CHUNK`.
const CHUNK: i64 = 512;
const FIRST_CHUNK: i64 = 8;

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
            .finish()
    }
}

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
                let config = crate::tls::client_config(pem)
                    .map_err(|e| CmdbError::Invalid(format!("[store] tls_ca_file: {e:#}")))?;
                // With a CA to check against, the connection is TLS or nothing.
                pg_cfg.ssl_mode(tokio_postgres::config::SslMode::Require);
                Some(tokio_postgres_rustls::MakeRustlsConnect::new(config))
            }
            None => {
                let remote = pg_cfg.get_hosts().iter().any(|h| match h {
                    tokio_postgres::config::Host::Tcp(h) => !matches!(h.as_str(), "localhost" | "127.0.0.1" | "::1"),
                    tokio_postgres::config::Host::Unix(_) => false,
                });
                if remote {
                    tracing::warn!("[store] reaches PostgreSQL over the network without TLS: set store.tls_ca_file");
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
        Ok(PgTx {
            pg: self.clone(),
            client: Some(client),
            open: true,
            failed: Default::default(),
            pending: Default::default(),
        })
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

impl Pg {
    /// Change-log entries after `seq`, oldest first, at most `limit`.
    pub fn changes_after(&self, seq: i64, limit: i64) -> Result<Vec<(i64, Change)>, CmdbError> {
        let client = self.client()?;
        let rows = self
            .block(async {
                let stmt = client
                    .prepare_cached(
                        "SELECT seq, appliance, machines, leases, racks, events_from, events_to FROM changes
                         WHERE seq > $1 ORDER BY seq LIMIT $2",
                    )
                    .await?;
                client.query(&stmt, &[&seq, &limit]).await
            })
            .map_err(|e| self.error(e))?;
        let ids = |v: Vec<i64>| v.into_iter().map(|i| i as u64).collect();
        rows.into_iter()
            .map(|r| {
                let events = match (r.try_get::<_, Option<i64>>(5), r.try_get::<_, Option<i64>>(6)) {
                    (Ok(Some(a)), Ok(Some(b))) => Some((a as u64, b as u64)),
                    _ => None,
                };
                Ok((
                    r.try_get(0).map_err(|e| CmdbError::Storage(format!("changes: {e}")))?,
                    Change {
                        appliance: r.try_get(1).map_err(|e| CmdbError::Storage(format!("changes: {e}")))?,
                        machines: ids(r.try_get(2).map_err(|e| CmdbError::Storage(format!("changes: {e}")))?),
                        leases: ids(r.try_get(3).map_err(|e| CmdbError::Storage(format!("changes: {e}")))?),
                        racks: r.try_get(4).map_err(|e| CmdbError::Storage(format!("changes: {e}")))?,
                        events,
                    },
                ))
            })
            .collect()
    }

    /// The newest entry of the change log (0 for none).
    pub fn newest_change(&self) -> Result<i64, CmdbError> {
        let client = self.client()?;
        let row = self
            .block(client.query_one("SELECT coalesce(max(seq), 0) FROM changes", &[]))
            .map_err(|e| self.error(e))?;
        Ok(row.get(0))
    }

    /// Drops change-log entries older than `secs`.
    pub fn trim_changes(&self, secs: i64) -> Result<u64, CmdbError> {
        let client = self.client()?;
        self.block(
            client.execute("DELETE FROM changes WHERE at < now() - make_interval(secs => $1)", &[&(secs as f64)]),
        )
        .map_err(|e| self.error(e))
    }

    /// Records a beat of `appliance` as `role` of DHCP pair `pair` and returns how long ago the
    /// other member last beat (`None`: never), both on the database's clock. Also says which
    /// appliance held this role until now, if another one beat as it within `fresh_secs`.
    pub fn pair_beat(
        &self,
        pair: &str,
        role: &str,
        appliance: &str,
        active: bool,
        fresh_secs: f64,
    ) -> Result<(Option<f64>, Option<String>), CmdbError> {
        let client = self.client()?;
        self.block(async {
            let clash = client
                .query_opt(
                    "SELECT appliance FROM dhcp_pairs WHERE pair = $1 AND role = $2 AND appliance <> $3
                     AND beat_at > now() - make_interval(secs => $4)",
                    &[&pair, &role, &appliance, &fresh_secs],
                )
                .await?
                .map(|r| r.get::<_, String>(0));
            client
                .execute(
                    "INSERT INTO dhcp_pairs (pair, role, appliance, active, beat_at) VALUES ($1, $2, $3, $4, now())
                     ON CONFLICT (pair, role) DO UPDATE SET appliance = excluded.appliance, active = excluded.active,
                         beat_at = excluded.beat_at",
                    &[&pair, &role, &appliance, &active],
                )
                .await?;
            let other = client
                .query_opt(
                    "SELECT extract(epoch FROM now() - beat_at)::float8 FROM dhcp_pairs WHERE pair = $1 AND role <> $2",
                    &[&pair, &role],
                )
                .await?
                .map(|r| r.get::<_, f64>(0));
            Ok((other, clash))
        })
        .map_err(|e| self.error(e))
    }

    /// Whether the store answers (the writer asks while faulted).
    pub fn ping(&self) -> Result<(), CmdbError> {
        let client = self.client()?;
        self.block(client.simple_query("SELECT 1")).map(|_| ()).map_err(|e| self.error(e))
    }
}

/// What one write batch changed, for the other appliances sharing the store.
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub appliance: String,
    pub machines: Vec<u64>,
    pub leases: Vec<u64>,
    pub racks: bool,
    /// The batch's events, first and last sequence.
    pub events: Option<(u64, u64)>,
}

/// One transaction on one pooled connection; rolled back if dropped before [`PgTx::commit`].
pub struct PgTx {
    pg: Arc<Pg>,
    client: Option<deadpool_postgres::Object>,
    open: bool,
    /// The first statement that failed: PostgreSQL aborts the whole transaction then, and its
    /// COMMIT would quietly roll back, so commit reports this instead.
    failed: std::sync::Mutex<Option<CmdbError>>,
    /// Inserts not sent yet (see `pending`).
    pending: std::sync::Mutex<super::pending::Pending>,
}

impl Drop for PgTx {
    fn drop(&mut self) {
        if self.open {
            if let Some(client) = self.client.take() {
                if self.pg.block(client.batch_execute("ROLLBACK")).is_err() {
                    // A connection in an unknown state is not handed back to the pool.
                    drop(deadpool_postgres::Object::take(client));
                }
            }
        }
    }
}

fn key_cols(width: usize) -> &'static str {
    if width == 1 {
        "k"
    } else {
        "k1, k2"
    }
}

fn placeholders(from: usize, n: usize) -> String {
    (from..from + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

impl PgTx {
    fn client(&self) -> &deadpool_postgres::Object {
        self.client.as_ref().expect("client lives until the transaction ends")
    }

    fn query(&self, sql: &str, params: &[Param]) -> Result<Vec<Row>, CmdbError> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        self.run(sql, &refs)
    }

    /// Runs a statement of this transaction; a failure poisons it (see `failed`).
    fn run(&self, sql: &str, refs: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, CmdbError> {
        let out = self
            .pg
            .block(async {
                let stmt = self.client().prepare_cached(sql).await?;
                self.client().query(&stmt, refs).await
            })
            .map_err(|e| self.pg.error(e));
        if let Err(e) = &out {
            self.failed.lock().expect("failed lock").get_or_insert_with(|| e.clone());
        }
        out
    }

    pub fn lock_writers(&self) -> Result<(), CmdbError> {
        self.query("SELECT v FROM meta WHERE k = 'next_event_seq' FOR UPDATE", &[]).map(|_| ())
    }

    /// Logs what this batch changed for the other appliances and wakes them at commit; returns
    /// the entry's sequence.
    pub fn log_change(&self, change: &Change) -> Result<u64, CmdbError> {
        let ids = |v: &[u64]| v.iter().map(|&i| i as i64).collect::<Vec<i64>>();
        let (machines, leases) = (ids(&change.machines), ids(&change.leases));
        let (from, to) = match change.events {
            Some((a, b)) => (Some(a as i64), Some(b as i64)),
            None => (None, None),
        };
        let params: [&(dyn ToSql + Sync); 6] = [&change.appliance, &machines, &leases, &change.racks, &from, &to];
        self.pg
            .block(async {
                let stmt = self
                    .client()
                    .prepare_cached(
                        "WITH c AS (INSERT INTO changes (appliance, machines, leases, racks, events_from, events_to)
                                    VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq)
                         SELECT seq, pg_notify('rackboot_cmdb', seq::text) FROM c",
                    )
                    .await?;
                self.client().query_one(&stmt, &params).await
            })
            .map(|row| row.get::<_, i64>(0) as u64)
            .map_err(|e| {
                let e = self.pg.error(e);
                self.failed.lock().expect("failed lock").get_or_insert_with(|| e.clone());
                e
            })
    }

    /// Sends the rows held for `table` (all tables: `None`).
    fn flush(&self, table: Option<&str>) -> Result<(), CmdbError> {
        let held: Vec<(&str, super::pending::Held)> = {
            let mut p = self.pending.lock().expect("pending lock");
            match table {
                Some(t) => p.drain(t).map(|h| (t, h)).into_iter().collect(),
                None => p.drain_all().into_iter().map(|(t, h)| (t as &str, h)).collect(),
            }
        };
        for (table, rows) in held {
            let (sql, arrays) = super::pending::upsert(table, rows, |col| self.pg.column_type(table, col));
            let params: Vec<&(dyn ToSql + Sync)> = arrays.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
            self.run(&sql, &params)?;
        }
        Ok(())
    }

    pub fn commit(mut self) -> Result<(), CmdbError> {
        // A failed flush is in `failed` too.
        let _ = self.flush(None);
        if let Some(e) = self.failed.lock().expect("failed lock").clone() {
            return Err(e); // dropped: rolled back
        }
        self.open = false;
        let client = self.client.take().expect("client lives until the transaction ends");
        self.pg.block(client.batch_execute("COMMIT")).map_err(|e| self.pg.error(e))
    }

    pub fn get<K: PgCols, V: PgCols>(&self, table: &str, key: &K::SelfType<'_>) -> Result<Option<Vec<u8>>, CmdbError> {
        let key_bytes = K::as_bytes(key).as_ref().to_vec();
        if let Some(v) = self.pending.lock().expect("pending lock").get(table, &key_bytes) {
            return Ok(Some(v.to_vec()));
        }
        let mut params = Vec::new();
        K::params(key, false, &mut params)?;
        let v = if V::WIDTH == 0 { "1" } else { "v" };
        let sql = format!("SELECT {v} FROM {table} WHERE ({}) = ({})", key_cols(K::WIDTH), placeholders(1, K::WIDTH));
        self.query(&sql, &params)?.first().map(|row| V::bytes(row, 0)).transpose()
    }

    /// Holds the row until the table is read by range, flushed or committed.
    pub fn insert<K: PgCols, V: PgCols>(
        &self,
        table: &'static str,
        key: &K::SelfType<'_>,
        value: &V::SelfType<'_>,
    ) -> Result<(), CmdbError> {
        let (mut kp, mut vp) = (Vec::new(), Vec::new());
        K::params(key, false, &mut kp)?;
        V::params(value, false, &mut vp)?;
        let row = super::pending::Row { key: kp, value_bytes: V::as_bytes(value).as_ref().to_vec(), value: vp };
        let full = self.pending.lock().expect("pending lock").put(
            table,
            (K::WIDTH, V::WIDTH),
            K::as_bytes(key).as_ref().to_vec(),
            row,
        );
        if full {
            self.flush(Some(table))?;
        }
        Ok(())
    }

    pub fn remove<K: PgCols, V: PgCols>(
        &self,
        table: &str,
        key: &K::SelfType<'_>,
    ) -> Result<Option<Vec<u8>>, CmdbError> {
        let held = self.pending.lock().expect("pending lock").take(table, K::as_bytes(key).as_ref());
        let mut params = Vec::new();
        K::params(key, false, &mut params)?;
        let v = if V::WIDTH == 0 { "1" } else { "v" };
        if let Some(row) = held {
            // The held row never reached the server; an older stored one goes too.
            let sql = format!("DELETE FROM {table} WHERE ({}) = ({})", key_cols(K::WIDTH), placeholders(1, K::WIDTH));
            self.query(&sql, &params)?;
            return Ok(Some(row.value_bytes));
        }
        let sql = format!(
            "DELETE FROM {table} WHERE ({}) = ({}) RETURNING {v}",
            key_cols(K::WIDTH),
            placeholders(1, K::WIDTH)
        );
        self.query(&sql, &params)?.first().map(|row| V::bytes(row, 0)).transpose()
    }

    pub fn count(&self, table: &str) -> Result<u64, CmdbError> {
        self.flush(Some(table))?;
        let rows = self.query(&format!("SELECT count(*) FROM {table}"), &[])?;
        Ok(rows[0].get::<_, i64>(0) as u64)
    }

    /// Up to `limit` rows between the bounds, from the low end or (`desc`) the high end.
    fn chunk<K: PgCols, V: PgCols>(
        &self,
        table: &str,
        (lo, hi): (&Bound<Vec<u8>>, &Bound<Vec<u8>>),
        desc: bool,
        limit: i64,
    ) -> Result<Vec<RawRow>, CmdbError> {
        self.flush(Some(table))?;
        let kc = key_cols(K::WIDTH);
        let mut params = Vec::new();
        let mut clauses = Vec::new();
        for (bound, incl, excl) in [(lo, ">=", ">"), (hi, "<=", "<")] {
            let (op, k) = match bound {
                Bound::Included(k) => (incl, k),
                Bound::Excluded(k) => (excl, k),
                Bound::Unbounded => continue,
            };
            clauses.push(format!("({kc}) {op} ({})", placeholders(params.len() + 1, K::WIDTH)));
            K::params(&K::from_bytes(k), true, &mut params)?;
        }
        let filter = if clauses.is_empty() { String::new() } else { format!("WHERE {}", clauses.join(" AND ")) };
        let order = kc.split(", ").map(|c| if desc { format!("{c} DESC") } else { c.to_string() }).collect::<Vec<_>>();
        let v = if V::WIDTH == 0 { "" } else { ", v" };
        let sql = format!("SELECT {kc}{v} FROM {table} {filter} ORDER BY {} LIMIT {limit}", order.join(", "));
        self.query(&sql, &params)?.iter().map(|row| Ok((K::bytes(row, 0)?, V::bytes(row, K::WIDTH)?))).collect()
    }
}

/// A row as key and value bytes (redb's encoding).
type RawRow = (Vec<u8>, Vec<u8>);

/// Rows of a table in key order, read a chunk at a time from whichever end is asked for.
pub struct PgRange<'a, K, V> {
    tx: &'a PgTx,
    table: &'static str,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    front: VecDeque<RawRow>,
    back: VecDeque<RawRow>,
    front_done: bool,
    back_done: bool,
    /// Rows the next read from each end asks for: few at first (most ranges are read for
    /// their first row or few), growing to [`CHUNK`].
    front_n: i64,
    back_n: i64,
    _types: PhantomData<(K, V)>,
}

type Item<'a, K, V> = Result<(Guard<'a, K>, Guard<'a, V>), CmdbError>;

impl<'a, K: PgCols + Key, V: PgCols> PgRange<'a, K, V> {
    pub fn new(tx: &'a PgTx, table: &'static str, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Self {
        PgRange {
            tx,
            table,
            lo,
            hi,
            front: VecDeque::new(),
            back: VecDeque::new(),
            front_done: false,
            back_done: false,
            front_n: FIRST_CHUNK,
            back_n: FIRST_CHUNK,
            _types: PhantomData,
        }
    }

    /// Whether `k` is still between the bounds (the other end may have passed it).
    fn inside(&self, k: &[u8]) -> bool {
        use std::cmp::Ordering::*;
        let above_lo = match &self.lo {
            Bound::Included(b) => K::compare(k, b) != Less,
            Bound::Excluded(b) => K::compare(k, b) == Greater,
            Bound::Unbounded => true,
        };
        let below_hi = match &self.hi {
            Bound::Included(b) => K::compare(k, b) != Greater,
            Bound::Excluded(b) => K::compare(k, b) == Less,
            Bound::Unbounded => true,
        };
        above_lo && below_hi
    }

    fn step(&mut self, back: bool) -> Option<Item<'a, K, V>> {
        loop {
            let buf = if back { self.back.pop_front() } else { self.front.pop_front() };
            if let Some((k, v)) = buf {
                if !self.inside(&k) {
                    (self.front_done, self.back_done) = (true, true);
                    return None;
                }
                if back {
                    self.hi = Bound::Excluded(k.clone());
                } else {
                    self.lo = Bound::Excluded(k.clone());
                }
                return Some(Ok((Guard::Owned(k, PhantomData), Guard::Owned(v, PhantomData))));
            }
            if (back && self.back_done) || (!back && self.front_done) {
                return None;
            }
            let n = if back { &mut self.back_n } else { &mut self.front_n };
            let limit = *n;
            *n = (*n * 8).min(CHUNK);
            match self.tx.chunk::<K, V>(self.table, (&self.lo, &self.hi), back, limit) {
                Ok(rows) => {
                    let last = (rows.len() as i64) < limit;
                    if back {
                        self.back_done = last;
                        self.back.extend(rows);
                    } else {
                        self.front_done = last;
                        self.front.extend(rows);
                    }
                    if (back && self.back.is_empty()) || (!back && self.front.is_empty()) {
                        return None;
                    }
                }
                Err(e) => {
                    (self.front_done, self.back_done) = (true, true);
                    return Some(Err(e));
                }
            }
        }
    }
}

impl<'a, K: PgCols + Key, V: PgCols> Iterator for PgRange<'a, K, V> {
    type Item = Item<'a, K, V>;
    fn next(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}

impl<K: PgCols + Key, V: PgCols> DoubleEndedIterator for PgRange<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}

/// A statement parameter.
#[derive(Debug, Clone)]
pub enum Param {
    Int(i64),
    Text(String),
    /// JSON text (for `json` columns) or raw bytes (`bytea`).
    Blob(Vec<u8>),
}

impl ToSql for Param {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Int(i) => i.to_sql(ty, out),
            Param::Text(s) => s.to_sql(ty, out),
            Param::Blob(b) => {
                if *ty == Type::JSONB {
                    out.put_u8(1);
                }
                out.put_slice(b);
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// A `json`, `jsonb` or `bytea` column as bytes.
struct Blob(Vec<u8>);

impl<'a> FromSql<'a> for Blob {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let raw = if *ty == Type::JSONB { raw.get(1..).unwrap_or_default() } else { raw };
        Ok(Blob(raw.to_vec()))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSON || *ty == Type::JSONB || *ty == Type::BYTEA
    }
}

fn column<'a, T: FromSql<'a>>(row: &'a Row, at: usize) -> Result<T, CmdbError> {
    row.try_get(at).map_err(|e| CmdbError::Storage(format!("reading column {at}: {e}")))
}

/// How a key or value type maps to SQL columns. Rows come back in redb's byte encoding, so a
/// [`Guard`] reads the same from either backend.
pub trait PgCols: Value + 'static {
    /// Columns it takes: 1 or 2 for keys, 0 (a set) or 1 for values.
    const WIDTH: usize;
    /// Its parameters; `bound` clamps integers to what a `bigint` holds (a range's open end).
    fn params(v: &Self::SelfType<'_>, bound: bool, out: &mut Vec<Param>) -> Result<(), CmdbError>;
    fn bytes(row: &Row, at: usize) -> Result<Vec<u8>, CmdbError>;
}

fn int(v: u64, bound: bool) -> Result<Param, CmdbError> {
    match i64::try_from(v) {
        Ok(i) => Ok(Param::Int(i)),
        Err(_) if bound => Ok(Param::Int(i64::MAX)),
        Err(_) => Err(CmdbError::Invalid(format!("{v} is past what the PostgreSQL store holds (2^63 - 1)"))),
    }
}

impl PgCols for u64 {
    const WIDTH: usize = 1;
    fn params(v: &u64, bound: bool, out: &mut Vec<Param>) -> Result<(), CmdbError> {
        out.push(int(*v, bound)?);
        Ok(())
    }
    fn bytes(row: &Row, at: usize) -> Result<Vec<u8>, CmdbError> {
        Ok((column::<i64>(row, at)? as u64).to_le_bytes().to_vec())
    }
}

impl PgCols for u32 {
    const WIDTH: usize = 1;
    fn params(v: &u32, _: bool, out: &mut Vec<Param>) -> Result<(), CmdbError> {
        out.push(Param::Int(i64::from(*v)));
        Ok(())
    }
    fn bytes(row: &Row, at: usize) -> Result<Vec<u8>, CmdbError> {
        Ok((column::<i64>(row, at)? as u32).to_le_bytes().to_vec())
    }
}

impl PgCols for &'static str {
    const WIDTH: usize = 1;
    fn params(v: &&str, _: bool, out: &mut Vec<Param>) -> Result<(), CmdbError> {
        out.push(Param::Text(v.to_string()));
        Ok(())
    }
    fn bytes(row: &Row, at: usize) -> Result<Vec<u8>, CmdbError> {
        Ok(column::<&str>(row, at)?.as_bytes().to_vec())
    }
}

impl PgCols for &'static [u8] {
    const WIDTH: usize = 1;
    fn params(v: &&[u8], _: bool, out: &mut Vec<Param>) -> Result<(), CmdbError> {
        out.push(Param::Blob(v.to_vec()));
        Ok(())
    }
    fn bytes(row: &Row, at: usize) -> Result<Vec<u8>, CmdbError> {
        Ok(column::<Blob>(row, at)?.0)
    }
}

impl PgCols for () {
    const WIDTH: usize = 0;
    fn params(_: &(), _: bool, _: &mut Vec<Param>) -> Result<(), CmdbError> {
        Ok(())
    }
    fn bytes(_: &Row, _: usize) -> Result<Vec<u8>, CmdbError> {
        Ok(Vec::new())
    }
}

impl PgCols for (u64, u64) {
    const WIDTH: usize = 2;
    fn params(v: &(u64, u64), bound: bool, out: &mut Vec<Param>) -> Result<(), CmdbError> {
        out.push(int(v.0, bound)?);
        out.push(int(v.1, bound)?);
        Ok(())
    }
    fn bytes(row: &Row, at: usize) -> Result<Vec<u8>, CmdbError> {
        let v = (column::<i64>(row, at)? as u64, column::<i64>(row, at + 1)? as u64);
        Ok(<(u64, u64)>::as_bytes(&v))
    }
}

impl PgCols for (&'static str, u64) {
    const WIDTH: usize = 2;
    fn params(v: &(&str, u64), bound: bool, out: &mut Vec<Param>) -> Result<(), CmdbError> {
        out.push(Param::Text(v.0.to_string()));
        out.push(int(v.1, bound)?);
        Ok(())
    }
    fn bytes(row: &Row, at: usize) -> Result<Vec<u8>, CmdbError> {
        let v = (column::<&str>(row, at)?, column::<i64>(row, at + 1)? as u64);
        Ok(<(&str, u64)>::as_bytes(&v))
    }
}

/// The store a test runs on when `RACKBOOT_TEST_POSTGRES` names a PostgreSQL (a `host=...`
/// connection string for a throwaway cluster): a schema of its own, created here.
#[doc(hidden)]
pub fn test_config() -> Option<PgConfig> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    test_config_named(&format!("t{}_{n}_{}", std::process::id(), crate::cmdb::now_ms() % 1_000_000))
}

/// Like [`test_config`], in the schema `schema` (created if missing): an appliance a test
/// restarts on the same data dir finds its CMDB again.
#[doc(hidden)]
pub fn test_config_named(schema: &str) -> Option<PgConfig> {
    let url = std::env::var("RACKBOOT_TEST_POSTGRES").ok().filter(|u| !u.is_empty())?;
    let schema = schema.to_string();
    let cfg = PgConfig { url, password: None, schema: Some(schema.clone()), pool_size: 4, tls_ca: None };
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
