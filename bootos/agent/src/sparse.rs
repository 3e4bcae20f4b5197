//! The deploy's disk writer: an image's runs of zeros are zeroed on the disk, not written.
//!
//! A disk image is mostly the free space of its file systems: the lab's is 1 GiB with 616 MB
//! in use. The writer gathers the decoded image into [`CHUNK`]-sized pieces at aligned offsets.
//! A piece that is all zeros becomes one `fallocate(FALLOC_FL_ZERO_RANGE)`: on a block device
//! the kernel sends the disk a WRITE ZEROES (NVMe, SCSI, virtio-blk), or writes zeros itself
//! where the disk has none, so the result is the same bytes either way; on a file it leaves
//! unwritten extents. Any other piece is written where it belongs. Where the disk or file
//! system refuses the call, the writer writes the zeros from then on. (qemu-img convert, which
//! Ironic writes images with, skips zeros the same way.)

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;

use nix::fcntl::{fallocate, FallocateFlags};

/// The piece the writer looks at, and the size of its writes.
pub const CHUNK: usize = 1 << 20;

/// Writes a stream to `file` from offset 0; see the module's text.
pub struct SparseWriter {
    file: File,
    buf: Vec<u8>,
    /// Where `buf` goes.
    offset: u64,
    /// False once the disk refused to zero a range: zeros are written from then on.
    zero_range: bool,
    /// Bytes zeroed rather than written.
    zeroed: u64,
}

impl SparseWriter {
    pub fn new(file: File) -> SparseWriter {
        SparseWriter { file, buf: Vec::with_capacity(CHUNK), offset: 0, zero_range: true, zeroed: 0 }
    }

    /// Writes what is left and hands the file back, with the bytes that were zeroed rather
    /// than written.
    pub fn finish(mut self) -> std::io::Result<(File, u64)> {
        self.put()?;
        Ok((self.file, self.zeroed))
    }

    /// Puts `buf` on the disk at `offset`: zeroed if it is a whole piece of zeros, else written.
    fn put(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let len = self.buf.len();
        let zeroed = self.zero_range
            && len == CHUNK
            && all_zero(&self.buf)
            && match fallocate(&self.file, FallocateFlags::FALLOC_FL_ZERO_RANGE, self.offset as i64, len as i64) {
                Ok(()) => true,
                Err(e) => {
                    tracing::debug!(error = %e, "the disk does not zero ranges: writing its zeros");
                    self.zero_range = false;
                    false
                }
            };
        if zeroed {
            self.zeroed += len as u64;
        } else {
            self.file.write_all_at(&self.buf, self.offset)?;
        }
        self.offset += len as u64;
        self.buf.clear();
        Ok(())
    }
}

impl Write for SparseWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = data.len().min(CHUNK - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == CHUNK {
            self.put()?;
        }
        Ok(n)
    }

    /// Writes a partial piece too (a later piece may then be written rather than zeroed, if
    /// the disk wants aligned ranges).
    fn flush(&mut self) -> std::io::Result<()> {
        self.put()
    }
}

/// Whether `b` holds only zeros (16 bytes at a time).
fn all_zero(b: &[u8]) -> bool {
    let mut words = b.chunks_exact(16);
    words.all(|w| u128::from_ne_bytes(w.try_into().unwrap_or([1; 16])) == 0)
        && words.remainder().iter().all(|&x| x == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_pieces_are_zeroed_the_rest_written_and_the_file_ends_where_the_stream_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk");
        // Data, two pieces of zeros, data that ends in zeros, then a whole piece of zeros at
        // the very end (a zeroed range must still make the file that long).
        let mut want = vec![9u8; CHUNK + 100];
        want.extend(vec![0u8; 2 * CHUNK - 100]);
        want.extend(vec![3u8; 10]);
        want.extend(vec![0u8; CHUNK - 10]);
        want.extend(vec![0u8; CHUNK]);
        // Stale bytes where the zeros go: they must be gone afterwards.
        std::fs::write(&path, vec![0xeeu8; want.len()]).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let mut w = SparseWriter::new(file);
        for piece in want.chunks(777_777) {
            w.write_all(piece).unwrap();
        }
        let (_, zeroed) = w.finish().unwrap();
        assert!(std::fs::read(&path).unwrap() == want, "the file holds the stream byte for byte");
        // The third and the fifth piece are zeros; the others hold data. tmpfs has no
        // ZERO_RANGE: there they are written instead.
        let tmpfs = nix::sys::statfs::statfs(dir.path()).unwrap().filesystem_type() == nix::sys::statfs::TMPFS_MAGIC;
        assert_eq!(zeroed, if tmpfs { 0 } else { 2 * CHUNK as u64 });

        let fresh = dir.path().join("new");
        let mut w = SparseWriter::new(File::create(&fresh).unwrap());
        w.write_all(&[[1u8; 5].as_slice(), &vec![0u8; 2 * CHUNK - 5]].concat()).unwrap();
        w.finish().unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().len(), 2 * CHUNK as u64, "a zeroed end still counts");
    }

    #[test]
    fn zeros_are_told_apart_from_any_other_byte() {
        let mut b = vec![0u8; 4099];
        assert!(all_zero(&b));
        for i in [0, 15, 16, 4096, 4098] {
            b[i] = 1;
            assert!(!all_zero(&b), "a byte at {i}");
            b[i] = 0;
        }
        assert!(all_zero(&[]));
    }
}
