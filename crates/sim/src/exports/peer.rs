//! Peer access between simulated devices, and copies between contexts.
//!
//! The simulated devices all keep their memory on the host, so any two
//! distinct devices can reach each other's memory; a device is never its own
//! peer, as with the driver. Enabled peer access is kept per (context, peer
//! context) pair.

use std::ffi::{c_int, c_uint};

use super::stream::ptsz;
use crate::context;
use crate::cu::{
    CUatomicOperation, CUcontext, CUdevice, CUdevice_P2PAttribute, CUdeviceptr, CUresult, CUstream,
};
use crate::error::{err, Res};
use crate::ffi::{key, Out};
use crate::graph;
use crate::memory::{self, End};
use crate::state::{self, State};
use crate::stream;

/// Checks both ordinals and that they name two different devices
/// (`CUDA_ERROR_INVALID_DEVICE` otherwise).
fn distinct(src: CUdevice, dst: CUdevice) -> Res<()> {
    let sim = state::sim()?;
    sim.check_device(src)?;
    sim.check_device(dst)?;
    if src == dst {
        return err(
            CUresult::CUDA_ERROR_INVALID_DEVICE,
            format!("device {src} is not a peer of itself"),
        );
    }
    Ok(())
}

/// `cuDeviceCanAccessPeer`: 1 for two distinct simulated devices, 0 for a
/// device and itself.
pub(crate) fn device_can_access_peer(out: Out<c_int>, dev: CUdevice, peer: CUdevice) -> Res<()> {
    let sim = state::sim()?;
    sim.check_device(dev)?;
    sim.check_device(peer)?;
    out.write(c_int::from(dev != peer));
    Ok(())
}

/// `cuDeviceGetP2PAttribute`: access, native atomics and array access are
/// supported between distinct simulated devices, all at performance rank 0.
pub(crate) fn device_get_p2p_attribute(
    out: Out<c_int>,
    attrib: CUdevice_P2PAttribute,
    src: CUdevice,
    dst: CUdevice,
) -> Res<()> {
    distinct(src, dst)?;
    let value = match attrib {
        CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK
        | CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED => 0,
        CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED
        | CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED
        | CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED => 1,
        other => {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{} is not a CUdevice_P2PAttribute", other.0),
            )
        }
    };
    out.write(value);
    Ok(())
}

/// `cuDeviceGetP2PAtomicCapabilities`: the simulated devices run no
/// kernels on each other's memory, so no operation has a capability bit.
///
/// # Safety
/// `capabilities` and `operations` must be NULL or hold `count` elements.
pub(crate) unsafe fn device_get_p2p_atomic_capabilities(
    capabilities: *mut c_uint,
    operations: *const CUatomicOperation,
    count: c_uint,
    src: CUdevice,
    dst: CUdevice,
) -> Res<()> {
    distinct(src, dst)?;
    if capabilities.is_null() || operations.is_null() || count == 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "NULL capabilities or operations, or a count of 0",
        );
    }
    for i in 0..count as usize {
        // SAFETY: `i < count` elements are readable by this function's contract.
        let op = unsafe { operations.add(i).read_unaligned() };
        if op.0 >= CUatomicOperation::CU_ATOMIC_OPERATION_MAX.0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("operation {i} ({}) is not a CUatomicOperation", op.0),
            );
        }
    }
    for i in 0..count as usize {
        // SAFETY: `i < count` elements are writable by this function's contract.
        unsafe { capabilities.add(i).write_unaligned(0) };
    }
    Ok(())
}

/// The current context and the live peer context `peer`, with their
/// devices. The current context may be its own peer context: its device is
/// then the same (driver 580 answers as for any context of the same device).
fn pair(st: &State, peer: CUcontext) -> Res<((usize, usize), (usize, usize))> {
    let cur = context::current(st)?;
    let peer = key(peer);
    let (cur_dev, peer_dev) = (
        context::live(st, cur)?.device,
        context::live(st, peer)?.device,
    );
    Ok(((cur, cur_dev), (peer, peer_dev)))
}

/// `cuCtxEnablePeerAccess`: the peer context's device must be another
/// device (`CUDA_ERROR_PEER_ACCESS_UNSUPPORTED`, also for the current
/// context itself), and `Flags` 0.
pub(crate) fn ctx_enable_peer_access(peer: CUcontext, flags: c_uint) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    let ((cur, cur_dev), (peer, peer_dev)) = pair(&st, peer)?;
    if cur_dev == peer_dev {
        return err(
            CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
            format!("device {cur_dev} is not a peer of itself"),
        );
    }
    if flags != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("Flags {flags:#x} is not 0"),
        );
    }
    if !st.ext.peers.insert((cur, peer)) {
        return err(
            CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
            "peer access to this context is already enabled",
        );
    }
    Ok(())
}

/// `cuCtxDisablePeerAccess`: peer access must have been enabled (never so
/// for the current context itself).
pub(crate) fn ctx_disable_peer_access(peer: CUcontext) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    let ((cur, _), (peer, _)) = pair(&st, peer)?;
    if !st.ext.peers.remove(&(cur, peer)) {
        return err(
            CUresult::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
            "peer access to this context is not enabled",
        );
    }
    Ok(())
}

/// A device-to-device copy between the memory of two live contexts, on the
/// current context (`stream_h` None) or a stream.
fn peer_copy(
    name: &str,
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    n: usize,
    stream_h: Option<usize>,
) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    context::live(&st, key(dst_ctx))?;
    context::live(&st, key(src_ctx))?;
    let (d, s) = (End::Device(dst), End::Device(src));
    match stream_h {
        None => {
            context::current_usable(&st)?;
            graph::forbid_unsafe(&mut st, name)?;
        }
        Some(k) => {
            stream::usable(&st, k)?;
            let work = || graph::Work::Copy {
                dst: graph::CopyEnd::of(&d),
                src: graph::CopyEnd::of(&s),
                len: n,
            };
            if graph::captured(&mut st, k, work)? {
                return Ok(());
            }
        }
    }
    // SAFETY: both ends are device addresses, checked against the live allocations.
    unsafe { memory::copy(&st, d, s, n) }
}

/// `cuMemcpyPeer`.
pub(crate) fn memcpy_peer(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    n: usize,
) -> Res<()> {
    peer_copy("cuMemcpyPeer", dst, dst_ctx, src, src_ctx, n, None)
}

/// `cuMemcpyPeer_ptds`: the simulated device runs every copy in order, so
/// the per-thread default stream's copy is the synchronous one.
pub(crate) fn memcpy_peer_ptds(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    n: usize,
) -> Res<()> {
    peer_copy("cuMemcpyPeer_ptds", dst, dst_ctx, src, src_ctx, n, None)
}

/// `cuMemcpyPeerAsync`: runs at once, in stream order.
pub(crate) fn memcpy_peer_async(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    n: usize,
    stream_h: CUstream,
) -> Res<()> {
    let k = Some(key(stream_h));
    peer_copy("cuMemcpyPeerAsync", dst, dst_ctx, src, src_ctx, n, k)
}

/// `cuMemcpyPeerAsync_ptsz`: the NULL stream is the per-thread stream.
pub(crate) fn memcpy_peer_async_ptsz(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    n: usize,
    stream_h: CUstream,
) -> Res<()> {
    let k = Some(ptsz(stream_h));
    peer_copy("cuMemcpyPeerAsync_ptsz", dst, dst_ctx, src, src_ctx, n, k)
}
