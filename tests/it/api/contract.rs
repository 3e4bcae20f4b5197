//! The API contract against the whole appliance: one problem+json error shape, cursor
//! pagination with server-side filters, the event list, and the live event stream resuming
//! with Last-Event-ID without a gap or a duplicate.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::*;
use http_body_util::BodyExt;
use hyper::Method;
use rackboot::client::ApiClient;
use serde_json::{json, Value};

async fn raw(
    api: &ApiClient,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, Value) {
    let resp = api.send(method, path, headers, body.to_string()).await.unwrap();
    let status = resp.status().as_u16();
    let ctype = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, ctype, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn assert_problem(status: u16, ctype: &str, p: &Value, want: u16) {
    assert_eq!(status, want, "{p}");
    assert_eq!(ctype, "application/problem+json", "{p}");
    assert_eq!(p["status"], want, "{p}");
    assert!(p["type"].as_str().unwrap().starts_with("urn:rackboot:problem:"), "{p}");
    assert!(!p["title"].as_str().unwrap().is_empty() && !p["detail"].as_str().unwrap().is_empty(), "{p}");
}

#[tokio::test]
async fn every_error_is_a_problem_naming_the_field_at_fault() {
    let lab = Lab::start("").await;
    let api = &lab.api;
    let json = [("content-type", "application/json")];
    let (s, c, p) = raw(api, Method::GET, "/no/such/thing", &[], "").await;
    assert_problem(s, &c, &p, 404);
    let (s, c, p) = raw(api, Method::PUT, "/machines", &json, "{}").await;
    assert_problem(s, &c, &p, 405);
    let (s, c, p) = raw(api, Method::GET, "/machines?limit=0", &[], "").await;
    assert_problem(s, &c, &p, 400);
    assert_eq!(p["field"], "limit");
    let (s, c, p) = raw(api, Method::GET, "/machines?cursor=bogus", &[], "").await;
    assert_problem(s, &c, &p, 400);
    assert_eq!(p["field"], "cursor");
    let (s, c, p) = raw(api, Method::GET, "/machines?colour=red", &[], "").await;
    assert_problem(s, &c, &p, 400);
    let (s, c, p) = raw(api, Method::POST, "/machines", &json, r#"{"macs": [], "surprise": 1}"#).await;
    assert_problem(s, &c, &p, 400);
    assert_eq!(p["field"], "surprise");
    let (s, c, p) = raw(api, Method::POST, "/machines", &json, "{not json").await;
    assert_problem(s, &c, &p, 400);
    let (s, c, p) = raw(api, Method::POST, "/machines", &[("content-type", "text/plain")], "{}").await;
    assert_problem(s, &c, &p, 415);
    let (s, c, p) = raw(api, Method::GET, "/jobs/notanumber", &[], "").await;
    assert_problem(s, &c, &p, 400);
    let (s, c, p) = raw(api, Method::GET, "/machines/99999", &[], "").await;
    assert_problem(s, &c, &p, 404);
    let (s, c, p) = raw(api, Method::GET, "/events?kind=dhcp.bogus", &[], "").await;
    assert_problem(s, &c, &p, 400);
    assert_eq!(p["field"], "kind");

    let stranger = ApiClient::new(&lab.https_url(), "wrong".into(), lab.ca_pem().as_bytes()).unwrap();
    let resp = stranger.send(Method::GET, "/machines", &[], String::new()).await.unwrap();
    assert_eq!(resp.headers().get("www-authenticate").unwrap(), "Bearer");
    let (s, c, p) = raw(&stranger, Method::GET, "/machines", &[], "").await;
    assert_problem(s, &c, &p, 401);
    // The document and /metrics need a viewer's token too, unless configured public.
    let (s, c, p) = raw(&stranger, Method::GET, "/openapi.json", &[], "").await;
    assert_problem(s, &c, &p, 401);
    let (s, _, doc) = raw(api, Method::GET, "/openapi.json", &[], "").await;
    assert_eq!(s, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let https = lab.app.as_ref().unwrap().https_addr;
    let (s, body) = https_get(https, &lab.ca_pem(), "/metrics").await;
    assert_eq!(s, 401, "{body}");
    let token = lab.app.as_ref().unwrap().admin_token.clone();
    let (s, body) = https_get_with(https, &lab.ca_pem(), "/metrics", Some(&token)).await;
    assert!(s == 200 && body.contains("rackboot_http_requests_total"), "{s} {body}");

    let mut open = Lab::start("[auth]\npublic_metrics = true\npublic_openapi = true\n").await;
    let https = open.app.as_ref().unwrap().https_addr;
    assert_eq!(https_get(https, &open.ca_pem(), "/metrics").await.0, 200, "configured public");
    assert_eq!(https_get(https, &open.ca_pem(), "/api/v1/openapi.json").await.0, 200, "configured public");
    open.stop().await;
}

/// Reads every page of `path` (a list under key `key`) with `limit`, checking each is no longer.
async fn all_pages(api: &ApiClient, path: &str, key: &str, limit: usize) -> Vec<Value> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let url = match &cursor {
            Some(c) => format!("{path}{sep}limit={limit}&cursor={c}"),
            None => format!("{path}{sep}limit={limit}"),
        };
        let v = api.ok(Method::GET, &url, None).await.unwrap();
        let items = v[key].as_array().unwrap();
        assert!(items.len() <= limit, "{url}: {} > {limit}", items.len());
        out.extend(items.iter().cloned());
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return out,
        }
    }
    panic!("{path}: the cursor never ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_by_cursor_and_filter_on_the_server() {
    let lab = Lab::start("").await;
    let api = &lab.api;
    api.ok(Method::PUT, "/profiles/rescue", Some(json!({"kernel": "k", "initrd": "i"}))).await.unwrap();
    for i in 0..25u8 {
        let tags = if i % 5 == 0 { json!(["rack7"]) } else { json!(["rack8"]) };
        let m = api
            .ok(
                Method::POST,
                "/machines",
                Some(
                    json!({"macs": [format!("52:54:00:cc:00:{i:02x}")], "hostname": format!("n{i:02}"), "tags": tags}),
                ),
            )
            .await
            .unwrap();
        if i % 4 == 0 {
            api.ok(Method::PATCH, &format!("/machines/{}", m["id"]), Some(json!({"boot_profile": "rescue"})))
                .await
                .unwrap();
        }
    }
    let all = all_pages(api, "/machines", "machines", 10).await;
    let second = api.ok(Method::GET, "/machines?limit=10", None).await.unwrap();
    let cursor = second["next_cursor"].as_str().unwrap();
    let second = api.ok(Method::GET, &format!("/machines?limit=10&cursor={cursor}"), None).await.unwrap();
    assert_eq!(second["total"], 25, "total counts every page");
    let ids: BTreeSet<u64> = all.iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert_eq!((all.len(), ids.len()), (25, 25), "every machine once");
    let rack7 = all_pages(api, "/machines?tag=rack7", "machines", 2).await;
    assert_eq!(rack7.len(), 5);
    assert!(rack7.iter().all(|m| m["tags"][0] == "rack7"));
    let pinned = api.ok(Method::GET, "/machines?profile=rescue&limit=3", None).await.unwrap();
    assert_eq!((pinned["total"].as_u64(), pinned["machines"].as_array().unwrap().len()), (Some(7), 3));
    let by_mac = api.ok(Method::GET, "/machines?q=52:54:00:CC:00:0A", None).await.unwrap();
    assert_eq!(by_mac["machines"][0]["hostname"], "n10");

    // An address a machine leased finds it.
    let ack = four_way(&lab, [0x52, 0x54, 0, 0xcc, 0, 3], 77).await;
    let ip = ack.yiaddr().to_string();
    let found = api.ok(Method::GET, &format!("/machines?q={ip}"), None).await.unwrap();
    assert_eq!(found["machines"][0]["hostname"], "n03", "{found}");
    let leases = all_pages(api, "/leases", "leases", 1).await;
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0]["ip"], ip.as_str());

    // Events: every page after the other, filtered by kind and by machine.
    let events = all_pages(api, "/events", "events", 7).await;
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "oldest first, no repeat: {seqs:?}");
    let registered = all_pages(api, "/events?kind=machine.registered", "events", 4).await;
    assert_eq!(registered.len(), 25);
    let n03 = found["machines"][0]["id"].as_u64().unwrap();
    let mine = all_pages(api, &format!("/events?machine={n03}"), "events", 2).await;
    let kinds: Vec<&str> = mine.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"dhcp.offer") && kinds.contains(&"dhcp.ack"), "{kinds:?}");
    assert!(mine.iter().all(|e| e["machine_id"] == n03));
    let timeline = all_pages(api, &format!("/machines/{n03}/events"), "events", 2).await;
    assert_eq!(timeline.len(), mine.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_resumes_from_last_event_id_with_no_gap_and_no_duplicate() {
    let lab = Lab::start("").await;
    let api = &lab.api;
    let mut stream = api.events("/events/stream", None).await.unwrap();
    // It opens with where it starts, so a client that drops before any event resumes from there.
    let start = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(start.event.as_deref(), Some("stream.start"));
    let head: u64 = start.id.unwrap().parse().unwrap();
    // A machine boots: DHCP four-way, then an operator moves it along.
    let ack = four_way(&lab, [0x52, 0x54, 0, 0xdd, 0, 1], 1).await;
    assert!(!ack.yiaddr().is_unspecified());
    let mut got: Vec<Value> = Vec::new();
    while got.len() < 3 {
        let ev = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
        let e: Value = serde_json::from_str(&ev.data).unwrap();
        assert_eq!(ev.id.as_deref(), Some(e["seq"].to_string().as_str()));
        assert_eq!(ev.event.as_deref(), e["kind"].as_str());
        assert!(e["seq"].as_u64().unwrap() > head);
        got.push(e);
    }
    // The machine's first event carries the state it was discovered in.
    assert_eq!((got[0]["kind"].as_str(), got[0]["state"].as_str()), (Some("machine.discovered"), Some("discovered")));
    // The client goes away mid-boot; the machine goes on without it.
    drop(stream);
    let last = got.last().unwrap()["seq"].as_u64().unwrap();
    four_way(&lab, [0x52, 0x54, 0, 0xdd, 0, 2], 2).await;
    let id = got[0]["machine_id"].as_u64().unwrap();
    api.ok(Method::PATCH, &format!("/machines/{id}"), Some(json!({"state": "ready", "hostname": "seen"})))
        .await
        .unwrap();
    lab.app.as_ref().unwrap().cmdb.flush().await.unwrap();
    let stored: Vec<u64> =
        all_pages(api, "/events", "events", 1000).await.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let newest = *stored.last().unwrap();
    assert!(newest > last + 3, "more happened while disconnected: {stored:?}");

    // Reconnect where it left off: everything after `last`, once, in order, then live.
    let mut stream = api.events("/events/stream", Some(last)).await.unwrap();
    let mut resumed = Vec::new();
    while resumed.last().is_none_or(|s| *s < newest) {
        let ev = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
        resumed.push(ev.id.unwrap().parse::<u64>().unwrap());
    }
    let want: Vec<u64> = stored.iter().copied().filter(|s| *s > last).collect();
    assert_eq!(resumed, want, "exactly the events after {last}");
    let mut before: Vec<u64> = got.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    before.extend(&resumed);
    assert_eq!(
        before,
        stored.iter().copied().filter(|s| *s >= before[0]).collect::<Vec<_>>(),
        "no gap across the reconnect"
    );

    // Live again, and a state change is an event of its own.
    let mut states = api.events(&format!("/events/stream?machine={id}&kind=machine.state"), None).await.unwrap();
    let start = tokio::time::timeout(Duration::from_secs(10), states.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(start.event.as_deref(), Some("stream.start"));
    api.ok(Method::PATCH, &format!("/machines/{id}"), Some(json!({"state": "failed"}))).await.unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(10), states.next()).await.unwrap().unwrap().unwrap();
    let e: Value = serde_json::from_str(&ev.data).unwrap();
    assert_eq!((e["detail"]["from"].as_str(), e["detail"]["to"].as_str()), (Some("ready"), Some("failed")), "{e}");
    assert_eq!(e["state"], "failed");
    // The other stream sees it too, after everything before it.
    let ev = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(ev.event.as_deref(), Some("machine.state"));
    assert!(ev.id.unwrap().parse::<u64>().unwrap() > newest);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rackboot_watch_prints_events_live() {
    let lab = Lab::start("").await;
    let base = lab.https_url();
    let token_file = lab.dir.path().join("admin.token");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .args(["watch", "--all", "--count", "3", "--api", &base, "--token-file"])
        .arg(&token_file)
        .arg("--ca")
        .arg(lab.dir.path().join("tls/ca.pem"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let it connect before the machine boots.
    tokio::time::sleep(Duration::from_millis(700)).await;
    four_way(&lab, [0x52, 0x54, 0, 0xee, 0, 1], 9).await;
    // It exits by itself after three events; a watch that never sees them is killed and fails.
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    });
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    killer.abort();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for kind in ["machine.discovered", "dhcp.offer", "dhcp.ack"] {
        assert!(text.contains(kind), "watch lacks {kind}:\n{text}");
    }
    assert!(text.contains("52:54:00:ee:00:01"), "{text}");
}

#[tokio::test]
async fn a_resume_past_the_newest_event_is_reset_and_job_ids_are_never_reused() {
    let lab = Lab::start("").await;
    let api = &lab.api;
    // A client that remembers an id from a CMDB that has since been recreated is told so.
    let mut stream = api.events("/events/stream", Some(1_000_000)).await.unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(ev.event.as_deref(), Some("reset"), "{ev:?}");
    // ...and then gets what happens next.
    api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:ab:00:01"]}))).await.unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(ev.event.as_deref(), Some("machine.registered"));

    let job = |mac: &'static str| async move {
        api.ok(Method::POST, "/jobs", Some(json!({"machine": mac, "action": {"kind": "reboot"}}))).await.unwrap()
            ["jobs"][0]["id"]
            .as_u64()
            .unwrap()
    };
    let first = job("52:54:00:ab:00:01").await;
    api.ok(Method::DELETE, "/machines/52:54:00:ab:00:01", None).await.unwrap();
    let (s, _) = api.call(Method::GET, &format!("/jobs/{first}"), None).await.unwrap();
    assert_eq!(s, 404, "a deleted machine's jobs go with it");
    api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:ab:00:02"]}))).await.unwrap();
    assert!(job("52:54:00:ab:00:02").await > first, "a deleted job's id is not handed out again");
}

/// The OpenAPI document names each schema after its Rust type, and a second type of the same
/// name silently takes the first one's place (a Tang key list once stood in for the plugin
/// keys' list): every type the document may carry has a name of its own. Types with
/// `#[schema(as = ...)]` are named by that.
#[test]
fn every_schema_type_has_a_name_of_its_own() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["crates", "src"] {
        walk(&root.join(dir), &mut files);
    }
    let mut seen: std::collections::HashMap<String, String> = Default::default();
    let mut twice = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if !(l.contains("derive(") && l.contains("ToSchema")) {
                continue;
            }
            // The item the derive is on: the next `struct` or `enum` line, unless renamed.
            let rest = &lines[i + 1..(i + 12).min(lines.len())];
            if rest
                .iter()
                .take_while(|r| !r.contains(" struct ") && !r.contains(" enum "))
                .any(|r| r.contains("schema(as"))
            {
                continue;
            }
            let Some(item) = rest.iter().find(|r| r.contains(" struct ") || r.contains(" enum ")) else { continue };
            let name: String = item
                .split_whitespace()
                .skip_while(|w| *w != "struct" && *w != "enum")
                .nth(1)
                .unwrap_or_default()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let at = format!("{}:{}", f.strip_prefix(root).unwrap().display(), i + 1);
            if let Some(first) = seen.insert(name.clone(), at.clone()) {
                twice.push(format!("{name}: {first} and {at}"));
            }
        }
    }
    assert!(twice.is_empty(), "schema types sharing a name (rename one):\n{}", twice.join("\n"));
}
