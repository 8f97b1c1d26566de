//! Sessions of processes in a VM guest (`--listen ivshmem:`): the control
//! stream and the lanes are byte streams over rings in the session's
//! region of the guest's shared memory (`vgpu_transport::ivshmem`).
//!
//! The worker inherits the guest's memfd and its lifeline (their numbers
//! are in `--fd` and `--region`), and is told its region and the owner word
//! it serves. It maps the memory, binds the host ends of the control
//! slot's rings (which the guest laid out before publishing its claim;
//! their headers are checked against the host's own layout), and runs the
//! session as a remote one: nothing but bytes crosses (no descriptors, no
//! shared pinned memory).
//!
//! Lanes: for each `OpenLane` the worker takes a free slot of the region,
//! lays its two rings out afresh, binds its ends, starts the lane thread
//! and answers `lane_kind::IVSHMEM` with the slot; the client binds the
//! other ends. The slot is free again once the lane thread has closed its
//! ends. No free slot within 250 ms (a lane whose thread just ended frees
//! its slot a moment later): the reply is `CUDA_ERROR_OUT_OF_MEMORY`, and
//! the client thread's call fails with it.
//!
//! The session ends when the owner word changes (the guest process
//! released the region, or another reclaimed it from a dead owner) or the
//! lifeline hangs up (QEMU went away): every stream's waits check both
//! every 100 ms.

use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vgpu_proto::{lane_kind, open_lane, write_response};
use vgpu_transport::ivshmem::stream::ShmStream;
use vgpu_transport::ivshmem::{self, Layout};
use vgpu_transport::shm_ring::{Ring, SharedMem};
use vgpu_transport::{Channel, TransportError, WaitPolicy};
use zerocopy::little_endian::U16;
use zerocopy::IntoBytes;

use super::status;
use super::Session;
use crate::MediatorError;

/// How often a waiting stream checks that the session still stands.
const CHECK: Duration = Duration::from_millis(100);
/// How long a waiting stream polls with yields before it sleeps.
const YIELD: Duration = Duration::from_millis(2);
/// How long `OpenLane` waits for a slot when all are taken.
const SLOT_WAIT: Duration = Duration::from_millis(250);

/// A guest session's region, as the worker holds it.
pub struct VmRegion {
    mem: Arc<SharedMem>,
    layout: Layout,
    region: usize,
    word: u64,
    lifeline: Arc<OwnedFd>,
    /// Lane slots in use (slot 0, the control stream, always is).
    busy: Arc<Mutex<Vec<bool>>>,
    /// The guest's shared memory's inode: every session of one guest has
    /// the same, and no other guest's memory has it while the guest lives.
    guest: u64,
}

impl VmRegion {
    /// Takes the inherited memfd `fd` and the `REGION:WORD:LIFELINE` the
    /// supervisor passed; returns the region and its control channel.
    pub fn open(fd: i32, spec: &str) -> Result<(VmRegion, Channel), MediatorError> {
        let bad = || MediatorError::Config(format!("--region {spec:?}: expected REGION:WORD:FD"));
        let mut parts = spec.split(':');
        let region: usize = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let word: u64 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let life: i32 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        if fd < 3 || life < 3 || fd == life {
            return Err(bad());
        }
        // SAFETY: the supervisor started this process with both descriptors
        // open, inherited for exactly this purpose; nothing else owns them.
        let (memfd, lifeline) = unsafe { (OwnedFd::from_raw_fd(fd), OwnedFd::from_raw_fd(life)) };
        // Whatever this worker starts (the driver's helpers, `ldconfig`)
        // must not inherit the guest's memory, nor keep the lifeline open
        // after the worker ends (the region would never be freed).
        for d in [&memfd, &lifeline] {
            rustix::io::fcntl_setfd(d, rustix::io::FdFlags::CLOEXEC)
                .map_err(std::io::Error::from)?;
        }
        let stat = rustix::fs::fstat(&memfd).map_err(std::io::Error::from)?;
        let size = stat.st_size;
        let size = usize::try_from(size).map_err(|_| bad())?;
        let layout =
            crate::ivshmem::layout(size).map_err(|e| MediatorError::Config(e.to_string()))?;
        if region >= layout.regions {
            return Err(bad());
        }
        let mem = SharedMem::map(memfd.as_fd(), size)?;
        let mut busy = vec![false; layout.slots];
        busy[0] = true;
        let vm = VmRegion {
            mem,
            layout,
            region,
            word,
            lifeline: Arc::new(lifeline),
            busy: Arc::new(Mutex::new(busy)),
            guest: stat.st_ino,
        };
        let control = vm.stream(0, false)?;
        Ok((vm, Channel::from_shm(control)))
    }

    /// Names the guest this session comes from ([`crate::sessions::Slot::guest`]).
    pub fn guest(&self) -> u64 {
        self.guest
    }

    /// Whether the session still stands (see the module documentation).
    fn alive(&self) -> impl Fn() -> bool + Send + 'static {
        let (mem, r, word, life) = (
            Arc::clone(&self.mem),
            self.region,
            self.word,
            Arc::clone(&self.lifeline),
        );
        move || {
            ivshmem::owner_word(&mem, r).is_some_and(|w| w.load(Ordering::Acquire) == word)
                // A plain descriptor: a lifeline is shared by the region's
                // streams across threads, which a `Channel` cannot be.
                && !vgpu_transport::unix::socket_hung_up(life.as_fd())
        }
    }

    /// The host's stream of slot `s`: rings laid out afresh (`fresh`, a
    /// lane) or as the guest laid them out (the control slot).
    fn stream(&self, s: usize, fresh: bool) -> Result<ShmStream, TransportError> {
        let l = &self.layout;
        let (Some(up), Some(down)) = (
            l.ring_offset(self.region, s, true),
            l.ring_offset(self.region, s, false),
        ) else {
            return Err(TransportError::Corrupt("slot outside the region"));
        };
        let (inp, out) = if fresh {
            (
                Ring::init_at(&self.mem, up, l.ring_capacity, None)?,
                Ring::init_at(&self.mem, down, l.ring_capacity, None)?,
            )
        } else {
            (
                Ring::attach_at(&self.mem, up, l.ring_capacity, None)?,
                Ring::attach_at(&self.mem, down, l.ring_capacity, None)?,
            )
        };
        // A guest wakes a sleeping host end only through its doorbell, a
        // trip through QEMU and the supervisor: poll with yields first, for
        // data and for space alike, as the client does for replies, so
        // that a stream of messages (a copy's pieces) rarely sleeps.
        let policy = WaitPolicy {
            spin: WaitPolicy::DEFAULT_SPIN,
            yield_for: YIELD,
            timeout: Some(CHECK),
        };
        Ok(ShmStream::new(
            out.into_producer()?,
            inp.into_consumer()?,
            policy,
            Box::new(self.alive()),
        )
        .poll_for_space())
    }

    /// Answers the `OpenLane` request `seq` with a lane in a free slot.
    /// `false`: the control stream failed.
    pub fn open_lane(&self, session: &Arc<Session>, control: &mut Channel, seq: u32) -> bool {
        // A thread that just ended may not have handed its slot back yet
        // (its lane thread notices the closed rings a moment later): wait
        // a little for one before refusing.
        let deadline = std::time::Instant::now() + SLOT_WAIT;
        let slot = loop {
            let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(s) = busy.iter().position(|b| !b) {
                busy[s] = true;
                break Some(s);
            }
            drop(busy);
            if std::time::Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let Some(slot) = slot else {
            tracing::warn!(
                lanes = self.layout.slots - 1,
                "a guest session asked for more lanes than its region holds"
            );
            return write_response(control, status::OUT_OF_MEMORY.0, seq, &[], &[]).is_ok();
        };
        let busy = Arc::clone(&self.busy);
        let free_slot = move || {
            let mut b = busy.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(x) = b.get_mut(slot) {
                *x = false;
            }
        };
        let stream = match self.stream(slot, true) {
            Ok(s) => s.on_drop(free_slot),
            Err(e) => {
                free_slot();
                tracing::error!("cannot lay out a guest lane: {e}");
                return write_response(control, status::INVALID_VALUE.0, seq, &[], &[]).is_ok();
            }
        };
        let reply = open_lane::Reply {
            kind: lane_kind::IVSHMEM,
            port: U16::new(u16::try_from(slot).unwrap_or(u16::MAX)),
            token: [0; 16],
        };
        if let Err(e) = super::lane::start_socket(session, Channel::from_shm(stream)) {
            tracing::error!("cannot start a lane thread: {e}");
            return write_response(control, status::INVALID_VALUE.0, seq, &[], &[]).is_ok();
        }
        write_response(control, status::SUCCESS.0, seq, reply.as_bytes(), &[]).is_ok()
    }
}
