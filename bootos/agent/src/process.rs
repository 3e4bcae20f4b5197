//! Supervising one child process for a job: its output streamed back in chunks (at most every
//! 200 ms or 16 KiB), a heartbeat while it is quiet, the timeout and the operator's cancel, each
//! of which kills its whole process group.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::jobs::{Sink, Utf8Carry};
use crate::wire::{Outcome, Stream};

const CHUNK: usize = 16 * 1024;
const FLUSH: Duration = Duration::from_millis(200);
const DRAIN: Duration = Duration::from_secs(2);

/// How a supervised process ended.
pub struct Ended {
    /// Stopped by us: `TimedOut` or `Cancelled`.
    pub stopped: Option<Outcome>,
    pub status: std::io::Result<std::process::ExitStatus>,
}

/// Runs `cmd` in a process group of its own, with `stdin` written to it (then closed; null
/// without), until it exits, `timeout` passes or the operator cancels; the error is a failed
/// start.
pub async fn supervise(
    sink: &mut Sink<'_>,
    mut cmd: Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    heartbeat: Duration,
) -> std::io::Result<Ended> {
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A program that never reads its stdin must not stall the job: written aside.
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
        });
    }
    let pgid = child.id().map(|p| nix::unistd::Pid::from_raw(p as i32));
    let kill = || {
        if let Some(p) = pgid {
            let _ = nix::sys::signal::killpg(p, nix::sys::signal::Signal::SIGKILL);
        }
    };
    let (mut out, mut err) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
    let (mut out_buf, mut err_buf) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let (mut out_text, mut err_text) = (Utf8Carry::default(), Utf8Carry::default());
    let (mut pending_out, mut pending_err) = (String::new(), String::new());
    let (mut out_open, mut err_open) = (true, true);
    let start_at = tokio::time::Instant::now();
    // A week is the longest the appliance allows; clamp so the arithmetic cannot overflow.
    let deadline = start_at + timeout.min(Duration::from_secs(7 * 24 * 3600));
    let mut last_sent = start_at;
    let mut flush_at = start_at + FLUSH;
    let mut stopped: Option<Outcome> = None;
    let mut exited: Option<std::io::Result<std::process::ExitStatus>> = None;
    // When the script has exited but something it started in the background still holds its
    // output open, its output is read for a moment more, then the group is killed.
    let mut drain_until: Option<tokio::time::Instant> = None;

    let status = loop {
        tokio::select! {
            n = out.read(&mut out_buf), if out_open => match n {
                Ok(0) | Err(_) => { out_open = false; pending_out += &out_text.finish(); }
                Ok(n) => pending_out += &out_text.push(&out_buf[..n]),
            },
            n = err.read(&mut err_buf), if err_open => match n {
                Ok(0) | Err(_) => { err_open = false; pending_err += &err_text.finish(); }
                Ok(n) => pending_err += &err_text.push(&err_buf[..n]),
            },
            status = child.wait(), if exited.is_none() => {
                exited = Some(status);
                drain_until = Some(tokio::time::Instant::now() + DRAIN);
            }
            _ = tokio::time::sleep_until(flush_at) => {}
            _ = tokio::time::sleep_until(deadline), if stopped.is_none() && exited.is_none() => {
                kill();
                stopped = Some(Outcome::TimedOut);
            }
        }
        if exited.is_some() && (!out_open && !err_open || drain_until.is_some_and(|t| tokio::time::Instant::now() >= t))
        {
            if out_open || err_open {
                kill();
                pending_out += &out_text.finish();
                pending_err += &err_text.finish();
            }
            break exited.take().expect("set above");
        }
        let now = tokio::time::Instant::now();
        if now >= flush_at || pending_out.len() >= CHUNK || pending_err.len() >= CHUNK {
            if !pending_out.is_empty() {
                sink.send(Stream::Stdout, std::mem::take(&mut pending_out)).await;
                last_sent = now;
            }
            if !pending_err.is_empty() {
                sink.send(Stream::Stderr, std::mem::take(&mut pending_err)).await;
                last_sent = now;
            }
            if now.duration_since(last_sent) >= heartbeat {
                sink.send(Stream::Stdout, String::new()).await;
                last_sent = now;
            }
            if sink.stop && stopped.is_none() {
                kill();
                stopped = Some(Outcome::Cancelled);
            }
            flush_at = now + FLUSH;
        }
    };
    for (stream, text) in [(Stream::Stdout, pending_out), (Stream::Stderr, pending_err)] {
        if !text.is_empty() {
            sink.send(stream, text).await;
        }
    }
    Ok(Ended { stopped, status })
}
