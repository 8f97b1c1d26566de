//! Finding vgpu's own files relative to the `vgpu` executable.
//!
//! Two layouts are understood:
//! - **staged** (`dist/` or an install prefix): `bin/{vgpu, vgpu-mediator,
//!   vector_add_driver}` and `lib/{libvgpu-cuda.so, libcuda.so.1, libcuda.so,
//!   libvgpu-sim.so}`;
//! - **cargo target folder**: everything side by side in `target/<profile>/`,
//!   with cargo's names `libvgpu_cuda.so` and `libvgpu_sim.so`.
//!
//! The dynamic loader finds the client by its SONAME, `libcuda.so.1`. When the
//! folder holding the client has no `libcuda.so.1` link to it (the cargo
//! layout), a private folder with `libcuda.so.1` and `libcuda.so` links is made
//! under `$TMPDIR/vgpu-<uid>/` and used instead.

use std::path::{Path, PathBuf};

use crate::args::PathArgs;
use crate::error::CliError;
use crate::privdir;

/// File names of the client library: staged, then cargo's.
pub const CLIENT_NAMES: &[&str] = &["libvgpu-cuda.so", "libvgpu_cuda.so"];
/// File names of the NVML library: staged, then cargo's.
pub const NVML_NAMES: &[&str] = &["libvgpu-nvml.so", "libvgpu_nvml.so"];
/// The symbol by which the NVML library is known to be vgpu's.
pub const NVML_MARKER: &str = vgpu_proto::nvml::NVML_MARKER;
/// File names of the simulated device library: staged, then cargo's.
pub const SIM_NAMES: &[&str] = &["libvgpu-sim.so", "libvgpu_sim.so"];
/// Names the loader and the linker look for.
pub const LOADER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];
/// The mediator binary's name.
pub const MEDIATOR_NAME: &str = "vgpu-mediator";
/// The prebuilt demo program's name.
pub const EXAMPLE_NAME: &str = "vector_add_driver";

/// The folder of the running `vgpu` executable, with links resolved.
pub fn exe_dir() -> Result<PathBuf, CliError> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(CliError::io("locating the vgpu executable"))?;
    exe.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| CliError::Check(format!("{} has no parent folder", exe.display())))
}

/// Folders searched for the libraries: `--lib-dir` alone if given, else
/// `<exe dir>/../lib`, then the executable's own folder.
pub fn lib_search_dirs(exe_dir: &Path, paths: &PathArgs) -> Vec<PathBuf> {
    match &paths.lib_dir {
        Some(dir) => vec![dir.clone()],
        None => {
            let staged = exe_dir
                .parent()
                .map_or_else(|| exe_dir.join("../lib"), |p| p.join("lib"));
            vec![staged, exe_dir.to_path_buf()]
        }
    }
}

fn find_file(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

fn missing(what: &str, dirs: &[PathBuf], names: &[&str], hint: &str) -> CliError {
    CliError::Missing {
        what: format!("{what} ({})", names.join(" or ")),
        looked: dirs.to_vec(),
        hint: hint.to_owned(),
    }
}

/// The NVML library, `libvgpu-nvml.so`, canonicalized, if it is there.
pub fn find_nvml(dirs: &[PathBuf]) -> Option<PathBuf> {
    find_file(dirs, NVML_NAMES)
}

/// The client library, `libvgpu-cuda.so`, canonicalized.
pub fn find_client(dirs: &[PathBuf]) -> Result<PathBuf, CliError> {
    find_file(dirs, CLIENT_NAMES).ok_or_else(|| {
        missing(
            "the client library",
            dirs,
            CLIENT_NAMES,
            "; build it with `cargo build --release` or pass --lib-dir",
        )
    })
}

/// The simulated device library, `libvgpu-sim.so`, if present.
pub fn find_sim(dirs: &[PathBuf]) -> Option<PathBuf> {
    find_file(dirs, SIM_NAMES)
}

/// The mediator binary: `--mediator-bin`, else beside `vgpu`.
pub fn find_mediator(exe_dir: &Path, paths: &PathArgs) -> Result<PathBuf, CliError> {
    let candidate = match &paths.mediator_bin {
        Some(p) => p.clone(),
        None => exe_dir.join(MEDIATOR_NAME),
    };
    if candidate.is_file() {
        return candidate
            .canonicalize()
            .map_err(CliError::io(format!("resolving {}", candidate.display())));
    }
    Err(CliError::Missing {
        what: format!("the mediator binary ({MEDIATOR_NAME})"),
        looked: vec![candidate],
        hint: "; build it with `cargo build --release` or pass --mediator-bin".into(),
    })
}

/// The prebuilt demo program beside `vgpu`, if present.
pub fn find_example(exe_dir: &Path) -> Option<PathBuf> {
    let p = exe_dir.join(EXAMPLE_NAME);
    p.is_file().then_some(p)
}

/// True when `dir/libcuda.so.1` resolves to `client`.
pub fn dir_serves_client(dir: &Path, client: &Path) -> bool {
    dir.join(LOADER_NAMES[0])
        .canonicalize()
        .is_ok_and(|p| p == client)
}

/// The folder to put in front of `LD_LIBRARY_PATH` so that `libcuda.so.1`
/// loads `client`: the client's own folder when it already has the link,
/// else a private folder of links under `tmp`.
pub fn loader_dir(client: &Path, tmp: &Path) -> Result<PathBuf, CliError> {
    let dir = client
        .parent()
        .ok_or_else(|| CliError::Check(format!("{} has no parent folder", client.display())))?;
    if dir_serves_client(dir, client) {
        return Ok(dir.to_path_buf());
    }
    let what = "making a private folder of libcuda.so.1 links";
    let root = privdir::user_root(tmp).map_err(CliError::io(what))?;
    let links = root.join(format!("lib-{}", privdir::path_key(client)));
    privdir::ensure_private_dir(&links).map_err(CliError::io(what))?;
    for name in LOADER_NAMES {
        privdir::replace_symlink(client, &links.join(name)).map_err(CliError::io(format!(
            "linking {} to {}",
            links.join(name).display(),
            client.display()
        )))?;
    }
    Ok(links)
}

/// Everything `run` and `demo` need to put the client in front.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientLayout {
    /// The client library, canonical.
    pub client: PathBuf,
    /// The folder whose `libcuda.so.1` is the client.
    pub loader_dir: PathBuf,
}

impl ClientLayout {
    /// Finds the client for the executable in `exe_dir` and its loader folder.
    pub fn discover(
        exe_dir: &Path,
        paths: &PathArgs,
        tmp: &Path,
    ) -> Result<ClientLayout, CliError> {
        let dirs = lib_search_dirs(exe_dir, paths);
        let client = find_client(&dirs)?;
        let loader_dir = loader_dir(&client, tmp)?;
        Ok(ClientLayout { client, loader_dir })
    }
}
