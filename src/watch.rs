//! `rackboot watch`: prints the live event stream in the terminal, one line per event, and
//! reconnects with `Last-Event-ID` when the connection drops, so no event is lost or repeated.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use hyper::Method;
use serde_json::Value;

use crate::client::ApiClient;

/// What to watch.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    /// A machine id or MAC; `None` watches every machine.
    pub machine: Option<String>,
    /// Comma-separated event kinds.
    pub kind: Option<String>,
    /// Only events of machines in this state.
    pub state: Option<String>,
    /// Start after this event (replays what is stored after it first).
    pub after: Option<u64>,
    /// Stop after this many events (for scripts and tests); `None` runs until interrupted.
    pub count: Option<usize>,
}

/// Follows the stream and writes each event to `out` until `count` events or an error that
/// reconnecting cannot fix (a refused request).
pub async fn run(c: &ApiClient, w: Watch, out: &mut impl Write) -> anyhow::Result<()> {
    let mut query = Vec::new();
    for (k, v) in [("machine", &w.machine), ("kind", &w.kind), ("state", &w.state)] {
        if let Some(v) = v {
            query.push(format!("{k}={}", enc(v)));
        }
    }
    let path = format!("/events/stream?{}", query.join("&"));
    let mut last = w.after;
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut seen = 0usize;
    loop {
        let mut stream = match c.events(&path, last).await {
            Ok(s) => s,
            // The API refused the request itself (bad filter, token): retrying cannot help.
            Err(e) if e.to_string().starts_with("API error 4") => return Err(e),
            Err(error) => {
                eprintln!("rackboot watch: {error:#}; reconnecting");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Ok(Some(ev)) = stream.next().await {
            let e: Value = serde_json::from_str(&ev.data).unwrap_or(Value::Null);
            if let Some(id) = ev.id.as_deref().and_then(|i| i.parse().ok()) {
                last = Some(id);
            }
            match ev.event.as_deref() {
                // Where the stream starts: resuming from here loses nothing.
                Some("stream.start") => continue,
                Some("reset") => {
                    eprintln!("rackboot watch: {}", e["reason"].as_str().unwrap_or("the stream was reset"));
                    continue;
                }
                _ => {}
            }
            let machine = e["machine_id"].as_u64().unwrap_or(0);
            // A machine is named (operator, provisioning run) after it is first seen.
            let renamed =
                matches!(e["kind"].as_str(), Some("machine.updated" | "provision.step" | "provision.installed"));
            if renamed || !names.contains_key(&machine) {
                names.insert(machine, name_of(c, machine).await);
            }
            writeln!(out, "{}", line(&e, &names[&machine]))?;
            out.flush()?;
            seen += 1;
            if w.count.is_some_and(|n| seen >= n) {
                return Ok(());
            }
        }
        eprintln!("rackboot watch: stream ended; reconnecting after event {}", last.unwrap_or(0));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// How a machine is shown: its hostname or first MAC, with its id.
async fn name_of(c: &ApiClient, id: u64) -> String {
    match c.ok(Method::GET, &format!("/machines/{id}"), None).await {
        Ok(m) => match (m["hostname"].as_str(), m["macs"][0].as_str()) {
            (Some(h), _) => format!("{h}#{id}"),
            (None, Some(mac)) => format!("{mac}#{id}"),
            _ => format!("#{id}"),
        },
        Err(_) => format!("#{id}"),
    }
}

/// One event as a terminal line: time, machine, state, kind, detail.
pub fn line(e: &Value, machine: &str) -> String {
    let ms = e["at_ms"].as_u64().unwrap_or(0);
    let secs = ms / 1000 % 86_400;
    let time = format!("{:02}:{:02}:{:02}.{:03}", secs / 3600, secs / 60 % 60, secs % 60, ms % 1000);
    let state = e["state"].as_str().unwrap_or("-");
    let detail = match &e["detail"] {
        Value::Object(m) if m.is_empty() => String::new(),
        Value::Null => String::new(),
        d => d.to_string(),
    };
    let seq = e["seq"].as_u64().unwrap_or(0);
    format!("{time} {seq:>6} {machine:<24} {state:<12} {:<28} {detail}", e["kind"].as_str().unwrap_or("?"))
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b':' | b',' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_shows_time_machine_state_kind_and_detail() {
        let e = serde_json::json!({"seq": 12, "machine_id": 3, "at_ms": 3_723_004u64, "kind": "dhcp.ack",
            "state": "discovered", "detail": {"ip": "198.18.0.100"}});
        let l = line(&e, "node01#3");
        assert!(l.starts_with("01:02:03.004     12 node01#3"), "{l}");
        assert!(l.contains("discovered") && l.contains("dhcp.ack") && l.contains("198.18.0.100"), "{l}");
    }
}
