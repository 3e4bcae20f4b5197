//! Who gets a transfer slot. At most `max_total` transfers at once and `max_per_client` per
//! client address. A transfer is *unproven* until its client first acknowledges something; a
//! spoofed read request never is, since the answer goes to the forged address. When every slot
//! is taken, a new request evicts an unproven transfer instead of being refused (as a SYN cache
//! does), so a flood of forged requests from random addresses churns through the unproven
//! transfers while a real client, which acknowledges within milliseconds, gets a slot and keeps
//! it. Which one goes, in order: the oldest answered more than [`GRACE`] ago and still
//! unacknowledged (forged, most likely); else the oldest not answered within [`GRACE`] of its
//! request (its client has no transfer id to lose and asks again); else the oldest. A boot storm fills the slots with real clients
//! whose answers are still queued: evicting one that was just answered would strand its client
//! on a dead transfer id (the boot-storm simulator saw this). Only when every slot holds a
//! proven transfer is a request refused, silently: a PXE ROM gives up on an ERROR but asks
//! again when nothing comes.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// Why a request got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// This client already has `max_per_client` transfers.
    PerClient,
    /// Every slot holds a transfer whose client has acknowledged.
    Busy,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::PerClient => "per_client",
            Refusal::Busy => "busy",
        }
    }
}

pub struct Admission {
    max_total: usize,
    max_per_client: usize,
    /// [`GRACE`], shorter in tests.
    grace: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// Transfers holding a slot, evicted ones included until their task lets go.
    held: usize,
    /// Evicted transfers whose task has not let go yet: their slots are already given away.
    evicting: usize,
    per_client: HashMap<IpAddr, usize>,
    /// Unproven transfers, oldest first.
    unproven: VecDeque<Unproven>,
}

/// How long an answered transfer's client has to acknowledge before it may be evicted.
pub const GRACE: Duration = Duration::from_millis(250);

struct Unproven {
    id: u64,
    cancel: CancellationToken,
    admitted: Instant,
    /// When the first answer (OACK or DATA) went out.
    answered: Option<Instant>,
}

/// A slot, released on drop. `cancelled()` fires when the transfer is evicted.
pub struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    client: IpAddr,
    cancel: CancellationToken,
}

impl Admission {
    pub fn new(max_total: usize, max_per_client: usize) -> Arc<Admission> {
        Arc::new(Admission { max_total, max_per_client, grace: GRACE, state: Mutex::default() })
    }

    /// A slot for a transfer to `client`, and whether an unproven transfer was evicted for it.
    pub fn admit(self: &Arc<Self>, client: IpAddr) -> Result<(Ticket, bool), Refusal> {
        let mut s = self.state.lock().expect("tftp admission lock");
        if s.per_client.get(&client).copied().unwrap_or(0) >= self.max_per_client {
            return Err(Refusal::PerClient);
        }
        let mut evicted = false;
        if s.held - s.evicting >= self.max_total {
            let now = Instant::now();
            let late = |since: Option<Instant>| since.is_some_and(|at| now - at > self.grace);
            let stale = s.unproven.iter().position(|u| late(u.answered));
            let queued = || s.unproven.iter().position(|u| u.answered.is_none() && late(Some(u.admitted)));
            let victim = stale.or_else(queued).or((!s.unproven.is_empty()).then_some(0)).ok_or(Refusal::Busy)?;
            let gone = s.unproven.remove(victim).expect("position found above");
            gone.cancel.cancel();
            s.evicting += 1;
            evicted = true;
        }
        s.next_id += 1;
        let (id, cancel) = (s.next_id, CancellationToken::new());
        s.held += 1;
        *s.per_client.entry(client).or_insert(0) += 1;
        s.unproven.push_back(Unproven { id, cancel: cancel.clone(), admitted: Instant::now(), answered: None });
        Ok((Ticket { admission: self.clone(), id, client, cancel }, evicted))
    }

    /// Transfers holding a slot (evicted ones not counted).
    pub fn active(&self) -> usize {
        let s = self.state.lock().expect("tftp admission lock");
        s.held - s.evicting
    }
}

impl Ticket {
    /// The first answer is going out: from now the client has [`GRACE`] to acknowledge.
    pub fn answered(&self) {
        let mut s = self.admission.state.lock().expect("tftp admission lock");
        if let Some(u) = s.unproven.iter_mut().find(|u| u.id == self.id) {
            u.answered = Some(Instant::now());
        }
    }

    /// The client acknowledged: this transfer can no longer be evicted.
    pub fn proven(&self) {
        let mut s = self.admission.state.lock().expect("tftp admission lock");
        s.unproven.retain(|u| u.id != self.id);
    }

    /// Resolves when the transfer has been evicted for a newer request.
    pub async fn evicted(&self) {
        self.cancel.cancelled().await
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut s = self.admission.state.lock().expect("tftp admission lock");
        s.held -= 1;
        if self.cancel.is_cancelled() {
            s.evicting -= 1;
        } else {
            s.unproven.retain(|u| u.id != self.id);
        }
        if let Some(n) = s.per_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                s.per_client.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(std::net::Ipv4Addr::from(0xc612_0000 | n))
    }

    #[test]
    fn one_client_cannot_take_more_than_its_share() {
        let a = Admission::new(10, 2);
        let _t1 = a.admit(ip(1)).unwrap();
        let t2 = a.admit(ip(1)).unwrap();
        assert_eq!(a.admit(ip(1)).err(), Some(Refusal::PerClient));
        drop(t2);
        assert!(a.admit(ip(1)).is_ok(), "a finished transfer gives its share back");
    }

    fn quick(max_total: usize) -> Arc<Admission> {
        Arc::new(Admission { max_total, max_per_client: 4, grace: Duration::ZERO, state: Mutex::default() })
    }

    #[test]
    fn a_full_server_evicts_the_oldest_unproven_transfer_never_a_proven_one() {
        let a = quick(3);
        let (real, _) = a.admit(ip(100)).unwrap();
        real.proven();
        let (spoof1, _) = a.admit(ip(1)).unwrap();
        let (spoof2, _) = a.admit(ip(2)).unwrap();
        spoof1.answered();
        spoof2.answered();
        std::thread::sleep(Duration::from_millis(2));
        // Full: the next request evicts the oldest unproven one (spoof1), not the real client.
        let (spoof3, evicted) = a.admit(ip(3)).unwrap();
        assert!(evicted && spoof1.cancel.is_cancelled() && !real.cancel.is_cancelled());
        assert_eq!(a.active(), 3, "the evicted slot was handed over at once");
        drop(spoof1);
        assert_eq!(a.active(), 3);
        // A flood keeps churning through the unproven ones only.
        spoof3.answered();
        let (next, _) = a.admit(ip(4)).unwrap();
        assert!(spoof2.cancel.is_cancelled() && !real.cancel.is_cancelled());
        // Every slot proven: then, and only then, a request is refused.
        spoof3.proven();
        next.proven();
        drop(spoof2);
        assert_eq!(a.admit(ip(5)).err(), Some(Refusal::Busy));
        drop(real);
        assert!(a.admit(ip(5)).is_ok());
    }

    #[test]
    fn in_a_storm_a_just_answered_transfer_keeps_its_slot_and_a_long_queued_one_goes() {
        let a = Arc::new(Admission {
            max_total: 3,
            max_per_client: 4,
            grace: Duration::from_millis(50),
            state: Mutex::default(),
        });
        let (answered, _) = a.admit(ip(1)).unwrap();
        let (queued, _) = a.admit(ip(2)).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        // The oldest one's answer goes out only now (the server was busy): its client has just
        // locked onto its transfer id and is about to acknowledge.
        answered.answered();
        let (young, _) = a.admit(ip(3)).unwrap();
        // Full: the one whose answer never went out within the grace goes, not the older one.
        let (_fourth, evicted) = a.admit(ip(4)).unwrap();
        assert!(evicted && queued.cancel.is_cancelled());
        assert!(!answered.cancel.is_cancelled() && !young.cancel.is_cancelled());
        // Once its grace is over unacknowledged, it is the first to go.
        std::thread::sleep(Duration::from_millis(60));
        let _fifth = a.admit(ip(5)).unwrap();
        assert!(answered.cancel.is_cancelled() && !young.cancel.is_cancelled());
    }
}
