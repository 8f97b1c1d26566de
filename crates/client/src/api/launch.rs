//! Kernel launches (`cuLaunchKernel`, `cuLaunchKernelEx`, cooperative
//! launches) and the occupancy query that takes a launch configuration.
//!
//! Parameters are packed into one buffer by the function's layout, which
//! the client keeps (`api::module`), or come as one buffer (the `extra`
//! form, which cuDNN uses); the worker launches either with `kernelParams`.
//! A launch is posted without waiting when
//! the client has checked what the driver would refuse at once (a live
//! context, a stream usable in it, the geometry and shared memory within the
//! device's limits); its failure then comes back at the thread's next
//! synchronizing call (`docs/adr/0004-async-errors.md`).

use std::ffi::{c_int, c_uint, c_void};

use vgpu_abi::types::{CUfunction, CUlaunchAttribute, CUlaunchConfig};
use vgpu_proto::{
    launch_kernel, launch_kernel_ex as launch_op, launch_multi_device,
    occupancy_max_active_clusters as clusters_op,
    occupancy_max_potential_cluster_size as cluster_size_op, param_setv as setv_op,
};
use zerocopy::little_endian::{U32, U64};

use super::stream;
use crate::edge::{non_null, write_out, CuError, CuResult};
use crate::lane::Follows;
use crate::objects::LaunchConfig;
use crate::runtime::runtime;

mod posting;
use posting::{geometry_ok, launch_postable, launch_target, meaningful, names_events};

/// The fixed part of a request that carries a launch configuration
/// (`cuLaunchKernelEx`, `cuOccupancyMaxActiveClusters`: the same fields)
/// from its [`Config`].
macro_rules! config_request {
    ($request:path, $c:expr) => {{
        let c = &$c;
        $request {
            function: U64::new(c.function),
            grid_x: U32::new(c.dims[0]),
            grid_y: U32::new(c.dims[1]),
            grid_z: U32::new(c.dims[2]),
            block_x: U32::new(c.dims[3]),
            block_y: U32::new(c.dims[4]),
            block_z: U32::new(c.dims[5]),
            shared: U32::new(c.dims[6]),
            stream: U64::new(c.stream),
            attributes: U32::new(c.attributes),
        }
    }};
}

/// The keys of `cuLaunchKernel`'s `extra` list.
const LAUNCH_PARAM_END: usize = 0x00;
const LAUNCH_PARAM_BUFFER_POINTER: usize = 0x01;
const LAUNCH_PARAM_BUFFER_SIZE: usize = 0x02;

/// The end of the last parameter of `layout`: the bytes a packed buffer holds.
fn params_end(layout: &[(u32, u32)]) -> usize {
    layout
        .iter()
        .map(|&(o, s)| o as usize + s as usize)
        .max()
        .unwrap_or(0)
}

/// Packs `kernelParams` (one pointer per parameter) by the cached layout.
///
/// # Safety
/// `params` must hold one valid pointer per kernel parameter.
pub(super) unsafe fn pack(layout: &[(u32, u32)], params: *mut *mut c_void) -> CuResult<Vec<u8>> {
    let mut buf = Vec::new();
    // SAFETY: the caller's promise.
    unsafe { pack_into(&mut buf, layout, params)? };
    Ok(buf)
}

/// [`pack`] into `buf`, replacing its contents.
///
/// # Safety
/// As for [`pack`].
pub(super) unsafe fn pack_into(
    buf: &mut Vec<u8>,
    layout: &[(u32, u32)],
    params: *mut *mut c_void,
) -> CuResult<()> {
    let total = params_end(layout);
    buf.clear();
    buf.resize(total, 0);
    if layout.is_empty() {
        return Ok(());
    }
    non_null(params)?;
    for (i, &(off, size)) in layout.iter().enumerate() {
        // SAFETY: the application passes one pointer per parameter.
        let arg = unsafe { *params.add(i) };
        non_null(arg)?;
        // SAFETY: `arg` points at a value of `size` bytes; `buf` holds
        // `off + size` bytes by construction.
        unsafe {
            std::ptr::copy_nonoverlapping(
                arg.cast::<u8>(),
                buf.as_mut_ptr().add(off as usize),
                size as usize,
            )
        };
    }
    Ok(())
}

/// Reads the packed buffer of the `extra` launch form. It may be shorter
/// than the kernel's parameters (NCCL declares a 4 KiB argument and passes
/// only the bytes its kernel reads): the worker zero-fills the rest.
///
/// # Safety
/// `extra` must be a `CU_LAUNCH_PARAM_END`-terminated list of (key, value) pairs.
pub(super) unsafe fn packed_extra(extra: *mut *mut c_void) -> CuResult<Vec<u8>> {
    let (mut buf, mut size) = (std::ptr::null::<u8>(), None::<usize>);
    for i in (0..64).step_by(2) {
        // SAFETY: the list is END-terminated; we stop at END or after 32 pairs.
        let key = unsafe { *extra.add(i) } as usize;
        if key == LAUNCH_PARAM_END {
            break;
        }
        // SAFETY: every non-END key is followed by its value.
        let value = unsafe { *extra.add(i + 1) };
        match key {
            LAUNCH_PARAM_BUFFER_POINTER => buf = value.cast(),
            // SAFETY: the size value points at a size_t.
            LAUNCH_PARAM_BUFFER_SIZE if !value.is_null() => {
                // SAFETY: the size value points at a size_t.
                size = Some(unsafe { *value.cast::<usize>() })
            }
            _ => return Err(CuError::INVALID_VALUE),
        }
    }
    match size {
        Some(n) if !buf.is_null() && n <= vgpu_proto::MAX_BLOB => {
            // SAFETY: the application's buffer holds `n` bytes.
            Ok(unsafe { std::slice::from_raw_parts(buf, n) }.to_vec())
        }
        _ => Err(CuError::INVALID_VALUE),
    }
}

/// # Safety
/// `params` must be NULL or hold one valid pointer per kernel parameter, each
/// to a value of that parameter's size; `extra` must be NULL or a
/// `CU_LAUNCH_PARAM_END`-terminated list, as the CUDA API defines them.
pub unsafe fn launch(
    f: CUfunction,
    dims: [c_uint; 6],
    shmem: c_uint,
    sid: u64,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    let ctx = crate::context::current();
    let fid = f as usize as u64;
    let r = launch_kernel::Request {
        function: U64::new(fid),
        grid_x: U32::new(dims[0]),
        grid_y: U32::new(dims[1]),
        grid_z: U32::new(dims[2]),
        block_x: U32::new(dims[3]),
        block_y: U32::new(dims[4]),
        block_z: U32::new(dims[5]),
        shared: U32::new(shmem),
        stream: U64::new(sid),
    };
    with_scratch(|blob| {
        // One look at the objects: the function's layout, by which the
        // parameters are packed right there (no reference to the layout
        // is taken: launching threads would trade its count's cache
        // line), and the device of a live context whose stream this is.
        let (device, shared) = {
            let o = s.objects();
            let info = o.functions.get(&fid).ok_or(CuError::INVALID_HANDLE)?;
            if !params.is_null() && !extra.is_null() {
                return Err(CuError::INVALID_VALUE);
            }
            if extra.is_null() {
                // SAFETY: the application's parameter array.
                unsafe { pack_into(blob, &info.params, params)? };
            }
            launch_target(&o, ctx, fid, info.kernel, sid)
        };
        // The `extra` form is posted as readily: the list was read here,
        // and the worker launches either form with `kernelParams`.
        let post = device.is_some_and(|d| geometry_ok(s, d, dims, shmem, shared));
        if !extra.is_null() {
            // SAFETY: the application's `extra` list.
            let packed = unsafe { packed_extra(extra)? };
            return s.post_or_request(&r, &packed, post, Follows::Stream(sid));
        }
        s.post_or_request(&r, blob, post, Follows::Stream(sid))
    })
}

/// Runs `f` with this thread's reusable buffer, taken out for the call and
/// put back after it (a nested call, or one while the thread's locals are
/// torn down, gets a fresh one): a launch packs its parameters without
/// allocating.
fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut buf = SCRATCH.try_with(std::cell::Cell::take).unwrap_or_default();
    let r = f(&mut buf);
    let _ = SCRATCH.try_with(|c| c.set(buf));
    r
}

/// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`.
const LAUNCH_ATTRIBUTE_COOPERATIVE: u32 = 2;

const MAX_LAUNCH_ATTRS: usize = 32;
const _: () = assert!(std::mem::size_of::<CUlaunchAttribute>() == 72);

/// The scalar part of a launch configuration, as the wire carries it.
#[derive(Clone, Copy, Debug)]
struct Config {
    function: u64,
    /// Grid, block, then dynamic shared memory.
    dims: [u32; 7],
    stream: u64,
    attributes: u32,
}

/// The scalar part of a launch config and its attribute bytes.
///
/// # Safety
/// `config` must be NULL or a valid `CUlaunchConfig` whose `attrs` holds `numAttrs` entries.
unsafe fn config_args(
    f: CUfunction,
    config: *const CUlaunchConfig,
    stream_id: fn(*mut vgpu_abi::types::CUstream_st) -> u64,
) -> CuResult<(Config, Vec<u8>)> {
    non_null(config)?;
    // SAFETY: checked non-NULL; the application's config.
    let c = unsafe { &*config };
    let n = c.numAttrs as usize;
    if n > MAX_LAUNCH_ATTRS || (n > 0 && c.attrs.is_null()) {
        return Err(CuError::INVALID_VALUE);
    }
    let bytes = n * std::mem::size_of::<CUlaunchAttribute>();
    let attrs = if n == 0 {
        Vec::new()
    } else {
        // SAFETY: `attrs` holds `n` plain-data records.
        unsafe { std::slice::from_raw_parts(c.attrs.cast::<u8>(), bytes) }.to_vec()
    };
    let dims = [
        c.gridDimX,
        c.gridDimY,
        c.gridDimZ,
        c.blockDimX,
        c.blockDimY,
        c.blockDimZ,
        c.sharedMemBytes,
    ];
    let config = Config {
        function: f as usize as u64,
        dims,
        stream: stream_id(c.hStream),
        attributes: c.numAttrs,
    };
    Ok((config, attrs))
}

/// # Safety
/// `n` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
/// `config` must be NULL or point to what the CUDA API says the caller passes there.
pub unsafe fn occupancy_clusters(
    n: *mut c_int,
    f: CUfunction,
    config: *const CUlaunchConfig,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(n)?;
    super::module::function(f)?;
    // SAFETY: the application's config.
    let (c, attrs) = unsafe { config_args(f, config, stream::id)? };
    let r = config_request!(clusters_op::Request, c);
    let (rep, _) = s.request(&r, &attrs)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(n, rep.clusters.get()) }
}

/// `cuOccupancyMaxPotentialClusterSize`, asked of the worker's driver.
///
/// # Safety
/// `n` must be NULL or valid for a write; `config` NULL or a valid
/// `CUlaunchConfig` whose `attrs` holds `numAttrs` entries.
pub unsafe fn occupancy_cluster_size(
    n: *mut c_int,
    f: CUfunction,
    config: *const CUlaunchConfig,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(n)?;
    super::module::function(f)?;
    // SAFETY: the application's config.
    let (c, attrs) = unsafe { config_args(f, config, stream::id)? };
    let r = config_request!(cluster_size_op::Request, c);
    let (rep, _) = s.request(&r, &attrs)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(n, rep.cluster_size.get()) }
}

/// `cuParamSetv` (deprecated): the bytes travel to the function's legacy
/// parameter buffer in the worker's driver.
///
/// # Safety
/// `ptr` must be NULL or hold `n` readable bytes.
pub unsafe fn param_setv(
    f: CUfunction,
    offset: c_int,
    ptr: *mut c_void,
    n: c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    super::module::function(f)?;
    let bytes = if n == 0 {
        &[][..]
    } else {
        non_null(ptr)?;
        // SAFETY: checked non-NULL; the application's `n` bytes.
        unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), n as usize) }
    };
    let r = setv_op::Request {
        function: U64::new(f as usize as u64),
        offset: zerocopy::little_endian::I32::new(offset),
    };
    s.request(&r, bytes).map(drop)
}

/// `cuLaunchKernelEx` (and `_ptsz` through `stream_id`).
///
/// # Safety
/// `params` must be NULL or hold one valid pointer per kernel parameter, each
/// to a value of that parameter's size; `extra` must be NULL or a
/// `CU_LAUNCH_PARAM_END`-terminated list, as the CUDA API defines them.
/// `config` must be NULL or point to what the CUDA API says the caller passes there.
pub unsafe fn launch_ex(
    config: *const CUlaunchConfig,
    f: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    stream_id: fn(*mut vgpu_abi::types::CUstream_st) -> u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    let info = super::module::function(f)?;
    // SAFETY: the application's config.
    let (c, mut blob) = unsafe { config_args(f, config, stream_id)? };
    let packed = match (params.is_null(), extra.is_null()) {
        (false, false) => return Err(CuError::INVALID_VALUE),
        // SAFETY: the application's `extra` list.
        (true, false) => unsafe { packed_extra(extra)? },
        // SAFETY: the application's parameter array.
        _ => unsafe { pack(&info.params, params)? },
    };
    // Launch attributes (clusters, cooperative, priorities…) are checked by
    // the driver: a launch with them is posted only in a configuration the
    // driver accepted before (the same function, dimensions, shared memory
    // and attributes), and never with attributes naming events.
    let dims: [c_uint; 6] = std::array::from_fn(|i| c.dims[i]);
    let checked = launch_postable(s, c.function, c.stream, dims, c.dims[6]);
    let config = (checked && c.attributes != 0 && !names_events(&blob)).then(|| LaunchConfig {
        function: c.function,
        context: crate::context::current(),
        dims: c.dims.map(u64::from),
        attributes: meaningful(&blob),
    });
    let post = checked
        && match &config {
            None => c.attributes == 0,
            Some(k) => s.objects().answers.launches.contains(k),
        };
    blob.extend_from_slice(&packed);
    let follows = crate::lane::Follows::Stream(c.stream);
    let r = config_request!(launch_op::Request, c);
    s.post_or_request(&r, &blob, post, follows)?;
    if let (Some(c), false) = (config, post) {
        s.objects().answers.keep_launch(c);
    }
    Ok(())
}

/// `cuLaunchCooperativeKernel`: a `cuLaunchKernelEx` with the cooperative attribute.
///
/// # Safety
/// `params` must be NULL or hold one valid pointer per kernel parameter, each
/// to a value of that parameter's size.
pub unsafe fn launch_cooperative(
    f: CUfunction,
    dims: [c_uint; 6],
    shmem: c_uint,
    st: vgpu_abi::types::CUstream,
    params: *mut *mut c_void,
    stream_id: fn(*mut vgpu_abi::types::CUstream_st) -> u64,
) -> CuResult<()> {
    // SAFETY: CUlaunchAttribute is plain data; all-zero is a valid value.
    let mut attr: CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id.0 = LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    let config = CUlaunchConfig {
        gridDimX: dims[0],
        gridDimY: dims[1],
        gridDimZ: dims[2],
        blockDimX: dims[3],
        blockDimY: dims[4],
        blockDimZ: dims[5],
        sharedMemBytes: shmem,
        hStream: st,
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: a valid config built above; the application's parameters.
    unsafe { launch_ex(&config, f, params, std::ptr::null_mut(), stream_id) }
}

/// Bytes of one entry's head in a `LaunchMultiDevice` blob (the table's
/// comment gives the layout).
const MULTI_HEAD: usize = 48;

/// `cuLaunchCooperativeKernelMultiDevice`: every entry's function and
/// stream as ids and its parameters packed, as for `cuLaunchKernel`; the
/// worker's driver checks the count, the flags and the devices.
///
/// # Safety
/// `list` must be NULL or hold `count` entries, each with `kernelParams`
/// as `cuLaunchKernel` takes it.
pub unsafe fn launch_multi_device(
    list: *mut vgpu_abi::types::CUDA_LAUNCH_PARAMS,
    count: c_uint,
    flags: c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    let entries = if count == 0 {
        &[][..]
    } else {
        non_null(list)?;
        // SAFETY: the application's array of `count` entries.
        unsafe { std::slice::from_raw_parts(list, count as usize) }
    };
    let mut blob = Vec::new();
    for e in entries {
        let info = super::module::function(e.function)?;
        // SAFETY: the application's parameter array for this entry.
        let packed = unsafe { pack(&info.params, e.kernelParams)? };
        let len = u32::try_from(packed.len()).map_err(|_| CuError::INVALID_VALUE)?;
        let start = blob.len();
        blob.extend_from_slice(&(e.function as usize as u64).to_le_bytes());
        blob.extend_from_slice(&stream::id(e.hStream).to_le_bytes());
        for v in [
            e.gridDimX,
            e.gridDimY,
            e.gridDimZ,
            e.blockDimX,
            e.blockDimY,
            e.blockDimZ,
            e.sharedMemBytes,
            len,
        ] {
            blob.extend_from_slice(&v.to_le_bytes());
        }
        debug_assert_eq!(blob.len() - start, MULTI_HEAD);
        blob.extend_from_slice(&packed);
    }
    let r = launch_multi_device::Request {
        devices: U32::new(count),
        flags: U32::new(flags),
    };
    s.request(&r, &blob).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `extra` list for `buf`: pointer, size, end.
    fn extra_list(buf: &mut [u8], size: &mut usize) -> [*mut c_void; 5] {
        [
            LAUNCH_PARAM_BUFFER_POINTER as *mut c_void,
            buf.as_mut_ptr().cast(),
            LAUNCH_PARAM_BUFFER_SIZE as *mut c_void,
            (size as *mut usize).cast(),
            LAUNCH_PARAM_END as *mut c_void,
        ]
    }

    #[test]
    fn an_extra_buffer_travels_as_the_application_sized_it() {
        // 24 bytes for a kernel whose parameters end at 4104, as NCCL
        // launches: the worker, not the wire, fills the rest.
        let mut buf: Vec<u8> = (1..=24).collect();
        let mut size = buf.len();
        let mut list = extra_list(&mut buf, &mut size);
        // SAFETY: an END-terminated list whose buffer holds `size` bytes.
        let packed = unsafe { packed_extra(list.as_mut_ptr()) }.expect("packed");
        assert_eq!(packed, buf);
    }

    #[test]
    fn an_extra_list_without_a_size_is_refused() {
        let mut buf = [0u8; 8];
        let mut list = [
            LAUNCH_PARAM_BUFFER_POINTER as *mut c_void,
            buf.as_mut_ptr().cast(),
            LAUNCH_PARAM_END as *mut c_void,
        ];
        // SAFETY: an END-terminated list.
        let r = unsafe { packed_extra(list.as_mut_ptr()) };
        assert_eq!(r.expect_err("no size"), CuError::INVALID_VALUE);
    }
}
