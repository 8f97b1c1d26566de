//! Unix-domain stream sockets, with descriptor passing over `SCM_RIGHTS`.
//!
//! A [`Channel`] is a Unix socket or a TCP connection ([`crate::tcp`]):
//! reads, writes and [`Channel::hung_up`] behave the same on both. What
//! needs one host (peer credentials, descriptor passing) is
//! [`TransportError::NotLocal`] on TCP.

use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use crate::ivshmem::stream::ShmStream;
use crate::TransportError;

/// One end of a session or lane connection.
#[derive(Debug)]
pub struct Channel {
    pub(crate) stream: Stream,
}

/// The socket (or ring pair) under a [`Channel`].
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
    /// TLS over TCP ([`crate::tls`]).
    Tls(Box<crate::tls::TlsStream>),
    /// Two rings in an ivshmem BAR ([`crate::ivshmem::stream`]).
    Shm(Box<ShmStream>),
}

impl Stream {
    /// The socket's descriptor; `None` for a ring stream.
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Stream::Unix(s) => Some(s.as_fd()),
            Stream::Tcp(s) => Some(s.as_fd()),
            Stream::Tls(s) => Some(s.sock.tcp().as_fd()),
            Stream::Shm(_) => None,
        }
    }
}

impl Channel {
    /// Connects to a listening socket.
    pub fn connect(path: &Path) -> Result<Channel, TransportError> {
        Ok(Channel {
            stream: Stream::Unix(UnixStream::connect(path)?),
        })
    }

    /// A connected pair, for lanes and tests.
    pub fn pair() -> Result<(Channel, Channel), TransportError> {
        let (a, b) = UnixStream::pair()?;
        Ok((
            Channel {
                stream: Stream::Unix(a),
            },
            Channel {
                stream: Stream::Unix(b),
            },
        ))
    }

    /// Wraps an already-connected socket, e.g. one inherited from the
    /// supervisor: a TCP socket (IPv4 or IPv6) becomes a TCP channel, any
    /// other a Unix one.
    pub fn from_fd(fd: OwnedFd) -> Channel {
        use rustix::net::{sockopt::socket_domain, AddressFamily};
        let stream = match socket_domain(&fd) {
            Ok(AddressFamily::INET | AddressFamily::INET6) => Stream::Tcp(TcpStream::from(fd)),
            _ => Stream::Unix(UnixStream::from(fd)),
        };
        Channel { stream }
    }

    /// A channel over two rings in an ivshmem BAR: it behaves as a TCP
    /// one (no credentials, no descriptors).
    pub fn from_shm(s: ShmStream) -> Channel {
        Channel {
            stream: Stream::Shm(Box::new(s)),
        }
    }

    /// Gives up the socket; `None` for a ring stream, which has none, and
    /// for TLS, whose state cannot leave the process.
    pub fn into_fd(self) -> Option<OwnedFd> {
        match self.stream {
            Stream::Unix(s) => Some(OwnedFd::from(s)),
            Stream::Tcp(s) => Some(OwnedFd::from(s)),
            Stream::Tls(_) | Stream::Shm(_) => None,
        }
    }

    /// The socket's descriptor; `None` for a ring stream.
    pub fn socket_fd(&self) -> Option<BorrowedFd<'_>> {
        self.stream.fd()
    }

    /// The socket's descriptor, or [`TransportError::NotLocal`] for a ring
    /// stream.
    pub fn fd(&self) -> Result<BorrowedFd<'_>, TransportError> {
        self.stream
            .fd()
            .ok_or(TransportError::NotLocal("a socket descriptor"))
    }

    /// Bounds how long one read waits: a socket's receive timeout, a ring
    /// stream's read deadline. A read past it fails with `WouldBlock` or
    /// `TimedOut`; nothing read is lost.
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) -> Result<(), TransportError> {
        use rustix::net::sockopt::{set_socket_timeout, Timeout};
        match &mut self.stream {
            Stream::Shm(s) => s.set_read_deadline(timeout),
            other => {
                let fd = other.fd().ok_or(TransportError::NotLocal("a socket"))?;
                set_socket_timeout(fd, Timeout::Recv, timeout).map_err(std::io::Error::from)?;
            }
        }
        Ok(())
    }

    /// Gives every later read and write on this channel a deadline of
    /// `timeout`: one that waits longer fails with `TimedOut` (a socket's
    /// `WouldBlock`), whatever the peer does meanwhile.
    pub fn set_deadlines(&mut self, timeout: Duration) -> Result<(), TransportError> {
        use rustix::net::sockopt::{set_socket_timeout, Timeout};
        match &mut self.stream {
            Stream::Shm(s) => s.set_deadline(Some(timeout)),
            other => {
                let fd = other.fd().ok_or(TransportError::NotLocal("a socket"))?;
                for kind in [Timeout::Recv, Timeout::Send] {
                    set_socket_timeout(fd, kind, Some(timeout)).map_err(std::io::Error::from)?;
                }
            }
        }
        Ok(())
    }

    /// Lets go of a channel inherited across `fork`: a ring stream's ends
    /// are left as the parent has them ([`ShmStream::abandon`]); a socket
    /// is this process's own descriptor and closes.
    pub fn abandon(self) {
        if let Stream::Shm(s) = self.stream {
            s.abandon();
        }
    }

    /// A second channel on the same Unix or TCP socket (a duplicated
    /// descriptor), for a thread that only reads while another writes;
    /// `None` for a ring stream.
    pub fn try_clone(&self) -> Option<Channel> {
        let stream = match &self.stream {
            Stream::Unix(s) => Stream::Unix(s.try_clone().ok()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone().ok()?),
            // One TLS session's state cannot be read by two threads.
            Stream::Tls(_) | Stream::Shm(_) => return None,
        };
        Some(Channel { stream })
    }

    /// Polls the socket for up to `spin` for bytes to read, without
    /// sleeping, and returns whether some came (or the peer closed it). A
    /// blocking read that follows then finds them at once: a thread that
    /// sleeps in `read(2)` wakes several microseconds after the bytes come,
    /// which is most of a TCP round trip's cost on one host. A ring stream
    /// returns `false` at once, a TLS one `true` (its session may hold
    /// bytes already read from the socket: the read must look first).
    ///
    /// Each look is a zero-timeout `poll(2)`, whose cost does not depend on
    /// what is queued. A one-byte `MSG_PEEK` would not do on a Unix stream
    /// socket: the kernel's peek walks every queued message after the first
    /// (one per frame written), so with thousands of posted frames queued
    /// each look took hundreds of microseconds.
    pub fn spin_until_readable(&self, spin: std::time::Duration) -> bool {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let fd = match &self.stream {
            Stream::Tls(_) => return true,
            other => match other.fd() {
                Some(fd) => fd,
                None => return false,
            },
        };
        let start = std::time::Instant::now();
        let mut fds = [PollFd::new(&fd, PollFlags::IN | PollFlags::RDHUP)];
        loop {
            match poll(&mut fds, Some(&Timespec::default())) {
                Ok(0) | Err(rustix::io::Errno::INTR) => {}
                // Bytes, end-of-file or an error: the read says which.
                _ => return true,
            }
            if start.elapsed() >= spin {
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// Shuts the socket's reading side: a read blocked on it, through any
    /// descriptor, returns end-of-file.
    pub fn shutdown_read(&self) {
        if let Some(fd) = self.stream.fd() {
            let _ = rustix::net::shutdown(fd, rustix::net::Shutdown::Read);
        }
    }

    /// Makes reads and writes on the socket fail with `WouldBlock` after
    /// `timeout` (`None`: wait for ever); nothing for a ring stream.
    pub fn set_timeout(&self, timeout: Option<std::time::Duration>) -> Result<(), TransportError> {
        use rustix::net::sockopt::{set_socket_timeout, Timeout};
        if let Some(fd) = self.stream.fd() {
            set_socket_timeout(fd, Timeout::Recv, timeout).map_err(std::io::Error::from)?;
            set_socket_timeout(fd, Timeout::Send, timeout).map_err(std::io::Error::from)?;
        }
        Ok(())
    }

    /// Whether this channel is a TCP connection (plain or inside TLS).
    pub fn is_tcp(&self) -> bool {
        matches!(self.stream, Stream::Tcp(_) | Stream::Tls(_))
    }

    /// Whether this channel runs on rings in an ivshmem BAR (a VM guest's
    /// session): like TCP, nothing but bytes crosses it.
    pub fn is_vm(&self) -> bool {
        matches!(self.stream, Stream::Shm(_))
    }

    /// A Unix socket's descriptor; `None` for any other stream.
    pub(crate) fn unix_fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.stream {
            Stream::Unix(s) => Some(s.as_fd()),
            Stream::Tcp(_) | Stream::Tls(_) | Stream::Shm(_) => None,
        }
    }

    /// The Unix socket, or [`TransportError::NotLocal`] naming `what`.
    fn unix(&self, what: &'static str) -> Result<&UnixStream, TransportError> {
        match &self.stream {
            Stream::Unix(s) => Ok(s),
            Stream::Tcp(_) | Stream::Tls(_) | Stream::Shm(_) => Err(TransportError::NotLocal(what)),
        }
    }

    /// The peer's process credentials (pid, uid, gid); a TCP peer has none
    /// ([`TransportError::NotLocal`]).
    pub fn peer_credentials(&self) -> Result<(u32, u32, u32), TransportError> {
        let unix = self.unix("peer credentials")?;
        let c = rustix::net::sockopt::socket_peercred(unix).map_err(std::io::Error::from)?;
        Ok((
            c.pid.as_raw_nonzero().get().unsigned_abs(),
            c.uid.as_raw(),
            c.gid.as_raw(),
        ))
    }

    /// Sends one byte carrying `fd` as `SCM_RIGHTS`.
    pub fn send_fd(&self, fd: BorrowedFd<'_>) -> Result<(), TransportError> {
        self.send_fds(&[fd])
    }

    /// Sends one byte carrying all of `fds` (at most [`MAX_FDS`]) as one
    /// `SCM_RIGHTS` message. Not on TCP ([`TransportError::NotLocal`]).
    pub fn send_fds(&self, fds: &[BorrowedFd<'_>]) -> Result<(), TransportError> {
        let unix = self.unix("descriptor passing")?;
        if fds.is_empty() || fds.len() > MAX_FDS {
            return Err(TransportError::Io(std::io::Error::other(
                "one to MAX_FDS descriptors per message",
            )));
        }
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut anc = SendAncillaryBuffer::new(&mut space);
        if !anc.push(SendAncillaryMessage::ScmRights(fds)) {
            return Err(TransportError::Io(std::io::Error::other(
                "ancillary buffer too small",
            )));
        }
        let sent = sendmsg(
            unix,
            &[IoSlice::new(&[0x46])],
            &mut anc,
            SendFlags::NOSIGNAL,
        )
        .map_err(std::io::Error::from)?;
        if sent != 1 {
            return Err(TransportError::Io(std::io::ErrorKind::WriteZero.into()));
        }
        Ok(())
    }

    /// Receives the byte sent by [`Channel::send_fd`] and its descriptor.
    pub fn recv_fd(&self) -> Result<OwnedFd, TransportError> {
        let mut fds = self.recv_fds(1)?;
        fds.pop().ok_or(TransportError::NoFd)
    }

    /// Receives the byte sent by [`Channel::send_fds`] and exactly `n`
    /// descriptors (`1..=MAX_FDS`). Fewer is [`TransportError::NoFd`]; more
    /// are closed and refused the same way. Not on TCP
    /// ([`TransportError::NotLocal`]).
    pub fn recv_fds(&self, n: usize) -> Result<Vec<OwnedFd>, TransportError> {
        let unix = self.unix("descriptor passing")?;
        if n == 0 || n > MAX_FDS {
            return Err(TransportError::Io(std::io::Error::other(
                "one to MAX_FDS descriptors per message",
            )));
        }
        let mut byte = [0u8; 1];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut anc = RecvAncillaryBuffer::new(&mut space);
        let msg = recvmsg(
            unix,
            &mut [IoSliceMut::new(&mut byte)],
            &mut anc,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(std::io::Error::from)?;
        if msg.bytes == 0 {
            return Err(TransportError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        let mut received = Vec::new();
        for m in anc.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = m {
                received.extend(fds);
            }
        }
        if received.len() != n {
            return Err(TransportError::NoFd);
        }
        Ok(received)
    }

    /// Whether the peer has closed its end or the socket failed, without
    /// reading anything or waiting (a zero-timeout `poll`). Pending data is
    /// not a hang-up. On TCP the peer's FIN counts: vgpu's ends never shut
    /// down one direction only.
    pub fn hung_up(&self) -> bool {
        let Some(fd) = self.stream.fd() else {
            return match &self.stream {
                Stream::Shm(s) => s.hung_up(),
                _ => true,
            };
        };
        socket_hung_up(fd)
    }
}

/// Whether the peer of socket `fd` closed it or the socket failed, without
/// reading anything or waiting (a zero-timeout `poll`). Pending data is not
/// a hang-up.
pub fn socket_hung_up(fd: BorrowedFd<'_>) -> bool {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut fds = [PollFd::new(&fd, PollFlags::RDHUP)];
    match poll(&mut fds, Some(&rustix::event::Timespec::default())) {
        Ok(0) => false,
        Ok(_) => fds[0]
            .revents()
            .intersects(PollFlags::HUP | PollFlags::RDHUP | PollFlags::ERR | PollFlags::NVAL),
        Err(_) => true,
    }
}

/// Most descriptors one [`Channel::send_fds`] message carries.
pub const MAX_FDS: usize = 4;

impl Read for Channel {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.stream {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            Stream::Shm(s) => s.read(buf),
        }
    }
    /// One `readv(2)` on a socket.
    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> std::io::Result<usize> {
        match &mut self.stream {
            Stream::Unix(s) => s.read_vectored(bufs),
            Stream::Tcp(s) => s.read_vectored(bufs),
            Stream::Tls(s) => s.read_vectored(bufs),
            Stream::Shm(s) => s.read_vectored(bufs),
        }
    }
}

/// Writes use `MSG_NOSIGNAL`: a peer that went away is an `EPIPE` error for
/// the caller to map, never a SIGPIPE that kills the application. On TCP a
/// write after the peer hung up fails with `EPIPE` too (the kernel would
/// take the first such write and only refuse later ones), so a posted
/// request to a dead worker fails at once on both transports.
impl Write for Channel {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.check_peer()?;
        self.write_unchecked(buf)
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        self.check_peer()?;
        self.write_vectored_unchecked(bufs)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.stream {
            Stream::Tls(s) => s.flush(),
            Stream::Unix(_) | Stream::Tcp(_) | Stream::Shm(_) => Ok(()),
        }
    }
}

impl Channel {
    /// On TCP, `EPIPE` when the peer has hung up (see the `Write` impl).
    pub(crate) fn check_peer(&self) -> std::io::Result<()> {
        if self.is_tcp() && self.hung_up() {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        Ok(())
    }

    /// [`Write::write`] without the look for a hung-up TCP peer, for a
    /// writer that reads from the peer next and sees its hang-up there.
    pub(crate) fn write_unchecked(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.stream {
            Stream::Shm(s) => s.write(buf),
            Stream::Unix(s) => Ok(rustix::net::send(&*s, buf, SendFlags::NOSIGNAL)?),
            Stream::Tcp(s) => Ok(rustix::net::send(&*s, buf, SendFlags::NOSIGNAL)?),
            Stream::Tls(s) => s.write(buf),
        }
    }

    /// [`Write::write_vectored`] without the look for a hung-up TCP peer
    /// ([`Channel::write_unchecked`]).
    pub(crate) fn write_vectored_unchecked(
        &mut self,
        bufs: &[IoSlice<'_>],
    ) -> std::io::Result<usize> {
        let mut no_fds = SendAncillaryBuffer::default();
        match &mut self.stream {
            Stream::Shm(s) => s.write_vectored(bufs),
            Stream::Unix(s) => Ok(sendmsg(&*s, bufs, &mut no_fds, SendFlags::NOSIGNAL)?),
            Stream::Tcp(s) => Ok(sendmsg(&*s, bufs, &mut no_fds, SendFlags::NOSIGNAL)?),
            Stream::Tls(s) => s.write_vectored(bufs),
        }
    }
}

impl Channel {
    /// One `sendmsg(2)` of `bufs` that does not wait for room in the
    /// socket's buffer: `WouldBlock` when there is none. For a thread that
    /// writes on other threads' behalf and must not stall on one of them
    /// ([`crate::lane::outbox`]); `Unsupported` on a TLS or ring stream.
    pub(crate) fn write_vectored_nowait(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        let mut no_fds = SendAncillaryBuffer::default();
        let flags = SendFlags::NOSIGNAL | SendFlags::DONTWAIT;
        match &mut self.stream {
            Stream::Unix(s) => Ok(sendmsg(&*s, bufs, &mut no_fds, flags)?),
            Stream::Tcp(s) => Ok(sendmsg(&*s, bufs, &mut no_fds, flags)?),
            Stream::Tls(_) | Stream::Shm(_) => Err(std::io::ErrorKind::Unsupported.into()),
        }
    }
}

/// A listening socket: a Unix socket, or TCP ([`Listener::bind_tcp`]).
#[derive(Debug)]
pub struct Listener {
    pub(crate) inner: Inner,
}

#[derive(Debug)]
pub(crate) enum Inner {
    Unix(UnixListener),
    Tcp(std::net::TcpListener),
}

impl Listener {
    /// Binds `path`, replacing a stale socket file left by a dead mediator
    /// (one that no longer accepts connections).
    ///
    /// The socket appears at `path` only once it listens: it is bound and
    /// set listening under a temporary name in the same folder, then renamed
    /// into place. So a client that finds the file can connect (binding at
    /// `path` directly leaves a moment in which the file exists but refuses
    /// connections).
    pub fn bind(path: &Path) -> Result<Listener, TransportError> {
        if path.exists() && UnixStream::connect(path).is_ok() {
            return Err(TransportError::Io(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("{} already accepts connections", path.display()),
            )));
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let temp = dir.join(format!(".vgpu-bind-{}", std::process::id()));
        let _ = std::fs::remove_file(&temp);
        let inner = UnixListener::bind(&temp)?;
        if let Err(e) = std::fs::rename(&temp, path) {
            let _ = std::fs::remove_file(&temp);
            return Err(e.into());
        }
        Ok(Listener {
            inner: Inner::Unix(inner),
        })
    }

    /// A listening socket made elsewhere (inherited from a service manager):
    /// a Unix stream socket or a TCP one, told apart by its address family.
    pub fn from_listening_fd(fd: std::os::fd::OwnedFd) -> Result<Listener, TransportError> {
        let addr = rustix::net::getsockname(&fd).map_err(std::io::Error::from)?;
        let inner = match addr.address_family() {
            rustix::net::AddressFamily::UNIX => Inner::Unix(UnixListener::from(fd)),
            rustix::net::AddressFamily::INET | rustix::net::AddressFamily::INET6 => {
                Inner::Tcp(std::net::TcpListener::from(fd))
            }
            other => {
                return Err(TransportError::Io(std::io::Error::other(format!(
                    "an inherited socket of address family {}, neither Unix nor TCP",
                    other.as_raw()
                ))))
            }
        };
        Ok(Listener { inner })
    }

    /// The Unix socket listener inside, for a protocol of its own (QEMU's
    /// ivshmem-server protocol passes descriptors a `Channel` does not);
    /// `None` for TCP.
    pub fn into_unix(self) -> Option<UnixListener> {
        match self.inner {
            Inner::Unix(l) => Some(l),
            Inner::Tcp(_) => None,
        }
    }

    /// Accepts one connection; a TCP one gets `TCP_NODELAY` and keep-alives
    /// ([`crate::tcp::tune`]).
    pub fn accept(&self) -> Result<Channel, TransportError> {
        match &self.inner {
            Inner::Unix(l) => {
                let (stream, _) = l.accept()?;
                Ok(Channel {
                    stream: Stream::Unix(stream),
                })
            }
            Inner::Tcp(l) => {
                let (stream, _) = l.accept()?;
                Channel::from_tcp(stream)
            }
        }
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.inner {
            Inner::Unix(l) => l.as_fd(),
            Inner::Tcp(l) => l.as_fd(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_passing_round_trip() {
        let (a, b) = Channel::pair().expect("pair");
        let (mut x, y) = Channel::pair().expect("pair");
        a.send_fd(y.fd().expect("a socket")).expect("send fd");
        let got = b.recv_fd().expect("recv fd");
        let mut y2 = Channel::from_fd(got);
        x.write_all(b"hello").expect("write");
        let mut buf = [0u8; 5];
        y2.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"hello");
    }

    #[test]
    fn several_fds_in_one_message_and_hang_up() {
        let (a, b) = Channel::pair().expect("pair");
        let (x1, y1) = Channel::pair().expect("pair");
        let (x2, y2) = Channel::pair().expect("pair");
        a.send_fds(&[y1.fd().expect("a socket"), y2.fd().expect("a socket")])
            .expect("send fds");
        let got = b.recv_fds(2).expect("recv fds");
        assert_eq!(got.len(), 2);
        let mut y1b = Channel::from_fd(got.into_iter().next().expect("first"));
        let mut x1 = x1;
        x1.write_all(b"ok").expect("write");
        let mut buf = [0u8; 2];
        y1b.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"ok");
        // A count mismatch is refused.
        a.send_fds(&[y2.fd().expect("a socket")]).expect("send fd");
        assert!(matches!(b.recv_fds(2), Err(TransportError::NoFd)));
        // Pending data is not a hang-up; a closed peer is.
        assert!(!x2.hung_up());
        drop(y2);
        assert!(x2.hung_up(), "every copy of y2 is closed");
    }

    #[test]
    fn spinning_sees_bytes_and_a_hang_up_but_not_an_idle_peer() {
        let spin = Duration::from_micros(200);
        let (a, mut b) = Channel::pair().expect("pair");
        assert!(!a.spin_until_readable(spin), "nothing sent yet");
        // Many small frames queued, as posted calls queue them.
        for _ in 0..100 {
            b.write_all(&[7u8; 96]).expect("write");
        }
        assert!(a.spin_until_readable(spin));
        let mut a = a;
        let mut all = vec![0u8; 100 * 96];
        a.read_exact(&mut all).expect("read");
        assert!(!a.spin_until_readable(spin), "all read");
        drop(b);
        assert!(a.spin_until_readable(spin), "end-of-file is for the read");
    }

    #[test]
    fn hung_up_sees_a_closed_peer() {
        let (a, b) = Channel::pair().expect("pair");
        let mut b = b;
        b.write_all(b"x").expect("write");
        assert!(!a.hung_up(), "data pending is not a hang-up");
        drop(b);
        assert!(a.hung_up());
    }

    #[test]
    fn bind_publishes_a_listening_socket_and_replaces_a_stale_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("m.sock");
        drop(UnixListener::bind(&path).expect("a stale socket file"));
        assert!(path.exists());
        let l = Listener::bind(&path).expect("replaces the stale file");
        let _c = Channel::connect(&path).expect("connects at once");
        let _a = l.accept().expect("accepts");
        assert!(
            Listener::bind(&path).is_err(),
            "a live listener is not replaced"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["m.sock"], "no temporary name is left behind");
    }

    #[test]
    fn address_parsing() {
        assert_eq!(
            "unix:/tmp/x".parse::<crate::Address>().expect("ok"),
            crate::Address::Unix("/tmp/x".into())
        );
        assert!("tcp:nope".parse::<crate::Address>().is_err());
        assert!("unix:".parse::<crate::Address>().is_err());
        let tcp = |host: &str, port| crate::Address::Tcp {
            host: host.into(),
            port,
        };
        for (text, want) in [
            ("tcp://127.0.0.1:7011", tcp("127.0.0.1", 7011)),
            ("tcp://0.0.0.0:0", tcp("0.0.0.0", 0)),
            ("tcp://gpu-host.example:1", tcp("gpu-host.example", 1)),
            ("tcp://[::1]:7011", tcp("::1", 7011)),
        ] {
            let got = text.parse::<crate::Address>().expect(text);
            assert_eq!(got, want);
            assert_eq!(got.to_string(), text, "round trip");
        }
        for bad in [
            "tcp://",
            "tcp://host",
            "tcp://:1",
            "tcp://host:65536",
            "tcp://host:x",
            "tcp://[::1:1",
            "tcp://[nope]:1",
            "tcp://a b:1",
            "tcp://::1:1",
        ] {
            assert!(bad.parse::<crate::Address>().is_err(), "{bad:?}");
        }
    }
}
