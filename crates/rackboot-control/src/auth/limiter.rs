//! The login rate limiter (and the agents' enrollment limiter, which counts every attempt per
//! boot MAC and source address): failed logins counted per username and per source address in a
//! fixed window; once a key reaches its limit, logins for it are refused (429) until the window
//! that began with its first failure ends. An attempt is counted as a failure before its
//! password is checked ([`Limiter::reserve`]) and handed back only if it succeeds, so logins
//! sent at once cannot all pass a check none of them has failed yet. Nothing is locked for good,
//! and memory is bounded.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys tracked at once; when full, expired windows go first, then the oldest.
pub const MAX_KEYS: usize = 10_000;

/// What a failure counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    User(String),
    Addr(IpAddr),
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

/// Failure counts per username and per address.
#[derive(Debug)]
pub struct Limiter {
    per_user: u32,
    per_addr: u32,
    window: Duration,
    keys: Mutex<HashMap<Key, Window>>,
}

impl Limiter {
    /// A limiter allowing `per_user` and `per_addr` failures per `window`.
    pub fn new(per_user: u32, per_addr: u32, window: Duration) -> Limiter {
        Limiter { per_user, per_addr, window, keys: Mutex::new(HashMap::new()) }
    }

    /// Reserves a login attempt for `user` from `addr`: counted as a failure now, before the
    /// password is checked. `Err` with how long logins for them are refused, if they are.
    pub fn reserve(&self, user: &str, addr: IpAddr, now: Instant) -> Result<(), Duration> {
        let mut keys = self.keys.lock().expect("limiter lock");
        let wait = |keys: &HashMap<Key, Window>, key: Key, limit: u32| {
            let w = keys.get(&key)?;
            let end = w.start + self.window;
            (w.failures >= limit && now < end).then(|| end - now)
        };
        let blocked =
            wait(&keys, Key::User(user.to_string()), self.per_user).max(wait(&keys, Key::Addr(addr), self.per_addr));
        if let Some(wait) = blocked {
            return Err(wait);
        }
        for key in [Key::User(user.to_string()), Key::Addr(addr)] {
            if !keys.contains_key(&key) && keys.len() >= MAX_KEYS {
                self.make_room(&mut keys, now);
            }
            let w = keys.entry(key).or_insert(Window { start: now, failures: 0 });
            if now >= w.start + self.window {
                *w = Window { start: now, failures: 0 };
            }
            w.failures = w.failures.saturating_add(1);
        }
        Ok(())
    }

    /// A reserved attempt succeeded: `user`'s failures are forgotten and the address gets its
    /// attempt back (it keeps its other failures, so one good password does not reset guessing
    /// at other accounts).
    pub fn succeeded(&self, user: &str, addr: IpAddr) {
        let mut keys = self.keys.lock().expect("limiter lock");
        keys.remove(&Key::User(user.to_string()));
        if let Some(w) = keys.get_mut(&Key::Addr(addr)) {
            w.failures = w.failures.saturating_sub(1);
        }
    }

    /// A reserved attempt that was never checked (no hashing thread was free): `user` gets it
    /// back; the address keeps it, so a flood from one address still reaches its limit.
    pub fn unreserve(&self, user: &str) {
        if let Some(w) = self.keys.lock().expect("limiter lock").get_mut(&Key::User(user.to_string())) {
            w.failures = w.failures.saturating_sub(1);
        }
    }

    /// Keys tracked now.
    pub fn len(&self) -> usize {
        self.keys.lock().expect("limiter lock").len()
    }

    /// Whether no key is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn make_room(&self, keys: &mut HashMap<Key, Window>, now: Instant) {
        keys.retain(|_, w| now < w.start + self.window);
        if keys.len() >= MAX_KEYS {
            if let Some(oldest) = keys.iter().min_by_key(|(_, w)| w.start).map(|(k, _)| k.clone()) {
                keys.remove(&oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn the_limit_bites_then_the_window_ends() {
        let l = Limiter::new(3, 100, Duration::from_secs(60));
        let t = Instant::now();
        for i in 0..3 {
            assert_eq!(l.reserve("bob", A, t), Ok(()), "attempt {i}");
        }
        assert_eq!(l.reserve("bob", A, t + Duration::from_secs(10)), Err(Duration::from_secs(50)));
        assert_eq!(l.reserve("alice", A, t), Ok(()), "another user is not blocked by bob's failures");
        assert_eq!(l.reserve("bob", A, t + Duration::from_secs(60)), Ok(()), "not locked for good");
    }

    #[test]
    fn attempts_at_once_get_the_limit_and_no_more() {
        let l = std::sync::Arc::new(Limiter::new(5, 100, Duration::from_secs(60)));
        let t = Instant::now();
        let threads: Vec<_> = (0..25)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || l.reserve("admin", A, t).is_ok())
            })
            .collect();
        let passed = threads.into_iter().map(|h| h.join().unwrap()).filter(|ok| *ok).count();
        assert_eq!(passed, 5);
    }

    #[test]
    fn a_success_gives_the_attempt_back() {
        let l = Limiter::new(2, 2, Duration::from_secs(60));
        let t = Instant::now();
        for _ in 0..10 {
            l.reserve("alice", A, t).unwrap();
            l.succeeded("alice", A);
        }
        assert_eq!(l.reserve("alice", A, t), Ok(()), "good logins never count against her or her address");
        l.reserve("bob", A, t).unwrap();
        assert!(l.reserve("carol", A, t).is_err(), "two failures from the address: it waits");
    }

    #[test]
    fn an_address_is_limited_across_usernames() {
        let l = Limiter::new(100, 4, Duration::from_secs(60));
        let t = Instant::now();
        for i in 0..4 {
            l.reserve(&format!("user{i}"), A, t).unwrap();
        }
        assert!(l.reserve("anyone", A, t).is_err());
        assert!(l.reserve("anyone", "198.18.0.9".parse().unwrap(), t).is_ok());
    }

    #[test]
    fn memory_is_bounded() {
        let l = Limiter::new(5, 5, Duration::from_secs(60));
        let t = Instant::now();
        for i in 0..(MAX_KEYS + 500) {
            let addr = IpAddr::V4(std::net::Ipv4Addr::from(i as u32));
            let _ = l.reserve(&format!("u{i}"), addr, t + Duration::from_micros(i as u64));
        }
        assert!(l.len() <= MAX_KEYS, "{}", l.len());
    }
}
