//! Firmware images, kept by SHA-256: an upload is streamed to a temporary file in the same
//! directory while it is hashed and counted, and renamed to its hash only once whole and within
//! the size bound; a failed or refused upload leaves nothing behind. The directory is in the
//! boot directory, so BMCs fetch an image at `/boot/files/firmware/<sha256>`.

use std::path::PathBuf;

use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use rackboot_model::baseline::is_sha256;

/// Uploads at once, at most (each holds a file open and hashes).
pub const MAX_UPLOADS: usize = 2;
/// Images kept, at most.
pub const MAX_IMAGES: usize = 1024;

/// Why an upload or a removal failed.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("the image is larger than {0} bytes (firmware.max_image_mb)")]
    TooLarge(u64),
    #[error("the image is empty")]
    Empty,
    #[error("the upload was cut off: {0}")]
    Body(String),
    #[error("{0} images are kept already: remove some first")]
    Full(usize),
    #[error("no image {0}")]
    NotFound(String),
    #[error("storing the image: {0}")]
    Io(#[from] std::io::Error),
}

/// An image as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Image {
    pub sha256: String,
    pub bytes: u64,
    /// When it was stored (Unix ms).
    pub stored_at_ms: u64,
}

/// The image directory.
pub struct Images {
    dir: PathBuf,
    max_bytes: u64,
    uploads: std::sync::Arc<tokio::sync::Semaphore>,
}

impl Images {
    pub fn new(dir: PathBuf, max_bytes: u64) -> Images {
        Images { dir, max_bytes, uploads: std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_UPLOADS)) }
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// A permit to upload, if fewer than [`MAX_UPLOADS`] run.
    pub fn try_upload(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.uploads.clone().try_acquire_owned().ok()
    }

    /// Where image `sha256` is kept (`None`: not a SHA-256).
    pub fn path(&self, sha256: &str) -> Option<PathBuf> {
        is_sha256(sha256).then(|| self.dir.join(sha256.to_ascii_lowercase()))
    }

    /// Whether the image is kept.
    pub fn has(&self, sha256: &str) -> bool {
        self.path(sha256).is_some_and(|p| p.is_file())
    }

    /// Every kept image, by hash.
    pub fn list(&self) -> Result<Vec<Image>, ImageError> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = entry.metadata()?;
            if !is_sha256(&name) || !meta.is_file() {
                continue;
            }
            let stored_at_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as u64);
            out.push(Image { sha256: name, bytes: meta.len(), stored_at_ms });
        }
        out.sort_by(|a, b| a.sha256.cmp(&b.sha256));
        Ok(out)
    }

    /// Stores the body as an image; `true` with it when it was new. A read error is the
    /// upload cut off.
    pub async fn put(&self, mut body: impl AsyncRead + Unpin) -> Result<(Image, bool), ImageError> {
        tokio::fs::create_dir_all(&self.dir).await?;
        let kept = self.list()?.len();
        if kept >= MAX_IMAGES {
            return Err(ImageError::Full(kept));
        }
        let tmp = Temp(self.dir.join(format!(".upload-{:016x}", random())));
        let mut file = tokio::fs::File::create(&tmp.0).await?;
        let (mut hash, mut bytes) = (Sha256::new(), 0u64);
        let mut buf = vec![0u8; 256 << 10];
        loop {
            let n = body.read(&mut buf).await.map_err(|e| match e.kind() {
                std::io::ErrorKind::FileTooLarge => ImageError::TooLarge(self.max_bytes),
                _ => ImageError::Body(e.to_string()),
            })?;
            if n == 0 {
                break;
            }
            let chunk = &buf[..n];
            bytes += n as u64;
            if bytes > self.max_bytes {
                return Err(ImageError::TooLarge(self.max_bytes));
            }
            hash.update(chunk);
            file.write_all(chunk).await?;
        }
        if bytes == 0 {
            return Err(ImageError::Empty);
        }
        file.sync_all().await?;
        drop(file);
        let sha256 = hex(&hash.finalize());
        let path = self.dir.join(&sha256);
        let new = !path.is_file();
        if new {
            tokio::fs::rename(&tmp.0, &path).await?;
            // Read by the HTTP server for BMCs: world-readable, like the other boot files.
            use std::os::unix::fs::PermissionsExt;
            tokio::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).await?;
        }
        let stored_at_ms = std::fs::metadata(&path)?
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as u64);
        Ok((Image { sha256, bytes, stored_at_ms }, new))
    }

    /// Removes an image.
    pub fn remove(&self, sha256: &str) -> Result<(), ImageError> {
        let path = self.path(sha256).ok_or_else(|| ImageError::NotFound(sha256.to_string()))?;
        match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ImageError::NotFound(sha256.to_string())),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes what uploads cut off by a crash left (`.upload-*`).
    pub fn sweep(&self) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else { return };
        for entry in rd.flatten() {
            if entry.file_name().to_string_lossy().starts_with(".upload-") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// A temporary upload file, removed unless renamed.
struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn random() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("the OS random source");
    u64::from_le_bytes(b)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of `parts`, each read separately; an `Err` is the connection cut.
    struct Parts(std::collections::VecDeque<Result<&'static [u8], &'static str>>);

    impl AsyncRead for Parts {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(match self.0.pop_front() {
                None => Ok(()),
                Some(Ok(b)) => {
                    buf.put_slice(b);
                    Ok(())
                }
                Some(Err(e)) => Err(std::io::Error::other(e)),
            })
        }
    }

    fn body(parts: Vec<Result<&'static [u8], &'static str>>) -> Parts {
        Parts(parts.into())
    }

    fn leftovers(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
    }

    #[tokio::test]
    async fn an_image_is_kept_by_its_hash_and_a_bad_upload_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("firmware");
        let images = Images::new(kept.clone(), 10);
        let (img, new) = images.put(body(vec![Ok(b"abc"), Ok(b"def")])).await.unwrap();
        assert!(new);
        assert_eq!(img.sha256, "bef57ec7f53a6d40beb640a780a639c83bc29ac8a9816f1fc6c5c6dcd93c4721");
        assert_eq!(img.bytes, 6);
        assert!(images.has(&img.sha256) && images.has(&img.sha256.to_uppercase()));
        let (_, new) = images.put(body(vec![Ok(b"abcdef")])).await.unwrap();
        assert!(!new, "the same bytes are the same image");
        assert!(matches!(images.put(body(vec![Ok(b"0123456789"), Ok(b"x")])).await, Err(ImageError::TooLarge(10))));
        assert!(matches!(images.put(body(vec![Ok(b"abc"), Err("reset")])).await, Err(ImageError::Body(_))));
        assert!(matches!(images.put(body(vec![])).await, Err(ImageError::Empty)));
        assert_eq!(leftovers(&kept), vec![img.sha256.clone()], "refused uploads leave nothing");
        assert_eq!(images.list().unwrap(), vec![img.clone()]);
        assert!(matches!(images.remove("../../etc/passwd"), Err(ImageError::NotFound(_))));
        images.remove(&img.sha256).unwrap();
        assert!(matches!(images.remove(&img.sha256), Err(ImageError::NotFound(_))));
        assert!(images.list().unwrap().is_empty());
    }
}
