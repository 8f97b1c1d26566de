//! QEMU's ivshmem-server protocol (QEMU `docs/specs/ivshmem-spec.rst`), both
//! ends: the mediator's ([`send_setup`]) and a peer's ([`receive_setup`]),
//! which [`FakeQemu`] uses to stand in for QEMU in tests and benchmarks.
//!
//! On connect the server sends, each as one little-endian `i64` message of
//! 8 bytes, some with one descriptor (`SCM_RIGHTS`):
//! 1. the protocol version, 0;
//! 2. the new peer's own id;
//! 3. -1, with the shared memory's descriptor;
//! 4. for every other peer, for every vector: the peer's id, with the
//!    eventfd that interrupts that peer's vector;
//! 5. for each of the new peer's own vectors: its own id, with the eventfd
//!    on which it is interrupted.
//!
//! A peer's disconnection would be announced to the others as its id with
//! no descriptor; in vgpu each guest is alone with the mediator, so no such
//! message is ever sent.

use std::collections::BTreeMap;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use super::{regs, SharedMem};
use crate::TransportError;

/// The protocol version this end speaks.
pub const PROTOCOL_VERSION: i64 = 0;
/// Most vectors either end deals with.
pub const MAX_VECTORS: usize = 64;

/// Sends one message: `value`, with `fd` if given.
fn send(sock: &UnixStream, value: i64, fd: Option<BorrowedFd<'_>>) -> Result<(), TransportError> {
    let bytes = value.to_le_bytes();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = SendAncillaryBuffer::new(&mut space);
    let fds;
    if let Some(fd) = fd {
        fds = [fd];
        if !anc.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(TransportError::Io(std::io::Error::other(
                "ancillary buffer",
            )));
        }
    }
    let n = sendmsg(sock, &[IoSlice::new(&bytes)], &mut anc, SendFlags::NOSIGNAL)
        .map_err(std::io::Error::from)?;
    if n != bytes.len() {
        return Err(TransportError::Io(std::io::ErrorKind::WriteZero.into()));
    }
    Ok(())
}

/// Receives one message: its value and descriptor, if any.
fn receive(sock: &UnixStream) -> Result<(i64, Option<OwnedFd>), TransportError> {
    let mut bytes = [0u8; 8];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = RecvAncillaryBuffer::new(&mut space);
    let msg = recvmsg(
        sock,
        &mut [IoSliceMut::new(&mut bytes)],
        &mut anc,
        RecvFlags::CMSG_CLOEXEC | RecvFlags::WAITALL,
    )
    .map_err(std::io::Error::from)?;
    if msg.bytes != bytes.len() {
        return Err(TransportError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    let mut fd = None;
    for m in anc.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = m {
            for f in fds {
                if fd.is_none() {
                    fd = Some(f);
                }
            }
        }
    }
    Ok((i64::from_le_bytes(bytes), fd))
}

/// The server's side: sends a new peer `own_id` its setup. `host_peer` and
/// `host_vectors` are the one other peer (the mediator) and its eventfds;
/// `own_vectors` the new peer's.
pub fn send_setup(
    sock: &UnixStream,
    own_id: u16,
    shm: BorrowedFd<'_>,
    host_peer: u16,
    host_vectors: &[OwnedFd],
    own_vectors: &[OwnedFd],
) -> Result<(), TransportError> {
    send(sock, PROTOCOL_VERSION, None)?;
    send(sock, own_id.into(), None)?;
    send(sock, -1, Some(shm))?;
    for fd in host_vectors {
        send(sock, host_peer.into(), Some(fd.as_fd()))?;
    }
    for fd in own_vectors {
        send(sock, own_id.into(), Some(fd.as_fd()))?;
    }
    Ok(())
}

/// What a peer receives on connecting.
#[derive(Debug)]
pub struct Setup {
    pub own_id: u16,
    pub shm: OwnedFd,
    /// Every other peer's eventfds, by vector.
    pub peers: BTreeMap<u16, Vec<OwnedFd>>,
    /// This peer's own eventfds.
    pub own: Vec<OwnedFd>,
}

/// The peer's side: reads a setup, up to and including `vectors` own
/// eventfds. Any message out of the protocol is an error.
pub fn receive_setup(sock: &UnixStream, vectors: usize) -> Result<Setup, TransportError> {
    let bad =
        |what: &str| TransportError::Io(std::io::Error::other(format!("ivshmem server: {what}")));
    if receive(sock)?.0 != PROTOCOL_VERSION {
        return Err(bad("unsupported protocol version"));
    }
    let own_id = u16::try_from(receive(sock)?.0).map_err(|_| bad("peer id out of range"))?;
    let (minus_one, shm) = receive(sock)?;
    let shm = shm
        .filter(|_| minus_one == -1)
        .ok_or_else(|| bad("no shared memory"))?;
    let mut setup = Setup {
        own_id,
        shm,
        peers: BTreeMap::new(),
        own: Vec::new(),
    };
    while setup.own.len() < vectors.min(MAX_VECTORS) {
        let (id, fd) = receive(sock)?;
        let id = u16::try_from(id).map_err(|_| bad("peer id out of range"))?;
        let fd = fd.ok_or_else(|| bad("a peer left during set-up"))?;
        if id == own_id {
            setup.own.push(fd);
        } else {
            let v = setup.peers.entry(id).or_default();
            if v.len() >= MAX_VECTORS {
                return Err(bad("too many vectors"));
            }
            v.push(fd);
        }
    }
    Ok(setup)
}

/// Writes 1 to an eventfd (an interrupt).
pub fn signal(fd: BorrowedFd<'_>) {
    let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
}

/// The doorbell register's idle value in a [`FakeQemu`] BAR0 file: no
/// real doorbell value has peer 0xffff and vector 0xffff.
const IDLE: u32 = u32::MAX;

/// A stand-in for QEMU and its guest's sysfs, for tests and benchmarks on
/// a host without VMs: it connects to `--listen ivshmem:PATH` as QEMU does,
/// then lays out `<root>/bus/pci/devices/<bdf>/` with the ivshmem ids,
/// `resource2` (a link to the shared memfd, which a client maps as the
/// guest maps BAR2) and `resource0` (a 4 KiB file standing for the
/// registers: `IVPosition` holds the peer id, and a thread forwards each
/// write of `Doorbell` to the eventfd it names, as QEMU does).
///
/// A client in this process tree, given `VGPU_SYSFS_ROOT=<root>`, then
/// reaches the mediator exactly as a guest process would. Dropping it (or
/// [`FakeQemu::kill`]) closes the connection: the mediator frees the guest.
pub struct FakeQemu {
    sock: Option<UnixStream>,
    stop: Arc<AtomicBool>,
    forwarder: Option<std::thread::JoinHandle<()>>,
    dir: PathBuf,
    pub setup_id: u16,
    pub shm_len: usize,
}

impl FakeQemu {
    /// Connects to the mediator's ivshmem socket and lays out the device
    /// `bdf` (sysfs form, e.g. `0000:00:05.0`) under `root`.
    pub fn start(
        socket: &Path,
        root: &Path,
        bdf: &str,
        vectors: usize,
    ) -> Result<FakeQemu, TransportError> {
        let sock = UnixStream::connect(socket)?;
        let setup = receive_setup(&sock, vectors)?;
        let shm_len = usize::try_from(
            rustix::fs::fstat(&setup.shm)
                .map_err(std::io::Error::from)?
                .st_size,
        )
        .map_err(|_| TransportError::Corrupt("shared memory size"))?;
        let dir = root.join("bus/pci/devices").join(bdf);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("vendor"), "0x1af4\n")?;
        std::fs::write(dir.join("device"), "0x1110\n")?;
        std::fs::write(dir.join("class"), "0x050000\n")?;
        let link = dir.join("resource2");
        let _ = std::fs::remove_file(&link);
        let raw = std::os::fd::AsRawFd::as_raw_fd(&setup.shm);
        std::os::unix::fs::symlink(format!("/proc/{}/fd/{raw}", std::process::id()), &link)?;
        let bar0 = dir.join("resource0");
        std::fs::write(&bar0, vec![0u8; regs::MAP_LEN])?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&bar0)?;
        let regs_mem = SharedMem::map(file.as_fd(), regs::MAP_LEN)?;
        let pos = regs_mem
            .u32_at(regs::IV_POSITION)
            .ok_or(TransportError::Corrupt("BAR0"))?;
        pos.store(u32::from(setup.own_id), Ordering::Release);
        let bell = regs_mem
            .u32_at(regs::DOORBELL)
            .ok_or(TransportError::Corrupt("BAR0"))?;
        bell.store(IDLE, Ordering::Release);
        let stop = Arc::new(AtomicBool::new(false));
        let own_id = setup.own_id;
        let forwarder = {
            let stop = Arc::clone(&stop);
            let peers = setup.peers;
            let shm = setup.shm;
            std::thread::Builder::new()
                .name("fake-qemu".into())
                .spawn(move || forward(&regs_mem, &peers, &stop, shm))?
        };
        Ok(FakeQemu {
            sock: Some(sock),
            stop,
            forwarder: Some(forwarder),
            dir,
            setup_id: own_id,
            shm_len,
        })
    }

    /// The device's sysfs folder.
    pub fn device_dir(&self) -> &Path {
        &self.dir
    }

    /// Stops forwarding and closes the connection, as a killed QEMU does.
    pub fn kill(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.forwarder.take() {
            let _ = t.join();
        }
        self.sock = None;
        let _ = std::fs::remove_file(self.dir.join("resource2"));
    }
}

impl Drop for FakeQemu {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls the doorbell word and signals the eventfd each write names
/// (swapping the idle value in, so no write between two polls is lost; two
/// writes may merge into one signal, as two eventfd writes do). Holds the
/// shared memory's descriptor so that `resource2` stays valid.
fn forward(
    regs: &SharedMem,
    peers: &BTreeMap<u16, Vec<OwnedFd>>,
    stop: &AtomicBool,
    _shm: OwnedFd,
) {
    let Some(bell): Option<&AtomicU32> = regs.u32_at(regs::DOORBELL) else {
        return;
    };
    while !stop.load(Ordering::Acquire) {
        let v = bell.swap(IDLE, Ordering::AcqRel);
        if v == IDLE {
            std::thread::sleep(Duration::from_micros(20));
            continue;
        }
        let (peer, vector) = super::parse_doorbell(v);
        if let Some(fd) = peers.get(&peer).and_then(|v| v.get(usize::from(vector))) {
            signal(fd.as_fd());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_round_trips_over_a_socket_pair() {
        let (a, b) = UnixStream::pair().expect("pair");
        let shm = rustix::fs::memfd_create("t", rustix::fs::MemfdFlags::CLOEXEC).expect("memfd");
        let ev =
            || rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).expect("eventfd");
        let host = vec![ev(), ev()];
        let own = vec![ev(), ev()];
        send_setup(&a, 1, shm.as_fd(), 0, &host, &own).expect("sent");
        let s = receive_setup(&b, 2).expect("received");
        assert_eq!(s.own_id, 1);
        assert_eq!(s.peers.get(&0).map(Vec::len), Some(2));
        assert_eq!(s.own.len(), 2);
    }

    #[test]
    fn a_setup_without_shared_memory_is_refused() {
        let (a, b) = UnixStream::pair().expect("pair");
        send(&a, 0, None).expect("v");
        send(&a, 1, None).expect("id");
        send(&a, -1, None).expect("no fd");
        assert!(receive_setup(&b, 1).is_err());
    }
}
