//! CUDA arrays on host memory, and every copy with an array on one side.
//!
//! An array is a zeroed block laid out row after row, layer after layer
//! (`vgpu_abi::array::Extent`). Copies check, before a byte moves: memory
//! types, the array's handle, the box inside the array's extent, host
//! pitches wide enough for their rows and slices, and device spans inside
//! one live allocation, as `copy2d` does for linear memory.

use std::ptr;

use vgpu_abi::array::{element_bytes, Extent};

use crate::context;
use crate::cu::{CUresult, CUDA_ARRAY3D_DESCRIPTOR, CUDA_MEMCPY3D};
use crate::error::{err, Res};
use crate::memory::{self, End};
use crate::state::array::{Array, MipmappedArray};
use crate::state::memory::Allocation;
use crate::state::State;

const MEMORY_TYPE_HOST: u32 = 1;
const MEMORY_TYPE_DEVICE: u32 = 2;
const MEMORY_TYPE_ARRAY: u32 = 3;
const MEMORY_TYPE_UNIFIED: u32 = 4;

/// `CUDA_ARRAY3D_LAYERED`, `_SURFACE_LDST`, `_CUBEMAP`, `_TEXTURE_GATHER`:
/// the flags the simulated device knows.
const LAYERED: u32 = 0x1;
const KNOWN_FLAGS: u32 = 0x1 | 0x2 | 0x4 | 0x8;
/// The largest dimensions of an H100-class device: 1D width, 2D width and
/// height, 3D extent.
const MAX_1D: usize = 131_072;
const MAX_2D: (usize, usize) = (131_072, 65_536);
const MAX_3D: usize = 16_384;

fn bad<T>(why: String) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

/// Creates an array in the current context from a 3D descriptor; its bytes
/// count against the device's `budget`, as allocations do.
pub(crate) fn create(st: &mut State, budget: u64, d: &CUDA_ARRAY3D_DESCRIPTOR) -> Res<usize> {
    create_on(st, budget, d, &mut Allocation::new)
}

/// Makes the bytes of an array: `(ctx, device, bytes)` to a block of at
/// least `bytes` bytes, `None` when there is no memory for it.
pub(crate) type Blocks<'a> = dyn FnMut(usize, usize, usize) -> Option<Allocation> + 'a;

/// [`create`] with its bytes from `block`.
pub(crate) fn create_on(
    st: &mut State,
    budget: u64,
    d: &CUDA_ARRAY3D_DESCRIPTOR,
    block: &mut Blocks<'_>,
) -> Res<usize> {
    let ctx = context::current_usable(st)?;
    let (w, h, depth, flags) = (d.Width, d.Height, d.Depth, d.Flags);
    let Some(element) = element_bytes(d.Format.0, d.NumChannels) else {
        return bad(format!(
            "format {:#x} with {} channels is not simulated",
            d.Format.0, d.NumChannels
        ));
    };
    if flags & !KNOWN_FLAGS != 0 {
        return bad(format!("array flags {flags:#x} are not simulated"));
    }
    let layered = flags & LAYERED != 0;
    let fits = match (w, h, depth) {
        (0, _, _) => false,
        (w, 0, 0) => w <= MAX_1D,
        (w, 0, d) => layered && w <= MAX_1D && d <= 2048,
        (w, h, 0) => w <= MAX_2D.0 && h <= MAX_2D.1,
        (w, h, d) if layered => w <= 32_768 && h <= 32_768 && d <= 2048,
        (w, h, d) => w <= MAX_3D && h <= MAX_3D && d <= MAX_3D,
    };
    if !fits {
        return bad(format!(
            "array extent {w}x{h}x{depth} (flags {flags:#x}) is not valid"
        ));
    }
    let dim = |v: usize| v as u64;
    let Some((extent, bytes)) = Extent::new(element, dim(w), dim(h), dim(depth))
        .and_then(|e| Some((e, usize::try_from(e.bytes()?).ok()?)))
    else {
        return bad(format!("array extent {w}x{h}x{depth} overflows"));
    };
    let device = context::live(st, ctx)?.device;
    let left = budget.saturating_sub(st.used[device]);
    if bytes as u64 > left {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            format!("an array of {bytes} bytes, {left} of the simulated budget left"),
        );
    }
    let Some(block) = block(ctx, device, bytes) else {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            format!("no host memory for an array of {bytes} bytes"),
        );
    };
    st.used[device] += bytes as u64;
    let key = st.mint();
    st.ext.arrays.insert(
        key,
        Array {
            ctx,
            width: w,
            height: h,
            depth,
            format: d.Format.0,
            channels: d.NumChannels,
            flags,
            extent,
            block,
        },
    );
    Ok(key)
}

/// Creates a mipmapped array of `levels` levels in the current context.
pub(crate) fn create_mipmapped(
    st: &mut State,
    budget: u64,
    d: &CUDA_ARRAY3D_DESCRIPTOR,
    levels: u32,
) -> Res<usize> {
    create_mipmapped_on(st, budget, d, levels, &mut Allocation::new)
}

/// [`create_mipmapped`] with the levels' bytes from `block`, level after level.
pub(crate) fn create_mipmapped_on(
    st: &mut State,
    budget: u64,
    d: &CUDA_ARRAY3D_DESCRIPTOR,
    levels: u32,
    block: &mut Blocks<'_>,
) -> Res<usize> {
    let ctx = context::current_usable(st)?;
    let largest = d.Width.max(d.Height).max(d.Depth).max(1);
    let most = usize::BITS - largest.leading_zeros();
    if levels == 0 || levels > most {
        return bad(format!(
            "{levels} levels for an extent of {largest} (at most {most})"
        ));
    }
    let mut keys = Vec::new();
    for level in 0..levels {
        let shrink = |v: usize| if v == 0 { 0 } else { (v >> level).max(1) };
        let mut one = *d;
        (one.Width, one.Height, one.Depth) = (shrink(d.Width), shrink(d.Height), shrink(d.Depth));
        match create_on(st, budget, &one, block) {
            Ok(k) => keys.push(k),
            Err(e) => {
                for k in keys {
                    forget(st, k);
                }
                return Err(e);
            }
        }
    }
    let key = st.mint();
    st.ext
        .mipmaps
        .insert(key, MipmappedArray { ctx, levels: keys });
    Ok(key)
}

/// A live mipmapped array (`CUDA_ERROR_INVALID_HANDLE` otherwise).
pub(crate) fn get_mipmapped(st: &State, key: usize) -> Res<&MipmappedArray> {
    match st.ext.mipmaps.get(&key) {
        Some(m) => Ok(m),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("mipmapped array {key:#x} does not exist"),
        ),
    }
}

/// `cuMipmappedArrayDestroy`: the levels go with it.
pub(crate) fn destroy_mipmapped(st: &mut State, key: usize) -> Res<()> {
    context::current(st)?;
    get_mipmapped(st, key)?;
    if let Some(m) = st.ext.mipmaps.remove(&key) {
        for k in m.levels {
            forget(st, k);
        }
    }
    Ok(())
}

/// Removes array `key`, giving its bytes back to the device's budget.
fn forget(st: &mut State, key: usize) {
    if let Some(a) = st.ext.arrays.remove(&key) {
        st.used[a.block.device] -= a.block.size as u64;
    }
}

/// Removes every array and mipmapped array of context `ctx` (destroyed or reset).
pub(crate) fn release_context(st: &mut State, ctx: usize) {
    st.ext.mipmaps.retain(|_, m| m.ctx != ctx);
    let dead: Vec<usize> = st
        .ext
        .arrays
        .iter()
        .filter(|(_, a)| a.ctx == ctx)
        .map(|(&k, _)| k)
        .collect();
    for k in dead {
        forget(st, k);
    }
}

/// A live array (`CUDA_ERROR_INVALID_VALUE` for NULL, `CUDA_ERROR_INVALID_HANDLE`
/// for a handle that is not one).
pub(crate) fn get(st: &State, key: usize) -> Res<&Array> {
    if key == 0 {
        return bad("the array is NULL".into());
    }
    match st.ext.arrays.get(&key) {
        Some(a) => Ok(a),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("array {key:#x} does not exist"),
        ),
    }
}

/// `cuArrayDestroy`.
pub(crate) fn destroy(st: &mut State, key: usize) -> Res<()> {
    context::current(st)?;
    if key == 0 {
        return err(CUresult::CUDA_ERROR_INVALID_HANDLE, "the array is NULL");
    }
    get(st, key)?;
    forget(st, key);
    Ok(())
}

/// One side of a copy, resolved: its first byte and the distance between
/// rows and between slices.
struct Resolved {
    first: *mut u8,
    row: usize,
    slice: usize,
}

/// The descriptor's view of one side.
struct Side {
    memory_type: u32,
    host: *mut u8,
    device: u64,
    array: usize,
    x: usize,
    y: usize,
    z: usize,
    pitch: usize,
    height: usize,
}

fn sides(c: &CUDA_MEMCPY3D) -> [Side; 2] {
    [
        Side {
            memory_type: c.srcMemoryType.0,
            host: c.srcHost.cast_mut().cast(),
            device: c.srcDevice,
            array: c.srcArray.addr(),
            x: c.srcXInBytes,
            y: c.srcY,
            z: c.srcZ,
            pitch: c.srcPitch,
            height: c.srcHeight,
        },
        Side {
            memory_type: c.dstMemoryType.0,
            host: c.dstHost.cast(),
            device: c.dstDevice,
            array: c.dstArray.addr(),
            x: c.dstXInBytes,
            y: c.dstY,
            z: c.dstZ,
            pitch: c.dstPitch,
            height: c.dstHeight,
        },
    ]
}

/// Checks one side of a `w` × `h` × `d` box and resolves it.
fn resolve(st: &State, s: &Side, (w, h, d): (usize, usize, usize), what: &str) -> Res<Resolved> {
    if s.memory_type == MEMORY_TYPE_ARRAY {
        let a = get(st, s.array)?;
        let u = |v: usize| v as u64;
        if !a.extent.holds(u(s.x), u(s.y), u(s.z), u(w), u(h), u(d)) {
            return bad(format!(
                "{what}: {w}x{h}x{d} at ({}, {}, {}) is outside the array ({:?})",
                s.x, s.y, s.z, a.extent
            ));
        }
        // The array's block holds `extent.bytes()` bytes, so these sizes fit
        // a usize and the products below do not overflow.
        let fit = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let row = fit(a.extent.row_bytes);
        let slice = row * fit(a.extent.rows);
        let at = s.z * slice + s.y * row + s.x;
        // SAFETY: the box lies inside the array's block (checked above).
        let first = unsafe { a.block.ptr().add(at) };
        return Ok(Resolved { first, row, slice });
    }
    if (h > 1 || d > 1) && s.x.checked_add(w).is_none_or(|e| e > s.pitch) {
        return bad(format!(
            "{what}: XInBytes {} + WidthInBytes {w} exceeds the pitch {}",
            s.x, s.pitch
        ));
    }
    if d > 1 && s.y.checked_add(h).is_none_or(|e| e > s.height) {
        return bad(format!(
            "{what}: Y {} + Height {h} exceeds the slice height {}",
            s.y, s.height
        ));
    }
    let line = |z: usize, r: usize| -> Option<usize> {
        z.checked_mul(s.height)?
            .checked_add(r)?
            .checked_mul(s.pitch)?
            .checked_add(s.x)
    };
    let (Some(first), Some(last)) = (
        line(s.z, s.y),
        s.z.checked_add(d - 1)
            .and_then(|z| line(z, s.y.checked_add(h - 1)?))
            .and_then(|l| l.checked_add(w)),
    ) else {
        return bad(format!("{what}: the region's offsets overflow"));
    };
    let (row, slice) = (s.pitch, s.pitch.saturating_mul(s.height));
    let end = match s.memory_type {
        MEMORY_TYPE_HOST => End::Host(s.host),
        MEMORY_TYPE_DEVICE => End::Device(s.device),
        MEMORY_TYPE_UNIFIED => End::unified(st, s.device),
        t => return bad(format!("{what}: {t} is not a CUmemorytype")),
    };
    let first = match end {
        End::Host(p) if p.is_null() => return bad(format!("{what}: host pointer is NULL")),
        // SAFETY: the caller's host region holds the box by the copy's contract.
        End::Host(p) => unsafe { p.add(first) },
        End::Device(dev) => {
            let Some(start) = dev.checked_add(first as u64) else {
                return bad(format!("{what}: device address overflows"));
            };
            memory::range(st, start, last - first)?
        }
    };
    Ok(Resolved { first, row, slice })
}

/// `cuMemcpy3D`: copies the box after checking both sides.
///
/// # Safety
/// Host sides (and unified addresses outside device memory) must hold the box.
pub(crate) unsafe fn copy_3d(st: &State, c: &CUDA_MEMCPY3D) -> Res<()> {
    let [src, dst] = sides(c);
    for (s, what) in [(&src, "source"), (&dst, "destination")] {
        if !matches!(s.memory_type, 1..=4) {
            return bad(format!("{what}: {} is not a CUmemorytype", s.memory_type));
        }
    }
    if c.srcLOD != 0 || c.dstLOD != 0 {
        return bad("a level of detail other than 0".into());
    }
    let (w, h, d) = (c.WidthInBytes, c.Height, c.Depth);
    if w == 0 || h == 0 || d == 0 {
        return Ok(());
    }
    let to = resolve(st, &dst, (w, h, d), "destination")?;
    let from = resolve(st, &src, (w, h, d), "source")?;
    for z in 0..d {
        for r in 0..h {
            // Every row of the box was checked to lie inside its side.
            // SAFETY: both sides hold the box (checked, or the caller's
            // contract for host sides); `ptr::copy` allows overlap.
            unsafe {
                ptr::copy(
                    from.first.add(z * from.slice + r * from.row),
                    to.first.add(z * to.slice + r * to.row),
                    w,
                )
            };
        }
    }
    Ok(())
}

/// A run of `n` bytes at byte `offset` of array `key`, checked.
fn run_of(st: &State, key: usize, offset: usize, n: usize, what: &str) -> Res<*mut u8> {
    let a = get(st, key)?;
    if !a.extent.holds_run(offset as u64, n as u64) {
        return bad(format!(
            "{what}: {n} bytes at offset {offset} run past the array ({:?})",
            a.extent
        ));
    }
    // SAFETY: the run lies inside the array's block (checked above).
    Ok(unsafe { a.block.ptr().add(offset) })
}

/// One side of a run copy (`cuMemcpyHtoA` and its kin).
pub(crate) enum Run {
    Host(*mut u8),
    Device(u64),
    Array(usize, usize),
}

/// Copies `n` bytes between two runs after checking both.
///
/// # Safety
/// Host sides must hold `n` bytes.
pub(crate) unsafe fn copy_run(st: &State, dst: Run, src: Run, n: usize) -> Res<()> {
    if n == 0 {
        return Ok(());
    }
    let at = |r: &Run, what: &str| -> Res<*mut u8> {
        match *r {
            Run::Host(p) if p.is_null() => bad(format!("{what}: host pointer is NULL")),
            Run::Host(p) => Ok(p),
            Run::Device(d) => memory::range(st, d, n),
            Run::Array(key, offset) => run_of(st, key, offset, n, what),
        }
    };
    let (d, s) = (at(&dst, "destination")?, at(&src, "source")?);
    // SAFETY: both runs hold `n` bytes (checked, or the caller's contract for
    // host sides); `ptr::copy` allows overlap.
    unsafe { ptr::copy(s, d, n) };
    Ok(())
}
