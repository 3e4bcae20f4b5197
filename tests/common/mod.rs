//! Shared helpers for in-process integration tests: start the whole appliance on loopback with a
//! temporary data dir, talk DHCP to it as a relay agent would, and call its API.
#![allow(dead_code)]

pub mod appliance;
pub mod oidc_fake;
pub mod oidc_provider;
pub mod process;
pub mod provision;
pub mod slapd;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use dhcproto::v4::{self, DhcpOption, Message, MessageType, OptionCode};
use dhcproto::{Decodable, Decoder, Encodable};
use rackboot::app::{self, Running};
use rackboot::client::ApiClient;
use rackboot::config::Config;
use tokio::net::UdpSocket;

pub struct Lab {
    pub dir: tempfile::TempDir,
    pub app: Option<Running>,
    /// Acts as the relay agent at giaddr 127.0.0.1; replies come here.
    pub relay: UdpSocket,
    pub api: ApiClient,
    extra: String,
}

/// `[store]` for an appliance on `data_dir`: the PostgreSQL `RACKBOOT_TEST_POSTGRES` names
/// (a schema per data dir, so a restarted appliance finds its CMDB), so the in-process tests
/// run against both stores; nothing (the embedded file) without it.
#[allow(dead_code)]
pub fn store_section(data_dir: &std::path::Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    data_dir.hash(&mut h);
    match rackboot::cmdb::kv::pg::test_config_named(&format!("d{:016x}", h.finish())) {
        Some(pg) => format!(
            "\n[store]\nbackend = \"postgres\"\nurl = \"{}\"\nschema = \"{}\"\n",
            pg.url,
            pg.schema.unwrap_or_default()
        ),
        None => String::new(),
    }
}

/// The lab's config; `extra` continues the `[dns]` table (or starts new tables).
pub fn config_text(data_dir: &std::path::Path, relay_port: u16, extra: &str) -> String {
    let store = store_section(data_dir);
    format!(
        r#"
[server]
data_dir = "{}"
address = "127.0.0.1"
[http]
listen = "127.0.0.1:0"
[https]
listen = "127.0.0.1:0"
[tftp]
port = 0
root = "{}/boot"
[dhcp]
mode = "full"
port = 0
relay_port = {relay_port}
commit_batch = 512
[[dhcp.subnets]]
cidr = "127.0.0.0/8"
pools = ["127.0.1.10-127.0.5.250"]
routers = ["127.0.0.1"]
dns_servers = ["127.0.0.53"]
domain = "lab.rackboot.test"
lease_secs = 600
[dns]
port = 0
domain = "lab.rackboot.test"
{extra}
{store}
"#,
        data_dir.display(),
        data_dir.display()
    )
}

impl Lab {
    pub async fn start(extra: &str) -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let relay = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let (app, api) = launch(dir.path(), relay.local_addr().unwrap().port(), extra).await;
        Lab { dir, app: Some(app), relay, api, extra: extra.to_string() }
    }

    /// [`Lab::start`] with the HTTPS listener on `port` (for a config that names this
    /// appliance's URL before it starts, such as an OpenID callback).
    pub async fn start_https_on(port: u16, extra: &str) -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let relay = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let text = config_text(dir.path(), relay.local_addr().unwrap().port(), extra).replacen(
            "[https]\nlisten = \"127.0.0.1:0\"",
            &format!("[https]\nlisten = \"127.0.0.1:{port}\""),
            1,
        );
        let running = app::start(Config::parse(&text).unwrap()).await.unwrap();
        let url = format!("https://{}", running.https_addr);
        let api = ApiClient::new(&url, running.admin_token.clone(), running.ca_pem.as_bytes()).unwrap();
        Lab { dir, app: Some(running), relay, api, extra: extra.to_string() }
    }

    async fn boot(&mut self) {
        let (app, api) = launch(self.dir.path(), self.relay.local_addr().unwrap().port(), &self.extra).await;
        self.api = api;
        self.app = Some(app);
    }

    /// The HTTPS base URL (API, agent API, metrics).
    pub fn https_url(&self) -> String {
        format!("https://{}", self.app.as_ref().unwrap().https_addr)
    }

    /// The CA certificate (PEM) the appliance's HTTPS certificate chains to.
    pub fn ca_pem(&self) -> String {
        self.app.as_ref().unwrap().ca_pem.clone()
    }

    /// `/metrics` as the admin reads it (a viewer's token is needed).
    pub async fn metrics(&self) -> String {
        let app = self.app.as_ref().unwrap();
        let (status, body) = https_get_with(app.https_addr, &app.ca_pem, "/metrics", Some(&app.admin_token)).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Runs the `rackboot` CLI against this appliance as the admin (`--api`, `--ca`,
    /// `--token-file` added): whether it succeeded, and its stdout and stderr.
    pub fn cli(&self, args: &[&str]) -> (bool, String) {
        self.cli_with_input(args, "")
    }

    /// [`Lab::cli`] with `input` on its stdin (a password, say).
    pub fn cli_with_input(&self, args: &[&str], input: &str) -> (bool, String) {
        use std::io::Write;
        let dir = self.dir.path();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rackboot"))
            .args(args)
            .arg("--api")
            .arg(self.https_url())
            .arg("--ca")
            .arg(dir.join("tls/ca.pem"))
            .arg("--token-file")
            .arg(dir.join("admin.token"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    }

    /// Stops the appliance cleanly and starts it again on the same data dir.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.boot().await;
    }

    pub async fn stop(&mut self) {
        if let Some(app) = self.app.take() {
            app.wait(async {}).await.unwrap();
        }
    }

    pub fn dhcp_addr(&self) -> SocketAddr {
        let a = self.app.as_ref().unwrap().dhcp_addr.unwrap();
        SocketAddr::from((Ipv4Addr::LOCALHOST, a.port()))
    }

    pub async fn send_raw(&self, bytes: &[u8]) {
        self.relay.send_to(bytes, self.dhcp_addr()).await.unwrap();
    }

    /// Sends `m` and waits for the reply with the same xid.
    pub async fn exchange(&self, m: &Message) -> Option<Message> {
        self.send_raw(&m.to_vec().unwrap()).await;
        self.recv(m.xid(), Duration::from_secs(3)).await
    }

    pub async fn recv(&self, xid: u32, wait: Duration) -> Option<Message> {
        let mut buf = [0u8; 1500];
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let (n, _) = tokio::time::timeout_at(deadline, self.relay.recv_from(&mut buf)).await.ok()?.unwrap();
            let m = Message::decode(&mut Decoder::new(&buf[..n])).unwrap();
            assert!(n >= 300, "reply of {n} bytes is shorter than BOOTP's 300");
            if m.xid() == xid {
                return Some(m);
            }
        }
    }
}

/// Starts the appliance on `data_dir` and an API client for it over HTTPS, trusting its CA.
async fn launch(data_dir: &std::path::Path, relay_port: u16, extra: &str) -> (Running, ApiClient) {
    let cfg = Config::parse(&config_text(data_dir, relay_port, extra)).unwrap();
    let running = app::start(cfg).await.unwrap();
    let url = format!("https://{}", running.https_addr);
    let api = ApiClient::new(&url, running.admin_token.clone(), running.ca_pem.as_bytes()).unwrap();
    (running, api)
}

/// A relayed client message (giaddr 127.0.0.1).
pub fn msg(kind: MessageType, mac: [u8; 6], xid: u32) -> Message {
    let mut m = Message::default();
    m.set_chaddr(&mac).set_xid(xid).set_giaddr(Ipv4Addr::LOCALHOST);
    m.opts_mut().insert(DhcpOption::MessageType(kind));
    m
}

/// A DISCOVER as a rack's switch relays it: option 82 naming the port (circuit id) and the
/// switch (remote id).
pub fn relayed(mac: [u8; 6], xid: u32, port: &str, switch: &str) -> Message {
    relayed_bytes(mac, xid, port.as_bytes(), Some(switch.as_bytes()))
}

/// A relayed DISCOVER with option 82's sub-options as the switch puts them on the wire (a
/// typed Cisco circuit id, a MAC as six bytes, or no remote id).
pub fn relayed_bytes(mac: [u8; 6], xid: u32, circuit: &[u8], remote: Option<&[u8]>) -> Message {
    let mut d = msg(MessageType::Discover, mac, xid);
    let mut info = v4::relay::RelayAgentInformation::default();
    info.insert(v4::relay::RelayInfo::AgentCircuitId(circuit.to_vec()));
    if let Some(remote) = remote {
        info.insert(v4::relay::RelayInfo::AgentRemoteId(remote.to_vec()));
    }
    d.opts_mut().insert(DhcpOption::RelayAgentInformation(info));
    d
}

pub fn pxe(mut m: Message, arch: u16) -> Message {
    m.opts_mut().insert(DhcpOption::ClientSystemArchitecture(v4::Architecture(arch)));
    m.opts_mut().insert(DhcpOption::ClassIdentifier(format!("PXEClient:Arch:{arch:05}:UNDI:002001").into_bytes()));
    m
}

pub fn request_for(offer: &Message, mac: [u8; 6], xid: u32) -> Message {
    let mut m = msg(MessageType::Request, mac, xid);
    m.opts_mut().insert(DhcpOption::RequestedIpAddress(offer.yiaddr()));
    if let Some(DhcpOption::ServerIdentifier(s)) = offer.opts().get(OptionCode::ServerIdentifier) {
        m.opts_mut().insert(DhcpOption::ServerIdentifier(*s));
    }
    m
}

pub fn kind(m: &Message) -> MessageType {
    m.opts().msg_type().unwrap()
}

/// DISCOVER -> OFFER -> REQUEST -> ACK; returns the ACK.
pub async fn four_way(lab: &Lab, mac: [u8; 6], xid: u32) -> Message {
    let offer = lab.exchange(&msg(MessageType::Discover, mac, xid)).await.expect("offer");
    assert_eq!(kind(&offer), MessageType::Offer);
    let ack = lab.exchange(&request_for(&offer, mac, xid + 1)).await.expect("ack");
    assert_eq!(kind(&ack), MessageType::Ack, "{ack:?}");
    ack
}

/// Retries `f` for up to two seconds until it succeeds.
pub async fn eventually<T, F: std::future::Future<Output = anyhow::Result<T>>>(mut f: impl FnMut() -> F) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if tokio::time::Instant::now() > deadline => panic!("still failing after 2 s: {e:#}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// A GET over TLS (trusting `ca_pem`) on a connection of its own, without a token; returns
/// status and body.
pub async fn https_get(addr: SocketAddr, ca_pem: &str, path: &str) -> (u16, String) {
    https_get_with(addr, ca_pem, path, None).await
}

/// [`https_get`] with a bearer token (`/metrics` needs a viewer's).
pub async fn https_get_with(addr: SocketAddr, ca_pem: &str, path: &str, token: Option<&str>) -> (u16, String) {
    use http_body_util::BodyExt;
    let config = rackboot::tls::client_config(ca_pem.as_bytes()).unwrap();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from(addr.ip().to_string()).unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)).connect(name, tcp).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await.unwrap();
    tokio::spawn(conn);
    let mut req = hyper::Request::get(path).header("host", "x");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = req.body(http_body_util::Empty::<hyper::body::Bytes>::new()).unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// A plain HTTP/1.0 GET; returns the whole response, head included.
pub async fn http_get(addr: SocketAddr, path: &str) -> String {
    http_get_with_header(addr, path, None).await
}

/// [`http_get`] with one more request header (`"Name: value"`).
pub async fn http_get_with_header(addr: SocketAddr, path: &str, header: Option<&str>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let extra = header.map(|h| format!("{h}\r\n")).unwrap_or_default();
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n{extra}\r\n").as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

/// A file from the lab's TFTP server (octet mode, 512-byte blocks) from source address `from`,
/// as text.
pub async fn tftp_get(lab: &Lab, from: std::net::Ipv4Addr, name: &str) -> String {
    let server = lab.app.as_ref().unwrap().tftp_addr.expect("TFTP runs");
    let sock = tokio::net::UdpSocket::bind(SocketAddr::from((from, 0))).await.unwrap();
    let mut rrq = vec![0, 1];
    rrq.extend_from_slice(format!("{name}\0octet\0").as_bytes());
    sock.send_to(&rrq, server).await.unwrap();
    let (mut file, mut buf) = (Vec::new(), vec![0u8; 600]);
    loop {
        let (n, peer) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf)).await.unwrap().unwrap();
        assert_eq!(&buf[..2], [0, 3], "a DATA block: {:?}", String::from_utf8_lossy(&buf[..n]));
        file.extend_from_slice(&buf[4..n]);
        sock.send_to(&[0, 4, buf[2], buf[3]], peer).await.unwrap();
        if n - 4 < 512 {
            return String::from_utf8(file).unwrap();
        }
    }
}

/// The colon form of a MAC.
pub fn mac_text(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// Enrolls `m`'s agent (with a boot nonce, as BootOS would); its client, holding the credential.
pub async fn enroll_agent(lab: &Lab, m: [u8; 6]) -> rackboot_agent::client::Client {
    let app = lab.app.as_ref().unwrap();
    let nonce = app.cmdb.issue_boot_nonce(mac_text(&m).parse().unwrap(), "127.0.0.1".into(), 600).await.unwrap();
    let trust = rackboot_agent::tls::Trust::CaPem(lab.ca_pem().into_bytes());
    let mut c = rackboot_agent::client::Client::new(&lab.https_url(), &trust).unwrap();
    let req = serde_json::json!({"macs": [mac_text(&m)], "boot_mac": mac_text(&m), "mode": "bootos", "nonce": nonce});
    let r = c.call(hyper::Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(5)).await.unwrap();
    let v: serde_json::Value = r.json().unwrap();
    assert_eq!((r.status, v["approved"].as_bool()), (200, Some(true)), "{v}");
    c.credential = Some(v["credential"].as_str().unwrap().to_string());
    c
}

/// Enrolls `m`'s agent (with a boot nonce, as BootOS would) and uploads an inventory whose LLDP
/// neighbour is `port` on `switch` (its system name).
pub async fn report_lldp_of(lab: &Lab, m: [u8; 6], switch: &str, port: &str) {
    let mut c = enroll_agent(lab, m).await;
    let lldp = vec![rackboot_agent::wire::LldpNeighbor {
        interface: "eth0".into(),
        chassis_id: "00:11:22:33:44:55".into(),
        port_id: port.into(),
        system_name: Some(switch.into()),
        port_description: None,
    }];
    let inv = rackboot_agent::wire::Inventory { lldp, ..Default::default() };
    let r = c.call(hyper::Method::PUT, "/agent/v1/inventory", Some(&inv), Duration::from_secs(5)).await.unwrap();
    assert_eq!(r.status, 204);
}

/// A CA named `ca_name` and a certificate for 127.0.0.1 it signed: (CA PEM, certificate PEM,
/// key PEM, the certificate's DER).
pub fn loopback_pki(ca_name: &str) -> (String, String, String, Vec<u8>) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name.push(DnType::CommonName, ca_name);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut cert = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    cert.distinguished_name.push(DnType::CommonName, "127.0.0.1");
    let cert = cert.signed_by(&key, &Issuer::new(ca, ca_key)).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem(), cert.der().to_vec())
}

/// A TCP port free on loopback now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
