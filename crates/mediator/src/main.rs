//! `vgpu-mediator`: see the crate documentation of `vgpu_mediator`.

use std::os::fd::AsFd;
use std::process::ExitCode;

use clap::Parser;
use vgpu_mediator::config::{Cli, Command};
use vgpu_mediator::{supervisor, worker};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = init_logging(&cli.serve) {
        eprintln!("vgpu-mediator: cannot open the log: {e}");
        return ExitCode::from(1);
    }
    let result = match cli.command {
        None => supervisor::run(&cli.serve),
        Some(Command::Worker {
            fd,
            session_table,
            session_slot,
            region,
            hello,
        }) => {
            if let (Some(table), Some(slot)) = (session_table, session_slot) {
                worker::attach_session_table(table, slot);
            }
            worker::run(&cli.serve, fd, region.as_deref(), hello)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("vgpu-mediator: {e}");
            ExitCode::from(1)
        }
    }
}

fn init_logging(args: &vgpu_mediator::config::ServeArgs) -> std::io::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log_level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    match &args.log {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(file))
                .init();
        }
        None => {
            // A duplicate of standard error: a worker later points
            // descriptor 2 at its session's output channel (device `assert`
            // messages), and its log must keep going where it went.
            let log = std::io::stderr().as_fd().try_clone_to_owned()?;
            let log = std::fs::File::from(log);
            let ansi = std::io::IsTerminal::is_terminal(&log);
            builder
                .with_ansi(ansi)
                .with_writer(std::sync::Mutex::new(log))
                .init()
        }
    }
    Ok(())
}
