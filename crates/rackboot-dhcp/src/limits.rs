//! Per-port and per-relay client limits: how many different MACs behind one switch port (a
//! relayed request's option 82 circuit and remote id) or one relay agent (giaddr) may hold a
//! pool address at once. A flood of invented MACs from one port, even one that completes the
//! DORA, then takes at most that many addresses; the rest of the pool stays leasable for every
//! other port and relay. Pure and in memory: a hold is recorded with the offer or lease it
//! stands for and lapses with it. Machines with a reserved address take nothing from the pool
//! and are not counted.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use rackboot_model::mac::Mac;

/// Where a request came from, as far as DHCP can tell.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Source {
    /// The relay agent (giaddr); `None` for a client on the appliance's own segment.
    pub relay: Option<Ipv4Addr>,
    /// The switch port: option 82 circuit id and remote id (hex), when the relay sent them.
    pub port: Option<(String, String)>,
}

/// Why a new client was refused an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Limited {
    #[error("its switch port already has the most clients allowed (dhcp.max_clients_per_port)")]
    Port,
    #[error("its relay agent already has the most clients allowed (dhcp.max_clients_per_relay)")]
    Relay,
}

impl Source {
    /// Where `req` came from: its giaddr and option 82.
    pub fn of(req: &super::packet::Request) -> Source {
        let giaddr = req.msg.giaddr();
        Source {
            relay: (!giaddr.is_unspecified()).then_some(giaddr),
            port: req.circuit_id.clone().map(|c| (c, req.remote_id.clone().unwrap_or_default())),
        }
    }
}

impl Limited {
    /// The metric label of the drop.
    pub fn label(self) -> &'static str {
        match self {
            Limited::Port => "port_limit",
            Limited::Relay => "relay_limit",
        }
    }
}

/// MACs holding an address, with when each hold lapses (unix seconds).
type Holders = HashMap<Mac, u64>;

/// The limits and who holds what, per port and per relay. A limit of 0 is no limit.
#[derive(Debug, Default)]
pub struct Limits {
    per_port: usize,
    per_relay: usize,
    ports: HashMap<(Ipv4Addr, String, String), Holders>,
    relays: HashMap<Ipv4Addr, Holders>,
}

impl Limits {
    pub fn new(per_port: usize, per_relay: usize) -> Limits {
        Limits { per_port, per_relay, ..Limits::default() }
    }

    /// Whether `mac` from `src` may be given a pool address at `now`: it holds one through this
    /// port and relay already, or both have room.
    pub fn admit(&mut self, src: &Source, mac: Mac, now: u64) -> Result<(), Limited> {
        let Some(relay) = src.relay else { return Ok(()) };
        if let Some((circuit, remote)) = &src.port {
            let key = (relay, circuit.clone(), remote.clone());
            if !room(self.ports.get_mut(&key), self.per_port, mac, now) {
                return Err(Limited::Port);
            }
        }
        if !room(self.relays.get_mut(&relay), self.per_relay, mac, now) {
            return Err(Limited::Relay);
        }
        Ok(())
    }

    /// Records that `mac` from `src` holds an address until `until` (an offer or a lease).
    pub fn hold(&mut self, src: &Source, mac: Mac, until: u64) {
        let Some(relay) = src.relay else { return };
        if let Some((circuit, remote)) = &src.port {
            if self.per_port > 0 {
                self.ports.entry((relay, circuit.clone(), remote.clone())).or_default().insert(mac, until);
            }
        }
        if self.per_relay > 0 {
            self.relays.entry(relay).or_default().insert(mac, until);
        }
    }

    /// `mac` gave its address back (RELEASE, DECLINE).
    pub fn release(&mut self, src: &Source, mac: Mac) {
        let Some(relay) = src.relay else { return };
        if let Some((circuit, remote)) = &src.port {
            if let Some(h) = self.ports.get_mut(&(relay, circuit.clone(), remote.clone())) {
                h.remove(&mac);
            }
        }
        if let Some(h) = self.relays.get_mut(&relay) {
            h.remove(&mac);
        }
    }

    /// Forgets lapsed holds and empty ports (the periodic tick), so the tables hold at most the
    /// clients with a live offer or lease.
    pub fn prune(&mut self, now: u64) {
        for holders in self.ports.values_mut().chain(self.relays.values_mut()) {
            holders.retain(|_, until| *until > now);
        }
        self.ports.retain(|_, h| !h.is_empty());
        self.relays.retain(|_, h| !h.is_empty());
    }
}

/// Whether `holders` has room for `mac` under `limit`, lapsed holds dropped first when full.
fn room(holders: Option<&mut Holders>, limit: usize, mac: Mac, now: u64) -> bool {
    let Some(holders) = holders else { return true };
    if limit == 0 || holders.get(&mac).is_some_and(|until| *until > now) {
        return true;
    }
    if holders.len() >= limit {
        holders.retain(|_, until| *until > now);
    }
    holders.len() < limit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(n: u32) -> Mac {
        let b = n.to_be_bytes();
        Mac::from_slice(&[0x52, 0x54, b[0], b[1], b[2], b[3]]).unwrap()
    }

    fn port(relay: [u8; 4], circuit: &str) -> Source {
        Source { relay: Some(Ipv4Addr::from(relay)), port: Some((circuit.into(), "leaf".into())) }
    }

    #[test]
    fn one_port_gets_its_share_and_no_more_while_others_carry_on() {
        let mut l = Limits::new(4, 0);
        let flood = port([198, 18, 1, 1], "eth7");
        for n in 0..4 {
            assert_eq!(l.admit(&flood, mac(n), 100), Ok(()));
            l.hold(&flood, mac(n), 110);
        }
        assert_eq!(l.admit(&flood, mac(99), 100), Err(Limited::Port));
        // A holder asking again (its REQUEST, a renewal) is not a new client.
        assert_eq!(l.admit(&flood, mac(2), 105), Ok(()));
        // Another port on the same relay, and a client on the appliance's own segment.
        assert_eq!(l.admit(&port([198, 18, 1, 1], "eth8"), mac(99), 100), Ok(()));
        assert_eq!(l.admit(&Source { relay: None, port: None }, mac(99), 100), Ok(()));
        // Holds lapse with their offers; a release frees its place at once.
        assert_eq!(l.admit(&flood, mac(99), 110), Ok(()));
        l.hold(&flood, mac(0), 200);
        l.hold(&flood, mac(1), 200);
        l.hold(&flood, mac(2), 200);
        l.hold(&flood, mac(3), 200);
        assert_eq!(l.admit(&flood, mac(99), 150), Err(Limited::Port));
        l.release(&flood, mac(3));
        assert_eq!(l.admit(&flood, mac(99), 150), Ok(()));
    }

    #[test]
    fn a_relay_limit_counts_every_port_behind_it() {
        let mut l = Limits::new(0, 3);
        for n in 0..3 {
            let src = port([198, 18, 2, 1], &format!("eth{n}"));
            assert_eq!(l.admit(&src, mac(n), 0), Ok(()));
            l.hold(&src, mac(n), 60);
        }
        assert_eq!(l.admit(&port([198, 18, 2, 1], "eth9"), mac(9), 0), Err(Limited::Relay));
        assert_eq!(l.admit(&port([198, 18, 3, 1], "eth9"), mac(9), 0), Ok(()));
        l.prune(60);
        assert!(l.relays.is_empty() && l.ports.is_empty());
    }

    #[test]
    fn zero_is_no_limit_and_keeps_no_table() {
        let mut l = Limits::new(0, 0);
        let src = port([198, 18, 1, 1], "eth1");
        for n in 0..1000 {
            assert_eq!(l.admit(&src, mac(n), 0), Ok(()));
            l.hold(&src, mac(n), 60);
        }
        assert!(l.ports.is_empty() && l.relays.is_empty());
    }
}
