//! Starting, waiting for and stopping a private `vgpu-mediator`.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::CliError;

/// A mediator this process started; it is stopped on drop.
#[derive(Debug)]
pub struct Mediator {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
    output: PathBuf,
}

/// True when `path` exists and is a Unix socket.
pub fn is_socket(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// The last `n` lines of a text file ("" if it cannot be read).
pub fn tail(path: &Path, n: usize) -> String {
    let Ok(f) = File::open(path) else {
        return String::new();
    };
    let lines: Vec<String> = BufReader::new(f).lines().map_while(Result::ok).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Mediator {
    /// Starts `bin --listen unix:<socket> <driver_args> --log <log>`; its own
    /// standard output and error go to `<log>.out`.
    pub fn start(
        bin: &Path,
        socket: &Path,
        driver_args: &[OsString],
        log: &Path,
    ) -> Result<Mediator, CliError> {
        let mut output = log.as_os_str().to_owned();
        output.push(".out");
        let output = PathBuf::from(output);
        let out = File::create(&output)
            .map_err(CliError::io(format!("creating {}", output.display())))?;
        let err = out
            .try_clone()
            .map_err(CliError::io("duplicating a file handle"))?;
        let mut listen = OsString::from("unix:");
        listen.push(socket);
        let child = Command::new(bin)
            .arg("--listen")
            .arg(listen)
            .args(driver_args)
            .arg("--log")
            .arg(log)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| CliError::Mediator(format!("cannot start {}: {e}", bin.display())))?;
        Ok(Mediator {
            child,
            socket: socket.to_owned(),
            log: log.to_owned(),
            output,
        })
    }

    /// The mediator's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the mediator wrote: its stdout/stderr, then its log's tail.
    pub fn diagnostics(&self) -> String {
        let mut s = String::new();
        for (what, path) in [("output", &self.output), ("log", &self.log)] {
            let t = tail(path, 20);
            if !t.is_empty() {
                s.push_str(&format!(
                    "\n--- mediator {what} ({}) ---\n{t}",
                    path.display()
                ));
            }
        }
        s
    }

    /// Waits until the socket exists, the process exits, or `timeout` passes.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<Duration, CliError> {
        let start = Instant::now();
        loop {
            if is_socket(&self.socket) {
                return Ok(start.elapsed());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(CliError::Mediator(format!(
                    "exited ({}) before opening {}{}",
                    describe(status),
                    self.socket.display(),
                    self.diagnostics()
                )));
            }
            if start.elapsed() >= timeout {
                return Err(CliError::Mediator(format!(
                    "{} did not appear within {} s{}",
                    self.socket.display(),
                    timeout.as_secs(),
                    self.diagnostics()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Asks the mediator to stop (SIGTERM), waits up to 3 s, then kills it.
    pub fn stop(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: `pid` is our own child, not yet reaped (try_wait returned
            // None above), so the id cannot have been reused by another process.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill()?;
        self.child.wait()
    }
}

impl Drop for Mediator {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// "exit status 3" or "killed by signal 9".
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    }
}
