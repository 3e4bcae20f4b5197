//! The deploy pipeline per image format, on this host: an image is packed as gzip (level 6,
//! what `gzip` does), xz (level 6) and zstd (level 19, `zstd -19`), then each is pushed through
//! the agent's stages (hash, decode, write, fsync) to a file, as `deploy_image` does with the
//! HTTP stream. Prints the served size, the wall time, the rate on the disk and the CPU seconds
//! (user + system) for each, so the formats' costs stand side by side. `bench/deploy.sh --formats`
//! runs it on the lab image.
//!
//!   cargo run --release -p rackboot-agent --example deploy_formats -- IMAGE [SCRATCH_DIR]

use std::io::Write;
use std::time::Instant;

use hyper::body::Bytes;
use rackboot_agent::deploy::Stages;

/// This process's user + system CPU seconds, every thread's (from /proc: clock ticks of 1/100 s).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces) start at its closing parenthesis.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<f64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    // utime and stime are fields 14 and 15 of the line: 12th and 13th after the state letter.
    f.get(10).zip(f.get(11)).map_or(0.0, |(u, s)| (u + s) / 100.0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let image = args.next().ok_or_else(|| anyhow::anyhow!("usage: deploy_formats IMAGE [SCRATCH_DIR]"))?;
    let scratch = args.next().unwrap_or_else(|| std::env::temp_dir().display().to_string());
    let raw = std::fs::read(&image)?;
    eprintln!("packing {image} ({} bytes) as gzip, xz and zstd...", raw.len());
    let gzip = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        e.write_all(&raw)?;
        e.finish()?
    };
    let xz = {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
        e.write_all(&raw)?;
        e.finish()?
    };
    let zstd = zstd::stream::encode_all(&raw[..], 19)?;
    println!("| format | served, MB | wall, s | on the disk, MB/s | CPU, s |");
    println!("|---|---|---|---|---|");
    for (name, served) in [("raw", &raw), ("gzip -6", &gzip), ("xz -6", &xz), ("zstd -19", &zstd)] {
        let disk = std::path::Path::new(&scratch).join("deploy-formats.disk");
        let _ = std::fs::remove_file(&disk);
        let (cpu0, t0) = (cpu_secs(), Instant::now());
        let stages = Stages::start(disk.to_str().unwrap())?;
        for block in served.chunks(1 << 20) {
            let chunks: Vec<Bytes> = block.chunks(64 << 10).map(Bytes::copy_from_slice).collect();
            if !stages.push(chunks).await {
                break;
            }
        }
        let (wrote, _sha) = stages.finish().await;
        let wrote = wrote?;
        let secs = t0.elapsed().as_secs_f64();
        anyhow::ensure!(wrote.bytes == raw.len() as u64, "{name}: {} bytes written", wrote.bytes);
        println!(
            "| {name} | {:.1} | {secs:.2} | {:.0} | {:.2} |",
            served.len() as f64 / 1e6,
            raw.len() as f64 / secs / 1e6,
            cpu_secs() - cpu0
        );
        std::fs::remove_file(&disk)?;
    }
    Ok(())
}
