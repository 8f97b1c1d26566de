//! The guest's end: maps the device's BARs from sysfs, claims a region of
//! BAR2 for this process's session, and opens its control stream and lanes
//! (module documentation of [`super`] for the layout and protocol).
//!
//! Nothing here runs at library load: the client opens the device when it
//! connects (at `cuInit`).

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::stream::ShmStream;
use super::{doorbell_value, owner_word, regs, Layout, Owner};
use crate::shm_ring::{Doorbell, Ring, SharedMem};
use crate::{TransportError, WaitPolicy};

/// How long a claim waits for the host to free a region that was just
/// given back (the host frees it once its worker has gone: about 100 ms).
pub const DRAIN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The device's doorbell register, rung for one vector of the host peer.
#[derive(Debug)]
pub struct BarDoorbell {
    regs: Arc<SharedMem>,
    value: u32,
}

impl Doorbell for BarDoorbell {
    fn ring(&self) {
        if let Some(w) = self.regs.u32_at(regs::DOORBELL) {
            w.store(self.value, Ordering::Release);
        }
    }
}

/// An opened ivshmem device: both BARs mapped and the layout checked.
#[derive(Debug)]
pub struct Device {
    pub path: PathBuf,
    pub bar2: Arc<SharedMem>,
    pub regs: Arc<SharedMem>,
    pub layout: Layout,
}

/// Why the device could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    /// A BAR file could not be opened or mapped.
    #[error("{path}: {source}")]
    Bar {
        path: PathBuf,
        source: TransportError,
    },
    /// BAR2 holds no vgpu layout.
    #[error("{0}: {1} (is the mediator serving this device?)")]
    Layout(PathBuf, super::LayoutError),
    /// Every region is held by a live process.
    #[error("all {0} vgpu sessions of this VM are in use (one per process)")]
    Full(usize),
    /// Setting up the region's rings failed.
    #[error("{0}")]
    Transport(#[from] TransportError),
}

fn map_file(path: &Path, len: Option<usize>) -> Result<Arc<SharedMem>, GuestError> {
    let bar = |source: TransportError| GuestError::Bar {
        path: path.to_owned(),
        source,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| bar(e.into()))?;
    let len = match len {
        Some(l) => l,
        None => usize::try_from(f.metadata().map_err(|e| bar(e.into()))?.len())
            .map_err(|_| bar(TransportError::Corrupt("BAR size")))?,
    };
    SharedMem::map(f.as_fd(), len).map_err(bar)
}

impl Device {
    /// Opens the device `bdf` (sysfs form) under the sysfs root `sysfs`.
    pub fn open(sysfs: &Path, bdf: &str) -> Result<Device, GuestError> {
        let path = sysfs.join("bus/pci/devices").join(bdf);
        let bar2 = map_file(&path.join("resource2"), None)?;
        let regs = map_file(&path.join("resource0"), Some(regs::MAP_LEN))?;
        let mut h = [0u8; 0x30];
        if !bar2.read(0, &mut h) {
            return Err(GuestError::Layout(
                path,
                super::LayoutError::Range("BAR2 too small"),
            ));
        }
        let layout =
            Layout::parse(&h, bar2.len()).map_err(|e| GuestError::Layout(path.clone(), e))?;
        Ok(Device {
            path,
            bar2,
            regs,
            layout,
        })
    }

    /// This guest's peer id (`IVPosition`).
    pub fn peer_id(&self) -> u32 {
        self.regs
            .u32_at(regs::IV_POSITION)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The doorbell of region `r`'s vector.
    fn doorbell(&self, r: usize) -> Arc<BarDoorbell> {
        Arc::new(BarDoorbell {
            regs: Arc::clone(&self.regs),
            value: doorbell_value(self.layout.host_peer, self.layout.vector(r)),
        })
    }

    /// Regions held, and by how many live processes (for `vgpu doctor`).
    pub fn regions_in_use(&self) -> usize {
        (0..self.layout.regions)
            .filter(|r| {
                owner_word(&self.bar2, *r)
                    .is_some_and(|w| Owner::decode(w.load(Ordering::Acquire)).pid != 0)
            })
            .count()
    }

    /// Frees every region whose owner process no longer exists, and rings
    /// its doorbell so the host ends its worker.
    pub fn reclaim_dead(&self) {
        for r in 0..self.layout.regions {
            let Some(w) = owner_word(&self.bar2, r) else {
                continue;
            };
            let word = w.load(Ordering::Acquire);
            let o = Owner::decode(word);
            if o.pid == 0 || process_lives(o.pid) {
                continue;
            }
            super::drain_region(&self.bar2, r, word);
            self.doorbell(r).ring();
        }
    }

    /// Whether some region is draining (the host frees it soon).
    fn draining(&self) -> bool {
        (0..self.layout.regions).any(|r| {
            owner_word(&self.bar2, r).is_some_and(|w| {
                let o = Owner::decode(w.load(Ordering::Acquire));
                o.pid == 0 && o.ready
            })
        })
    }

    /// Claims a region for this process and opens its control stream,
    /// waiting up to [`DRAIN_WAIT`] for the host to free a region given
    /// back a moment ago. `policy`: how the streams wait (its timeout is
    /// how often they check that the region is still theirs).
    pub fn claim(self: &Arc<Self>, policy: WaitPolicy) -> Result<(Region, ShmStream), GuestError> {
        self.reclaim_dead();
        let deadline = std::time::Instant::now() + DRAIN_WAIT;
        loop {
            match self.try_claim(policy)? {
                Some(claimed) => return Ok(claimed),
                None if self.draining() && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                None => return Err(GuestError::Full(self.layout.regions)),
            }
        }
    }

    /// One pass of [`Device::claim`]: `None` when no region is free.
    fn try_claim(
        self: &Arc<Self>,
        policy: WaitPolicy,
    ) -> Result<Option<(Region, ShmStream)>, GuestError> {
        let pid = std::process::id();
        for r in 0..self.layout.regions {
            let Some(w) = owner_word(&self.bar2, r) else {
                continue;
            };
            let word = w.load(Ordering::Acquire);
            let o = Owner::decode(word);
            if o.pid != 0 || o.ready {
                continue; // Claimed, or draining: not free yet.
            }
            let claiming = Owner {
                generation: o.generation.wrapping_add(1),
                ready: false,
                pid,
            };
            if w.compare_exchange(word, claiming.encode(), Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            let mine = Owner {
                ready: true,
                ..claiming
            }
            .encode();
            let region = Region {
                dev: Arc::clone(self),
                index: r,
                word: mine,
                bell: self.doorbell(r),
                policy,
            };
            let control = match region.open_slot(0, true) {
                Ok(s) => s,
                Err(e) => {
                    super::drain_region(&self.bar2, r, claiming.encode());
                    return Err(e.into());
                }
            };
            w.store(mine, Ordering::Release);
            region.bell.ring();
            return Ok(Some((region, control)));
        }
        Ok(None)
    }
}

/// Whether process `pid` exists (in this pid namespace).
fn process_lives(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// A region this process holds: its session's rings.
#[derive(Debug)]
pub struct Region {
    dev: Arc<Device>,
    pub index: usize,
    /// The owner word while the region is ours.
    word: u64,
    bell: Arc<BarDoorbell>,
    policy: WaitPolicy,
}

impl Region {
    /// Whether the region is still this session's.
    fn alive(dev: &Arc<Device>, r: usize, word: u64) -> impl Fn() -> bool + Send + 'static {
        let dev = Arc::clone(dev);
        move || owner_word(&dev.bar2, r).is_some_and(|w| w.load(Ordering::Acquire) == word)
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// Slot `s`'s stream. `fresh`: lay the rings out (the control slot,
    /// before the region is published); otherwise bind to the rings the
    /// host laid out (a lane the worker announced).
    fn open_slot(&self, s: usize, fresh: bool) -> Result<ShmStream, TransportError> {
        let l = &self.dev.layout;
        let (Some(up), Some(down)) = (
            l.ring_offset(self.index, s, true),
            l.ring_offset(self.index, s, false),
        ) else {
            return Err(TransportError::Corrupt("lane slot outside the region"));
        };
        let bell: Arc<dyn Doorbell> = self.bell.clone();
        let mem = &self.dev.bar2;
        let (out, inp) = if fresh {
            (
                Ring::init_at(mem, up, l.ring_capacity, Some(Arc::clone(&bell)))?,
                Ring::init_at(mem, down, l.ring_capacity, Some(bell))?,
            )
        } else {
            (
                Ring::attach_at(mem, up, l.ring_capacity, Some(Arc::clone(&bell)))?,
                Ring::attach_at(mem, down, l.ring_capacity, Some(bell))?,
            )
        };
        Ok(ShmStream::new(
            out.into_producer()?,
            inp.into_consumer()?,
            self.policy,
            Box::new(Region::alive(&self.dev, self.index, self.word)),
        )
        .poll_for_space())
    }

    /// The stream of lane slot `s` (1..slots), which the worker laid out.
    pub fn lane(&self, s: usize) -> Result<ShmStream, TransportError> {
        if s == 0 {
            return Err(TransportError::Corrupt("slot 0 is the control stream"));
        }
        self.open_slot(s, false)
    }

    /// Gives the region back if this process still holds it (not a forked
    /// child: the word names the pid that claimed it) and tells the host.
    pub fn release(&self) {
        if Owner::decode(self.word).pid != std::process::id() {
            return;
        }
        super::drain_region(&self.dev.bar2, self.index, self.word);
        self.bell.ring();
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::Duration;

    use super::*;
    use crate::ivshmem::{self, action, stream::ShmStream, Action};

    const POLICY: WaitPolicy = WaitPolicy {
        spin: Duration::from_micros(10),
        yield_for: Duration::ZERO,
        timeout: Some(Duration::from_millis(20)),
    };

    /// A device over a 16 MiB memfd with the host's header, and a
    /// register file: what `Device::open` maps, made in this process.
    fn device() -> Arc<Device> {
        let size = 16 << 20;
        let layout = Layout::for_size(size, ivshmem::DEFAULT_SLOTS, ivshmem::DEFAULT_RING, 0, 1)
            .expect("layout");
        let fd = rustix::fs::memfd_create("t", rustix::fs::MemfdFlags::CLOEXEC).expect("memfd");
        rustix::fs::ftruncate(&fd, size as u64).expect("size");
        let bar2 = SharedMem::map(fd.as_fd(), size).expect("bar2");
        assert!(bar2.write(0, &layout.header()));
        let rfd = rustix::fs::memfd_create("r", rustix::fs::MemfdFlags::CLOEXEC).expect("memfd");
        rustix::fs::ftruncate(&rfd, regs::MAP_LEN as u64).expect("size");
        let regs = SharedMem::map(rfd.as_fd(), regs::MAP_LEN).expect("bar0");
        Arc::new(Device {
            path: PathBuf::from("/fake"),
            bar2,
            regs,
            layout,
        })
    }

    fn word(dev: &Device, r: usize) -> Owner {
        Owner::decode(
            owner_word(&dev.bar2, r)
                .expect("entry")
                .load(Ordering::Acquire),
        )
    }

    /// The host's side of a host decision: frees what `action` says to.
    fn host_frees(dev: &Device) {
        for r in 0..dev.layout.regions {
            let w = owner_word(&dev.bar2, r)
                .expect("entry")
                .load(Ordering::Acquire);
            if let Action::Free(w) = action(w, None) {
                ivshmem::free_region(&dev.bar2, r, w);
            }
        }
    }

    #[test]
    fn claims_take_free_regions_until_none_is_left() {
        let dev = device();
        assert_eq!(dev.layout.regions, 3);
        let held: Vec<_> = (0..3)
            .map(|_| dev.claim(POLICY).expect("a region"))
            .collect();
        let mut got: Vec<usize> = held.iter().map(|(r, _)| r.index).collect();
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2]);
        assert!(held.iter().all(|(r, _)| word(&dev, r.index).serve()));
        assert!(matches!(dev.claim(POLICY), Err(GuestError::Full(3))));
        assert_eq!(dev.regions_in_use(), 3);
        // Given back: draining until the host frees it, then claimable.
        held[1].0.release();
        let o = word(&dev, held[1].0.index);
        assert!(o.pid == 0 && o.ready, "draining: {o:?}");
        host_frees(&dev);
        let (again, _) = dev.claim(POLICY).expect("the freed region");
        assert_eq!(again.index, held[1].0.index);
        assert_eq!(Owner::decode(again.word).generation, o.generation + 2);
    }

    #[test]
    fn a_dead_owner_is_drained_and_a_live_one_kept() {
        let dev = device();
        let mut child = std::process::Command::new("true").spawn().expect("a child");
        let dead = child.id();
        child.wait().expect("reaped");
        let set = |r: usize, pid: u32| {
            let o = Owner {
                generation: 5,
                ready: true,
                pid,
            };
            owner_word(&dev.bar2, r)
                .expect("entry")
                .store(o.encode(), Ordering::Release);
        };
        set(0, dead);
        set(1, std::process::id());
        dev.reclaim_dead();
        let (zero, one) = (word(&dev, 0), word(&dev, 1));
        assert!(
            zero.pid == 0 && zero.ready && zero.generation == 6,
            "{zero:?}"
        );
        assert_eq!(one.pid, std::process::id(), "a live owner keeps its region");
        // The doorbell was rung for the host.
        let bell = dev.regs.u32_at(regs::DOORBELL).expect("register");
        assert_eq!(bell.load(Ordering::Acquire), doorbell_value(0, 0));
    }

    #[test]
    fn a_region_of_another_pid_is_not_released() {
        let dev = device();
        let (region, _control) = dev.claim(POLICY).expect("a region");
        let foreign = Region {
            word: Owner {
                pid: std::process::id() + 1,
                ..Owner::decode(region.word)
            }
            .encode(),
            dev: Arc::clone(&dev),
            index: region.index,
            bell: Arc::clone(&region.bell),
            policy: POLICY,
        };
        foreign.release();
        assert!(word(&dev, region.index).serve(), "still held");
        region.release();
        assert!(!word(&dev, region.index).serve());
    }

    /// The host's end of slot `s` of region `r`, as the worker binds it.
    fn host_end(dev: &Device, r: usize, s: usize, fresh: bool) -> ShmStream {
        let l = dev.layout;
        let up = l.ring_offset(r, s, true).expect("slot");
        let down = l.ring_offset(r, s, false).expect("slot");
        let (inp, out) = if fresh {
            (
                Ring::init_at(&dev.bar2, up, l.ring_capacity, None).expect("up"),
                Ring::init_at(&dev.bar2, down, l.ring_capacity, None).expect("down"),
            )
        } else {
            (
                Ring::attach_at(&dev.bar2, up, l.ring_capacity, None).expect("up"),
                Ring::attach_at(&dev.bar2, down, l.ring_capacity, None).expect("down"),
            )
        };
        ShmStream::new(
            out.into_producer().expect("producer"),
            inp.into_consumer().expect("consumer"),
            POLICY,
            Box::new(|| true),
        )
    }

    #[test]
    fn control_and_lane_streams_carry_bytes_both_ways() {
        let dev = device();
        let (region, mut control) = dev.claim(POLICY).expect("a region");
        let mut host = host_end(&dev, region.index, 0, false);
        control.write_all(b"hello").expect("guest writes");
        let mut b = [0u8; 5];
        host.read_exact(&mut b).expect("host reads");
        assert_eq!(&b, b"hello");
        // A lane the host lays out, then the guest binds; twice in the same
        // slot, as when a thread's lane ends and another takes the slot.
        for round in 0..2u8 {
            let mut h = host_end(&dev, region.index, 3, true);
            let mut g = region.lane(3).expect("lane");
            let big: Vec<u8> = (0..600_000u32).map(|i| (i % 253) as u8 ^ round).collect();
            let sent = big.clone();
            let t = std::thread::spawn(move || {
                h.write_all(&sent).expect("host writes");
                h
            });
            let mut got = vec![0u8; big.len()];
            g.read_exact(&mut got).expect("guest reads");
            assert_eq!(got, big, "round {round}");
            drop(t.join().expect("writer"));
        }
        assert!(region.lane(0).is_err(), "slot 0 is the control stream");
        assert!(region.lane(dev.layout.slots).is_err(), "past the region");
    }
}
