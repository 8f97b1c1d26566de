//! The install manifest, `/var/lib/vgpu/manifest.json`: every change
//! `vgpu install` made, with what stood there before, so `vgpu uninstall`
//! can put it back. It is written atomically (beside, then renamed) after
//! the backups are made and before anything they protect is touched.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::node::{self, Contents, Node};

/// The manifest's format version; a different one is refused.
pub const FORMAT: u32 = 1;
/// Where vgpu keeps its state, in the root.
pub const STATE_DIR: &str = "/var/lib/vgpu";
/// The manifest, in the root.
pub const MANIFEST: &str = "/var/lib/vgpu/manifest.json";
/// Where backups go, in the root: the backup of `/a/b` is `BACKUP_DIR/a/b`.
pub const BACKUP_DIR: &str = "/var/lib/vgpu/backup";

/// Everything one root's installation changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// The `vgpu` that last installed.
    pub vgpu_version: String,
    /// The library that was copied in (a host path at install time).
    pub library: PathBuf,
    /// Folders vgpu created, in creation order.
    pub created_dirs: Vec<PathBuf>,
    /// Paths vgpu wrote, in the order it wrote them.
    pub entries: Vec<Entry>,
    /// Files `ldconfig` rewrites (the loader cache), as they were before
    /// the first install.
    pub derived: Vec<Derived>,
}

/// One path vgpu wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The in-root path.
    pub path: PathBuf,
    /// What vgpu put there.
    pub installed: Node,
    /// What stood there before (with its backup's in-root path).
    pub previous: Node,
}

/// A file `ldconfig` rewrites, with its state before vgpu.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Derived {
    pub path: PathBuf,
    pub previous: Node,
}

impl Manifest {
    /// A fresh manifest for this `vgpu`.
    pub fn new(library: &Path) -> Manifest {
        Manifest {
            format: FORMAT,
            vgpu_version: env!("CARGO_PKG_VERSION").into(),
            library: library.to_path_buf(),
            ..Manifest::default()
        }
    }

    /// Reads the manifest at the host path `path`; `Ok(None)` when absent.
    pub fn load(path: &Path) -> io::Result<Option<Manifest>> {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let m: Manifest = serde_json::from_slice(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not a vgpu manifest: {e}", path.display()),
            )
        })?;
        if m.format != FORMAT {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} has format {}, this vgpu understands {FORMAT}",
                    path.display(),
                    m.format
                ),
            ));
        }
        Ok(Some(m))
    }

    /// Writes the manifest to the host path `path` atomically.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let mut text = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        text.push(b'\n');
        node::put_file(path, Contents::Bytes(&text), 0o644)
    }

    /// The entry for the in-root `path`.
    pub fn entry(&self, path: &Path) -> Option<&Entry> {
        self.entries.iter().find(|e| e.path == path)
    }

    /// Records `entry`, replacing the one for the same path.
    pub fn record(&mut self, entry: Entry) {
        match self.entries.iter_mut().find(|e| e.path == entry.path) {
            Some(e) => *e = entry,
            None => self.entries.push(entry),
        }
    }
}

/// The in-root backup path of the in-root `path`.
pub fn backup_path(path: &Path) -> PathBuf {
    Path::new(BACKUP_DIR).join(path.strip_prefix("/").unwrap_or(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_format_check() {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path().join("manifest.json");
        assert_eq!(Manifest::load(&p).expect("absent"), None);
        let mut m = Manifest::new(Path::new("/opt/vgpu/lib/libvgpu-cuda.so"));
        m.created_dirs.push("/usr/lib/vgpu".into());
        m.record(Entry {
            path: "/usr/lib64/libcuda.so.1".into(),
            installed: Node::Symlink(node::LinkInfo {
                target: "/usr/lib/vgpu/libvgpu-cuda.so".into(),
                uid: 0,
                gid: 0,
            }),
            previous: Node::File(node::FileInfo {
                mode: 0o755,
                uid: 1,
                gid: 2,
                size: 3,
                mtime_s: -4,
                mtime_nsec: 999_999_999,
                digest: "fnv1a64:0".into(),
                backup: Some(backup_path(Path::new("/usr/lib64/libcuda.so.1"))),
            }),
        });
        m.derived.push(Derived {
            path: "/etc/ld.so.cache".into(),
            previous: Node::Absent,
        });
        m.save(&p).expect("save");
        assert_eq!(Manifest::load(&p).expect("load"), Some(m.clone()));
        let text = std::fs::read_to_string(&p).expect("read");
        std::fs::write(&p, text.replace("\"format\": 1", "\"format\": 99")).expect("write");
        assert!(Manifest::load(&p).is_err());
        assert_eq!(
            backup_path(Path::new("/usr/lib64/libcuda.so.1")),
            PathBuf::from("/var/lib/vgpu/backup/usr/lib64/libcuda.so.1")
        );
    }
}
