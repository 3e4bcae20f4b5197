//! The login rate limiter: failed logins counted per username and per source address in a
//! fixed window; once a key reaches its limit, logins for it are refused (429) until the window
//! that began with its first failure ends. Nothing is locked for good, and memory is bounded.

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

    /// How long logins for `user` from `addr` are refused, if they are.
    pub fn blocked(&self, user: &str, addr: IpAddr, now: Instant) -> Option<Duration> {
        let keys = self.keys.lock().expect("limiter lock");
        let wait = |key: Key, limit: u32| {
            let w = keys.get(&key)?;
            let end = w.start + self.window;
            (w.failures >= limit && now < end).then(|| end - now)
        };
        let (u, a) = (wait(Key::User(user.to_string()), self.per_user), wait(Key::Addr(addr), self.per_addr));
        u.max(a)
    }

    /// Counts a failed login for `user` from `addr`.
    pub fn failed(&self, user: &str, addr: IpAddr, now: Instant) {
        let mut keys = self.keys.lock().expect("limiter lock");
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
    }

    /// Forgets `user`'s failures after a successful login (the address keeps its count, so one
    /// good password does not reset guessing at other accounts).
    pub fn succeeded(&self, user: &str) {
        self.keys.lock().expect("limiter lock").remove(&Key::User(user.to_string()));
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
            assert_eq!(l.blocked("bob", A, t), None, "failure {i}");
            l.failed("bob", A, t);
        }
        assert_eq!(l.blocked("bob", A, t + Duration::from_secs(10)), Some(Duration::from_secs(50)));
        assert_eq!(l.blocked("alice", A, t), None, "another user is not blocked by bob's failures");
        assert_eq!(l.blocked("bob", A, t + Duration::from_secs(60)), None, "not locked for good");
    }

    #[test]
    fn an_address_is_limited_across_usernames() {
        let l = Limiter::new(100, 4, Duration::from_secs(60));
        let t = Instant::now();
        for i in 0..4 {
            l.failed(&format!("user{i}"), A, t);
        }
        assert!(l.blocked("anyone", A, t).is_some());
        assert!(l.blocked("anyone", "198.18.0.9".parse().unwrap(), t).is_none());
    }

    #[test]
    fn memory_is_bounded() {
        let l = Limiter::new(5, 5, Duration::from_secs(60));
        let t = Instant::now();
        for i in 0..(MAX_KEYS + 500) {
            l.failed(&format!("u{i}"), A, t + Duration::from_micros(i as u64));
        }
        assert!(l.len() <= MAX_KEYS, "{}", l.len());
    }
}
