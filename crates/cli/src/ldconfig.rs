//! The dynamic loader's cache: finding `ldconfig`, rebuilding the cache of a
//! root, and reading which files the cache gives for a library name.
//!
//! vgpu always runs `ldconfig -X`: it rebuilds the cache but leaves every
//! link alone. Without `-X`, `ldconfig` re-points `libcuda.so.1` in a folder
//! that also holds NVIDIA's `libcuda.so.<version>` back at NVIDIA's file,
//! undoing the install (and, on uninstall, changing links vgpu never made).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::install::rooted::Root;

/// Where `ldconfig` is looked for before `PATH`.
const PLACES: &[&str] = &["/sbin/ldconfig", "/usr/sbin/ldconfig"];

/// The `ldconfig` binary: the usual places, then `PATH`.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    PLACES
        .iter()
        .map(PathBuf::from)
        .chain(std::env::split_paths(&path).map(|d| d.join("ldconfig")))
        .find(|p| p.is_file())
}

/// The outcome of rebuilding a cache.
#[derive(Debug, PartialEq, Eq)]
pub enum Rebuild {
    /// It ran; the string is the command line.
    Done(String),
    /// There is no `ldconfig` on this machine.
    Unavailable,
    /// It ran and failed; the string says how.
    Failed(String),
}

/// The command that rebuilds `root`'s cache without touching links.
pub fn command(ldconfig: &Path, root: &Root) -> Command {
    let mut cmd = Command::new(ldconfig);
    cmd.arg("-X");
    if !root.is_system() {
        cmd.arg("-r").arg(root.dir());
    }
    cmd
}

/// Rebuilds `root`'s loader cache (`ldconfig -X [-r ROOT]`).
pub fn rebuild(root: &Root) -> Rebuild {
    let Some(ldconfig) = find() else {
        return Rebuild::Unavailable;
    };
    let mut cmd = command(&ldconfig, root);
    let line = format!(
        "{} {}",
        ldconfig.display(),
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    match cmd.output() {
        Ok(o) if o.status.success() => Rebuild::Done(line),
        Ok(o) => Rebuild::Failed(format!(
            "`{line}` failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Rebuild::Failed(format!("`{line}` could not run: {e}")),
    }
}

/// The loader cache's listing (`ldconfig -p`); empty without one.
pub fn cache_text() -> String {
    let Some(ldconfig) = find() else {
        return String::new();
    };
    match Command::new(ldconfig).arg("-p").output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => String::new(),
    }
}

/// The files the loader cache gives for library `name`.
pub fn cache_entries(name: &str) -> Vec<PathBuf> {
    vgpu_abi::driver::ldconfig_entries(&cache_text(), name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_touches_links_and_roots_with_r() {
        let args = |root: &str| -> Vec<String> {
            let root = Root::new(Path::new(root)).expect("root");
            command(Path::new("/sbin/ldconfig"), &root)
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(args("/"), vec!["-X"]);
        assert_eq!(args("/tmp/r"), vec!["-X", "-r", "/tmp/r"]);
    }
}
