//! What a session holds on each of its devices, for its session slot
//! ([`crate::sessions::DeviceShare`]): NVML shows a process on a device only
//! where it holds memory or has a context, with the memory it holds there.
//!
//! The device of what the session holds, by its own ordinal (the slot
//! names each ordinal's device by UUID, the same in every session):
//! - **Allocations** (`cuMemAlloc`, pitched, stream-ordered and pool
//!   allocations, imported pool pointers, external memory mapped as a
//!   buffer): the driver's `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL` of the new
//!   address, so a stream-ordered allocation counts on its pool's device
//!   whatever context is current. Where the driver cannot say, the bytes
//!   count in the session's total only.
//! - **`cuMemCreate`**: the location its properties name; memory located
//!   on the host is no device's, and is not counted.
//! - **Managed and pinned host memory** are host pages shared with the
//!   client (ADR 0005), on no device: not counted, as before.
//! - **Contexts**: the primary context of each device while the driver
//!   reports it active (`cuDevicePrimaryCtxGetState`), and the contexts the
//!   session created (`cuCtxCreate`) until destroyed. Green contexts are
//!   not counted.

use std::ffi::{c_int, c_uint, c_void};

use vgpu_abi::types::CUpointer_attribute;
use vgpu_proto::Op;

use super::Session;
use crate::driver::{entry, DevPtr};

/// Device memory by the session's device ordinal.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Held {
    /// Bytes on device `i`.
    by_device: Vec<u64>,
    /// Bytes on no known device.
    elsewhere: u64,
}

/// Ordinals past this are not believed (a driver has far fewer devices):
/// their bytes count on no device.
const MAX_ORDINAL: u32 = 64;

impl Held {
    /// `bytes` more on `device`.
    pub fn add(&mut self, device: Option<u32>, bytes: u64) {
        let c = self.counter(device);
        *c = c.saturating_add(bytes);
    }

    /// `bytes` fewer on `device`.
    pub fn sub(&mut self, device: Option<u32>, bytes: u64) {
        let c = self.counter(device);
        *c = c.saturating_sub(bytes);
    }

    fn counter(&mut self, device: Option<u32>) -> &mut u64 {
        match device.filter(|&d| d < MAX_ORDINAL) {
            Some(d) => {
                let i = d as usize;
                if self.by_device.len() <= i {
                    self.by_device.resize(i + 1, 0);
                }
                &mut self.by_device[i]
            }
            None => &mut self.elsewhere,
        }
    }

    /// Bytes on each device, by ordinal (trailing devices with none may be
    /// missing).
    pub fn by_device(&self) -> &[u64] {
        &self.by_device
    }

    /// Every byte held.
    pub fn total(&self) -> u64 {
        self.by_device
            .iter()
            .fold(self.elsewhere, |sum, &b| sum.saturating_add(b))
    }

    /// Publishes these bytes as the memory of this worker's session.
    pub fn publish(&self) {
        if let Some(slot) = crate::sessions::own() {
            slot.publish_memory(&self.by_device, self.elsewhere);
        }
    }
}

/// The session's ordinal of the device the allocation at `ptr` is on, as
/// the driver reports it.
pub fn device_of(s: &Session, ptr: DevPtr) -> Option<u32> {
    let mut ordinal: c_int = -1;
    let attr = CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
    let f = entry(s.driver.cuPointerGetAttribute).ok()?;
    // SAFETY: the attribute's value is an `int`, written to a live local.
    let st = unsafe { f((&raw mut ordinal).cast::<c_void>(), attr, ptr) };
    if super::calls::ok(st).is_err() {
        tracing::debug!(?st, "allocation {ptr:#x}: device unknown");
        return None;
    }
    u32::try_from(ordinal).ok()
}

/// Whether a successful `op` may have made or ended a context.
pub fn changes_contexts(op: Op) -> bool {
    matches!(
        op,
        Op::CtxCreate
            | Op::CtxDestroy
            | Op::PrimaryCtxRetain
            | Op::DevicePrimaryCtxRelease_v2
            | Op::DevicePrimaryCtxReset_v2
    )
}

/// Publishes the contexts the session has on each of its `devices`.
pub fn publish_contexts(s: &Session, devices: usize) {
    let Some(slot) = crate::sessions::own() else {
        return;
    };
    let mut counts = vec![0u64; devices];
    for (i, count) in (0..).zip(counts.iter_mut()) {
        let (mut flags, mut active): (c_uint, c_int) = (0, 0);
        let Ok(f) = entry(s.driver.cuDevicePrimaryCtxGetState) else {
            break;
        };
        // SAFETY: two live out-pointers of the prototype's types.
        let st = unsafe { f(i, &mut flags, &mut active) };
        if super::calls::ok(st).is_ok() && active != 0 {
            *count = 1;
        }
    }
    for &d in s.tables().created_ctxs.values() {
        if let Some(c) = counts.get_mut(d as usize) {
            *c += 1;
        }
    }
    slot.publish_contexts(&counts);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_count_by_device_and_in_all() {
        let mut h = Held::default();
        h.add(Some(1), 10);
        h.add(None, 5);
        h.add(Some(MAX_ORDINAL), 7);
        assert_eq!(h.by_device(), &[0, 10]);
        assert_eq!(h.total(), 22, "unknown devices count in the total");
        h.sub(Some(1), 20);
        assert_eq!(h.by_device(), &[0, 0], "never below zero");
        assert_eq!(h.total(), 12);
    }
}
