//! The Ansible inventory end to end: a node takes its lease from rackboot (busybox udhcpc), is
//! placed in a rack, tagged and marked installed; Debian's `ansible-inventory` reads the
//! inventory through `rackboot inventory --ansible` as its inventory script, and `ansible -m
//! ping` reaches the node over SSH (an sshd in the node's namespace) at the address the inventory
//! gives it. A serial holding Jinja (as a node could report it) is shown, never evaluated.

use crate::netns::{full_config, require, Net};

const NODE_MAC: &str = "52:54:00:3d:00:01";

#[test]
#[ignore = "e2e: needs root, ip netns, udhcpc, ansible-core, sshd"]
fn ansible_reads_the_inventory_through_its_script_and_pings_the_node_at_its_address() {
    require(&["ip", "udhcpc", "ansible", "ansible-inventory", "sshd", "ssh-keygen", "python3"]);
    let mut net = Net::new("an");
    let node = net.add_client("node", NODE_MAC);
    let data = net.path("data");
    net.start_rackboot(&full_config(&data));
    let ip = super::proxy::lease(&net, &node);
    let csv = format!("{NODE_MAC},web-01,,7");
    net.api("POST", "/racks", Some(&serde_json::json!({"name": "r12", "machines_csv": csv}).to_string()));
    // The serial as a hostile node would report it: Jinja that runs a command on the controller.
    let marker = net.path("pwned");
    let serial = format!("{{{{ lookup('pipe', 'touch {}') }}}}", marker.display());
    let patch = serde_json::json!({"tags": ["web", "eu-west"], "state": "installed", "serial": serial});
    net.api("PATCH", &format!("/machines/{NODE_MAC}"), Some(&patch.to_string()));

    // The node's sshd, root's key only.
    let dir = net.path("ssh");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display();
    for key in ["host_key", "id"] {
        let out = net.run(&node, &format!("ssh-keygen -q -t ed25519 -N '' -C lab -f {d}/{key}"));
        assert!(out.status.success(), "ssh-keygen: {}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
    std::fs::write(
        dir.join("sshd_config"),
        format!(
            "ListenAddress {ip}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\n\
             PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             UsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\n"
        ),
    )
    .unwrap();
    std::fs::create_dir_all("/run/sshd").unwrap();
    net.spawn(&node, &["/usr/sbin/sshd", "-D", "-e", "-f", &format!("{d}/sshd_config")], "sshd.log");

    // The two-line inventory script the book shows.
    let script = dir.join("rackboot.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec {} inventory --ansible --api https://198.18.0.1 --ca {} --token-file {} \"$@\"\n",
            env!("CARGO_BIN_EXE_rackboot"),
            net.ca().display(),
            data.join("admin.token").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ansible = |cmd: &str| {
        let env = format!("ANSIBLE_LOCAL_TEMP={d}/tmp ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_NOCOLOR=1");
        let out = net.run(&net.srv, &format!("{env} {cmd}"));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{cmd}: {text}{}", String::from_utf8_lossy(&out.stderr));
        text
    };

    let listed: serde_json::Value =
        serde_json::from_str(&ansible(&format!("ansible-inventory -i {} --list", script.display()))).unwrap();
    let hosts = |g: &str| listed[g]["hosts"].clone();
    for group in ["rack_r12", "state_installed", "tag_web", "tag_eu_west"] {
        assert_eq!(hosts(group), serde_json::json!(["web-01"]), "{group}: {listed}");
    }
    let vars = &listed["_meta"]["hostvars"]["web-01"];
    assert_eq!(vars["ansible_host"], ip.as_str(), "{vars}");
    assert_eq!((vars["rackboot_rack"].as_str(), vars["rackboot_slot"].as_u64()), (Some("r12"), Some(7)), "{vars}");
    assert_eq!(vars["rackboot_macs"], serde_json::json!([NODE_MAC]), "{vars}");
    let one: serde_json::Value =
        serde_json::from_str(&ansible(&format!("{} --host web-01", script.display()))).unwrap();
    assert_eq!(one["ansible_host"], ip.as_str(), "{one}");

    // The node's words are shown as they are, never evaluated on the controller.
    let shown = ansible(&format!("ansible -i {} web-01 -m debug -a var=rackboot_serial", script.display()));
    assert!(shown.contains("lookup('pipe'"), "{shown}");
    assert!(!marker.exists(), "a node-reported string ran a command on the controller");

    // Ansible reaches the node where the inventory says it is.
    let ping = ansible(&format!("ansible -i {} tag_web -m ping -u root --private-key {d}/id", script.display()));
    assert!(ping.contains("web-01 | SUCCESS") && ping.contains("\"pong\""), "{ping}\n{}", net.log("sshd.log"));
}
