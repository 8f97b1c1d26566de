//! The guest's root file system: a newc cpio archive that the kernel
//! unpacks into its rootfs, written by [`Initramfs::write`]; [`for_guest`]
//! fills it from a [`GuestSpec`].
//!
//! It holds busybox (the shell and tools), `/dev/console` (the kernel
//! opens it for init before anything is mounted), the `init` script, the
//! caller's files, and every shared library those files need, resolved
//! on the host with `ldd` and stored at the path the host's loader found
//! them under (glibc's default search path in the guest, so no
//! `ld.so.cache` is needed).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Assets, GuestSpec, EXIT, READY};

/// One archive entry's contents.
enum Entry {
    /// A regular file with these bytes and permission bits.
    File { data: Vec<u8>, mode: u32 },
    /// A character device node.
    CharDevice { major: u32, minor: u32 },
}

/// The archive being built: guest path (absolute) → entry.
#[derive(Default)]
pub struct Initramfs {
    entries: BTreeMap<String, Entry>,
}

const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFCHR: u32 = 0o020_000;

impl Initramfs {
    /// Adds `data` at `guest` with the permission bits `mode`.
    pub fn add_bytes(&mut self, guest: &str, data: Vec<u8>, mode: u32) {
        assert!(
            guest.starts_with('/'),
            "guest path {guest:?} is not absolute"
        );
        self.entries
            .insert(guest.to_owned(), Entry::File { data, mode });
    }

    /// Adds the host file `host` at `guest`, with its permission bits; an
    /// ELF file brings the shared libraries it needs (see [`libraries`]).
    pub fn add_file(&mut self, host: &Path, guest: &str) {
        let data = std::fs::read(host)
            .unwrap_or_else(|e| panic!("read {} for the guest: {e}", host.display()));
        let mode = std::fs::metadata(host)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        let elf = data.starts_with(b"\x7fELF");
        self.add_bytes(guest, data, mode);
        if elf {
            for (lib_guest, lib_host) in libraries(host) {
                if !self.entries.contains_key(&lib_guest) {
                    self.add_file(&lib_host, &lib_guest);
                }
            }
        }
    }

    /// Adds a character device node.
    pub fn add_char_device(&mut self, guest: &str, major: u32, minor: u32) {
        self.entries
            .insert(guest.to_owned(), Entry::CharDevice { major, minor });
    }

    /// Writes the archive to `path`: every parent directory first, then
    /// the entries, then the trailer.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut dirs = BTreeSet::new();
        for guest in self.entries.keys() {
            let mut p = Path::new(guest).parent();
            while let Some(dir) = p.filter(|d| *d != Path::new("/")) {
                dirs.insert(dir.to_string_lossy().into_owned());
                p = dir.parent();
            }
        }
        let mut out = BufWriter::new(std::fs::File::create(path)?);
        let mut ino = 1;
        let mut next_ino = || {
            ino += 1;
            ino
        };
        // BTreeSet order puts a directory before everything inside it.
        for dir in &dirs {
            let b = cpio::NewcBuilder::new(dir.trim_start_matches('/'))
                .ino(next_ino())
                .mode(S_IFDIR | 0o755)
                .nlink(2);
            out = b.write(out, 0).finish()?;
        }
        for (guest, entry) in &self.entries {
            let name = guest.trim_start_matches('/');
            let b = cpio::NewcBuilder::new(name).ino(next_ino());
            out = match entry {
                Entry::File { data, mode } => {
                    let len = u32::try_from(data.len()).map_err(|_| {
                        std::io::Error::other(format!("{guest} is larger than 4 GiB"))
                    })?;
                    let mut w = b.mode(S_IFREG | mode).write(out, len);
                    w.write_all(data)?;
                    w.finish()?
                }
                Entry::CharDevice { major, minor } => b
                    .mode(S_IFCHR | 0o600)
                    .rdev_major(*major)
                    .rdev_minor(*minor)
                    .write(out, 0)
                    .finish()?,
            };
        }
        let mut out = cpio::newc::trailer(out)?;
        out.flush()
    }
}

/// The shared libraries that the ELF file `host` loads, as (path in the
/// guest, file on the host) pairs, from `ldd`: the program interpreter
/// and every `NAME => PATH` line. A static file needs none. A library that
/// `ldd` cannot find is a test failure.
pub fn libraries(host: &Path) -> Vec<(String, PathBuf)> {
    let out = Command::new("ldd")
        .arg(host)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap_or_else(|e| panic!("run ldd {}: {e}", host.display()));
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // "not a dynamic executable" (a static binary) exits 1.
        return Vec::new();
    }
    let mut libs = Vec::new();
    for line in text.lines().map(str::trim) {
        assert!(
            !line.contains("not found"),
            "{} needs a library the host lacks: {line}",
            host.display()
        );
        let path = match line.split_once(" => ") {
            Some((_, rest)) => rest.split(" (").next().unwrap_or(""),
            None => line.split(" (").next().unwrap_or(""),
        };
        // linux-vdso.so.1 has no path: the kernel provides it.
        if path.starts_with('/') {
            libs.push((path.to_owned(), PathBuf::from(path)));
        }
    }
    libs
}

/// Where `/init` finds the modules and the commands.
const MODULE_DIR: &str = "/lib/modules/vgpu";
const COMMANDS: &str = "/etc/vgpu-guest/commands.sh";

/// `host` without its debug sections, written to `out` (a debug build of
/// the client is tens of MiB of DWARF that the guest would only unpack);
/// `host` itself when it is not ELF or `strip` is missing.
fn strip_debug(host: &Path, out: &Path) -> PathBuf {
    let elf = std::fs::File::open(host)
        .and_then(|mut f| {
            let mut magic = [0u8; 4];
            f.read_exact(&mut magic).map(|()| magic == *b"\x7fELF")
        })
        .unwrap_or(false);
    let stripped = elf
        && Command::new("strip")
            .arg("--strip-debug")
            .arg("-o")
            .arg(out)
            .arg(host)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if stripped {
        out.to_owned()
    } else {
        host.to_owned()
    }
}

/// The guest's archive: busybox, `/dev/console`, the modules, the spec's
/// files (ELF ones stripped of debug sections, with their libraries),
/// the commands and `/init`.
pub fn for_guest(assets: &Assets, spec: &GuestSpec, scratch: &Path) -> Initramfs {
    let mut fs = Initramfs::default();
    fs.add_file(&assets.busybox, "/bin/busybox");
    fs.add_char_device("/dev/console", 5, 1);
    let mut insmods = String::new();
    for name in &spec.modules {
        let guest = format!("{MODULE_DIR}/{}.ko", name.replace('-', "_"));
        fs.add_file(&assets.module(name, scratch), &guest);
        // A module that does not load ends the guest at once, with the
        // status a shell gives a command it cannot run.
        insmods.push_str(&format!(
            "insmod {guest} || {{ echo {EXIT}126; poweroff -f; }}\n"
        ));
    }
    for (i, (host, guest)) in spec.files.iter().enumerate() {
        let stripped = scratch.join(format!("stripped-{i}"));
        fs.add_file(&strip_debug(host, &stripped), guest);
    }
    let mut commands = String::new();
    for c in &spec.init_commands {
        commands.push_str(c);
        commands.push('\n');
    }
    fs.add_bytes(COMMANDS, commands.into_bytes(), 0o755);
    fs.add_bytes("/init", init_script(&insmods).into_bytes(), 0o755);
    fs
}

/// The guest's PID 1.
fn init_script(insmods: &str) -> String {
    format!(
        "#!/bin/busybox sh\n\
         /bin/busybox mkdir -p /sbin /usr/bin /usr/sbin\n\
         /bin/busybox --install -s\n\
         export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root\n\
         mkdir -p /proc /sys /tmp /root /run\n\
         mount -t proc proc /proc\n\
         mount -t sysfs sysfs /sys\n\
         mount -t devtmpfs devtmpfs /dev\n\
         mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm\n\
         {insmods}\
         echo {READY} uptime $(cut -d' ' -f1 /proc/uptime)\n\
         sh -e {COMMANDS}\n\
         echo {EXIT}$?\n\
         poweroff -f\n\
         echo o > /proc/sysrq-trigger\n"
    )
}
