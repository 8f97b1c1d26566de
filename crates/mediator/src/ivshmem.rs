//! The host's side of the ivshmem transport (`--listen ivshmem:PATH`):
//! QEMU's `ivshmem-doorbell` devices connect here, as they would to QEMU's
//! own `ivshmem-server` (`vgpu_transport::ivshmem` documents the layout
//! and the protocol).
//!
//! Each connection is one guest, served by a thread of its own:
//! - it creates the guest's shared memory (a memfd of `--ivshmem-mib`,
//!   sealed against resizing), writes the device header, and sends the
//!   set-up: the guest's peer id (1), the memfd, the eventfd of the host's
//!   peer (id 0, one vector) and the guest's own eventfd. Every guest has
//!   a memory of its own, so no guest can see another's;
//! - it waits on the host's eventfd (the guest rang the doorbell), on the
//!   connection (QEMU went away) and on each worker's lifeline, and every
//!   100 ms regardless; each time it reads the region table, starts a
//!   worker for each newly claimed region (at most one per 20 ms, so a
//!   guest cannot make the host fork in a loop) and wakes the sleeping host
//!   ends of the regions it serves;
//! - a worker inherits the memfd and one end of a socket pair, its
//!   lifeline: the worker ends its session when the lifeline hangs up, and
//!   this thread learns of the worker's end when it does. Only then does it
//!   free the region (a draining one, or one whose worker failed, which
//!   ends the session of the guest process that held it), so a region is
//!   never laid out afresh while an old worker still reads it;
//! - when QEMU disconnects, the thread drops every lifeline and the memfd:
//!   the workers exit and the memory goes with the last of them.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rustix::event::{poll, PollFd, PollFlags};
use rustix::fs::{MemfdFlags, SealFlags};
use vgpu_transport::ivshmem::{self, server, Action, Layout};
use vgpu_transport::shm_ring::SharedMem;
use vgpu_transport::TransportError;

use crate::census::Census;
use crate::config::ServeArgs;

/// The host's peer id in every guest's ivshmem world.
pub const HOST_PEER: u16 = 0;
/// The guest's peer id.
pub const GUEST_PEER: u16 = 1;
/// Vectors the host's peer listens on.
pub const VECTORS: u16 = 1;
/// How often the table is read even without a doorbell.
const TICK: Duration = Duration::from_millis(100);
/// Least time between two workers started for one guest: a guest that
/// claims and drops regions in a loop gets at most 50 workers a second
/// (how many run at once is bounded by its regions).
const SPAWN_GAP: Duration = Duration::from_millis(20);

/// Binds the socket QEMU connects to (replacing a stale one), as every
/// listener is bound: it appears at `path` only once it listens.
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    vgpu_transport::Listener::bind(path)
        .map_err(|e| std::io::Error::other(e.to_string()))?
        .into_unix()
        .ok_or_else(|| std::io::Error::other("not a Unix socket"))
}

/// Accepts guests for ever, one thread each.
pub fn serve(listener: &UnixListener, args: &ServeArgs, exe: &Path, census: &Arc<Census>) {
    for conn in listener.incoming() {
        let conn = match conn {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("ivshmem accept failed: {e}");
                std::thread::sleep(TICK);
                continue;
            }
        };
        let (args, exe, census) = (args.clone(), exe.to_owned(), Arc::clone(census));
        let spawned = std::thread::Builder::new()
            .name("ivshmem-guest".into())
            .spawn(move || match Guest::connect(conn, &args) {
                Ok(g) => g.run(&args, &exe, &census),
                Err(e) => tracing::warn!("ivshmem guest refused: {e}"),
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start an ivshmem guest thread: {e}");
        }
    }
}

/// One connected guest.
struct Guest {
    conn: UnixStream,
    memfd: OwnedFd,
    mem: Arc<SharedMem>,
    layout: Layout,
    /// The host peer's eventfd (the guest's doorbell lands here).
    bell: OwnedFd,
    /// The guest's own eventfd, kept so QEMU's end stays valid.
    _own: OwnedFd,
    /// Per region: the owner word its worker serves, and the lifeline.
    served: Vec<Option<(u64, UnixStream)>>,
    /// When the last worker was started ([`SPAWN_GAP`]).
    last_start: Option<std::time::Instant>,
}

fn eventfd() -> Result<OwnedFd, TransportError> {
    use rustix::event::EventfdFlags;
    Ok(
        rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .map_err(std::io::Error::from)?,
    )
}

/// The layout of a guest's shared memory of `size` bytes, as the mediator
/// lays it out and each of the guest's workers checks it.
pub fn layout(size: usize) -> Result<Layout, ivshmem::LayoutError> {
    Layout::for_size(
        size,
        ivshmem::DEFAULT_SLOTS,
        ivshmem::DEFAULT_RING,
        HOST_PEER,
        VECTORS,
    )
}

impl Guest {
    fn connect(conn: UnixStream, args: &ServeArgs) -> Result<Guest, TransportError> {
        let size = args.ivshmem_mib << 20;
        let layout =
            layout(size).map_err(|e| TransportError::Io(std::io::Error::other(e.to_string())))?;
        let io = std::io::Error::from;
        let memfd = rustix::fs::memfd_create(
            "vgpu-ivshmem",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )
        .map_err(io)?;
        rustix::fs::ftruncate(&memfd, size as u64).map_err(io)?;
        rustix::fs::fcntl_add_seals(
            &memfd,
            SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL,
        )
        .map_err(io)?;
        let mem = SharedMem::map(memfd.as_fd(), size)?;
        if !mem.write(0, &layout.header()) {
            return Err(TransportError::Corrupt("device header"));
        }
        let (bell, own) = (eventfd()?, eventfd()?);
        let bells = [bell];
        let owns = [own];
        server::send_setup(&conn, GUEST_PEER, memfd.as_fd(), HOST_PEER, &bells, &owns)?;
        let [bell] = bells;
        let [own] = owns;
        tracing::info!(
            regions = layout.regions,
            lanes = layout.slots - 1,
            mib = args.ivshmem_mib,
            "ivshmem guest connected"
        );
        Ok(Guest {
            conn,
            memfd,
            mem,
            served: (0..layout.regions).map(|_| None).collect(),
            layout,
            bell,
            _own: own,
            last_start: None,
        })
    }

    /// Serves the guest until QEMU disconnects.
    fn run(mut self, args: &ServeArgs, exe: &Path, census: &Census) {
        let mut deferred = false;
        loop {
            let (gone, rang, ended) = self.wait(if deferred { SPAWN_GAP } else { TICK });
            deferred = false;
            if gone {
                break;
            }
            for r in ended {
                if let Some((word, _)) = self.served[r].take() {
                    // A worker that ended on its own (the word is still its
                    // own) leaves the region free and its guest process's
                    // session over; a draining word is freed below.
                    ivshmem::free_region(&self.mem, r, word);
                    tracing::info!(region = r, "ivshmem session ended");
                }
            }
            if rang {
                let mut buf = [0u8; 8];
                let _ = rustix::io::read(&self.bell, &mut buf);
            }
            for r in 0..self.layout.regions {
                let word =
                    ivshmem::owner_word(&self.mem, r).map_or(0, |w| w.load(Ordering::Acquire));
                match ivshmem::action(word, self.served[r].as_ref().map(|s| s.0)) {
                    Action::Serve(w) if self.may_start() => self.start(r, w, args, exe, census),
                    // Too soon: the next round, SPAWN_GAP from now, starts it.
                    Action::Serve(_) => deferred = true,
                    Action::Free(w) => {
                        ivshmem::free_region(&self.mem, r, w);
                    }
                    Action::End | Action::Keep if self.served[r].is_some() && rang => self.wake(r),
                    Action::End | Action::Keep => {}
                }
            }
        }
        tracing::info!("ivshmem guest disconnected; its sessions end");
    }

    /// Waits for the doorbell, QEMU's hang-up or a worker's end, at most
    /// `timeout` (under a second): (QEMU gone, doorbell rang, regions whose
    /// worker ended).
    fn wait(&self, timeout: Duration) -> (bool, bool, Vec<usize>) {
        let live: Vec<usize> = (0..self.served.len())
            .filter(|r| self.served[*r].is_some())
            .collect();
        let mut fds = vec![
            PollFd::new(&self.conn, PollFlags::IN | PollFlags::RDHUP),
            PollFd::new(&self.bell, PollFlags::IN),
        ];
        for r in &live {
            if let Some((_, l)) = &self.served[*r] {
                fds.push(PollFd::new(l, PollFlags::RDHUP));
            }
        }
        let tick = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        if poll(&mut fds, Some(&tick)).is_err() {
            return (false, false, Vec::new());
        }
        let hup = PollFlags::HUP | PollFlags::RDHUP | PollFlags::ERR | PollFlags::NVAL;
        // QEMU never writes after connecting: anything readable is the end.
        let gone = !fds[0].revents().is_empty();
        let rang = fds[1].revents().contains(PollFlags::IN);
        let ended = live
            .iter()
            .zip(&fds[2..])
            .filter(|(_, f)| f.revents().intersects(hup))
            .map(|(r, _)| *r)
            .collect();
        (gone, rang, ended)
    }

    /// Whether [`SPAWN_GAP`] has passed since the last worker started.
    fn may_start(&self) -> bool {
        self.last_start.is_none_or(|t| t.elapsed() >= SPAWN_GAP)
    }

    /// Starts the worker of region `r`, claimed with `word`.
    /// The worker gets a slot of the session table as local ones do; with
    /// none free, the region is freed and the guest's `cuInit` fails.
    fn start(&mut self, r: usize, word: u64, args: &ServeArgs, exe: &Path, census: &Census) {
        self.last_start = Some(std::time::Instant::now());
        let Some(reservation) = census.reserve_within(args.limits.worker_limit()) else {
            tracing::error!(
                region = r,
                "refusing a guest session: no session slot is free (or --max-workers are live)"
            );
            ivshmem::free_region(&self.mem, r, word);
            return;
        };
        let slot = reservation.slot;
        let started = (|| -> Result<(u32, UnixStream), crate::MediatorError> {
            let (ours, theirs) = UnixStream::pair()?;
            let mem = self.memfd.as_fd().try_clone_to_owned()?;
            let theirs = OwnedFd::from(theirs);
            let extra = [
                "--region".to_owned(),
                format!("{r}:{word}:{}", theirs.as_raw_fd()),
            ];
            let inherit = vec![mem, theirs];
            let pid = crate::spawn::spawn(
                exe,
                args,
                inherit,
                &extra,
                &[],
                (Some(slot), crate::privilege::worker(None)),
            )?;
            Ok((pid, ours))
        })();
        match started {
            Ok((pid, lifeline)) => {
                reservation.started(pid);
                tracing::info!(worker = pid, region = r, "ivshmem session accepted");
                self.served[r] = Some((word, lifeline));
            }
            Err(e) => {
                reservation.failed();
                tracing::error!(region = r, "could not start a worker: {e}");
                ivshmem::free_region(&self.mem, r, word);
            }
        }
    }

    /// Wakes the host ends of region `r`'s rings that sleep.
    fn wake(&self, r: usize) {
        for s in 0..self.layout.slots {
            if let Some(up) = self.layout.ring_offset(r, s, true) {
                self.mem.wake_ring(up, true);
            }
            if let Some(down) = self.layout.ring_offset(r, s, false) {
                self.mem.wake_ring(down, false);
            }
        }
    }
}
