//! Running one job: a script (supervised by [`crate::process`]: output streamed back, heartbeat,
//! timeout, cancel), or a built-in action.

use std::time::{Duration, Instant};

use hyper::Method;
use tokio::process::Command;

use crate::client::Client;
pub use crate::process::{supervise, Ended};
use crate::wire::{Action, JobResult, JobSpec, Outcome, OutputAck, OutputChunk, Stream};

/// Writes the script readable and executable by the agent's user only.
fn write_script(dir: &std::path::Path, file: &std::path::Path, body: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir)?;
    let _ = std::fs::remove_file(file);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o700).open(file)?;
    f.write_all(body.as_bytes())
}

/// Sends output to the appliance and remembers whether it asked us to stop.
pub struct Sink<'a> {
    pub client: &'a mut Client,
    pub job: u64,
    pub attempt: u32,
    seq: u32,
    pub stop: bool,
}

impl<'a> Sink<'a> {
    pub fn new(client: &'a mut Client, spec: &JobSpec) -> Sink<'a> {
        Sink { client, job: spec.id, attempt: spec.attempt, seq: 0, stop: false }
    }

    /// Sends one chunk (empty: a heartbeat), retrying a few times; output is best-effort, the
    /// result is what must arrive.
    pub async fn send(&mut self, stream: Stream, data: String) {
        let chunk = OutputChunk { attempt: self.attempt, seq: self.seq, stream, data };
        if !chunk.data.is_empty() {
            self.seq += 1;
        }
        let path = format!("/agent/v1/jobs/{}/output", self.job);
        for delay in [0u64, 1, 2, 4] {
            tokio::time::sleep(Duration::from_secs(delay)).await;
            match self.client.call(Method::POST, &path, Some(&chunk), Duration::from_secs(15)).await {
                Ok(r) if r.ok() => {
                    self.stop |= r.json::<OutputAck>().map(|a| a.stop).unwrap_or(false);
                    return;
                }
                // The job is gone (deleted) or no longer ours: stop it.
                Ok(r) if r.status == 404 => {
                    self.stop = true;
                    return;
                }
                Ok(r) => tracing::warn!(status = r.status, error = %r.error_text(), "output refused"),
                Err(error) => tracing::warn!(%error, "output not sent"),
            }
        }
    }
}

/// Turns bytes into text without splitting a UTF-8 character across chunks: an incomplete
/// sequence at the end is kept for the next call; invalid bytes become U+FFFD.
#[derive(Default)]
pub struct Utf8Carry(Vec<u8>);

impl Utf8Carry {
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.0.extend_from_slice(bytes);
        let keep = match std::str::from_utf8(&self.0) {
            Ok(_) => 0,
            Err(e) if e.error_len().is_none() => self.0.len() - e.valid_up_to(),
            Err(_) => 0,
        };
        let tail = self.0.split_off(self.0.len() - keep);
        let text = String::from_utf8_lossy(&self.0).into_owned();
        self.0 = tail;
        text
    }

    pub fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.0).into_owned();
        self.0.clear();
        text
    }
}

/// Runs a script job to its end and returns the result to report.
pub async fn run_script(
    sink: &mut Sink<'_>,
    spec: &JobSpec,
    heartbeat: Duration,
    workdir: &std::path::Path,
    extra_env: &[(String, String)],
) -> JobResult {
    let start = Instant::now();
    let Action::Script { interpreter, body, args, env } = &spec.action else {
        unreachable!("run_script is only called for scripts")
    };
    let result = |outcome, exit_code, error: Option<String>| JobResult {
        attempt: spec.attempt,
        outcome,
        exit_code,
        duration_ms: start.elapsed().as_millis() as u64,
        error,
        plugin: None,
    };
    let file = workdir.join(format!("job-{}-{}", spec.id, spec.attempt));
    if let Err(e) = write_script(workdir, &file, body) {
        return result(Outcome::Error, None, Some(format!("writing the script to {}: {e}", file.display())));
    }
    let mut cmd = Command::new(interpreter);
    cmd.arg(&file).args(args).envs(extra_env.iter().cloned()).envs(env).env("RACKBOOT_JOB_ID", spec.id.to_string());
    let timeout = Duration::from_secs(spec.timeout_secs);
    let Ended { stopped, status } = match supervise(sink, cmd, None, timeout, heartbeat).await {
        Ok(e) => e,
        Err(e) => {
            let _ = std::fs::remove_file(&file);
            return result(Outcome::Error, None, Some(format!("starting {interpreter}: {e}")));
        }
    };
    let _ = std::fs::remove_file(&file);
    match (stopped, status) {
        (Some(Outcome::TimedOut), _) => {
            result(Outcome::TimedOut, None, Some(format!("killed after {} s", spec.timeout_secs)))
        }
        (Some(o), _) => result(o, None, Some("cancelled by the operator".into())),
        (None, Ok(s)) if s.success() => result(Outcome::Succeeded, Some(0), None),
        (None, Ok(s)) => {
            use std::os::unix::process::ExitStatusExt;
            let why = s.signal().map(|sig| format!("killed by signal {sig}"));
            result(Outcome::Failed, s.code(), why)
        }
        (None, Err(e)) => result(Outcome::Error, None, Some(format!("waiting for the script: {e}"))),
    }
}

/// The disk writer: as is, or through a gzip decoder.
enum Sink2 {
    Raw(std::io::BufWriter<std::fs::File>),
    Gz(Box<flate2::write::GzDecoder<std::io::BufWriter<std::fs::File>>>),
}

impl Sink2 {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        match self {
            Sink2::Raw(w) => w.write_all(b),
            Sink2::Gz(w) => w.write_all(b),
        }
    }

    /// Ends the stream (a gzip image must be complete) and hands back the file writer.
    fn finish(self) -> std::io::Result<std::io::BufWriter<std::fs::File>> {
        match self {
            Sink2::Raw(w) => Ok(w),
            Sink2::Gz(w) => w.finish(),
        }
    }
}

/// Writes an image from `url` to `disk` (raw, or gzip when the name ends in .gz), hashing what
/// arrives; reports progress about every 2 s. The write is synced before the checksum is
/// compared.
pub async fn deploy_image(sink: &mut Sink<'_>, spec: &JobSpec, url: &str, sha256: &str, disk: &str) -> JobResult {
    use sha2::{Digest, Sha256};
    let start = Instant::now();
    let done = |outcome, error: Option<String>| JobResult {
        attempt: spec.attempt,
        outcome,
        exit_code: None,
        duration_ms: start.elapsed().as_millis() as u64,
        error,
        plugin: None,
    };
    let mut resp = match crate::client::get_stream(url).await {
        Ok(r) => r,
        Err(e) => return done(Outcome::Error, Some(format!("fetching {url}: {e:#}"))),
    };
    let total = resp.size;
    let file = std::fs::OpenOptions::new().write(true).create(!disk.starts_with("/dev/")).truncate(false).open(disk);
    let file = match file {
        Ok(f) => std::io::BufWriter::with_capacity(4 << 20, f),
        Err(e) => return done(Outcome::Error, Some(format!("opening {disk}: {e}"))),
    };
    // A gzip image (name ending in .gz) is inflated on the way to the disk; the checksum is of
    // the file as served.
    let gzip = url.ends_with(".gz");
    let mut out = if gzip { Sink2::Gz(Box::new(flate2::write::GzDecoder::new(file))) } else { Sink2::Raw(file) };
    let mut hash = Sha256::new();
    let (mut written, mut next_report) = (0u64, Instant::now() + Duration::from_secs(2));
    sink.send(
        Stream::Stdout,
        format!("deploy: {url} -> {disk} ({} bytes)\n", total.map_or("?".into(), |t| t.to_string())),
    )
    .await;
    loop {
        let chunk = match tokio::time::timeout(Duration::from_secs(60), resp.next_chunk()).await {
            Ok(Ok(Some(c))) => c,
            Ok(Ok(None)) => break,
            Ok(Err(e)) => return done(Outcome::Error, Some(format!("reading {url} at byte {written}: {e:#}"))),
            Err(_) => return done(Outcome::Error, Some(format!("{url} stalled for 60 s at byte {written}"))),
        };
        hash.update(&chunk);
        if let Err(e) = out.write_all(&chunk) {
            return done(Outcome::Error, Some(format!("writing {disk} at byte {written}: {e}")));
        }
        written += chunk.len() as u64;
        if Instant::now() >= next_report {
            let pct = total.map_or(String::new(), |t| format!(" {}%", written * 100 / t.max(1)));
            let rate = written as f64 / start.elapsed().as_secs_f64() / 1e6;
            sink.send(Stream::Stdout, format!("deploy:{pct} {written} bytes, {rate:.1} MB/s\n")).await;
            next_report = Instant::now() + Duration::from_secs(2);
            if sink.stop {
                return done(Outcome::Cancelled, Some("cancelled by the operator".into()));
            }
        }
    }
    let synced = out.finish().and_then(|f| f.into_inner().map_err(|e| e.into_error())).and_then(|f| f.sync_all());
    if let Err(e) = synced {
        return done(Outcome::Error, Some(format!("syncing {disk}: {e}")));
    }
    let got: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if !got.eq_ignore_ascii_case(sha256) {
        return done(Outcome::Failed, Some(format!("sha256 mismatch: image is {got}, expected {sha256}")));
    }
    let secs = start.elapsed().as_secs_f64();
    sink.send(
        Stream::Stdout,
        format!("deploy: 100% {written} bytes in {secs:.1} s ({:.1} MB/s), sha256 ok\n", written as f64 / secs / 1e6),
    )
    .await;
    JobResult { exit_code: Some(0), ..done(Outcome::Succeeded, None) }
}

#[cfg(test)]
mod tests {
    use super::Utf8Carry;

    #[test]
    fn utf8_is_never_split_across_chunks() {
        let text = "größe ✓ done";
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            let mut c = Utf8Carry::default();
            let joined = c.push(&bytes[..cut]) + &c.push(&bytes[cut..]) + &c.finish();
            assert_eq!(joined, text, "cut at {cut}");
        }
        let mut c = Utf8Carry::default();
        assert_eq!(c.push(b"a\xffb"), "a\u{fffd}b");
    }
}
