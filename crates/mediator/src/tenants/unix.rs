//! Unix sockets: the file mode and group of a socket the mediator binds,
//! and what the kernel says about a connected peer (its groups).

use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

use super::file::GroupRef;

/// The mode Unix sockets get when the file does not say.
pub const DEFAULT_MODE: u32 = 0o660;

/// The gid of a group given by number or name.
pub fn gid(group: &GroupRef) -> Result<u32, String> {
    let name = match group {
        GroupRef::Id(id) => return Ok(*id),
        GroupRef::Name(n) => n,
    };
    let c = CString::new(name.as_str()).map_err(|_| format!("group {name:?}: a NUL byte"))?;
    let mut grp: libc::group = {
        // SAFETY: `group` is plain C data; all-zero is a valid value that
        // getgrnam_r overwrites.
        unsafe { std::mem::zeroed() }
    };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::group = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local; `buf`'s length is passed.
    let rc = unsafe {
        libc::getgrnam_r(
            c.as_ptr(),
            &mut grp,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    if rc == 0 && !found.is_null() {
        Ok(grp.gr_gid)
    } else {
        Err(format!("group {name:?} does not exist on this host"))
    }
}

/// Gives the socket at `path` file mode `mode` and, with `group`, that
/// group (the owner stays the mediator's uid).
pub fn set_mode_and_group(path: &Path, mode: u32, group: Option<u32>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(gid) = group {
        std::os::unix::fs::chown(path, None, Some(gid))?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// The peer's supplementary groups as they were when it connected
/// (`SO_PEERGROUPS`); empty if the kernel cannot say.
pub fn peer_groups(socket: BorrowedFd<'_>) -> Vec<u32> {
    let mut groups = vec![0 as libc::gid_t; 64];
    loop {
        let Ok(mut len) =
            libc::socklen_t::try_from(groups.len() * std::mem::size_of::<libc::gid_t>())
        else {
            return Vec::new();
        };
        // SAFETY: `groups` holds `len` bytes; the kernel writes at most that
        // and sets `len` to what it wrote (or needs, with ERANGE).
        let rc = unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERGROUPS,
                groups.as_mut_ptr().cast(),
                &mut len,
            )
        };
        let n = len as usize / std::mem::size_of::<libc::gid_t>();
        if rc == 0 {
            groups.truncate(n.min(groups.len()));
            return groups;
        }
        let grow = std::io::Error::last_os_error().raw_os_error() == Some(libc::ERANGE);
        if !grow || n <= groups.len() || n > 65536 {
            return Vec::new();
        }
        groups.resize(n, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_number_and_name() {
        assert_eq!(gid(&GroupRef::Id(44)), Ok(44));
        assert_eq!(gid(&GroupRef::Name("root".into())), Ok(0));
        assert!(gid(&GroupRef::Name("no-such-group-vgpu".into())).is_err());
    }

    #[test]
    fn peer_groups_of_a_socket_pair() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("pair");
        use std::os::fd::AsFd;
        // This process's own supplementary groups, as the kernel reports them.
        // SAFETY: a zero-length query only returns the count.
        let n = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
        assert_eq!(
            peer_groups(a.as_fd()).len(),
            usize::try_from(n).expect("count")
        );
    }
}
