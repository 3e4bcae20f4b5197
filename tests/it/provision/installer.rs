//! Provisioning through an OS installer against the whole appliance in-process: answer files
//! rendered per machine, the installer's report-back handing the node to its installed agent
//! (token bound to the machine), and a run failing when the installer never reports back. No root
//! needed.

use std::time::Duration;

use crate::common::appliance::Appliance;
use crate::common::provision::{body_of, config, reboot_job_succeeds, run_identity, run_where};
use hyper::Method;
use rackboot_agent::wire::AgentMode;
use serde_json::{json, Value};

#[tokio::test]
async fn answer_files_are_rendered_per_machine_and_the_preseed_passes_debconf() {
    let post = tempfile::tempdir().unwrap();
    let a = Appliance::start(&config(post.path())).await;
    a.api
        .ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:b0:00:09"], "hostname": "inst01"})))
        .await
        .unwrap();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], a.port).into();
    let get = |path: String| async move { crate::common::http_get(addr, &path).await };
    // The answer token a boot script to the machine's address carries (see the next test).
    let answer = rackboot::cmdb::TokenUse::Answer;
    let cmdb = &a.app.as_ref().unwrap().cmdb;
    let t = cmdb.issue_boot_token("52:54:00:b0:00:09".parse().unwrap(), answer, String::new(), Some(60)).await.unwrap();
    for kind in ["kickstart", "preseed", "autoinstall"] {
        let r = get(format!("/boot/answer/{kind}/{t}?mac=52:54:00:b0:00:09&disk=/dev/sda")).await;
        assert!(r.starts_with("HTTP/1.0 200") || r.starts_with("HTTP/1.1 200"), "{kind}: {r}");
        assert!(r.contains("inst01"), "{kind}: {r}");
        assert!(r.contains("sda"), "{kind}: {r}");
        // Without it, from the machine's own address: refused, whatever the URL.
        for path in [
            format!("/boot/answer/{kind}?mac=52:54:00:b0:00:09&disk=/dev/sda"),
            format!("/boot/answer/{kind}/no-token?mac=52:54:00:b0:00:09&disk=/dev/sda"),
            format!("/boot/answer/{kind}/{}?mac=52:54:00:b0:00:09&disk=/dev/sda", "a".repeat(32)),
        ] {
            let r = get(path).await;
            assert!(r.contains(" 403 ") && r.contains("token") && !r.contains("inst01"), "{kind}: {r}");
        }
    }
    let r = get(format!("/boot/answer/jumpstart/{t}?mac=52:54:00:b0:00:09")).await;
    assert!(r.contains(" 404 "), "{r}");
    let r = get(format!("/boot/answer/preseed/{t}?mac=52:54:00:b0:00:99&disk=/dev/sda")).await;
    assert!(r.contains(" 404 "), "{r}");
    // No disk given and no inventory to choose one from: refused with the reason.
    let r = get(format!("/boot/answer/preseed/{t}?mac=52:54:00:b0:00:09")).await;
    assert!(r.contains(" 409 ") && r.contains("inventory"), "{r}");

    // Ubuntu's installer takes the autoinstall file as a cloud-init NoCloud seed.
    let r = get(format!("/boot/nocloud/52:54:00:b0:00:09/{t}/meta-data")).await;
    assert!(r.contains(" 200 ") && r.contains("local-hostname: inst01\n"), "{r}");
    let r = get(format!("/boot/nocloud/52:54:00:b0:00:09/{t}/user-data")).await;
    assert!(r.contains(" 409 ") && r.contains("inventory"), "{r}");
    let r = get(format!("/boot/nocloud/52:54:00:b0:00:09/{t}/passwd")).await;
    assert!(r.contains(" 404 "), "{r}");
    for file in ["meta-data", "user-data", "vendor-data"] {
        let r = get(format!("/boot/nocloud/52:54:00:b0:00:09/{file}")).await;
        assert!(r.contains(" 403 ") && !r.contains("inst01"), "{r}");
        let r = get(format!("/boot/nocloud/52:54:00:b0:00:09/{}/{file}", "b".repeat(32))).await;
        assert!(r.contains(" 403 ") && !r.contains("inst01"), "{r}");
    }

    // debconf's own parser accepts the preseed (debconf is part of every Debian system).
    let r = get(format!("/boot/answer/preseed/{t}?mac=52:54:00:b0:00:09&disk=/dev/sda")).await;
    let body = r.split_once("\r\n\r\n").unwrap().1.to_string();
    let file = post.path().join("preseed.cfg");
    std::fs::write(&file, body).unwrap();
    match std::process::Command::new("debconf-set-selections").arg("--checkonly").arg(&file).output() {
        Ok(out) => assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr)),
        Err(_) => eprintln!("SKIPPED the debconf check: debconf-set-selections is not installed"),
    }
}

#[tokio::test]
async fn an_installer_task_boots_the_installer_whose_report_back_hands_the_node_to_its_agent() {
    let post = tempfile::tempdir().unwrap();
    let marker = post.path().join("post.out");
    std::fs::write(
        post.path().join("mark.sh"),
        format!("echo \"post-install on $RACKBOOT_HOSTNAME\" > {}\n", marker.display()),
    )
    .unwrap();
    let extra = format!(
        "{}[boot]\n[[boot.profiles]]\nname = \"discovery\"\nkernel = \"bootos/vmlinuz\"\ninitrd = \"bootos/initrd.img\"\n\
         [[boot.profiles]]\nname = \"debian12\"\nkernel = \"d-i/linux\"\ninitrd = \"d-i/initrd.gz\"\nanswer = \"preseed\"\n\
         cmdline = \"auto=true priority=critical url={{{{ answer_url }}}}\"\n",
        config(post.path())
    );
    let mut a = Appliance::start(&extra).await;
    // What the installed system's finishing script downloads: the agent binary.
    let bootos = a.dir.path().join("boot/bootos");
    std::fs::create_dir_all(&bootos).unwrap();
    std::fs::write(bootos.join("rackboot-agent"), b"#!/bin/sh\necho agent\n").unwrap();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], a.port).into();
    let get = |path: String| async move { crate::common::http_get(addr, &path).await };
    let get_as = |path: String, token: String| async move {
        crate::common::http_get_with_header(addr, &path, Some(&format!("Authorization: Bearer {token}"))).await
    };

    // Tasks name an installer profile that exists and has an answer file, or an image; not both.
    for (spec, want) in [
        (json!({"select": {"next": 1}, "installer": "nope"}), 400),
        (json!({"select": {"next": 1}, "installer": "discovery"}), 400),
        (json!({"select": {"next": 1}}), 400),
        (json!({"select": {"next": 1}, "installer": "debian12", "image": "x.img"}), 400),
    ] {
        let (status, body) = a.api.call(Method::POST, "/tasks", Some(spec.clone())).await.unwrap();
        assert_eq!(status, want, "{spec} -> {body}");
    }

    let work = tempfile::tempdir().unwrap();
    let mac = "52:54:00:b0:00:0b";
    let agent = a.agent(mac, work.path());
    let spec = json!({
        "select": {"macs": [mac]}, "installer": "debian12", "hardware_profile": "lab", "disk": "/dev/vda",
        "hostname_pattern": "inst-{n}", "ssh_keys": ["ssh-ed25519 AAAAC3Nza test@lab"], "post_install": ["mark.sh"]
    });
    let task = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap();

    // Configure runs in BootOS, then the install step reboots it into the installer, which PXE
    // now boots with this machine's answer file.
    let run = run_where(&a, task, 30, "the installer", |r| {
        r["step"]["step"] == "install" && r["job"].is_u64() && r["error"].is_null()
    })
    .await;
    reboot_job_succeeds(&a, &run["job"]).await;
    agent.abort();
    // The appliance restarts while the machine is in its installer: nothing is lost.
    a.stop().await;
    a.boot().await;
    let script = body_of(&get(format!("/boot/ipxe?mac={mac}")).await, 200);
    // The answer URL carries this boot's token (the script went to the machine's address).
    let answer_url = script
        .split_whitespace()
        .find_map(|w| w.strip_prefix("url="))
        .expect("the answer URL on the command line")
        .to_string();
    let token = answer_url
        .strip_prefix(&format!("{}/boot/answer/preseed/", a.http_url()))
        .and_then(|rest| rest.strip_suffix(&format!("?mac={mac}")))
        .unwrap_or_else(|| panic!("{answer_url}"));
    assert!(token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()), "{answer_url}");
    assert!(script.contains("d-i/linux"), "{script}");
    // Still installing: the run waits for the installer, however long the reboot took.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let t = a.api.ok(Method::GET, &format!("/tasks/{task}"), None).await.unwrap();
    assert_eq!(
        (t["runs"][0]["step"]["step"].as_str(), t["runs"][0]["state"].as_str()),
        (Some("install"), Some("active"))
    );

    // The answer file names the report-back URL, and the run's token goes in a header.
    let preseed = body_of(&get(answer_url.replace(&a.http_url(), "")).await, 200);
    assert!(preseed.contains("d-i netcfg/get_hostname string inst-1"), "{preseed}");
    let finish = preseed
        .split_whitespace()
        .find(|w| w.contains("/boot/installed?"))
        .expect("a report-back URL in the late command")
        .trim_matches('"')
        .to_string();
    assert!(!finish.contains("token"), "no secret in a URL: {finish}");
    let token = preseed
        .split("--header \"Authorization: Bearer ")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the late command sends the token in a header")
        .to_string();
    assert!(token.len() >= 16 && token.chars().all(|c| c.is_ascii_alphanumeric()), "{token}");
    let path = finish.replace(&a.http_url(), "");
    // Only the right token counts, and only in the header.
    body_of(&get(path.clone()).await, 403);
    body_of(&get_as(path.clone(), "forged".into()).await, 403);
    body_of(&get(format!("{path}&token={token}")).await, 400);
    let url_token = get(format!("{path}&token={token}")).await;
    assert!(url_token.contains("Authorization header"), "{url_token}");

    // With a network spec, the installed system gets it as networkd files, with the installer's
    // netplan set aside; its cloud-init is pointed at the machine's seed.
    let spec = json!({"ethernets": [{"name": "nic0", "mac": mac, "dhcp": true}], "vlans": [{"id": 20, "link": "nic0", "dhcp": true}]});
    a.api.ok(Method::PUT, &format!("/machines/{mac}/network"), Some(spec)).await.unwrap();
    let root = work.path().join("target");
    for dir in ["etc/netplan", "etc/cloud", "lib/systemd/network", "lib/systemd/system"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("lib/systemd/system/systemd-networkd.service"), "[Unit]\n").unwrap();
    std::fs::write(root.join("etc/netplan/00-installer-config.yaml"), "network: {version: 2}\n").unwrap();
    std::fs::create_dir_all(root.join("etc/network")).unwrap();
    let ifupdown = "# The loopback network interface\nauto lo\niface lo inet loopback\n\nallow-hotplug ens3\niface ens3 inet dhcp\n";
    std::fs::write(root.join("etc/network/interfaces"), ifupdown).unwrap();

    // The installer's late command: fetch the script, run it against the installed root.
    let identity = body_of(&get_as(path.clone(), token.clone()).await, 200);
    let file = work.path().join("rackboot-finish.sh");
    std::fs::write(&file, &identity).unwrap();
    run_identity(&file, &root).await;
    let networkd = root.join("etc/systemd/network");
    let nic = std::fs::read_to_string(networkd.join("10-rackboot-nic0.network")).unwrap();
    assert!(
        nic.contains(&format!("PermanentMACAddress={mac}"))
            && nic.contains("DHCP=ipv4")
            && nic.contains("VLAN=nic0.20"),
        "{nic}"
    );
    assert!(networkd.join("10-rackboot-nic0.20.netdev").exists());
    let wants = root.join("etc/systemd/system/multi-user.target.wants/systemd-networkd.service");
    assert_eq!(
        std::fs::read_link(wants).unwrap(),
        std::path::Path::new("/lib/systemd/system/systemd-networkd.service")
    );
    assert!(!networkd.join("80-rackboot.network").exists(), "no catch-all DHCP beside the spec");
    assert!(root.join("etc/netplan/00-installer-config.yaml.rackboot-off").exists());
    assert!(!root.join("etc/netplan/00-installer-config.yaml").exists(), "the installer's netplan is set aside");
    let interfaces = std::fs::read_to_string(root.join("etc/network/interfaces")).unwrap();
    assert_eq!(interfaces, "auto lo\niface lo inet loopback\n", "ifupdown keeps loopback only");
    assert_eq!(std::fs::read_to_string(root.join("etc/network/interfaces.rackboot-off")).unwrap(), ifupdown);
    let cloud = std::fs::read_to_string(root.join("etc/cloud/cloud.cfg.d/90-rackboot.cfg")).unwrap();
    // Its seed URL carries the install's seed token: the seed answers it (from its address).
    let seed = cloud
        .lines()
        .find_map(|l| l.trim().strip_prefix("seedfrom: "))
        .unwrap_or_else(|| panic!("{cloud}"))
        .to_string();
    let seed_token = seed.strip_prefix(&format!("{}/boot/cloud-init/{mac}/", a.http_url())).unwrap_or_default();
    assert!(seed_token.len() == 33 && seed_token.ends_with('/') && seed_token != format!("{token}/"), "{seed}");
    let meta = body_of(&get(format!("{}meta-data", seed.replace(&a.http_url(), ""))).await, 200);
    assert!(meta.contains("local-hostname: inst-1"), "{meta}");
    // The answer token opens the answer file only, not the seed.
    body_of(&get(format!("/boot/cloud-init/{mac}/{token}/meta-data")).await, 403);
    assert!(cloud.contains("\n    fs_label: null\n"), "no search for a seed disk: {cloud}");
    assert_eq!(std::fs::read_to_string(root.join("etc/hostname")).unwrap(), "inst-1\n");
    assert!(std::fs::read_to_string(root.join("root/.ssh/authorized_keys")).unwrap().contains("test@lab"));
    assert_eq!(std::fs::read(root.join("usr/local/sbin/rackboot-agent")).unwrap(), b"#!/bin/sh\necho agent\n");
    // The installed agent talks HTTPS and trusts the appliance's CA only.
    let ca = std::fs::read_to_string(a.dir.path().join("tls/ca.pem")).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("etc/rackboot-agent/ca.pem")).unwrap(), ca);
    let defaults = std::fs::read_to_string(root.join("etc/default/rackboot-agent")).unwrap();
    assert_eq!(defaults, format!("RACKBOOT_URL={}\n", a.url()));
    // A system without systemd-networkd (RHEL: udev's .link files only) keeps the network its
    // installer set up from the spec (kickstart's lines): no networkd files, and no failure.
    let rhel = work.path().join("rhel");
    std::fs::create_dir_all(rhel.join("usr/lib/systemd/network")).unwrap();
    std::fs::create_dir_all(rhel.join("etc/NetworkManager/system-connections")).unwrap();
    run_identity(&file, &rhel).await;
    assert!(!rhel.join("etc/systemd/network/10-rackboot-nic0.network").exists(), "networkd files on RHEL");
    assert_eq!(std::fs::read_to_string(rhel.join("etc/hostname")).unwrap(), "inst-1\n", "the rest is written");
    // A binary that is not the one the script's hash names is not installed.
    std::fs::write(bootos.join("rackboot-agent"), b"#!/bin/sh\necho evil\n").unwrap();
    // Off the test's thread: the script downloads from the appliance running on it.
    let (f, r) = (file.clone(), root.clone());
    let out = tokio::task::spawn_blocking(move || std::process::Command::new("sh").arg(f).arg(r).output())
        .await
        .unwrap()
        .unwrap();
    assert!(!out.status.success(), "a tampered agent was installed");
    assert!(String::from_utf8_lossy(&out.stdout).contains("does not match its SHA-256"));
    assert_eq!(std::fs::read(root.join("usr/local/sbin/rackboot-agent")).unwrap(), b"#!/bin/sh\necho agent\n");
    std::fs::write(bootos.join("rackboot-agent"), b"#!/bin/sh\necho agent\n").unwrap();
    let state = root.join("var/lib/rackboot-agent");
    let read_session = |root: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(root.join("var/lib/rackboot-agent/session.json")).unwrap()).unwrap()
    };
    let first = read_session(&root);
    assert_eq!(first["approved"], true);
    // The machine boots its disk now.
    assert_eq!(a.get(&format!("/machines/{mac}")).await["state"], "installed");
    let script = body_of(&get(format!("/boot/ipxe?mac={mac}")).await, 200);
    assert!(!script.contains("d-i/linux"), "{script}");
    // An installer that lost the answer and asks again gets a new credential (the last wins).
    let again = body_of(&get_as(path.clone(), token.clone()).await, 200);
    std::fs::write(&file, &again).unwrap();
    run_identity(&file, &root).await;
    assert_ne!(read_session(&root)["credential"], first["credential"]);
    // Run without the root directory, the script refuses rather than write somewhere else.
    let out = std::process::Command::new("sh").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));

    // The installed system's agent renews with the credential it was handed; post-install runs.
    let installed = a.agent_with(mac, work.path(), AgentMode::Installed, Some(&state));
    let run = run_where(&a, task, 30, "installed", |r| r["state"] != "active").await;
    assert_eq!(run["state"], "installed", "{run}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "post-install on inst-1\n");
    let ev = a.get(&format!("/machines/{mac}/events")).await;
    assert!(ev["events"].as_array().unwrap().iter().any(|e| e["kind"] == "provision.installer_finished"), "{ev}");
    // Its agent is in: the token is good no more.
    body_of(&get_as(path, token).await, 409);
    assert!(a.get(&format!("/machines/{mac}")).await["installer"].is_null());
    installed.abort();
}

#[tokio::test]
async fn an_installer_that_never_reports_back_fails_its_run_and_the_machine_boots_bootos_again() {
    let post = tempfile::tempdir().unwrap();
    let extra = format!(
        "{}[boot]\n[[boot.profiles]]\nname = \"debian12\"\nkernel = \"d-i/linux\"\ninitrd = \"d-i/initrd.gz\"\nanswer = \"preseed\"\ncmdline = \"url={{{{ answer_url }}}}\"\n",
        config(post.path())
    );
    let a = Appliance::start(&extra).await;
    let work = tempfile::tempdir().unwrap();
    let mac = "52:54:00:b0:00:0d";
    let agent = a.agent(mac, work.path());
    let spec = json!({"select": {"macs": [mac]}, "installer": "debian12", "disk": "/dev/vda", "step_timeout_secs": 8});
    let task = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], a.port).into();
    let run = run_where(&a, task, 30, "the installer", |r| r["step"]["step"] == "install" && r["job"].is_u64()).await;
    let job = run["job"].as_u64().unwrap();
    crate::common::eventually(|| async {
        let m = a.api.ok(Method::GET, &format!("/machines/{mac}"), None).await?;
        anyhow::ensure!(m["installer"]["profile"] == "debian12", "{m}");
        // The agent has reported the hand-over to the installer before it goes away.
        let j = a.api.ok(Method::GET, &format!("/jobs/{job}"), None).await?;
        anyhow::ensure!(j["state"] == "succeeded", "{j}");
        // The token is for the machine alone: the API does not show it.
        anyhow::ensure!(m["installer"].get("token").is_none() && !m.to_string().contains("token"), "{m}");
        Ok(())
    })
    .await;
    agent.abort();
    let script = body_of(&crate::common::http_get(addr, &format!("/boot/ipxe?mac={mac}")).await, 200);
    assert!(script.contains("d-i/linux"), "{script}");
    let run = run_where(&a, task, 30, "failed", |r| r["state"] != "active").await;
    assert_eq!(run["state"], "failed");
    assert!(run["error"].as_str().unwrap().contains("did not report back"), "{run}");
    let m = a.get(&format!("/machines/{mac}")).await;
    assert!(m["installer"].is_null() && m["state"] == "failed", "{m}");
    let script = body_of(&crate::common::http_get(addr, &format!("/boot/ipxe?mac={mac}")).await, 200);
    assert!(script.contains("bootos/vmlinuz"), "a power cycle boots BootOS again:\n{script}");
    // A late report-back finds nothing to finish.
    let path = format!("/boot/installed?mac={mac}");
    body_of(&crate::common::http_get_with_header(addr, &path, Some("Authorization: Bearer whatever")).await, 409);
}
