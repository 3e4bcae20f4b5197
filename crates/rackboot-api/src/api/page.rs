//! Cursor pagination shared by every list: `limit` is bounded, and a cursor is `<list>.<key>`
//! (`machines.42`: the page after machine 42). Only the list that made it accepts it, and any
//! value of its pattern is a position in that list (the document says the pattern), so a
//! cursor is never refused for what it says, only for its form.

use super::ApiError;

/// Reads an optional query string, treating an empty one (`?cursor=`) as absent.
pub fn empty_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s: Option<String> = serde::Deserialize::deserialize(d)?;
    Ok(s.filter(|s| !s.is_empty()))
}

/// The largest page any list returns.
pub const MAX_LIMIT: usize = 10_000;

/// The page size asked for, or `default`; refused outside 1..=[`MAX_LIMIT`].
pub fn limit(given: Option<usize>, default: usize) -> Result<usize, ApiError> {
    match given {
        None => Ok(default),
        Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::field("limit", format!("limit {n} is outside 1..={MAX_LIMIT}"))),
    }
}

/// Largest sequence number or Unix time accepted (what the document's int64 allows).
const MAX_INT: u64 = i64::MAX as u64;

/// A sequence number from the query, bounded like the document says (int64).
pub fn sequence(field: &str, v: Option<u64>) -> Result<Option<u64>, ApiError> {
    match v {
        Some(n) if n > MAX_INT => Err(ApiError::field(field, format!("{field} {n} is larger than {MAX_INT}"))),
        v => Ok(v),
    }
}

/// Unix seconds from the query: up to the year 9999.
pub fn seconds(field: &str, v: Option<u64>) -> Result<Option<u64>, ApiError> {
    match v {
        Some(n) if n > 253_402_300_799 => Err(ApiError::field(field, format!("{field} {n} is after the year 9999"))),
        v => Ok(v),
    }
}

/// The cursor of list `list` that continues at `key`.
pub fn cursor(list: &str, key: u64) -> String {
    format!("{list}.{key}")
}

/// The key a cursor of list `list` continues at: `<list>.` and 1-18 digits (the document's
/// pattern); a cursor of another list or another form is refused.
pub fn key(list: &str, cursor: Option<&str>) -> Result<Option<u64>, ApiError> {
    let Some(c) = cursor else { return Ok(None) };
    let digits = c.strip_prefix(list).and_then(|rest| rest.strip_prefix('.')).unwrap_or_default();
    if !(1..=18).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::field(
            "cursor",
            format!("cursor {c:?} is not {list}.<number> (a next_cursor of this list)"),
        ));
    }
    digits.parse().map(Some).map_err(|_| ApiError::field("cursor", "cursor out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_only_in_its_own_list() {
        let c = cursor("machines", 42);
        assert_eq!(key("machines", Some(&c)).unwrap(), Some(42));
        assert_eq!(key("jobs", Some(&c)).unwrap_err().field.as_deref(), Some("cursor"));
        assert_eq!(c, "machines.42");
        // Any number is a position, as the pattern says; anything else is refused.
        assert_eq!(key("machines", Some("machines.999999999999999999")).unwrap(), Some(999_999_999_999_999_999));
        for bad in ["zz", "machines.", "machines.1a", "machines.0000000000000000001", "machinesx1", "jobs.1"] {
            assert!(key("machines", Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(key("machines", None).unwrap(), None);
    }

    #[test]
    fn limits_are_bounded() {
        assert_eq!(limit(None, 100).unwrap(), 100);
        assert_eq!(limit(Some(MAX_LIMIT), 100).unwrap(), MAX_LIMIT);
        assert!(limit(Some(0), 100).is_err());
        assert!(limit(Some(MAX_LIMIT + 1), 100).is_err());
    }
}
