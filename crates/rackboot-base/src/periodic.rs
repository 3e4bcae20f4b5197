//! The loop a periodic service runs.

use std::future::Future;

use tokio_util::sync::CancellationToken;

/// A periodic service: runs `tick` every `period` (the first one period after the start) until
/// `stop` is cancelled, then returns `Ok(())`. A tick logs its own failures; it never stops the loop.
pub async fn every<F, Fut>(period: std::time::Duration, stop: CancellationToken, mut tick: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            _ = tokio::time::sleep(period) => {}
        }
        tick().await;
    }
}
