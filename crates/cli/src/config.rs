//! The environment `vgpu` reads, read once at start into a typed struct.
//!
//! | variable | used by | meaning |
//! |---|---|---|
//! | `VGPU_MEDIATOR` | `status`, `doctor` | mediator address to check when `--mediator` is not given |
//! | `VGPU_CLIENT_CONFIG` | `status`, `doctor` | the client file searched next (default `/etc/vgpu/client.toml`) |
//! | `VGPU_SYSFS_ROOT` | `status`, `doctor` | where the vGPU PCI device is looked for (default `/sys`) |
//! | `LD_LIBRARY_PATH` | `run`, `demo` | kept, with vgpu's library folder put in front |
//! | `TMPDIR` | `run`, `demo` | where private folders (library links, demo socket) are made |

use std::ffi::OsString;
use std::path::PathBuf;

use vgpu_transport::discovery::{self, PciCache, Settings};

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
    /// `VGPU_CLIENT_CONFIG`, if set and not empty.
    pub client_config: Option<PathBuf>,
    /// `VGPU_SYSFS_ROOT`, if set and not empty.
    pub sysfs_root: Option<PathBuf>,
    /// `VGPU_TLS_CA`, `VGPU_TLS_CERT`, `VGPU_TLS_KEY`, `VGPU_TOKEN`,
    /// `VGPU_TOKEN_FILE`: for a `tls://` mediator, as the client reads them.
    pub tls: vgpu_transport::tls::TlsSettings,
}

/// The mediator address `status` and `doctor` check, and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediatorChoice {
    /// The address, e.g. `unix:/run/vgpu/mediator.sock`.
    pub address: String,
    /// How it was chosen, e.g. `from VGPU_MEDIATOR`.
    pub source: String,
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
            client_config: std::env::var_os("VGPU_CLIENT_CONFIG")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            sysfs_root: std::env::var_os("VGPU_SYSFS_ROOT")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            tls: {
                let mut tls = vgpu_transport::tls::TlsSettings::default();
                for (k, v) in std::env::vars() {
                    tls.set_from_env(&k, &v);
                }
                tls
            },
        }
    }

    /// The client's search inputs, as the client library would read them
    /// from this environment.
    pub fn discovery(&self) -> Settings {
        let mut s = Settings {
            env: self.vgpu_mediator.clone(),
            ..Settings::default()
        };
        if let Some(p) = &self.client_config {
            s.client_file.clone_from(p);
        }
        if let Some(p) = &self.sysfs_root {
            s.sysfs_root.clone_from(p);
        }
        s
    }

    /// The mediator to check: the flag, else what the client library would
    /// find from this environment (`VGPU_MEDIATOR`, the client file, a vGPU
    /// PCI device, the default socket). An error says why the client would
    /// find nothing usable.
    pub fn find_mediator(&self, flag: Option<&str>) -> Result<MediatorChoice, String> {
        if let Some(f) = flag {
            return Ok(MediatorChoice {
                address: f.to_owned(),
                source: "from --mediator".into(),
            });
        }
        let found =
            discovery::find(&self.discovery(), &PciCache::default()).map_err(|e| e.to_string())?;
        Ok(MediatorChoice {
            address: found.target.to_string(),
            source: found.source.to_string(),
        })
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
