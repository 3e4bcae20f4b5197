use super::*;
use crate::cmdb::store::AGENTS;
use crate::controller::Hub;

const MAC: &str = "52:54:00:00:00:01";

fn open() -> (tempfile::TempDir, Cmdb) {
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open(&dir.path().join("c.redb"), 64).unwrap();
    (dir, db)
}

fn req(macs: &[&str]) -> EnrollRequest {
    EnrollRequest { macs: macs.iter().map(|m| m.to_string()).collect(), ..Default::default() }
}

fn presenting(machine: u64, secret: &str) -> Admission {
    Admission { auto: false, presented: Hub::presented(Some(&format!("{machine}.{secret}"))) }
}

/// The race the admission closes: a renewing node is authenticated with its credential, the
/// operator then approves a newer enrollment (superseding that credential), and only then
/// does the renewal reach the CMDB. Judged at write time, the old credential admits nothing.
#[tokio::test]
async fn a_credential_superseded_before_the_write_does_not_admit_an_enrollment() {
    let (_d, db) = open();
    let (s1, h1) = Hub::new_secret().unwrap();
    let (_s2, h2) = Hub::new_secret().unwrap();
    let (_s3, h3) = Hub::new_secret().unwrap();
    let auto = Admission { auto: true, presented: None };
    let first = db.enroll_agent(req(&[MAC]), h1.clone(), auto, None).await.unwrap();
    let id = first.machine_id;
    assert!(first.approved && first.created);

    // The holder of s1 would pass authentication now ...
    let renewal = presenting(id, &s1);
    // ... but a second enrollment is approved by the operator before the renewal is written.
    let second = db.enroll_agent(req(&[MAC]), h2.clone(), Admission::default(), None).await.unwrap();
    assert!(!second.approved, "held for the operator");
    assert_eq!(db.agent(id).await.unwrap().unwrap().pending_sha256.as_deref(), Some(h2.as_str()));
    db.approve_agent(id).await.unwrap();

    let late = db.enroll_agent(req(&[MAC]), h3.clone(), renewal, None).await.unwrap();
    assert!(!late.approved, "a superseded credential must not take the machine back");
    let rec = db.agent(id).await.unwrap().unwrap();
    assert_eq!(rec.secret_sha256, h2, "the approved credential is untouched");
    assert!(rec.approved);
    assert_eq!(rec.pending_sha256.as_deref(), Some(h3.as_str()), "the late one waits for the operator");
}

#[tokio::test]
async fn the_current_credential_admits_only_its_own_machine() {
    let (_d, db) = open();
    let (s1, h1) = Hub::new_secret().unwrap();
    let auto = Admission { auto: true, presented: None };
    let a = db.enroll_agent(req(&[MAC]), h1, auto.clone(), None).await.unwrap();
    let (_, hb) = Hub::new_secret().unwrap();
    let b = db.enroll_agent(req(&["52:54:00:00:00:02"]), hb.clone(), auto, None).await.unwrap();

    // A's credential presented by an enrollment that matches machine B: not admitted.
    let (_, h) = Hub::new_secret().unwrap();
    let wrong = db.enroll_agent(req(&["52:54:00:00:00:02"]), h, presenting(a.machine_id, &s1), None).await.unwrap();
    assert_eq!(wrong.machine_id, b.machine_id);
    assert!(!wrong.approved);
    assert_eq!(db.agent(b.machine_id).await.unwrap().unwrap().secret_sha256, hb);

    // A's credential renewing A: admitted, and it replaces the credential at once.
    let (_, h4) = Hub::new_secret().unwrap();
    let renewed = db.enroll_agent(req(&[MAC]), h4.clone(), presenting(a.machine_id, &s1), None).await.unwrap();
    assert!(renewed.approved);
    let rec = db.agent(a.machine_id).await.unwrap().unwrap();
    assert_eq!((rec.secret_sha256, rec.pending_sha256), (h4, None));
}

/// Writes share a batch and a failed one is not rolled back, so an enrollment reads everything
/// before it writes: an unreadable agent record leaves the machine as it was.
#[tokio::test]
async fn an_enrollment_that_fails_writes_nothing() {
    let (_d, db) = open();
    let (_, h1) = Hub::new_secret().unwrap();
    let first = db.enroll_agent(req(&[MAC]), h1, Admission { auto: true, presented: None }, None).await.unwrap();
    {
        let tx = db.inner.db.begin_write().unwrap();
        tx.open_table(AGENTS).unwrap().insert(first.machine_id, b"not json".as_slice()).unwrap();
        tx.commit().unwrap();
    }
    let (_, h2) = Hub::new_secret().unwrap();
    let err = db
        .enroll_agent(req(&[MAC, "52:54:00:00:00:09"]), h2, Admission { auto: true, presented: None }, None)
        .await
        .unwrap_err();
    assert!(matches!(err, CmdbError::Storage(_)), "{err}");
    let m = db.machine(first.machine_id).await.unwrap();
    assert_eq!(m.macs, vec![MAC.parse::<Mac>().unwrap()], "the new MAC was not recorded");
    assert!(db.brief_by_mac("52:54:00:00:00:09".parse().unwrap()).is_none());
}
