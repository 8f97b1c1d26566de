//! `vgpu`, the command-line tool of vgpu.
//!
//! Contract:
//! - `vgpu run -- CMD` runs one command with vgpu's `libcuda.so.1` first on
//!   `LD_LIBRARY_PATH`; `vgpu demo` shows the whole path working with a
//!   private mediator; `vgpu status` and `vgpu doctor` report only what they
//!   actually checked.
//! - `vgpu install` / `vgpu uninstall` make vgpu the system's `libcuda.so.1`
//!   and take it back exactly, from a manifest (see [`install`]).
//! - vgpu's own files are found relative to the `vgpu` executable (see
//!   [`layout`]), or through `--lib-dir` and `--mediator-bin`.
//! - The environment is read once, into [`config::Env`].
//! - Exit codes are the constants in [`error::exit`], listed in `vgpu --help`.

pub mod args;
pub mod bench;
pub mod config;
pub mod demo;
pub mod doctor;
pub mod driver;
pub mod elf;
pub mod error;
pub mod example;
pub mod install;
pub mod layout;
pub mod ldconfig;
pub mod loader;
pub mod mediator;
pub mod privdir;
pub mod probe;
pub mod run;
pub mod status;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::config::Env;
use crate::error::{exit, CliError};

/// Parses the command line, runs the subcommand and returns the exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = Env::from_process();
    let result = match &cli.command {
        Command::Run(args) => {
            // Returns only when the command could not be started.
            let (code, message) = run::run(&env, &cli.paths, args);
            eprintln!("{message}");
            return ExitCode::from(code);
        }
        Command::Demo(args) => demo::demo(&env, &cli.paths, args),
        Command::Status(args) => status::status(&env, &cli.paths, args),
        Command::Doctor(args) => doctor::doctor(&env, &cli.paths, args),
        Command::Install(args) => install::install(&cli.paths, args),
        Command::Uninstall(args) => install::uninstall(args),
        Command::Bench(args) => bench::bench(&env, &cli.paths, args),
        Command::LoaderProbe => return loader::probe_main(),
        Command::IvshmemPeer(args) => ivshmem_peer(args),
    };
    match result {
        Ok(()) => ExitCode::from(exit::OK),
        Err(e) => {
            let name = match &cli.command {
                Command::Run(_) => "run",
                Command::Demo(_) => "demo",
                Command::Status(_) => "status",
                Command::Doctor(_) => "doctor",
                Command::Install(_) => "install",
                Command::Uninstall(_) => "uninstall",
                Command::Bench(_) => "bench",
                Command::LoaderProbe => "__loader-probe",
                Command::IvshmemPeer(_) => "ivshmem-peer",
            };
            eprintln!("vgpu {name}: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// `vgpu ivshmem-peer`: a stand-in for QEMU until killed.
fn ivshmem_peer(args: &args::IvshmemPeerArgs) -> Result<(), CliError> {
    let _peer =
        vgpu_transport::ivshmem::server::FakeQemu::start(&args.socket, &args.sysfs, &args.bdf, 1)
            .map_err(|e| CliError::Mediator(format!("{}: {e}", args.socket.display())))?;
    println!("ready {}", args.sysfs.display());
    loop {
        std::thread::park();
    }
}
