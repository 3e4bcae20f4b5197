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
