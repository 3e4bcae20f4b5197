//! A BMC for a lab VM, in band and out: OpenIPMI's `ipmi_sim` with a LAN channel on
//! 198.18.0.5:623 (the server namespace's loopback) and a KCS interface the VM reaches through
//! qemu's `ipmi-bmc-extern` (a socket on 127.0.0.1:9002). Its LAN settings (address, MAC) come
//! from a small program, as `ipmi_sim` asks a real host for them. Used by `fallback`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::netns::{wait_for, Net};

/// The simulator's LAN address.
pub const ADDR: &str = "198.18.0.5";
/// The BMC's MAC address, as its LAN settings report it.
const MAC: &str = "52:54:00:ee:00:77";
/// The simulator's own administrator (user 2), for the checks from outside.
const ADMIN_PASSWORD: &str = "Lab-Admin-7";

/// The VM's in-band IPMI: a KCS interface whose BMC is the simulator.
pub const QEMU_ARGS: [&str; 6] = [
    "-chardev",
    "socket,id=ipmi0,host=127.0.0.1,port=9002,reconnect=10",
    "-device",
    "ipmi-bmc-extern,id=bmc0,chardev=ipmi0",
    "-device",
    "isa-ipmi-kcs,bmc=bmc0",
];

pub struct Sim;

impl Sim {
    /// Starts the simulator in the server namespace; `None` (with a note) without `ipmi_sim`.
    pub fn start(net: &mut Net) -> Option<Sim> {
        if !Path::new("/usr/bin/ipmi_sim").exists() {
            eprintln!("NOTE: no ipmi_sim (Debian's openipmi): the in-band BMC account is not checked");
            return None;
        }
        let dir = net.path("ipmi");
        std::fs::create_dir_all(dir.join("state")).unwrap();
        let lan = dir.join("lancfg.sh");
        std::fs::write(
            &lan,
            format!(
                "#!/bin/sh\n[ \"$1\" = get ] || exit 0\nshift\nfor p in \"$@\"; do\n  case $p in\n    ip_addr_src) echo ip_addr_src:static ;;\n    ip_addr) echo ip_addr:{ADDR} ;;\n    mac_addr) echo mac_addr:{MAC} ;;\n    subnet_mask) echo subnet_mask:255.255.255.255 ;;\n    *_ip_addr) echo $p:0.0.0.0 ;;\n    *_mac_addr) echo $p:00:00:00:00:00:00 ;;\n    *) echo \"Invalid parameter: $p\"; exit 1 ;;\n  esac\ndone\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&lan, std::fs::Permissions::from_mode(0o755)).unwrap();
        let auths = "none md2 md5 straight";
        std::fs::write(
            dir.join("lan.conf"),
            format!(
                "name \"rblab\"\nset_working_mc 0x20\n  startlan 1\n    addr {ADDR} 623\n    priv_limit admin\n    allowed_auths_callback {auths}\n    allowed_auths_user {auths}\n    allowed_auths_operator {auths}\n    allowed_auths_admin {auths}\n    guid a123456789abcdefa123456789abcdef\n    lan_config_program \"{}\"\n  endlan\n  serial kcs 127.0.0.1 9002 codec VM\n  user 1 true \"\" \"\" user 10 {auths}\n  user 2 true \"admin\" \"{ADMIN_PASSWORD}\" admin 10 {auths}\n",
                lan.display()
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("sim.emu"),
            "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nmc_enable 0x20\n",
        )
        .unwrap();
        std::fs::write(dir.join("admin.pw"), ADMIN_PASSWORD).unwrap();
        let srv = net.srv.clone();
        let out = net.run(&srv, &format!("ip addr add {ADDR}/32 dev lo"));
        assert!(out.status.success(), "{out:?}");
        let d = |f: &str| dir.join(f).display().to_string();
        net.spawn(
            &srv,
            &["ipmi_sim", "-c", &d("lan.conf"), "-f", &d("sim.emu"), "-s", &d("state"), "-n"],
            "ipmi_sim.log",
        );
        let sim = Sim;
        wait_for(20, || net.log("ipmi_sim.log"), || sim.ipmitool(net, "mc info").contains("Device ID").then_some(()));
        Some(sim)
    }

    /// ipmitool over the LAN as the simulator's own administrator.
    fn ipmitool(&self, net: &Net, args: &str) -> String {
        let pw = net.path("ipmi/admin.pw");
        let out =
            net.run(&net.srv, &format!("ipmitool -I lanplus -C 3 -H {ADDR} -U admin -f {} {args} 2>&1", pw.display()));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The VM with MAC `mac` booted BootOS with the simulator as its BMC: the appliance's own
    /// account is set up in band, works out of band, and gets a new password on request.
    pub fn check(&self, net: &Net, mac: &str) {
        let bmc = wait_for(
            180,
            || format!("{}\n{}", net.log("ipmi_sim.log"), net.log("fv0.serial")),
            || net.try_api("GET", &format!("/machines/{mac}/bmc")).filter(|b| b["inband"].is_object()),
        );
        println!("in-band BMC account: {bmc}");
        assert_eq!((bmc["protocol"].as_str(), bmc["address"].as_str()), (Some("ipmi"), Some(ADDR)), "{bmc}");
        assert_eq!((bmc["username"].as_str(), bmc["password_set"].as_bool()), (Some("rackboot"), Some(true)));
        assert_eq!(bmc["inband"]["user_id"], 3, "users 1 and 2 are the simulator's: the first free slot");
        assert_eq!(bmc["inband"]["mac"], MAC);
        let jobs = net.api("GET", &format!("/jobs?machine={mac}&limit=100"), None);
        let job =
            jobs["jobs"].as_array().unwrap().iter().find(|j| j["action"]["kind"] == "bmc_account").unwrap().clone();
        let out = net.api("GET", &format!("/jobs/{}/output", job["id"]), None)["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        println!("the account job: {out}");
        assert!(out.contains(&format!("set up on {ADDR}, channel 1")), "{out}");

        // Out of band through the new account: the appliance reads the power state with it.
        let status = net.api("POST", &format!("/machines/{mac}/power"), Some(r#"{"action":"status"}"#));
        println!("power through the in-band account: {status}");
        assert!(status["state"].is_string(), "{status}");
        // The simulator's administrator sees the user: enabled for IPMI, an administrator.
        let list = self.ipmitool(net, "user list 1");
        let row = list.lines().find(|l| l.split_whitespace().take(2).eq(["3", "rackboot"])).unwrap_or_default();
        assert!(row.contains("ADMINISTRATOR") && row.contains("true"), "{list}");
        // And so does the node, in band.
        let inside = super::provision::job_output(net, mac, "ipmitool user list 1");
        assert!(inside.lines().any(|l| l.starts_with("3 ") && l.contains("rackboot")), "{inside}");

        // A new password on request: the same job, and the appliance still gets in.
        net.api("POST", &format!("/machines/{mac}/bmc/inband"), None);
        wait_for(
            120,
            || net.log("fv0.serial"),
            || {
                let ev = net.try_api("GET", &format!("/machines/{mac}/events?limit=1000"))?;
                ev["events"]
                    .as_array()?
                    .iter()
                    .any(|e| e["kind"] == "bmc.inband" && e["detail"]["rotated"] == true)
                    .then_some(())
            },
        );
        let status = net.api("POST", &format!("/machines/{mac}/power"), Some(r#"{"action":"status"}"#));
        assert!(status["state"].is_string(), "after the new password: {status}");
    }
}
