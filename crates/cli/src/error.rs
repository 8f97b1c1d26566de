//! The CLI's error type and its documented exit codes.

use std::path::PathBuf;

use thiserror::Error;

/// Exit codes of `vgpu` (also listed in `vgpu --help` and `docs/config.md`).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// A check failed: the demo's result was wrong, `doctor` found a problem,
    /// or `status` could not reach the mediator.
    pub const CHECK_FAILED: u8 = 1;
    /// The command line was invalid (clap's own code).
    pub const USAGE: u8 = 2;
    /// A vgpu component (library, mediator binary, C compiler) was not found.
    pub const MISSING: u8 = 3;
    /// The mediator did not start, or did not create its socket in time.
    pub const MEDIATOR: u8 = 4;
    /// Any other system error (temporary folder, process start, I/O).
    pub const SYSTEM: u8 = 5;
    /// `install`/`uninstall` refused: root is needed, another one is
    /// running, or files changed since the install (see `--force`).
    pub const REFUSED: u8 = 6;
    /// `vgpu run` itself failed before the command started.
    pub const RUN_FAILED: u8 = 125;
    /// `vgpu run`: the command was found but could not be executed.
    pub const RUN_NOT_EXECUTABLE: u8 = 126;
    /// `vgpu run`: the command was not found.
    pub const RUN_NOT_FOUND: u8 = 127;
}

/// Everything that makes a `vgpu` subcommand fail.
#[derive(Debug, Error)]
pub enum CliError {
    /// A component of vgpu could not be found where it was looked for.
    #[error("{what} not found; looked in: {}{hint}", list(looked))]
    Missing {
        what: String,
        looked: Vec<PathBuf>,
        hint: String,
    },
    /// The mediator failed to start or to open its socket.
    #[error("mediator: {0}")]
    Mediator(String),
    /// A check reported a failure.
    #[error("{0}")]
    Check(String),
    /// The command refused to act; the string says why and what to do.
    #[error("{0}")]
    Refused(String),
    /// A system call failed; the string says what was being done.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

fn list(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "(nowhere)".into();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl CliError {
    /// Wraps an I/O error with a description of what was being done.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CliError {
        let what = what.into();
        move |source| CliError::Io { what, source }
    }

    /// The documented exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Missing { .. } => exit::MISSING,
            CliError::Mediator(_) => exit::MEDIATOR,
            CliError::Check(_) => exit::CHECK_FAILED,
            CliError::Refused(_) => exit::REFUSED,
            CliError::Io { .. } => exit::SYSTEM,
        }
    }
}
