//! Finding NVIDIA's driver library on this machine without loading it, and
//! choosing the driver a private mediator loads (`vgpu demo`, `vgpu bench`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::args::DriverChoice;
use crate::elf;
use crate::error::CliError;
use crate::layout;

pub use vgpu_abi::driver::CLIENT_MARKER;

/// What a candidate `libcuda.so.1` turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// An NVIDIA driver (a library that exports `cuInit` and not the marker).
    Driver(PathBuf),
    /// vgpu's own client library.
    Vgpu(PathBuf),
    /// Something else, with the reason.
    Unusable(PathBuf, String),
}

/// Classifies the library at `path` by reading its exports.
pub fn classify(path: &Path) -> Candidate {
    match elf::read_dyn_info(path) {
        Ok(info) if info.exports(CLIENT_MARKER) => Candidate::Vgpu(path.to_owned()),
        Ok(info) if info.exports("cuInit") => Candidate::Driver(path.to_owned()),
        Ok(_) => Candidate::Unusable(path.to_owned(), "does not export cuInit".into()),
        Err(e) => Candidate::Unusable(path.to_owned(), e.to_string()),
    }
}

/// Every candidate on this machine, classified, in the worker's order: the
/// known folders, then the loader cache.
pub fn candidates() -> Vec<Candidate> {
    let paths = vgpu_abi::driver::search_order(&crate::ldconfig::cache_text());
    let mut seen = Vec::new();
    paths
        .into_iter()
        .filter(|p| p.is_file())
        .filter(|p| {
            let key = p.canonicalize().unwrap_or_else(|_| p.clone());
            let fresh = !seen.contains(&key);
            seen.push(key);
            fresh
        })
        .map(|p| classify(&p))
        .collect()
}

/// The first NVIDIA driver found, if any.
pub fn find_real_driver() -> Option<PathBuf> {
    candidates().into_iter().find_map(|c| match c {
        Candidate::Driver(p) => Some(p),
        _ => None,
    })
}

/// The driver a private mediator (`vgpu demo`, `vgpu bench`) will load, and
/// how to say so.
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
    match classify(&path) {
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
        DriverChoice::Auto => match find_real_driver() {
            Some(p) => driver_plan_for(&p),
            None => sim_plan(sim, dirs, "; no NVIDIA driver on this machine"),
        },
    }
}
