//! Running one benchmark program with a deadline, and reading what it printed.
//!
//! Programs print `name value unit` lines for figures, `# key text` lines
//! about the run and `FAIL reason` when they fail. Each runs in its own
//! process group, so a timeout kills it and anything it started.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::mediator::describe;

/// What a finished (or stopped) program left behind.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status; None when it was stopped at the deadline.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// What a program printed, parsed.
#[derive(Debug, Default, PartialEq)]
pub struct Parsed {
    /// `(name, value, unit)` per figure line, in order.
    pub values: Vec<(String, f64, String)>,
    /// `(key, text)` per `# key text` line.
    pub meta: Vec<(String, String)>,
    /// The text after the first `FAIL `, if any.
    pub fail: Option<String>,
}

impl Parsed {
    /// The first metadata text for `key`.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value and unit printed for figure `name`.
    pub fn value(&self, name: &str) -> Option<(f64, &str)> {
        self.values
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, v, u)| (*v, u.as_str()))
    }

    /// The library line: its path, and whether it is vgpu's client.
    pub fn library(&self) -> Option<(&str, bool)> {
        let text = self.meta("library")?;
        let (path, shim) = text.rsplit_once(" shim=")?;
        Some((path, shim == "1"))
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Parses a program's standard output.
pub fn parse(stdout: &str) -> Parsed {
    let mut p = Parsed::default();
    for line in stdout.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("# ") {
            let (k, v) = rest.split_once(' ').unwrap_or((rest, ""));
            p.meta.push((k.to_owned(), v.trim().to_owned()));
        } else if let Some(reason) = line.strip_prefix("FAIL") {
            if p.fail.is_none() {
                p.fail = Some(reason.trim().to_owned());
            }
        } else if let [name, value, unit] = line.split_whitespace().collect::<Vec<_>>()[..] {
            if let Ok(v) = value.parse::<f64>() {
                if is_name(name) && v.is_finite() {
                    p.values.push((name.to_owned(), v, unit.to_owned()));
                }
            }
        }
    }
    p
}

/// Keeps a reason to one line of at most 240 characters.
pub fn one_line(s: &str) -> String {
    let s = s.trim().lines().next().unwrap_or("").trim();
    if s.chars().count() <= 240 {
        return s.to_owned();
    }
    let cut: String = s.chars().take(237).collect();
    format!("{cut}...")
}

/// The last non-empty line of `text` that is not a Python traceback frame.
fn last_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).rfind(|l| !l.is_empty())
}

/// Why a run failed, in one line; None when it succeeded.
pub fn failure(f: &Finished, parsed: &Parsed, timeout: Duration) -> Option<String> {
    let Some(status) = f.status else {
        let mut why = format!("timed out after {} s", timeout.as_secs());
        if let Some(l) = last_line(&f.stderr) {
            why.push_str(&format!(" (last output: {})", one_line(l)));
        }
        return Some(why);
    };
    if let Some(reason) = &parsed.fail {
        return Some(one_line(reason));
    }
    if status.success() {
        return None;
    }
    let how = match status.signal().and_then(signal_name) {
        Some(name) => format!("{} ({name})", describe(status)),
        None => describe(status),
    };
    Some(match (last_line(&f.stderr), last_line(&f.stdout)) {
        // An error message on stderr says the most.
        (Some(l), _) => format!("{} ({how})", one_line(l)),
        (None, Some(l)) => format!("{how}; last output: {}", one_line(l)),
        (None, None) => how,
    })
}

/// The names of the signals a crashing or stopped program dies of.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

fn reader<R: Read + Send + 'static>(r: R) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let mut bytes = Vec::new();
        let _ = BufReader::new(r).read_to_end(&mut bytes);
        s.push_str(&String::from_utf8_lossy(&bytes));
        s
    })
}

/// Kills the process group of `child` (started with `process_group(0)`).
/// Call only while the child is not yet reaped: its pid, the group's id,
/// then cannot have been reused.
fn kill_group(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: `pid` is our own child, not yet reaped (callers guarantee
        // it), and the leader of its own process group (process_group(0)),
        // so -pid names only that group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
}

/// True when the child has exited; it is left unreaped (WNOWAIT), so its
/// process group id stays reserved until [`Child::wait`].
fn exited(child: &Child) -> std::io::Result<bool> {
    let pid = libc::id_t::from(child.id());
    // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid, writable siginfo_t; WNOHANG makes the call
    // return at once, and WNOWAIT leaves the child waitable.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: waitid succeeded, so si_pid is initialized (0 when nothing exited).
    Ok(unsafe { info.si_pid() } != 0)
}

/// Waits for the child until `deadline`. Either way the whole process group
/// is killed before the child is reaped, so a straggler (a program's own
/// child) cannot hold the output pipes open. None: the deadline passed.
fn finish(child: &mut Child, deadline: Instant) -> Result<Option<ExitStatus>, String> {
    loop {
        let done = exited(child).map_err(|e| format!("waiting for the program: {e}"))?;
        if done || Instant::now() >= deadline {
            kill_group(child);
            let status = child
                .wait()
                .map_err(|e| format!("waiting for the program: {e}"))?;
            return Ok(done.then_some(status));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn spawn(mut cmd: Command) -> Result<Child, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    cmd.spawn()
        .map_err(|e| format!("cannot start {}: {e}", cmd.get_program().to_string_lossy()))
}

/// Runs `cmd` to the end or until `timeout`, then kills its process group.
pub fn run(cmd: Command, timeout: Duration) -> Result<Finished, String> {
    let start = Instant::now();
    let mut child = spawn(cmd)?;
    let out = child.stdout.take().map(reader);
    let err = child.stderr.take().map(reader);
    let status = finish(&mut child, start + timeout)?;
    let elapsed = start.elapsed();
    let stdout = out.and_then(|h| h.join().ok()).unwrap_or_default();
    let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok(Finished {
        status,
        stdout,
        stderr,
        elapsed,
    })
}

/// Runs `cmd` and returns how long after the spawn the line `marker`
/// appeared on its standard output, with the finished run. The clock starts
/// just before the spawn.
pub fn time_to_line(
    cmd: Command,
    marker: &str,
    timeout: Duration,
) -> Result<(Option<Duration>, Finished), String> {
    let start = Instant::now();
    let mut child = spawn(cmd)?;
    let err = child.stderr.take().map(reader);
    let (tx, rx) = mpsc::channel::<(Instant, String)>();
    let out = child.stdout.take().map(|o| {
        std::thread::spawn(move || {
            for line in BufReader::new(o).lines().map_while(Result::ok) {
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        })
    });
    let deadline = start + timeout;
    let mut stdout = String::new();
    let mut seen = None;
    while seen.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((at, line)) => {
                if line.trim() == marker {
                    seen = Some(at.duration_since(start));
                }
                stdout.push_str(&line);
                stdout.push('\n');
            }
            Err(_) => break,
        }
    }
    let status = finish(&mut child, deadline)?;
    let elapsed = start.elapsed();
    if let Some(h) = out {
        let _ = h.join();
    }
    while let Ok((_, line)) = rx.try_recv() {
        stdout.push_str(&line);
        stdout.push('\n');
    }
    let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok((
        seen,
        Finished {
            status,
            stdout,
            stderr,
            elapsed,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_figures_metadata_and_failures() {
        let p = parse(
            "# library /usr/lib/libcuda.so.1 shim=0\n\
             # device NVIDIA H200\n\
             launch_1t 384000.5 launches/s\n\
             random text that is not a figure\n\
             memcpy_8b_pinned_h2d 7.6 us\n\
             Bad_Name 1 us\n\
             nan_value nan us\n\
             FAIL cuMemHostAlloc returned CUDA_ERROR_OUT_OF_MEMORY (2)\n\
             FAIL second\n",
        );
        assert_eq!(p.meta("device"), Some("NVIDIA H200"));
        assert_eq!(p.library(), Some(("/usr/lib/libcuda.so.1", false)));
        assert_eq!(p.value("launch_1t"), Some((384000.5, "launches/s")));
        assert_eq!(p.value("memcpy_8b_pinned_h2d"), Some((7.6, "us")));
        assert_eq!(p.values.len(), 2);
        assert_eq!(
            p.fail.as_deref(),
            Some("cuMemHostAlloc returned CUDA_ERROR_OUT_OF_MEMORY (2)")
        );
        let shim = parse("# library /opt/vgpu/lib/libvgpu-cuda.so shim=1\n");
        assert_eq!(
            shim.library(),
            Some(("/opt/vgpu/lib/libvgpu-cuda.so", true))
        );
    }

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn runs_collect_output_and_time_out() {
        let f = run(
            sh("echo 'x 1 us'; echo oops >&2; exit 3"),
            Duration::from_secs(20),
        )
        .expect("runs");
        let p = parse(&f.stdout);
        assert_eq!(p.value("x"), Some((1.0, "us")));
        let why = failure(&f, &p, Duration::from_secs(20));
        assert_eq!(why.as_deref(), Some("oops (exit status 3)"));
        let f = run(
            sh("echo '# model x'; kill -SEGV $$"),
            Duration::from_secs(20),
        )
        .expect("runs");
        let why = failure(&f, &parse(&f.stdout), Duration::from_secs(20));
        assert_eq!(
            why.as_deref(),
            Some("killed by signal 11 (SIGSEGV); last output: # model x")
        );

        // The grandchild (sleep) holds the pipes; the group kill ends it too.
        let t = Instant::now();
        let f = run(
            sh("echo started >&2; sleep 30 & sleep 30"),
            Duration::from_millis(300),
        )
        .expect("runs");
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(f.status.is_none());
        let why = failure(&f, &parse(&f.stdout), Duration::from_secs(1));
        assert_eq!(
            why.as_deref(),
            Some("timed out after 1 s (last output: started)")
        );
    }

    #[test]
    fn time_to_line_measures_from_spawn_to_the_marker() {
        let (at, f) = time_to_line(
            sh("sleep 0.2; echo first_kernel_done; sleep 0.3"),
            "first_kernel_done",
            Duration::from_secs(20),
        )
        .expect("runs");
        let at = at.expect("marker seen");
        assert!(at >= Duration::from_millis(200), "{at:?}");
        assert!(f.elapsed >= Duration::from_millis(500));
        assert!(f.status.is_some_and(|s| s.success()));

        let (at, f) = time_to_line(sh("sleep 30"), "x", Duration::from_millis(200)).expect("runs");
        assert!(at.is_none() && f.status.is_none());
    }
}
