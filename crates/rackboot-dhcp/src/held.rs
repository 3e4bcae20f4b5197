//! OFFERs held until their REQUEST. Most clients answer an OFFER within milliseconds, so the
//! OFFER's sighting and timeline event wait in memory and are written in the same job as the
//! ACK's lease: one machine lookup and one writer job per exchange instead of two. An OFFER whose
//! REQUEST does not come (the client took another server's offer, or gave up) is written on its
//! own once [`HOLD`] has passed (the DHCP loop looks every quarter of it); so is one displaced by
//! a newer OFFER to the same MAC, or one that finds the table full. Nothing is lost at shutdown:
//! [`HeldOffers::drain`] hands back everything still held.
//!
//! Only OFFERs whose sighting cannot change where the machine stands are held: with racks defined,
//! a new machine's first sighting may place it in a slot (hostname, address, the rack's UEFI
//! loader), and its REQUEST must find it placed, so that OFFER is written at once as before.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rackboot_model::mac::Mac;
use rackboot_store::{EventKind, Sighting};

/// How long an OFFER waits for its REQUEST before it is written on its own. Short, so a client
/// that only DISCOVERs still shows up in the CMDB within a second; long enough for the clients
/// that answer an OFFER at once (perfdhcp, udhcpc, dhclient, iPXE answer within milliseconds).
pub const HOLD: Duration = Duration::from_millis(500);
/// OFFERs held at most; past it a new one is written at once (a flood of DISCOVERs from random
/// MACs costs no more memory than this).
pub const CAP: usize = 16_384;

/// An OFFER not yet written: what the packet showed, and its event's detail.
#[derive(Debug)]
pub struct Held {
    pub sighting: Sighting,
    pub detail: serde_json::Value,
    since: Instant,
}

impl Held {
    /// The sighting and the OFFER's timeline event, to be written.
    pub fn into_record(self) -> (Sighting, (EventKind, serde_json::Value)) {
        (self.sighting, (EventKind::DhcpOffer, self.detail))
    }
}

/// The OFFERs waiting for their REQUEST, by client MAC.
#[derive(Debug, Default)]
pub struct HeldOffers {
    held: HashMap<Mac, Held>,
}

impl HeldOffers {
    /// Holds an OFFER made to `mac`. Returns what must be written now instead: the OFFER it
    /// displaced (an earlier one to the same MAC), or this one when the table is full.
    pub fn hold(&mut self, mac: Mac, sighting: Sighting, detail: serde_json::Value) -> Option<Held> {
        let held = Held { sighting, detail, since: Instant::now() };
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
        let mut out: Vec<Held> =
            self.held.extract_if(|_, h| now.duration_since(h.since) >= HOLD).map(|(_, h)| h).collect();
        out.sort_by_key(|h| h.since);
        out
    }

    /// Everything held, taken (at shutdown), oldest first.
    pub fn drain(&mut self) -> Vec<Held> {
        let mut out: Vec<Held> = self.held.drain().map(|(_, h)| h).collect();
        out.sort_by_key(|h| h.since);
        out
    }

    /// Puts back an OFFER taken for an ACK that could not be queued, to be written on its own.
    pub fn put_back(&mut self, mac: Mac, held: Held) {
        self.held.entry(mac).or_insert(held);
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
        assert!(h.hold(mac(1), sighting(1), json!({"ip": "198.18.0.10"})).is_none());
        let taken = h.take(mac(1)).expect("held");
        assert_eq!(taken.detail["ip"], "198.18.0.10");
        assert!(h.take(mac(1)).is_none());
        // An ACK that could not be queued puts it back, to be written on its own.
        h.put_back(mac(1), taken);
        assert_eq!(h.due(Instant::now() + HOLD).len(), 1);
    }

    #[test]
    fn a_second_offer_to_the_same_mac_hands_back_the_first() {
        let mut h = HeldOffers::default();
        h.hold(mac(1), sighting(1), json!({"n": 1}));
        let displaced = h.hold(mac(1), sighting(1), json!({"n": 2})).expect("the first offer");
        assert_eq!(displaced.detail["n"], 1);
        assert_eq!(h.take(mac(1)).unwrap().detail["n"], 2);
    }

    #[test]
    fn offers_without_a_request_fall_due_after_the_hold_oldest_first() {
        let mut h = HeldOffers::default();
        h.hold(mac(2), sighting(2), json!({}));
        std::thread::sleep(Duration::from_millis(2));
        h.hold(mac(1), sighting(1), json!({}));
        assert!(h.due(Instant::now()).is_empty(), "nothing is due before the hold has passed");
        let due = h.due(Instant::now() + HOLD);
        assert_eq!(due.iter().map(|d| d.sighting.mac).collect::<Vec<_>>(), [Some(mac(2)), Some(mac(1))]);
        assert_eq!(h.len(), 0);
    }

    #[test]
    fn a_full_table_hands_the_new_offer_back_and_keeps_the_held_ones() {
        let mut h = HeldOffers::default();
        for i in 0..CAP {
            let m = Mac([2, 0, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
            assert!(h.hold(m, Sighting { mac: Some(m), ..Default::default() }, json!({})).is_none());
        }
        let over = Mac([2, 9, 9, 9, 9, 9]);
        let back = h.hold(over, Sighting { mac: Some(over), ..Default::default() }, json!({"over": true}));
        assert_eq!(back.expect("written at once").detail["over"], true);
        assert_eq!(h.len(), CAP);
        assert_eq!(h.drain().len(), CAP);
        assert_eq!(h.len(), 0);
    }
}
