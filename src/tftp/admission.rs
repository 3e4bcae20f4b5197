//! Who gets a transfer slot. At most `max_total` transfers at once and `max_per_client` per
//! client address. A transfer is *unproven* until its client first acknowledges something; a
//! spoofed read request never is, since the answer goes to the forged address. When every slot
//! is taken, a new request evicts the oldest unproven transfer instead of being refused (as a
//! SYN cache does), so a flood of forged requests from random addresses churns through the
//! unproven transfers while a real client, which acknowledges within milliseconds, gets a slot
//! and keeps it. Only when every slot holds a proven transfer is a request refused.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

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
    unproven: VecDeque<(u64, CancellationToken)>,
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
        Arc::new(Admission { max_total, max_per_client, state: Mutex::default() })
    }

    /// A slot for a transfer to `client`, and whether an unproven transfer was evicted for it.
    pub fn admit(self: &Arc<Self>, client: IpAddr) -> Result<(Ticket, bool), Refusal> {
        let mut s = self.state.lock().expect("tftp admission lock");
        if s.per_client.get(&client).copied().unwrap_or(0) >= self.max_per_client {
            return Err(Refusal::PerClient);
        }
        let mut evicted = false;
        if s.held - s.evicting >= self.max_total {
            let (_, oldest) = s.unproven.pop_front().ok_or(Refusal::Busy)?;
            oldest.cancel();
            s.evicting += 1;
            evicted = true;
        }
        s.next_id += 1;
        let (id, cancel) = (s.next_id, CancellationToken::new());
        s.held += 1;
        *s.per_client.entry(client).or_insert(0) += 1;
        s.unproven.push_back((id, cancel.clone()));
        Ok((Ticket { admission: self.clone(), id, client, cancel }, evicted))
    }

    /// Transfers holding a slot (evicted ones not counted).
    pub fn active(&self) -> usize {
        let s = self.state.lock().expect("tftp admission lock");
        s.held - s.evicting
    }
}

impl Ticket {
    /// The client acknowledged: this transfer can no longer be evicted.
    pub fn proven(&self) {
        let mut s = self.admission.state.lock().expect("tftp admission lock");
        s.unproven.retain(|(id, _)| *id != self.id);
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
            s.unproven.retain(|(id, _)| *id != self.id);
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

    #[test]
    fn a_full_server_evicts_the_oldest_unproven_transfer_never_a_proven_one() {
        let a = Admission::new(3, 4);
        let (real, _) = a.admit(ip(100)).unwrap();
        real.proven();
        let (spoof1, _) = a.admit(ip(1)).unwrap();
        let (spoof2, _) = a.admit(ip(2)).unwrap();
        // Full: the next request evicts the oldest unproven one (spoof1), not the real client.
        let (spoof3, evicted) = a.admit(ip(3)).unwrap();
        assert!(evicted && spoof1.cancel.is_cancelled() && !real.cancel.is_cancelled());
        assert_eq!(a.active(), 3, "the evicted slot was handed over at once");
        drop(spoof1);
        assert_eq!(a.active(), 3);
        // A flood keeps churning through the unproven ones only.
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
}
