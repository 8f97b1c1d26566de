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
    /// Where `VGPU_LOG` sends one-line diagnostics: unset, empty or `0`:
    /// nowhere; `1` or `stderr`: standard error; anything else: appended to
    /// that file.
    pub log: Option<LogTarget>,
    /// `tls://` mediators: the CA, client certificate and bearer token, as
    /// the CUDA client reads them.
    pub tls: vgpu_transport::tls::TlsSettings,
}

/// Where diagnostics go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    Stderr,
    File(std::path::PathBuf),
}

impl Config {
    /// Builds the configuration from `(key, value)` pairs.
    pub fn from_env(vars: impl Iterator<Item = (String, String)>) -> Config {
        let mut cfg = Config::default();
        for (k, v) in vars {
            if cfg.tls.set_from_env(&k, &v) {
                continue;
            }
            if !cfg.discovery.set_from_env(&k, &v) && k == "VGPU_LOG" {
                cfg.log = match v.as_str() {
                    "" | "0" => None,
                    "1" | "stderr" => Some(LogTarget::Stderr),
                    path => Some(LogTarget::File(path.into())),
                };
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
    use std::io::Write;
    let line = format!("vgpu-nvml[{}]: {args}\n", std::process::id());
    match &get().log {
        None => {}
        Some(LogTarget::Stderr) => {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        Some(LogTarget::File(path)) => {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = f.write_all(line.as_bytes());
            }
        }
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
        assert_eq!(cfg.log, Some(LogTarget::Stderr));
        let cfg = Config::from_env(std::iter::empty());
        assert_eq!(cfg.discovery, Settings::default());
        assert_eq!(cfg.log, None);
        let cfg = Config::from_env([("VGPU_LOG".to_owned(), "/tmp/x.log".to_owned())].into_iter());
        assert_eq!(cfg.log, Some(LogTarget::File("/tmp/x.log".into())));
    }
}
