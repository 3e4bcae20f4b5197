//! `rackboot firmware`: images (by SHA-256), baselines, a machine's or a rack's drift, and
//! updates through the BMCs.

use super::*;

#[derive(Subcommand)]
pub(super) enum FirmwareCmd {
    /// List the uploaded images and the baselines that name them.
    Images,
    /// Upload an image; it is kept by its SHA-256, which a baseline's component names.
    #[command(after_help = "Example:\n  rackboot firmware upload BIOS_R650_2.20.0.bin   # prints sha256:...")]
    Upload {
        /// The image file (as the vendor ships it for Redfish updates).
        file: PathBuf,
    },
    /// Remove an image no baseline names.
    Rm {
        /// Its SHA-256.
        sha256: String,
    },
    /// List the baselines ([[firmware.baselines]]) and the images they miss.
    Baselines,
    /// Show a machine's (or a rack's) drift from its baseline, from the BMC's last read;
    /// --read reads the machine's firmware first.
    #[command(after_help = "Examples:\n  rackboot firmware drift node07 --read\n  rackboot firmware drift --rack r12")]
    Drift {
        /// Machine id or MAC.
        #[arg(required_unless_present = "rack", conflicts_with = "rack")]
        id: Option<String>,
        #[arg(long)]
        rack: Option<String>,
        #[arg(long, conflicts_with = "rack")]
        read: bool,
    },
    /// Bring a machine (or every machine of a rack) to its baseline through its BMC, in the
    /// background: `rackboot machines events ID` follows it (firmware.*).
    #[command(
        after_help = "Examples:\n  rackboot firmware update node07\n  rackboot firmware update --rack r12 --no-restart"
    )]
    Update {
        /// Machine id or MAC.
        #[arg(required_unless_present = "rack", conflicts_with = "rack")]
        id: Option<String>,
        #[arg(long)]
        rack: Option<String>,
        /// Do not restart machines for components that wait for a restart (the versions show
        /// after their next one).
        #[arg(long)]
        no_restart: bool,
    },
}

pub(super) async fn firmware(c: ApiClient, cmd: FirmwareCmd) -> anyhow::Result<()> {
    match cmd {
        FirmwareCmd::Images => {
            let v = c.ok(Method::GET, "/firmware/images", None).await?;
            for i in v["images"].as_array().into_iter().flatten() {
                let used: Vec<&str> = i["used_by"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                let used = if used.is_empty() { "-".to_string() } else { used.join(",") };
                println!("sha256:{}  {:>12} bytes  {used}", s(&i["sha256"]), s(&i["bytes"]));
            }
        }
        FirmwareCmd::Upload { file } => {
            // Refused before a byte is sent if it is larger than the appliance takes.
            let max = c.ok(Method::GET, "/firmware/images", None).await?["max_bytes"].as_u64().unwrap_or(u64::MAX);
            let len = std::fs::metadata(&file).with_context(|| format!("reading {}", file.display()))?.len();
            anyhow::ensure!(
                len <= max,
                "{} is {len} bytes, larger than the appliance takes ({max} bytes: firmware.max_image_mb)",
                file.display()
            );
            let resp = c.send_file(Method::PUT, "/firmware/images", "application/octet-stream", &file).await?;
            let status = resp.status().as_u16();
            let body = http_body_util::BodyExt::collect(resp.into_body()).await?.to_bytes();
            let v: Value = serde_json::from_slice(&body).unwrap_or_default();
            anyhow::ensure!((200..300).contains(&status), "API error {status}: {}", s(&v["detail"]));
            let how = if status == 201 { "stored" } else { "stored already" };
            println!("sha256:{} ({} bytes, {how})", s(&v["sha256"]), s(&v["bytes"]));
        }
        FirmwareCmd::Rm { sha256 } => {
            let sha = sha256.trim_start_matches("sha256:");
            c.ok(Method::DELETE, &format!("/firmware/images/{}", enc(sha)), None).await?;
        }
        FirmwareCmd::Baselines => {
            let v = c.ok(Method::GET, "/firmware/baselines", None).await?;
            for b in v["baselines"].as_array().into_iter().flatten() {
                println!("{}", s(&b["name"]));
                let missing: Vec<&str> =
                    b["missing_images"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                for comp in b["components"].as_array().into_iter().flatten() {
                    let img = s(&comp["image"]);
                    let note = if missing.contains(&img.as_str()) { "  (image not uploaded)" } else { "" };
                    println!("  {:<8} {:<16} sha256:{img}{note}", s(&comp["component"]), s(&comp["version"]));
                }
            }
        }
        FirmwareCmd::Drift { id: Some(id), read, .. } => {
            if read {
                c.ok(Method::POST, &format!("/machines/{}/firmware", enc(&id)), None).await?;
            }
            print_drift(&c.ok(Method::GET, &format!("/machines/{}/firmware/drift", enc(&id)), None).await?);
        }
        FirmwareCmd::Drift { rack: Some(rack), .. } => {
            let v = c.ok(Method::GET, &format!("/racks/{}/firmware", enc(&rack)), None).await?;
            println!("rack {}: {}", s(&v["rack"]), v["standing"].as_str().unwrap_or("no baselines"));
            for m in v["machines"].as_array().into_iter().flatten() {
                let standing = m["drift"]["standing"].as_str().unwrap_or("no baseline");
                let busy = if m["updating"] == true { "  (updating)" } else { "" };
                let name = m["hostname"].as_str().map(str::to_string).unwrap_or_else(|| s(&m["machine_id"]));
                println!("  U{:<4} {name:<24} {standing}{busy}", s(&m["slot"]));
            }
        }
        FirmwareCmd::Update { id, rack, no_restart } => {
            let body = Some(json!({"restart": !no_restart}));
            match (id, rack) {
                (Some(id), _) => {
                    let v = c.ok(Method::POST, &format!("/machines/{}/firmware/update", enc(&id)), body).await?;
                    println!("machine {}: updating to baseline {}", s(&v["machine_id"]), s(&v["baseline"]));
                }
                (None, Some(rack)) => {
                    let v = c.ok(Method::POST, &format!("/racks/{}/firmware/update", enc(&rack)), body).await?;
                    for m in v["started"].as_array().into_iter().flatten() {
                        println!("machine {}: updating to baseline {}", s(&m["machine_id"]), s(&m["baseline"]));
                    }
                    for m in v["refused"].as_array().into_iter().flatten() {
                        println!("machine {}: not started: {}", s(&m["machine_id"]), s(&m["error"]));
                    }
                }
                (None, None) => anyhow::bail!("name a machine or --rack"),
            }
        }
        FirmwareCmd::Drift { .. } => anyhow::bail!("name a machine or --rack"),
    }
    Ok(())
}

fn print_drift(v: &Value) {
    println!("baseline  {}  ({})", s(&v["baseline"]), s(&v["standing"]));
    if v["read_at_ms"].is_null() {
        println!("          never read: rackboot firmware drift ID --read");
    }
    for c in v["components"].as_array().into_iter().flatten() {
        let found: Vec<String> = c["found"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| format!("{} {}", s(&f["name"]), f["version"].as_str().unwrap_or("?")))
            .collect();
        let found = if found.is_empty() { "not reported".to_string() } else { found.join("; ") };
        println!("  {:<8} {:<8} wanted {:<16} {found}", s(&c["component"]), s(&c["standing"]), s(&c["wanted"]));
    }
}
