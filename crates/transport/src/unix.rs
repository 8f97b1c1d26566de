//! Unix-domain stream sockets, with descriptor passing over `SCM_RIGHTS`.

use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use crate::TransportError;

/// One end of a session or lane connection.
#[derive(Debug)]
pub struct Channel {
    stream: UnixStream,
}

impl Channel {
    /// Connects to a listening socket.
    pub fn connect(path: &Path) -> Result<Channel, TransportError> {
        Ok(Channel {
            stream: UnixStream::connect(path)?,
        })
    }

    /// A connected pair, for lanes and tests.
    pub fn pair() -> Result<(Channel, Channel), TransportError> {
        let (a, b) = UnixStream::pair()?;
        Ok((Channel { stream: a }, Channel { stream: b }))
    }

    /// Wraps an already-connected socket, e.g. one inherited from the supervisor.
    pub fn from_fd(fd: OwnedFd) -> Channel {
        Channel {
            stream: UnixStream::from(fd),
        }
    }

    /// Gives up the socket.
    pub fn into_fd(self) -> OwnedFd {
        OwnedFd::from(self.stream)
    }

    /// The peer's process credentials (pid, uid, gid).
    pub fn peer_credentials(&self) -> Result<(u32, u32, u32), TransportError> {
        let c =
            rustix::net::sockopt::socket_peercred(&self.stream).map_err(std::io::Error::from)?;
        Ok((
            c.pid.as_raw_nonzero().get().unsigned_abs(),
            c.uid.as_raw(),
            c.gid.as_raw(),
        ))
    }

    /// Sends one byte carrying `fd` as `SCM_RIGHTS`.
    pub fn send_fd(&self, fd: BorrowedFd<'_>) -> Result<(), TransportError> {
        let fds = [fd];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut anc = SendAncillaryBuffer::new(&mut space);
        if !anc.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(TransportError::Io(std::io::Error::other(
                "ancillary buffer too small",
            )));
        }
        let sent = sendmsg(
            &self.stream,
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
        let mut byte = [0u8; 1];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut anc = RecvAncillaryBuffer::new(&mut space);
        let msg = recvmsg(
            &self.stream,
            &mut [IoSliceMut::new(&mut byte)],
            &mut anc,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(std::io::Error::from)?;
        if msg.bytes == 0 {
            return Err(TransportError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        let mut received = None;
        for m in anc.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = m {
                for fd in fds {
                    received.get_or_insert(fd);
                }
            }
        }
        received.ok_or(TransportError::NoFd)
    }
}

impl Read for Channel {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stream.read(buf)
    }
}

impl Write for Channel {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.write(buf)
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        self.stream.write_vectored(bufs)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl AsFd for Channel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

/// A listening Unix socket.
#[derive(Debug)]
pub struct Listener {
    inner: UnixListener,
}

impl Listener {
    /// Binds `path`, replacing a stale socket file left by a dead mediator.
    pub fn bind(path: &Path) -> Result<Listener, TransportError> {
        if path.exists() && UnixStream::connect(path).is_err() {
            std::fs::remove_file(path)?;
        }
        Ok(Listener {
            inner: UnixListener::bind(path)?,
        })
    }

    /// Accepts one connection.
    pub fn accept(&self) -> Result<Channel, TransportError> {
        let (stream, _) = self.inner.accept()?;
        Ok(Channel { stream })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_passing_round_trip() {
        let (a, b) = Channel::pair().expect("pair");
        let (mut x, y) = Channel::pair().expect("pair");
        a.send_fd(y.as_fd()).expect("send fd");
        let got = b.recv_fd().expect("recv fd");
        let mut y2 = Channel::from_fd(got);
        x.write_all(b"hello").expect("write");
        let mut buf = [0u8; 5];
        y2.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"hello");
    }

    #[test]
    fn address_parsing() {
        assert_eq!(
            "unix:/tmp/x".parse::<crate::Address>().expect("ok"),
            crate::Address::Unix("/tmp/x".into())
        );
        assert!("tcp:nope".parse::<crate::Address>().is_err());
        assert!("unix:".parse::<crate::Address>().is_err());
    }
}
