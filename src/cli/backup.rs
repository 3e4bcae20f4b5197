//! `rackboot backup FILE` (a consistent snapshot through the API, while the appliance serves)
//! and `rackboot restore FILE` (into a stopped appliance's data dir).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use http_body_util::BodyExt;
use hyper::Method;
use rackboot::client::ApiClient;
use rackboot::config::Config;

/// Downloads `GET /backup` into `file` (0600, written beside it first and renamed when whole).
pub async fn backup(api: ApiClient, file: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(!file.exists(), "{} exists; rackboot never overwrites a backup", file.display());
    let resp = api.send(Method::GET, "/backup", &[], String::new()).await?;
    let status = resp.status();
    let mut body = resp.into_body();
    if !status.is_success() {
        let bytes = body.collect().await?.to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let detail = v["detail"].as_str().map(str::to_string).unwrap_or_else(|| String::from_utf8_lossy(&bytes).into());
        anyhow::bail!("API error {status}: {detail}");
    }
    let part = part_path(file);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&part)
        .with_context(|| format!("creating {}", part.display()))?;
    let written = async {
        let mut n = 0u64;
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                out.write_all(&data)?;
                n += data.len() as u64;
            }
        }
        out.sync_all()?;
        anyhow::Ok(n)
    }
    .await;
    let n = match written {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e.context("the download broke off; nothing was kept"));
        }
    };
    // Checked before it is called a backup: it opens as a CMDB.
    let contents = match rackboot::cmdb::backup::inspect(&part) {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            anyhow::bail!("the downloaded file is not a usable CMDB ({e}); nothing was kept");
        }
    };
    std::fs::rename(&part, file).with_context(|| format!("renaming to {}", file.display()))?;
    println!("{}: {n} bytes downloaded; {contents}", file.display());
    Ok(())
}

fn part_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".part");
    file.with_file_name(name)
}

/// Restores `file` into the data dir of `config` (the appliance must be stopped).
pub fn restore(config: Option<&Path>, file: &Path) -> anyhow::Result<()> {
    let cfg = Config::load(config)?;
    let live = cfg.data_dir.join("rackboot.redb");
    std::fs::create_dir_all(&cfg.data_dir).with_context(|| format!("creating {}", cfg.data_dir.display()))?;
    let (contents, kept) = rackboot::cmdb::backup::restore(&live, file)?;
    println!("restored {} into {}: {contents}", file.display(), live.display());
    if let Some(kept) = kept {
        println!("the replaced file is kept as {}", kept.display());
    }
    Ok(())
}
