//! `vgpu install` and `vgpu uninstall`: make vgpu's library the
//! `libcuda.so.1` of every process on a machine, and take it back exactly.
//!
//! Install, under a root (`/` unless `--root DIR`):
//! - copies the library to `/usr/lib/vgpu/libvgpu-cuda.so`, with
//!   `libcuda.so.1` and `libcuda.so` links beside it;
//! - copies the NVML library found beside it (`libvgpu-nvml.so`) to
//!   `/usr/lib/vgpu/libvgpu-nvml.so`, with `libnvidia-ml.so.1` and
//!   `libnvidia-ml.so` links beside it, so `nvidia-smi` and NVML users see
//!   vgpu's device;
//! - links those names to them in each standard library folder that exists
//!   ([`lib_dirs`]), so that processes with an empty environment, or that
//!   make raw `execve` calls, still find them;
//! - writes `/etc/ld.so.conf.d/000-vgpu.conf`, which sorts first, so the
//!   loader cache lists vgpu's folder before NVIDIA's;
//! - rebuilds the cache with `ldconfig -X` (see [`crate::ldconfig`]).
//!
//! Whatever stood at a path it writes is copied to `/var/lib/vgpu/backup/`
//! first, and every change is recorded in `/var/lib/vgpu/manifest.json`
//! (see [`manifest`]) before it is made. Both commands are idempotent;
//! `/etc/ld.so.preload` is never touched.

pub mod manifest;
pub mod node;
pub mod rooted;
mod uninstall;

use std::fs;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

pub use uninstall::uninstall;

use crate::args::{InstallArgs, PathArgs};
use crate::driver::{self, Candidate, CLIENT_MARKER};
use crate::error::CliError;
use crate::ldconfig::{self, Rebuild};
use crate::{elf, layout};
use manifest::{Derived, Entry, Manifest};
use node::{Contents, FileInfo, LinkInfo, Node};
use rooted::Root;

/// vgpu's own library folder.
pub const VGPU_DIR: &str = "/usr/lib/vgpu";
/// The installed library.
pub const LIBRARY: &str = "/usr/lib/vgpu/libvgpu-cuda.so";
/// The loader configuration file; `000-` sorts before every other file.
pub const LD_CONF: &str = "/etc/ld.so.conf.d/000-vgpu.conf";
/// The names the loader and the linker look for.
pub const NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];
/// The installed NVML library.
pub const NVML_LIBRARY: &str = "/usr/lib/vgpu/libvgpu-nvml.so";
/// The names NVML's users look for.
pub const NVML_NAMES: &[&str] = &["libnvidia-ml.so.1", "libnvidia-ml.so"];
/// Files `ldconfig` rewrites.
pub const DERIVED: &[&str] = &["/etc/ld.so.cache", "/var/cache/ldconfig/aux-cache"];
const LD_CONF_TEXT: &str =
    "# Written by `vgpu install`; `vgpu uninstall` removes it.\n/usr/lib/vgpu\n";

/// The standard library folders, in the order they are linked: the
/// multiarch folder of this machine's architecture, `/usr/lib64`,
/// `/usr/local/lib`.
pub fn lib_dirs() -> Vec<PathBuf> {
    vec![
        PathBuf::from(format!("/usr/lib/{}-linux-gnu", std::env::consts::ARCH)),
        PathBuf::from("/usr/lib64"),
        PathBuf::from("/usr/local/lib"),
    ]
}

/// Prints the steps, or what they would be.
pub struct Steps {
    dry: bool,
}

impl Steps {
    /// Prints one step.
    pub fn say(&self, verb: &str, what: impl std::fmt::Display) {
        let verb = if self.dry && !matches!(verb, "note" | "warning" | "unchanged" | "checked") {
            format!("would {verb}")
        } else {
            verb.to_owned()
        };
        println!("  {verb:<16} {what}");
    }
}

/// An exclusive lock on vgpu's state folder, held while installing or
/// uninstalling; released when dropped.
pub struct Lock {
    /// The locked folder; closing it releases the lock.
    _dir: fs::File,
}

impl Lock {
    /// Takes the lock on the host folder `dir`, or fails at once.
    pub fn take(dir: &Path) -> Result<Lock, CliError> {
        let f = fs::File::open(dir).map_err(CliError::io(format!("opening {}", dir.display())))?;
        // SAFETY: `f` is an open descriptor for the call's duration.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(CliError::Refused(format!(
                "another vgpu install or uninstall is running (lock on {})",
                dir.display()
            )));
        }
        Ok(Lock { _dir: f })
    }
}

/// Creates the in-root folder `dir` and its missing parents, recording each
/// one it creates in `m` (a dry run only records them).
fn ensure_dir(root: &Root, m: &mut Manifest, dir: &Path, steps: &Steps) -> Result<(), CliError> {
    let mut missing = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d {
        if steps.dry && m.created_dirs.iter().any(|c| c == p) {
            break;
        }
        match fs::symlink_metadata(root.host(p)) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(p.to_path_buf()),
            Err(e) => {
                return Err(CliError::Io {
                    what: format!("checking {}", p.display()),
                    source: e,
                })
            }
        }
        d = p.parent();
    }
    for p in missing.into_iter().rev() {
        steps.say("mkdir", p.display());
        if !steps.dry {
            fs::create_dir(root.host(&p))
                .map_err(CliError::io(format!("creating {}", p.display())))?;
        }
        if !m.created_dirs.contains(&p) {
            m.created_dirs.push(p);
        }
    }
    Ok(())
}

/// Checks that `lib` is vgpu's client library.
fn check_library(lib: &Path) -> Result<(), CliError> {
    let info = elf::read_dyn_info(lib)
        .map_err(|e| CliError::Check(format!("{} cannot be installed: {e}", lib.display())))?;
    if info.soname.as_deref() != Some("libcuda.so.1") || !info.exports(CLIENT_MARKER) {
        return Err(CliError::Check(format!(
            "{} is not vgpu's client library (SONAME {:?}, marker {CLIENT_MARKER} {}); pass the \
             libvgpu-cuda.so of a vgpu build with --lib",
            lib.display(),
            info.soname,
            if info.exports(CLIENT_MARKER) {
                "present"
            } else {
                "missing"
            }
        )));
    }
    Ok(())
}

/// Checks that `lib` is vgpu's NVML library.
fn check_nvml_library(lib: &Path) -> Result<(), CliError> {
    let info = elf::read_dyn_info(lib)
        .map_err(|e| CliError::Check(format!("{} cannot be installed: {e}", lib.display())))?;
    if info.soname.as_deref() != Some("libnvidia-ml.so.1") || !info.exports(layout::NVML_MARKER) {
        return Err(CliError::Check(format!(
            "{} is not vgpu's NVML library (SONAME {:?}); rebuild vgpu",
            lib.display(),
            info.soname
        )));
    }
    Ok(())
}

/// True when this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// What install wants at one path.
struct Want {
    path: PathBuf,
    node: Node,
    /// For the library: where its bytes come from.
    from: Option<PathBuf>,
}

fn link(path: PathBuf, target: &str) -> Want {
    Want {
        path,
        node: Node::Symlink(LinkInfo {
            target: target.into(),
            uid: 0,
            gid: 0,
        }),
        from: None,
    }
}

fn file(path: &str, bytes: &[u8], mode: u32, from: Option<PathBuf>) -> Result<Want, CliError> {
    let digest = match &from {
        Some(p) => {
            node::digest_file(p).map_err(CliError::io(format!("reading {}", p.display())))?
        }
        None => node::digest(bytes).map_err(CliError::io("hashing"))?,
    };
    let size = match &from {
        Some(p) => fs::metadata(p)
            .map_err(CliError::io(format!("reading {}", p.display())))?
            .len(),
        None => bytes.len() as u64,
    };
    Ok(Want {
        path: path.into(),
        node: Node::File(FileInfo {
            mode,
            uid: 0,
            gid: 0,
            size,
            mtime_s: 0,
            mtime_nsec: 0,
            digest,
            backup: None,
        }),
        from,
    })
}

/// Everything install writes under `root`, in order.
fn wanted(
    root: &Root,
    lib: &Path,
    nvml: Option<&Path>,
    steps: &Steps,
) -> Result<Vec<Want>, CliError> {
    let mut w = vec![file(LIBRARY, &[], 0o755, Some(lib.to_path_buf()))?];
    for name in NAMES {
        w.push(link(Path::new(VGPU_DIR).join(name), "libvgpu-cuda.so"));
    }
    // (name, what it links to) in each standard folder.
    let mut names: Vec<(&str, &str)> = NAMES.iter().map(|n| (*n, LIBRARY)).collect();
    if let Some(nvml) = nvml {
        w.push(file(NVML_LIBRARY, &[], 0o755, Some(nvml.to_path_buf()))?);
        for name in NVML_NAMES {
            w.push(link(Path::new(VGPU_DIR).join(name), "libvgpu-nvml.so"));
            names.push((name, NVML_LIBRARY));
        }
    }
    let mut seen = vec![PathBuf::from(VGPU_DIR)];
    for dir in lib_dirs() {
        let Some(real) = root.resolve_dir(&dir) else {
            steps.say("skip", format!("{} (no such folder)", dir.display()));
            continue;
        };
        if seen.contains(&real) {
            steps.say(
                "skip",
                format!("{} (same folder as {})", dir.display(), real.display()),
            );
            continue;
        }
        for (name, target) in &names {
            w.push(link(real.join(name), target));
        }
        seen.push(real);
    }
    w.push(file(LD_CONF, LD_CONF_TEXT.as_bytes(), 0o644, None)?);
    Ok(w)
}

fn io_at(what: &str, p: &Path) -> impl FnOnce(io::Error) -> CliError {
    CliError::io(format!("{what} {}", p.display()))
}

/// Warns when the root's `/etc/ld.so.conf` does not read `ld.so.conf.d`.
fn check_ld_conf(root: &Root, steps: &Steps) {
    let text = fs::read_to_string(root.host(Path::new("/etc/ld.so.conf"))).unwrap_or_default();
    let included = text.lines().any(|l| {
        let l = l.trim();
        l.starts_with("include") && l.contains("/etc/ld.so.conf.d/")
    });
    if !included {
        steps.say(
            "warning",
            "/etc/ld.so.conf does not include /etc/ld.so.conf.d/*.conf, so ldconfig will not \
             read 000-vgpu.conf; the links in the standard folders still work",
        );
    }
}

/// If `previous` (what stood at a `libcuda.so.1` in `dir`) was NVIDIA's
/// driver, says how a mediator on this machine can still load it.
fn displaced_driver(root: &Root, dir: &Path, previous: &Node, steps: &Steps) {
    let target = match previous {
        Node::Symlink(l) => dir.join(&l.target),
        Node::File(f) => {
            if let Some(b) = &f.backup {
                if let Candidate::Driver(_) = driver::classify(&root.host(b)) {
                    steps.say(
                        "note",
                        format!(
                            "{} was NVIDIA's driver itself; its only copy is now {}; a mediator \
                             here needs the driver's versioned file (libcuda.so.<version>)",
                            dir.join("libcuda.so.1").display(),
                            b.display()
                        ),
                    );
                }
            }
            return;
        }
        Node::Absent => return,
    };
    let Ok(real) = root.resolve(&target) else {
        return;
    };
    if let Candidate::Driver(_) = driver::classify(&root.host(&real)) {
        steps.say(
            "note",
            format!(
                "{} pointed at NVIDIA's driver {}; a mediator on this machine must now load it \
                 by path: vgpu-mediator --driver {}",
                dir.join("libcuda.so.1").display(),
                real.display(),
                real.display()
            ),
        );
    }
}

/// `vgpu install`.
pub fn install(paths: &PathArgs, args: &InstallArgs) -> Result<(), CliError> {
    let root = Root::new(&args.root).map_err(CliError::io("--root"))?;
    let steps = Steps { dry: args.dry_run };
    if root.is_system() && !is_root() && !args.dry_run {
        return Err(CliError::Refused(
            "installing into / changes system folders and needs root: run `sudo vgpu install`, \
             or use `vgpu run -- CMD`, which needs no installation"
                .into(),
        ));
    }
    let lib = match &args.lib {
        Some(p) => p.canonicalize().map_err(io_at("finding the library", p))?,
        None => {
            let exe = layout::exe_dir()?;
            layout::find_client(&layout::lib_search_dirs(&exe, paths))?
        }
    };
    check_library(&lib)?;
    let nvml = lib
        .parent()
        .and_then(|d| layout::find_nvml(&[d.to_path_buf()]));
    if let Some(nvml) = &nvml {
        check_nvml_library(nvml)?;
    }
    println!(
        "vgpu install{}: root {}",
        if args.dry_run {
            " (dry run: nothing is changed)"
        } else {
            ""
        },
        root.dir().display()
    );
    steps.say("library", lib.display());
    match &nvml {
        Some(nvml) => steps.say("NVML library", nvml.display()),
        None => steps.say(
            "note",
            format!(
                "no libvgpu-nvml.so beside {}: NVML (nvidia-smi) is not installed",
                lib.display()
            ),
        ),
    }
    let manifest_at = root.host(Path::new(manifest::MANIFEST));
    let old = Manifest::load(&manifest_at).map_err(io_at("reading", &manifest_at))?;
    let first = old.is_none();
    let mut m = old.unwrap_or_else(|| Manifest::new(&lib));
    m.library.clone_from(&lib);
    m.vgpu_version = env!("CARGO_PKG_VERSION").into();

    ensure_dir(&root, &mut m, Path::new(manifest::BACKUP_DIR), &steps)?;
    let _lock = if args.dry_run {
        None
    } else {
        Some(Lock::take(&root.host(Path::new(manifest::STATE_DIR)))?)
    };
    check_ld_conf(&root, &steps);
    ensure_dir(&root, &mut m, Path::new(VGPU_DIR), &steps)?;
    ensure_dir(&root, &mut m, Path::new("/etc/ld.so.conf.d"), &steps)?;

    // Back up what stands in the way and record it, before changing anything.
    let wants = wanted(&root, &lib, nvml.as_deref(), &steps)?;
    let mut writes = Vec::new();
    for want in &wants {
        let host = root.host(&want.path);
        let now = node::capture(&host).map_err(io_at("reading", &want.path))?;
        let recorded = m.entry(&want.path).cloned();
        let previous = match &recorded {
            Some(e) if now.same_as(&e.installed) || now.same_as(&e.previous) => e.previous.clone(),
            other => {
                if other.is_some() {
                    steps.say(
                        "note",
                        format!(
                            "{} changed since the last install (it is now {}); saving it as the state to restore",
                            want.path.display(),
                            now.describe()
                        ),
                    );
                }
                if now == Node::Absent {
                    Node::Absent
                } else {
                    let b = manifest::backup_path(&want.path);
                    steps.say(
                        "backup",
                        format!(
                            "{} ({}) to {}",
                            want.path.display(),
                            now.describe(),
                            b.display()
                        ),
                    );
                    if let Some(parent) = b.parent() {
                        ensure_dir(&root, &mut m, parent, &steps)?;
                    }
                    if steps.dry {
                        now.clone()
                    } else {
                        node::back_up(&host, &now, &root.host(&b), &b)
                            .map_err(io_at("backing up", &want.path))?
                    }
                }
            }
        };
        if want.path.file_name().is_some_and(|n| n == "libcuda.so.1") {
            if let Some(dir) = want.path.parent() {
                displaced_driver(&root, dir, &previous, &steps);
            }
        }
        if now.same_as(&want.node) {
            steps.say("unchanged", want.path.display());
        } else {
            writes.push(want);
        }
        m.record(Entry {
            path: want.path.clone(),
            installed: want.node.clone(),
            previous,
        });
    }
    if first {
        for d in DERIVED {
            let now =
                node::capture(&root.host(Path::new(d))).map_err(io_at("reading", Path::new(d)))?;
            m.derived.push(Derived {
                path: d.into(),
                previous: now,
            });
        }
    }
    steps.say("manifest", manifest::MANIFEST);
    if !steps.dry {
        m.save(&manifest_at)
            .map_err(io_at("writing", &manifest_at))?;
    }

    for want in writes {
        let host = root.host(&want.path);
        match (&want.node, &want.from) {
            (Node::Symlink(l), _) => {
                steps.say(
                    "link",
                    format!("{} -> {}", want.path.display(), l.target.display()),
                );
                if !steps.dry {
                    node::put_link(&host, &l.target).map_err(io_at("linking", &want.path))?;
                }
            }
            (Node::File(f), from) => {
                match from {
                    Some(src) => steps.say(
                        "copy",
                        format!("{} to {}", src.display(), want.path.display()),
                    ),
                    None => steps.say("write", want.path.display()),
                }
                if !steps.dry {
                    let contents = match from {
                        Some(src) => Contents::CopyOf(src),
                        None => Contents::Bytes(LD_CONF_TEXT.as_bytes()),
                    };
                    node::put_file(&host, contents, f.mode)
                        .map_err(io_at("writing", &want.path))?;
                }
            }
            (Node::Absent, _) => {}
        }
    }
    run_ldconfig(&root, &steps)?;
    println!(
        "{}",
        if steps.dry {
            "dry run: nothing was changed".to_owned()
        } else {
            format!(
                "vgpu is installed: every new process now loads {LIBRARY} as libcuda.so.1 (`vgpu doctor` checks it; `vgpu uninstall` undoes it)"
            )
        }
    );
    Ok(())
}

/// Rebuilds the loader cache of `root`, saying what happened.
pub fn run_ldconfig(root: &Root, steps: &Steps) -> Result<(), CliError> {
    if steps.dry {
        steps.say(
            "run",
            "ldconfig -X (rebuild the loader cache, leave links alone)",
        );
        return Ok(());
    }
    match ldconfig::rebuild(root) {
        Rebuild::Done(line) => {
            steps.say("ran", line);
            Ok(())
        }
        Rebuild::Unavailable => {
            steps.say(
                "warning",
                "ldconfig not found: the loader cache was not rebuilt; run `ldconfig -X` once it is available",
            );
            Ok(())
        }
        Rebuild::Failed(why) => Err(CliError::Check(format!(
            "rebuilding the loader cache: {why}"
        ))),
    }
}
