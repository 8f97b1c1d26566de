//! `vgpu demo`: a private mediator, an example program through the client
//! library, and a transcript of each step.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::args::{DemoArgs, DriverChoice, PathArgs};
use crate::config::Env;
use crate::driver::{self, Candidate};
use crate::error::CliError;
use crate::example::{self, Origin};
use crate::layout::{self, ClientLayout};
use crate::mediator::{self, Mediator};
use crate::privdir::TempDir;

/// The driver the demo's mediator will load, and how to say so.
#[derive(Debug, PartialEq, Eq)]
pub struct DriverPlan {
    /// Flags for the mediator.
    pub args: Vec<OsString>,
    /// One line for the transcript.
    pub description: String,
    /// A few words for the verdict: where the calls ran.
    pub short: String,
    /// True for the simulated device.
    pub simulated: bool,
}

fn sim_plan(sim: Option<PathBuf>, dirs: &[PathBuf], why: &str) -> Result<DriverPlan, CliError> {
    let sim = sim.ok_or_else(|| CliError::Missing {
        what: format!(
            "the simulated device library ({})",
            layout::SIM_NAMES.join(" or ")
        ),
        looked: dirs.to_vec(),
        hint: "; build it with `cargo build --release` or pass --lib-dir".into(),
    })?;
    Ok(DriverPlan {
        args: vec![
            "--driver".into(),
            "sim".into(),
            "--sim-lib".into(),
            sim.clone().into(),
        ],
        description: format!(
            "SIMULATED device ({}): host memory and CPU kernels, a test double, not a GPU{why}",
            sim.display()
        ),
        short: "the SIMULATED device (not a GPU)".into(),
        simulated: true,
    })
}

fn driver_plan_for(path: &Path) -> Result<DriverPlan, CliError> {
    let path = path.canonicalize().map_err(CliError::io(format!(
        "resolving the driver path {}",
        path.display()
    )))?;
    match driver::classify(&path) {
        Candidate::Driver(p) => Ok(DriverPlan {
            args: vec!["--driver".into(), p.clone().into()],
            description: format!("NVIDIA driver {}", p.display()),
            short: "the GPU, through the NVIDIA driver".into(),
            simulated: false,
        }),
        Candidate::Vgpu(p) => Err(CliError::Check(format!(
            "{} is vgpu's own client library, not a driver",
            p.display()
        ))),
        Candidate::Unusable(p, why) => Err(CliError::Check(format!(
            "{} is not a CUDA driver: {why}",
            p.display()
        ))),
    }
}

/// Decides which driver the mediator loads for `choice`.
pub fn plan(
    choice: &DriverChoice,
    sim: Option<PathBuf>,
    dirs: &[PathBuf],
) -> Result<DriverPlan, CliError> {
    match choice {
        DriverChoice::Sim => sim_plan(sim, dirs, ""),
        DriverChoice::Path(p) => driver_plan_for(p),
        DriverChoice::Auto => match driver::find_real_driver() {
            Some(p) => driver_plan_for(&p),
            None => sim_plan(sim, dirs, "; no NVIDIA driver on this machine"),
        },
    }
}

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

    let driver = plan(&args.driver, layout::find_sim(&dirs), &dirs)?;
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
