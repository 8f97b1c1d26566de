//! The environment `vgpu` reads, read once at start into a typed struct.
//!
//! | variable | used by | meaning |
//! |---|---|---|
//! | `VGPU_MEDIATOR` | `status`, `doctor` | mediator address to check when `--mediator` is not given |
//! | `LD_LIBRARY_PATH` | `run`, `demo` | kept, with vgpu's library folder put in front |
//! | `TMPDIR` | `run`, `demo` | where private folders (library links, demo socket) are made |

use std::ffi::OsString;
use std::path::PathBuf;

/// The default mediator socket, as searched by the client library.
pub const DEFAULT_MEDIATOR: &str = "unix:/run/vgpu/mediator.sock";

/// The environment of one `vgpu` invocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    /// `VGPU_MEDIATOR`, if set and not empty.
    pub vgpu_mediator: Option<String>,
    /// `LD_LIBRARY_PATH`, if set and not empty.
    pub ld_library_path: Option<OsString>,
    /// The temporary folder (`TMPDIR`, else `/tmp`).
    pub tmp_dir: PathBuf,
}

impl Env {
    /// Reads the process environment.
    pub fn from_process() -> Env {
        Env {
            vgpu_mediator: std::env::var("VGPU_MEDIATOR")
                .ok()
                .filter(|s| !s.is_empty()),
            ld_library_path: std::env::var_os("LD_LIBRARY_PATH").filter(|s| !s.is_empty()),
            tmp_dir: std::env::temp_dir(),
        }
    }

    /// The mediator address to use: the flag, else `VGPU_MEDIATOR`, else the default.
    pub fn mediator_address(&self, flag: Option<&str>) -> String {
        flag.map(str::to_owned)
            .or_else(|| self.vgpu_mediator.clone())
            .unwrap_or_else(|| DEFAULT_MEDIATOR.to_owned())
    }

    /// `LD_LIBRARY_PATH` with `dir` in front (and not repeated behind).
    pub fn ld_library_path_with(&self, dir: &std::path::Path) -> OsString {
        let mut parts = vec![dir.to_path_buf()];
        if let Some(old) = &self.ld_library_path {
            parts.extend(std::env::split_paths(old).filter(|p| p != dir));
        }
        std::env::join_paths(parts).unwrap_or_else(|_| dir.as_os_str().to_owned())
    }
}

/// A mediator address, as far as the CLI needs to understand it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// `unix:PATH` or a bare absolute path.
    Unix(PathBuf),
    /// Any other form (`tcp://…`, `pci:…`); passed on, not checked here.
    Other(String),
}

impl Address {
    /// Classifies an address string.
    pub fn parse(s: &str) -> Address {
        match s.strip_prefix("unix:") {
            Some(p) if !p.is_empty() => Address::Unix(p.into()),
            _ if s.starts_with('/') => Address::Unix(s.into()),
            _ => Address::Other(s.to_owned()),
        }
    }
}
