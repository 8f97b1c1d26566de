//! The library's configuration, read from the environment once, at the first
//! `nvmlInit` (`docs/config.md`).

use std::sync::OnceLock;

use vgpu_transport::discovery::Settings;

/// What the environment says.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Where to look for the mediator (`VGPU_MEDIATOR`, `VGPU_CLIENT_CONFIG`,
    /// `VGPU_SYSFS_ROOT`), as the CUDA client looks.
    pub discovery: Settings,
    /// `VGPU_LOG` is set: one-line diagnostics on standard error.
    pub log: bool,
}

impl Config {
    /// Builds the configuration from `(key, value)` pairs.
    pub fn from_env(vars: impl Iterator<Item = (String, String)>) -> Config {
        let mut cfg = Config::default();
        for (k, v) in vars {
            if !cfg.discovery.set_from_env(&k, &v) && k == "VGPU_LOG" {
                cfg.log = !v.is_empty();
            }
        }
        cfg
    }
}

/// The configuration, read on first use.
pub fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| Config::from_env(std::env::vars()))
}

/// Writes a diagnostic line when `VGPU_LOG` is set.
pub fn log(args: std::fmt::Arguments<'_>) {
    if get().log {
        eprintln!("vgpu-nvml[{}]: {args}", std::process::id());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_discovery_and_log() {
        let vars = [
            ("VGPU_MEDIATOR", "unix:/tmp/m.sock"),
            ("VGPU_LOG", "1"),
            ("PATH", "/bin"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let cfg = Config::from_env(vars.into_iter());
        assert_eq!(cfg.discovery.env.as_deref(), Some("unix:/tmp/m.sock"));
        assert!(cfg.log);
        let cfg = Config::from_env(std::iter::empty());
        assert_eq!(cfg.discovery, Settings::default());
        assert!(!cfg.log);
    }
}
