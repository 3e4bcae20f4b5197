//! A transaction on one pooled connection and the ranges read through it: the storage
//! contract's reads and writes as SQL on the `k`/`v` tables.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::Arc;

use redb::Key;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::cols::{Param, PgCols};
use super::{Change, Pg, CHUNK, FIRST_CHUNK};
use crate::pending;
use crate::CmdbError;
use crate::Guard;

/// One transaction on one pooled connection; rolled back if dropped before [`PgTx::commit`].
pub struct PgTx {
    pg: Arc<Pg>,
    client: Option<deadpool_postgres::Object>,
    open: bool,
    /// The first statement that failed: PostgreSQL aborts the whole transaction then, and its
    /// COMMIT would quietly roll back, so commit reports this instead.
    failed: std::sync::Mutex<Option<CmdbError>>,
    /// Inserts not sent yet (see `pending`).
    pending: std::sync::Mutex<pending::Pending>,
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
    /// A transaction already begun on `client`.
    pub(super) fn new(pg: Arc<Pg>, client: deadpool_postgres::Object) -> PgTx {
        PgTx { pg, client: Some(client), open: true, failed: Default::default(), pending: Default::default() }
    }

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
        let held: Vec<(&str, pending::Held)> = {
            let mut p = self.pending.lock().expect("pending lock");
            match table {
                Some(t) => p.drain(t).map(|h| (t, h)).into_iter().collect(),
                None => p.drain_all().into_iter().map(|(t, h)| (t as &str, h)).collect(),
            }
        };
        for (table, rows) in held {
            let (sql, arrays) = pending::upsert(table, rows, |col| self.pg.column_type(table, col));
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

    /// The values under `keys` of a table keyed by one integer column, in the keys' order, read
    /// with one statement (a page of a list: one round trip, not one per row).
    pub fn get_many<V: PgCols>(&self, table: &str, keys: &[u64]) -> Result<Vec<Option<Vec<u8>>>, CmdbError> {
        self.flush(Some(table))?;
        // A key past what a bigint holds cannot be stored, so it is not found.
        let wanted: Vec<i64> = keys.iter().filter_map(|k| i64::try_from(*k).ok()).collect();
        let v = if V::WIDTH == 0 { "1" } else { "v" };
        let sql = format!("SELECT k, {v} FROM {table} WHERE k = ANY($1)");
        let mut found = std::collections::HashMap::with_capacity(wanted.len());
        for row in self.run(&sql, &[&wanted])? {
            let k: i64 = row.try_get(0).map_err(|e| CmdbError::Storage(format!("{table}: {e}")))?;
            found.insert(k as u64, V::bytes(&row, 1)?);
        }
        Ok(keys.iter().map(|k| found.remove(k)).collect())
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
        let row = pending::Row { key: kp, value_bytes: V::as_bytes(value).as_ref().to_vec(), value: vp };
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
