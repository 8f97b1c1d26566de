//! The reading side of a socket lane: a [`Channel`] whose Unix reads keep
//! the descriptors that come with their bytes, so that a buffer in front of
//! it ([`super::LaneSocket`]) may read past a frame without losing the
//! descriptor passed after it.
//!
//! The kernel ends a read of a Unix stream socket right after the byte
//! that carries descriptors (`SCM_RIGHTS`), so each descriptor arrives with
//! the last byte of its read. [`SocketIn`] counts the bytes read and tags
//! each descriptor with its byte's position; [`SocketIn::take_fd`] hands
//! over the descriptor of the byte at a position, once the lane has read
//! that byte from its buffer. A descriptor whose byte was read as anything
//! else is closed: the peer passed it where none was expected.

use std::collections::VecDeque;
use std::io::{IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;

use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};

use crate::unix::MAX_FDS;
use crate::{Channel, TransportError};

/// A lane's channel, read with descriptors kept (module documentation).
#[derive(Debug)]
pub struct SocketIn {
    ch: Channel,
    /// Bytes read from the channel so far.
    read: u64,
    /// Descriptors received and not yet taken, by the position of the byte
    /// they came with.
    fds: VecDeque<(u64, OwnedFd)>,
}

impl SocketIn {
    pub fn new(ch: Channel) -> SocketIn {
        SocketIn {
            ch,
            read: 0,
            fds: VecDeque::new(),
        }
    }

    /// The channel.
    pub fn channel(&self) -> &Channel {
        &self.ch
    }

    /// The channel, for writing.
    pub fn channel_mut(&mut self) -> &mut Channel {
        &mut self.ch
    }

    /// The channel, let go of.
    pub fn into_channel(self) -> Channel {
        self.ch
    }

    /// Bytes read from the channel so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The descriptor that came with the byte at position `at`; those of
    /// earlier bytes are closed. [`TransportError::NoFd`] if none came.
    pub fn take_fd(&mut self, at: u64) -> Result<OwnedFd, TransportError> {
        while let Some((pos, _)) = self.fds.front() {
            if *pos >= at {
                break;
            }
            self.fds.pop_front();
        }
        match self.fds.front() {
            Some((pos, _)) if *pos == at => self
                .fds
                .pop_front()
                .map(|(_, fd)| fd)
                .ok_or(TransportError::NoFd),
            _ => Err(TransportError::NoFd),
        }
    }
}

impl Read for SocketIn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = match self.ch.unix_fd() {
            Some(fd) => {
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
                let mut anc = RecvAncillaryBuffer::new(&mut space);
                let msg = recvmsg(
                    fd,
                    &mut [IoSliceMut::new(buf)],
                    &mut anc,
                    RecvFlags::CMSG_CLOEXEC,
                )?;
                let last = (self.read + msg.bytes as u64).saturating_sub(1);
                for m in anc.drain() {
                    if let RecvAncillaryMessage::ScmRights(fds) = m {
                        self.fds.extend(fds.map(|fd| (last, fd)));
                    }
                }
                msg.bytes
            }
            None => self.ch.read(buf)?,
        };
        self.read += n as u64;
        Ok(n)
    }
}
