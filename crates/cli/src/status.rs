//! `vgpu status` and `vgpu doctor`: what is installed where, and whether the
//! mediator answers. Every line reports something that was actually checked.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::args::{MediatorArgs, PathArgs};
use crate::config::{Env, DEFAULT_MEDIATOR};
use crate::driver::{self, Candidate, CLIENT_MARKER};
use crate::elf;
use crate::error::CliError;
use crate::layout;
use crate::probe::{self, Probe};

const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

fn line(label: &str, value: impl std::fmt::Display) {
    println!("{label:<18} {value}");
}

fn address_source(env: &Env, flag: Option<&str>) -> &'static str {
    match (flag, &env.vgpu_mediator) {
        (Some(_), _) => "--mediator",
        (None, Some(_)) => "VGPU_MEDIATOR",
        (None, None) => "default",
    }
}

/// `vgpu status`: versions, files, and the mediator's answer.
pub fn status(env: &Env, paths: &PathArgs, args: &MediatorArgs) -> Result<(), CliError> {
    line("vgpu", env!("CARGO_PKG_VERSION"));
    line("protocol", format!("v{}", vgpu_proto::PROTOCOL_VERSION));
    let exe_dir = layout::exe_dir()?;
    match layout::find_client(&layout::lib_search_dirs(&exe_dir, paths)) {
        Ok(p) => line("client library", p.display()),
        Err(e) => line("client library", e),
    }
    match layout::find_mediator(&exe_dir, paths) {
        Ok(p) => line("mediator binary", p.display()),
        Err(e) => line("mediator binary", e),
    }
    let address = env.mediator_address(args.mediator.as_deref());
    line(
        "mediator address",
        format!(
            "{address} ({})",
            address_source(env, args.mediator.as_deref())
        ),
    );
    match probe::probe(&address, PROBE_TIMEOUT) {
        Probe::Answered(w) => {
            line("mediator", "answered the handshake");
            for l in probe::describe(&w) {
                line("", l);
            }
            Ok(())
        }
        Probe::NotChecked(why) => {
            line("mediator", format!("not checked: {why}"));
            Ok(())
        }
        Probe::Unreachable(why) => {
            line("mediator", format!("not reachable: {why}"));
            Err(CliError::Check(format!(
                "the mediator at {address} is not reachable"
            )))
        }
    }
}

/// The outcome of one doctor check.
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

fn check_files(r: &mut Report, env: &Env, exe_dir: &Path, paths: &PathArgs) {
    let dirs = layout::lib_search_dirs(exe_dir, paths);
    match layout::find_client(&dirs) {
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
        }
        Err(e) => r.add(Verdict::Fail, "client library", e),
    }
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
}

fn check_drivers(r: &mut Report) {
    let found = driver::candidates();
    if found.is_empty() {
        r.add(
            Verdict::Note,
            "NVIDIA driver",
            "none on this machine (fine for a client; a mediator here can only run the simulated device)",
        );
    }
    for c in found {
        match c {
            Candidate::Driver(p) => r.add(Verdict::Ok, "NVIDIA driver", p.display()),
            Candidate::Vgpu(p) => r.add(Verdict::Note, "vgpu as libcuda.so.1", p.display()),
            Candidate::Unusable(p, why) => r.add(
                Verdict::Note,
                "unusable libcuda.so.1",
                format!("{}: {why}", p.display()),
            ),
        }
    }
}

fn check_mediator(r: &mut Report, env: &Env, flag: Option<&str>) {
    let address = env.mediator_address(flag);
    let what = format!("mediator ({})", address_source(env, flag));
    match probe::probe(&address, PROBE_TIMEOUT) {
        Probe::Answered(w) => {
            let devices = probe::describe(&w).join("; ");
            let verdict = if w.init_status == 0 {
                Verdict::Ok
            } else {
                Verdict::Fail
            };
            r.add(verdict, &what, format!("{address} answered: {devices}"));
        }
        Probe::NotChecked(why) => r.add(Verdict::Note, &what, why),
        Probe::Unreachable(why) => {
            let hint = if address == DEFAULT_MEDIATOR {
                "; start one with `vgpu-mediator --listen unix:PATH` or set VGPU_MEDIATOR"
            } else {
                ""
            };
            r.add(Verdict::Fail, &what, format!("{why}{hint}"));
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

fn check_ld_path(r: &mut Report, env: &Env) {
    let Some(ld) = &env.ld_library_path else {
        return;
    };
    let shadow: Vec<PathBuf> = std::env::split_paths(ld)
        .map(|d| d.join("libcuda.so.1"))
        .filter(|p| p.is_file())
        .collect();
    if let Some(first) = shadow.first() {
        let kind = match driver::classify(first) {
            Candidate::Vgpu(_) => "vgpu's client",
            Candidate::Driver(_) => "an NVIDIA driver",
            Candidate::Unusable(..) => "not a CUDA driver",
        };
        r.add(
            Verdict::Note,
            "LD_LIBRARY_PATH",
            format!(
                "libcuda.so.1 resolves first to {} ({kind})",
                first.display()
            ),
        );
    }
}

/// `vgpu doctor`: one line per check; fails when any check fails.
pub fn doctor(env: &Env, paths: &PathArgs, args: &MediatorArgs) -> Result<(), CliError> {
    println!("vgpu {} doctor", env!("CARGO_PKG_VERSION"));
    let exe_dir = layout::exe_dir()?;
    let mut r = Report { failures: 0 };
    check_files(&mut r, env, &exe_dir, paths);
    check_drivers(&mut r);
    check_ld_path(&mut r, env);
    check_compiler(&mut r, &exe_dir);
    check_mediator(&mut r, env, args.mediator.as_deref());
    match r.failures {
        0 => {
            println!("all checks passed");
            Ok(())
        }
        n => Err(CliError::Check(format!("{n} check(s) failed"))),
    }
}
