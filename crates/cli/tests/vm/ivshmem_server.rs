//! A minimal ivshmem server for the guest tests: what QEMU's
//! `ivshmem-doorbell` device connects to, speaking the protocol of QEMU's
//! `docs/specs/ivshmem-spec.rst`.
//!
//! The socket carries only server → client messages, each one
//! little-endian `i64`, some with one descriptor (`SCM_RIGHTS`). To each
//! client that connects, in this order:
//! 1. `0`, the protocol version, with no descriptor;
//! 2. the client's own peer id, with no descriptor;
//! 3. `-1` with the shared memory's descriptor (BAR2; its size is the
//!    file's size);
//! 4. for each other peer: its id once per vector, each time with that
//!    vector's eventfd (writing the doorbell `(id << 16) | vector` then
//!    signals that eventfd);
//! 5. the client's own id once per vector with its own eventfds (a peer
//!    that writes one of them interrupts the guest on that vector).
//!
//! This server has one other peer, the host ([`HOST_PEER`], id 0), whose
//! eventfds the test watches; guests get ids from 1. Guests are not told
//! about each other: here every guest talks to the host only.

use std::fs::File;
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags, Timespec};
use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

/// The host's peer id: the doorbell value `(HOST_PEER << 16) | vector`
/// signals the host.
pub const HOST_PEER: u16 = 0;

/// A guest that connected.
struct Peer {
    id: u16,
    /// Its own eventfds, one per vector.
    events: Vec<OwnedFd>,
    /// Kept open: QEMU treats a closed server socket as a dead server.
    _conn: UnixStream,
}

/// State shared with the accept thread.
struct Shared {
    shm: File,
    host_events: Vec<OwnedFd>,
    vectors: usize,
    peers: Mutex<Vec<Peer>>,
    stop: AtomicBool,
}

/// A running server; dropping it stops accepting (connected guests keep
/// what they were given).
pub struct IvshmemServer {
    socket: PathBuf,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl IvshmemServer {
    /// Listens on `socket` with `size` bytes of shared memory (a memfd;
    /// a power of two, as a PCI BAR must be) and `vectors` vectors.
    pub fn start(socket: &Path, size: u64, vectors: usize) -> IvshmemServer {
        // QEMU 7.2 aborts (an assertion in pci_register_bar) on any other
        // BAR2 size.
        assert!(
            size.is_power_of_two(),
            "BAR2 size {size} is not a power of two"
        );
        let shm = rustix::fs::memfd_create(c"vgpu-test-ivshmem", rustix::fs::MemfdFlags::CLOEXEC)
            .expect("memfd_create");
        rustix::fs::ftruncate(&shm, size).expect("size the shared memory");
        let host_events = (0..vectors).map(|_| new_eventfd()).collect();
        let shared = Arc::new(Shared {
            shm: File::from(shm),
            host_events,
            vectors,
            peers: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let listener = UnixListener::bind(socket).expect("bind the ivshmem socket");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let s = shared.clone();
        let accept = thread::spawn(move || accept_loop(&listener, &s));
        IvshmemServer {
            socket: socket.to_owned(),
            shared,
            accept: Some(accept),
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The shared memory (read and write it with `FileExt::{read_at,
    /// write_at}`).
    pub fn shm(&self) -> &File {
        &self.shared.shm
    }

    /// The ids given to the guests that connected, in order.
    pub fn guest_ids(&self) -> Vec<u16> {
        let peers = self.shared.peers.lock().expect("peers lock");
        peers.iter().map(|p| p.id).collect()
    }

    /// Waits until a guest rings the host's `vector`; returns the eventfd's
    /// count (the doorbell writes since the last wait), or `None` after
    /// `timeout`.
    pub fn wait_doorbell(&self, vector: usize, timeout: Duration) -> Option<u64> {
        let fd = self.shared.host_events[vector].as_fd();
        let ts = Timespec::try_from(timeout).expect("timeout fits a timespec");
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(&ts)) {
            Ok(1) => {
                let mut count = [0u8; 8];
                rustix::io::read(fd, &mut count).expect("read the eventfd");
                Some(u64::from_ne_bytes(count))
            }
            _ => None,
        }
    }

    /// Waits until guest `id` has closed its connection (QEMU exited or
    /// was killed): true when it has, false after `timeout`. QEMU never
    /// writes to the server, so a readable socket means end of file.
    pub fn wait_gone(&self, id: u16, timeout: Duration) -> bool {
        let conn = {
            let peers = self.shared.peers.lock().expect("peers lock");
            let peer = peers
                .iter()
                .find(|p| p.id == id)
                .expect("a connected guest");
            peer._conn.try_clone().expect("clone the guest's socket")
        };
        let ts = Timespec::try_from(timeout).expect("timeout fits a timespec");
        let mut fds = [PollFd::new(&conn, PollFlags::IN | PollFlags::HUP)];
        if poll(&mut fds, Some(&ts)) != Ok(1) {
            return false;
        }
        let mut byte = [0u8; 1];
        matches!(rustix::io::read(&conn, &mut byte), Ok(0))
    }

    /// Interrupts guest `id` on `vector` (QEMU delivers it as MSI-X, or as
    /// INTx with `msi=off`, when the guest has enabled it).
    pub fn ring_guest(&self, id: u16, vector: usize) {
        let peers = self.shared.peers.lock().expect("peers lock");
        let peer = peers
            .iter()
            .find(|p| p.id == id)
            .expect("a connected guest");
        rustix::io::write(&peer.events[vector], &1u64.to_ne_bytes()).expect("write the eventfd");
    }
}

impl Drop for IvshmemServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn new_eventfd() -> OwnedFd {
    eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).expect("eventfd")
}

fn accept_loop(listener: &UnixListener, shared: &Shared) {
    let mut next_id: u16 = HOST_PEER + 1;
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, _)) => {
                let peer = Peer {
                    id: next_id,
                    events: (0..shared.vectors).map(|_| new_eventfd()).collect(),
                    _conn: conn,
                };
                next_id += 1;
                if let Err(e) = greet(shared, &peer) {
                    eprintln!("ivshmem test server: peer {}: {e}", peer.id);
                }
                shared.peers.lock().expect("peers lock").push(peer);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("accept on the ivshmem socket: {e}"),
        }
    }
}

/// Sends a new client its set-up messages (steps 1 to 5 of the module
/// header).
fn greet(shared: &Shared, peer: &Peer) -> std::io::Result<()> {
    let conn = &peer._conn;
    send(conn, 0, None)?;
    send(conn, i64::from(peer.id), None)?;
    send(conn, -1, Some(shared.shm.as_fd()))?;
    for fd in &shared.host_events {
        send(conn, i64::from(HOST_PEER), Some(fd.as_fd()))?;
    }
    for fd in &peer.events {
        send(conn, i64::from(peer.id), Some(fd.as_fd()))?;
    }
    Ok(())
}

/// One message: `value` as 8 little-endian bytes, with `fd` attached.
fn send(conn: &UnixStream, value: i64, fd: Option<BorrowedFd<'_>>) -> std::io::Result<()> {
    let bytes = value.to_le_bytes();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = SendAncillaryBuffer::new(&mut space);
    let fds: Vec<BorrowedFd<'_>> = fd.into_iter().collect();
    if !fds.is_empty() {
        assert!(
            anc.push(SendAncillaryMessage::ScmRights(&fds)),
            "room for one descriptor"
        );
    }
    let sent = sendmsg(conn, &[IoSlice::new(&bytes)], &mut anc, SendFlags::NOSIGNAL)?;
    if sent != bytes.len() {
        return Err(std::io::ErrorKind::WriteZero.into());
    }
    Ok(())
}
