use super::*;
use rackboot_config::Subnet;

fn subnet() -> Subnet {
    Subnet {
        net: "198.18.0.0/24".parse().unwrap(),
        pools: vec!["198.18.0.10-198.18.0.12".parse().unwrap(), "198.18.0.20-198.18.0.20".parse().unwrap()],
        routers: vec![],
        dns_servers: vec![],
        domain: String::new(),
        lease_secs: 600,
        uefi_loader: None,
    }
}

fn mac(n: u8) -> Mac {
    Mac([0x52, 0x54, 0, 0, 0, n])
}

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

const NOBODY: &dyn Fn(Ipv4Addr) -> bool = &|_| false;

#[test]
fn pool_is_handed_out_once_each_and_then_exhausted() {
    let (s, mut l) = (subnet(), Leases::new(60));
    let mut got = Vec::new();
    for n in 1..=4 {
        let a = l.offer(0, &s, mac(n), None, None, NOBODY, 1000).unwrap();
        l.ack(&s, mac(n), a, None, NOBODY, 1000).unwrap();
        got.push(a.to_string());
    }
    assert_eq!(got, ["198.18.0.10", "198.18.0.11", "198.18.0.12", "198.18.0.20"]);
    assert_eq!(l.offer(0, &s, mac(9), None, None, NOBODY, 1000), None);
    assert_eq!(l.active(1000), 4);
    // After expiry the addresses come back.
    assert!(l.offer(0, &s, mac(9), None, None, NOBODY, 1000 + 601).is_some());
}

#[test]
fn a_client_keeps_its_address_and_an_offer_is_held() {
    let (s, mut l) = (subnet(), Leases::new(60));
    let a = l.offer(0, &s, mac(1), None, None, NOBODY, 1000).unwrap();
    assert_eq!(l.offer(0, &s, mac(1), None, None, NOBODY, 1001), Some(a));
    let b = l.offer(0, &s, mac(2), Some(a), None, NOBODY, 1002).unwrap();
    assert_ne!(a, b, "an offered address is not given to a second client");
    assert_eq!(l.ack(&s, mac(2), a, None, NOBODY, 1003), Err(Refusal::Taken));
    l.ack(&s, mac(1), a, None, NOBODY, 1003).unwrap();
    assert_eq!(l.offer(0, &s, mac(1), None, None, NOBODY, 5000), Some(a), "returning client gets its old address");
}

#[test]
fn requested_address_is_honoured_when_free() {
    let (s, mut l) = (subnet(), Leases::new(60));
    assert_eq!(l.offer(0, &s, mac(1), Some(ip("198.18.0.12")), None, NOBODY, 0), Some(ip("198.18.0.12")));
    assert_eq!(
        l.offer(0, &s, mac(2), Some(ip("198.18.0.99")), None, NOBODY, 0),
        Some(ip("198.18.0.10")),
        "outside pool: ignored"
    );
}

#[test]
fn reservations_win_and_are_kept_from_others() {
    let (s, mut l) = (subnet(), Leases::new(60));
    let res = ip("198.18.0.50");
    assert_eq!(l.offer(0, &s, mac(1), None, Some(res), NOBODY, 0), Some(res));
    l.ack(&s, mac(1), res, Some(res), NOBODY, 0).unwrap();
    let reserved_11 = |a: Ipv4Addr| a == ip("198.18.0.11");
    let other = l.offer(0, &s, mac(2), Some(ip("198.18.0.11")), None, &reserved_11, 0).unwrap();
    assert_ne!(other, ip("198.18.0.11"));
    assert_eq!(l.ack(&s, mac(2), ip("198.18.0.11"), None, &reserved_11, 0), Err(Refusal::ReservedForOther));
    assert_eq!(l.ack(&s, mac(3), res, None, NOBODY, 0), Err(Refusal::NotAssignable));
    // A client with a reservation renewing a pool address is moved to its reservation.
    let pool = l.offer(0, &s, mac(4), None, None, NOBODY, 0).unwrap();
    l.ack(&s, mac(4), pool, None, NOBODY, 0).unwrap();
    assert_eq!(l.ack(&s, mac(4), pool, Some(ip("198.18.0.51")), NOBODY, 1), Err(Refusal::HasReservation));
}

#[test]
fn wrong_subnet_release_decline_and_reload() {
    let (s, mut l) = (subnet(), Leases::new(60));
    assert_eq!(l.ack(&s, mac(1), ip("198.19.0.10"), None, NOBODY, 0), Err(Refusal::WrongSubnet));
    let a = l.offer(0, &s, mac(1), None, None, NOBODY, 0).unwrap();
    l.ack(&s, mac(1), a, None, NOBODY, 0).unwrap();
    assert!(!l.release(mac(2), a), "only the holder may release");
    assert!(l.release(mac(1), a));
    assert_eq!(l.active(0), 0);
    let b = l.offer(0, &s, mac(2), None, None, NOBODY, 0).unwrap();
    assert!(l.decline(mac(2), b, 600));
    assert_ne!(l.offer(0, &s, mac(3), Some(b), None, NOBODY, 10), Some(b), "declined address is quarantined");

    let mut fresh = Leases::new(60);
    fresh.load([Lease {
        v: 1,
        ip: a,
        mac: mac(1),
        hostname: None,
        client_hostname: None,
        expires_at: 900,
        state: LeaseState::Active,
        updated_at: 0,
    }]);
    assert_eq!(fresh.ack(&s, mac(7), a, None, NOBODY, 10), Err(Refusal::Taken), "reloaded lease still binds");
    assert_eq!(fresh.offer(0, &s, mac(1), None, None, NOBODY, 10), Some(a));
}

#[test]
fn a_blocked_reservation_does_not_lock_its_client_out() {
    let (s, mut l) = (subnet(), Leases::new(60));
    let res = ip("198.18.0.50");
    // Another client still holds the reserved address from before the reservation existed.
    l.ack(&s, mac(9), res, Some(res), NOBODY, 0).unwrap();
    let fallback = l.offer(0, &s, mac(1), None, Some(res), NOBODY, 10).unwrap();
    assert_ne!(fallback, res);
    assert!(l.ack(&s, mac(1), fallback, Some(res), NOBODY, 10).is_ok(), "the fallback must be ackable");
    // Once the old lease has run out, the reservation wins again.
    assert_eq!(l.ack(&s, mac(1), fallback, Some(res), NOBODY, 700), Err(Refusal::HasReservation));
}

#[test]
fn withdrawing_an_offer_only_touches_the_clients_own() {
    let (s, mut l) = (subnet(), Leases::new(60));
    let a = l.offer(0, &s, mac(1), None, None, NOBODY, 0).unwrap();
    // mac(1)'s offer runs out and the address goes to mac(2).
    let b = l.offer(0, &s, mac(2), Some(a), None, NOBODY, 100).unwrap();
    assert_eq!(a, b);
    l.withdraw_offer(mac(1));
    assert!(l.ack(&s, mac(2), b, None, NOBODY, 101).is_ok(), "mac(2)'s offer survived");
    assert_eq!(l.ack(&s, mac(3), b, None, NOBODY, 101), Err(Refusal::Taken));
}

#[test]
fn offers_cannot_drain_a_pool_the_oldest_is_taken_back_never_a_lease() {
    let (s, mut l) = (subnet(), Leases::new(60));
    // One real client holds a lease.
    let leased = l.offer(0, &s, mac(1), None, None, NOBODY, 1000).unwrap();
    l.ack(&s, mac(1), leased, None, NOBODY, 1000).unwrap();
    // A flood of DISCOVERs from invented MACs that never REQUEST: far more than the pool.
    let mut offered = Vec::new();
    for n in 10..200u8 {
        offered.push(l.offer(0, &s, mac(n), None, None, NOBODY, 1001).expect("offers churn, never run dry"));
    }
    assert!(!offered.contains(&leased), "a lease is never taken back");
    assert!(l.reclaimed >= 180, "{}", l.reclaimed);
    // A real client right after it gets an offer and its REQUEST is acknowledged.
    let real = l.offer(0, &s, mac(250), None, None, NOBODY, 1002).unwrap();
    assert_eq!(l.ack(&s, mac(250), real, None, NOBODY, 1002).map(|_| ()), Ok(()));
    // A flooder whose offer was taken back and who does REQUEST is refused, not given a
    // second holder's address.
    let victim = offered[0];
    assert_ne!(victim, real, "sanity");
    let holder_of_victim = l.by_ip.get(&victim).map(|e| e.mac);
    assert_ne!(holder_of_victim, Some(mac(10)));
    // Every address is leased now but one: with no offer left to take back, the pool is dry.
    let mut n = 0u8;
    while let Some(a) = l.offer(0, &s, mac(100 + n), None, None, NOBODY, 1003) {
        l.ack(&s, mac(100 + n), a, None, NOBODY, 1003).unwrap();
        n += 1;
    }
    assert_eq!(l.active(1003), 4, "every address leased, none offered twice");
}
