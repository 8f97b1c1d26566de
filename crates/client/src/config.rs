//! The client's configuration, read from the environment once, at the first
//! CUDA call (never at load). Documented in `docs/config.md`.

use std::path::PathBuf;

/// Where diagnostics go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    Stderr,
    File(PathBuf),
}

/// Everything the client reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// `VGPU_MEDIATOR`: where the mediator listens (default: the system socket).
    pub mediator: String,
    /// `VGPU_LOG`: unset = quiet; `1`/`stderr` = standard error; else a file path.
    pub log: Option<LogTarget>,
    /// Allowlisted `CUDA_*` variables that travel to the worker.
    pub cuda_env: Vec<(String, String)>,
}

/// The default mediator socket.
pub const DEFAULT_MEDIATOR: &str = "unix:/run/vgpu/mediator.sock";

impl Config {
    /// Builds the configuration from `(key, value)` pairs.
    pub fn from_env(vars: impl Iterator<Item = (String, String)>) -> Config {
        let mut cfg = Config {
            mediator: DEFAULT_MEDIATOR.into(),
            log: None,
            cuda_env: Vec::new(),
        };
        for (k, v) in vars {
            match k.as_str() {
                "VGPU_MEDIATOR" if !v.is_empty() => cfg.mediator = v,
                "VGPU_LOG" => {
                    cfg.log = match v.as_str() {
                        "" | "0" => None,
                        "1" | "stderr" => Some(LogTarget::Stderr),
                        path => Some(LogTarget::File(path.into())),
                    }
                }
                _ if vgpu_proto::env_allowed(&k) => cfg.cuda_env.push((k, v)),
                _ => {}
            }
        }
        cfg.cuda_env.sort();
        cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_what_it_knows() {
        let vars = [
            ("VGPU_MEDIATOR", "unix:/tmp/m.sock"),
            ("VGPU_LOG", "1"),
            ("CUDA_VISIBLE_DEVICES", "0"),
            ("LD_PRELOAD", "x"),
        ];
        let cfg = Config::from_env(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        assert_eq!(cfg.mediator, "unix:/tmp/m.sock");
        assert_eq!(cfg.log, Some(LogTarget::Stderr));
        assert_eq!(
            cfg.cuda_env,
            vec![("CUDA_VISIBLE_DEVICES".into(), "0".into())]
        );
    }
}
