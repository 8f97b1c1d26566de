//! Download the pinned NVIDIA header wheels and unpack them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// Primary headers: CUDA 13.0.
pub const CUDA13_WHEEL: &str = "nvidia-cuda-runtime==13.0.96";
/// Legacy headers: CUDA 12.9 still declares PFN typedefs that 13.0 dropped but the
/// 580 driver still exports.
pub const CUDA12_WHEEL: &str = "nvidia-cuda-runtime-cu12==12.9.79";

/// Where the two header sets were unpacked.
pub struct Headers {
    /// `include/` folder of the CUDA 13.0 wheel.
    pub cuda13: PathBuf,
    /// `include/` folder of the CUDA 12.9 wheel.
    pub cuda12: PathBuf,
}

fn run(cmd: &mut Command) -> Result<(), Error> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !status.success() {
        return Err(format!("{cmd:?} failed with {status}").into());
    }
    Ok(())
}

/// Downloads the pinned `wheels` (Linux x86-64, Python 3.12 builds) into `dest`
/// with pip, without their dependencies.
pub fn pip_download(dest: &Path, wheels: &[&str]) -> Result<(), Error> {
    run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
        ])
        .args([
            "--platform",
            "manylinux2014_x86_64",
            "--python-version",
            "3.12",
            "-d",
        ])
        .arg(dest)
        .args(wheels))
}

/// Unpacks `wheel` into `dest` with python's zipfile.
pub fn unzip(wheel: &Path, dest: &Path) -> Result<(), Error> {
    run(Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(wheel)
        .arg(dest))
}

/// Downloads both wheels into `tmp` with pip and unpacks them with python's zipfile.
pub fn fetch(tmp: &Path) -> Result<Headers, Error> {
    let wheels = tmp.join("wheels");
    println!("gen-abi: downloading {CUDA13_WHEEL} and {CUDA12_WHEEL} with pip");
    pip_download(&wheels, &[CUDA12_WHEEL, CUDA13_WHEEL])?;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&wheels)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "whl") {
            found.push(path);
        }
    }
    found.sort();
    let unpacked = tmp.join("unpacked");
    let mut cuda13 = None;
    let mut cuda12 = None;
    for wheel in &found {
        let name = wheel
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let short = if name.starts_with("nvidia_cuda_runtime_cu12-") {
            "cu12"
        } else {
            "cu13"
        };
        let dest = unpacked.join(short);
        println!("gen-abi: unpacking {name}");
        unzip(wheel, &dest)?;
        let include = find_include(&dest.join("nvidia"))?;
        if name.starts_with("nvidia_cuda_runtime_cu12-12.9.79") {
            cuda12 = Some(include);
        } else if name.starts_with("nvidia_cuda_runtime-13.0.96") {
            cuda13 = Some(include);
        }
    }
    match (cuda13, cuda12) {
        (Some(cuda13), Some(cuda12)) => Ok(Headers { cuda13, cuda12 }),
        _ => Err(format!("pip did not deliver both pinned wheels: {found:?}").into()),
    }
}

/// Finds `nvidia/*/include` holding `cuda.h`.
fn find_include(nvidia: &Path) -> Result<PathBuf, Error> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(nvidia)?
        .filter_map(|e| e.ok().map(|e| e.path().join("include")))
        .filter(|p| p.join("cuda.h").is_file())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .next()
        .ok_or_else(|| format!("no nvidia/*/include/cuda.h under {}", nvidia.display()).into())
}
