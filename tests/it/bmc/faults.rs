//! The power service against hostile and faulty Redfish BMCs (small HTTPS servers in the test):
//! wrong credentials fail at once without a retry storm and are then held off; a BMC that never
//! answers times out; 500s are retried a bounded number of times; a redirect loop and a
//! certificate that does not match the pin are refused; a restart that is advertised but fails
//! falls back to off + on; 50 BMCs at once keep the global cap and one command per BMC. A
//! firmware read takes what a BMC offers, within bounds, and follows no link off it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bmc_fake::{Fake, Gauge, Mode, PASSWORD, USER};
use rackboot::bmc::power::{Caller, PowerError};
use rackboot::bmc::{Bmc, BmcError, Power, PowerAction, PowerState, Protocol, TlsPolicy};
use rackboot::cmdb::{Cmdb, NewMachine};
use rackboot::config::BmcConfig;

struct Rig {
    _dir: tempfile::TempDir,
    cmdb: Cmdb,
    power: Arc<Power>,
}

fn config(max_concurrent: usize) -> BmcConfig {
    BmcConfig {
        request_timeout: Duration::from_millis(800),
        action_deadline: Duration::from_secs(20),
        soft_off_timeout: Duration::from_secs(2),
        poll_interval: Duration::from_millis(50),
        retries: 2,
        retry_backoff: Duration::from_millis(50),
        max_concurrent,
        auth_hold: Duration::from_secs(300),
        ..BmcConfig::default()
    }
}

async fn rig(max_concurrent: usize) -> Rig {
    rig_with(config(max_concurrent)).await
}

async fn rig_with(cfg: BmcConfig) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let cmdb = Cmdb::open(&dir.path().join("cmdb.redb"), 64).unwrap();
    let sealer = Arc::new(rackboot::secrets::Sealer::from_key(&[9u8; 32]));
    let power = Arc::new(Power::new(cfg, cmdb.clone(), sealer, String::new()));
    Rig { _dir: dir, cmdb, power }
}

impl Rig {
    /// A machine whose BMC is `fake`, pinned to `pin` (the fake's own by default).
    async fn machine(&self, n: u8, fake: &Fake, pin: Option<&str>) -> u64 {
        let mac = format!("52:54:00:00:{:02x}:{n:02x}", fake.port as u8).parse().unwrap();
        let m = self.cmdb.create_machine(NewMachine { macs: vec![mac], ..Default::default() }).await.unwrap();
        let b = Bmc {
            machine_id: m.id,
            address: format!("127.0.0.1:{}", fake.port),
            protocol: Protocol::Redfish,
            username: USER.into(),
            password_sealed: self.power.seal(m.id, PASSWORD).unwrap(),
            tls: TlsPolicy::Fingerprint { sha256: pin.unwrap_or(&fake.fingerprint).to_string() },
            system_id: None,
            boot_mode: None,
            power: None,
            updated_at: 0,
            firmware: None,
            inband: None,
            boot_via: Default::default(),
        };
        self.cmdb.put_bmc(b, false).await.unwrap();
        m.id
    }

    async fn act(&self, id: u64, action: PowerAction) -> Result<rackboot::bmc::PowerOutcome, BmcError> {
        self.power.act(id, action, false, Caller::Operator).await.map_err(|e| match e {
            PowerError::Bmc { error, .. } => error,
            other => panic!("not a BMC error: {other}"),
        })
    }
}

async fn fake(mode: Mode) -> Arc<Fake> {
    crate::bmc_fake::start(mode, Arc::default(), Duration::ZERO, &crate::bmc_fake::cert()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_credentials_fail_at_once_and_are_held_off() {
    let r = rig(4).await;
    let f = fake(Mode::WrongCredentials).await;
    let id = r.machine(1, &f, None).await;
    let t = Instant::now();
    let e = r.act(id, PowerAction::On).await.unwrap_err();
    assert!(matches!(e, BmcError::Auth(_)), "{e}");
    assert!(t.elapsed() < Duration::from_secs(2), "no retries: {:?}", t.elapsed());
    // The session attempt and the basic-auth request it falls back to: no more.
    assert!(f.requests() <= 2, "{} requests for one refused action", f.requests());
    let before = f.requests();
    for _ in 0..5 {
        let e = r.act(id, PowerAction::Status).await.unwrap_err();
        assert!(e.to_string().contains("not tried again"), "{e}");
    }
    assert_eq!(f.requests(), before, "a held-off BMC gets nothing (its account is not locked out by us)");
    let ev = r.cmdb.events(id, 0, 100).await.unwrap();
    assert!(ev.iter().any(|e| e.kind.as_str() == "power.failed" && e.detail["kind"] == "auth"), "{ev:?}");
    // Any change to the record (here only the user, the password kept) lifts the hold.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut b = r.cmdb.bmc(id).await.unwrap().unwrap();
    b.username = "operator".into();
    r.cmdb.put_bmc(b, true).await.unwrap();
    assert!(
        matches!(r.act(id, PowerAction::Status).await.unwrap_err(), BmcError::Auth(m) if !m.contains("not tried again"))
    );
    assert!(f.requests() > before, "tried again after the change");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_bmc_times_out_within_the_retries() {
    let r = rig(4).await;
    let f = fake(Mode::Silent).await;
    let id = r.machine(1, &f, None).await;
    let t = Instant::now();
    let e = r.act(id, PowerAction::Status).await.unwrap_err();
    assert!(matches!(e, BmcError::Timeout(_)), "{e}");
    // 3 tries of 0.8 s plus backoff; far below the action deadline.
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(f.requests(), 3, "the first try and two retries");
    let b = r.cmdb.bmc(id).await.unwrap().unwrap();
    assert!(b.power.unwrap().error.unwrap().contains("did not answer"), "the failure is stored with its time");
}

#[tokio::test(flavor = "multi_thread")]
async fn server_errors_are_retried_a_bounded_number_of_times() {
    let r = rig(4).await;
    let f = fake(Mode::Errors).await;
    let id = r.machine(1, &f, None).await;
    let e = r.act(id, PowerAction::On).await.unwrap_err();
    assert!(matches!(e, BmcError::Status { status: 500, .. }), "{e}");
    // A 500 at login is transient: the first try and two retries, one request each.
    assert_eq!(f.requests(), 3, "a bounded number of retries");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_loop_and_a_wrong_certificate_are_refused() {
    let r = rig(4).await;
    let f = fake(Mode::RedirectLoop).await;
    let id = r.machine(1, &f, None).await;
    let e = r.act(id, PowerAction::Status).await.unwrap_err();
    assert!(matches!(&e, BmcError::Protocol(m) if m.contains("redirect")), "{e}");
    assert_eq!(f.requests(), 1 + 6 + 1, "login, the request and its 5 redirects, logout");

    let f = fake(Mode::Good).await;
    let other = "ab".repeat(32);
    let id = r.machine(2, &f, Some(&other)).await;
    let e = r.act(id, PowerAction::On).await.unwrap_err();
    assert!(matches!(&e, BmcError::Tls(m) if m.contains("does not match the pinned")), "{e}");
    assert_eq!(f.requests(), 0, "nothing, the password least, is sent to an unpinned certificate");
    assert_eq!(f.power_state(), "Off");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_that_fails_falls_back_to_off_and_on() {
    let r = rig(4).await;
    let f = fake(Mode::RestartFails).await;
    let id = r.machine(1, &f, None).await;
    assert_eq!(r.act(id, PowerAction::On).await.unwrap().state, PowerState::On);
    let out = r.act(id, PowerAction::Cycle).await.unwrap();
    assert_eq!(out.state, PowerState::On, "verified on again");
    assert!(out.fallback.as_deref().unwrap().contains("restart failed"), "{out:?}");
    let resets = f.resets.lock().unwrap().clone();
    assert_eq!(resets, ["On", "ForceRestart", "ForceRestart", "ForceRestart", "ForceOff", "On"]);
    let ev = r.cmdb.events(id, 0, 100).await.unwrap();
    let cycle = ev.iter().find(|e| e.detail["action"] == "cycle").unwrap();
    assert!(cycle.detail["fallback"].as_str().unwrap().contains("off + on"), "{cycle:?}");

    // off: graceful first; verified off.
    let out = r.act(id, PowerAction::Off).await.unwrap();
    assert_eq!(out.state, PowerState::Off);
    assert_eq!(f.resets.lock().unwrap().last().unwrap(), "GracefulShutdown");
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_bmcs_at_once_keep_the_global_cap_and_one_command_per_bmc() {
    const CAP: usize = 8;
    // Requests get seconds here, not the fault tests' 800 ms: a login that times out on a loaded
    // machine is retried, and the fake counts the session it abandoned as open for ever.
    let r = rig_with(BmcConfig { request_timeout: Duration::from_secs(10), ..config(CAP) }).await;
    let global = Arc::new(Gauge::default());
    let cert = crate::bmc_fake::cert();
    let mut fakes = Vec::new();
    let mut ids = Vec::new();
    for n in 0..50u8 {
        let f = crate::bmc_fake::start(Mode::Good, global.clone(), Duration::from_millis(5), &cert).await;
        ids.push(r.machine(n, &f, None).await);
        fakes.push(f);
    }
    // Three commands per BMC, all at once.
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for &id in &ids {
        for action in [PowerAction::On, PowerAction::Status, PowerAction::Cycle] {
            let p = r.power.clone();
            set.spawn(async move { p.act(id, action, false, Caller::Operator).await });
        }
    }
    let mut ok = 0;
    while let Some(res) = set.join_next().await {
        res.unwrap().unwrap();
        ok += 1;
    }
    assert_eq!(ok, 150);
    let max = global.max.load(Ordering::SeqCst);
    assert!(max <= CAP, "{max} sessions open at once over all BMCs, cap {CAP}");
    assert!(max >= CAP / 2, "the cap is used, not everything serialised ({max})");
    for f in &fakes {
        assert_eq!(f.sessions.max.load(Ordering::SeqCst), 1, "one command at a time per BMC");
        assert_eq!(f.power_state(), "On");
    }
    eprintln!("150 actions on 50 BMCs in {:?} (max {max} at once)", t.elapsed());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_refresh_stores_every_bmcs_state_with_its_time_and_no_events() {
    let dir = tempfile::tempdir().unwrap();
    let cmdb = Cmdb::open(&dir.path().join("cmdb.redb"), 64).unwrap();
    let sealer = Arc::new(rackboot::secrets::Sealer::from_key(&[9u8; 32]));
    let cfg = BmcConfig { refresh_interval: Some(Duration::from_millis(200)), ..config(4) };
    let power = Arc::new(Power::new(cfg, cmdb.clone(), sealer, String::new()));
    let r = Rig { _dir: dir, cmdb, power: power.clone() };
    let (up, silent) = (fake(Mode::Good).await, fake(Mode::Silent).await);
    let (a, b) = (r.machine(1, &up, None).await, r.machine(2, &silent, None).await);
    let token = tokio_util::sync::CancellationToken::new();
    let service = tokio::spawn(rackboot::bmc::power::serve(power, token.clone()));
    let t0 = rackboot::cmdb::now_ms();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (ra, rb) = (r.cmdb.bmc(a).await.unwrap().unwrap().power, r.cmdb.bmc(b).await.unwrap().unwrap().power);
        if let (Some(ra), Some(rb)) = (ra, rb) {
            assert_eq!((ra.state, ra.error), (PowerState::Off, None));
            assert!(ra.at_ms >= t0);
            assert!(rb.error.unwrap().contains("did not answer"), "a silent BMC's failure is stored");
            break;
        }
        assert!(Instant::now() < deadline, "not refreshed within 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = r.cmdb.bmc(a).await.unwrap().unwrap().power.unwrap().at_ms;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(r.cmdb.bmc(a).await.unwrap().unwrap().power.unwrap().at_ms > first, "read again");
    let kinds: Vec<String> = r.cmdb.events(a, 0, 100).await.unwrap().iter().map(|e| e.kind.to_string()).collect();
    assert!(!kinds.iter().any(|k| k.starts_with("power.")), "the refresh keeps the timeline quiet: {kinds:?}");
    token.cancel();
    service.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn actions_queued_behind_a_refused_one_do_not_try_again() {
    let r = rig(4).await;
    let f = fake(Mode::WrongCredentials).await;
    let id = r.machine(1, &f, None).await;
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let p = r.power.clone();
        set.spawn(async move { p.act(id, PowerAction::Status, false, Caller::Operator).await });
    }
    while let Some(res) = set.join_next().await {
        assert!(res.unwrap().is_err());
    }
    assert!(f.requests() <= 2, "ten queued actions, one refusal: {} requests", f.requests());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_firmware_read_keeps_what_the_bmc_offers_within_bounds() {
    let rig = rig(4).await;
    let good = fake(Mode::Good).await;
    let id = rig.machine(1, &good, None).await;
    let report = rig.power.firmware(id).await.unwrap();
    assert_eq!(report.bios_version.as_deref(), Some("2.19.1"));
    let bios = report.bios.as_ref().expect("the BIOS attributes");
    assert_eq!(bios["BootMode"], "Uefi");
    assert_eq!(bios["ProcVirtualization"], "Disabled");
    assert!(!bios.contains_key("Nested"), "an object is no attribute value: {bios:?}");
    assert_eq!(report.attribute_registry.as_deref(), Some("BiosAttributeRegistry.v1_0_0"));
    // Pending: only what differs from the current value.
    let pending: Vec<&String> = report.bios_pending.keys().collect();
    assert_eq!(pending, ["ProcVirtualization"], "{report:?}");
    assert_eq!(report.bios_pending["ProcVirtualization"], "Enabled");
    let inventory = report.inventory.as_ref().expect("the firmware inventory");
    assert_eq!(inventory.len(), rackboot::firmware::MAX_INVENTORY, "bounded");
    assert_eq!(inventory[0].version.as_deref(), Some("1.0.0"));
    assert!(report.notes.iter().any(|n| n.contains("left out")), "{:?}", report.notes);
    assert!(report.notes.iter().any(|n| n.contains("the first 128")), "{:?}", report.notes);
    // Kept on the BMC record, with an event; the link off the BMC was not followed.
    let stored = rig.cmdb.bmc(id).await.unwrap().unwrap();
    assert_eq!(stored.firmware.as_ref(), Some(&report));
    assert!(!good.paths().iter().any(|p| p.contains("elsewhere")), "{:?}", good.paths());
    let events = rig.cmdb.events(id, 0, 100).await.unwrap();
    assert!(events.iter().any(|e| e.kind == rackboot::cmdb::EventKind::BmcFirmware), "{events:?}");

    // A BMC that refuses the credentials: an error, held off like a power action.
    let wrong = fake(Mode::WrongCredentials).await;
    let id = rig.machine(2, &wrong, None).await;
    let err = rig.power.firmware(id).await.unwrap_err();
    assert!(matches!(err, PowerError::Bmc { error: BmcError::Auth(_), .. }), "{err}");
    assert!(rig.cmdb.bmc(id).await.unwrap().unwrap().firmware.is_none());
}
