//! `vgpu`, the command-line tool of vgpu.
//!
//! Contract:
//! - `vgpu run -- CMD` runs one command with vgpu's `libcuda.so.1` first on
//!   `LD_LIBRARY_PATH`; `vgpu demo` shows the whole path working with a
//!   private mediator; `vgpu status` and `vgpu doctor` report only what they
//!   actually checked.
//! - vgpu's own files are found relative to the `vgpu` executable (see
//!   [`layout`]), or through `--lib-dir` and `--mediator-bin`.
//! - The environment is read once, into [`config::Env`].
//! - Exit codes are the constants in [`error::exit`], listed in `vgpu --help`.

pub mod args;
pub mod config;
pub mod demo;
pub mod driver;
pub mod elf;
pub mod error;
pub mod example;
pub mod layout;
pub mod mediator;
pub mod privdir;
pub mod probe;
pub mod run;
pub mod status;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::config::Env;
use crate::error::exit;

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
        Command::Doctor(args) => status::doctor(&env, &cli.paths, args),
    };
    match result {
        Ok(()) => ExitCode::from(exit::OK),
        Err(e) => {
            let name = match &cli.command {
                Command::Run(_) => "run",
                Command::Demo(_) => "demo",
                Command::Status(_) => "status",
                Command::Doctor(_) => "doctor",
            };
            eprintln!("vgpu {name}: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
