//! The driver library as a file: which one a worker loads
//! ([`DriverChoice`], shared by `vgpu-mediator --driver` and the `vgpu`
//! commands that start one), where NVIDIA's installers put it, and the
//! symbol that tells vgpu's own client library apart from it.

use std::path::{Path, PathBuf};

/// The symbol every build of vgpu's client exports and no driver does. A
/// worker refuses a library that exports it, so it never loads itself.
pub const CLIENT_MARKER: &str = "vgpu_shim_marker";

/// Folders where NVIDIA's installers put `libcuda.so.1`, in the order they
/// are searched, before the loader cache.
pub const KNOWN_DRIVER_DIRS: &[&str] = &[
    "/usr/local/nvidia/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib/wsl/lib",
    "/usr/local/cuda/compat",
];

/// Which driver a worker loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverChoice {
    /// The simulated device (`libvgpu-sim.so`), a test double.
    Sim,
    /// The NVIDIA driver if one is found ([`search_order`]), otherwise the
    /// simulated device.
    Auto,
    /// The library at this absolute path.
    Path(PathBuf),
}

impl std::str::FromStr for DriverChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sim" => Ok(DriverChoice::Sim),
            "auto" => Ok(DriverChoice::Auto),
            p if Path::new(p).is_absolute() => Ok(DriverChoice::Path(p.into())),
            other => Err(format!(
                "{other:?}: expected sim, auto or the absolute path of a libcuda.so.1"
            )),
        }
    }
}

impl std::fmt::Display for DriverChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriverChoice::Sim => f.write_str("sim"),
            DriverChoice::Auto => f.write_str("auto"),
            DriverChoice::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The paths `ldconfig -p` output (`text`) gives for library `name`.
pub fn ldconfig_entries(text: &str, name: &str) -> Vec<PathBuf> {
    text.lines()
        .filter(|l| {
            l.trim_start()
                .strip_prefix(name)
                .is_some_and(|r| r.starts_with(' '))
        })
        .filter_map(|l| l.rsplit_once("=> ").map(|(_, p)| PathBuf::from(p.trim())))
        .collect()
}

/// Where `auto` looks for the driver, in order: `libcuda.so.1` in each of
/// the [`KNOWN_DRIVER_DIRS`], then the loader cache's entries (`ldconfig
/// -p` output, or `""` without one). Nothing here touches the file system.
pub fn search_order(ldconfig_p: &str) -> Vec<PathBuf> {
    KNOWN_DRIVER_DIRS
        .iter()
        .map(|d| Path::new(d).join("libcuda.so.1"))
        .chain(ldconfig_entries(ldconfig_p, "libcuda.so.1"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_and_print_back() {
        for text in ["sim", "auto", "/usr/lib/libcuda.so.1"] {
            let c: DriverChoice = text.parse().expect("a choice");
            assert_eq!(c.to_string(), text);
        }
        assert_eq!(
            "/x/libcuda.so.1".parse(),
            Ok(DriverChoice::Path("/x/libcuda.so.1".into()))
        );
        for bad in ["", "libcuda.so.1", "./libcuda.so.1", "SIM"] {
            assert!(bad.parse::<DriverChoice>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_search_order_is_known_folders_then_the_cache() {
        let text = "3 libs found in cache `/etc/ld.so.cache'\n\
            \tlibcuda.so.1 (libc6,x86-64) => /usr/lib/vgpu/libcuda.so.1\n\
            \tlibcuda.so.1 (libc6,x86-64) => /opt/nv/libcuda.so.1\n\
            \tlibcuda.so (libc6,x86-64) => /opt/nv/libcuda.so\n\
            \tlibcudart.so.13 (libc6,x86-64) => /opt/nv/libcudart.so.13\n";
        assert_eq!(
            ldconfig_entries(text, "libcuda.so"),
            vec![PathBuf::from("/opt/nv/libcuda.so")]
        );
        assert_eq!(
            ldconfig_entries(text, "libcuda.so.1"),
            vec![
                PathBuf::from("/usr/lib/vgpu/libcuda.so.1"),
                PathBuf::from("/opt/nv/libcuda.so.1")
            ]
        );
        let order = search_order(text);
        assert_eq!(order.len(), KNOWN_DRIVER_DIRS.len() + 2);
        assert_eq!(
            order[0],
            PathBuf::from("/usr/local/nvidia/lib64/libcuda.so.1")
        );
        assert_eq!(order.last(), Some(&PathBuf::from("/opt/nv/libcuda.so.1")));
        assert_eq!(search_order("").len(), KNOWN_DRIVER_DIRS.len());
    }
}
