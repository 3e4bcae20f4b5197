//! `rackboot plugins`: upload signed vendor plugins, list and show them, activate, roll back,
//! delete; import a signed pack carried in offline; manage the trusted vendor keys.

use std::path::Path;

use super::*;
use rackboot_agent::bundle::sha256_hex;

#[derive(Subcommand)]
pub(super) enum PluginsCmd {
    /// List plugins, their versions and which is active.
    List,
    /// Show a plugin, or one version: manifest, files with their SHA-256, signer.
    Show {
        name: String,
        version: Option<String>,
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
    /// Upload a bundle with its detached minisign signature (`minisign -S -m BUNDLE`).
    Upload {
        /// The `.tar.gz` bundle.
        bundle: PathBuf,
        /// Its signature; default BUNDLE.minisig.
        #[arg(long, value_name = "FILE")]
        sig: Option<PathBuf>,
        /// Store a version below the newest one.
        #[arg(long)]
        allow_downgrade: bool,
    },
    /// Import a signed pack: a directory (or .tar.gz) with index.toml naming its bundles,
    /// their signatures and SHA-256; each bundle gets the same checks as an upload.
    Import {
        pack: PathBuf,
        #[arg(long)]
        allow_downgrade: bool,
    },
    /// Make a stored version the active one.
    Activate { name: String, version: String },
    /// Activate the highest version below the active one.
    Rollback { name: String },
    /// Delete a version (the active one only when it is the last).
    Delete { name: String, version: String },
    /// The vendors' minisign keys rackboot trusts.
    Trust {
        #[command(subcommand)]
        cmd: TrustCmd,
    },
}

#[derive(Subcommand)]
pub(super) enum TrustCmd {
    /// Trust a vendor's minisign public key (minisign.pub) for that vendor's plugins only.
    Add {
        #[arg(long)]
        vendor: String,
        keyfile: PathBuf,
    },
    /// List trusted keys.
    List,
    /// Revoke a key: it verifies nothing more and the versions it signed are disabled.
    Revoke { key_id: String },
}

pub(super) async fn plugins(c: ApiClient, cmd: PluginsCmd) -> anyhow::Result<()> {
    match cmd {
        PluginsCmd::List => {
            let v = c.ok(Method::GET, "/plugins", None).await?;
            for p in v["plugins"].as_array().into_iter().flatten() {
                let versions: Vec<String> = p["versions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|x| {
                        format!("{}{}", s(&x["version"]), if x["disabled"].is_null() { "" } else { " (disabled)" })
                    })
                    .collect();
                println!(
                    "{:<24} vendor={:<16} active={:<10} versions={}",
                    s(&p["name"]),
                    s(&p["vendor"]),
                    s(&p["active"]),
                    versions.join(",")
                );
            }
            Ok(())
        }
        PluginsCmd::Show { name, version, json } => {
            let path = match &version {
                Some(v) => format!("/plugins/{}/versions/{}", enc(&name), enc(v)),
                None => format!("/plugins/{}", enc(&name)),
            };
            let v = c.ok(Method::GET, &path, None).await?;
            if json || version.is_none() {
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
            }
            println!(
                "{} {} vendor={} active={} signer={} sha256={}",
                s(&v["name"]),
                s(&v["version"]),
                s(&v["vendor"]),
                v["active"],
                s(&v["key_id"]),
                s(&v["sha256"])
            );
            if let Some(d) = v["disabled"].as_str() {
                println!("DISABLED: {d}");
            }
            for f in v["files"].as_array().into_iter().flatten() {
                println!("  {}  {:>10}  {}", s(&f["sha256"]), f["size"], s(&f["path"]));
            }
            Ok(())
        }
        PluginsCmd::Upload { bundle, sig, allow_downgrade } => {
            let sig = sig.unwrap_or_else(|| PathBuf::from(format!("{}.minisig", bundle.display())));
            let bytes = std::fs::read(&bundle).with_context(|| format!("reading {}", bundle.display()))?;
            let signature = std::fs::read(&sig).with_context(|| format!("reading the signature {}", sig.display()))?;
            let v = upload(&c, &bytes, &signature, allow_downgrade).await?;
            print_uploaded(&v);
            Ok(())
        }
        PluginsCmd::Import { pack, allow_downgrade } => import(&c, &pack, allow_downgrade).await,
        PluginsCmd::Activate { name, version } => {
            let v = c
                .ok(Method::POST, &format!("/plugins/{}/activate", enc(&name)), Some(json!({ "version": version })))
                .await?;
            println!("{} active={}", s(&v["name"]), s(&v["active"]));
            Ok(())
        }
        PluginsCmd::Rollback { name } => {
            let v = c.ok(Method::POST, &format!("/plugins/{}/rollback", enc(&name)), None).await?;
            println!("{} active={}", s(&v["name"]), s(&v["active"]));
            Ok(())
        }
        PluginsCmd::Delete { name, version } => {
            c.ok(Method::DELETE, &format!("/plugins/{}/versions/{}", enc(&name), enc(&version)), None).await?;
            println!("deleted {name} {version}");
            Ok(())
        }
        PluginsCmd::Trust { cmd } => trust(&c, cmd).await,
    }
}

async fn trust(c: &ApiClient, cmd: TrustCmd) -> anyhow::Result<()> {
    match cmd {
        TrustCmd::Add { vendor, keyfile } => {
            let text = std::fs::read_to_string(&keyfile).with_context(|| format!("reading {}", keyfile.display()))?;
            let k = c.ok(Method::POST, "/plugin-keys", Some(json!({ "vendor": vendor, "public_key": text }))).await?;
            println!("trusted key {} for vendor {}", s(&k["key_id"]), s(&k["vendor"]));
        }
        TrustCmd::List => {
            let v = c.ok(Method::GET, "/plugin-keys", None).await?;
            for k in v["keys"].as_array().into_iter().flatten() {
                let state = if k["revoked_at"].is_null() {
                    "trusted".to_string()
                } else {
                    format!("revoked at {}", k["revoked_at"])
                };
                println!("{}  vendor={:<16} {state}", s(&k["key_id"]), s(&k["vendor"]));
            }
        }
        TrustCmd::Revoke { key_id } => {
            let k = c.ok(Method::POST, &format!("/plugin-keys/{}/revoke", enc(&key_id)), None).await?;
            println!("revoked key {} of vendor {}; its plugins are disabled", s(&k["key_id"]), s(&k["vendor"]));
        }
    }
    Ok(())
}

async fn upload(c: &ApiClient, bundle: &[u8], sig: &[u8], allow_downgrade: bool) -> anyhow::Result<Value> {
    let flag = if allow_downgrade { &b"true"[..] } else { &b"false"[..] };
    let parts =
        [("bundle", "bundle.tar.gz", bundle), ("signature", "bundle.minisig", sig), ("allow_downgrade", "flag", flag)];
    let (status, v) = c.post_form("/plugins", &parts).await?;
    if !(200..300).contains(&status) {
        anyhow::bail!("API error {status}: {}", v["detail"].as_str().unwrap_or("no message"));
    }
    Ok(v)
}

fn print_uploaded(v: &Value) {
    let p = &v["plugin"];
    let what = if v["created"] == true { "stored" } else { "already stored" };
    let active = if v["activated"] == true { ", now active" } else { "" };
    println!(
        "{what} {} {} (vendor {}, sha256 {}){active}",
        s(&p["name"]),
        s(&p["version"]),
        s(&p["vendor"]),
        s(&p["sha256"])
    );
}

/// A pack's `index.toml`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Index {
    bundle: Vec<IndexEntry>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexEntry {
    file: String,
    signature: String,
    sha256: String,
}

/// Bundles in one pack at most.
const MAX_PACK_BUNDLES: usize = 256;

async fn import(c: &ApiClient, pack: &Path, allow_downgrade: bool) -> anyhow::Result<()> {
    let scratch;
    let dir = if pack.is_dir() {
        pack.to_path_buf()
    } else {
        scratch = Scratch::new()?;
        let f = std::fs::File::open(pack).with_context(|| format!("opening {}", pack.display()))?;
        let limits = rackboot_agent::bundle::Limits {
            max_entries: 2 * MAX_PACK_BUNDLES + 1,
            max_depth: 4,
            max_file_bytes: 4 << 30,
            max_total_bytes: 16 << 30,
        };
        rackboot_agent::bundle::unpack(f, &limits, Some(&scratch.0))
            .map_err(|e| anyhow::anyhow!("pack {}: {e}", pack.display()))?;
        scratch.0.clone()
    };
    let text = std::fs::read_to_string(dir.join("index.toml")).context("the pack has no index.toml")?;
    let index: Index = toml::from_str(&text).context("index.toml")?;
    anyhow::ensure!(!index.bundle.is_empty(), "index.toml lists no bundle");
    anyhow::ensure!(index.bundle.len() <= MAX_PACK_BUNDLES, "index.toml lists more than {MAX_PACK_BUNDLES} bundles");
    // Every file is read and checked against the index before the first upload.
    let mut loaded = Vec::new();
    for e in &index.bundle {
        let limits = rackboot_agent::bundle::Limits::default();
        for name in [&e.file, &e.signature] {
            let clean = rackboot_agent::bundle::clean_path(name.as_bytes(), &limits)
                .map_err(|err| anyhow::anyhow!("index.toml: {err}"))?;
            anyhow::ensure!(clean == *name, "index.toml: {name:?} is not a plain relative path");
        }
        let bytes = std::fs::read(dir.join(&e.file)).with_context(|| format!("pack: reading {}", e.file))?;
        let sig = std::fs::read(dir.join(&e.signature)).with_context(|| format!("pack: reading {}", e.signature))?;
        let got = sha256_hex(&bytes);
        anyhow::ensure!(
            got == e.sha256.to_ascii_lowercase(),
            "pack: {} has sha256 {got}, index.toml says {}",
            e.file,
            e.sha256
        );
        loaded.push((e.file.clone(), bytes, sig));
    }
    let mut refused = 0;
    for (file, bytes, sig) in loaded {
        match upload(c, &bytes, &sig, allow_downgrade).await {
            Ok(v) => print_uploaded(&v),
            Err(e) => {
                refused += 1;
                eprintln!("{file}: {e:#}");
            }
        }
    }
    anyhow::ensure!(refused == 0, "{refused} of {} bundles refused", index.bundle.len());
    Ok(())
}

/// A temporary directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> anyhow::Result<Scratch> {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("randomness: {e}"))?;
        let p = std::env::temp_dir().join(format!("rackboot-pack-{:016x}", u64::from_le_bytes(b)));
        std::fs::create_dir(&p).with_context(|| format!("creating {}", p.display()))?;
        Ok(Scratch(p))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
