//! Kernel launches (`cuLaunchKernel`, `cuLaunchKernelEx`, cooperative launches) and the
//! occupancy calculator.

use std::ffi::{c_int, c_uint, c_void};

use crate::cu::{CUfunction, CUlaunchConfig, CUresult, CUstream, CUtexref, CUDA_LAUNCH_PARAMS};
use crate::error::{err, Res};
use crate::ffi::{key, run, Out};
use crate::launch::{self, Launch, Options};
use crate::state;
use crate::{funcattr, legacy};

/// `cuLaunchKernel`: runs the built-in kernel now, in stream order. Arguments come from
/// `kernelParams`; a non-NULL `extra` gives `CUDA_ERROR_INVALID_VALUE`. A kernel that
/// would touch memory outside the live allocations touches nothing and leaves the
/// context's sticky error set.
///
/// # Safety
/// `kernel_params` must be NULL or hold one pointer per kernel parameter, each NULL or
/// pointing to a value of that parameter's type.
#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernel(
    f: CUfunction,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_bytes: c_uint,
    h_stream: CUstream,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    run("cuLaunchKernel", || {
        let sim = state::sim()?;
        if !extra.is_null() {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "the simulator takes arguments through kernelParams only, not extra",
            );
        }
        let geometry = Launch {
            grid: [grid_x, grid_y, grid_z],
            block: [block_x, block_y, block_z],
            shared_bytes,
        };
        let params = kernel_params.cast_const().cast::<*const c_void>();
        // SAFETY: forwarded from this function's contract.
        unsafe { launch::launch_kernel(&mut sim.lock(), key(f), geometry, key(h_stream), params) }
    })
}

/// Reads a launch configuration: geometry, stream and options.
///
/// # Safety
/// `config` must be NULL or point to a readable `CUlaunchConfig` whose `attrs` is NULL or
/// holds `numAttrs` entries.
unsafe fn read_config(config: *const CUlaunchConfig) -> Res<(Launch, usize, Options)> {
    if config.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "config is NULL");
    }
    // SAFETY: non-NULL and readable by the contract.
    let c = unsafe { config.read_unaligned() };
    // SAFETY: forwarded from this function's contract.
    let options = unsafe { launch::read_attrs(c.attrs, c.numAttrs) }?;
    let geometry = Launch {
        grid: [c.gridDimX, c.gridDimY, c.gridDimZ],
        block: [c.blockDimX, c.blockDimY, c.blockDimZ],
        shared_bytes: c.sharedMemBytes,
    };
    Ok((geometry, key(c.hStream), options))
}

/// `cuLaunchKernelEx`: `cuLaunchKernel` with launch attributes. Cooperative launches must
/// fit on the device at once; cluster dimensions are checked as the driver does
/// (`CUDA_ERROR_INVALID_CLUSTER_SIZE`). Arguments come from `kernelParams` only.
///
/// # Safety
/// `config` as for `read_config`; `kernel_params` as for `cuLaunchKernel`.
#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const CUlaunchConfig,
    f: CUfunction,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    run("cuLaunchKernelEx", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let (geometry, stream, options) = unsafe { read_config(config) }?;
        if !extra.is_null() {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "the simulator takes arguments through kernelParams only, not extra",
            );
        }
        let params = kernel_params.cast_const().cast::<*const c_void>();
        let mut st = sim.lock();
        // SAFETY: forwarded from this function's contract.
        unsafe { launch::launch(&mut st, key(f), geometry, stream, params, &options) }
    })
}

/// `cuLaunchCooperativeKernel`: every block must be resident at once
/// (`CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE` otherwise).
///
/// # Safety
/// As for `cuLaunchKernel`.
#[no_mangle]
pub unsafe extern "C" fn cuLaunchCooperativeKernel(
    f: CUfunction,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_bytes: c_uint,
    h_stream: CUstream,
    kernel_params: *mut *mut c_void,
) -> CUresult {
    run("cuLaunchCooperativeKernel", || {
        let sim = state::sim()?;
        let geometry = Launch {
            grid: [grid_x, grid_y, grid_z],
            block: [block_x, block_y, block_z],
            shared_bytes,
        };
        let options = Options {
            cooperative: true,
            ..Options::default()
        };
        let params = kernel_params.cast_const().cast::<*const c_void>();
        let mut st = sim.lock();
        // SAFETY: forwarded from this function's contract.
        unsafe { launch::launch(&mut st, key(f), geometry, key(h_stream), params, &options) }
    })
}

/// `cuLaunchCooperativeKernelMultiDevice` on the one simulated device: one
/// entry, on a stream the application created, with no flags but
/// `CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC` (1) and
/// `..._NO_POST_LAUNCH_SYNC` (2), launched as `cuLaunchCooperativeKernel`
/// (with one device, both synchronizations are the stream's own order).
///
/// # Safety
/// `list` must be NULL or hold `count` entries, each with `kernelParams` as
/// for `cuLaunchKernel`.
#[no_mangle]
pub unsafe extern "C" fn cuLaunchCooperativeKernelMultiDevice(
    list: *mut CUDA_LAUNCH_PARAMS,
    count: c_uint,
    flags: c_uint,
) -> CUresult {
    run("cuLaunchCooperativeKernelMultiDevice", || {
        let sim = state::sim()?;
        if list.is_null() || count == 0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "launchParamsList is NULL or numDevices is 0",
            );
        }
        if flags & !3 != 0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("flags {flags:#x}"),
            );
        }
        if count > 1 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{count} entries for one device"),
            );
        }
        // SAFETY: non-NULL, one entry by this function's contract.
        let e = unsafe { list.read() };
        if crate::stream::implicit(key(e.hStream)) {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "a multi-device launch needs a created stream",
            );
        }
        let geometry = Launch {
            grid: [e.gridDimX, e.gridDimY, e.gridDimZ],
            block: [e.blockDimX, e.blockDimY, e.blockDimZ],
            shared_bytes: e.sharedMemBytes,
        };
        let options = Options {
            cooperative: true,
            ..Options::default()
        };
        let params = e.kernelParams.cast_const().cast::<*const c_void>();
        let mut st = sim.lock();
        // SAFETY: the entry's parameters, by this function's contract.
        unsafe {
            launch::launch(
                &mut st,
                key(e.function),
                geometry,
                key(e.hStream),
                params,
                &options,
            )
        }
    })
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags`, from the occupancy model.
pub(crate) fn occupancy_max_active_blocks_per_multiprocessor_with_flags(
    num_blocks: Out<c_int>,
    func: CUfunction,
    block_size: c_int,
    dynamic_smem: usize,
    flags: c_uint,
) -> Res<()> {
    let st = state::sim()?.lock();
    num_blocks.write(funcattr::max_active_blocks(
        &st,
        key(func),
        block_size,
        dynamic_smem,
        flags,
    )?);
    Ok(())
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`: the same with flags 0.
pub(crate) fn occupancy_max_active_blocks_per_multiprocessor(
    num_blocks: Out<c_int>,
    func: CUfunction,
    block_size: c_int,
    dynamic_smem: usize,
) -> Res<()> {
    occupancy_max_active_blocks_per_multiprocessor_with_flags(
        num_blocks,
        func,
        block_size,
        dynamic_smem,
        0,
    )
}

/// `cuOccupancyMaxActiveClusters`: the cluster size comes from the configuration's
/// cluster attribute, or from the function's required cluster dimensions.
///
/// # Safety
/// `num_clusters` must be NULL or valid for writes; `config` as for `read_config`.
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveClusters(
    num_clusters: *mut c_int,
    func: CUfunction,
    config: *const CUlaunchConfig,
) -> CUresult {
    run("cuOccupancyMaxActiveClusters", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(num_clusters, "numClusters") }?;
        // SAFETY: forwarded from this function's contract.
        let (geometry, _, options) = unsafe { read_config(config) }?;
        let st = sim.lock();
        let f = key(func);
        let (kernel, attrs) = funcattr::for_launch(&st, f)?;
        geometry.threads(attrs.max_dynamic_shared.unsigned_abs())?;
        let required = attrs.required_cluster.map(|r| r.unsigned_abs());
        let cluster = match options.cluster {
            Some(c) => c,
            None if required.iter().all(|&r| r != 0) => required,
            None => {
                return err(
                    CUresult::CUDA_ERROR_INVALID_CLUSTER_SIZE,
                    "no cluster dimension in the configuration nor required by the function",
                )
            }
        };
        // The grid does not matter here: check the cluster against itself.
        let size = launch::check_cluster(&st, f, cluster, cluster)?;
        let threads: u64 = geometry.block.iter().map(|&b| u64::from(b)).product();
        out.write(funcattr::max_active_clusters(
            kernel,
            threads,
            u64::from(geometry.shared_bytes),
            size,
        ));
        Ok(())
    })
}

/// `cuOccupancyAvailableDynamicSMemPerBlock`.
pub(crate) fn occupancy_available_dynamic_smem_per_block(
    dynamic_smem: Out<usize>,
    func: CUfunction,
    num_blocks: c_int,
    block_size: c_int,
) -> Res<()> {
    let sim = state::sim()?;
    let out = dynamic_smem;
    let st = sim.lock();
    out.write(funcattr::available_dynamic_smem(
        &st,
        key(func),
        num_blocks,
        block_size,
    )?);
    Ok(())
}

/// `cuOccupancyMaxPotentialClusterSize`: the function's required cluster
/// size when it has one, else the largest cluster (up to the portable
/// limit, or the non-portable one when the function allows it) of which at
/// least one fits on the device with the configuration's block and shared
/// memory.
///
/// # Safety
/// `cluster_size` must be NULL or valid for writes; `config` as for `read_config`.
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxPotentialClusterSize(
    cluster_size: *mut c_int,
    func: CUfunction,
    config: *const CUlaunchConfig,
) -> CUresult {
    run("cuOccupancyMaxPotentialClusterSize", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(cluster_size, "clusterSize") }?;
        // SAFETY: forwarded from this function's contract.
        let (geometry, _, _) = unsafe { read_config(config) }?;
        let st = sim.lock();
        let (kernel, attrs) = funcattr::for_launch(&st, key(func))?;
        geometry.threads(attrs.max_dynamic_shared.unsigned_abs())?;
        let required = attrs.required_cluster.map(|r| r.unsigned_abs());
        if required.iter().all(|&r| r != 0) {
            let size: u32 = required.iter().product();
            out.write(c_int::try_from(size).unwrap_or(c_int::MAX));
            return Ok(());
        }
        let limit = launch::cluster_limit(attrs.non_portable_cluster != 0);
        let threads: u64 = geometry.block.iter().map(|&b| u64::from(b)).product();
        let smem = u64::from(geometry.shared_bytes);
        let best = (1..=limit)
            .rev()
            .find(|&c| funcattr::max_active_clusters(kernel, threads, smem, c) > 0)
            .unwrap_or(0);
        out.write(c_int::try_from(best).unwrap_or(c_int::MAX));
        Ok(())
    })
}

/// `cuParamSetSize` (deprecated): the size of the function's legacy
/// parameter buffer.
pub(crate) fn param_set_size(hfunc: CUfunction, numbytes: c_uint) -> Res<()> {
    legacy::set_size(&mut state::sim()?.lock(), key(hfunc), numbytes)
}

/// `cuParamSeti` (deprecated): a 32-bit integer at `offset`.
pub(crate) fn param_seti(hfunc: CUfunction, offset: c_int, value: c_uint) -> Res<()> {
    legacy::set(
        &mut state::sim()?.lock(),
        key(hfunc),
        offset,
        &value.to_ne_bytes(),
    )
}

/// `cuParamSetf` (deprecated): a float at `offset`.
pub(crate) fn param_setf(hfunc: CUfunction, offset: c_int, value: f32) -> Res<()> {
    legacy::set(
        &mut state::sim()?.lock(),
        key(hfunc),
        offset,
        &value.to_ne_bytes(),
    )
}

/// `cuParamSetv` (deprecated): `numbytes` bytes at `offset`.
///
/// # Safety
/// `ptr` must be NULL or hold `numbytes` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn cuParamSetv(
    hfunc: CUfunction,
    offset: c_int,
    ptr: *mut c_void,
    numbytes: c_uint,
) -> CUresult {
    run("cuParamSetv", || {
        let sim = state::sim()?;
        if ptr.is_null() && numbytes > 0 {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "ptr is NULL");
        }
        let bytes = if numbytes == 0 {
            &[][..]
        } else {
            // SAFETY: `ptr` holds `numbytes` bytes by the contract.
            unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), numbytes as usize) }
        };
        legacy::set(&mut sim.lock(), key(hfunc), offset, bytes)
    })
}

/// `cuParamSetTexRef` (deprecated).
pub(crate) fn param_set_tex_ref(hfunc: CUfunction, texunit: c_int, texref: CUtexref) -> Res<()> {
    legacy::set_tex_ref(&mut state::sim()?.lock(), key(hfunc), texunit, key(texref))
}

/// `cuLaunch` (deprecated): a 1 × 1 grid on the legacy stream.
pub(crate) fn launch(f: CUfunction) -> Res<()> {
    legacy::launch_grid(&mut state::sim()?.lock(), key(f), 1, 1, 0)
}

/// `cuLaunchGrid` (deprecated): on the legacy stream.
pub(crate) fn launch_grid(f: CUfunction, width: c_int, height: c_int) -> Res<()> {
    legacy::launch_grid(&mut state::sim()?.lock(), key(f), width, height, 0)
}

/// `cuLaunchGridAsync` (deprecated).
pub(crate) fn launch_grid_async(
    f: CUfunction,
    width: c_int,
    height: c_int,
    stream: CUstream,
) -> Res<()> {
    legacy::launch_grid(
        &mut state::sim()?.lock(),
        key(f),
        width,
        height,
        key(stream),
    )
}
