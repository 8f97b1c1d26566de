//! Finding NVIDIA's driver library on this machine without loading it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::elf;

/// Where GPU containers and the GPU test machines put the driver.
pub const KNOWN_DRIVER: &str = "/usr/local/nvidia/lib64/libcuda.so.1";
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
    let out = ["/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"]
        .iter()
        .find_map(|cmd| {
            Command::new(cmd)
                .arg("-p")
                .output()
                .ok()
                .filter(|o| o.status.success())
        });
    let Some(out) = out else { return Vec::new() };
    parse_ldconfig(&String::from_utf8_lossy(&out.stdout))
}

/// Extracts the `libcuda.so.1` paths from `ldconfig -p` output.
pub fn parse_ldconfig(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter(|l| l.trim_start().starts_with("libcuda.so.1 "))
        .filter_map(|l| l.rsplit_once("=> ").map(|(_, p)| PathBuf::from(p.trim())))
        .collect()
}

/// Every candidate on this machine, classified: the known path first, then
/// the loader cache.
pub fn candidates() -> Vec<Candidate> {
    let mut paths = vec![PathBuf::from(KNOWN_DRIVER)];
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
