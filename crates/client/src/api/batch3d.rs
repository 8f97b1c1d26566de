//! Batches of 3D copies (`cuMemcpy3DBatchAsync`): each operation becomes the
//! 3D copy `cuMemcpy3DAsync` makes on the stream (`copy::memcpy_3d`), which
//! the worker checks against the session's allocations and arrays. Extents,
//! row lengths, layer heights and array offsets are in elements: one byte
//! between two pointers, else the array's element (both arrays' must agree).

use vgpu_abi::types::{
    CUarray, CUdeviceptr, CUmemcpy3DOperand, CUmemcpy3DOperandType, CUmemcpySrcAccessOrder,
    CUmemorytype, CUstream, CUDA_ARRAY3D_DESCRIPTOR, CUDA_MEMCPY3D, CUDA_MEMCPY3D_BATCH_OP,
};

use super::copy;
use crate::edge::{wire, CuError, CuResult};
use crate::runtime::runtime;

/// `CU_STREAM_LEGACY`: a batch may not run on the legacy default stream.
const STREAM_LEGACY: u64 = 1;
/// `CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE`, the only copy flag.
const COPY_FLAGS: u32 = 1;

/// The bytes of one element of array `a`, from its descriptor.
fn element_of(a: CUarray) -> CuResult<usize> {
    // SAFETY: all-zero bytes are a valid descriptor (integers).
    let mut d: CUDA_ARRAY3D_DESCRIPTOR = unsafe { std::mem::zeroed() };
    // SAFETY: `d` is a live local descriptor.
    unsafe { crate::generated::array3d_get_descriptor_v2(&mut d, a) }?;
    vgpu_abi::array::element_bytes(d.Format.0, d.NumChannels)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or(CuError::INVALID_VALUE)
}

/// One side of a 3D copy: (memory type, address, array, x in bytes, y, z,
/// pitch, rows a slice).
type End = (
    CUmemorytype,
    CUdeviceptr,
    CUarray,
    usize,
    usize,
    usize,
    usize,
    usize,
);

/// The side `o` names, elements of `e` bytes, for a copy of `width` by `height`.
fn end(o: &CUmemcpy3DOperand, e: usize, width: usize, height: usize) -> CuResult<End> {
    if o.type_ == CUmemcpy3DOperandType::CU_MEMCPY_OPERAND_TYPE_ARRAY {
        // SAFETY: an array operand's union holds its `array` member.
        let a = unsafe { o.op.array };
        let x = a.offset.x.checked_mul(e).ok_or(CuError::INVALID_VALUE)?;
        let t = CUmemorytype::CU_MEMORYTYPE_ARRAY;
        return Ok((t, 0, a.array, x, a.offset.y, a.offset.z, 0, 0));
    }
    if o.type_ != CUmemcpy3DOperandType::CU_MEMCPY_OPERAND_TYPE_POINTER {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: a pointer operand's union holds its `ptr` member.
    let p = unsafe { o.op.ptr };
    let row = if p.rowLength == 0 { width } else { p.rowLength };
    let rows = if p.layerHeight == 0 {
        height
    } else {
        p.layerHeight
    };
    let pitch = row.checked_mul(e).ok_or(CuError::INVALID_VALUE)?;
    let device = runtime().session()?.objects().is_device(p.ptr);
    let t = if device {
        CUmemorytype::CU_MEMORYTYPE_DEVICE
    } else {
        CUmemorytype::CU_MEMORYTYPE_HOST
    };
    Ok((t, p.ptr, std::ptr::null_mut(), 0, 0, 0, pitch, rows))
}

/// The 3D copy of one batch operation.
fn plain(op: &CUDA_MEMCPY3D_BATCH_OP) -> CuResult<CUDA_MEMCPY3D> {
    let x = op.extent;
    let order = op.srcAccessOrder.0;
    let known = order > CUmemcpySrcAccessOrder::CU_MEMCPY_SRC_ACCESS_ORDER_INVALID.0
        && order < CUmemcpySrcAccessOrder::CU_MEMCPY_SRC_ACCESS_ORDER_MAX.0;
    if x.width == 0 || x.height == 0 || x.depth == 0 || !known || op.flags & !COPY_FLAGS != 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let is_array = |o: &CUmemcpy3DOperand| {
        if o.type_ == CUmemcpy3DOperandType::CU_MEMCPY_OPERAND_TYPE_ARRAY {
            // SAFETY: an array operand's union holds its `array` member.
            Some(unsafe { o.op.array.array })
        } else {
            None
        }
    };
    let e = match (is_array(&op.src), is_array(&op.dst)) {
        (None, None) => 1,
        (Some(a), None) | (None, Some(a)) => element_of(a)?,
        (Some(a), Some(b)) => {
            let e = element_of(a)?;
            if element_of(b)? != e {
                return Err(CuError::INVALID_VALUE);
            }
            e
        }
    };
    let (s, d) = (
        end(&op.src, e, x.width, x.height)?,
        end(&op.dst, e, x.width, x.height)?,
    );
    Ok(CUDA_MEMCPY3D {
        srcXInBytes: s.3,
        srcY: s.4,
        srcZ: s.5,
        srcLOD: 0,
        srcMemoryType: s.0,
        srcHost: wire::handle::<std::ffi::c_void>(s.1).cast_const(),
        srcDevice: s.1,
        srcArray: s.2,
        reserved0: std::ptr::null_mut(),
        srcPitch: s.6,
        srcHeight: s.7,
        dstXInBytes: d.3,
        dstY: d.4,
        dstZ: d.5,
        dstLOD: 0,
        dstMemoryType: d.0,
        dstHost: wire::handle(d.1),
        dstDevice: d.1,
        dstArray: d.2,
        reserved1: std::ptr::null_mut(),
        dstPitch: d.6,
        dstHeight: d.7,
        WidthInBytes: x.width.checked_mul(e).ok_or(CuError::INVALID_VALUE)?,
        Height: x.height,
        Depth: x.depth,
    })
}

/// `cuMemcpy3DBatchAsync` (`fail_idx` Some) and `_v2`, on stream `s`
/// (`per_thread`: the `_ptsz` forms). On failure `*fail_idx` is the
/// operation that failed, or `usize::MAX` when the batch was refused whole.
///
/// # Safety
/// `ops` must be NULL or hold `n` operations whose host sides are valid as
/// the CUDA API requires.
pub unsafe fn memcpy_3d_batch(
    n: usize,
    ops: *const CUDA_MEMCPY3D_BATCH_OP,
    fail_idx: Option<*mut usize>,
    flags: u64,
    s: CUstream,
    per_thread: bool,
) -> CuResult<()> {
    runtime().session()?;
    let fail = |i: usize| {
        if let Some(p) = fail_idx.filter(|p| !p.is_null()) {
            // SAFETY: non-NULL; the application's out-pointer.
            unsafe { p.write_unaligned(i) };
        }
    };
    let sid = if per_thread {
        super::stream::id_ptsz(s)
    } else {
        super::stream::id(s)
    };
    if n == 0 || ops.is_null() || flags != 0 || sid == 0 || sid == STREAM_LEGACY {
        fail(usize::MAX);
        return Err(CuError::INVALID_VALUE);
    }
    // Every operation is checked before any copy starts.
    let mut copies = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: `i < n` operations are readable by this function's contract.
        let op = unsafe { ops.add(i).read_unaligned() };
        match plain(&op) {
            Ok(c) => copies.push(c),
            Err(e) => {
                fail(i);
                return Err(e);
            }
        }
    }
    for (i, c) in copies.iter().enumerate() {
        // SAFETY: the application's host sides, valid as the CUDA API requires.
        if let Err(e) = unsafe { copy::memcpy_3d(c, Some(sid)) } {
            fail(i);
            return Err(e);
        }
    }
    Ok(())
}
