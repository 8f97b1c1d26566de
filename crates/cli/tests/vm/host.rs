//! What the host provides to a guest: QEMU ([`qemu`]), the kernel and
//! busybox ([`Assets`]), and how the guest's CPU runs ([`Accel`]).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use super::repo_root;

/// `qemu-system-x86_64` from `PATH`, or `None` after printing why the
/// calling test skips. Where `CI` is set, a missing QEMU is a failure:
/// `.ci/run` installs it.
pub fn qemu(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("qemu-system-x86_64"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: qemu-system-x86_64 is not installed, and CI must run the guest tests \
             (.ci/run installs qemu-system-x86)"
        );
        eprintln!(
            "SKIPPED {test}: qemu-system-x86_64 is not installed \
             (apt-get install qemu-system-x86 to run the guest tests)"
        );
    }
    found
}

/// What the guest boots: the unpacked kernel and busybox.
#[derive(Debug, Clone)]
pub struct Assets {
    /// The cache directory.
    pub dir: PathBuf,
    pub kernel: PathBuf,
    /// The kernel's `lib/modules/<version>/` tree.
    pub modules: PathBuf,
    pub busybox: PathBuf,
    /// The kernel package and version.
    pub version: String,
}

impl Assets {
    /// The cache directory: `VGPU_VM_CACHE`, else `vm-cache` in the
    /// target directory this test binary was built in
    /// (`<target>/<profile>/deps/<test>`).
    pub fn cache_dir() -> PathBuf {
        if let Some(dir) = std::env::var_os("VGPU_VM_CACHE") {
            return dir.into();
        }
        let exe = std::env::current_exe().expect("current_exe");
        let mut dir = exe.parent().expect("test binary has a directory");
        if dir.file_name().is_some_and(|n| n == "deps") {
            dir = dir.parent().expect("deps has a parent");
        }
        dir.parent().unwrap_or(dir).join("vm-cache")
    }

    /// The assets in [`Assets::cache_dir`], fetched with `scripts/vm-assets`
    /// first when they are missing (a failure to fetch fails the test).
    pub fn get() -> Assets {
        let dir = Assets::cache_dir();
        let assets = Assets {
            dir: dir.clone(),
            kernel: dir.join("vmlinuz"),
            modules: dir.join("modules"),
            busybox: dir.join("busybox"),
            version: std::fs::read_to_string(dir.join("kernel-version")).unwrap_or_default(),
        };
        if assets.kernel.is_file() && assets.busybox.is_file() && !assets.version.is_empty() {
            return assets;
        }
        eprintln!(
            "fetching the guest kernel and busybox into {} (scripts/vm-assets)",
            dir.display()
        );
        let out = Command::new(repo_root().join("scripts/vm-assets"))
            .arg(&dir)
            .output()
            .expect("run scripts/vm-assets");
        assert!(
            out.status.success(),
            "scripts/vm-assets {} failed ({}): QEMU is installed, so the guest tests need \
             the Debian kernel and busybox-static packages:\n{}{}",
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Assets {
            version: std::fs::read_to_string(dir.join("kernel-version"))
                .expect("scripts/vm-assets wrote kernel-version"),
            ..assets
        }
    }

    /// The module `name` (`uio_pci_generic`, `vfio-pci`, …; `-` and `_`
    /// are the same, as for `modprobe`) from the kernel's tree, written
    /// uncompressed into `scratch` when the tree has it as `.ko.xz` or
    /// `.ko.zst` (busybox's insmod takes a plain object).
    pub fn module(&self, name: &str, scratch: &Path) -> PathBuf {
        let stem = name.replace('-', "_");
        let found = find_module(&self.modules, &stem).unwrap_or_else(|| {
            panic!(
                "module {name} is not in {} ({})",
                self.modules.display(),
                self.version.trim()
            )
        });
        let tool = match found.extension().and_then(|e| e.to_str()) {
            Some("xz") => "xz",
            Some("zst") => "zstd",
            _ => return found,
        };
        let out = Command::new(tool)
            .arg("-dc")
            .arg(&found)
            .output()
            .unwrap_or_else(|e| panic!("run {tool} to unpack {}: {e}", found.display()));
        assert!(
            out.status.success(),
            "{tool} -dc {} failed",
            found.display()
        );
        let plain = scratch.join(format!("{stem}.ko"));
        std::fs::write(&plain, out.stdout).expect("write the unpacked module");
        plain
    }
}

/// The file of module `stem` (with `_` for `-`) under `dir`: `stem.ko`,
/// `stem.ko.xz` or `stem.ko.zst`.
fn find_module(dir: &Path, stem: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_module(&path, stem) {
                return Some(found);
            }
            continue;
        }
        let name = entry.file_name().to_string_lossy().replace('-', "_");
        let module = [".ko", ".ko.xz", ".ko.zst"]
            .iter()
            .any(|ext| name.strip_suffix(ext) == Some(stem));
        if module {
            return Some(path);
        }
    }
    None
}

/// How the guest's CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    Tcg,
}

/// How long a KVM guest may take to print its first kernel line before
/// KVM counts as unusable.
const KVM_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

impl Accel {
    /// `VGPU_VM_ACCEL` (`kvm` or `tcg`) when set; else KVM when `/dev/kvm`
    /// opens read-write and a KVM guest gets as far as its first kernel
    /// line, TCG otherwise. Nested KVM can be present yet unusable (seen
    /// on a VM host: QEMU 7.2 aborts on an MSR with `-cpu host`, or the
    /// kernel never starts), so the answer comes from a real boot, kept in
    /// the cache directory per host kernel and QEMU binary.
    pub fn pick(qemu: &Path, assets: &Assets) -> Accel {
        match std::env::var("VGPU_VM_ACCEL").as_deref() {
            Ok("tcg") => return Accel::Tcg,
            Ok("kvm") => return Accel::Kvm,
            _ => {}
        }
        let kvm = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
            .is_ok();
        if !kvm {
            return Accel::Tcg;
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let qemu_id = std::fs::metadata(qemu)
            .and_then(|m| m.modified())
            .map(|t| format!("{t:?}"))
            .unwrap_or_default();
        let key = format!("{} {}", host.trim(), qemu_id);
        let cache = assets.dir.join("kvm-probe");
        let cached = std::fs::read_to_string(&cache).unwrap_or_default();
        if let Some(answer) = cached.strip_prefix(&key).map(str::trim) {
            return if answer == "usable" {
                Accel::Kvm
            } else {
                Accel::Tcg
            };
        }
        let usable = kvm_boots(qemu, &assets.kernel);
        if !usable {
            eprintln!("KVM is present but a guest does not start under it here: using TCG");
        }
        let answer = if usable { "usable" } else { "unusable" };
        let _ = std::fs::write(&cache, format!("{key} {answer}\n"));
        if usable {
            Accel::Kvm
        } else {
            Accel::Tcg
        }
    }

    /// `-accel` and `-cpu`.
    pub fn qemu_args(self) -> [&'static str; 4] {
        match self {
            Accel::Kvm => ["-accel", "kvm", "-cpu", "host"],
            Accel::Tcg => ["-accel", "tcg", "-cpu", "max"],
        }
    }
}

/// True when the kernel prints its banner under KVM within
/// [`KVM_PROBE_TIMEOUT`].
fn kvm_boots(qemu: &Path, kernel: &Path) -> bool {
    let mut child = match Command::new(qemu)
        .args(["-nodefaults", "-no-user-config", "-nographic", "-no-reboot"])
        .args(Accel::Kvm.qemu_args())
        .args(["-m", "128", "-serial", "stdio", "-kernel"])
        .arg(kernel)
        .args(["-append", "console=ttyS0 earlyprintk=ttyS0 panic=-1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(_) => return false,
    };
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    let reader = thread::spawn(move || {
        for line in BufReader::new(out).split(b'\n').map_while(Result::ok) {
            if String::from_utf8_lossy(&line).contains("Linux version") {
                let _ = tx.send(());
                return;
            }
        }
    });
    let usable = rx.recv_timeout(KVM_PROBE_TIMEOUT).is_ok();
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    usable
}
