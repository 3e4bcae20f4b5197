//! DHCP as the simulated machines' firmware speaks it, through one relay agent: the PXE ROM's
//! DISCOVER/REQUEST (options 60, 93, 94, 97, broadcast flag, 4/8/16/32 s backoff) and then iPXE's
//! (user class "iPXE", option 175, its shorter timers). Answers come back to the relay socket
//! and are handed to the machine by transaction id.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dhcproto::v4::{Architecture, DhcpOption, Flags, Message, MessageType, OptionCode, UnknownOption};
use dhcproto::{Decodable, Decoder, Encodable};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// PXE specification's DISCOVER/REQUEST timeouts (seconds): the ROM gives up after the fourth.
pub const PXE_BACKOFF: [u64; 4] = [4, 8, 16, 32];
/// iPXE's: 1 s doubling to 10 s.
pub const IPXE_BACKOFF: [u64; 5] = [1, 2, 4, 8, 10];

/// Who is asking: the ROM or iPXE it chainloaded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Client {
    PxeRom,
    Ipxe,
}

/// The relay agent all simulated machines sit behind.
pub struct Relay {
    socket: UdpSocket,
    server: SocketAddr,
    giaddr: Ipv4Addr,
    waiting: Mutex<HashMap<u32, mpsc::Sender<Message>>>,
    /// Replies that could not be decoded or matched no machine.
    pub stray: std::sync::atomic::AtomicU64,
}

/// What a DHCP exchange gave the machine.
pub struct Lease {
    pub address: Ipv4Addr,
    /// siaddr: where to fetch the boot file by TFTP.
    pub next_server: Ipv4Addr,
    /// Option 67 or the `file` field.
    pub boot_file: String,
    pub retries: u32,
}

impl Relay {
    /// `socket` receives the server's answers (the relay's port); requests go to `server`.
    pub fn start(socket: UdpSocket, server: SocketAddr, giaddr: Ipv4Addr) -> Arc<Relay> {
        // A thousand OFFERs arrive at once, for as many machines that in life have a NIC each:
        // the default receive buffer (208 KiB) would drop half of them. Past rmem_max as root.
        use nix::sys::socket::{setsockopt, sockopt};
        if setsockopt(&socket, sockopt::RcvBufForce, &(16 << 20)).is_err() {
            let _ = setsockopt(&socket, sockopt::RcvBuf, &(16 << 20));
        }
        let relay =
            Arc::new(Relay { socket, server, giaddr, waiting: Mutex::new(HashMap::new()), stray: Default::default() });
        let r = Arc::downgrade(&relay);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 1500];
            loop {
                let Some(relay) = r.upgrade() else { return };
                let got = tokio::time::timeout(Duration::from_secs(1), relay.socket.recv_from(&mut buf)).await;
                let Ok(Ok((n, _))) = got else { continue };
                let to = Message::decode(&mut Decoder::new(&buf[..n]))
                    .ok()
                    .and_then(|m| relay.waiting.lock().unwrap().get(&m.xid()).cloned().map(|tx| (tx, m)));
                match to {
                    Some((tx, m)) => {
                        let _ = tx.try_send(m);
                    }
                    None => {
                        relay.stray.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        });
        relay
    }

    /// DISCOVER, OFFER, REQUEST, ACK for `mac` as `client`, with that client's retransmission
    /// timers. A NAK starts over from DISCOVER (counted as a retry).
    pub async fn dora(&self, mac: [u8; 6], xid: u32, arch: u16, client: Client) -> anyhow::Result<Lease> {
        let (tx, mut rx) = mpsc::channel(8);
        self.waiting.lock().unwrap().insert(xid, tx);
        let result = self.exchange(mac, xid, arch, client, &mut rx).await;
        self.waiting.lock().unwrap().remove(&xid);
        result
    }

    async fn exchange(
        &self,
        mac: [u8; 6],
        xid: u32,
        arch: u16,
        client: Client,
        rx: &mut mpsc::Receiver<Message>,
    ) -> anyhow::Result<Lease> {
        let backoff: &[u64] = if client == Client::PxeRom { &PXE_BACKOFF } else { &IPXE_BACKOFF };
        let started = Instant::now();
        let mut retries = 0;
        for _restart in 0..3 {
            let discover = self.message(MessageType::Discover, mac, xid, arch, client, started);
            let (offer, r) = self.send_until(&discover, MessageType::Offer, backoff, rx).await?;
            retries += r;
            let mut request = self.message(MessageType::Request, mac, xid, arch, client, started);
            request.opts_mut().insert(DhcpOption::RequestedIpAddress(offer.yiaddr()));
            if let Some(DhcpOption::ServerIdentifier(s)) = offer.opts().get(OptionCode::ServerIdentifier) {
                request.opts_mut().insert(DhcpOption::ServerIdentifier(*s));
            }
            let (ack, r) = self.send_until(&request, MessageType::Ack, backoff, rx).await?;
            retries += r;
            if ack.opts().msg_type() == Some(MessageType::Nak) {
                retries += 1;
                continue;
            }
            let boot_file = match ack.opts().get(OptionCode::BootfileName) {
                Some(DhcpOption::BootfileName(f)) => String::from_utf8_lossy(f).trim_end_matches('\0').to_string(),
                _ => ack
                    .fname()
                    .map(|f| String::from_utf8_lossy(f).trim_end_matches('\0').to_string())
                    .unwrap_or_default(),
            };
            anyhow::ensure!(!ack.yiaddr().is_unspecified(), "ACK without an address");
            return Ok(Lease { address: ack.yiaddr(), next_server: ack.siaddr(), boot_file, retries });
        }
        anyhow::bail!("NAKed three times")
    }

    /// Sends `m` and waits for `want` (or a NAK), resending after each backoff step.
    async fn send_until(
        &self,
        m: &Message,
        want: MessageType,
        backoff: &[u64],
        rx: &mut mpsc::Receiver<Message>,
    ) -> anyhow::Result<(Message, u32)> {
        let bytes = m.to_vec()?;
        for (attempt, wait) in backoff.iter().enumerate() {
            self.socket.send_to(&bytes, self.server).await?;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(*wait);
            while let Ok(Some(answer)) = tokio::time::timeout_at(deadline, rx.recv()).await {
                let kind = answer.opts().msg_type();
                if kind == Some(want) || (want == MessageType::Ack && kind == Some(MessageType::Nak)) {
                    return Ok((answer, attempt as u32));
                }
            }
        }
        anyhow::bail!("no {want:?} after {} tries ({} s)", backoff.len(), backoff.iter().sum::<u64>())
    }

    fn message(&self, kind: MessageType, mac: [u8; 6], xid: u32, arch: u16, client: Client, t0: Instant) -> Message {
        let mut m = Message::default();
        m.set_chaddr(&mac)
            .set_xid(xid)
            .set_giaddr(self.giaddr)
            .set_hops(1)
            .set_secs(t0.elapsed().as_secs().min(u16::MAX as u64) as u16)
            .set_flags(Flags::default().set_broadcast());
        let o = m.opts_mut();
        o.insert(DhcpOption::MessageType(kind));
        o.insert(DhcpOption::MaxMessageSize(1260));
        o.insert(DhcpOption::ClientSystemArchitecture(Architecture::from(arch)));
        o.insert(DhcpOption::ClientNetworkInterface(1, 2, 1));
        let mut uuid = vec![0u8; 17];
        uuid[11..17].copy_from_slice(&mac);
        o.insert(DhcpOption::ClientMachineIdentifier(uuid));
        o.insert(DhcpOption::ClassIdentifier(format!("PXEClient:Arch:{arch:05}:UNDI:002001").into_bytes()));
        let mut wanted: Vec<OptionCode> = [1u8, 3, 6, 12, 15, 17, 43, 54, 60, 66, 67, 119, 128, 129, 130, 175]
            .into_iter()
            .map(OptionCode::from)
            .collect();
        if client == Client::Ipxe {
            o.insert(DhcpOption::UserClass(b"iPXE".to_vec()));
            // iPXE's feature list: HTTP (0x13), HTTPS (0x14), DNS (0x17), bzImage (0x18), EFI (0x24).
            let features = vec![0x13, 1, 1, 0x14, 1, 1, 0x17, 1, 1, 0x18, 1, 1, 0x24, 1, 1];
            o.insert(DhcpOption::Unknown(UnknownOption::new(OptionCode::from(175), features)));
        } else {
            wanted.retain(|c| *c != OptionCode::from(175));
        }
        o.insert(DhcpOption::ParameterRequestList(wanted));
        m
    }
}
