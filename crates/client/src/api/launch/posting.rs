//! Which launches are posted without waiting for the worker: the checks
//! the client makes here of what the driver would refuse at once
//! (`docs/adr/0004-async-errors.md`), and the key by which a
//! `cuLaunchKernelEx` configuration the driver accepted is known again.

use std::ffi::{c_int, c_uint};

use vgpu_abi::types::{CUfunction_attribute, CUlaunchAttribute, CUlaunchAttributeID};

/// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`; the block and grid limits
/// follow (x, y, z each), then `MAX_SHARED_MEMORY_PER_BLOCK`.
const ATTR_MAX_THREADS_PER_BLOCK: usize = 1;

const ATTR_MAX_BLOCK_DIM_X: usize = 2;
const ATTR_MAX_GRID_DIM_X: usize = 5;

const ATTR_MAX_SHARED_MEMORY_PER_BLOCK: usize = 8;

/// Whether a launch of `f` may be posted: the client has checked here what
/// the driver refuses at once (a live current context, a stream usable in
/// it, the geometry within the device's limits, dynamic shared memory
/// within the function's limit as the session knows it, else the default
/// per-block limit). A launch that fails any check, or that the client
/// cannot check, waits for the driver's answer.
pub(super) fn launch_postable(
    s: &crate::runtime::Session,
    f: u64,
    sid: u64,
    dims: [c_uint; 6],
    shmem: c_uint,
) -> bool {
    let ctx = crate::context::current();
    let (device, shared) = {
        let o = s.objects();
        let kernel = o.functions.get(&f).and_then(|i| i.kernel);
        launch_target(&o, ctx, f, kernel, sid)
    };
    device.is_some_and(|d| geometry_ok(s, d, dims, shmem, shared))
}

/// For a launch of function `f` (got from `kernel`, if it was) on stream
/// `sid` in context `ctx`: the device it runs on when the context is live
/// and the stream usable in it, and the function's dynamic shared memory
/// limit there as the session knows it ([`dynamic_shared_limit`]).
pub(super) fn launch_target(
    o: &crate::objects::Objects,
    ctx: u64,
    f: u64,
    kernel: Option<u64>,
    sid: u64,
) -> (Option<i32>, Option<u64>) {
    let device = launch_device(o, ctx, sid);
    (
        device,
        device.and_then(|d| dynamic_shared_limit(o, f, kernel, d)),
    )
}

/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
const MAX_DYNAMIC_SHARED: u32 =
    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.0;

/// The dynamic shared memory a launch of function `f` (got from `kernel`,
/// if it was) on `device` may use, as the session knows it: the attribute
/// as last set or read, on the function or on its kernel for that device
/// (`cuKernelSetAttribute`). The driver refuses a launch with more. Where
/// several are known, the smallest.
fn dynamic_shared_limit(
    o: &crate::objects::Objects,
    f: u64,
    kernel: Option<u64>,
    device: i32,
) -> Option<u64> {
    let dev = i64::from(device);
    // A kernel handle may itself be launched as a function.
    let keys = [Some((f, -1)), Some((f, dev)), kernel.map(|k| (k, dev))];
    keys.into_iter()
        .flatten()
        .filter_map(|(h, d)| o.answers.attributes.get(&(h, MAX_DYNAMIC_SHARED, d)))
        .min()
        .and_then(|&v| u64::try_from(v).ok())
}

/// The device of context `ctx` when it is live and `sid` is a stream
/// usable in it: what a posted launch needs besides its geometry.
fn launch_device(o: &crate::objects::Objects, ctx: u64, sid: u64) -> Option<i32> {
    if !o.stream_ok(ctx, sid) {
        return None;
    }
    o.contexts.get(&ctx).map(|c| c.device)
}

/// Whether a launch's geometry and dynamic shared memory are within
/// `device`'s limits; the shared memory within `shared`, the function's
/// limit, when known ([`dynamic_shared_limit`]), else within the device's
/// default per-block limit.
pub(super) fn geometry_ok(
    s: &crate::runtime::Session,
    device: i32,
    dims: [c_uint; 6],
    shmem: c_uint,
    shared: Option<u64>,
) -> bool {
    let Ok(snap) = s.device(device) else {
        return false;
    };
    let limit = |id: usize| {
        snap.attr(id)
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0)
    };
    let (grid, block) = (&dims[..3], &dims[3..]);
    let within = |dims: &[c_uint], first: usize| {
        dims.iter()
            .enumerate()
            .all(|(i, &d)| d >= 1 && u64::from(d) <= limit(first + i))
    };
    let threads: u64 = block.iter().map(|&d| u64::from(d)).product();
    within(grid, ATTR_MAX_GRID_DIM_X)
        && within(block, ATTR_MAX_BLOCK_DIM_X)
        && threads <= limit(ATTR_MAX_THREADS_PER_BLOCK)
        && u64::from(shmem) <= shared.unwrap_or_else(|| limit(ATTR_MAX_SHARED_MEMORY_PER_BLOCK))
}

/// The bytes of attribute records `attrs` that the driver reads: each
/// record's id and its value's member for that id, with the padding and
/// the rest of the value's 64 bytes cleared. Applications fill in only the
/// member (cuBLAS and cuDNN build the records on the stack), so the rest
/// differs from launch to launch, and an accepted configuration would
/// never be seen again. A record of an id not known here keeps all its
/// bytes.
pub(super) fn meaningful(attrs: &[u8]) -> Vec<u8> {
    let mut out = attrs.to_vec();
    for record in out.chunks_exact_mut(std::mem::size_of::<CUlaunchAttribute>()) {
        let id = u32::from_le_bytes([record[0], record[1], record[2], record[3]]);
        if let Some(used) = value_bytes(id) {
            let (_, rest) = record.split_at_mut(4);
            let (pad, value) = rest.split_at_mut(4);
            pad.fill(0);
            value[used..].fill(0);
        }
    }
    out
}

/// How many leading bytes of a launch attribute's value the member for `id`
/// takes; `None` for an id not known here.
fn value_bytes(id: u32) -> Option<usize> {
    use std::mem::{offset_of, size_of};
    use vgpu_abi::types::{CUaccessPolicyWindow, CUlaunchMemSyncDomainMap};
    use CUlaunchAttributeID as A;
    let int = size_of::<c_int>();
    Some(match CUlaunchAttributeID(id) {
        A::CU_LAUNCH_ATTRIBUTE_IGNORE => 0,
        // Its last field ends before the struct's tail padding.
        A::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW => {
            offset_of!(CUaccessPolicyWindow, missProp) + int
        }
        A::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        | A::CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION => 3 * int,
        A::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP => size_of::<CUlaunchMemSyncDomainMap>(),
        A::CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        | A::CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY
        | A::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
        | A::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        | A::CU_LAUNCH_ATTRIBUTE_PRIORITY
        | A::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN
        | A::CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        | A::CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING => int,
        // The event-carrying ones are never posted (`names_events`).
        _ => return None,
    })
}

/// Launch attributes that carry an event handle, or write a result back.
const UNPOSTABLE_ATTRIBUTES: [CUlaunchAttributeID; 3] = [
    CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT,
    CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
    CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE,
];

/// Whether any of the attribute records in `attrs` carries an event or
/// writes a result back.
pub(super) fn names_events(attrs: &[u8]) -> bool {
    attrs
        .chunks_exact(std::mem::size_of::<CUlaunchAttribute>())
        .any(|a| {
            let id = u32::from_le_bytes([a[0], a[1], a[2], a[3]]);
            UNPOSTABLE_ATTRIBUTES.iter().any(|u| u.0 == id)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An attribute record of `id` with every other byte `fill`.
    fn record(id: u32, fill: u8) -> Vec<u8> {
        let mut r = vec![fill; std::mem::size_of::<CUlaunchAttribute>()];
        r[..4].copy_from_slice(&id.to_le_bytes());
        r
    }

    #[test]
    fn launch_keys_keep_only_the_bytes_the_driver_reads() {
        let cluster = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION.0;
        let window = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW.0;
        // The padding and the value past its 12 bytes are cleared.
        let key = meaningful(&record(cluster, 0xab));
        assert_eq!(&key[4..8], &[0; 4]);
        assert_eq!(&key[8..20], &[0xab; 12]);
        assert!(key[20..].iter().all(|&b| b == 0));
        assert_eq!(key, meaningful(&record(cluster, 0xab)));
        assert_ne!(key, meaningful(&record(cluster, 0xcd)), "the member counts");
        // base_ptr, num_bytes, hitRatio, hitProp, missProp: 28 bytes.
        let key = meaningful(&record(window, 0xab));
        assert_eq!(&key[8..36], &[0xab; 28]);
        assert!(key[36..].iter().all(|&b| b == 0));
        // Every record of a list; an id not known here keeps all its bytes.
        let unknown = record(15, 0xab);
        let mut list = record(cluster, 1);
        list.extend_from_slice(&unknown);
        let key = meaningful(&list);
        assert_eq!(&key[72..], &unknown[..]);
        assert!(key[20..72].iter().all(|&b| b == 0));
    }
}
