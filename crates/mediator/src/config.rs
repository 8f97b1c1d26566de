//! The mediator's configuration: command-line flags, parsed once.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Which driver the worker loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverChoice {
    /// The simulated device (`libvgpu-sim.so`), a test double.
    Sim,
    /// The real driver if one is found, otherwise the simulated device.
    Auto,
    /// The library at this absolute path.
    Path(PathBuf),
}

impl std::str::FromStr for DriverChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sim" => Ok(DriverChoice::Sim),
            "auto" => Ok(DriverChoice::Auto),
            p if p.starts_with('/') => Ok(DriverChoice::Path(p.into())),
            other => Err(format!("{other:?}: expected sim, auto or an absolute path")),
        }
    }
}

impl std::fmt::Display for DriverChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriverChoice::Sim => f.write_str("sim"),
            DriverChoice::Auto => f.write_str("auto"),
            DriverChoice::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// vgpu-mediator runs CUDA calls for vgpu clients on the real GPU.
///
/// The supervisor listens for clients and starts one worker process per
/// session; the worker loads the driver and executes the session's calls.
/// Exit codes: 0 clean shutdown, 1 runtime error, 2 bad command line.
#[derive(Debug, Parser)]
#[command(name = "vgpu-mediator", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Flags shared by the supervisor and the workers it starts.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Where to listen: `unix:PATH`.
    #[arg(long, default_value = "unix:/run/vgpu/mediator.sock")]
    pub listen: String,
    /// Driver for the workers: `auto` (the real driver if found, else the
    /// simulated device, loudly), `sim`, or an absolute path to libcuda.so.1.
    #[arg(long, default_value = "auto")]
    pub driver: DriverChoice,
    /// Path of libvgpu-sim.so; by default it is looked up next to this binary.
    #[arg(long)]
    pub sim_lib: Option<PathBuf>,
    /// Append logs to this file instead of standard error.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Log filter, e.g. `info` or `vgpu_mediator=debug`.
    #[arg(long, default_value = "info")]
    pub log_level: String,
}

/// Subcommands; without one the supervisor runs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve one session on an inherited connection (started by the supervisor).
    #[command(hide = true)]
    Worker {
        /// The inherited connection's file descriptor.
        #[arg(long)]
        fd: i32,
    },
}

impl ServeArgs {
    /// The simulated device library: `--sim-lib`, else next to the executable.
    pub fn sim_library(&self) -> Option<PathBuf> {
        if let Some(p) = &self.sim_lib {
            return Some(p.clone());
        }
        let exe = std::env::current_exe().ok()?;
        let dir = exe.parent()?;
        let names = ["libvgpu-sim.so", "libvgpu_sim.so"];
        let dirs = [dir.to_path_buf(), dir.join("../lib"), dir.join("deps")];
        dirs.iter()
            .flat_map(|d| names.iter().map(move |n| d.join(n)))
            .find(|p| p.is_file())
            .and_then(|p| p.canonicalize().ok())
    }
}
