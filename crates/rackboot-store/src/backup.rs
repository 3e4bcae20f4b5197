//! Online backups and offline restores of the CMDB file.
//!
//! A snapshot is taken on the writer thread between two batches: every acknowledged write has
//! been committed durably and none is in progress, so a plain copy of the file is a consistent
//! database (writes wait only for the copy). The copy is then opened once off the writer
//! thread, which checks it and leaves it closed cleanly, before it is handed out.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use tokio::sync::oneshot;

use super::writer::{Completion, Job};
use super::{store, Cmdb, CmdbError};

/// What a snapshot or a restore found in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    pub bytes: u64,
    pub schema: u64,
    pub machines: u64,
    pub leases: u64,
    pub jobs: u64,
    pub events: u64,
}

impl std::fmt::Display for Contents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes, schema {}: {} machines, {} leases, {} jobs, {} events",
            self.bytes, self.schema, self.machines, self.leases, self.jobs, self.events
        )
    }
}

impl Cmdb {
    /// Writes a consistent copy of the CMDB to `dest` (created 0600; it must not exist) while
    /// the appliance serves. On error nothing is left at `dest`.
    pub async fn snapshot(&self, dest: &Path) -> Result<Contents, CmdbError> {
        if let db @ super::kv::Db::Pg(_) = self.inner.storage.db()? {
            return snapshot_of_postgres(db, dest).await;
        }
        let (done_tx, done_rx) = oneshot::channel();
        let (src, to) = (self.inner.path.clone(), dest.to_path_buf());
        // The job writes nothing; its completion runs on the writer thread after the batch has
        // committed and before the next one starts.
        let job: Job = Box::new(move |_| {
            let completion: Completion = Box::new(move |committed| {
                let _ = done_tx.send(committed.and_then(|()| copy_new(&src, &to)));
            });
            completion
        });
        self.send(job).await?;
        // A failed copy cleans up after itself (and never touches a file it did not create).
        done_rx.await.map_err(|_| CmdbError::Storage("cmdb writer stopped".into()))??;
        let to = dest.to_path_buf();
        let checked = tokio::task::spawn_blocking(move || inspect(&to))
            .await
            .map_err(|e| CmdbError::Storage(format!("checking the snapshot: {e}")))
            .and_then(|r| r);
        if checked.is_err() {
            let _ = std::fs::remove_file(dest);
        }
        checked
    }
}

impl Cmdb {
    /// Where snapshots go: `backups/` beside the CMDB file.
    pub fn backup_dir(&self) -> PathBuf {
        self.inner.path.parent().unwrap_or(Path::new(".")).join("backups")
    }

    /// A snapshot to stream: taken into the backup directory and unlinked at once, so the open
    /// file is all that is left of it (nothing accumulates if the download is cut off).
    pub async fn snapshot_to_stream(&self) -> Result<(File, Contents), CmdbError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = self.backup_dir();
        create_dir(&dir)?;
        let path = dir.join(format!(".download-{}-{}.redb", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        let contents = self.snapshot(&path).await?;
        let file = File::open(&path).map_err(|e| CmdbError::Storage(format!("{}: {e}", path.display())));
        let _ = std::fs::remove_file(&path);
        Ok((file?, contents))
    }

    /// Takes a snapshot every `every` into the backup directory as `rackboot-<UTC>.redb`,
    /// keeping the newest `keep`, until `stop`.
    pub async fn scheduled_backups(
        self,
        every: std::time::Duration,
        keep: usize,
        stop: tokio_util::sync::CancellationToken,
    ) -> anyhow::Result<()> {
        rackboot_base::periodic::every(every, stop, || async {
            let dir = self.backup_dir();
            match self.scheduled_backup(std::time::SystemTime::now(), keep).await {
                Ok((name, c, removed)) => {
                    tracing::info!(file = %dir.join(name).display(), %c, removed, "scheduled backup taken")
                }
                Err(error) => tracing::error!(%error, dir = %dir.display(), "scheduled backup failed"),
            }
        })
        .await
    }

    /// One scheduled snapshot, named for `at`, then the oldest past `keep` removed: the file
    /// name, what it holds and how many were removed.
    pub async fn scheduled_backup(
        &self,
        at: std::time::SystemTime,
        keep: usize,
    ) -> Result<(String, Contents, usize), CmdbError> {
        let dir = self.backup_dir();
        create_dir(&dir)?;
        let name = format!("rackboot-{}.redb", utc_stamp(at));
        let contents = self.snapshot(&dir.join(&name)).await?;
        Ok((name, contents, prune(&dir, keep)))
    }
}

fn create_dir(dir: &Path) -> Result<(), CmdbError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| CmdbError::Storage(format!("creating {}: {e}", dir.display())))
}

/// `YYYYMMDDTHHMMSSZ` for `t` (UTC), so names sort by age.
fn utc_stamp(t: std::time::SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// Copies `src` to a new file `dest` (0600) and makes it durable.
/// A snapshot of a PostgreSQL store: its tables copied into a new CMDB file (one read snapshot,
/// verified table by table), which `rackboot restore` or `store migrate` take like any other.
async fn snapshot_of_postgres(db: super::kv::Db, dest: &Path) -> Result<Contents, CmdbError> {
    // The file is claimed first (0600, never over an existing one), then filled.
    drop(
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dest)
            .map_err(|e| CmdbError::Storage(format!("creating {}: {e}", dest.display())))?,
    );
    let to = dest.to_path_buf();
    let made = tokio::task::spawn_blocking(move || {
        let file = super::schema::open_file(&to)?;
        super::copy::copy_store(&db, &file)?;
        drop(file);
        inspect(&to)
    })
    .await
    .map_err(|e| CmdbError::Storage(format!("snapshot task: {e}")))
    .and_then(|r| r);
    if made.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    made
}

fn copy_new(src: &Path, dest: &Path) -> Result<(), CmdbError> {
    let fail = |what: &str, e: std::io::Error| CmdbError::Storage(format!("{what} {}: {e}", dest.display()));
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dest)
        .map_err(|e| fail("creating", e))?;
    let copied = File::open(src)
        .and_then(|mut input| std::io::copy(&mut input, &mut out))
        .and_then(|_| out.flush())
        .and_then(|()| out.sync_all());
    if let Err(e) = copied {
        drop(out);
        let _ = std::fs::remove_file(dest);
        return Err(fail("writing", e));
    }
    Ok(())
}

/// Opens the CMDB file at `path` (migrating an older schema; refusing a newer one or a file
/// that is not a CMDB) and counts what it holds; it is closed cleanly afterwards.
pub fn inspect(path: &Path) -> Result<Contents, CmdbError> {
    if !path.is_file() {
        return Err(CmdbError::NotFound(format!("{}: no such file", path.display())));
    }
    let db = super::kv::Db::Redb(std::sync::Arc::new(super::schema::open(path)?));
    let rtx = db.begin_read()?;
    let count = |n: Result<u64, CmdbError>| n;
    let schema = rtx.open_table(store::META)?.get(store::KEY_SCHEMA)?.map(|v| v.value()).unwrap_or(0);
    let mut contents = Contents {
        bytes: 0,
        schema,
        machines: count(rtx.open_table(store::MACHINES)?.len())?,
        leases: count(rtx.open_table(store::LEASES)?.len())?,
        jobs: count(rtx.open_table(store::JOBS)?.len())?,
        events: count(rtx.open_table(store::EVENTS)?.len())?,
    };
    drop(rtx);
    drop(db);
    // Measured once the file is closed: closing it cleanly may still write to it.
    contents.bytes = std::fs::metadata(path).map_err(|e| CmdbError::Storage(format!("{}: {e}", path.display())))?.len();
    Ok(contents)
}

/// Replaces the CMDB file at `live` with the backup `from`, for a stopped appliance. The backup
/// is checked (and migrated) on a copy first; the replaced file is kept beside it as
/// `<live>.before-restore-<unix seconds>` (returned). Refused while an appliance has `live` open.
pub fn restore(live: &Path, from: &Path) -> Result<(Contents, Option<PathBuf>), CmdbError> {
    if live.exists() {
        // redb locks an open file: failing to open it means an appliance is running on it.
        match redb::Database::open(live) {
            Ok(db) => drop(db),
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(CmdbError::Conflict(format!(
                    "{} is open (is rackboot running?); stop it before restoring",
                    live.display()
                )))
            }
            // A damaged live file is what a restore is for.
            Err(_) => {}
        }
    }
    let dir = live.parent().unwrap_or(Path::new("."));
    let staged = dir.join(format!(".restore-{}.redb", std::process::id()));
    let _ = std::fs::remove_file(&staged);
    let result = copy_new(from, &staged).and_then(|()| inspect(&staged));
    let contents = match result {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            return Err(CmdbError::Invalid(format!("{} cannot be restored: {e}", from.display())));
        }
    };
    let kept = match live.exists() {
        true => {
            let secs =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            let name = format!(
                "{}.before-restore-{secs}",
                live.file_name().and_then(|n| n.to_str()).unwrap_or("rackboot.redb")
            );
            let kept = dir.join(name);
            std::fs::rename(live, &kept)
                .map_err(|e| CmdbError::Storage(format!("moving {} aside: {e}", live.display())))?;
            Some(kept)
        }
        false => None,
    };
    std::fs::rename(&staged, live).map_err(|e| CmdbError::Storage(format!("installing {}: {e}", live.display())))?;
    Ok((contents, kept))
}

/// The newest `*.redb` file in `dir` (scheduled backups), if any.
pub fn latest_backup(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "redb"))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
}

/// Keeps the newest `keep` `rackboot-*.redb` snapshots in `dir`, removes the rest; returns how
/// many were removed.
pub fn prune(dir: &Path, keep: usize) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut snaps: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("rackboot-") && n.ends_with(".redb"))
        })
        .collect();
    // Names carry a UTC timestamp: name order is age order.
    snaps.sort();
    let excess = snaps.len().saturating_sub(keep);
    snaps.iter().take(excess).filter(|p| std::fs::remove_file(p).is_ok()).count()
}

#[cfg(test)]
mod tests;
