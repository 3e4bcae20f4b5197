//! Benchmark: the web UI at 10,000 machines, and its live stream under a boot storm
//! (bench/ui.sh runs it in release mode). Starts the appliance in-process on loopback (DHCP in
//! full mode, answering the example as its relay agent), registers the machines and a 42-slot
//! rack, then:
//! - times the machine list, a search, the dashboard and the rack page (request to last byte);
//! - opens STREAMS rack pages' live streams (`/ui/racks/r1/live`) while BOOTS machines DHCP at
//!   once (DISCOVER and REQUEST, relayed) and the rack's 42 machines boot among them through the
//!   rack's switch (option 82); for every stream and rack machine it measures the time from the
//!   machine's DISCOVER to the stream's first frame naming it (event delivery).
//!
//!   cargo run --release --example ui_load [MACHINES] [STREAMS] [BOOTS]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dhcproto::v4::{relay, DhcpOption, Message, MessageType};
use dhcproto::{Decodable, Decoder, Encodable};
use hyper::Method;
use rackboot::client::ApiClient;
use rackboot::cmdb::NewMachine;
use rackboot::mac::Mac;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;

const PASSWORD: &str = "correct horse battery";

type Tls = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

struct Ui {
    addr: std::net::SocketAddr,
    tls: tokio_rustls::TlsConnector,
}

impl Ui {
    async fn connect(&self) -> anyhow::Result<Tls> {
        let tcp = tokio::net::TcpStream::connect(self.addr).await?;
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1".to_string())?;
        Ok(self.tls.connect(name, tcp).await?)
    }

    /// One request; the whole response as text.
    async fn call(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> anyhow::Result<String> {
        let mut s = self.connect().await?;
        s.write_all(request(method, path, headers, body).as_bytes()).await?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.ok();
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut r = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r + "\r\n" + body
}

fn percentiles(mut v: Vec<f64>) -> String {
    if v.is_empty() {
        return "no samples".into();
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)];
    format!("p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} samples)", at(0.5), at(0.99), v[v.len() - 1], v.len())
}

fn discover(mac: [u8; 6], xid: u32, port: Option<&str>) -> Vec<u8> {
    let mut m = Message::default();
    m.set_chaddr(&mac).set_xid(xid).set_giaddr([127, 0, 0, 1]);
    m.opts_mut().insert(DhcpOption::MessageType(MessageType::Discover));
    if let Some(port) = port {
        let mut info = relay::RelayAgentInformation::default();
        info.insert(relay::RelayInfo::AgentCircuitId(port.as_bytes().to_vec()));
        info.insert(relay::RelayInfo::AgentRemoteId(b"leaf-r1".to_vec()));
        m.opts_mut().insert(DhcpOption::RelayAgentInformation(info));
    }
    m.to_vec().expect("encodes")
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10_000);
    let streams: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(100);
    let boots: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1_000);
    let dir = tempfile::tempdir()?;
    let relay_sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await?);
    let cfg = rackboot::config::Config::parse(&format!(
        "[server]\ndata_dir = \"{}\"\naddress = \"127.0.0.1\"\n[http]\nlisten = \"127.0.0.1:0\"\nmax_connections_per_client = 4096\n[https]\nlisten = \"127.0.0.1:0\"\n[dhcp]\nmode = \"full\"\nport = 0\nrelay_port = {}\n[[dhcp.subnets]]\ncidr = \"127.0.0.0/8\"\npools = [\"127.0.16.1-127.0.255.250\"]\n[tftp]\nenabled = false\n[dns]\nenabled = false\n",
        dir.path().display(),
        relay_sock.local_addr()?.port()
    ))?;
    let app = rackboot::app::start(cfg).await?;
    let api = ApiClient::new(&format!("https://{}", app.https_addr), app.admin_token.clone(), app.ca_pem.as_bytes())?;
    let t = Instant::now();
    let mut pending = Vec::new();
    for i in 0..count {
        let cmdb = app.cmdb.clone();
        pending.push(tokio::spawn(async move {
            let new = NewMachine {
                macs: vec![Mac::from_u64(0x5254_0100_0000 + i as u64)],
                hostname: Some(format!("n{i:05}")),
                ..Default::default()
            };
            cmdb.create_machine(new).await.map(|_| ())
        }));
    }
    for p in pending {
        p.await??;
    }
    println!("registered {count} machines in {:.1} s", t.elapsed().as_secs_f64());
    let rack = json!({"name": "r1", "switch": {"remote_id": "leaf-r1"}, "ports": ["Ethernet1-42 -> U1-U42"],
        "address_plan": "127.0.9.1-127.0.9.42", "silent_after_minutes": 60});
    api.ok(Method::POST, "/racks", Some(rack)).await?;
    api.ok(Method::POST, "/users", Some(json!({"name": "vera", "role": "viewer", "password": PASSWORD}))).await?;

    let tls = tokio_rustls::TlsConnector::from(Arc::new(rackboot::tls::client_config(app.ca_pem.as_bytes())?));
    let ui = Arc::new(Ui { addr: app.https_addr, tls });
    let login = ui
        .call(
            "POST",
            "/ui/login",
            &[("content-type", "application/x-www-form-urlencoded")],
            &format!("username=vera&password={}", PASSWORD.replace(' ', "+")),
        )
        .await?;
    let cookie = login
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: ").and_then(|c| c.split(';').next()))
        .ok_or_else(|| anyhow::anyhow!("no session cookie: {login}"))?
        .to_string();

    println!("\npage server time at {count} machines (request to last byte, 20 rounds each)");
    for path in [
        "/ui/machines",
        "/ui/machines?sort=hostname&dir=desc&page=50",
        "/ui/machines?q=n0999",
        "/ui/dashboard",
        "/ui/racks/r1",
    ] {
        let mut times = Vec::new();
        for _ in 0..20 {
            let t = Instant::now();
            let page = ui.call("GET", path, &[("cookie", &cookie)], "").await?;
            anyhow::ensure!(page.starts_with("HTTP/1.1 200"), "{path}: {}", page.lines().next().unwrap_or_default());
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        println!("  {path:<45} {}", percentiles(times));
    }

    // STREAMS open rack pages, each on its live stream; when each rack machine first shows up.
    let sent: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; 43]));
    let seen: Arc<Mutex<Vec<f64>>> = Arc::default();
    let mut readers = Vec::new();
    for _ in 0..streams {
        let (ui, cookie, sent, seen) = (ui.clone(), cookie.clone(), sent.clone(), seen.clone());
        let mut s = ui.connect().await?;
        s.write_all(
            request("GET", "/ui/racks/r1/live", &[("cookie", &cookie), ("accept", "text/event-stream")], "").as_bytes(),
        )
        .await?;
        readers.push(tokio::spawn(async move {
            let (mut text, mut buf, mut got) = (String::new(), vec![0u8; 65536], [false; 43]);
            while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf)).await {
                if n == 0 {
                    break;
                }
                text.push_str(&String::from_utf8_lossy(&buf[..n]));
                let now = Instant::now();
                for (slot, got) in got.iter_mut().enumerate().skip(1) {
                    if !*got && text.contains(&format!("r1-u{slot:02}")) {
                        if let Some(at) = sent.lock().unwrap()[slot] {
                            *got = true;
                            seen.lock().unwrap().push(now.duration_since(at).as_secs_f64() * 1000.0);
                        }
                    }
                }
                // Keep only the tail: frames are whole renders, a name seen once is counted.
                if text.len() > 1 << 20 {
                    text = text.split_off(text.len() - (1 << 16));
                }
                if got[1..].iter().all(|g| *g) {
                    break;
                }
            }
            drop(ui);
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The storm: BOOTS machines DORA through the relay; every 1/42 of them a rack machine boots.
    let server = app.dhcp_addr.ok_or_else(|| anyhow::anyhow!("dhcp is off"))?;
    let answers = relay_sock.clone();
    let answering = tokio::spawn(async move {
        let mut buf = [0u8; 1500];
        let mut acks = 0u32;
        while let Ok(Ok((n, _))) = tokio::time::timeout(Duration::from_secs(5), answers.recv_from(&mut buf)).await {
            let Ok(offer) = Message::decode(&mut Decoder::new(&buf[..n])) else { continue };
            match offer.opts().msg_type() {
                Some(MessageType::Offer) => {
                    let mut req = Message::default();
                    req.set_chaddr(&offer.chaddr()[..6]).set_xid(offer.xid()).set_giaddr([127, 0, 0, 1]);
                    req.opts_mut().insert(DhcpOption::MessageType(MessageType::Request));
                    req.opts_mut().insert(DhcpOption::RequestedIpAddress(offer.yiaddr()));
                    if let Some(DhcpOption::ServerIdentifier(sid)) =
                        offer.opts().get(dhcproto::v4::OptionCode::ServerIdentifier)
                    {
                        req.opts_mut().insert(DhcpOption::ServerIdentifier(*sid));
                    }
                    let _ = answers.send_to(&req.to_vec().expect("encodes"), server).await;
                }
                Some(MessageType::Ack) => acks += 1,
                _ => {}
            }
        }
        acks
    });
    let t = Instant::now();
    let every = (boots / 42).max(1);
    let mut slot = 0usize;
    for i in 0..boots {
        let b = i.to_be_bytes();
        relay_sock.send_to(&discover([0x02, 0xaa, b[0], b[1], b[2], b[3]], i, None), server).await?;
        if i % every == 0 && slot < 42 {
            slot += 1;
            sent.lock().unwrap()[slot] = Some(Instant::now());
            let port = format!("Ethernet{slot}");
            relay_sock
                .send_to(&discover([0x52, 0x54, 0, 0x7c, 0, slot as u8], 100_000 + slot as u32, Some(&port)), server)
                .await?;
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
    let storm = t.elapsed();
    for r in readers {
        let _ = r.await;
    }
    let acks = answering.await?;
    println!(
        "\nboot storm: {boots} machines DHCP in {:.1} s ({acks} ACKs); {slot} rack machines among them",
        storm.as_secs_f64()
    );
    println!("event delivery to {streams} open rack pages (DISCOVER -> first live frame naming the machine):");
    println!("  {}", percentiles(seen.lock().unwrap().clone()));
    Ok(())
}
