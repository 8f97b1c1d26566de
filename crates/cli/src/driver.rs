//! Finding NVIDIA's driver library on this machine without loading it.

use std::path::{Path, PathBuf};

use crate::elf;

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
