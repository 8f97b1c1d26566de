//! Finding NVIDIA's driver library on this machine without loading it.

use std::path::{Path, PathBuf};

use crate::elf;

/// Folders where NVIDIA's installers put `libcuda.so.1`, searched in this
/// order by the mediator's worker (`crates/mediator/src/driver.rs`) before
/// the loader cache.
pub const KNOWN_DRIVER_DIRS: &[&str] = &[
    "/usr/local/nvidia/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib/wsl/lib",
    "/usr/local/cuda/compat",
];
/// The symbol every vgpu client library exports and no NVIDIA driver does.
pub const CLIENT_MARKER: &str = "vgpu_shim_marker";

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

/// Paths of `libcuda.so.1` in the dynamic loader's cache (`ldconfig -p`).
pub fn ldconfig_candidates() -> Vec<PathBuf> {
    crate::ldconfig::cache_entries("libcuda.so.1")
}

/// Extracts the `libcuda.so.1` paths from `ldconfig -p` output.
pub fn parse_ldconfig(text: &str) -> Vec<PathBuf> {
    crate::ldconfig::parse_entries(text, "libcuda.so.1")
}

/// Every candidate on this machine, classified, in the worker's order: the
/// known folders, then the loader cache.
pub fn candidates() -> Vec<Candidate> {
    let mut paths: Vec<PathBuf> = KNOWN_DRIVER_DIRS
        .iter()
        .map(|d| Path::new(d).join("libcuda.so.1"))
        .collect();
    paths.extend(ldconfig_candidates());
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
