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

/// Roles a user holds per pool. A user with any is **pool-scoped**: they act only on what
/// belongs to those pools, with those roles, and only through calls that know pools.
pub type Grants = std::collections::BTreeMap<String, crate::role::Role>;

/// Checks grants: pool names, and no `admin` (an admin is everyone's).
pub fn check_grants(g: &Grants) -> Result<(), String> {
    if g.len() > 256 {
        return Err("at most 256 pools per user".into());
    }
    for (pool, role) in g {
        check(pool)?;
        if *role == crate::role::Role::Admin {
            return Err(format!("pool {pool}: a pool grants viewer or operator; admin is global"));
        }
    }
    Ok(())
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
