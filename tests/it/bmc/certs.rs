//! Firmware certificates through the BIOS step: a hardware profile with
//! `firmware_certificates = ["https-boot", "secure-boot-db"]` puts the boot CA and BootOS's
//! signing certificate into each machine's firmware through its Redfish BMC (the fake one),
//! restarts it into BootOS and reads them back:
//!
//! - `dmtf`: both posted to the DMTF collections (`Boot.Certificates`, Secure Boot's `db`).
//! - `hpe`: the boot CA through HPE's `Bios/tlsconfig` settings (current after the reset).
//! - `bare`: a BMC with no place for them fails the step at once, naming what is missing.
//! - `enrolled`: a BMC that has both already: nothing posted again, no restart.

use std::time::Duration;

use serde_json::{json, Value};

use super::bios::{boot_at_each_reset, events, machine, run_of, with_image};
use crate::bmc_fake::{self, Mode};
use crate::common::appliance::Appliance;

const CONFIG: &str = r#"[bmc]
poll_interval_ms = 100
retry_backoff_ms = 50
[provision]
[[provision.hardware_profiles]]
name = "trusted"
scripts = ["echo trusted; exit 3"]
firmware_certificates = ["https-boot", "secure-boot-db"]
"#;

fn phases(ev: &[Value]) -> Vec<String> {
    ev.iter()
        .filter(|e| e["kind"] == "provision.step")
        .filter_map(|e| e["detail"]["bios"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_profile_puts_the_boot_ca_and_the_signing_certificate_into_the_firmware() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let a = Appliance::start_with_https(CONFIG, &format!("boot_port = {free}")).await;
    let data = a.dir.path();
    let boot_ca = std::fs::read_to_string(data.join("tls/boot-ca.pem")).expect("the boot CA, made with boot_port");
    let boot_ca = boot_ca.trim().to_string();
    // BootOS's signing key as the appliance makes it beside a signed image.
    let sealer = rackboot::secrets::Sealer::load_or_create(data).unwrap();
    let db = rackboot::secureboot::ensure(data, &sealer).unwrap().cert_pem.trim().to_string();
    with_image(&a);

    let cert = bmc_fake::cert();
    let mut machines = Vec::new();
    for (i, mode) in [Mode::Good, Mode::Hpe, Mode::NoMedia, Mode::Good].into_iter().enumerate() {
        let fake = bmc_fake::start(mode, Default::default(), Duration::ZERO, &cert).await;
        if i == 3 {
            let mut c = fake.certs.lock().unwrap();
            (c.boot, c.db) = (vec![boot_ca.clone()], vec![db.clone()]);
        }
        machines.push(machine(&a, &format!("52:54:00:c1:00:0{}", i + 1), fake, "trusted").await);
    }
    boot_at_each_reset(&a, &machines).await;

    // dmtf and hpe: enrolled, restarted into, read back, on to the profile's script.
    for m in &machines[..2] {
        let run = run_of(&a, m.task).await;
        assert_eq!(run["step"]["step"], "configure", "past the BIOS step, at the script: {run}");
        assert!(run["error"].as_str().unwrap().contains("exit code 3"), "{run}");
        assert_eq!(*m.fake.resets.lock().unwrap(), ["On", "ForceRestart"], "one restart for the certificates");
        let ev = events(&a, m.mac).await;
        assert_eq!(phases(&ev), ["apply", "written", "verify", "verified"], "{ev:?}");
        let written = ev.iter().find(|e| e["detail"]["bios"] == "written").unwrap();
        assert_eq!(written["detail"]["attributes"], json!(["certificate https-boot", "certificate secure-boot-db"]));
    }
    {
        let c = machines[0].fake.certs.lock().unwrap();
        assert_eq!((c.boot.as_slice(), c.db.as_slice()), ([boot_ca.clone()].as_slice(), [db.clone()].as_slice()));
        let c = machines[1].fake.certs.lock().unwrap();
        assert_eq!(c.hpe_current, std::slice::from_ref(&boot_ca), "current after the reset: {c:?}");
        assert!(c.hpe_pending.is_empty() && c.boot.is_empty(), "{c:?}");
        assert_eq!(c.db, std::slice::from_ref(&db));
    }

    // bare: refused at once, nothing restarted.
    let m = &machines[2];
    let run = run_of(&a, m.task).await;
    let error = run["error"].as_str().unwrap();
    assert_eq!((run["state"].as_str(), run["step"]["step"].as_str()), (Some("failed"), Some("bios")), "{run}");
    assert!(error.contains("offers no place for the boot CA for HTTPS boot"), "{error}");
    assert_eq!(*m.fake.resets.lock().unwrap(), ["On"]);

    // enrolled: recognised (the db by its fingerprint alone), nothing sent, no restart.
    let m = &machines[3];
    let run = run_of(&a, m.task).await;
    assert_eq!(run["step"]["step"], "configure", "{run}");
    assert_eq!(phases(&events(&a, m.mac).await), ["apply", "already set"]);
    assert_eq!(*m.fake.resets.lock().unwrap(), ["On"]);
    let c = m.fake.certs.lock().unwrap();
    assert_eq!((c.boot.len(), c.db.len()), (1, 1), "nothing posted twice");
}
