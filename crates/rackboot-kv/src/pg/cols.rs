//! How keys and values map to SQL columns and statement parameters, and back to redb's byte
//! encoding, so a reader cannot tell which backend a row came from.

use bytes::BufMut;
use redb::Value;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};
use tokio_postgres::Row;

use crate::CmdbError;

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
/// [`Guard`](crate::Guard) reads the same from either backend.
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
