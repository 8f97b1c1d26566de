//! Private folders under the temporary folder: `$TMPDIR/vgpu-<uid>/`, mode
//! 0700, checked to be a real folder owned by this user before anything is
//! put in it, so another user cannot pre-create or redirect it.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// This process's real user id.
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Creates `dir` with mode 0700 if missing, then checks that it is a folder
/// (not a link) owned by this user and closed to everyone else.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(dir)?;
    if !meta.file_type().is_dir() {
        return Err(io::Error::other(format!(
            "{} exists and is not a folder",
            dir.display()
        )));
    }
    if meta.uid() != uid() {
        return Err(io::Error::other(format!(
            "{} belongs to user {}, not to this user ({})",
            dir.display(),
            meta.uid(),
            uid()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// `$TMPDIR/vgpu-<uid>`, created and checked.
pub fn user_root(tmp: &Path) -> io::Result<PathBuf> {
    let root = tmp.join(format!("vgpu-{}", uid()));
    ensure_private_dir(&root)?;
    Ok(root)
}

/// A fresh private folder that is removed, with its contents, on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `<user root>/<prefix>-<pid>-<n>`.
    pub fn new(tmp: &Path, prefix: &str) -> io::Result<TempDir> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let root = user_root(tmp)?;
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = root.join(format!("{prefix}-{}-{n}", std::process::id()));
            match fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(TempDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The folder's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a leftover folder in the private root harms nothing.
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Makes `link` a symbolic link to `target`, replacing whatever is there
/// atomically (a new link is made beside it and renamed over it).
pub fn replace_symlink(target: &Path, link: &Path) -> io::Result<()> {
    if fs::read_link(link).is_ok_and(|t| t == target) {
        return Ok(());
    }
    let mut tmp = link.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    fs::rename(&tmp, link)
}

/// FNV-1a of a path's bytes: a stable, short folder name for a path.
pub fn path_key(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in path.as_os_str().as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}
