//! Resource pools: every machine and rack belongs to one (`default` unless said). A rack's pool
//! is its machines' at placement; otherwise only an admin moves a machine to another pool.

/// The pool of everything no one put elsewhere.
pub const DEFAULT: &str = "default";

/// [`DEFAULT`], for serde's `default =`.
pub fn default_pool() -> String {
    DEFAULT.into()
}

/// A pool's name: a lowercase DNS label of at most 32 characters.
pub fn check(name: &str) -> Result<(), String> {
    let ok = (1..=32).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!("pool {name:?} must be a lowercase DNS label of 1 to 32 characters (a-z, 0-9, -)"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pool_names_are_labels() {
        for ok in ["default", "team-a", "x1"] {
            assert_eq!(super::check(ok), Ok(()), "{ok}");
        }
        for bad in ["", "Team", "-a", "a-", "a b", "a.b", &"a".repeat(33)] {
            assert!(super::check(bad).is_err(), "{bad:?}");
        }
    }
}
