//! cloud-init's NoCloud seed of an installed node, against an in-process appliance: answered only
//! with the seed token of its install, from the machine's own address (neither alone is enough); user-data from the machine, else its rack (a task's sits
//! between, see e2e::vm::provision); bad user-data refused with nothing stored; the text never
//! shows in the machine's record, its timeline or the audit log.

use crate::common::appliance::Appliance;
use hyper::Method;
use serde_json::{json, Value};

const A: &str = "52:54:00:c1:00:01";
const B: &str = "52:54:00:c1:00:02";

async fn call(a: &Appliance, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    a.api.call(method, path, body).await.unwrap()
}

/// A plain-HTTP GET of `path`, from 127.0.0.1: the status and the body.
async fn get(a: &Appliance, path: &str) -> (u16, String) {
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], a.port).into();
    let r = crate::common::http_get(addr, path).await;
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, body.to_string())
}

/// The seed token of `mac`'s install, issued as the identity step issues it.
async fn token_of(a: &Appliance, mac: &str) -> String {
    let cmdb = &a.app.as_ref().unwrap().cmdb;
    cmdb.issue_boot_token(mac.parse().unwrap(), rackboot::cmdb::TokenUse::Seed, String::new(), None).await.unwrap()
}

/// A seed file of machine `mac` with `token`.
async fn seed(a: &Appliance, mac: &str, token: &str, file: &str) -> (u16, String) {
    get(a, &format!("/boot/cloud-init/{mac}/{token}/{file}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_answers_only_the_machine_and_user_data_is_kept_out_of_sight() {
    let a = Appliance::start("").await;
    // Machine A is at 127.0.0.1 (its reservation); machine B is somewhere else.
    let (st, m) = call(
        &a,
        Method::POST,
        "/machines",
        Some(json!({"macs": ["52:54:00:c1:00:01"], "hostname": "node-a", "reserved_ip": "127.0.0.1"})),
    )
    .await;
    assert_eq!(st, 201, "{m}");
    let id = m["id"].as_u64().unwrap();
    let (st, _) =
        call(&a, Method::POST, "/machines", Some(json!({"macs": ["52:54:00:c1:00:02"], "reserved_ip": "127.0.0.9"})))
            .await;
    assert_eq!(st, 201);
    let (ta, tb) = (token_of(&a, A).await, token_of(&a, B).await);

    let (st, meta) = seed(&a, A, &ta, "meta-data").await;
    assert_eq!(st, 200, "{meta}");
    assert_eq!(meta, format!("instance-id: rackboot-{id}\nlocal-hostname: node-a\n"));
    let (st, body) = seed(&a, B, &tb, "meta-data").await;
    assert_eq!(st, 403, "not the machine's address: {body}");
    // From the machine's own address, without its token: the URL of old, another machine's
    // token, a made-up one, the placeholder of a boot script sent elsewhere.
    for path in [
        format!("/boot/cloud-init/{A}/user-data"),
        format!("/boot/cloud-init/{A}/{tb}/user-data"),
        format!("/boot/cloud-init/{A}/{}/user-data", "0".repeat(32)),
        format!("/boot/cloud-init/{A}/no-token/user-data"),
        format!("/boot/cloud-init/{A}/{}/user-data", "f".repeat(100)),
    ] {
        let (st, body) = get(&a, &path).await;
        assert_eq!(st, 403, "{}: {body}", &path[..path.len().min(80)]);
        assert!(!body.contains(&tb) && body.contains("token"), "{body}");
    }
    // A later install's token pushes this one out (after the three kept beside it).
    let old = token_of(&a, A).await;
    for _ in 0..4 {
        token_of(&a, A).await;
    }
    assert_eq!(seed(&a, A, &old, "meta-data").await.0, 403, "an earlier install's token");
    let ta = token_of(&a, A).await;
    let (st, _) = seed(&a, A, &ta, "passwd").await;
    assert_eq!(st, 404);
    let (st, _) = seed(&a, A, &ta, "network-config").await;
    assert_eq!(st, 404, "no network spec");
    let (st, empty) = seed(&a, A, &ta, "user-data").await;
    assert_eq!((st, empty.as_str()), (200, "#cloud-config\n{}\n"));
    // cloud-init asks for vendor-data too, and retries a missing one ten times, a second apart
    // (measured in session 37: BENCHMARKS.md in git): it is answered, empty.
    let (st, vendor) = seed(&a, A, &ta, "vendor-data").await;
    assert_eq!((st, vendor.as_str()), (200, "#cloud-config\n{}\n"));

    // A bad user-data is refused naming the field, and nothing is stored.
    for bad in ["runcmd: [reboot]\n".to_string(), format!("#cloud-config\n{}", "#".repeat(70_000))] {
        let (st, p) = call(&a, Method::PUT, &format!("/machines/{id}/user-data"), Some(json!({"text": bad}))).await;
        assert_eq!((st, p["field"].as_str()), (400, Some("text")), "{p}");
    }
    let (st, _) = call(&a, Method::GET, &format!("/machines/{id}/user-data"), None).await;
    assert_eq!(st, 404);

    // The rack's, then the machine's own, which wins; removed, the rack's again.
    let (st, r) =
        call(&a, Method::POST, "/racks", Some(json!({"name": "r1", "machines_csv": "52:54:00:c1:00:01,node-a,,1\n"})))
            .await;
    assert_eq!(st, 201, "{r}");
    let secret = "#cloud-config\nchpasswd: {list: 'root:s3cret-from-the-rack'}\n";
    let (st, _) = call(&a, Method::PUT, "/racks/r1/user-data", Some(json!({"text": secret}))).await;
    assert_eq!(st, 204);
    assert_eq!(seed(&a, A, &ta, "user-data").await, (200, secret.to_string()));
    let own = "#cloud-config\nruncmd: [[touch, /etc/from-the-machine]]\n";
    let (st, _) = call(&a, Method::PUT, &format!("/machines/{id}/user-data"), Some(json!({"text": own}))).await;
    assert_eq!(st, 204);
    assert_eq!(seed(&a, A, &ta, "user-data").await, (200, own.to_string()));
    let (st, got) = call(&a, Method::GET, &format!("/machines/{id}/user-data"), None).await;
    assert_eq!((st, got["text"].as_str()), (200, Some(own)));

    // Nowhere else: the machine, the rack, the timeline, the audit log.
    for path in [
        format!("/machines/{id}"),
        "/racks/r1".to_string(),
        format!("/machines/{id}/events?limit=1000"),
        "/audit?limit=1000".to_string(),
    ] {
        let (st, v) = call(&a, Method::GET, &path, None).await;
        assert_eq!(st, 200, "{path}: {v}");
        let text = v.to_string();
        assert!(!text.contains("s3cret") && !text.contains("from-the-machine"), "{path} shows user-data: {text}");
    }

    let (st, _) = call(&a, Method::DELETE, &format!("/machines/{id}/user-data"), None).await;
    assert_eq!(st, 204);
    assert_eq!(seed(&a, A, &ta, "user-data").await, (200, secret.to_string()));
    // The rack's goes with the rack.
    let (st, _) = call(&a, Method::DELETE, "/racks/r1", None).await;
    assert_eq!(st, 204);
    assert_eq!(seed(&a, A, &ta, "user-data").await.1, "#cloud-config\n{}\n");
}
