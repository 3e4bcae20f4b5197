//! Password hashing on a small pool of its own: a fixed number of threads and a bounded queue,
//! so a flood of logins costs at most `workers` argon2 hashes' memory at once and waits in a
//! queue of known length; past it a login is told to come back ([`Busy`]) instead of taking
//! the shared blocking pool (512 threads of 19 MiB each).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// Threads that hash; each holds one argon2id's memory (19 MiB) while it works.
pub const WORKERS: usize = 2;
/// Hashes that may wait for a thread; one more is refused.
pub const QUEUE: usize = 16;

type Work = Box<dyn FnOnce() + Send>;

/// The pool is full (or gone): the caller answers 503 with a Retry-After.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many logins are being checked; try again in a moment")]
pub struct Busy;

/// A cheap handle to the hashing threads; they end when the last handle is dropped.
#[derive(Clone)]
pub struct HashPool {
    tx: SyncSender<Work>,
}

impl HashPool {
    /// `workers` threads behind a queue of `queue`.
    pub fn new(workers: usize, queue: usize) -> HashPool {
        let (tx, rx) = sync_channel::<Work>(queue);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..workers.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("rackboot-hash-{i}"))
                .spawn(move || work(&rx))
                .expect("a password hashing thread starts");
        }
        HashPool { tx }
    }

    /// Runs `f` on the pool and returns its result; [`Busy`] at once when the queue is full.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, Busy> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Work = Box::new(move || {
            let _ = done.send(f());
        });
        match self.tx.try_send(job) {
            Ok(()) => result.await.map_err(|_| Busy),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => Err(Busy),
        }
    }
}

fn work(rx: &Mutex<Receiver<Work>>) {
    loop {
        // The lock is held only while taking the next job, not while hashing.
        let next = rx.lock().map(|r| r.recv());
        match next {
            Ok(Ok(job)) => job(),
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn at_most_workers_run_and_past_the_queue_is_busy() {
        let pool = HashPool::new(2, 3);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut calls = Vec::new();
        for _ in 0..10 {
            let (pool, running, most) = (pool.clone(), running.clone(), most.clone());
            calls.push(tokio::spawn(async move {
                pool.run(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(200));
                    running.fetch_sub(1, Ordering::SeqCst);
                })
                .await
            }));
        }
        let mut done = 0;
        let mut busy = 0;
        for c in calls {
            match c.await.unwrap() {
                Ok(()) => done += 1,
                Err(Busy) => busy += 1,
            }
        }
        assert_eq!(most.load(Ordering::SeqCst), 2, "two threads hash at once, no more");
        assert!((2..=5).contains(&done), "two running and three queued at most: {done}");
        assert_eq!(done + busy, 10);
        // Once drained, the pool takes work again.
        assert_eq!(pool.run(|| 7).await, Ok(7));
    }
}
