//! The simulator's configuration, read from the environment exactly once, at `cuInit`.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `VGPU_SIM_DEVICES` | number of simulated devices, `0..=8` (larger values are clamped to 8; `0` makes `cuInit` fail with `CUDA_ERROR_NO_DEVICE`) | `1` |
//! | `VGPU_SIM_MEMORY_MB` | memory budget of each simulated device, in MiB (at least 1), bounded by what the host can hold (see [`host_bound`]) | `16384` |
//! | `VGPU_LOG` | when set (to anything but `0` or empty), a one-line reason is logged to stderr for each error | unset |
//! | `CUDA_DEVICE_ORDER` | `FASTEST_FIRST` or `PCI_BUS_ID`: the order of the physical devices that `CUDA_VISIBLE_DEVICES` indices refer to. The simulated devices are identical, and the driver breaks ties by PCI bus id, so both orders are the PCI order | `FASTEST_FIRST` |
//! | `CUDA_VISIBLE_DEVICES` | which physical devices are visible, and in which ordinal order, as with the real driver (see [`visible_devices`]) | all |
//!
//! A value that does not parse is replaced by the default, with a line on stderr.
//! (`CUDA_MODULE_LOADING` is read by `crate::loading`.)

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
    /// Number of devices the process sees (`0..=MAX_DEVICES`): the simulated
    /// devices that `CUDA_VISIBLE_DEVICES` leaves visible.
    pub devices: u32,
    /// The physical index of each visible device, by ordinal. Empty: device
    /// `n` is physical device `n`.
    pub visible: Vec<u32>,
    /// Memory budget of each device, in bytes.
    pub memory_bytes: u64,
    /// Log a one-line reason for every error returned.
    pub log: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            devices: DEFAULT_DEVICES,
            visible: Vec::new(),
            memory_bytes: DEFAULT_MEMORY_MB << 20,
            log: false,
        }
    }
}

impl Config {
    /// Reads the configuration from the process environment, the memory
    /// budget bounded by what the host can hold ([`host_bound`]).
    pub fn from_env() -> Self {
        let mut cfg = Self::from_lookup(|name| env::var(name).ok());
        if let Some(host) = host_bound() {
            let bounded = cfg.bounded_by(host);
            if bounded < cfg.memory_bytes {
                eprintln!(
                    "vgpu-sim: each simulated device has {} MiB, not {} MiB: the host can hold \
                     {} MiB for {} devices",
                    bounded >> 20,
                    cfg.memory_bytes >> 20,
                    host >> 20,
                    cfg.devices.max(1)
                );
                cfg.memory_bytes = bounded;
            }
        }
        cfg
    }

    /// The per-device budget once the devices together get at most
    /// `host` bytes (never less than 1 MiB).
    pub fn bounded_by(&self, host: u64) -> u64 {
        let share = host / u64::from(self.devices.max(1));
        self.memory_bytes.min(share.max(1 << 20))
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
        match lookup("CUDA_DEVICE_ORDER").as_deref().map(str::trim) {
            None | Some("FASTEST_FIRST" | "PCI_BUS_ID") => {}
            Some(other) => eprintln!(
                "vgpu-sim: ignoring CUDA_DEVICE_ORDER={other:?} (want FASTEST_FIRST or PCI_BUS_ID)"
            ),
        }
        if let Some(v) = lookup("CUDA_VISIBLE_DEVICES") {
            cfg.visible = visible_devices(&v, cfg.devices);
            // At most MAX_DEVICES entries: each names a distinct device.
            cfg.devices = u32::try_from(cfg.visible.len()).unwrap_or(0);
        }
        cfg
    }

    /// The physical index of visible device `dev`.
    pub fn physical(&self, dev: usize) -> usize {
        self.visible.get(dev).map_or(dev, |&p| p as usize)
    }
}

/// What the host can hold of the simulated devices' memory: the memory
/// available now (`MemAvailable` of `/proc/meminfo`), or the process's
/// cgroup limit when that is lower. Device memory is reserved lazily (a
/// page is taken at its first touch), so the budget is what keeps the
/// simulated devices from promising more than the host has; `None` when
/// neither can be read.
pub fn host_bound() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(mem_available);
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok());
    match (available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib = line.split_whitespace().nth(1)?.parse::<u64>().ok()?;
    kib.checked_mul(1024)
}

/// A device's UUID as `CUDA_VISIBLE_DEVICES` and `nvidia-smi -L` write it:
/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn uuid_string(bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The physical devices (of `physical` in all) that a `CUDA_VISIBLE_DEVICES`
/// value makes visible, in ordinal order, as the real driver reads it:
/// comma-separated entries, each a device index or a UUID (`GPU-` and a
/// unique prefix of the UUID, case-insensitive). The list ends at the first
/// entry that names no device, names one already listed, or is ambiguous:
/// only the devices before it are visible (so `""` and `"-1"` hide all).
pub fn visible_devices(value: &str, physical: u32) -> Vec<u32> {
    let uuids: Vec<String> = (0..physical as usize)
        .map(|d| uuid_string(&crate::device::uuid(d)).to_ascii_lowercase())
        .collect();
    let mut visible = Vec::new();
    for entry in value.split(',').map(str::trim) {
        let found = if entry.len() > 4 && entry[..4].eq_ignore_ascii_case("GPU-") {
            let want = entry.to_ascii_lowercase();
            let mut hits = (0..physical).filter(|&d| uuids[d as usize].starts_with(&want));
            match (hits.next(), hits.next()) {
                (Some(d), None) => Some(d),
                _ => None,
            }
        } else {
            entry.parse::<u32>().ok().filter(|&d| d < physical)
        };
        match found {
            Some(d) if !visible.contains(&d) => visible.push(d),
            _ => break,
        }
    }
    visible
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_bounded_by_the_host() {
        let c = cfg(&[("VGPU_SIM_DEVICES", "2"), ("VGPU_SIM_MEMORY_MB", "1024")]);
        assert_eq!(c.bounded_by(4 << 30), 1 << 30, "2 GiB each fits");
        assert_eq!(c.bounded_by(1 << 30), 512 << 20, "the host's share");
        assert_eq!(c.bounded_by(0), 1 << 20, "never nothing");
        let text = "MemTotal:  100 kB\nMemFree: 5 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(mem_available(text), Some(2 << 20));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert!(host_bound().is_some_and(|b| b > 0), "this host's bound");
    }

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

    #[test]
    fn visible_devices_like_the_driver() {
        let u2 = "GPU-76677075-2d73-696d-0000-000000000002";
        assert_eq!(uuid_string(&crate::device::uuid(2)), u2);
        assert_eq!(visible_devices("1", 3), [1]);
        assert_eq!(visible_devices("2,0", 3), [2, 0]);
        assert_eq!(visible_devices(" 2 , 1 ", 3), [2, 1]);
        // The list ends at the first bad entry.
        assert_eq!(visible_devices("0,7,1", 3), [0]);
        assert_eq!(visible_devices("1,1,2", 3), [1]);
        assert_eq!(visible_devices("1,x,2", 3), [1]);
        assert!(visible_devices("", 3).is_empty());
        assert!(visible_devices("-1", 3).is_empty());
        // UUIDs, whole or a unique prefix, any case.
        assert_eq!(visible_devices(u2, 3), [2]);
        assert_eq!(visible_devices(&u2.to_uppercase(), 3), [2]);
        assert_eq!(visible_devices(&format!("{u2},0"), 3), [2, 0]);
        // The sim's UUIDs differ in their last digit only: no shorter
        // prefix names one device.
        assert!(visible_devices(&u2[..39], 3).is_empty(), "ambiguous");
        assert!(visible_devices("GPU-00000000", 3).is_empty(), "unknown");
        assert!(visible_devices(u2, 2).is_empty(), "no such device");
    }

    #[test]
    fn visible_devices_set_the_count_and_the_mapping() {
        let c = cfg(&[("VGPU_SIM_DEVICES", "3"), ("CUDA_VISIBLE_DEVICES", "2,0")]);
        assert_eq!((c.devices, c.physical(0), c.physical(1)), (2, 2, 0));
        let c = cfg(&[("VGPU_SIM_DEVICES", "3"), ("CUDA_VISIBLE_DEVICES", "")]);
        assert_eq!(c.devices, 0);
        let c = cfg(&[
            ("VGPU_SIM_DEVICES", "2"),
            ("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
        ]);
        assert_eq!((c.devices, c.physical(1)), (2, 1));
    }
}
