use super::*;
use crate::store::AGENTS;
use rackboot_base::secret::{new_credential, presented_credential};

mod bound;

const MAC: &str = "52:54:00:00:00:01";

fn open() -> (tempfile::TempDir, Cmdb) {
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
    (dir, db)
}

fn req(macs: &[&str]) -> EnrollRequest {
    EnrollRequest { macs: macs.iter().map(|m| m.to_string()).collect(), ..Default::default() }
}

fn presenting(machine: u64, secret: &str) -> Admission {
    Admission { presented: presented_credential(Some(&format!("{machine}.{secret}"))), ..Default::default() }
}

/// The admission of a BootOS agent whose boot of `mac` rackboot served (`auto`: policy allows it).
async fn booted(db: &Cmdb, mac: &str, auto: bool) -> Admission {
    let nonce = db.issue_boot_nonce(mac.parse().unwrap(), "198.18.0.10".into(), 600).await.unwrap();
    Admission { auto, nonce: Some(crate::nonce_hash(&nonce)), ..Default::default() }
}

fn enrolled(o: EnrollOutcome) -> Enrolled {
    match o {
        EnrollOutcome::Enrolled(e) => e,
        other => panic!("refused: {other:?}"),
    }
}

fn conflict(o: EnrollOutcome) -> &'static str {
    match o {
        EnrollOutcome::Conflict { nonce, .. } => nonce.reason(),
        other => panic!("not refused: {other:?}"),
    }
}

/// The race the admission closes: a renewing node is authenticated with its credential, the
/// operator then approves a newer enrollment (superseding that credential), and only then
/// does the renewal reach the CMDB. Judged at write time, the old credential admits nothing.
#[tokio::test]
async fn a_credential_superseded_before_the_write_does_not_admit_an_enrollment() {
    let (_d, db) = open();
    let (s1, h1) = new_credential().unwrap();
    let (_s2, h2) = new_credential().unwrap();
    let (_s3, h3) = new_credential().unwrap();
    let first = enrolled(db.enroll_agent(req(&[MAC]), h1.clone(), booted(&db, MAC, true).await, None).await.unwrap());
    let id = first.machine_id;
    assert!(first.approved && first.created);

    // The holder of s1 would pass authentication now ...
    let renewal = presenting(id, &s1);
    // ... but a new boot enrolls (held for the operator: manual policy), and is approved before
    // the renewal is written.
    let second = db.enroll_agent(req(&[MAC]), h2.clone(), booted(&db, MAC, false).await, None).await.unwrap();
    assert!(!enrolled(second).approved, "held for the operator");
    assert_eq!(db.agent(id).await.unwrap().unwrap().pending_sha256.as_deref(), Some(h2.as_str()));
    db.approve_agent(id).await.unwrap();

    let late = db.enroll_agent(req(&[MAC]), h3.clone(), renewal, None).await.unwrap();
    assert_eq!(conflict(late), "no boot nonce presented", "a superseded credential must not take the machine back");
    let rec = db.agent(id).await.unwrap().unwrap();
    assert_eq!(rec.secret_sha256, h2, "the approved credential is untouched");
    assert!(rec.approved && rec.pending_sha256.is_none());
}

#[tokio::test]
async fn the_current_credential_admits_only_its_own_machine() {
    let (_d, db) = open();
    let (s1, h1) = new_credential().unwrap();
    let a = enrolled(db.enroll_agent(req(&[MAC]), h1, booted(&db, MAC, true).await, None).await.unwrap());
    let (_, hb) = new_credential().unwrap();
    let b_mac = "52:54:00:00:00:02";
    let b = enrolled(db.enroll_agent(req(&[b_mac]), hb.clone(), booted(&db, b_mac, true).await, None).await.unwrap());

    // A's credential presented by an enrollment that matches machine B: refused.
    let (_, h) = new_credential().unwrap();
    let wrong = db.enroll_agent(req(&[b_mac]), h, presenting(a.machine_id, &s1), None).await.unwrap();
    assert!(matches!(wrong, EnrollOutcome::Conflict { machine_id, .. } if machine_id == Some(b.machine_id)));
    assert_eq!(db.agent(b.machine_id).await.unwrap().unwrap().secret_sha256, hb);

    // A's credential renewing A: admitted, and it replaces the credential at once.
    let (_, h4) = new_credential().unwrap();
    let renewed = db.enroll_agent(req(&[MAC]), h4.clone(), presenting(a.machine_id, &s1), None).await.unwrap();
    assert!(enrolled(renewed).approved);
    let rec = db.agent(a.machine_id).await.unwrap().unwrap();
    assert_eq!((rec.secret_sha256, rec.pending_sha256), (h4, None));
}

/// A neighbour who knows a MAC cannot take its machine over: without this boot's nonce (none,
/// replayed, another MAC's, expired) the enrollment is refused, recorded with where it came
/// from, and the live credential stays.
#[tokio::test]
async fn an_enrollment_without_its_boot_nonce_never_supersedes_a_live_credential() {
    let (_d, db) = open();
    let (_, h1) = new_credential().unwrap();
    let genuine = booted(&db, MAC, true).await;
    let id = enrolled(db.enroll_agent(req(&[MAC]), h1.clone(), genuine.clone(), None).await.unwrap()).machine_id;
    let from = Some("198.18.0.66".parse().unwrap());
    let other_mac = "52:54:00:00:00:07";
    let others = booted(&db, other_mac, true).await;
    let stale = db.issue_boot_nonce(MAC.parse().unwrap(), "198.18.0.10".into(), 0).await.unwrap();
    let expired = Admission { auto: true, nonce: Some(crate::nonce_hash(&stale)), ..Default::default() };
    for (admission, reason) in [
        (Admission { auto: true, ..Default::default() }, "no boot nonce presented"),
        (genuine, "boot nonce unknown, used or superseded"),
        (others, "boot nonce unknown, used or superseded"),
        (expired, "boot nonce expired"),
    ] {
        let (_, h) = new_credential().unwrap();
        let mut r = req(&[MAC]);
        r.boot_mac = Some(MAC.into());
        assert_eq!(conflict(db.enroll_agent(r, h, admission, from).await.unwrap()), reason);
    }
    let rec = db.agent(id).await.unwrap().unwrap();
    assert_eq!((rec.secret_sha256.as_str(), rec.approved, rec.pending_sha256.clone()), (h1.as_str(), true, None));
    let events = db.events(id, 0, 100).await.unwrap();
    let refused: Vec<_> = events.iter().filter(|e| e.kind == EventKind::AgentEnrollConflict).collect();
    assert_eq!(refused.len(), 4, "{events:?}");
    assert_eq!(refused[0].detail["from"], "198.18.0.66");
}

/// The takeover a review found: a neighbour enrolls naming the victim's boot MAC and listing its
/// own MAC, whose nonce it holds. Every variant is refused as a foreign nonce, attaches nothing
/// and leaves the victim's credential and the neighbour's nonce as they were.
#[tokio::test]
async fn a_nonce_of_another_mac_admits_nothing_and_attaches_nothing() {
    let (_d, db) = open();
    let (_, hv) = new_credential().unwrap();
    let victim = enrolled(db.enroll_agent(req(&[MAC]), hv.clone(), booted(&db, MAC, true).await, None).await.unwrap());
    let other = "52:54:00:00:00:0b";
    let (_, ho) = new_credential().unwrap();
    let on_other = enrolled(db.enroll_agent(req(&[other]), ho, booted(&db, other, true).await, None).await.unwrap());
    let own = "52:54:00:00:00:0a";
    let own_nonce = db.issue_boot_nonce(own.parse().unwrap(), "198.18.0.12".into(), 600).await.unwrap();
    let other_nonce = db.issue_boot_nonce(other.parse().unwrap(), "198.18.0.13".into(), 600).await.unwrap();
    let with = |nonce: &str| Admission { auto: true, nonce: Some(crate::nonce_hash(nonce)), ..Default::default() };
    let shaped = |boot: Option<&str>, macs: &[&str]| {
        let mut r = req(macs);
        r.boot_mac = boot.map(String::from);
        r
    };
    for (r, nonce) in [
        (shaped(Some(MAC), &[own]), &own_nonce),
        (shaped(Some(MAC), &[own, MAC]), &own_nonce),
        (shaped(None, &[own, MAC]), &own_nonce),
        (shaped(Some(own), &[own, MAC]), &own_nonce),
        (shaped(Some(MAC), &[other]), &other_nonce),
        (shaped(Some(MAC), &[MAC, "52:54:00:00:00:0c", other]), &other_nonce),
    ] {
        let (_, h) = new_credential().unwrap();
        assert_eq!(conflict(db.enroll_agent(r, h, with(nonce), None).await.unwrap()), NonceCheck::Foreign.reason());
    }
    let rec = db.agent(victim.machine_id).await.unwrap().unwrap();
    assert_eq!((rec.secret_sha256, rec.approved, rec.pending_sha256), (hv, true, None));
    assert_eq!(db.machine(victim.machine_id).await.unwrap().macs, vec![MAC.parse::<Mac>().unwrap()]);
    assert!(db.brief_by_mac(own.parse().unwrap()).is_none(), "the neighbour's MAC was attached to nothing");
    assert!(db.brief_by_mac("52:54:00:00:00:0c".parse().unwrap()).is_none());
    assert!(db.agent(on_other.machine_id).await.unwrap().unwrap().approved);
    // The neighbour's own nonce still enrolls the neighbour's own machine.
    let (_, h) = new_credential().unwrap();
    let mine = enrolled(db.enroll_agent(shaped(Some(own), &[own]), h, with(&own_nonce), None).await.unwrap());
    assert!(mine.created && mine.approved && mine.machine_id != victim.machine_id);
}

/// An enrollment that proves nothing (no nonce, a machine without a live agent) waits for the
/// operator, and so do the MACs it brought: only the approval attaches them.
#[tokio::test]
async fn macs_of_an_unproven_enrollment_join_the_machine_only_when_the_operator_approves() {
    let (_d, db) = open();
    let m = db.create_machine(crate::NewMachine { macs: vec![MAC.parse().unwrap()], ..Default::default() });
    let m = m.await.unwrap();
    let extra = "52:54:00:00:00:0d";
    let (_, h) = new_credential().unwrap();
    let e = enrolled(
        db.enroll_agent(req(&[MAC, extra]), h, Admission { auto: true, ..Default::default() }, None).await.unwrap(),
    );
    assert_eq!((e.machine_id, e.approved), (m.id, false));
    assert_eq!(db.machine(m.id).await.unwrap().macs.len(), 1, "not attached before approval");
    assert!(db.brief_by_mac(extra.parse().unwrap()).is_none());
    db.approve_agent(m.id).await.unwrap();
    assert_eq!(db.machine(m.id).await.unwrap().macs, vec![MAC.parse::<Mac>().unwrap(), extra.parse().unwrap()]);
    assert!(db.agent(m.id).await.unwrap().unwrap().pending_macs.is_empty());
}

/// A stray or spoofed firmware request for the same MAC issues a newer nonce; the one the booting
/// machine already holds still enrolls it, and using one uses up every nonce of that MAC.
#[tokio::test]
async fn a_later_nonce_of_the_same_mac_does_not_void_the_one_a_boot_holds() {
    let (_d, db) = open();
    let held = db.issue_boot_nonce(MAC.parse().unwrap(), "198.18.0.10".into(), 600).await.unwrap();
    let mut later = Vec::new();
    for _ in 0..nonces::KEEP_EARLIER {
        later.push(db.issue_boot_nonce(MAC.parse().unwrap(), "198.18.0.10".into(), 600).await.unwrap());
    }
    let with = |nonce: &str| Admission { auto: true, nonce: Some(crate::nonce_hash(nonce)), ..Default::default() };
    let (_, h) = new_credential().unwrap();
    let e = enrolled(db.enroll_agent(req(&[MAC]), h, with(&held), None).await.unwrap());
    assert!(e.approved);
    let (_, h) = new_credential().unwrap();
    assert_eq!(
        conflict(db.enroll_agent(req(&[MAC]), h, with(&later[0]), None).await.unwrap()),
        NonceCheck::Unknown.reason()
    );
}

#[tokio::test]
async fn a_new_machine_without_a_nonce_or_under_manual_policy_waits_for_the_operator() {
    let (_d, db) = open();
    let (_, h) = new_credential().unwrap();
    let auto_without = Admission { auto: true, ..Default::default() };
    assert!(!enrolled(db.enroll_agent(req(&[MAC]), h, auto_without, None).await.unwrap()).approved);
    let (_, h) = new_credential().unwrap();
    let m2 = "52:54:00:00:00:03";
    assert!(!enrolled(db.enroll_agent(req(&[m2]), h, booted(&db, m2, false).await, None).await.unwrap()).approved);
}

/// Writes share a batch and a failed one is not rolled back, so an enrollment reads everything
/// before it writes: an unreadable agent record leaves the machine as it was.
#[tokio::test]
async fn an_enrollment_that_fails_writes_nothing() {
    let (_d, db) = open();
    let (_, h1) = new_credential().unwrap();
    let first = enrolled(db.enroll_agent(req(&[MAC]), h1, booted(&db, MAC, true).await, None).await.unwrap());
    let store = db.inner.storage.db().unwrap();
    tokio::task::spawn_blocking(move || {
        let tx = store.begin_write().unwrap();
        tx.open_table(AGENTS).unwrap().insert(first.machine_id, b"[\"not a record\"]".as_slice()).unwrap();
        tx.commit().unwrap();
    })
    .await
    .unwrap();
    let (_, h2) = new_credential().unwrap();
    let err =
        db.enroll_agent(req(&[MAC, "52:54:00:00:00:09"]), h2, booted(&db, MAC, true).await, None).await.unwrap_err();
    assert!(matches!(err, CmdbError::Storage(_)), "{err}");
    let m = db.machine(first.machine_id).await.unwrap();
    assert_eq!(m.macs, vec![MAC.parse::<Mac>().unwrap()], "the new MAC was not recorded");
    assert!(db.brief_by_mac("52:54:00:00:00:09".parse().unwrap()).is_none());
}

#[tokio::test]
async fn a_bmc_found_in_band_is_recorded_with_the_lease_its_mac_holds() {
    use rackboot_agent::wire::Bmc;
    let (_d, db) = open();
    let new = crate::NewMachine { macs: vec![MAC.parse().unwrap()], ..Default::default() };
    let m = db.create_machine(new).await.unwrap();
    // The BMC (another MAC) took a DHCP lease on the VLAN; a released one does not count.
    let lease = |ip: &str, mac: &str, state| super::super::model::Lease {
        v: super::super::model::SCHEMA_VERSION,
        ip: ip.parse().unwrap(),
        mac: mac.parse().unwrap(),
        hostname: None,
        client_hostname: None,
        expires_at: now_secs() + 600,
        state,
        updated_at: now_secs(),
    };
    for l in [
        lease("198.18.0.150", "0c:c4:7a:00:00:99", super::super::model::LeaseState::Active),
        lease("198.18.0.151", "0c:c4:7a:00:00:98", super::super::model::LeaseState::Released),
    ] {
        let s = crate::Sighting { mac: Some(l.mac), ..Default::default() };
        db.commit_lease(l, s, vec![]).await.unwrap();
    }
    let inventory = |ip: Option<&str>, mac: &str| Inventory {
        bmc: Some(Bmc { ip: ip.map(String::from), mac: Some(mac.into()) }),
        ..Default::default()
    };
    db.put_inventory(m.id, inventory(None, "0c:c4:7a:00:00:99")).await.unwrap();
    db.put_inventory(m.id, inventory(Some("10.9.0.7"), "0c:c4:7a:00:00:98")).await.unwrap();
    db.put_inventory(m.id, Inventory::default()).await.unwrap();
    let found: Vec<serde_json::Value> = db
        .events(m.id, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EventKind::BmcFound)
        .map(|e| e.detail)
        .collect();
    assert_eq!(
        found,
        [
            json!({"ip": null, "mac": "0c:c4:7a:00:00:99", "lease": "198.18.0.150"}),
            json!({"ip": "10.9.0.7", "mac": "0c:c4:7a:00:00:98", "lease": null}),
        ],
        "no BMC in the third inventory: nothing recorded"
    );
}

/// A rescue's BootOS replaces the installed system's credential but keeps it: after the return,
/// that system's agent gets back in with it, and only then; a release's BootOS keeps nothing.
#[tokio::test]
async fn a_rescue_keeps_the_installed_credential_for_the_return_only() {
    let (_d, db) = open();
    let installed_req = || EnrollRequest { mode: rackboot_agent::wire::AgentMode::Installed, ..req(&[MAC]) };
    let (_s0, h0) = new_credential().unwrap();
    let id = enrolled(db.enroll_agent(req(&[MAC]), h0, booted(&db, MAC, true).await, None).await.unwrap()).machine_id;
    // The installed system's agent, renewing with BootOS's credential handed on (as identity does).
    let (s1, h1) = new_credential().unwrap();
    db.write(move |ctx| {
        let mut rec: AgentRecord = ctx.get(id)?;
        rec.secret_sha256 = h1;
        rec.mode = rackboot_agent::wire::AgentMode::Installed;
        ctx.put(&rec)
    })
    .await
    .unwrap();
    // The rescue's BootOS enrolls: the installed credential is kept, no longer current.
    let (_s2, h2) = new_credential().unwrap();
    let rescue = Admission { keep_installed: true, ..booted(&db, MAC, true).await };
    enrolled(db.enroll_agent(req(&[MAC]), h2, rescue, None).await.unwrap());
    let rec = db.agent(id).await.unwrap().unwrap();
    assert!(rec.kept_sha256.is_some() && rec.mode == rackboot_agent::wire::AgentMode::Bootos);
    // Before the return, the installed credential admits nothing.
    let (_s3, h3) = new_credential().unwrap();
    let early = db.enroll_agent(installed_req(), h3.clone(), presenting(id, &s1), None).await.unwrap();
    assert_eq!(conflict(early), "no boot nonce presented");
    // Returned: it does, once; the new record keeps nothing.
    let back = Admission { returning: true, ..presenting(id, &s1) };
    assert!(enrolled(db.enroll_agent(installed_req(), h3, back.clone(), None).await.unwrap()).approved);
    assert_eq!(db.agent(id).await.unwrap().unwrap().kept_sha256, None);
    let (_s4, h4) = new_credential().unwrap();
    assert_eq!(conflict(db.enroll_agent(installed_req(), h4, back, None).await.unwrap()), "no boot nonce presented");
    // A release's BootOS (not a rescue's) keeps nothing: the installed credential is revoked.
    let (_s5, h5) = new_credential().unwrap();
    enrolled(db.enroll_agent(req(&[MAC]), h5, booted(&db, MAC, true).await, None).await.unwrap());
    assert_eq!(db.agent(id).await.unwrap().unwrap().kept_sha256, None);
}

/// What a node says of itself names a machine only when the node proved its boot: an unproven
/// enrollment leaves the serial (which a rack's CSV places by) as it was.
#[tokio::test]
async fn an_unproven_enrollment_sets_no_serial() {
    let (_d, db) = open();
    let (_s, h) = new_credential().unwrap();
    let claim = EnrollRequest { serial: Some("RACK9-SLOT7".into()), ..req(&[MAC]) };
    let e = enrolled(db.enroll_agent(claim.clone(), h.clone(), Admission::default(), None).await.unwrap());
    assert!(!e.approved);
    assert_eq!(db.machine(e.machine_id).await.unwrap().serial, None);
    let (_s2, h2) = new_credential().unwrap();
    enrolled(db.enroll_agent(claim, h2, booted(&db, MAC, true).await, None).await.unwrap());
    assert_eq!(
        db.machine(e.machine_id).await.unwrap().serial.as_deref(),
        Some("RACK9-SLOT7"),
        "a proven boot's is kept"
    );
}

#[tokio::test]
async fn a_machine_holds_at_most_its_bound_of_macs() {
    let (_d, db) = open();
    let many = |n: u32| -> Vec<String> { (0..63).map(|i| format!("52:54:01:{n:02x}:00:{i:02x}")).collect() };
    let mut macs = vec![MAC.to_string()];
    macs.extend(many(1));
    let (_s, h) = new_credential().unwrap();
    let req1 = EnrollRequest { macs: macs.clone(), ..Default::default() };
    let e = enrolled(db.enroll_agent(req1, h, booted(&db, MAC, true).await, None).await.unwrap());
    assert_eq!(db.machine(e.machine_id).await.unwrap().macs.len(), MAX_MACHINE_MACS);
    let mut more = vec![MAC.to_string()];
    more.extend(many(2));
    let (_s, h) = new_credential().unwrap();
    let req2 = EnrollRequest { macs: more, ..Default::default() };
    let o = db.enroll_agent(req2, h, booted(&db, MAC, true).await, None).await.unwrap();
    assert!(matches!(o, EnrollOutcome::TooManyMacs { would_have: 127, .. }), "{o:?}");
    assert_eq!(db.machine(e.machine_id).await.unwrap().macs.len(), MAX_MACHINE_MACS, "nothing attached");
}
