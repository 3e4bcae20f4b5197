//! Answers that stay open (event streams, a job's output, the UI's live pages) end when the
//! token that opened them stops authenticating, not only when the client goes away.

use std::future::Future;
use std::time::Duration;

use rackboot_store::{AuthError, Cmdb};

/// How often an open answer checks its token when nothing told it to sooner: the longest a
/// token's expiry, or another appliance's revocation on a shared store, goes unnoticed.
pub const RECHECK: Duration = Duration::from_secs(30);

/// Returns once the token `(id, hash)` (from [`super::presented`]) no longer authenticates:
/// revoked, expired, its user disabled or deleted. This appliance's own revocations and user
/// changes wake it at once; a store that cannot be read keeps the answer open until the next check.
/// It watches for changes from the call on and checks the token once before its first wait, so
/// a revocation between the caller's own check and the first poll is not missed.
pub fn until_refused(cmdb: &Cmdb, id: String, hash: String) -> impl Future<Output = ()> + Send + 'static {
    let mut changes = cmdb.credential_changes();
    let cmdb = cmdb.clone();
    async move {
        // False once the store is gone (its watch closed): then only the clock wakes the check.
        let mut watching = true;
        loop {
            match cmdb.authenticate(id.clone(), hash.clone(), rackboot_store::now_ms()).await {
                Ok(_) | Err(AuthError::Storage(_)) => {}
                Err(_) => return,
            }
            if watching {
                tokio::select! {
                    r = changes.changed() => watching = r.is_ok(),
                    () = tokio::time::sleep(RECHECK) => {}
                }
            } else {
                tokio::time::sleep(RECHECK).await;
            }
        }
    }
}
