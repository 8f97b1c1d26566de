//! `vgpu demo`: a private mediator, an example program through the client
//! library, and a transcript of each step.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

use crate::args::{DemoArgs, PathArgs};
use crate::config::Env;
use crate::driver;
use crate::error::CliError;
use crate::example::{self, Origin};
use crate::layout::{self, ClientLayout};
use crate::mediator::{self, Mediator};
use crate::privdir::TempDir;

fn step(n: u32, text: impl AsRef<str>) {
    println!("[{n}/6] {}", text.as_ref());
}

fn detail(label: &str, value: impl std::fmt::Display) {
    println!("      {label:<16} {value}");
}

/// Runs the demo; `Ok` means the example's result was checked and correct.
pub fn demo(env: &Env, paths: &PathArgs, args: &DemoArgs) -> Result<(), CliError> {
    println!("vgpu demo: a CUDA Driver API program runs through vgpu");
    println!();

    let exe_dir = layout::exe_dir()?;
    let dirs = layout::lib_search_dirs(&exe_dir, paths);
    let client = ClientLayout::discover(&exe_dir, paths, &env.tmp_dir)?;
    let mediator_bin = layout::find_mediator(&exe_dir, paths)?;
    step(1, "components");
    detail("client library", client.client.display());
    detail(
        "as libcuda.so.1",
        client.loader_dir.join("libcuda.so.1").display(),
    );
    detail("mediator", mediator_bin.display());

    let driver = driver::plan(&args.driver, layout::find_sim(&dirs), &dirs)?;
    step(2, "driver the mediator will load");
    detail("driver", &driver.description);

    let work = TempDir::new(&env.tmp_dir, "demo")
        .map_err(CliError::io("making the demo's private folder"))?;
    let (program, origin) = example::obtain(&exe_dir, work.path())?;
    step(3, "example program");
    let how = match origin {
        Origin::Prebuilt => "prebuilt",
        Origin::Compiled => "compiled now with cc from the source built into vgpu",
    };
    detail("program", format!("{} ({how})", program.display()));

    let socket = work.path().join("mediator.sock");
    let log = work.path().join("mediator.log");
    let mut med = Mediator::start(&mediator_bin, &socket, &driver.args, &log)?;
    let waited = med.wait_ready(Duration::from_secs(args.socket_timeout))?;
    step(4, "mediator started");
    detail("pid", med.pid());
    detail(
        "listening on",
        format!(
            "unix:{} (ready after {} ms)",
            socket.display(),
            waited.as_millis()
        ),
    );

    let mut address = OsString::from("unix:");
    address.push(&socket);
    let ld_path = env.ld_library_path_with(&client.loader_dir);
    step(5, "running the example program through vgpu");
    detail("LD_LIBRARY_PATH", client.loader_dir.display());
    detail("VGPU_MEDIATOR", address.to_string_lossy());
    println!();
    let mut cmd = Command::new(&program);
    cmd.arg("-n")
        .arg(args.elements.to_string())
        .env("LD_LIBRARY_PATH", ld_path)
        .env("VGPU_MEDIATOR", &address);
    let result = example::run_streaming(cmd, "      | ", Duration::from_secs(args.run_timeout));
    println!();

    let stopped = med.stop();
    step(6, "mediator stopped");
    match &stopped {
        Ok(status) if status.signal() == Some(libc::SIGTERM) => {
            detail("status", "stopped by SIGTERM")
        }
        Ok(status) => detail("status", mediator::describe(*status)),
        Err(e) => detail("status", format!("could not be stopped: {e}")),
    }
    println!();

    let (status, output) =
        result.map_err(|e| CliError::Check(format!("{e}{}", med.diagnostics())))?;
    let passed = status.success() && output.lines().any(|l| l == "PASS");
    if !passed {
        return Err(CliError::Check(format!(
            "the example program failed ({}){}",
            mediator::describe(status),
            med.diagnostics()
        )));
    }
    println!(
        "PASS: vector_add of {} elements ran through vgpu on {}, and every element is correct",
        args.elements, driver.short
    );
    Ok(())
}
