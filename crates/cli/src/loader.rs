//! Which `libcuda.so.1` a fresh process gets, asked of the real loader.
//!
//! `vgpu doctor` starts `vgpu __loader-probe` with an empty environment, the
//! way a Go program or `env -i` starts one. The child loads `libcuda.so.1`
//! with `dlopen` and prints the files that the load added to its own
//! `/proc/self/maps`. Loading a library runs its initialisers, which is why
//! this happens in a child that does nothing else, and never in `vgpu`.

use std::ffi::{CStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::driver::{self, Candidate};

/// The hidden subcommand that runs the child's side.
pub const PROBE_ARG: &str = "__loader-probe";
/// How long the child may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// The file-backed mappings of this process, in order, without repeats.
fn mapped_files() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut files: Vec<String> = Vec::new();
    for line in text.lines() {
        // address perms offset dev inode path
        let Some(path) = line.splitn(6, ' ').nth(5).map(str::trim) else {
            continue;
        };
        if path.starts_with('/') && !files.iter().any(|f| f == path) {
            files.push(path.to_owned());
        }
    }
    files
}

/// The child's side: `dlopen("libcuda.so.1")`, then one line per file the
/// load mapped (`mapped PATH`), or `error MESSAGE`.
pub fn probe_main() -> ExitCode {
    let before = mapped_files();
    // SAFETY: the name is a NUL-terminated constant; loading a library runs
    // its initialisers, which is the point of this child process.
    let handle =
        unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns NULL or a NUL-terminated string valid until
        // the next dl* call on this thread.
        let err = unsafe { libc::dlerror() };
        let msg = if err.is_null() {
            "dlopen failed".into()
        } else {
            // SAFETY: checked non-NULL above; see dlerror's contract.
            unsafe { CStr::from_ptr(err) }
                .to_string_lossy()
                .into_owned()
        };
        println!("error {msg}");
        return ExitCode::SUCCESS;
    }
    for f in mapped_files().into_iter().filter(|f| !before.contains(f)) {
        println!("mapped {f}");
    }
    ExitCode::SUCCESS
}

/// What a fresh process got for `libcuda.so.1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Loaded {
    /// The library that defines `cuInit` among the files the load mapped,
    /// classified.
    Library(Candidate),
    /// The load failed (no `libcuda.so.1` anywhere, usually).
    NotFound(String),
    /// The probe itself could not run or said something unexpected.
    ProbeFailed(String),
}

/// Parses the child's output.
pub fn parse(output: &str) -> Loaded {
    if let Some(err) = output.lines().find_map(|l| l.strip_prefix("error ")) {
        return Loaded::NotFound(err.to_owned());
    }
    let mapped: Vec<PathBuf> = output
        .lines()
        .filter_map(|l| l.strip_prefix("mapped "))
        .map(PathBuf::from)
        .collect();
    let classified: Vec<Candidate> = mapped.iter().map(|p| driver::classify(p)).collect();
    classified
        .iter()
        .find(|c| matches!(c, Candidate::Vgpu(_)))
        .or_else(|| {
            classified
                .iter()
                .find(|c| matches!(c, Candidate::Driver(_)))
        })
        .cloned()
        .map_or_else(
            || {
                Loaded::ProbeFailed(format!(
                    "libcuda.so.1 loaded, but none of the files it mapped exports cuInit ({})",
                    mapped
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            },
            Loaded::Library,
        )
}

/// Runs the probe as `exe __loader-probe`: with an empty environment when
/// `env` is `None`, else with exactly `env`.
pub fn probe(exe: &Path, env: Option<&[(OsString, OsString)]>) -> Loaded {
    let mut cmd = Command::new(exe);
    cmd.arg(PROBE_ARG)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(vars) = env {
        cmd.envs(vars.iter().map(|(k, v)| (k, v)));
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Loaded::ProbeFailed(format!("cannot start {}: {e}", exe.display())),
    };
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() < TIMEOUT => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Loaded::ProbeFailed(format!(
                    "loading libcuda.so.1 took more than {}s",
                    TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Loaded::ProbeFailed(format!("waiting for the probe: {e}")),
        }
    };
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if !status.success() {
        return Loaded::ProbeFailed(format!("the probe exited with {status}"));
    }
    parse(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_errors_and_unknown_maps() {
        assert_eq!(
            parse("error libcuda.so.1: cannot open shared object file\n"),
            Loaded::NotFound("libcuda.so.1: cannot open shared object file".into())
        );
        assert!(matches!(
            parse("mapped /nonexistent/lib.so\n"),
            Loaded::ProbeFailed(_)
        ));
        assert!(matches!(parse(""), Loaded::ProbeFailed(_)));
    }
}
