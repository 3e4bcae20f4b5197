//! A neighbour holding a machine's address and MAC reads none of its per-machine files: the
//! answer file of the installer it is booting and the cloud-init seed of its install are served
//! against tokens in the URL, never for a source address. The victim (127.0.0.5, reserved) is
//! pinned to a Debian installer; the neighbour asks from its own address (127.0.0.7) and from
//! the victim's. Before tokens, the victim's address alone read the preseed and the user-data.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use hyper::Method;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;

const VICTIM: &str = "52:54:00:e8:00:05";
const SECRET: &str = "#cloud-config\nchpasswd: {list: 'root:victim-secret'}\n";

/// A plain-HTTP GET of `path` from source address `from`: the status and the body.
async fn get_from(from: Ipv4Addr, to: SocketAddr, path: &str) -> (u16, String) {
    let s = tokio::net::TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::new(IpAddr::V4(from), 0)).unwrap();
    let mut c = s.connect(to).await.unwrap();
    c.write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).await.unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0), body.to_string())
}

/// The `url=` of a boot script's command line, relative to the appliance.
fn answer_path(script: &str, http: SocketAddr) -> String {
    let url = script.split_whitespace().find_map(|w| w.strip_prefix("url=")).unwrap_or_else(|| panic!("{script}"));
    url.replace(&format!("http://{http}"), "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_neighbour_with_the_victims_address_gets_neither_its_answer_file_nor_its_seed() {
    let profile =
        "[boot]\n[[boot.profiles]]\nname = \"debian12\"\nkernel = \"d-i/linux\"\ninitrd = \"d-i/initrd.gz\"\n\
                   answer = \"preseed\"\ncmdline = \"auto=true url={{ answer_url }}\"\n";
    let lab = Lab::start(profile).await;
    let http = lab.app.as_ref().unwrap().http_addr;
    let (victim_ip, neighbour_ip) = (Ipv4Addr::new(127, 0, 0, 5), Ipv4Addr::new(127, 0, 0, 7));
    let body = json!({"macs": [VICTIM], "hostname": "victim", "reserved_ip": victim_ip.to_string()});
    let m = lab.api.ok(Method::POST, "/machines", Some(body)).await.unwrap();
    let pin = json!({"boot_profile": "debian12"});
    lab.api.ok(Method::PATCH, &format!("/machines/{}", m["id"]), Some(pin)).await.unwrap();
    let (st, _) = lab
        .api
        .call(Method::PUT, &format!("/machines/{}/user-data", m["id"]), Some(json!({"text": SECRET})))
        .await
        .unwrap();
    assert_eq!(st, 204);
    let preseed = |p: &str| p.contains("d-i netcfg/get_hostname string victim");

    // The neighbour asks for the victim's boot script from its own address, many times: its
    // script names no token, and the victim's boot is not disturbed.
    for _ in 0..8 {
        let (st, script) = get_from(neighbour_ip, http, &format!("/boot/ipxe?mac={VICTIM}")).await;
        assert_eq!(st, 200, "{script}");
        assert!(script.contains("/boot/answer/preseed/no-token?mac="), "{script}");
        let (st, body) = get_from(neighbour_ip, http, &format!("{}&disk=/dev/sda", answer_path(&script, http))).await;
        assert!(st == 403 && !preseed(&body), "{st} {body}");
    }
    // The victim's own script carries its boot's token, which opens its answer file.
    let (st, script) = get_from(victim_ip, http, &format!("/boot/ipxe?mac={VICTIM}")).await;
    assert_eq!(st, 200, "{script}");
    let own = format!("{}&disk=/dev/sda", answer_path(&script, http));
    assert!(!own.contains("no-token"), "{own}");
    let (st, body) = get_from(victim_ip, http, &own).await;
    assert!(st == 200 && preseed(&body), "{st} {body}");

    // From the victim's address, without the token: every shape of URL is refused.
    let guessed = "0123456789abcdef".repeat(2);
    for path in [
        format!("/boot/answer/preseed?mac={VICTIM}&disk=/dev/sda"),
        format!("/boot/answer/preseed/no-token?mac={VICTIM}&disk=/dev/sda"),
        format!("/boot/answer/preseed/{guessed}?mac={VICTIM}&disk=/dev/sda"),
        format!("/boot/answer/kickstart/{guessed}?mac={VICTIM}&disk=/dev/sda"),
        format!("/boot/nocloud/{VICTIM}/user-data"),
        format!("/boot/nocloud/{VICTIM}/{guessed}/user-data"),
        format!("/boot/cloud-init/{VICTIM}/user-data"),
        format!("/boot/cloud-init/{VICTIM}/{guessed}/user-data"),
    ] {
        let (st, body) = get_from(victim_ip, http, &path).await;
        assert_eq!(st, 403, "{path}: {body}");
        assert!(!preseed(&body) && !body.contains("victim-secret"), "{path}: {body}");
    }
    // The answer token opens the answer file, not the installed system's seed.
    let token = own.split('/').nth(4).unwrap().split('?').next().unwrap().to_string();
    let (st, body) = get_from(victim_ip, http, &format!("/boot/cloud-init/{VICTIM}/{token}/user-data")).await;
    assert!(st == 403 && !body.contains("victim-secret"), "{st} {body}");

    // The seed token of the victim's install (as its identity step gets it) opens the seed from
    // the victim's address only.
    let cmdb = &lab.app.as_ref().unwrap().cmdb;
    let seed = rackboot::cmdb::TokenUse::Seed;
    let t = cmdb.issue_boot_token(VICTIM.parse().unwrap(), seed, String::new(), None).await.unwrap();
    let path = format!("/boot/cloud-init/{VICTIM}/{t}/user-data");
    assert_eq!(get_from(victim_ip, http, &path).await, (200, SECRET.to_string()));
    let (st, body) = get_from(neighbour_ip, http, &path).await;
    assert!(st == 403 && !body.contains("victim-secret"), "{st} {body}");

    // Nothing of a token shows on the victim's timeline.
    let events = lab.api.ok(Method::GET, &format!("/machines/{VICTIM}/events?limit=1000"), None).await.unwrap();
    let text = events.to_string();
    assert!(!text.contains(&token) && !text.contains(&t), "{text}");
    assert!(text.contains("\"answer_token\":true") && text.contains("\"answer_token\":false"), "{text}");
}
