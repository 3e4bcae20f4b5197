//! `rackboot store migrate`: copies the configured CMDB into another store, verified.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use rackboot::cmdb::kv::{Db, PgConfig};
use rackboot::config::Config;

#[derive(Subcommand)]
pub enum StoreCmd {
    /// Copy the configured CMDB (the data dir's file, or the [store] PostgreSQL) into another
    /// store: a PostgreSQL database (a URL or `host=... dbname=...`) or a new file. Every table is
    /// read back and compared by row count and SHA-256. The target must be empty; the source is
    /// left as it was. Stop rackboot first when copying its file.
    #[command(after_help = "\
Examples:
  systemctl stop rackboot
  rackboot store migrate --config /etc/rackboot/rackboot.toml \\
      --to postgres://rackboot@db.example/rackboot --password-file /etc/rackboot/pg.password
  # then in rackboot.toml: [store] backend = \"postgres\", url = ..., password_file = ...
  rackboot store migrate --config /etc/rackboot/rackboot.toml --to /root/cmdb-from-postgres.redb")]
    Migrate {
        /// TOML config file (its data_dir or [store]). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The target: postgres://user@host/db, "host=/run/postgresql dbname=rackboot", or a
        /// file path that does not exist yet.
        #[arg(long, value_name = "STORE")]
        to: String,
        /// The PostgreSQL password, from an owner-only file (never in the URL).
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
        /// A PostgreSQL schema other than public.
        #[arg(long)]
        schema: Option<String>,
        /// CA certificates (PEM) the PostgreSQL server's certificate must chain to (TLS or nothing).
        #[arg(long, value_name = "FILE")]
        tls_ca_file: Option<PathBuf>,
    },
}

/// Runs `rackboot store ...`.
pub async fn store(cmd: StoreCmd) -> anyhow::Result<()> {
    match cmd {
        StoreCmd::Migrate { config, to, password_file, schema, tls_ca_file } => {
            migrate(config.as_deref(), &to, password_file.as_deref(), schema, tls_ca_file.as_deref()).await
        }
    }
}

/// Where `--to` points.
enum Target {
    File(PathBuf),
    Postgres(PgConfig),
}

/// A PostgreSQL connection string (URL or `key=value` words) rather than a file path.
fn is_postgres(to: &str) -> bool {
    to.starts_with("postgres://") || to.starts_with("postgresql://") || to.split_whitespace().all(|w| w.contains('='))
}

/// Copies the store `config` names (its data dir's file, or its `[store]` PostgreSQL) to `to`.
pub async fn migrate(
    config: Option<&Path>,
    to: &str,
    password_file: Option<&Path>,
    schema: Option<String>,
    tls_ca_file: Option<&Path>,
) -> anyhow::Result<()> {
    let cfg = Config::load(config)?;
    let target = if is_postgres(to) {
        let wire = rackboot::config::WireStore {
            backend: "postgres".into(),
            url: to.into(),
            password_file: password_file.map(|p| p.display().to_string()).unwrap_or_default(),
            schema: schema.unwrap_or_default(),
            tls_ca_file: tls_ca_file.map(|p| p.display().to_string()).unwrap_or_default(),
            ..Default::default()
        };
        let store = rackboot::config::StoreConfig::try_from(wire).context("--to")?;
        Target::Postgres(store.postgres()?.expect("a postgres store"))
    } else {
        anyhow::ensure!(
            password_file.is_none() && schema.is_none() && tls_ca_file.is_none(),
            "--password-file, --schema and --tls-ca-file are for a PostgreSQL target"
        );
        let path = PathBuf::from(to);
        anyhow::ensure!(!path.exists(), "{}: exists; the copy goes into a new file", path.display());
        Target::File(path)
    };
    let source = cfg.store.postgres()?;
    let data_dir = cfg.data_dir.clone();
    let (sums, from, into) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let (from_db, from) = match &source {
            Some(pg) => (Db::open_postgres(pg)?, "the [store] PostgreSQL".to_string()),
            None => {
                let file = data_dir.join("rackboot.redb");
                anyhow::ensure!(file.is_file(), "{}: no CMDB file to copy", file.display());
                let db = rackboot_store::open_file(&file).with_context(|| {
                    format!("opening {} (rackboot must be stopped while its file is copied)", file.display())
                })?;
                (db, file.display().to_string())
            }
        };
        let (to_db, into) = match &target {
            Target::File(p) => (rackboot_store::open_file(p)?, p.display().to_string()),
            Target::Postgres(pg) => (Db::open_postgres(pg)?, "the PostgreSQL store".to_string()),
        };
        let sums = rackboot::cmdb::copy::copy_store(&from_db, &to_db);
        if sums.is_err() {
            if let Target::File(p) = &target {
                drop(to_db);
                let _ = std::fs::remove_file(p);
            }
        }
        Ok((sums?, from, into))
    })
    .await??;
    println!("copied {from} into {into}, verified:");
    for s in &sums {
        println!("  {:<14} {:>9} rows  sha256 {}", s.table, s.rows, &s.sha256[..16]);
    }
    let total: u64 = sums.iter().map(|s| s.rows).sum();
    println!("{total} rows in {} tables, every table's count and checksum the same on both sides", sums.len());
    Ok(())
}
