//! What stands at a path, recorded well enough to put it back byte for byte.
//!
//! A [`Node`] is the state of one path: nothing, a regular file (mode,
//! owner, modification time, size and digest; the bytes themselves live in
//! a backup copy), or a symbolic link (its target, exactly). Files are
//! replaced atomically: written beside the path, then renamed over it, so a
//! process starting at any moment sees the old or the new file, never none.

use std::fs::{self, File, FileTimes, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The state of one path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Node {
    /// Nothing stands there.
    Absent,
    /// A regular file.
    File(FileInfo),
    /// A symbolic link.
    Symlink(LinkInfo),
}

/// A regular file's recorded state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    /// Modification time: seconds since the epoch, and nanoseconds.
    pub mtime_s: i64,
    pub mtime_nsec: u32,
    /// [`digest`] of the contents.
    pub digest: String,
    /// In-root path of the backup copy, for files that stood there before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<PathBuf>,
}

/// A symbolic link's recorded state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkInfo {
    /// The target, exactly as stored in the link.
    pub target: PathBuf,
    pub uid: u32,
    pub gid: u32,
}

impl Node {
    /// A short description for messages.
    pub fn describe(&self) -> String {
        match self {
            Node::Absent => "nothing".into(),
            Node::File(f) => format!("a file of {} bytes, mode {:04o}", f.size, f.mode),
            Node::Symlink(l) => format!("a link to {}", l.target.display()),
        }
    }

    /// True when `self` (found now) is what `recorded` says, ignoring
    /// owner, time and backup location: the contents, mode and link target
    /// decide.
    pub fn same_as(&self, recorded: &Node) -> bool {
        match (self, recorded) {
            (Node::Absent, Node::Absent) => true,
            (Node::File(a), Node::File(b)) => {
                a.size == b.size && a.mode == b.mode && a.digest == b.digest
            }
            (Node::Symlink(a), Node::Symlink(b)) => a.target == b.target,
            _ => false,
        }
    }
}

/// FNV-1a, 64 bits, of a reader's bytes: enough to notice that a file
/// changed (it is not a defence against someone who can write as root).
pub fn digest(mut r: impl Read) -> io::Result<String> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        for &b in &buf[..n] {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    Ok(format!("fnv1a64:{h:016x}"))
}

/// The digest of the file at `path`.
pub fn digest_file(path: &Path) -> io::Result<String> {
    digest(File::open(path)?)
}

/// Reads what stands at the host path `path`. A folder (or any other kind
/// of file) is an error: vgpu never replaces one.
pub fn capture(path: &Path) -> io::Result<Node> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Node::Absent),
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Ok(Node::Symlink(LinkInfo {
            target: fs::read_link(path)?,
            uid: meta.uid(),
            gid: meta.gid(),
        }));
    }
    if !ft.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a file or a link; vgpu will not replace it",
            path.display()
        )));
    }
    Ok(Node::File(FileInfo {
        mode: meta.mode() & 0o7777,
        uid: meta.uid(),
        gid: meta.gid(),
        size: meta.len(),
        mtime_s: meta.mtime(),
        mtime_nsec: u32::try_from(meta.mtime_nsec()).unwrap_or(0),
        digest: digest_file(path)?,
        backup: None,
    }))
}

/// The name of the temporary file made beside `path` while replacing it.
fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.vgpu-{}", std::process::id()))
}

/// Syncs a folder, so a rename in it survives a crash.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes `bytes` (or copies the file `from`) to `path` atomically, with
/// `mode`; the previous file at `path`, if any, is replaced.
pub fn put_file(path: &Path, contents: Contents<'_>, mode: u32) -> io::Result<()> {
    let tmp = temp_beside(path);
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        match contents {
            Contents::Bytes(b) => out.write_all(b)?,
            Contents::CopyOf(src) => {
                io::copy(&mut File::open(src)?, &mut out)?;
            }
        }
        out.set_permissions(fs::Permissions::from_mode(mode))?;
        out.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    sync_dir(path.parent().unwrap_or(Path::new("/")))
}

/// What [`put_file`] writes.
#[derive(Clone, Copy, Debug)]
pub enum Contents<'a> {
    Bytes(&'a [u8]),
    CopyOf(&'a Path),
}

/// Makes `path` a link to `target`, atomically replacing what is there.
pub fn put_link(path: &Path, target: &Path) -> io::Result<()> {
    let tmp = temp_beside(path);
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(path.parent().unwrap_or(Path::new("/")))
}

/// Removes the file or link at `path`; nothing there is fine.
pub fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Puts `node` back at `path`. A file's bytes come from the host path
/// `backup`; its mode, owner (when allowed) and modification time are set
/// as recorded. Returns a note when the owner could not be restored.
pub fn restore(path: &Path, node: &Node, backup: Option<&Path>) -> io::Result<Option<String>> {
    match node {
        Node::Absent => remove(path).map(|()| None),
        Node::Symlink(l) => {
            put_link(path, &l.target)?;
            Ok(chown_note(
                std::os::unix::fs::lchown(path, Some(l.uid), Some(l.gid)),
                path,
            ))
        }
        Node::File(f) => {
            let backup = backup.ok_or_else(|| {
                io::Error::other(format!("no backup recorded for {}", path.display()))
            })?;
            put_file(path, Contents::CopyOf(backup), f.mode)?;
            let note = chown_note(
                std::os::unix::fs::chown(path, Some(f.uid), Some(f.gid)),
                path,
            );
            // chown may clear set-id bits: set the mode again.
            fs::set_permissions(path, fs::Permissions::from_mode(f.mode))?;
            let since_epoch = Duration::new(f.mtime_s.unsigned_abs(), f.mtime_nsec);
            let when = if f.mtime_s >= 0 {
                UNIX_EPOCH + since_epoch
            } else {
                UNIX_EPOCH - since_epoch
            };
            File::options()
                .write(true)
                .open(path)?
                .set_times(FileTimes::new().set_modified(when))?;
            Ok(note)
        }
    }
}

fn chown_note(r: io::Result<()>, path: &Path) -> Option<String> {
    match r {
        Ok(()) => None,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Some(format!(
            "owner of {} not restored (not running as root)",
            path.display()
        )),
        Err(e) => Some(format!("owner of {} not restored: {e}", path.display())),
    }
}

/// Copies what stands at `path` (a file or a link) to the host path `to`,
/// creating nothing else; returns the node with `backup` set to `in_root`.
pub fn back_up(path: &Path, node: &Node, to: &Path, in_root: &Path) -> io::Result<Node> {
    remove(to)?;
    match node {
        Node::Absent => Ok(Node::Absent),
        Node::Symlink(l) => {
            std::os::unix::fs::symlink(&l.target, to)?;
            Ok(node.clone())
        }
        Node::File(f) => {
            put_file(to, Contents::CopyOf(path), 0o600)?;
            let copied = digest_file(to)?;
            if copied != f.digest {
                return Err(io::Error::other(format!(
                    "{} changed while it was being backed up; try again",
                    path.display()
                )));
            }
            let mut f = f.clone();
            f.backup = Some(in_root.to_path_buf());
            Ok(Node::File(f))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_round_trip_through_a_backup() {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path().join("lib.so");
        fs::write(&p, b"original").expect("write");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o751)).expect("chmod");
        let before = capture(&p).expect("capture");
        let saved = back_up(&p, &before, &t.path().join("bak"), Path::new("/bak")).expect("backup");
        put_link(&p, Path::new("/elsewhere")).expect("link");
        assert!(!capture(&p).expect("capture").same_as(&before));
        restore(&p, &saved, Some(&t.path().join("bak"))).expect("restore");
        let after = capture(&p).expect("capture");
        assert!(after.same_as(&before));
        assert_eq!(after, before, "mode, owner and time restored too");
        assert_eq!(fs::read(&p).expect("read"), b"original");
    }

    #[test]
    fn links_and_absence() {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path().join("libcuda.so");
        assert_eq!(capture(&p).expect("capture"), Node::Absent);
        put_link(&p, Path::new("libcuda.so.1")).expect("link");
        let link = capture(&p).expect("capture");
        assert_eq!(link.describe(), "a link to libcuda.so.1");
        put_file(&p, Contents::Bytes(b"x"), 0o644).expect("file");
        restore(&p, &link, None).expect("restore link");
        assert!(capture(&p).expect("capture").same_as(&link));
        restore(&p, &Node::Absent, None).expect("remove");
        assert_eq!(capture(&p).expect("capture"), Node::Absent);
        assert!(capture(t.path()).is_err(), "a folder is refused");
    }
}
