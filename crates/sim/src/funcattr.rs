//! Function and kernel attributes (`cuFuncGetAttribute`, `cuKernelSetAttribute`, …) and
//! the occupancy model behind `cuOccupancy*` and cooperative launches.
//!
//! Attributes are kept per target: a plain function, or a library kernel on one device. A
//! function loaded from a library shares the attributes of its kernel on the device of its
//! context, so `cuKernelSetAttribute` and `cuFuncSetAttribute` on either handle agree.
//!
//! The occupancy model is an H100's (132 SMs): per SM at most 32 blocks, 64 warps, 65536
//! registers (allocated per warp in units of 256) and 233472 bytes of shared memory, with
//! 1 KiB reserved per block.

use crate::context;
use crate::cu::CUresult;
use crate::error::{err, Res};
use crate::kernels::Kernel;
use crate::state::funcattr::{Settable, Target};
use crate::state::State;

/// Streaming multiprocessors of the simulated device.
pub(crate) const SMS: u32 = 132;
const MAX_BLOCKS_PER_SM: u32 = 32;
const MAX_WARPS_PER_SM: u32 = 64;
const REGS_PER_SM: u32 = 65536;
const REG_UNIT: u32 = 256;
const SMEM_PER_SM: u64 = 233_472;
const SMEM_RESERVED_PER_BLOCK: u64 = 1024;
const SMEM_GRANULARITY: u64 = 128;
/// Largest dynamic shared memory a block may opt into.
pub(crate) const SMEM_OPTIN: i32 = 232_448;
const MAX_THREADS_PER_BLOCK: i32 = 1024;
/// `CU_FUNC_ATTRIBUTE_PTX_VERSION` / `BINARY_VERSION`: compute capability 9.0.
const VERSION: i32 = 90;
/// `CU_FUNC_ATTRIBUTE_MAX`: attributes at or above it are invalid.
const ATTRIBUTE_MAX: i32 = 16;
/// Largest portable cluster, and largest cluster with non-portable sizes allowed.
pub(crate) const MAX_PORTABLE_CLUSTER: u64 = 8;
pub(crate) const MAX_CLUSTER: u64 = 16;
const MAX_CLUSTER_DIM: i32 = 16;
/// Clusters are placed within one GPC: 8 GPCs of 16 usable SMs.
const GPCS: u32 = 8;
const SMS_PER_GPC: u32 = 16;

/// Registers per thread of each built-in kernel, as a compiler would report them.
fn registers(k: Kernel) -> i32 {
    match k {
        Kernel::VectorAdd | Kernel::Saxpy => 16,
        Kernel::FillU32 | Kernel::PrintU32 | Kernel::AssertLt => 8,
    }
}

/// A resolved attribute target and its kernel.
pub(crate) struct Resolved {
    target: Target,
    pub kernel: Kernel,
}

fn kernel_target(st: &State, key: usize, device: usize) -> Res<Resolved> {
    let k = crate::library::kernel(st, key)?;
    Ok(Resolved {
        target: Target::Kernel {
            library: k.library,
            name: k.name.clone(),
            device,
        },
        kernel: k.kernel,
    })
}

/// The target of a handle given where a `CUfunction` is expected. A kernel handle means
/// the kernel on the current context's device.
pub(crate) fn of_function(st: &State, handle: usize) -> Res<Resolved> {
    if let Some(f) = st.functions.get(&handle) {
        let library = st.ext.libraries.owner(f.module);
        let ctx = st.modules.get(&f.module).map(|m| m.ctx);
        let device = ctx.and_then(|c| st.contexts.get(&c)).map(|c| c.device);
        let target = match (library, device) {
            (Some(library), Some(device)) => Target::Kernel {
                library,
                name: f.kernel.name().to_string(),
                device,
            },
            _ => Target::Function(handle),
        };
        return Ok(Resolved {
            target,
            kernel: f.kernel,
        });
    }
    if st.ext.libraries.kernel(handle).is_some() {
        let ctx = context::current(st)?;
        let device = context::live(st, ctx)?.device;
        return kernel_target(st, handle, device);
    }
    err(
        CUresult::CUDA_ERROR_INVALID_HANDLE,
        format!("function {handle:#x} does not exist"),
    )
}

/// The target of a kernel handle on device `device` (`cuKernelGetAttribute`).
pub(crate) fn of_kernel(st: &State, kernel: usize, device: usize) -> Res<Resolved> {
    kernel_target(st, kernel, device)
}

fn settable(st: &State, r: &Resolved) -> Settable {
    st.ext.attrs.set.get(&r.target).copied().unwrap_or_default()
}

fn check_attribute(attr: i32) -> Res<()> {
    if (0..ATTRIBUTE_MAX).contains(&attr) {
        Ok(())
    } else {
        err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{attr} is not a CUfunction_attribute"),
        )
    }
}

/// `cuFuncGetAttribute` / `cuKernelGetAttribute`.
pub(crate) fn get(st: &State, r: &Resolved, attr: i32) -> Res<i32> {
    check_attribute(attr)?;
    let s = settable(st, r);
    Ok(match attr {
        0 => MAX_THREADS_PER_BLOCK,
        4 => registers(r.kernel),
        5 | 6 => VERSION,
        8 => s.max_dynamic_shared,
        9 => s.carveout,
        11..=13 => s.required_cluster[(attr - 11) as usize],
        14 => s.non_portable_cluster,
        15 => s.cluster_policy,
        // Static shared, constant and local sizes, CACHE_MODE_CA, CLUSTER_SIZE_MUST_BE_SET.
        _ => 0,
    })
}

/// `cuFuncSetAttribute` / `cuKernelSetAttribute`: only the settable attributes, within
/// their ranges; the rest give `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn set(st: &mut State, r: &Resolved, attr: i32, value: i32) -> Res<()> {
    check_attribute(attr)?;
    let mut s = settable(st, r);
    let bad = |why: String| err(CUresult::CUDA_ERROR_INVALID_VALUE, why);
    match attr {
        8 if (0..=SMEM_OPTIN).contains(&value) => s.max_dynamic_shared = value,
        8 => {
            return bad(format!(
                "dynamic shared memory {value} is not in 0..={SMEM_OPTIN}"
            ))
        }
        9 if (-1..=100).contains(&value) => s.carveout = value,
        9 => return bad(format!("carveout {value} is not in -1..=100")),
        11..=13 if (0..=MAX_CLUSTER_DIM).contains(&value) => {
            s.required_cluster[(attr - 11) as usize] = value;
        }
        11..=13 => {
            return bad(format!(
                "cluster dimension {value} is not in 0..={MAX_CLUSTER_DIM}"
            ))
        }
        14 if matches!(value, 0 | 1) => s.non_portable_cluster = value,
        15 if (0..=2).contains(&value) => s.cluster_policy = value,
        14 | 15 => return bad(format!("value {value} is not valid for attribute {attr}")),
        _ => return bad(format!("function attribute {attr} is read-only")),
    }
    st.ext.attrs.set.insert(r.target.clone(), s);
    Ok(())
}

/// Changes the settable state of a target (the legacy execution controls and the cache
/// preference, which have no attribute id).
pub(crate) fn update(st: &mut State, r: &Resolved, change: impl FnOnce(&mut Settable)) {
    let mut s = settable(st, r);
    change(&mut s);
    st.ext.attrs.set.insert(r.target.clone(), s);
}

/// `cuFuncSetBlockShape`: each dimension positive, within (1024, 1024, 64), and at most
/// 1024 threads in all (`CUDA_ERROR_INVALID_VALUE` otherwise).
pub(crate) fn set_block_shape(st: &mut State, r: &Resolved, shape: [i32; 3]) -> Res<()> {
    let [x, y, z] = shape;
    let fits = (1..=1024).contains(&x) && (1..=1024).contains(&y) && (1..=64).contains(&z);
    if !fits || i64::from(x) * i64::from(y) * i64::from(z) > i64::from(MAX_THREADS_PER_BLOCK) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("block shape {shape:?} exceeds 1024 threads or (1024, 1024, 64)"),
        );
    }
    update(st, r, |s| s.block_shape = shape);
    Ok(())
}

/// The attributes a launch of function `f` must honour.
pub(crate) fn for_launch(st: &State, f: usize) -> Res<(Kernel, Settable)> {
    let r = of_function(st, f)?;
    Ok((r.kernel, settable(st, &r)))
}

/// Blocks of `threads` threads using `smem` bytes of shared memory that fit on one SM.
pub(crate) fn blocks_per_sm(kernel: Kernel, threads: u64, smem: u64) -> u32 {
    if threads == 0 || threads > MAX_THREADS_PER_BLOCK as u64 {
        return 0;
    }
    // threads <= 1024, so the warp count fits.
    let warps = u32::try_from(threads.div_ceil(32)).unwrap_or(u32::MAX);
    let regs_per_warp = (registers(kernel).unsigned_abs() * 32).next_multiple_of(REG_UNIT);
    let by_warps = MAX_WARPS_PER_SM / warps;
    let by_regs = REGS_PER_SM / (regs_per_warp * warps);
    let per_block = (smem + SMEM_RESERVED_PER_BLOCK).next_multiple_of(SMEM_GRANULARITY);
    let by_smem = u32::try_from(SMEM_PER_SM / per_block).unwrap_or(u32::MAX);
    MAX_BLOCKS_PER_SM.min(by_warps).min(by_regs).min(by_smem)
}

/// `CU_OCCUPANCY_DEFAULT` and `CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE`.
const OCCUPANCY_FLAGS: u32 = 0x1;

/// `cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags`.
pub(crate) fn max_active_blocks(
    st: &State,
    f: usize,
    block: i32,
    dynamic_smem: usize,
    flags: u32,
) -> Res<i32> {
    if flags & !OCCUPANCY_FLAGS != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("occupancy flags {flags:#x} are not valid"),
        );
    }
    let r = of_function(st, f)?;
    let Ok(threads) = u64::try_from(block) else {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "negative block size");
    };
    if threads == 0 {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "block size 0");
    }
    let s = settable(st, &r);
    if dynamic_smem as u64 > u64::from(s.max_dynamic_shared.unsigned_abs()) {
        return Ok(0);
    }
    let n = blocks_per_sm(r.kernel, threads, dynamic_smem as u64);
    Ok(i32::try_from(n).unwrap_or(i32::MAX))
}

/// `cuOccupancyAvailableDynamicSMemPerBlock`: dynamic shared memory each of `blocks`
/// blocks of `block` threads may use with all of them resident on one SM.
pub(crate) fn available_dynamic_smem(st: &State, f: usize, blocks: i32, block: i32) -> Res<usize> {
    let r = of_function(st, f)?;
    let (Ok(blocks), Ok(threads)) = (u64::try_from(blocks), u64::try_from(block)) else {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "negative block count or size",
        );
    };
    if blocks == 0 || threads == 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "block count and size must be positive",
        );
    }
    if u64::from(blocks_per_sm(r.kernel, threads, 0)) < blocks {
        return Ok(0);
    }
    let per_block = (SMEM_PER_SM / blocks) / SMEM_GRANULARITY * SMEM_GRANULARITY;
    let avail = per_block.saturating_sub(SMEM_RESERVED_PER_BLOCK);
    let cap = u64::from(settable(st, &r).max_dynamic_shared.unsigned_abs());
    Ok(usize::try_from(avail.min(cap)).unwrap_or(usize::MAX))
}

/// `cuOccupancyMaxActiveClusters`: clusters of `cluster` blocks that fit at once, each
/// within one GPC.
pub(crate) fn max_active_clusters(kernel: Kernel, threads: u64, smem: u64, cluster: u64) -> i32 {
    let per_sm = u64::from(blocks_per_sm(kernel, threads, smem));
    if cluster == 0 {
        return 0;
    }
    let per_gpc = per_sm * u64::from(SMS_PER_GPC) / cluster;
    i32::try_from(per_gpc * u64::from(GPCS)).unwrap_or(i32::MAX)
}

/// The most blocks a cooperative launch may have: all must be resident at once.
pub(crate) fn cooperative_limit(kernel: Kernel, threads: u64, smem: u64) -> u64 {
    u64::from(blocks_per_sm(kernel, threads, smem)) * u64::from(SMS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_model() {
        // 256 threads of 16 registers: warps limit 8 blocks.
        assert_eq!(blocks_per_sm(Kernel::VectorAdd, 256, 0), 8);
        assert_eq!(blocks_per_sm(Kernel::VectorAdd, 1024, 0), 2);
        // Tiny blocks hit the 32-block limit.
        assert_eq!(blocks_per_sm(Kernel::FillU32, 32, 0), 32);
        // Shared memory: 100 KiB per block leaves room for 2.
        assert_eq!(blocks_per_sm(Kernel::VectorAdd, 64, 100 << 10), 2);
        assert_eq!(blocks_per_sm(Kernel::VectorAdd, 64, 232_448), 1);
        assert_eq!(blocks_per_sm(Kernel::VectorAdd, 1025, 0), 0);
        assert_eq!(blocks_per_sm(Kernel::VectorAdd, 0, 0), 0);
        assert_eq!(cooperative_limit(Kernel::VectorAdd, 256, 0), 8 * 132);
        assert_eq!(max_active_clusters(Kernel::VectorAdd, 1024, 0, 2), 8 * 16);
        assert_eq!(max_active_clusters(Kernel::VectorAdd, 1024, 0, 16), 16);
    }
}
