//! A hot-standby DHCP pair on one VLAN: two appliances on one PostgreSQL CMDB, one the primary,
//! one the standby. Each beats in the store every second. The primary answers whenever it
//! reaches the store; the standby answers only while the primary's last beat is older than
//! `takeover`, and stops at its next beat once the primary is back (handing back). Whichever
//! answers, a lease is committed to the shared store before its ACK, and the store refuses an
//! address another client holds, so a takeover or hand-back never leases one address twice.
//! Each member reloads its lease map when it starts answering, so clients renewing through a
//! failover keep their address.

use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use rackboot_config::{PairConfig, PairRole};
use rackboot_store::Cmdb;

/// How often a member beats and looks at its peer.
pub const BEAT: Duration = Duration::from_secs(1);

/// Beats until `token` is cancelled, keeping `active` at whether this member answers now.
pub async fn run(cmdb: Cmdb, cfg: PairConfig, active: watch::Sender<bool>, token: CancellationToken) {
    let started = Instant::now();
    let mut beat = tokio::time::interval(BEAT);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = beat.tick() => {}
        }
        let was = *active.borrow();
        let beat = cmdb.dhcp_pair_beat(&cfg.name, cfg.role.as_str(), was, BEAT.as_secs_f64() * 3.0);
        // A beat that does not come back in time counts as failed: a member that cannot beat
        // stops answering rather than answer beside a standby that took over.
        let beat = tokio::time::timeout(BEAT * 2, beat)
            .await
            .unwrap_or_else(|_| Err(rackboot_store::CmdbError::Unavailable("the beat timed out".into())));
        let now = match beat {
            Err(error) => {
                // Without the store no lease can be committed, so no ACK could go out anyway.
                warn!(pair = %cfg.name, %error, "dhcp pair: cannot beat in the store; not answering");
                false
            }
            Ok((peer, clash)) => {
                if let Some(other) = clash {
                    warn!(pair = %cfg.name, role = cfg.role.as_str(), %other,
                        "dhcp pair: another appliance beats in the same role; check dhcp.pair.role on both");
                }
                match (cfg.role, peer) {
                    (PairRole::Primary, _) => true,
                    // The primary never beat: the standby waits its takeover time from its own start.
                    (PairRole::Standby, None) => started.elapsed() > cfg.takeover,
                    (PairRole::Standby, Some(age)) => age > cfg.takeover.as_secs_f64(),
                }
            }
        };
        if now != was {
            match (cfg.role, now) {
                (PairRole::Standby, true) => {
                    info!(pair = %cfg.name, "dhcp pair: the primary is not beating; the standby answers")
                }
                (PairRole::Standby, false) => info!(pair = %cfg.name, "dhcp pair: the primary is back; handing back"),
                (PairRole::Primary, true) => info!(pair = %cfg.name, "dhcp pair: the primary answers"),
                (PairRole::Primary, false) => warn!(pair = %cfg.name, "dhcp pair: the primary stops answering"),
            }
            let _ = active.send(now);
        }
    }
}
