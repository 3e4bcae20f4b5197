//! The storage contract under the CMDB: ordered tables of typed keys and values, read in
//! snapshot transactions and written in one write transaction per writer batch. Two backends
//! keep it: the embedded redb file (the default) and PostgreSQL (`pg`), where each table is a
//! SQL table of the same name (see `migrations/postgres` in this crate).
//!
//! The API follows redb's, so the CMDB's modules read the same whichever backend is open:
//! `tx.open_table(DEF)?`, then `get`, `insert`, `remove`, `range`, `iter`, `retain`, ...

pub mod pending;
pub mod pg;

use std::borrow::Borrow;
use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::sync::Arc;

use redb::{Key, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition, TableHandle, Value};

pub use pg::{PgCols, PgConfig};

/// Errors a caller can branch on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CmdbError {
    #[error("not found: {0}")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("invalid: {0}")]
    Invalid(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("storage: {0}")]
    Storage(String),
    /// The data disk is full or failing: writes are refused until it recovers (503).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
}

macro_rules! storage_from {
    ($($t:ty),*) => {$(
        impl From<$t> for CmdbError {
            fn from(e: $t) -> Self {
                // An I/O failure (disk full) faults the storage until the file is reopened;
                // anything else is a plain storage error.
                match redb::Error::from(e) {
                    e @ (redb::Error::Io(_) | redb::Error::PreviousIo) => CmdbError::Unavailable(e.to_string()),
                    e => CmdbError::Storage(e.to_string()),
                }
            }
        }
    )*};
}
storage_from!(
    redb::Error,
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError,
    redb::DatabaseError
);

/// A table: its name and key and value types. Both backends use the name.
pub struct Def<K: Key + 'static, V: Value + 'static> {
    pub redb: TableDefinition<'static, K, V>,
    pub name: &'static str,
}

impl<K: Key + 'static, V: Value + 'static> Def<K, V> {
    pub const fn new(name: &'static str) -> Self {
        Def { redb: TableDefinition::new(name), name }
    }
}

impl<K: Key + 'static, V: Value + 'static> Clone for Def<K, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K: Key + 'static, V: Value + 'static> Copy for Def<K, V> {}

/// An open store.
#[derive(Clone)]
pub enum Db {
    Redb(Arc<redb::Database>),
    Pg(Arc<pg::Pg>),
}

impl Db {
    /// An open redb file (the store creates it and brings its schema up to date).
    pub fn redb(db: redb::Database) -> Db {
        Db::Redb(Arc::new(db))
    }

    /// The PostgreSQL store (its schema brought up to date). Not from an async context.
    pub fn open_postgres(cfg: &PgConfig) -> Result<Db, CmdbError> {
        Ok(Db::Pg(pg::Pg::connect(cfg)?))
    }

    /// A snapshot to read from.
    pub fn begin_read(&self) -> Result<ReadTx, CmdbError> {
        Ok(match self {
            Db::Redb(db) => ReadTx::Redb(db.begin_read()?),
            Db::Pg(pg) => ReadTx::Pg(pg.begin(true)?),
        })
    }

    /// The transaction a writer batch runs in.
    pub fn begin_write(&self) -> Result<WriteTx, CmdbError> {
        Ok(match self {
            Db::Redb(db) => WriteTx::Redb(db.begin_write()?),
            Db::Pg(pg) => WriteTx::Pg(pg.begin(false)?),
        })
    }

    /// Whether other appliances may write the same store (PostgreSQL).
    pub fn shared(&self) -> bool {
        matches!(self, Db::Pg(_))
    }
}

/// A read snapshot.
pub enum ReadTx {
    Redb(redb::ReadTransaction),
    Pg(pg::PgTx),
}

impl ReadTx {
    pub fn open_table<K: PgCols + Key, V: PgCols>(&self, def: Def<K, V>) -> Result<Table<'_, K, V>, CmdbError> {
        Ok(Table(match self {
            ReadTx::Redb(tx) => Inner::Read(tx.open_table(def.redb)?),
            ReadTx::Pg(tx) => Inner::Pg(tx, def.name, PhantomData),
        }))
    }

    /// The table, or `None` where this (older) redb file has never had it.
    pub fn open_table_if_any<K: PgCols + Key, V: PgCols>(
        &self,
        def: Def<K, V>,
    ) -> Result<Option<Table<'_, K, V>>, CmdbError> {
        match self.open_table(def) {
            Ok(t) => Ok(Some(t)),
            Err(_) if matches!(self, ReadTx::Redb(tx) if tx.list_tables().is_ok_and(|mut l| !l.any(|t| t.name() == def.name))) => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// The write transaction of one writer batch.
// One lives at a time, on the writer thread's stack: its size costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum WriteTx {
    Redb(redb::WriteTransaction),
    Pg(pg::PgTx),
}

impl WriteTx {
    pub fn open_table<K: PgCols + Key, V: PgCols>(&self, def: Def<K, V>) -> Result<Table<'_, K, V>, CmdbError> {
        Ok(Table(match self {
            WriteTx::Redb(tx) => Inner::Write(tx.open_table(def.redb)?),
            WriteTx::Pg(tx) => Inner::Pg(tx, def.name, PhantomData),
        }))
    }

    /// On a shared store, waits for every other appliance's batch to commit and keeps them
    /// waiting until this one has: write batches are serialized across the estate, so ids and
    /// event sequences follow commit order. A no-op on the embedded file (one writer).
    pub fn serialize(&self) -> Result<(), CmdbError> {
        match self {
            WriteTx::Redb(_) => Ok(()),
            WriteTx::Pg(tx) => tx.lock_writers(),
        }
    }

    /// Whether other appliances may write the same store (PostgreSQL).
    pub fn shared(&self) -> bool {
        matches!(self, WriteTx::Pg(_))
    }

    /// On a shared store, logs what the batch changed for the other appliances; the entry's
    /// sequence.
    pub fn log_change(&self, change: &pg::Change) -> Result<Option<u64>, CmdbError> {
        match self {
            WriteTx::Redb(_) => Ok(None),
            WriteTx::Pg(tx) => tx.log_change(change).map(Some),
        }
    }

    pub fn commit(self) -> Result<(), CmdbError> {
        match self {
            WriteTx::Redb(tx) => Ok(tx.commit()?),
            WriteTx::Pg(tx) => tx.commit(),
        }
    }
}

/// A stored key or value, as the backend handed it out.
pub enum Guard<'a, V: Value + 'static> {
    Redb(redb::AccessGuard<'a, V>),
    Owned(Vec<u8>, PhantomData<V>),
}

impl<V: Value + 'static> Guard<'_, V> {
    pub fn value(&self) -> V::SelfType<'_> {
        match self {
            Guard::Redb(g) => g.value(),
            Guard::Owned(bytes, _) => V::from_bytes(bytes),
        }
    }
}

type Row<'a, K, V> = (Guard<'a, K>, Guard<'a, V>);

/// An open table of a read or write transaction.
pub struct Table<'t, K: Key + 'static, V: Value + 'static>(Inner<'t, K, V>);

enum Inner<'t, K: Key + 'static, V: Value + 'static> {
    Write(redb::Table<'t, K, V>),
    Read(redb::ReadOnlyTable<K, V>),
    Pg(&'t pg::PgTx, &'static str, PhantomData<(K, V)>),
}

/// Dispatches a read to the redb table, whichever kind is open.
macro_rules! redb_read {
    ($self:expr, $t:ident => $e:expr, $pg:pat => $p:expr) => {
        match &$self.0 {
            Inner::Write($t) => $e,
            Inner::Read($t) => $e,
            $pg => $p,
        }
    };
}

fn encode<K: Value + 'static>(k: &K::SelfType<'_>) -> Vec<u8> {
    K::as_bytes(k).as_ref().to_vec()
}

fn owned_bound<'k, K: Key + 'static, KR: Borrow<K::SelfType<'k>>>(b: std::ops::Bound<&KR>) -> std::ops::Bound<Vec<u8>> {
    match b {
        std::ops::Bound::Included(k) => std::ops::Bound::Included(encode::<K>(k.borrow())),
        std::ops::Bound::Excluded(k) => std::ops::Bound::Excluded(encode::<K>(k.borrow())),
        std::ops::Bound::Unbounded => std::ops::Bound::Unbounded,
    }
}

impl<'t, V: PgCols> Table<'t, u64, V> {
    /// The values under `keys`, in their order (`None` for a key not there): on PostgreSQL one
    /// statement for all of them, on the embedded store a point read each.
    pub fn get_many(&self, keys: &[u64]) -> Result<Vec<Option<Guard<'_, V>>>, CmdbError> {
        match &self.0 {
            Inner::Pg(tx, name, _) => {
                Ok(tx.get_many::<V>(name, keys)?.into_iter().map(|v| v.map(|v| Guard::Owned(v, PhantomData))).collect())
            }
            _ => keys.iter().map(|k| self.get(k)).collect(),
        }
    }
}

impl<'t, K: PgCols + Key, V: PgCols> Table<'t, K, V> {
    pub fn get<'k>(&self, key: impl Borrow<K::SelfType<'k>>) -> Result<Option<Guard<'_, V>>, CmdbError> {
        redb_read!(self, t => Ok(t.get(key)?.map(Guard::Redb)),
            Inner::Pg(tx, name, _) => Ok(tx.get::<K, V>(name, key.borrow())?.map(|v| Guard::Owned(v, PhantomData))))
    }

    /// Stores `value` under `key`, replacing what was there.
    pub fn insert<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<(), CmdbError> {
        match &mut self.0 {
            Inner::Write(t) => {
                t.insert(key, value)?;
                Ok(())
            }
            Inner::Read(_) => Err(read_only()),
            Inner::Pg(tx, name, _) => tx.insert::<K, V>(name, key.borrow(), value.borrow()),
        }
    }

    /// Removes `key`; its value if it had one.
    pub fn remove<'k>(&mut self, key: impl Borrow<K::SelfType<'k>>) -> Result<Option<Guard<'_, V>>, CmdbError> {
        match &mut self.0 {
            Inner::Write(t) => Ok(t.remove(key)?.map(Guard::Redb)),
            Inner::Read(_) => Err(read_only()),
            Inner::Pg(tx, name, _) => Ok(tx.remove::<K, V>(name, key.borrow())?.map(|v| Guard::Owned(v, PhantomData))),
        }
    }

    /// The rows with keys in `range`, in key order (either end first).
    pub fn range<'k, KR>(&self, range: impl RangeBounds<KR> + 'k) -> Result<Range<'_, K, V>, CmdbError>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        redb_read!(self, t => Ok(Range::Redb(t.range(range)?)),
        Inner::Pg(tx, name, _) => Ok(Range::Pg(pg::PgRange::new(
            tx,
            name,
            owned_bound::<K, KR>(range.start_bound()),
            owned_bound::<K, KR>(range.end_bound()),
        ))))
    }

    /// Every row, in key order.
    pub fn iter(&self) -> Result<Range<'_, K, V>, CmdbError> {
        redb_read!(self, t => Ok(Range::Redb(t.iter()?)),
            Inner::Pg(tx, name, _) => Ok(Range::Pg(pg::PgRange::new(tx, name, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded))))
    }

    pub fn first(&self) -> Result<Option<Row<'_, K, V>>, CmdbError> {
        self.iter()?.next().transpose()
    }

    pub fn last(&self) -> Result<Option<Row<'_, K, V>>, CmdbError> {
        self.iter()?.next_back().transpose()
    }

    pub fn len(&self) -> Result<u64, CmdbError> {
        redb_read!(self, t => Ok(t.len()?), Inner::Pg(tx, name, _) => tx.count(name))
    }

    pub fn is_empty(&self) -> Result<bool, CmdbError> {
        Ok(self.first()?.is_none())
    }

    /// Removes and returns the first row.
    pub fn pop_first(&mut self) -> Result<Option<Row<'static, K, V>>, CmdbError> {
        let Some((k, v)) = self.first()?.map(|(k, v)| (encode::<K>(&k.value()), encode::<V>(&v.value()))) else {
            return Ok(None);
        };
        self.remove(K::from_bytes(&k))?;
        Ok(Some((Guard::Owned(k, PhantomData), Guard::Owned(v, PhantomData))))
    }

    /// Keeps the rows `keep` says yes to; removes the others.
    pub fn retain<F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool>(
        &mut self,
        keep: F,
    ) -> Result<(), CmdbError> {
        self.retain_in::<K::SelfType<'_>, F>(.., keep)
    }

    /// [`Self::retain`] over the rows with keys in `range`.
    pub fn retain_in<'k, KR, F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool>(
        &mut self,
        range: impl RangeBounds<KR> + 'k,
        mut keep: F,
    ) -> Result<(), CmdbError>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        if let Inner::Write(t) = &mut self.0 {
            return Ok(t.retain_in(range, keep)?);
        }
        let mut doomed = Vec::new();
        for row in self.range(range)? {
            let (k, v) = row?;
            if !keep(k.value(), v.value()) {
                doomed.push(encode::<K>(&k.value()));
            }
        }
        for k in doomed {
            self.remove(K::from_bytes(&k))?;
        }
        Ok(())
    }
}

fn read_only() -> CmdbError {
    CmdbError::Storage("write to a table of a read transaction".into())
}

/// Rows of a table in key order.
pub enum Range<'a, K: Key + 'static, V: Value + 'static> {
    Redb(redb::Range<'a, K, V>),
    Pg(pg::PgRange<'a, K, V>),
}

impl<'a, K: PgCols + Key, V: PgCols> Iterator for Range<'a, K, V> {
    type Item = Result<Row<'a, K, V>, CmdbError>;
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Range::Redb(r) => {
                r.next().map(|row| row.map(|(k, v)| (Guard::Redb(k), Guard::Redb(v))).map_err(Into::into))
            }
            Range::Pg(r) => r.next(),
        }
    }
}

impl<K: PgCols + Key, V: PgCols> DoubleEndedIterator for Range<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Range::Redb(r) => {
                r.next_back().map(|row| row.map(|(k, v)| (Guard::Redb(k), Guard::Redb(v))).map_err(Into::into))
            }
            Range::Pg(r) => r.next_back(),
        }
    }
}
