//! `vgpu doctor`: one line per check, each saying what was found and, when
//! something is wrong, how to fix it. Exits 0 only when no check failed.
//!
//! Checks, in order: vgpu's own files; the system-wide installation (the
//! manifest, and whether anything drifted since); which `libcuda.so.1` a
//! fresh process gets (the loader cache, and a child started with an empty
//! environment that loads it and reads its own memory map); versions; the
//! mediator the client would use (its socket's permissions, then a real
//! handshake); the real driver a worker on this machine would load; which
//! `libnvidia-ml.so.1` the loader gives NVML's users.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::args::{MediatorArgs, PathArgs};
use crate::config::Env;
use crate::driver::{self, Candidate, CLIENT_MARKER};
use crate::error::CliError;
use crate::install::manifest::{self, Manifest};
use crate::install::node::{self, Node};
use crate::install::{rooted::Root, LIBRARY};
use crate::loader::{self, Loaded};
use crate::probe::{self, Probe};
use crate::{elf, layout, ldconfig};
use vgpu_transport::discovery::Target;

const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The check passed.
    Ok,
    /// The check failed: vgpu will not work until it is fixed.
    Fail,
    /// Information, or something only some uses need.
    Note,
}

struct Report {
    failures: usize,
}

impl Report {
    fn add(&mut self, verdict: Verdict, what: &str, detail: impl std::fmt::Display) {
        let tag = match verdict {
            Verdict::Ok => "ok  ",
            Verdict::Fail => "FAIL",
            Verdict::Note => "note",
        };
        if verdict == Verdict::Fail {
            self.failures += 1;
        }
        println!("{tag} {what:<22} {detail}");
    }
}

fn check_client(r: &mut Report, client: &Path) {
    let info = match elf::read_dyn_info(client) {
        Ok(i) => i,
        Err(e) => {
            return r.add(
                Verdict::Fail,
                "client library",
                format!("cannot be read: {e}"),
            )
        }
    };
    match info.soname.as_deref() {
        Some("libcuda.so.1") => r.add(Verdict::Ok, "client SONAME", "libcuda.so.1"),
        other => r.add(
            Verdict::Fail,
            "client SONAME",
            format!("{other:?}, expected \"libcuda.so.1\""),
        ),
    }
    let has_init = info.exports("cuInit");
    r.add(
        if has_init { Verdict::Ok } else { Verdict::Fail },
        "client exports cuInit",
        format!("{} exported symbols", info.exports.len()),
    );
    let marked = info.exports(CLIENT_MARKER);
    r.add(
        if marked { Verdict::Ok } else { Verdict::Fail },
        "client marker",
        if marked {
            format!(
                "{CLIENT_MARKER} exported, so a mediator can never load the client as its driver"
            )
        } else {
            format!("{CLIENT_MARKER} missing: a mediator could mistake the client for a driver")
        },
    );
}

/// Checks vgpu's files; returns the client library beside `vgpu`, if found.
fn check_files(r: &mut Report, env: &Env, exe_dir: &Path, paths: &PathArgs) -> Option<PathBuf> {
    let dirs = layout::lib_search_dirs(exe_dir, paths);
    let client = match layout::find_client(&dirs) {
        Ok(client) => {
            r.add(Verdict::Ok, "client library", client.display());
            check_client(r, &client);
            match layout::loader_dir(&client, &env.tmp_dir) {
                Ok(dir) => r.add(
                    Verdict::Ok,
                    "libcuda.so.1 link",
                    dir.join("libcuda.so.1").display(),
                ),
                Err(e) => r.add(Verdict::Fail, "libcuda.so.1 link", e),
            }
            Some(client)
        }
        Err(e) => {
            r.add(Verdict::Fail, "client library", e);
            None
        }
    };
    match layout::find_mediator(exe_dir, paths) {
        Ok(p) => r.add(Verdict::Ok, "mediator binary", p.display()),
        Err(e) => r.add(Verdict::Fail, "mediator binary", e),
    }
    match layout::find_sim(&dirs) {
        Some(p) => r.add(Verdict::Ok, "simulated device", p.display()),
        None => r.add(
            Verdict::Note,
            "simulated device",
            format!(
                "{} not found (needed only for the simulated device)",
                layout::SIM_NAMES[0]
            ),
        ),
    }
    client
}

/// Checks the system-wide installation; returns its manifest.
fn check_install(r: &mut Report, client: Option<&Path>) -> Option<Manifest> {
    let root = Root::new(Path::new("/")).ok()?;
    let m = match Manifest::load(Path::new(manifest::MANIFEST)) {
        Ok(Some(m)) => m,
        Ok(None) => {
            r.add(
                Verdict::Note,
                "installed",
                "no: only programs started with `vgpu run -- CMD` use vgpu; `sudo vgpu install` \
                 makes it the libcuda.so.1 of every process",
            );
            return None;
        }
        Err(e) => {
            r.add(
                Verdict::Fail,
                "installed",
                format!("{e}; fix or remove it, then `sudo vgpu install`"),
            );
            return None;
        }
    };
    let drift: Vec<String> = m
        .entries
        .iter()
        .filter_map(|e| {
            let now = node::capture(&root.host(&e.path)).unwrap_or(Node::Absent);
            (!now.same_as(&e.installed))
                .then(|| format!("{} is {}", e.path.display(), now.describe()))
        })
        .collect();
    if drift.is_empty() {
        r.add(
            Verdict::Ok,
            "installed",
            format!(
                "by vgpu {}: {} paths as recorded in {}",
                m.vgpu_version,
                m.entries.len(),
                manifest::MANIFEST
            ),
        );
    } else {
        r.add(
            Verdict::Fail,
            "installed",
            format!(
                "{} path(s) changed since the install ({}); `sudo vgpu install` puts them back (a \
                 plain `ldconfig`, e.g. from a driver update, re-points libcuda.so.1 links)",
                drift.len(),
                drift.join("; ")
            ),
        );
    }
    if let Some(client) = client {
        let same = node::digest_file(Path::new(LIBRARY)).ok() == node::digest_file(client).ok();
        if !same {
            r.add(
                Verdict::Note,
                "installed library",
                format!(
                    "{LIBRARY} differs from {}; `sudo vgpu install` updates it",
                    client.display()
                ),
            );
        }
    }
    Some(m)
}

fn describe(c: &Candidate) -> String {
    match c {
        Candidate::Vgpu(p) => format!("{} (vgpu's client)", p.display()),
        Candidate::Driver(p) => format!("{} (NVIDIA's driver, not vgpu)", p.display()),
        Candidate::Unusable(p, why) => format!("{} (not a CUDA driver: {why})", p.display()),
    }
}

/// Which `libcuda.so.1` a fresh process gets: the cache, then a real child.
fn check_loader(r: &mut Report, installed: bool) {
    let miss = if installed {
        Verdict::Fail
    } else {
        Verdict::Note
    };
    let fix = if installed {
        "; `sudo vgpu install` repairs it"
    } else {
        " (vgpu is not installed)"
    };
    let entries = ldconfig::cache_entries("libcuda.so.1");
    match entries.first() {
        None => r.add(miss, "loader cache", format!("has no libcuda.so.1{fix}")),
        Some(first) => {
            let c = driver::classify(first);
            let v = if matches!(c, Candidate::Vgpu(_)) {
                Verdict::Ok
            } else {
                miss
            };
            let others = entries.len() - 1;
            r.add(
                v,
                "loader cache",
                format!(
                    "libcuda.so.1 => {}{}{}",
                    describe(&c),
                    if others > 0 {
                        format!(", then {others} more")
                    } else {
                        String::new()
                    },
                    if v == Verdict::Ok { "" } else { fix }
                ),
            );
        }
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return r.add(Verdict::Note, "fresh process", format!("not checked: {e}")),
    };
    match loader::probe(&exe, None) {
        Loaded::Library(c @ Candidate::Vgpu(_)) => r.add(
            Verdict::Ok,
            "fresh process",
            format!(
                "started with an empty environment, it loads {}",
                describe(&c)
            ),
        ),
        Loaded::Library(c) => r.add(
            miss,
            "fresh process",
            format!(
                "started with an empty environment, it loads {}{fix}",
                describe(&c)
            ),
        ),
        Loaded::NotFound(e) => r.add(
            miss,
            "fresh process",
            format!("finds no libcuda.so.1: {e}{fix}"),
        ),
        Loaded::ProbeFailed(e) => {
            r.add(Verdict::Fail, "fresh process", format!("not checked: {e}"))
        }
    }
}

/// Which `libnvidia-ml.so.1` the loader cache gives (`nvidia-smi` and NVML
/// users load it by that name): vgpu's NVML library when installed.
fn check_nvml(r: &mut Report, installed: bool) {
    let vgpu = |p: &Path| elf::read_dyn_info(p).is_ok_and(|i| i.exports(layout::NVML_MARKER));
    let entries = ldconfig::cache_entries("libnvidia-ml.so.1");
    let (verdict, detail) = match entries.first() {
        None if installed => (
            Verdict::Fail,
            "the loader cache has no libnvidia-ml.so.1; `sudo vgpu install` repairs it".to_owned(),
        ),
        None => (
            Verdict::Note,
            "the loader cache has no libnvidia-ml.so.1 (vgpu is not installed)".to_owned(),
        ),
        Some(first) if vgpu(first) => (
            Verdict::Ok,
            format!("libnvidia-ml.so.1 => {} (vgpu's NVML)", first.display()),
        ),
        Some(first) => (
            if installed {
                Verdict::Fail
            } else {
                Verdict::Note
            },
            format!(
                "libnvidia-ml.so.1 => {} (not vgpu's: nvidia-smi shows the host's GPUs, not \
                 vgpu's){}",
                first.display(),
                if installed {
                    "; `sudo vgpu install` repairs it"
                } else {
                    ""
                }
            ),
        ),
    };
    r.add(verdict, "NVML", detail);
}

fn check_ld_path(r: &mut Report, env: &Env) {
    let Some(ld) = &env.ld_library_path else {
        return;
    };
    let shadow: Vec<PathBuf> = std::env::split_paths(ld)
        .map(|d| d.join("libcuda.so.1"))
        .filter(|p| p.is_file())
        .collect();
    if let Some(first) = shadow.first() {
        r.add(
            Verdict::Note,
            "LD_LIBRARY_PATH",
            format!(
                "in this shell libcuda.so.1 resolves first to {}",
                describe(&driver::classify(first))
            ),
        );
    }
}

fn check_versions(r: &mut Report, exe_dir: &Path, paths: &PathArgs) {
    let mediator = layout::find_mediator(exe_dir, paths).ok().and_then(|m| {
        let out = Command::new(&m)
            .arg("--version")
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    });
    r.add(
        Verdict::Ok,
        "versions",
        format!(
            "vgpu and its client library {}, protocol v{}, mediator binary: {}",
            env!("CARGO_PKG_VERSION"),
            vgpu_proto::PROTOCOL_VERSION,
            mediator.as_deref().unwrap_or("not found")
        ),
    );
}

/// Checks that this user can connect to the socket; false when it cannot.
fn check_socket(r: &mut Report, path: &Path) -> bool {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            r.add(
                Verdict::Fail,
                "mediator socket",
                format!(
                    "{}: {e}: a folder on the way is closed to this user (uid {}); open it (the \
                     systemd unit makes /run/vgpu 0755) or use a socket in a folder it may enter",
                    path.display(),
                    crate::privdir::uid()
                ),
            );
            return false;
        }
        Err(e) => {
            r.add(
                Verdict::Fail,
                "mediator socket",
                format!(
                    "{}: {e}; is the mediator running? (`systemctl status vgpu-mediator`, or start \
                     one: `vgpu-mediator --listen unix:{}`)",
                    path.display(),
                    path.display()
                ),
            );
            return false;
        }
    };
    if !meta.file_type().is_socket() {
        r.add(
            Verdict::Fail,
            "mediator socket",
            format!("{} exists but is not a socket", path.display()),
        );
        return false;
    }
    let detail = format!(
        "{}: mode {:04o}, owner {}:{}",
        path.display(),
        meta.mode() & 0o7777,
        meta.uid(),
        meta.gid()
    );
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap_or_default();
    // SAFETY: `c` is a NUL-terminated path; access only reads it.
    let writable = unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0;
    if writable {
        r.add(
            Verdict::Ok,
            "mediator socket",
            format!("{detail}; this user may connect"),
        );
        true
    } else {
        r.add(
            Verdict::Fail,
            "mediator socket",
            format!(
                "{detail}; this user (uid {}) may not connect: add it to the socket's group \
                 (`sudo usermod -aG vgpu $USER`, then log in again) or widen SocketMode=/UMask= \
                 in the mediator's systemd unit",
                crate::privdir::uid()
            ),
        );
        false
    }
}

fn check_mediator(r: &mut Report, env: &Env, flag: Option<&str>) {
    let choice = match env.find_mediator(flag) {
        Ok(c) => c,
        Err(e) => {
            return r.add(
                Verdict::Fail,
                "mediator address",
                format!("the client would find none: {e}"),
            )
        }
    };
    let address = choice.address;
    r.add(
        Verdict::Ok,
        "mediator address",
        format!("{address} ({})", choice.source),
    );
    if let Some(Target::Unix(path)) = Target::parse(&address) {
        if !check_socket(r, &path) {
            return;
        }
    }
    let mut pci = Vec::new();
    let found = probe::probe(
        &address,
        &env.discovery().sysfs_root,
        PROBE_TIMEOUT,
        &env.tls,
        &mut pci,
    );
    for l in pci {
        r.add(Verdict::Ok, "vGPU PCI device", l);
    }
    match found {
        Probe::Answered(w) => {
            let devices = probe::describe(&w).join("; ");
            let verdict = if w.init_status == 0 { Verdict::Ok } else { Verdict::Fail };
            r.add(verdict, "mediator", format!("answered the handshake (protocol v{}): {devices}", vgpu_proto::PROTOCOL_VERSION));
        }
        Probe::NotChecked(why) => r.add(
            Verdict::Fail,
            "mediator",
            format!("{why}; the client cannot use it either: point VGPU_MEDIATOR or /etc/vgpu/client.toml at a unix: socket, a tls:// or a tcp:// address"),
        ),
        Probe::Unreachable(why) => r.add(Verdict::Fail, "mediator", why),
    }
}

/// The real driver a worker on this machine would load, and any driver
/// that `vgpu install` moved out of the worker's way.
fn check_drivers(r: &mut Report, m: Option<&Manifest>) {
    let found = driver::candidates();
    for c in &found {
        match c {
            Candidate::Driver(_) => {}
            Candidate::Vgpu(p) => r.add(
                Verdict::Note,
                "skipped by workers",
                format!("{} is vgpu's client", p.display()),
            ),
            Candidate::Unusable(p, why) => r.add(
                Verdict::Note,
                "skipped by workers",
                format!("{}: {why}", p.display()),
            ),
        }
    }
    match found.iter().find(|c| matches!(c, Candidate::Driver(_))) {
        Some(Candidate::Driver(p)) => r.add(Verdict::Ok, "worker's driver", format!("a worker here (--driver auto) would load {}", p.display())),
        _ => r.add(
            Verdict::Note,
            "worker's driver",
            "no NVIDIA driver found (fine for a client; a mediator here runs only the simulated device)",
        ),
    }
    let root = Root::new(Path::new("/")).ok();
    for e in m.map(|m| m.entries.as_slice()).unwrap_or_default() {
        let (Some(root), Node::Symlink(l)) = (&root, &e.previous) else {
            continue;
        };
        if e.path.file_name().is_none_or(|n| n != "libcuda.so.1") {
            continue;
        }
        let dir = e.path.parent().unwrap_or(Path::new("/"));
        let Ok(real) = root.resolve(&dir.join(&l.target)) else {
            continue;
        };
        if let Candidate::Driver(_) = driver::classify(&real) {
            r.add(
                Verdict::Note,
                "displaced driver",
                format!(
                    "vgpu install replaced {} (a link to NVIDIA's {}); a mediator here must load it \
                     by path: vgpu-mediator --driver {}",
                    e.path.display(),
                    real.display(),
                    real.display()
                ),
            );
        }
    }
}

fn check_compiler(r: &mut Report, exe_dir: &Path) {
    if layout::find_example(exe_dir).is_some() {
        return r.add(
            Verdict::Ok,
            "demo program",
            "prebuilt vector_add_driver beside vgpu",
        );
    }
    let cc = Command::new("cc")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match cc {
        Ok(s) if s.success() => r.add(
            Verdict::Ok,
            "C compiler",
            "cc works (the demo compiles its example with it)",
        ),
        _ => r.add(
            Verdict::Note,
            "C compiler",
            "cc not found: `vgpu demo` needs it, or a prebuilt vector_add_driver beside vgpu",
        ),
    }
}

/// `vgpu doctor`: one line per check; fails when any check fails.
pub fn doctor(env: &Env, paths: &PathArgs, args: &MediatorArgs) -> Result<(), CliError> {
    println!("vgpu {} doctor", env!("CARGO_PKG_VERSION"));
    let exe_dir = layout::exe_dir()?;
    let mut r = Report { failures: 0 };
    let client = check_files(&mut r, env, &exe_dir, paths);
    let m = check_install(&mut r, client.as_deref());
    check_loader(&mut r, m.is_some());
    // Installed with the NVML library: `vgpu install` leaves it out when no
    // libvgpu-nvml.so sits beside the client (and says so).
    let with_nvml = m
        .as_ref()
        .is_some_and(|m| m.entry(Path::new(crate::install::NVML_LIBRARY)).is_some());
    check_nvml(&mut r, with_nvml);
    check_ld_path(&mut r, env);
    check_versions(&mut r, &exe_dir, paths);
    check_mediator(&mut r, env, args.mediator.as_deref());
    check_drivers(&mut r, m.as_ref());
    check_compiler(&mut r, &exe_dir);
    match r.failures {
        0 => {
            println!("all checks passed");
            Ok(())
        }
        n => Err(CliError::Check(format!("{n} check(s) failed"))),
    }
}
