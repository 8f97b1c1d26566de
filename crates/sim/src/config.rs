//! The simulator's configuration, read from the environment exactly once, at `cuInit`.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `VGPU_SIM_DEVICES` | number of simulated devices, `0..=8` (larger values are clamped to 8; `0` makes `cuInit` fail with `CUDA_ERROR_NO_DEVICE`) | `1` |
//! | `VGPU_SIM_MEMORY_MB` | memory budget of each simulated device, in MiB (at least 1) | `16384` |
//! | `VGPU_LOG` | when set (to anything but `0` or empty), a one-line reason is logged to stderr for each error | unset |
//!
//! A value that does not parse is replaced by the default, with a line on stderr.

use std::env;

/// Most devices the simulator offers.
pub const MAX_DEVICES: u32 = 8;
/// Devices offered when `VGPU_SIM_DEVICES` is unset.
pub const DEFAULT_DEVICES: u32 = 1;
/// Per-device memory budget when `VGPU_SIM_MEMORY_MB` is unset, in MiB.
pub const DEFAULT_MEMORY_MB: u64 = 16384;

/// The typed configuration of the simulator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Number of simulated devices (`0..=MAX_DEVICES`).
    pub devices: u32,
    /// Memory budget of each device, in bytes.
    pub memory_bytes: u64,
    /// Log a one-line reason for every error returned.
    pub log: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            devices: DEFAULT_DEVICES,
            memory_bytes: DEFAULT_MEMORY_MB << 20,
            log: false,
        }
    }
}

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| env::var(name).ok())
    }

    /// Builds the configuration from a variable lookup (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut cfg = Self::default();
        if let Some(v) = lookup("VGPU_SIM_DEVICES") {
            match v.trim().parse::<u32>() {
                Ok(n) => cfg.devices = n.min(MAX_DEVICES),
                Err(_) => eprintln!(
                    "vgpu-sim: ignoring VGPU_SIM_DEVICES={v:?} (not a number); using {DEFAULT_DEVICES}"
                ),
            }
        }
        if let Some(v) = lookup("VGPU_SIM_MEMORY_MB") {
            match v.trim().parse::<u64>() {
                Ok(mb) if (1..=(1 << 24)).contains(&mb) => cfg.memory_bytes = mb << 20,
                _ => eprintln!(
                    "vgpu-sim: ignoring VGPU_SIM_MEMORY_MB={v:?} (want 1..=16777216); using {DEFAULT_MEMORY_MB}"
                ),
            }
        }
        if let Some(v) = lookup("VGPU_LOG") {
            cfg.log = !v.is_empty() && v != "0";
        }
        cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Config {
        Config::from_lookup(|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_string())
        })
    }

    #[test]
    fn defaults() {
        assert_eq!(cfg(&[]), Config::default());
        assert_eq!(Config::default().devices, 1);
        assert_eq!(Config::default().memory_bytes, 16384 << 20);
    }

    #[test]
    fn parses_and_clamps() {
        let c = cfg(&[
            ("VGPU_SIM_DEVICES", "3"),
            ("VGPU_SIM_MEMORY_MB", "64"),
            ("VGPU_LOG", "1"),
        ]);
        assert_eq!((c.devices, c.memory_bytes, c.log), (3, 64 << 20, true));
        assert_eq!(cfg(&[("VGPU_SIM_DEVICES", "99")]).devices, 8);
        assert_eq!(cfg(&[("VGPU_SIM_DEVICES", "x")]).devices, 1);
        assert_eq!(
            cfg(&[("VGPU_SIM_MEMORY_MB", "0")]).memory_bytes,
            16384 << 20
        );
        assert!(!cfg(&[("VGPU_LOG", "0")]).log);
    }
}
