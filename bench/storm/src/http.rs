//! Plain-HTTP GETs as iPXE makes them: from the machine's own address, one kept-alive
//! connection reused while the host stays the same, bodies counted as they stream (a thousand
//! machines' initrds are not held in memory).

use std::net::Ipv4Addr;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// How long one GET (connect to last byte) may take.
pub const TIMEOUT: Duration = Duration::from_secs(120);
/// The most of a body kept (boot scripts); the rest is only counted.
const KEEP: usize = 64 << 10;

pub struct Http {
    from: Ipv4Addr,
    conn: Option<(String, SendRequest<Empty<Bytes>>)>,
    /// Connections opened again after the server closed one (iPXE reconnects the same way).
    pub reconnects: u32,
}

/// A GET's outcome: the body's length and its first 64 KiB.
pub struct Got {
    pub bytes: u64,
    pub head: Vec<u8>,
}

impl Http {
    pub fn new(from: Ipv4Addr) -> Http {
        Http { from, conn: None, reconnects: 0 }
    }

    /// GETs `url` (`http://host:port/path`); anything but 200 is an error.
    pub async fn get(&mut self, url: &str) -> anyhow::Result<Got> {
        match tokio::time::timeout(TIMEOUT, self.get_once(url)).await {
            Ok(r) => r,
            Err(_) => {
                self.conn = None;
                anyhow::bail!("GET {url}: no complete answer within {TIMEOUT:?}")
            }
        }
    }

    async fn get_once(&mut self, url: &str) -> anyhow::Result<Got> {
        let rest = url.strip_prefix("http://").ok_or_else(|| anyhow::anyhow!("not an http:// URL: {url}"))?;
        let (authority, path) = rest.find('/').map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
        let reusable = matches!(&self.conn, Some((a, s)) if a == authority && s.is_ready());
        if !reusable {
            if self.conn.is_some() {
                self.reconnects += 1;
            }
            let target = if authority.contains(':') { authority.to_string() } else { format!("{authority}:80") };
            let stream = rackboot_agent::client::connect(&target, Some(self.from.into())).await?;
            let _ = stream.set_nodelay(true);
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(conn);
            self.conn = Some((authority.to_string(), sender));
        }
        let (_, sender) = self.conn.as_mut().expect("connected above");
        let req = hyper::Request::get(path)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::USER_AGENT, "iPXE/1.21.1+ (rackboot-storm)")
            .body(Empty::new())?;
        let resp = sender.send_request(req).await?;
        let status = resp.status();
        let mut body = resp.into_body();
        let mut got = Got { bytes: 0, head: Vec::new() };
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                got.bytes += data.len() as u64;
                let room = KEEP.saturating_sub(got.head.len());
                got.head.extend_from_slice(&data[..room.min(data.len())]);
            }
        }
        anyhow::ensure!(status == hyper::StatusCode::OK, "GET {path}: HTTP {status}");
        Ok(got)
    }
}

/// What an iPXE script tells the machine to do next.
#[derive(Debug, Default, PartialEq)]
pub struct Script {
    pub kernel: Option<String>,
    /// The kernel's command line (after its URL and any `initrd=` name).
    pub cmdline: String,
    pub initrds: Vec<String>,
    /// `sanboot` or `exit`: boot the local disk.
    pub local: bool,
}

/// Reads the `kernel`, `initrd`, `sanboot` and `exit` lines of an iPXE script.
pub fn parse_script(text: &str) -> anyhow::Result<Script> {
    anyhow::ensure!(text.starts_with("#!ipxe"), "not an iPXE script: {}", text.lines().next().unwrap_or(""));
    let mut s = Script::default();
    for line in text.lines().map(str::trim) {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("kernel" | "chain" | "imgexec") => {
                let args: Vec<&str> = words.filter(|w| !w.starts_with("--")).collect();
                s.kernel = args.first().map(|u| u.to_string());
                s.cmdline =
                    args.iter().skip(1).filter(|w| !w.starts_with("initrd=")).copied().collect::<Vec<_>>().join(" ");
            }
            Some("initrd" | "module") => s.initrds.extend(words.find(|w| !w.starts_with("--")).map(str::to_string)),
            Some("sanboot" | "exit") => s.local = true,
            _ => {}
        }
    }
    anyhow::ensure!(s.kernel.is_some() || s.local, "the script boots nothing");
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_script_gives_kernel_command_line_and_initrd() {
        let s = parse_script(
            "#!ipxe\n# rackboot\necho hi\nkernel http://10.0.0.1/boot/files/bootos/vmlinuz initrd=initrd.img console=ttyS0 rackboot.nonce=ab\ninitrd http://10.0.0.1/boot/files/bootos/initrd.img\nboot\n",
        )
        .unwrap();
        assert_eq!(s.kernel.as_deref(), Some("http://10.0.0.1/boot/files/bootos/vmlinuz"));
        assert_eq!(s.cmdline, "console=ttyS0 rackboot.nonce=ab");
        assert_eq!(s.initrds, ["http://10.0.0.1/boot/files/bootos/initrd.img"]);
        assert!(!s.local);
    }

    #[test]
    fn local_boot_and_garbage() {
        assert!(parse_script("#!ipxe\nsanboot --no-describe --drive 0x80\n").unwrap().local);
        assert!(parse_script("<html>").is_err());
        assert!(parse_script("#!ipxe\necho nothing\n").is_err());
    }
}
