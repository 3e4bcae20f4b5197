//! Redfish as three vendors speak it (the fake BMC's dialects, each after its vendor's public
//! reference: `tests/bmc_fake/dialect.rs`): a Dell-like BMC that answers each PATCH with a job
//! to follow, an HPE-like one that wants the BIOS settings' `@odata.etag` in `If-Match`, and a
//! Supermicro-like one that wants every resource's `ETag` and is busy (503, `Retry-After`) once.
//! Each machine's hardware profile sets a BIOS attribute; the BIOS step writes it, boots the
//! machine from the network once (the boot override) and restarts it, and reads it back. A
//! value the Dell-like BMC's attribute registry does not list is refused before writing.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::bios::{boot_at_each_reset, events, machine, run_of, with_image};
use crate::bmc_fake::{self, Mode};
use crate::common::appliance::Appliance;

const CONFIG: &str = r#"[bmc]
poll_interval_ms = 100
retry_backoff_ms = 50
[provision]
[[provision.hardware_profiles]]
name = "ahci"
scripts = ["echo configured; exit 3"]
[provision.hardware_profiles.bios]
EmbeddedSata = "Ahci"
[[provision.hardware_profiles]]
name = "nvme"
[provision.hardware_profiles.bios]
EmbeddedSata = "Nvme"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn each_vendors_dialect_gets_its_bios_setting_and_boot_override() {
    let a = Appliance::start(CONFIG).await;
    with_image(&a);
    let cert = bmc_fake::cert();
    let mut machines = Vec::new();
    let dialects = [(Mode::Dell, "ahci"), (Mode::Hpe, "ahci"), (Mode::Supermicro, "ahci"), (Mode::Dell, "nvme")];
    for (i, (mode, profile)) in dialects.into_iter().enumerate() {
        let fake = bmc_fake::start(mode, Default::default(), Duration::ZERO, &cert).await;
        machines.push(machine(&a, &format!("52:54:00:d1:00:0{}", i + 1), fake, profile).await);
    }
    boot_at_each_reset(&a, &machines).await;

    for m in &machines[..3] {
        let run = run_of(&a, m.task).await;
        assert_eq!(run["step"]["step"], "configure", "{:?}: past the BIOS step: {run}", m.fake.mode);
        assert!(run["error"].as_str().unwrap().contains("exit code 3"), "{run}");
        assert_eq!(m.fake.bios.lock().unwrap().0["EmbeddedSata"], "Ahci", "{:?}", m.fake.mode);
        assert_eq!(*m.fake.resets.lock().unwrap(), ["On", "ForceRestart"], "{:?}", m.fake.mode);
        let ev = events(&a, m.mac).await;
        let overrides =
            ev.iter().filter(|e| e["kind"] == "power.action" && e["detail"]["action"] == "pxe-once").count();
        assert_eq!(overrides, 2, "{:?}: a boot override before each start: {ev:?}", m.fake.mode);
    }
    let (dell, hpe, supermicro) = (&machines[0].fake, &machines[1].fake, &machines[2].fake);
    assert!(dell.task_polls.load(Ordering::SeqCst) >= 6, "each of Dell's three PATCHes followed to Completed");
    assert!(!hpe.if_matches.lock().unwrap().is_empty(), "HPE's BIOS settings written with their ETag");
    let sent = supermicro.if_matches.lock().unwrap().clone();
    assert!(sent.len() >= 3 && sent.iter().all(|e| e.starts_with("W/\"")), "Supermicro's ETags: {sent:?}");

    // A value the registry does not list: refused before anything is written, naming the
    // values it does, and nothing restarted.
    let m = &machines[3];
    let run = run_of(&a, m.task).await;
    let error = run["error"].as_str().unwrap();
    assert_eq!((run["state"].as_str(), run["step"]["step"].as_str()), (Some("failed"), Some("bios")), "{run}");
    assert!(
        error.contains(
            "refused before writing: EmbeddedSata: \"Nvme\" is not in the list of acceptable values (Raid, Ahci)"
        ),
        "{error}"
    );
    assert!(!m.fake.paths().iter().any(|p| p.ends_with("/Bios/Settings")), "nothing written");
    assert_eq!(*m.fake.resets.lock().unwrap(), ["On"]);
}
