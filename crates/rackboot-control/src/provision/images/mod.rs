//! Images as tasks name them, and what the agent is sent for each. Raw, gzip, xz and zstd images
//! go out as they are: the agent tells the format by the first bytes and expands it on the way
//! to the disk. A qcow2 image is converted to raw once, with `qemu-img` (Debian's qemu-utils),
//! into `converted/<SHA-256 of the qcow2>.img` in the images directory, with the raw file's own
//! SHA-256 in a file beside it. Tasks keep naming, and checksumming, the qcow2; the agent
//! fetches and checks the raw one.
//!
//! An image is untrusted input. Before a conversion its header is checked ([`qcow2`]: nothing
//! that names another file, a virtual size within bounds), and `qemu-img` runs confined by
//! Landlock ([`rackboot_base::sandbox`]) to reading the image and writing its output, with its
//! backing file forced off: so even an image that fooled the check reads nothing of the
//! appliance's. The raw file is served only once its size is the header's and its SHA-256 is
//! written beside it.

mod qcow2;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The directory, inside the images directory, that holds converted images.
pub const CONVERTED: &str = "converted";

/// How long one conversion may take.
const CONVERT_LIMIT: Duration = Duration::from_secs(30 * 60);

/// The largest virtual size a qcow2 image may have (and never more than the free space where
/// its raw conversion goes).
pub const MAX_VIRTUAL_BYTES: u64 = 4 << 40;

/// Whether `path` starts with qcow2's magic bytes.
pub fn is_qcow2(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = [0u8; 4];
    let mut f = std::fs::File::open(path)?;
    let n = f.read(&mut head)?;
    Ok(n == 4 && &head == b"QFI\xfb")
}

/// Checks a task's image `name` in `images_dir` and returns its checksum (of the file as it is
/// there): computed when `given` is `None`. A qcow2 image's checksum is always computed and must
/// equal a given one (its conversion is filed under it); it is converted here, once.
pub fn prepare(images_dir: &Path, name: &str, given: Option<&str>) -> Result<String, String> {
    let path = images_dir.join(name);
    let qcow2 = is_qcow2(&path).map_err(|e| format!("reading image {name}: {e}"))?;
    if let (Some(sum), false) = (given, qcow2) {
        return Ok(sum.to_ascii_lowercase());
    }
    let sum = super::sha256_file(&path).map_err(|e| format!("reading image {name}: {e}"))?;
    if let Some(want) = given.filter(|want| !want.eq_ignore_ascii_case(&sum)) {
        return Err(format!("image {name} has SHA-256 {sum}, not the image_sha256 given ({want})"));
    }
    if qcow2 {
        convert(&path, &images_dir.join(CONVERTED), &sum)?;
    }
    Ok(sum)
}

/// What the agent fetches for image `name` whose checksum is `sha256`: the path under the images
/// directory and the SHA-256 of those bytes.
pub fn served(images_dir: &Path, name: &str, sha256: &str) -> Result<(String, String), String> {
    if !is_qcow2(&images_dir.join(name)).unwrap_or(false) {
        return Ok((name.to_string(), sha256.to_string()));
    }
    let (raw, sum_file) = converted(&images_dir.join(CONVERTED), sha256);
    let sum = std::fs::read_to_string(&sum_file)
        .map_err(|e| format!("image {name}: its raw conversion is missing ({}: {e})", sum_file.display()))?;
    let file = raw.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    Ok((format!("{CONVERTED}/{file}"), sum.trim().to_string()))
}

/// The raw image and its checksum file for the qcow2 whose SHA-256 is `key`.
fn converted(dir: &Path, key: &str) -> (PathBuf, PathBuf) {
    (dir.join(format!("{key}.img")), dir.join(format!("{key}.img.sha256")))
}

/// Converts the qcow2 at `src` to raw under `dir`, filed under `key`, unless that was done. One
/// conversion at a time; the files appear only when complete (a `.part` name until then, which
/// the file server does not serve).
fn convert(src: &Path, dir: &Path, key: &str) -> Result<(), String> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let (raw, sum_file) = converted(dir, key);
    if raw.is_file() && sum_file.is_file() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let size = checked_size(src, dir)?;
    let part = dir.join(format!(".{key}.img.part"));
    let result = run_qemu_img(src, &part).and_then(|()| {
        let len = std::fs::metadata(&part).map_err(|e| format!("reading the converted image: {e}"))?.len();
        if len != size {
            return Err(format!("the converted image is {len} bytes, not the {size} its header says"));
        }
        let sum = super::sha256_file(&part).map_err(|e| format!("reading the converted image: {e}"))?;
        std::fs::write(&sum_file, format!("{sum}\n")).map_err(|e| format!("writing {}: {e}", sum_file.display()))?;
        std::fs::rename(&part, &raw).map_err(|e| format!("renaming the converted image: {e}"))?;
        tracing::info!(image = %src.display(), raw = %raw.display(), sha256 = %sum, "qcow2 image converted to raw");
        Ok(())
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&part);
        let _ = std::fs::remove_file(&sum_file);
    }
    result
}

/// The virtual size of the qcow2 at `src` once its header passes [`qcow2::check`], bounded by
/// [`MAX_VIRTUAL_BYTES`] and the free space in `dir`.
fn checked_size(src: &Path, dir: &Path) -> Result<u64, String> {
    use std::io::Read;
    let mut head = Vec::with_capacity(qcow2::HEAD);
    let file = std::fs::File::open(src).map_err(|e| format!("reading the image: {e}"))?;
    file.take(qcow2::HEAD as u64).read_to_end(&mut head).map_err(|e| format!("reading the image: {e}"))?;
    let free = nix::sys::statvfs::statvfs(dir)
        .map(|s| s.blocks_available().saturating_mul(s.fragment_size()))
        .map_err(|e| format!("reading the free space of {}: {e}", dir.display()))?;
    qcow2::check(&head, MAX_VIRTUAL_BYTES.min(free)).map_err(|why| format!("the image is refused: {why}"))
}

/// `qemu-img convert -f qcow2 -O raw SRC OUT`, the input format stated (never probed) and its
/// backing file forced off, confined to reading SRC and writing OUT, within [`CONVERT_LIMIT`].
fn run_qemu_img(src: &Path, out: &Path) -> Result<(), String> {
    let source = serde_json::json!({"driver": "qcow2", "backing": null, "file": {"driver": "file", "filename": src}});
    std::fs::File::create(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let mut cmd = Command::new("qemu-img");
    cmd.args(["convert", "-q", "-O", "raw"]).arg(format!("json:{source}")).arg(out);
    rackboot_base::sandbox::confine(&mut cmd, &[src], &[out]).map_err(|e| {
        format!("qcow2 images are converted only inside a sandbox: {e} (convert it to raw before naming it)")
    })?;
    let mut child =
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                "a qcow2 image needs qemu-img on the appliance (Debian: apt-get install qemu-utils)".to_string()
            }
            _ => format!("starting qemu-img: {e}"),
        })?;
    let deadline = Instant::now() + CONVERT_LIMIT;
    let status = loop {
        match child.try_wait().map_err(|e| format!("waiting for qemu-img: {e}"))? {
            Some(status) => break status,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("qemu-img took over {} minutes: stopped", CONVERT_LIMIT.as_secs() / 60));
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.by_ref().take(4096).read_to_string(&mut err);
    }
    Err(format!("qemu-img could not convert the image ({status}): {}", err.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qemu_img() -> bool {
        Command::new("qemu-img").arg("--version").output().is_ok_and(|o| o.status.success())
    }

    #[test]
    fn a_qcow2_image_is_converted_once_and_served_raw() {
        if !qemu_img() {
            eprintln!("SKIPPED: no qemu-img (qemu-utils)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let raw: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        std::fs::write(dir.path().join("src.img"), &raw).unwrap();
        let ok = Command::new("qemu-img")
            .args(["convert", "-f", "raw", "-O", "qcow2"])
            .arg(dir.path().join("src.img"))
            .arg(dir.path().join("lab.qcow2"))
            .status()
            .unwrap();
        assert!(ok.success());
        let images = dir.path();
        assert!(is_qcow2(&images.join("lab.qcow2")).unwrap() && !is_qcow2(&images.join("src.img")).unwrap());

        let sum = prepare(images, "lab.qcow2", None).unwrap();
        assert_eq!(sum, super::super::sha256_file(&images.join("lab.qcow2")).unwrap(), "the qcow2's own checksum");
        let (path, raw_sum) = served(images, "lab.qcow2", &sum).unwrap();
        assert_eq!(path, format!("converted/{sum}.img"));
        let converted = std::fs::read(images.join(&path)).unwrap();
        // qemu-img rounds the virtual size up to whole sectors: the image, then zeros.
        assert_eq!(&converted[..raw.len()], &raw[..], "the raw conversion holds the image byte for byte");
        assert!(converted[raw.len()..].iter().all(|&b| b == 0));
        assert_eq!(raw_sum, super::super::sha256_file(&images.join(&path)).unwrap());

        // Once: a second task finds the conversion; a given checksum must be the qcow2's.
        let before = std::fs::metadata(images.join(&path)).unwrap().modified().unwrap();
        assert_eq!(prepare(images, "lab.qcow2", Some(&sum.to_uppercase())).unwrap(), sum);
        assert_eq!(std::fs::metadata(images.join(&path)).unwrap().modified().unwrap(), before);
        let err = prepare(images, "lab.qcow2", Some(&"0".repeat(64))).unwrap_err();
        assert!(err.contains("not the image_sha256 given"), "{err}");
        // Other formats go out as they are, their checksum as given.
        assert_eq!(served(images, "src.img", "abc").unwrap(), ("src.img".into(), "abc".into()));
    }

    #[test]
    fn a_damaged_qcow2_is_refused_and_leaves_nothing_behind() {
        if !qemu_img() {
            eprintln!("SKIPPED: no qemu-img (qemu-utils)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        // A header that names nothing outside, with a cluster size qemu does not take.
        let path = dir.path().join("bad.qcow2");
        let ok = Command::new("qemu-img").args(["create", "-q", "-f", "qcow2"]).arg(&path).arg("1M").status().unwrap();
        assert!(ok.success());
        let mut bad = std::fs::read(&path).unwrap();
        bad[20..24].copy_from_slice(&40u32.to_be_bytes());
        std::fs::write(&path, &bad).unwrap();
        let err = prepare(dir.path(), "bad.qcow2", None).unwrap_err();
        assert!(err.starts_with("qemu-img could not convert the image"), "{err}");
        let left: Vec<_> = std::fs::read_dir(dir.path().join(CONVERTED)).unwrap().collect();
        assert!(left.is_empty(), "no partial file: {left:?}");
        assert!(served(dir.path(), "bad.qcow2", "x").unwrap_err().contains("conversion is missing"));
        // One whose header names another file is refused before qemu-img runs.
        std::fs::write(dir.path().join("forged.qcow2"), b"QFI\xfb\0\0\0\x03\0\0\0\0\0\0\0\x70\0\0\0\x10").unwrap();
        let err = prepare(dir.path(), "forged.qcow2", None).unwrap_err();
        assert!(err.starts_with("the image is refused"), "{err}");
    }

    #[test]
    fn the_converter_reads_nothing_but_the_image_even_past_the_header_check() {
        if !qemu_img() {
            eprintln!("SKIPPED: no qemu-img (qemu-utils)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("admin.token");
        std::fs::write(&secret, "rbt_secret_admin_token".repeat(1000)).unwrap();
        for (name, opt) in [("backed.qcow2", "backing_file"), ("data.qcow2", "data_file")] {
            let src = dir.path().join(name);
            let mut cmd = Command::new("qemu-img");
            cmd.args(["create", "-q", "-f", "qcow2", "-o"]).arg(format!("{opt}={}", secret.display()));
            if opt == "backing_file" {
                cmd.args(["-F", "raw"]);
            }
            assert!(cmd.arg(&src).arg("64K").status().unwrap().success());
            // Straight to the converter, as if the check had missed it.
            let out = dir.path().join(format!("{name}.raw"));
            let result = run_qemu_img(&src, &out);
            let written = std::fs::read(&out).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&written).contains("rbt_secret"),
                "{name}: the converter read the file it names ({result:?})"
            );
        }
    }
}
