//! Kernel launches: `cuLaunchKernel` (geometry, stream and function checks, sticky faults),
//! and on top of it `cuLaunchKernelEx` and cooperative launches (launch attributes, cluster
//! checks and the cooperative residency limit).
//!
//! - **Clusters** (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`): every dimension at least 1,
//!   each grid dimension a multiple of it, at most 8 blocks (16 once the function allows
//!   non-portable sizes), and equal to the function's required cluster dimensions when
//!   those are set; otherwise `CUDA_ERROR_INVALID_CLUSTER_SIZE`.
//! - **Cooperative** launches must fit on the device at once (the occupancy model times
//!   132 SMs); otherwise `CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`.
//! - Launch-completion and programmatic events are recorded on the launch's stream. Every
//!   other known attribute is accepted and has no effect on a synchronous simulator.

use std::ffi::c_void;

use crate::context;
use crate::cu::{CUlaunchAttribute, CUresult};
use crate::error::{err, Res};
use crate::event;
use crate::ffi::key;
use crate::funcattr::{self, MAX_CLUSTER, MAX_PORTABLE_CLUSTER};
use crate::library;
use crate::memory;
use crate::module;
use crate::state::{self, State};
use crate::stream;

const ATTR_IGNORE: u32 = 0;
const ATTR_COOPERATIVE: u32 = 2;
const ATTR_CLUSTER_DIMENSION: u32 = 4;
const ATTR_PROGRAMMATIC_EVENT: u32 = 7;
const ATTR_LAUNCH_COMPLETION_EVENT: u32 = 12;
const ATTR_DEVICE_UPDATABLE_KERNEL_NODE: u32 = 13;
/// Ids 1..=16 except 15 are `CUlaunchAttributeID` values.
const ATTR_UNUSED: u32 = 15;
const ATTR_MAX: u32 = 17;

/// Launch geometry and resources of one `cuLaunchKernel`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
}

impl Launch {
    /// Checks the geometry against the simulated device's limits and the function's
    /// dynamic shared memory limit (`max_shared`); returns the total number of threads.
    pub(crate) fn threads(&self, max_shared: u32) -> Res<u128> {
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        let bad = |why: String| err(CUresult::CUDA_ERROR_INVALID_VALUE, why);
        if self.grid.contains(&0) || self.block.contains(&0) {
            return bad(format!(
                "zero dimension in grid {:?} / block {:?}",
                self.grid, self.block
            ));
        }
        if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
            return bad(format!(
                "grid {:?} exceeds (2^31-1, 65535, 65535)",
                self.grid
            ));
        }
        let per_block = u64::from(bx) * u64::from(by) * u64::from(bz);
        if bx > 1024 || by > 1024 || bz > 64 || per_block > 1024 {
            return bad(format!(
                "block {:?} exceeds 1024 threads or (1024, 1024, 64)",
                self.block
            ));
        }
        if self.shared_bytes > max_shared {
            return bad(format!(
                "{} bytes of dynamic shared memory requested; the function allows {max_shared}",
                self.shared_bytes
            ));
        }
        let blocks = u128::from(gx) * u128::from(gy) * u128::from(gz);
        Ok(blocks * u128::from(per_block))
    }
}

/// `cuLaunchKernel`: runs the kernel now. A memory fault does not fail the launch; it
/// becomes the context's sticky error, as an asynchronous fault on a GPU does.
///
/// # Safety
/// `params` must satisfy the `kernelParams` contract of `cuLaunchKernel` for the kernel.
pub(crate) unsafe fn launch_kernel(
    st: &mut State,
    func: usize,
    geometry: Launch,
    stream_key: usize,
    params: *const *const c_void,
) -> Res<()> {
    let func = library::resolve(st, func)?;
    let f = module::function(st, func)?;
    let kernel = f.kernel;
    let fctx = module::module(st, f.module)?.ctx;
    let ctx = stream::usable(st, stream_key)?;
    if fctx != ctx {
        return err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            "function belongs to a module of another context",
        );
    }
    let (_, attrs) = funcattr::for_launch(st, func)?;
    let threads = geometry.threads(attrs.max_dynamic_shared.unsigned_abs())?;
    // SAFETY: `params` by this function's contract.
    let args = unsafe { kernel.arg_bytes(params) }?;
    if crate::graph::captured(st, stream_key, || crate::graph::Work::Kernel {
        func,
        geometry,
        args,
    })? {
        return Ok(());
    }
    if let Some(f) = st.functions.get_mut(&func) {
        f.loaded = true;
    }
    let mut printed = Vec::new();
    let range = |addr, len| memory::try_range(st, addr, len);
    // SAFETY: `params` by this function's contract; `memory::try_range` gives only
    // pointers at `addr` itself to `len` bytes inside one live allocation or page-locked
    // range, and nothing frees memory while the kernel runs (`st` is borrowed).
    let outcome = unsafe { kernel.launch(range, params, threads, &mut printed) }?;
    st.ext.printf.extend_from_slice(&printed);
    if let Err(fault) = outcome {
        if fault.code == CUresult::CUDA_ERROR_ASSERT {
            // The messages of failed device assertions, for the next flush.
            st.ext.asserted.extend_from_slice(fault.why.as_bytes());
        }
        if state::log_enabled() {
            eprintln!("vgpu-sim: {} faulted: {}", kernel.name(), fault.why);
        }
        context::live_mut(st, ctx)?.sticky = Some(fault.code);
    }
    Ok(())
}

/// What the launch attributes ask for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Options {
    pub cooperative: bool,
    pub cluster: Option<[u32; 3]>,
    /// Events to record on the stream once the kernel ran.
    pub events: Vec<usize>,
}

/// Reads `n` launch attributes.
///
/// # Safety
/// `attrs` must be NULL or point to `n` readable `CUlaunchAttribute`s.
pub(crate) unsafe fn read_attrs(attrs: *const CUlaunchAttribute, n: u32) -> Res<Options> {
    let mut o = Options::default();
    if n == 0 {
        return Ok(o);
    }
    if attrs.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{n} launch attributes at NULL"),
        );
    }
    for i in 0..n as usize {
        // SAFETY: `i < n` entries are readable by the contract.
        let a = unsafe { attrs.add(i).read_unaligned() };
        match a.id.0 {
            ATTR_IGNORE => {}
            // SAFETY: every member of the value union is plain data over its 64 bytes.
            ATTR_COOPERATIVE => o.cooperative = unsafe { a.value.cooperative } != 0,
            ATTR_CLUSTER_DIMENSION => {
                // SAFETY: as above.
                let d = unsafe { a.value.clusterDim };
                o.cluster = Some([d.x, d.y, d.z]);
            }
            ATTR_PROGRAMMATIC_EVENT | ATTR_LAUNCH_COMPLETION_EVENT => {
                // SAFETY: as above; both event members start with the event handle.
                let ev = unsafe { a.value.launchCompletionEvent.event };
                o.events.push(key(ev));
            }
            ATTR_DEVICE_UPDATABLE_KERNEL_NODE => {
                return err(
                    CUresult::CUDA_ERROR_INVALID_VALUE,
                    "a device-updatable kernel node exists only in a graph",
                )
            }
            id if id >= ATTR_MAX || id == ATTR_UNUSED => {
                return err(
                    CUresult::CUDA_ERROR_INVALID_VALUE,
                    format!("{id} is not a CUlaunchAttributeID"),
                )
            }
            _ => {}
        }
    }
    Ok(o)
}

fn cluster_error<T>(why: String) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_CLUSTER_SIZE, why)
}

/// The most blocks a cluster may hold: the portable limit, or the
/// non-portable one for a function that allows it.
pub(crate) fn cluster_limit(non_portable: bool) -> u64 {
    if non_portable {
        MAX_CLUSTER
    } else {
        MAX_PORTABLE_CLUSTER
    }
}

/// Checks cluster dimensions against the grid and the function's attributes; returns the
/// cluster's size in blocks.
pub(crate) fn check_cluster(st: &State, f: usize, grid: [u32; 3], cluster: [u32; 3]) -> Res<u64> {
    if cluster.contains(&0) {
        return cluster_error(format!("cluster {cluster:?} has a zero dimension"));
    }
    if grid.iter().zip(cluster).any(|(g, c)| g % c != 0) {
        return cluster_error(format!(
            "grid {grid:?} is not a multiple of cluster {cluster:?}"
        ));
    }
    let (_, attrs) = funcattr::for_launch(st, f)?;
    let required = attrs.required_cluster;
    if required.iter().any(|&r| r != 0)
        && required
            .iter()
            .zip(cluster)
            .any(|(&r, c)| i64::from(r) != i64::from(c))
    {
        return cluster_error(format!(
            "cluster {cluster:?} differs from the function's required {required:?}"
        ));
    }
    let size: u64 = cluster.iter().map(|&c| u64::from(c)).product();
    let limit = cluster_limit(attrs.non_portable_cluster != 0);
    if size > limit {
        return cluster_error(format!(
            "cluster of {size} blocks exceeds {limit} (set NON_PORTABLE_CLUSTER_SIZE_ALLOWED for up to {MAX_CLUSTER})"
        ));
    }
    Ok(size)
}

/// `cuLaunchKernelEx` / `cuLaunchCooperativeKernel`: checks the options, then runs the
/// kernel as [`launch_kernel`] does and records the requested events.
///
/// # Safety
/// `params` must satisfy the `kernelParams` contract of `cuLaunchKernel` for the kernel.
pub(crate) unsafe fn launch(
    st: &mut State,
    handle: usize,
    geometry: Launch,
    stream: usize,
    params: *const *const c_void,
    options: &Options,
) -> Res<()> {
    let f = library::resolve(st, handle)?;
    let (kernel, attrs) = funcattr::for_launch(st, f)?;
    geometry.threads(attrs.max_dynamic_shared.unsigned_abs())?;
    if let Some(cluster) = options.cluster {
        check_cluster(st, f, geometry.grid, cluster)?;
    }
    if options.cooperative {
        let blocks: u64 = geometry.grid.iter().map(|&g| u64::from(g)).product();
        let threads: u64 = geometry.block.iter().map(|&b| u64::from(b)).product();
        let shared = u64::from(geometry.shared_bytes);
        let limit = funcattr::cooperative_limit(kernel, threads, shared);
        if blocks > limit {
            return err(
                CUresult::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                format!("{blocks} blocks cannot all be resident (at most {limit})"),
            );
        }
    }
    for &ev in &options.events {
        event::get(st, ev)?;
    }
    // SAFETY: forwarded contract.
    unsafe { launch_kernel(st, f, geometry, stream, params) }?;
    for &ev in &options.events {
        event::record(st, ev, stream)?;
    }
    Ok(())
}
