//! Paths inside an install root.
//!
//! `vgpu install --root DIR` works on a tree that is `/` for the programs
//! that will run in it, so absolute link targets in that tree mean
//! `DIR/...`, never the host's files. [`Root`] maps in-root paths (always
//! absolute, like `/usr/lib/vgpu`) to host paths and follows links without
//! leaving the root.

use std::io;
use std::path::{Component, Path, PathBuf};

/// Most links followed while resolving one path (the kernel's limit).
const MAX_LINKS: usize = 40;

/// An install root: `/` or a folder that stands for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// A root at `dir`, which must be an absolute path.
    pub fn new(dir: &Path) -> io::Result<Root> {
        if !dir.is_absolute() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--root must be an absolute path, not {}", dir.display()),
            ));
        }
        Ok(Root {
            dir: dir.to_path_buf(),
        })
    }

    /// True when this root is the running system's `/`.
    pub fn is_system(&self) -> bool {
        self.dir == Path::new("/")
    }

    /// The root folder on the host.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The host path of the in-root path `p` (`/usr/lib` → `DIR/usr/lib`).
    pub fn host(&self, p: &Path) -> PathBuf {
        let rel = p.strip_prefix("/").unwrap_or(p);
        if rel.as_os_str().is_empty() {
            return self.dir.clone();
        }
        self.dir.join(rel)
    }

    /// Resolves every link in the in-root path `p` inside the root, as the
    /// loader would see it with the root mounted at `/`. The result is an
    /// in-root path; its last part need not exist.
    pub fn resolve(&self, p: &Path) -> io::Result<PathBuf> {
        let mut done = PathBuf::from("/");
        let mut todo: Vec<PathBuf> = components_rev(p);
        let mut links = 0;
        while let Some(part) = todo.pop() {
            if part == Path::new("..") {
                done.pop();
                continue;
            }
            let next = done.join(&part);
            match std::fs::symlink_metadata(self.host(&next)) {
                Ok(m) if m.file_type().is_symlink() => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(io::Error::other(format!(
                            "too many links resolving {}",
                            p.display()
                        )));
                    }
                    let target = std::fs::read_link(self.host(&next))?;
                    if target.is_absolute() {
                        done = PathBuf::from("/");
                    }
                    todo.extend(components_rev(&target));
                }
                Ok(_) => done = next,
                Err(e) if e.kind() == io::ErrorKind::NotFound && todo.is_empty() => {
                    done = next;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    /// The in-root folder `p` resolves to, if it is a folder.
    pub fn resolve_dir(&self, p: &Path) -> Option<PathBuf> {
        let r = self.resolve(p).ok()?;
        std::fs::metadata(self.host(&r))
            .ok()
            .filter(|m| m.is_dir())
            .map(|_| r)
    }
}

/// The normal components of `p`, last first (a stack to pop from).
fn components_rev(p: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(PathBuf::from(n)),
            Component::ParentDir => Some(PathBuf::from("..")),
            _ => None,
        })
        .collect();
    parts.reverse();
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_stay_inside_the_root() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = Root::new(t.path()).expect("root");
        std::fs::create_dir_all(t.path().join("usr/lib/vgpu")).expect("mkdir");
        std::fs::write(t.path().join("usr/lib/vgpu/lib.so"), b"x").expect("write");
        symlink("lib", t.path().join("usr/lib64")).expect("link");
        symlink("/usr/lib/vgpu/lib.so", t.path().join("usr/lib/abs.so")).expect("link");
        symlink(
            "../../../../../../usr/lib/vgpu/lib.so",
            t.path().join("usr/lib/up.so"),
        )
        .expect("link");
        let r = |p: &str| root.resolve(Path::new(p)).expect("resolves");
        assert_eq!(
            r("/usr/lib64/abs.so"),
            PathBuf::from("/usr/lib/vgpu/lib.so")
        );
        assert_eq!(r("/usr/lib/up.so"), PathBuf::from("/usr/lib/vgpu/lib.so"));
        assert_eq!(r("/usr/lib64/missing"), PathBuf::from("/usr/lib/missing"));
        assert_eq!(
            root.resolve_dir(Path::new("/usr/lib64")),
            Some("/usr/lib".into())
        );
        assert_eq!(root.resolve_dir(Path::new("/usr/local/lib")), None);
        symlink("loop", t.path().join("loop")).expect("link");
        assert!(root.resolve(Path::new("/loop")).is_err());
        assert_eq!(root.host(Path::new("/")), t.path());
        assert!(Root::new(Path::new("relative")).is_err());
    }
}
