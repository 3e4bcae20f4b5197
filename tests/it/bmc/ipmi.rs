//! The IPMI driver through the power service with a stand-in `ipmitool` (a shell script that
//! behaves like VirtualBMC: `power cycle` answers 0xcc): the password reaches it only in a 0600
//! file named by `-f`, deleted afterwards, never in argv; on/off/status are read back; a cycle
//! the BMC refuses falls back to off + on; PXE once in UEFI mode passes `options=efiboot`;
//! refused credentials fail at once; a hung ipmitool is killed at the timeout. (A real
//! VirtualBMC over libvirt is left to the vm-lab libvirt flow.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use rackboot::bmc::power::{Caller, PowerError};
use rackboot::bmc::{Bmc, BmcError, Power, PowerAction, PowerState, Protocol, TlsPolicy};
use rackboot::cmdb::{Cmdb, NewMachine};
use rackboot::config::BmcConfig;

const SCRIPT: &str = r#"#!/bin/sh
dir=$(dirname "$0")
echo "$*" >> "$dir/args.log"
while [ $# -gt 0 ]; do
  case "$1" in -f) pwfile="$2"; shift;; chassis) shift; break;; esac
  shift
done
stat -c %a "$pwfile" >> "$dir/modes.log"
echo "$pwfile" >> "$dir/files.log"
if [ "$(cat "$pwfile")" != "ipmi-Secret-3" ]; then echo "Error: RAKP 2 HMAC is invalid" >&2; exit 1; fi
state=$(cat "$dir/state")
if [ "$state" = hang ]; then echo $$ > "$dir/hung.pid"; exec sleep 30; fi
case "$*" in
  "power status") echo "Chassis Power is $state";;
  "power on") echo on > "$dir/state"; echo "Chassis Power Control: Up/On";;
  "power off"|"power soft") echo off > "$dir/state"; echo "Chassis Power Control: Down/Off";;
  "power cycle") echo "Set Chassis Power Control to Cycle failed: Invalid data field in request" >&2; exit 1;;
  "bootdev pxe"*) echo "$*" >> "$dir/boot.log"; echo "Set Boot Device to pxe";;
  *) echo "unknown $*" >&2; exit 1;;
esac
"#;

struct Rig {
    dir: tempfile::TempDir,
    cmdb: Cmdb,
    power: Power,
}

async fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("ipmitool");
    std::fs::write(&bin, SCRIPT).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.path().join("state"), "off").unwrap();
    let cmdb = Cmdb::open(&dir.path().join("cmdb.redb"), 64).unwrap();
    let cfg = BmcConfig {
        request_timeout: Duration::from_millis(1500),
        poll_interval: Duration::from_millis(50),
        retry_backoff: Duration::from_millis(50),
        retries: 1,
        ipmitool: bin,
        ..BmcConfig::default()
    };
    let power = Power::new(cfg, cmdb.clone(), Arc::new(rackboot::secrets::Sealer::from_key(&[3u8; 32])), String::new());
    Rig { dir, cmdb, power }
}

impl Rig {
    async fn machine(&self, n: u8, password: &str) -> u64 {
        let mac = format!("52:54:00:d0:00:{n:02x}").parse().unwrap();
        let m = self.cmdb.create_machine(NewMachine { macs: vec![mac], ..Default::default() }).await.unwrap();
        let b = Bmc {
            machine_id: m.id,
            address: "198.18.0.77:6230".into(),
            protocol: Protocol::Ipmi,
            username: "admin".into(),
            password_sealed: self.power.seal(m.id, password).unwrap(),
            tls: TlsPolicy::Ca,
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

    async fn act(&self, id: u64, action: PowerAction, uefi: bool) -> Result<rackboot::bmc::PowerOutcome, BmcError> {
        self.power.act(id, action, uefi, Caller::Operator).await.map_err(|e| match e {
            PowerError::Bmc { error, .. } => error,
            other => panic!("{other}"),
        })
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ipmi_power_goes_through_ipmitool_with_the_password_in_a_private_file() {
    let r = rig().await;
    let id = r.machine(1, "ipmi-Secret-3").await;
    assert_eq!(r.act(id, PowerAction::Status, false).await.unwrap().state, PowerState::Off);
    assert_eq!(r.act(id, PowerAction::On, false).await.unwrap().state, PowerState::On);
    let out = r.act(id, PowerAction::Cycle, false).await.unwrap();
    assert_eq!(out.state, PowerState::On);
    assert!(out.fallback.unwrap().contains("restart failed"), "0xcc on cycle: off + on");
    r.act(id, PowerAction::PxeOnce, true).await.unwrap();
    r.act(id, PowerAction::PxeOnce, false).await.unwrap();
    assert_eq!(r.log("boot.log"), "bootdev pxe options=efiboot\nbootdev pxe\n");
    assert_eq!(r.act(id, PowerAction::Off, false).await.unwrap().state, PowerState::Off);

    let args = r.log("args.log");
    assert!(args.lines().all(|l| l.starts_with("-v -I lanplus -C 3 -H 198.18.0.77 -p 6230 -U admin -f ")), "{args}");
    assert!(!args.contains("ipmi-Secret-3"), "the password is never in argv");
    assert!(r.log("modes.log").lines().all(|m| m == "600"), "{}", r.log("modes.log"));
    for f in r.log("files.log").lines() {
        assert!(!std::path::Path::new(f).exists(), "{f} was left behind");
    }
    let ev = r.cmdb.events(id, 0, 100).await.unwrap();
    assert_eq!(ev.iter().filter(|e| e.kind.as_str() == "power.action").count(), 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_credentials_fail_fast_and_a_hung_ipmitool_is_killed() {
    let r = rig().await;
    let wrong = r.machine(1, "not-it").await;
    let t = Instant::now();
    let e = r.act(wrong, PowerAction::On, false).await.unwrap_err();
    assert!(matches!(e, BmcError::Auth(_)), "{e}");
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(r.log("args.log").lines().count(), 1, "one run, no retries");
    assert!(
        matches!(r.act(wrong, PowerAction::On, false).await.unwrap_err(), BmcError::Auth(m) if m.contains("not tried again"))
    );
    assert_eq!(r.log("args.log").lines().count(), 1, "held off: ipmitool not run again");

    let id = r.machine(2, "ipmi-Secret-3").await;
    std::fs::write(r.dir.path().join("state"), "hang").unwrap();
    let t = Instant::now();
    let e = r.act(id, PowerAction::Status, false).await.unwrap_err();
    assert!(matches!(e, BmcError::Timeout(_)), "{e}");
    assert!(t.elapsed() < Duration::from_secs(6), "two tries of 1.5 s: {:?}", t.elapsed());
    let pid: i32 = r.log("hung.pid").trim().parse().unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "));
    assert!(!alive, "the hung ipmitool ({pid}) was killed");
    for f in r.log("files.log").lines() {
        assert!(!std::path::Path::new(f).exists(), "{f} was left behind after a timeout");
    }
}
