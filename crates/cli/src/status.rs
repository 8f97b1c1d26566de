//! `vgpu status`: what is installed where, and whether the mediator answers.
//! Every line reports something that was actually checked (`vgpu doctor`,
//! in [`crate::doctor`], checks more and explains how to fix what it finds).

use std::time::Duration;

use crate::args::{MediatorArgs, PathArgs};
use crate::config::Env;
use crate::error::CliError;
use crate::layout;
use crate::probe::{self, Probe};

const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

fn line(label: &str, value: impl std::fmt::Display) {
    println!("{label:<18} {value}");
}

/// `vgpu status`: versions, files, and the mediator's answer.
pub fn status(env: &Env, paths: &PathArgs, args: &MediatorArgs) -> Result<(), CliError> {
    line("vgpu", env!("CARGO_PKG_VERSION"));
    line("protocol", format!("v{}", vgpu_proto::PROTOCOL_VERSION));
    let exe_dir = layout::exe_dir()?;
    match layout::find_client(&layout::lib_search_dirs(&exe_dir, paths)) {
        Ok(p) => line("client library", p.display()),
        Err(e) => line("client library", e),
    }
    match layout::find_mediator(&exe_dir, paths) {
        Ok(p) => line("mediator binary", p.display()),
        Err(e) => line("mediator binary", e),
    }
    let choice = env
        .find_mediator(args.mediator.as_deref())
        .map_err(|e| CliError::Check(format!("no usable mediator address: {e}")))?;
    let address = choice.address;
    line("mediator address", format!("{address} ({})", choice.source));
    let mut pci = Vec::new();
    let found = probe::probe(
        &address,
        &env.discovery().sysfs_root,
        PROBE_TIMEOUT,
        &mut pci,
    );
    for l in pci {
        line("vGPU PCI device", l);
    }
    match found {
        Probe::Answered(w) => {
            line("mediator", "answered the handshake");
            for l in probe::describe(&w) {
                line("", l);
            }
            Ok(())
        }
        Probe::NotChecked(why) => {
            line("mediator", format!("not checked: {why}"));
            Ok(())
        }
        Probe::Unreachable(why) => {
            line("mediator", format!("not reachable: {why}"));
            Err(CliError::Check(format!(
                "the mediator at {address} is not reachable"
            )))
        }
    }
}
