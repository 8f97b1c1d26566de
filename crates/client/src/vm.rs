//! Sessions of a process in a VM guest, over the guest's vgpu PCI device
//! (`pci:BDF`, or found by the sysfs scan): `vgpu_transport::ivshmem`
//! documents the device's memory layout and protocol, `docs/vm.md` the
//! set-up.
//!
//! At connect (never at load) the client maps the device's `resource2`
//! (the shared memory) and `resource0` (the registers) from sysfs, claims
//! a region for this process and runs the session's control stream in it
//! (`vgpu_transport::connect`, which the NVML library shares).
//! Each `OpenLane` reply names a slot of the region whose rings the worker
//! has laid out. The session is then remote, as over TCP: pinned host
//! memory stays in this process and copies carry the bytes.
//!
//! Limits: a device holds a fixed number of regions (14 with the host's
//! defaults), one per process; when every region is held by a live
//! process, `cuInit` fails with `CUDA_ERROR_OUT_OF_MEMORY`. A region has 8
//! lanes (threads making calls at once); a thread that asks for a ninth
//! gets `CUDA_ERROR_OUT_OF_MEMORY` from its call, and the session goes on.
//!
//! The region is given back at exit (an `atexit` handler registered at
//! connect, which releases only a region this very process claimed); a
//! killed process's region is reclaimed by the next process that connects.

use std::time::Duration;

use vgpu_transport::ivshmem::guest::Region;
use vgpu_transport::{Channel, TransportError, WaitPolicy};

use crate::config::Config;

/// How often a waiting stream checks that the region is still this
/// session's.
const CHECK: Duration = Duration::from_millis(100);

/// How the streams of this process's region wait.
pub fn policy(cfg: &Config) -> WaitPolicy {
    WaitPolicy {
        spin: cfg.ring_spin,
        yield_for: cfg.ring_yield,
        timeout: Some(CHECK),
    }
}

/// Registers, once per process, the handler that gives the session's
/// region back at exit (a reconnect or a forked child's session needs no
/// second one: it gives back whichever region is current).
pub fn release_at_exit() {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    // SAFETY: `release_region` is an `extern "C" fn()` that only reads
    // the runtime, which lives for the whole process.
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(release_region);
    });
}

/// The channel of lane slot `slot`, which the worker announced.
pub fn open_lane(region: &Region, slot: u16) -> Result<Channel, TransportError> {
    Ok(Channel::from_shm(region.lane(usize::from(slot))?))
}

/// Gives this process's region back at exit, so that the host's worker
/// ends at once rather than when a later process reclaims it.
extern "C" fn release_region() {
    if let Some(region) = crate::runtime::current_vm_region() {
        region.release();
    }
}
