//! Writes of a PostgreSQL transaction held until they are needed: a batch's inserts go to the
//! server as one `INSERT ... SELECT FROM unnest(...)` per table (at commit, or before a range,
//! a count or a removal reads that table), so a DHCP exchange's writes cost no round trip of
//! their own. Point reads look here first, so a batch reads its own writes.

use std::collections::HashMap;

use super::pg::Param;

/// Rows held per table before they are sent anyway (bounds memory on a large copy).
pub const FLUSH_AT: usize = 4096;

/// One held row: key bytes (redb encoding) -> key parameters, value bytes and parameters.
pub struct Row {
    pub key: Vec<Param>,
    pub value_bytes: Vec<u8>,
    pub value: Vec<Param>,
}

/// A table's held rows and its shape.
#[derive(Default)]
pub struct Held {
    pub key_width: usize,
    pub value_width: usize,
    pub rows: HashMap<Vec<u8>, Row>,
}

/// Every table's held rows.
#[derive(Default)]
pub struct Pending {
    pub tables: HashMap<&'static str, Held>,
}

impl Pending {
    /// Holds a row; returns whether the table has enough to be sent now.
    pub fn put(&mut self, table: &'static str, widths: (usize, usize), key_bytes: Vec<u8>, row: Row) -> bool {
        let held = self.tables.entry(table).or_insert_with(|| Held {
            key_width: widths.0,
            value_width: widths.1,
            ..Default::default()
        });
        held.rows.insert(key_bytes, row);
        held.rows.len() >= FLUSH_AT
    }

    /// The value held for `key_bytes`, if a row is.
    pub fn get(&self, table: &str, key_bytes: &[u8]) -> Option<&[u8]> {
        self.tables.get(table)?.rows.get(key_bytes).map(|r| r.value_bytes.as_slice())
    }

    /// Takes the held row for `key_bytes` (a removal goes to the server at once).
    pub fn take(&mut self, table: &str, key_bytes: &[u8]) -> Option<Row> {
        self.tables.get_mut(table)?.rows.remove(key_bytes)
    }

    /// Takes a table's held rows, to be sent.
    pub fn drain(&mut self, table: &str) -> Option<Held> {
        self.tables.remove(table).filter(|h| !h.rows.is_empty())
    }

    /// Takes every table's held rows.
    pub fn drain_all(&mut self) -> Vec<(&'static str, Held)> {
        self.tables.drain().filter(|(_, h)| !h.rows.is_empty()).collect()
    }
}

/// The statement that writes `held` into `table` (column types from the catalog: `types(col)`)
/// and its parameters, one array per column.
pub fn upsert(table: &str, held: Held, types: impl Fn(&str) -> String) -> (String, Vec<Vec<Param>>) {
    let keys: Vec<&str> = if held.key_width == 1 { vec!["k"] } else { vec!["k1", "k2"] };
    let mut cols = keys.clone();
    if held.value_width == 1 {
        cols.push("v");
    }
    let mut arrays: Vec<Vec<Param>> = vec![Vec::with_capacity(held.rows.len()); cols.len()];
    for row in held.rows.into_values() {
        for (i, p) in row.key.into_iter().chain(row.value).enumerate() {
            arrays[i].push(p);
        }
    }
    let unnest: Vec<String> = cols.iter().enumerate().map(|(i, c)| format!("${}::{}[]", i + 1, types(c))).collect();
    let conflict = if held.value_width == 1 {
        format!("ON CONFLICT ({}) DO UPDATE SET v = excluded.v", keys.join(", "))
    } else {
        "ON CONFLICT DO NOTHING".to_string()
    };
    let sql =
        format!("INSERT INTO {table} ({}) SELECT * FROM unnest({}) {conflict}", cols.join(", "), unnest.join(", "));
    (sql, arrays)
}
