//! `vgpu run -- CMD`: one command with vgpu's `libcuda.so.1` in front.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::args::{PathArgs, RunArgs};
use crate::config::Env;
use crate::error::exit;
use crate::layout::{self, ClientLayout};

/// The environment changes `run` makes for a client folder and mediator.
pub fn run_env(
    env: &Env,
    layout: &ClientLayout,
    mediator: Option<&str>,
) -> Vec<(&'static str, OsString)> {
    let mut vars = vec![(
        "LD_LIBRARY_PATH",
        env.ld_library_path_with(&layout.loader_dir),
    )];
    if let Some(m) = mediator {
        vars.push(("VGPU_MEDIATOR", OsString::from(m)));
    }
    vars
}

/// Runs the command in place of this process. Returns only on failure, with
/// the exit code to use and a message.
pub fn run(env: &Env, paths: &PathArgs, args: &RunArgs) -> (u8, String) {
    let layout =
        match layout::exe_dir().and_then(|d| ClientLayout::discover(&d, paths, &env.tmp_dir)) {
            Ok(l) => l,
            Err(e) => return (exit::RUN_FAILED, format!("vgpu run: {e}")),
        };
    let Some((program, rest)) = args.command.split_first() else {
        return (exit::USAGE, "vgpu run: no command given".into());
    };
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .envs(run_env(env, &layout, args.mediator.as_deref()));
    let err = cmd.exec();
    exec_failure(&program.to_string_lossy(), &err)
}

/// The exit code and message for a failed `exec`, following the shell's
/// convention (127: not found, 126: not executable).
pub fn exec_failure(program: &str, err: &io::Error) -> (u8, String) {
    let code = match err.kind() {
        io::ErrorKind::NotFound => exit::RUN_NOT_FOUND,
        io::ErrorKind::PermissionDenied => exit::RUN_NOT_EXECUTABLE,
        _ if err.raw_os_error() == Some(libc::ENOEXEC) => exit::RUN_NOT_EXECUTABLE,
        _ => exit::RUN_FAILED,
    };
    (code, format!("vgpu run: cannot execute {program:?}: {err}"))
}
