//! OFFERs held until their REQUEST. Most clients answer an OFFER within milliseconds, so the
//! OFFER's sighting and timeline event wait in memory and are written in the same job as the
//! ACK's lease: one machine lookup, one job and one commit per exchange instead of two. An OFFER
//! whose REQUEST does not come (the client took another server's offer, or gave up) is written on
//! its own after [`HOLD`], with the time it happened; so is one displaced by a newer OFFER to the
//! same MAC, or one that finds the table full. Nothing is lost at shutdown: [`HeldOffers::drain`]
//! hands back everything still held.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cmdb::{EventKind, Noted, Sighting};
use crate::mac::Mac;

/// How long an OFFER waits for its REQUEST before it is written on its own. Short, so a client
/// that only DISCOVERs still shows up in the CMDB within a second; long enough for the clients
/// that answer an OFFER at once (perfdhcp, udhcpc, dhclient, iPXE answer within milliseconds).
pub const HOLD: Duration = Duration::from_millis(500);
/// OFFERs held at most; past it a new one is written at once (a flood of DISCOVERs from random
/// MACs costs no more memory than this).
pub const CAP: usize = 16_384;

/// An OFFER not yet written: what the packet showed, and the event with its time.
#[derive(Debug)]
pub struct Held {
    pub sighting: Sighting,
    pub event: Noted,
    since: Instant,
}

/// The OFFERs waiting for their REQUEST, by client MAC.
#[derive(Debug, Default)]
pub struct HeldOffers {
    held: HashMap<Mac, Held>,
}

impl HeldOffers {
    /// Holds an OFFER made to `mac`. Returns what must be written now instead: the OFFER it
    /// displaced (an earlier one to the same MAC), or this one when the table is full.
    pub fn hold(&mut self, mac: Mac, sighting: Sighting, detail: serde_json::Value, at_ms: u64) -> Option<Held> {
        let held = Held { sighting, event: Noted { kind: EventKind::DhcpOffer, detail, at_ms }, since: Instant::now() };
        if self.held.len() >= CAP && !self.held.contains_key(&mac) {
            return Some(held);
        }
        self.held.insert(mac, held)
    }

    /// The OFFER held for `mac`, taken to be written with its ACK (or before another event of
    /// the same client, so the timeline stays in order).
    pub fn take(&mut self, mac: Mac) -> Option<Held> {
        self.held.remove(&mac)
    }

    /// The OFFERs held for at least [`HOLD`] as of `now`, taken.
    pub fn due(&mut self, now: Instant) -> Vec<Held> {
        let mut out = Vec::new();
        self.held.retain(|_, h| {
            let keep = now.duration_since(h.since) < HOLD;
            if !keep {
                out.push(Held { sighting: std::mem::take(&mut h.sighting), event: h.event.clone(), since: h.since });
            }
            keep
        });
        out.sort_by_key(|h| h.event.at_ms);
        out
    }

    /// Everything held, taken (at shutdown), oldest first.
    pub fn drain(&mut self) -> Vec<Held> {
        let mut out: Vec<Held> = self.held.drain().map(|(_, h)| h).collect();
        out.sort_by_key(|h| h.event.at_ms);
        out
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mac(n: u8) -> Mac {
        Mac([2, 0, 0, 0, 0, n])
    }

    fn sighting(n: u8) -> Sighting {
        Sighting { mac: Some(mac(n)), ..Default::default() }
    }

    #[test]
    fn an_offer_waits_for_its_request_and_is_taken_once() {
        let mut h = HeldOffers::default();
        assert!(h.hold(mac(1), sighting(1), json!({"ip": "198.18.0.10"}), 100).is_none());
        let taken = h.take(mac(1)).expect("held");
        assert_eq!((taken.event.kind, taken.event.at_ms), (EventKind::DhcpOffer, 100));
        assert_eq!(taken.event.detail["ip"], "198.18.0.10");
        assert!(h.take(mac(1)).is_none());
    }

    #[test]
    fn a_second_offer_to_the_same_mac_hands_back_the_first() {
        let mut h = HeldOffers::default();
        h.hold(mac(1), sighting(1), json!({"n": 1}), 100);
        let displaced = h.hold(mac(1), sighting(1), json!({"n": 2}), 200).expect("the first offer");
        assert_eq!(displaced.event.detail["n"], 1);
        assert_eq!(h.take(mac(1)).unwrap().event.detail["n"], 2);
    }

    #[test]
    fn offers_without_a_request_fall_due_after_the_hold_oldest_first() {
        let mut h = HeldOffers::default();
        h.hold(mac(2), sighting(2), json!({}), 200);
        h.hold(mac(1), sighting(1), json!({}), 100);
        assert!(h.due(Instant::now()).is_empty(), "nothing is due before the hold has passed");
        let due = h.due(Instant::now() + HOLD);
        assert_eq!(due.iter().map(|d| d.event.at_ms).collect::<Vec<_>>(), [100, 200]);
        assert_eq!(due[0].sighting.mac, Some(mac(1)));
        assert_eq!(h.len(), 0);
    }

    #[test]
    fn a_full_table_hands_the_new_offer_back_and_keeps_the_held_ones() {
        let mut h = HeldOffers::default();
        for i in 0..CAP {
            let m = Mac([2, 0, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
            assert!(h.hold(m, Sighting { mac: Some(m), ..Default::default() }, json!({}), 1).is_none());
        }
        let over = Mac([2, 9, 9, 9, 9, 9]);
        let back = h.hold(over, Sighting { mac: Some(over), ..Default::default() }, json!({}), 2);
        assert_eq!(back.expect("written at once").event.at_ms, 2);
        assert_eq!(h.len(), CAP);
        assert_eq!(h.drain().len(), CAP);
        assert_eq!(h.len(), 0);
    }
}
