//! The host's IPC registry: who exported each inter-process handle.
//!
//! Two processes that share GPU memory are two sessions, each with its own
//! worker, in one mediator or in several on the same host. The exporting
//! worker records every handle it hands out as one file in a private
//! directory the workers share (`--ipc-dir`): the file is named by a digest
//! of the handle and holds the exporter's uid, its worker pid, a label
//! naming the session and the whole handle. The opening worker reads it
//! before the driver sees the handle and admits only a session of the same
//! uid (the tenant, until tenants exist). An entry whose worker is gone is
//! stale: the driver freed what it named, and the entry is removed.
//!
//! The directory is created with mode 0700 and must belong to the worker's
//! effective uid; otherwise the registry is off and every open is refused,
//! with a log line that says why.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A handle as the driver made it.
pub type Handle = [u8; 64];

/// Who exported a handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exporter {
    pub uid: u32,
    /// The exporting worker's pid: the entry lives while it does.
    pub worker: u32,
    /// The session, for log lines: worker and client pids.
    pub session: String,
}

/// The shared directory of exports; `None` when it could not be set up.
#[derive(Debug)]
pub struct Registry {
    dir: Option<PathBuf>,
}

/// Why an open is refused before the driver sees the handle.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No live session of this host exported the handle (forged, stale, or
    /// from another host).
    Unknown,
    /// Another tenant's handle: its exporter, for the log.
    OtherUid(Exporter),
}

impl Registry {
    /// The registry in `dir`, created if missing.
    pub fn open(dir: &Path) -> Registry {
        match prepare(dir) {
            Ok(()) => Registry {
                dir: Some(dir.to_path_buf()),
            },
            Err(why) => {
                tracing::warn!(
                    dir = %dir.display(),
                    "IPC registry unavailable ({why}): inter-process handles cannot be opened"
                );
                Registry { dir: None }
            }
        }
    }

    /// A registry that knows nothing (TCP sessions, tests).
    pub fn off() -> Registry {
        Registry { dir: None }
    }

    fn entry(&self, handle: &Handle) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{:016x}", digest(handle))))
    }

    /// Records `handle` as exported by `who`. Exporting the same handle
    /// again replaces the entry.
    pub fn record(&self, handle: &Handle, who: &Exporter) {
        let Some(path) = self.entry(handle) else {
            return;
        };
        let tmp = path.with_extension(format!("tmp{}", who.worker));
        let body = format!(
            "{} {} {} {}\n",
            who.uid,
            who.worker,
            hex(handle),
            who.session.replace('\n', " ")
        );
        let written = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(body.as_bytes()))
            .and_then(|()| fs::rename(&tmp, &path));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), "cannot record an IPC export: {e}");
        }
    }

    /// Forgets `handle` (its memory was freed, or its session ends).
    pub fn forget(&self, handle: &Handle) {
        if let Some(path) = self.entry(handle) {
            let _ = fs::remove_file(path);
        }
    }

    /// The exporter of `handle`, if a live session of this host made it.
    pub fn exporter(&self, handle: &Handle) -> Option<Exporter> {
        let path = self.entry(handle)?;
        let text = fs::read_to_string(&path).ok()?;
        let mut f = text.trim_end().splitn(4, ' ');
        let uid = f.next()?.parse().ok()?;
        let worker: u32 = f.next()?.parse().ok()?;
        let stored = f.next()?;
        let session = f.next().unwrap_or("").to_owned();
        if stored != hex(handle) {
            return None;
        }
        if !alive(worker) {
            let _ = fs::remove_file(&path);
            return None;
        }
        Some(Exporter {
            uid,
            worker,
            session,
        })
    }

    /// Whether a session of `uid` may open `handle`.
    pub fn admit(&self, handle: &Handle, uid: u32) -> Result<Exporter, Refusal> {
        let who = self.exporter(handle).ok_or(Refusal::Unknown)?;
        if who.uid != uid {
            return Err(Refusal::OtherUid(who));
        }
        Ok(who)
    }
}

/// Creates `dir` (0700) if missing and checks that it is a directory of
/// this uid that nobody else can enter.
fn prepare(dir: &Path) -> Result<(), String> {
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) => return Err(format!("cannot create it: {e}")),
    }
    let meta = fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    let euid = rustix::process::geteuid().as_raw();
    if !meta.is_dir() || meta.uid() != euid || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "not a private directory of uid {euid} (owner {}, mode {:o})",
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Whether process `pid` still exists.
fn alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

/// FNV-1a over the handle: names the entry (the entry holds the whole
/// handle, which is what is compared).
fn digest(handle: &Handle) -> u64 {
    vgpu_proto::message::fnv(0xcbf2_9ce4_8422_2325, handle)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vgpu-ipc-test-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn me(uid: u32) -> Exporter {
        Exporter {
            uid,
            worker: std::process::id(),
            session: "worker 1 (client 2)".into(),
        }
    }

    #[test]
    fn the_same_uid_is_admitted_and_another_is_refused() {
        let dir = scratch("uid");
        let reg = Registry::open(&dir);
        let handle = [7u8; 64];
        reg.record(&handle, &me(1000));
        assert_eq!(reg.admit(&handle, 1000), Ok(me(1000)));
        assert_eq!(reg.admit(&handle, 1001), Err(Refusal::OtherUid(me(1000))));
        reg.forget(&handle);
        assert_eq!(reg.admit(&handle, 1000), Err(Refusal::Unknown));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn forged_and_colliding_handles_are_unknown() {
        let dir = scratch("forged");
        let reg = Registry::open(&dir);
        let handle = [1u8; 64];
        reg.record(&handle, &me(5));
        assert_eq!(reg.admit(&[2u8; 64], 5), Err(Refusal::Unknown));
        // An entry named like another handle's digest still holds the
        // handle it was made for.
        let other = [3u8; 64];
        fs::copy(
            reg.entry(&handle).expect("entry"),
            reg.entry(&other).expect("entry"),
        )
        .expect("copy");
        assert_eq!(reg.admit(&other, 5), Err(Refusal::Unknown));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_entry_of_a_dead_worker_is_stale() {
        let dir = scratch("stale");
        let reg = Registry::open(&dir);
        let handle = [9u8; 64];
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let dead = child.id();
        child.wait().expect("wait");
        let who = Exporter {
            worker: dead,
            ..me(5)
        };
        reg.record(&handle, &who);
        assert_eq!(reg.admit(&handle, 5), Err(Refusal::Unknown));
        assert!(!reg.entry(&handle).expect("entry").exists(), "removed");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_shared_directory_is_refused() {
        let dir = scratch("open");
        fs::create_dir_all(&dir).expect("mkdir");
        fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .expect("chmod");
        let reg = Registry::open(&dir);
        let handle = [4u8; 64];
        reg.record(&handle, &me(5));
        assert_eq!(reg.admit(&handle, 5), Err(Refusal::Unknown));
        let _ = fs::remove_dir_all(&dir);
    }
}
