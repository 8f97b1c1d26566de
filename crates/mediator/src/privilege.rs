//! Worker privileges: a supervisor that runs as root starts every worker
//! as an unprivileged user, and a worker applies a client's environment
//! values that name paths only where that user may write.
//!
//! # Who a worker runs as
//!
//! - the tenant's uid, when admission names one
//!   ([`crate::admission::Admitted::worker_uid`]);
//! - else `--worker-user` (`[limits] worker_user`): a user name or a uid;
//! - else `vgpu-worker` if that user exists, else `nobody`.
//!
//! Its supplementary groups are exactly the groups that own the GPU's
//! device nodes (`/dev/nvidia*`, other than root's group): what opening the
//! GPU needs. The simulated device needs none. The switch happens in the
//! child between fork and exec (`setgroups`, `setgid`, `setuid`, and
//! `PR_SET_NO_NEW_PRIVS`), so the worker program starts with no capability
//! at all and never reads a client byte as root.
//!
//! What a worker still uses works without privileges: the connection, the
//! hello, the session table and a VM guest's shared memory are inherited
//! descriptors; the log goes to the standard error it inherits (the
//! supervisor opens `--log` for it); the IPC registry's default directory
//! is per uid (`/tmp/vgpu-ipc-UID` of the worker's uid), so the workers of
//! one user share it and those of different tenants do not. An explicit
//! `--ipc-dir` must be a directory the worker user can reach and own.
//!
//! A supervisor that is not root starts workers as its own uid.
//! `--worker-user=` (empty) keeps root for workers, with a loud warning:
//! for test environments whose files the worker user cannot reach.

use std::ffi::CString;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::OnceLock;

use crate::admission::LimitArgs;
use crate::MediatorError;

/// The user a worker becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups: those of the GPU's device nodes.
    pub groups: Vec<u32>,
}

/// The default worker user, resolved once when the supervisor starts
/// ([`init`]); `None`: workers keep the supervisor's uid.
static WORKER: OnceLock<Option<Credentials>> = OnceLock::new();

/// Resolves the default worker user for this supervisor (see the module
/// documentation) and logs it. A named user that does not exist is an error.
pub fn init(limits: &LimitArgs) -> Result<(), MediatorError> {
    let creds = resolve(limits)?;
    if let Some(c) = &creds {
        tracing::info!(
            uid = c.uid,
            gid = c.gid,
            groups = ?c.groups,
            "workers run unprivileged"
        );
    }
    let _ = WORKER.set(creds);
    Ok(())
}

fn resolve(limits: &LimitArgs) -> Result<Option<Credentials>, MediatorError> {
    let euid = rustix::process::geteuid().as_raw();
    if euid != 0 {
        tracing::info!(uid = euid, "not root: workers run as this uid");
        return Ok(None);
    }
    let user = match limits.worker_user.as_deref() {
        Some("") => {
            tracing::warn!(
                "--worker-user is empty: WORKERS RUN AS ROOT and apply what clients send with \
                 root's rights. Use this only in a test environment"
            );
            return Ok(None);
        }
        Some(name) => lookup(name)
            .ok_or_else(|| MediatorError::Config(format!("--worker-user {name}: no such user")))?,
        None => lookup("vgpu-worker")
            .or_else(|| lookup("nobody"))
            .ok_or_else(|| {
                MediatorError::Config(
                    "neither a vgpu-worker nor a nobody user exists: name one with --worker-user"
                        .into(),
                )
            })?,
    };
    if user.0 == 0 {
        return Err(MediatorError::Config(
            "the worker user is root: name an unprivileged one with --worker-user".into(),
        ));
    }
    Ok(Some(Credentials {
        uid: user.0,
        gid: user.1,
        groups: device_groups(Path::new("/dev")),
    }))
}

/// Checks that the default worker user can run the worker: every
/// directory above `exe` and `libs` searchable, `exe` executable and the
/// libraries readable by that user (by the mode bits: the worker cannot
/// ask the kernel before it is that user). A file it cannot reach would
/// fail every session, so the supervisor refuses to start instead.
pub fn check_reachable(exe: &Path, libs: &[&Path]) -> Result<(), MediatorError> {
    let Some(Some(creds)) = WORKER.get() else {
        return Ok(());
    };
    let files = std::iter::once((exe, 0o1)).chain(libs.iter().map(|l| (*l, 0o4)));
    for (file, want) in files {
        let mut dirs: Vec<&Path> = file.ancestors().skip(1).collect();
        dirs.retain(|d| !d.as_os_str().is_empty());
        let reachable = dirs.iter().all(|d| allows(creds, d, 0o1)) && allows(creds, file, want);
        if !reachable {
            return Err(MediatorError::Config(format!(
                "uid {} (the worker user) cannot {} {}: install vgpu where that user can \
                 reach it, or name another with --worker-user (empty keeps root, for tests)",
                creds.uid,
                if want == 0o1 { "run" } else { "read" },
                file.display()
            )));
        }
    }
    Ok(())
}

/// Whether `creds` get the `want` bits (0o4 read, 0o1 execute/search) on
/// `path` from its mode (a path that cannot be read is not allowed).
fn allows(creds: &Credentials, path: &Path, want: u32) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    let mode = meta.mode();
    let class = if meta.uid() == creds.uid {
        mode >> 6
    } else if meta.gid() == creds.gid || creds.groups.contains(&meta.gid()) {
        mode >> 3
    } else {
        mode
    };
    class & want == want
}

/// Who a worker runs as: `tenant` (a uid and gid admission chose) when the
/// supervisor drops privileges at all, else the default worker user.
pub fn worker(tenant: Option<(u32, u32)>) -> Option<Credentials> {
    let base = WORKER.get()?.as_ref()?;
    Some(match tenant {
        Some((uid, gid)) if uid != 0 => Credentials {
            uid,
            gid,
            groups: base.groups.clone(),
        },
        _ => base.clone(),
    })
}

/// A user's uid and primary gid, by name or as a number.
fn lookup(name: &str) -> Option<(u32, u32)> {
    let c_name = CString::new(name).ok()?;
    // SAFETY: `pwd` and `buf` are live locals for the call; `getpwnam_r`
    // writes the entry into them and sets `found` to `pwd` or NULL.
    let by_name = unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 16 << 10];
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwnam_r(
            c_name.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        );
        (rc == 0 && !found.is_null()).then_some((pwd.pw_uid, pwd.pw_gid))
    };
    by_name.or_else(|| {
        let uid: u32 = name.parse().ok()?;
        // A bare uid without a passwd entry gets the same number as gid.
        Some((uid, uid))
    })
}

/// The groups, other than root's, that own the GPU's device nodes
/// (`nvidia*` entries of `dev`).
pub fn device_groups(dev: &Path) -> Vec<u32> {
    let mut groups: Vec<u32> = std::fs::read_dir(dev)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("nvidia"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.gid())
        .filter(|&gid| gid != 0)
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// Becomes `creds` for good, in a child between fork and exec: only
/// async-signal-safe system calls, no allocation. Fails unless root can no
/// longer be regained.
pub fn become_user(creds: &Credentials) -> std::io::Result<()> {
    let err = std::io::Error::last_os_error;
    // SAFETY: plain system calls on values owned by `creds`, which outlives them.
    unsafe {
        if libc::setgroups(creds.groups.len(), creds.groups.as_ptr()) != 0
            || libc::setgid(creds.gid) != 0
            || libc::setuid(creds.uid) != 0
        {
            return Err(err());
        }
        if libc::setuid(0) == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(err());
        }
    }
    Ok(())
}

/// Whether this process (its effective uid and groups) may write `path`,
/// or create it: the path itself if it exists, else its nearest existing
/// ancestor.
pub fn may_write(path: &Path) -> bool {
    use rustix::fs::{accessat, Access, AtFlags, CWD};
    let mut at = Some(path);
    while let Some(p) = at {
        if p.symlink_metadata().is_ok() {
            return accessat(CWD, p, Access::WRITE_OK, AtFlags::EACCESS).is_ok();
        }
        at = p.parent().filter(|q| !q.as_os_str().is_empty());
    }
    false
}

/// Whether the worker may apply `key=value` from a client's hello: a
/// value that names a path (`CUDA_CACHE_PATH`, or any value with a `/`)
/// only if an absolute path this process may write; others always.
pub fn env_value_allowed(key: &str, value: &str) -> Result<(), String> {
    if key != "CUDA_CACHE_PATH" && !value.contains('/') {
        return Ok(());
    }
    let path = Path::new(value);
    if !path.is_absolute() {
        return Err(format!("{key}={value:?} is not an absolute path"));
    }
    if !may_write(path) {
        let uid = rustix::process::geteuid().as_raw();
        return Err(format!("uid {uid} may not write {value:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_are_not_paths_pass() {
        assert!(env_value_allowed("CUDA_VISIBLE_DEVICES", "0,1").is_ok());
        assert!(env_value_allowed("CUDA_CACHE_MAXSIZE", "1000").is_ok());
        assert!(env_value_allowed("CUDA_CACHE_PATH", "relative").is_err());
    }

    #[test]
    fn paths_must_be_writable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inside = dir.path().join("a/b/cache");
        assert!(env_value_allowed("CUDA_CACHE_PATH", inside.to_str().expect("utf-8")).is_ok());
        assert!(!may_write(Path::new("/proc/self/nonexistent/x")));
    }

    #[test]
    fn users_resolve_by_name_and_number() {
        assert_eq!(lookup("root"), Some((0, 0)));
        assert_eq!(lookup("4242"), Some((4242, 4242)));
        assert_eq!(lookup("no-such-user-here"), None);
    }

    #[test]
    fn reachability_follows_the_mode_bits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("lib.so");
        std::fs::write(&file, b"").expect("file");
        let set = |p: &Path, mode| {
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(mode))
                .expect("chmod")
        };
        let other = Credentials {
            uid: 4242,
            gid: 4242,
            groups: vec![],
        };
        set(&file, 0o644);
        set(dir.path(), 0o755);
        assert!(allows(&other, dir.path(), 0o1) && allows(&other, &file, 0o4));
        set(dir.path(), 0o700);
        assert!(!allows(&other, dir.path(), 0o1), "a private directory");
        set(&file, 0o600);
        assert!(!allows(&other, &file, 0o4));
        let group = Credentials {
            groups: vec![meta_gid(&file)],
            ..other
        };
        set(&file, 0o640);
        assert!(allows(&group, &file, 0o4), "through a supplementary group");
    }

    fn meta_gid(p: &Path) -> u32 {
        std::fs::metadata(p).expect("metadata").gid()
    }

    #[test]
    fn device_groups_leave_out_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("nvidia0"), b"").expect("node");
        std::fs::write(dir.path().join("other"), b"").expect("file");
        // Files made by this test belong to its gid; root's group is left out.
        let gid = rustix::process::getegid().as_raw();
        let want: Vec<u32> = if gid == 0 { vec![] } else { vec![gid] };
        assert_eq!(device_groups(dir.path()), want);
    }
}
