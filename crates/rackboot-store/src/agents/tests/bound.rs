//! The per-machine bound on proven enrollments, judged inside the enrollment's transaction.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use super::*;

/// Past its bound a machine's proven enrollment writes nothing: its credential stays, and the
/// nonce it presented is still good once the bound lets it in. Unproven ones are not counted.
#[tokio::test]
async fn a_machines_proven_enrollments_past_their_bound_write_nothing_and_keep_the_nonce() {
    let (_d, db) = open();
    let (_s1, h1) = new_credential().unwrap();
    let id = enrolled(db.enroll_agent(req(&[MAC]), h1.clone(), booted(&db, MAC, true).await, None).await.unwrap())
        .machine_id;
    let open = Arc::new(AtomicBool::new(false));
    let counted = Arc::new(AtomicUsize::new(0));
    let gate = {
        let (open, counted) = (open.clone(), counted.clone());
        PerMachine(Arc::new(move |m: u64| {
            assert_eq!(m, id);
            counted.fetch_add(1, SeqCst);
            open.load(SeqCst)
        }))
    };
    let unproven = Admission { per_machine: Some(gate.clone()), ..Default::default() };
    let (_s, h) = new_credential().unwrap();
    conflict(db.enroll_agent(req(&[MAC]), h, unproven, None).await.unwrap());
    assert_eq!(counted.load(SeqCst), 0, "an unproven enrollment is not counted");

    let proven = Admission { per_machine: Some(gate), ..booted(&db, MAC, true).await };
    let (_s2, h2) = new_credential().unwrap();
    let out = db.enroll_agent(req(&[MAC]), h2.clone(), proven.clone(), None).await.unwrap();
    assert!(matches!(out, EnrollOutcome::TooOften { machine_id } if machine_id == id), "{out:?}");
    assert_eq!(db.agent(id).await.unwrap().unwrap().secret_sha256, h1, "nothing written");
    open.store(true, SeqCst);
    let again = enrolled(db.enroll_agent(req(&[MAC]), h2.clone(), proven, None).await.unwrap());
    assert!(again.approved, "the same nonce admits it once the bound allows");
    assert_eq!(db.agent(id).await.unwrap().unwrap().secret_sha256, h2);
}
