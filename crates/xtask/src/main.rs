//! vgpu development tasks. Never a runtime dependency.
//!
//! Usage:
//!   cargo xtask gen-abi           regenerate `crates/abi/src/generated/`
//!   cargo xtask gen-abi --check   regenerate into a temporary folder and fail on any diff
//!   cargo xtask gen-calls         regenerate the remoting code from crates/abi/src/remote/table.rs
//!   cargo xtask gen-calls --check fail if any file it writes is out of date
//!   cargo xtask gen-nvml          regenerate `crates/nvml/src/generated/` from the pinned nvml.h
//!   cargo xtask gen-nvml --check  fail if it is out of date
//!   cargo xtask compat            write docs/compatibility.md from the client's implement! table
//!   cargo xtask compat --check    fail if docs/compatibility.md is out of date
//!
//! Exit codes: 0 success, 1 the task failed (including a `--check` diff), 2 usage error.

mod compat;
mod gen_abi;
mod gen_calls;
mod gen_nvml;

use std::process::ExitCode;

/// An error of an xtask, printed as one line.
type Error = Box<dyn std::error::Error>;

fn usage() -> ExitCode {
    eprintln!("usage: cargo xtask gen-abi [--check] | cargo xtask gen-calls [--check] | cargo xtask gen-nvml [--check] | cargo xtask compat [--check]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["gen-abi"] => gen_abi::run(false),
        ["gen-abi", "--check"] => gen_abi::run(true),
        ["gen-calls"] => gen_calls::run(false),
        ["gen-calls", "--check"] => gen_calls::run(true),
        ["gen-nvml"] => gen_nvml::run(false),
        ["gen-nvml", "--check"] => gen_nvml::run(true),
        ["compat"] => compat::run(false),
        ["compat", "--check"] => compat::run(true),
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::from(1)
        }
    }
}
