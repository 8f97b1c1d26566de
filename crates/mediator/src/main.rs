//! `vgpu-mediator`: see the crate documentation of `vgpu_mediator`.

use std::os::fd::AsFd;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use vgpu_mediator::config::{Cli, Command};
use vgpu_mediator::tenants::{self, Settings};
use vgpu_mediator::{supervisor, worker};

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // The supervisor reads the mediator file; a worker gets everything it
    // needs on its command line.
    let settings = match &cli.command {
        None | Some(Command::CheckConfig) => match read_config(&mut cli, &matches) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("vgpu-mediator: {e}");
                return ExitCode::from(2);
            }
        },
        Some(Command::Worker { .. }) => None,
    };
    if let Some(Command::CheckConfig) = cli.command {
        return match print_config(&cli.serve, settings.as_ref()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("vgpu-mediator: {e}");
                ExitCode::from(2)
            }
        };
    }
    if let Err(e) = init_logging(&cli.serve) {
        eprintln!("vgpu-mediator: cannot open the log: {e}");
        return ExitCode::from(1);
    }
    let result = match cli.command {
        None | Some(Command::CheckConfig) => {
            supervisor::run(&cli.serve, settings.unwrap_or_default())
        }
        Some(Command::Worker {
            fd,
            session_table,
            session_slot,
            region,
            tenant,
            tenant_index,
            quota_table,
            memory_limit,
            tenant_devices,
            tenant_weight,
            tls_admission,
            hello,
        }) => {
            if let (Some(table), Some(slot)) = (session_table, session_slot) {
                worker::attach_session_table(table, slot);
            }
            let tenant = tenants::worker::TenantArgs {
                name: tenant,
                index: tenant_index,
                quota_table,
                memory_limit,
                devices: tenant_devices,
                weight: tenant_weight,
            };
            match tenants::worker::attach(tenant, session_slot) {
                Ok(()) => worker::run(&cli.serve, fd, region.as_deref(), tls_admission, hello),
                Err(e) => Err(vgpu_mediator::MediatorError::Config(e)),
            }
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

/// Reads the mediator file (`--config`, else the default one if it
/// exists), applies it to the flags the command line did not give, and
/// returns the supervisor's settings.
fn read_config(cli: &mut Cli, matches: &clap::ArgMatches) -> Result<Settings, String> {
    let loaded = tenants::file::load(cli.config.as_deref()).map_err(|e| e.to_string())?;
    let given = |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    if let Some((_, file)) = &loaded {
        file.apply(&mut cli.serve, given);
    }
    Settings::new(loaded.as_ref().map(|(_, f)| f)).map_err(|e| match &loaded {
        Some((path, _)) => format!("{}: {e}", path.display()),
        None => e,
    })
}

/// What `check-config` prints: the settings the supervisor would use; an
/// error for what would stop it (an MPS control program that is missing).
fn print_config(
    args: &vgpu_mediator::config::ServeArgs,
    settings: Option<&Settings>,
) -> Result<(), vgpu_mediator::MediatorError> {
    let control = match settings {
        Some(s) => vgpu_mediator::mps::control_program(&s.mps, &s.policy.tenants)?,
        None => None,
    };
    println!("configuration OK");
    println!("listen {}", args.listen.join(" "));
    println!("driver {}", args.driver);
    let Some(s) = settings else { return Ok(()) };
    if let Some(c) = control {
        println!("mps control {}", c.display());
    }
    println!(
        "unix sockets mode {:04o}, group {:?}",
        s.unix_mode, s.unix_group
    );
    let shown = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for t in &s.policy.tenants {
        let devices = t.devices.as_deref().map(tenants::devices::to_arg);
        println!(
            "tenant {}: uids {:?}, gids {:?}, tokens {:?}, cert_names {:?}, memory_limit {}, \
             max_sessions {}, devices {}, weight {}",
            t.name,
            t.uids,
            t.gids,
            t.token_names,
            t.cert_names,
            shown(t.memory_limit.map(|b| b.to_string())),
            shown(t.max_sessions.map(|n| n.to_string())),
            shown(devices),
            t.weight
        );
        if let Some(m) = &t.mps {
            println!(
                "tenant {}: mps group {}, active threads {}%, pinned memory {}",
                t.name,
                m.group,
                shown(m.active_thread_percentage.map(|p| p.to_string())),
                shown(m.pinned_memory_limit.map(|b| b.to_string())),
            );
        }
    }
    Ok(())
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
