//! First start and upgrade: the `admin` user (its initial password in `admin.password`) and
//! the `admin.token` file, whose token is an API token of `admin` stored hashed in the CMDB. A
//! token file from before users existed is imported, so it keeps working.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Context;
use tracing::{info, warn};

use super::{hash_password_async, new_token, presented, Role};
use crate::cmdb::{now_ms, Cmdb, CmdbError, Import, TokenRecord, User};

/// The first admin's username.
pub const ADMIN: &str = "admin";

/// Makes sure an admin can get in: creates `admin` when the CMDB has no user, and returns the
/// token of `data_dir/admin.token` (created for `admin` when the file is missing, imported when
/// the CMDB does not hold it yet). The returned token is empty when the file's token was
/// revoked (it stays revoked; delete the file to get a new one).
pub async fn ensure_admin(cmdb: &Cmdb, data_dir: &Path) -> anyhow::Result<String> {
    ensure_admin_user(cmdb, data_dir).await?;
    let path = data_dir.join("admin.token");
    match std::fs::read_to_string(&path) {
        Ok(text) => import(cmdb, &path, text.trim()).await,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_token_file(cmdb, &path).await,
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

async fn ensure_admin_user(cmdb: &Cmdb, data_dir: &Path) -> anyhow::Result<()> {
    let password = random_hex(16)?;
    let now = now_ms();
    let user = User {
        v: crate::cmdb::model::SCHEMA_VERSION,
        name: ADMIN.into(),
        role: Role::Admin,
        password_hash: hash_password_async(password.clone()).await?,
        disabled: false,
        created_ms: now,
        updated_ms: now,
        directory: None,
        pools: Default::default(),
    };
    if !cmdb.create_user(user, true).await? {
        return Ok(());
    }
    let path = data_dir.join("admin.password");
    // A stale file from an earlier data dir would name a password that no longer works.
    let _ = std::fs::remove_file(&path);
    write_secret(&path, &password)?;
    info!(path = %path.display(), "created user admin; its initial password is in this file");
    Ok(())
}

async fn import(cmdb: &Cmdb, path: &Path, token: &str) -> anyhow::Result<String> {
    // An empty or short file would let a guessable bearer in.
    anyhow::ensure!(token.len() >= 16, "{} holds no usable token (delete it to make a new one)", path.display());
    let (id, hash) = presented(token)
        .with_context(|| format!("{} holds no usable token (delete it to make a new one)", path.display()))?;
    let rec = file_token(id, hash);
    match cmdb.import_file_token(rec).await.with_context(|| format!("importing {}", path.display()))? {
        Import::Valid => Ok(token.to_string()),
        Import::Revoked => {
            warn!(path = %path.display(), "the token in this file was revoked; delete the file to get a new one");
            Ok(String::new())
        }
    }
}

async fn create_token_file(cmdb: &Cmdb, path: &Path) -> anyhow::Result<String> {
    let (id, token, hash) = new_token()?;
    match cmdb.import_file_token(file_token(id, hash)).await {
        Ok(_) => {}
        // Another admin deleted `admin`: nobody to make the file's token for.
        Err(CmdbError::NotFound(what)) => {
            warn!(path = %path.display(), %what, "no admin token file made: user admin is gone");
            return Ok(String::new());
        }
        Err(e) => return Err(e).context("storing the admin token"),
    }
    write_secret(path, &token)?;
    // The token itself stays in the file: stdout ends up in the journal.
    println!("rackboot: admin token created in {} (mode 0600)", path.display());
    Ok(token)
}

fn file_token(id: String, hash: String) -> TokenRecord {
    TokenRecord {
        v: crate::cmdb::model::SCHEMA_VERSION,
        id,
        user: ADMIN.into(),
        name: "admin.token".into(),
        role: Role::Admin,
        hash,
        session: false,
        created_ms: now_ms(),
        expires_ms: None,
        last_used_ms: None,
    }
}

/// Writes a new secret file, mode 0600, refusing to replace one.
fn write_secret(path: &Path, secret: &str) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    writeln!(f, "{secret}")?;
    f.sync_all()?;
    Ok(())
}

fn random_hex(n: usize) -> anyhow::Result<String> {
    let mut raw = vec![0u8; n];
    getrandom::fill(&mut raw).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    Ok(raw.iter().map(|b| format!("{b:02x}")).collect())
}
