//! Green contexts on the simulated devices. Each device has one SM resource
//! (`CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT` SMs, partitions of at least 8
//! SMs in steps of 8, as on compute capability 9.0); a split hands out equal
//! groups and the SMs left over; a descriptor sums the SMs of its resources;
//! a green context owns those SMs and a context of its own, in which its
//! streams run. The simulated device runs work in order and does not limit a
//! green context's kernels to its SMs.

use std::ffi::{c_int, c_uint, c_ulonglong};

use crate::context;
use crate::cu::{
    CUcontext, CUdevResource, CUdevResourceDesc, CUdevResourceType, CUdevice, CUevent, CUgreenCtx,
    CUgreenCtxCreate_flags, CUresult, CUstream,
};
use crate::error::{err, Res};
use crate::event;
use crate::ffi::{key, run, Out};
use crate::state::green::Green;
use crate::state::{self, State};
use crate::stream;

/// The simulated devices' SMs (`CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`).
const DEVICE_SMS: u32 = 132;
/// The smallest partition and the step of partition sizes.
const PARTITION: u32 = 8;
/// `CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
/// CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE`.
const SPLIT_FLAGS: c_uint = 0x3;
/// `CU_STREAM_NON_BLOCKING`, which a green context's streams must have.
const NON_BLOCKING: c_uint = 1;

/// An SM resource of `sms` SMs.
fn sm_resource(sms: u32) -> CUdevResource {
    let mut r = CUdevResource {
        type_: CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM,
        ..CUdevResource::default()
    };
    r.__bindgen_anon_1.sm.smCount = sms;
    r.__bindgen_anon_1.sm.minSmPartitionSize = PARTITION;
    r.__bindgen_anon_1.sm.smCoscheduledAlignment = PARTITION;
    r
}

/// The SMs of an SM resource (`CUDA_ERROR_INVALID_RESOURCE_TYPE` for another type).
fn sms_of(r: &CUdevResource) -> Res<u32> {
    if r.type_ != CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM {
        return err(
            CUresult::CUDA_ERROR_INVALID_RESOURCE_TYPE,
            format!("resource type {} is not CU_DEV_RESOURCE_TYPE_SM", r.type_.0),
        );
    }
    // SAFETY: an SM resource's union holds its `sm` member.
    Ok(unsafe { r.__bindgen_anon_1.sm.smCount })
}

/// Checks the requested type: only SM resources exist.
fn check_type(t: CUdevResourceType) -> Res<()> {
    if t != CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM {
        return err(
            CUresult::CUDA_ERROR_INVALID_RESOURCE_TYPE,
            format!("resource type {}", t.0),
        );
    }
    Ok(())
}

/// A live green context.
fn green(st: &State, h: CUgreenCtx) -> Res<Green> {
    match st.ext.green.contexts.get(&key(h)) {
        Some(&g) => Ok(g),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("{:#x} is not a green context", key(h)),
        ),
    }
}

/// `cuDeviceGetDevResource`: the device's SMs.
pub(crate) fn device_get_dev_resource(
    dev: CUdevice,
    out: Out<CUdevResource>,
    t: CUdevResourceType,
) -> Res<()> {
    state::sim()?.check_device(dev)?;
    check_type(t)?;
    out.write(sm_resource(DEVICE_SMS));
    Ok(())
}

/// `cuCtxGetDevResource`: a green context's context has its SMs, any other
/// context its device's.
pub(crate) fn ctx_get_dev_resource(
    ctx: CUcontext,
    out: Out<CUdevResource>,
    t: CUdevResourceType,
) -> Res<()> {
    let st = state::sim()?.lock();
    let k = context::given_or_current(&st, key(ctx))?;
    context::live(&st, k)?;
    check_type(t)?;
    let sms = st
        .ext
        .green
        .contexts
        .values()
        .find(|g| g.ctx == k)
        .map_or(DEVICE_SMS, |g| g.sms);
    out.write(sm_resource(sms));
    Ok(())
}

/// `cuGreenCtxGetDevResource`: the green context's SMs.
pub(crate) fn green_ctx_get_dev_resource(
    h: CUgreenCtx,
    out: Out<CUdevResource>,
    t: CUdevResourceType,
) -> Res<()> {
    let st = state::sim()?.lock();
    let g = green(&st, h)?;
    check_type(t)?;
    out.write(sm_resource(g.sms));
    Ok(())
}

/// `cuDevSmResourceSplitByCount`: groups of `minCount` SMs rounded up to the
/// partition step; with `result` NULL only their number.
///
/// # Safety
/// `result` must be NULL or hold `*nb_groups` writable resources, `input`
/// be NULL or readable, `remaining` NULL or writable, `nb_groups` NULL or
/// readable and writable.
#[no_mangle]
pub unsafe extern "C" fn cuDevSmResourceSplitByCount(
    result: *mut CUdevResource,
    nb_groups: *mut c_uint,
    input: *const CUdevResource,
    remaining: *mut CUdevResource,
    use_flags: c_uint,
    min_count: c_uint,
) -> CUresult {
    run("cuDevSmResourceSplitByCount", || {
        state::sim()?;
        if nb_groups.is_null() || input.is_null() || use_flags & !SPLIT_FLAGS != 0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "NULL nbGroups or input, or unknown flags",
            );
        }
        // SAFETY: non-NULL and readable by this function's contract.
        let (input, asked) = unsafe { (input.read_unaligned(), nb_groups.read()) };
        let sms = sms_of(&input)?;
        let size = min_count.max(PARTITION).div_ceil(PARTITION) * PARTITION;
        if size > sms {
            return err(
                CUresult::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
                format!("groups of {size} SMs out of {sms}"),
            );
        }
        let possible = sms / size;
        let n = if result.is_null() {
            possible
        } else if asked == 0 {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "*nbGroups is 0");
        } else {
            asked.min(possible)
        };
        if !result.is_null() {
            for i in 0..n as usize {
                // SAFETY: `n <= *nb_groups` elements are writable by the contract.
                unsafe { result.add(i).write_unaligned(sm_resource(size)) };
            }
        }
        if !remaining.is_null() {
            let left = if result.is_null() {
                sms
            } else {
                sms - n * size
            };
            // SAFETY: non-NULL and writable by the contract.
            unsafe { remaining.write_unaligned(sm_resource(left)) };
        }
        // SAFETY: non-NULL and writable by the contract.
        unsafe { nb_groups.write(n) };
        Ok(())
    })
}

/// `cuDevResourceGenerateDesc`: a descriptor of the resources' SMs together.
///
/// # Safety
/// `resources` must be NULL or hold `n` readable resources.
pub(crate) unsafe fn dev_resource_generate_desc(
    out: Out<CUdevResourceDesc>,
    resources: *mut CUdevResource,
    n: c_uint,
) -> Res<()> {
    if resources.is_null() || n == 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "no resources to describe",
        );
    }
    let mut sms = 0u32;
    for i in 0..n as usize {
        // SAFETY: `i < n` elements are readable by this function's contract.
        let r = unsafe { resources.add(i).read_unaligned() };
        sms = sms.saturating_add(sms_of(&r)?);
    }
    if sms == 0 || sms > DEVICE_SMS {
        return err(
            CUresult::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
            format!("{sms} SMs"),
        );
    }
    let mut st = state::sim()?.lock();
    let k = st.mint();
    st.ext.green.descs.insert(k, sms);
    out.write(k as CUdevResourceDesc);
    Ok(())
}

/// `cuGreenCtxCreate`: `flags` must be `CU_GREEN_CTX_DEFAULT_STREAM`.
pub(crate) fn green_ctx_create(
    out: Out<CUgreenCtx>,
    desc: CUdevResourceDesc,
    dev: CUdevice,
    flags: c_uint,
) -> Res<()> {
    let sim = state::sim()?;
    let device = sim.check_device(dev)?;
    if flags != CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("flags {flags:#x} are not CU_GREEN_CTX_DEFAULT_STREAM"),
        );
    }
    let mut st = sim.lock();
    let Some(&sms) = st.ext.green.descs.get(&key(desc)) else {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "not a resource descriptor",
        );
    };
    let ctx = st.mint();
    st.contexts
        .insert(ctx, crate::state::context::Context::new(device, 0, false));
    let k = st.mint();
    st.ext.green.last_id += 1;
    let id = st.ext.green.last_id;
    st.ext.green.contexts.insert(k, Green { sms, ctx, id });
    out.write(k as CUgreenCtx);
    Ok(())
}

/// `cuGreenCtxDestroy`: its context and streams end with it.
#[no_mangle]
pub extern "C" fn cuGreenCtxDestroy(h: CUgreenCtx) -> CUresult {
    run("cuGreenCtxDestroy", || {
        let mut st = state::sim()?.lock();
        let g = green(&st, h)?;
        st.ext.green.contexts.remove(&key(h));
        st.ext.green.streams.retain(|_, owner| *owner != key(h));
        context::destroy(&mut st, g.ctx)
    })
}

/// `cuCtxFromGreenCtx`: the green context's own context.
pub(crate) fn ctx_from_green_ctx(out: Out<CUcontext>, h: CUgreenCtx) -> Res<()> {
    let st = state::sim()?.lock();
    out.write(green(&st, h)?.ctx as CUcontext);
    Ok(())
}

/// `cuGreenCtxGetId`: 1 for the first green context, then counting up.
pub(crate) fn green_ctx_get_id(h: CUgreenCtx, out: Out<c_ulonglong>) -> Res<()> {
    let st = state::sim()?.lock();
    out.write(green(&st, h)?.id);
    Ok(())
}

/// `cuGreenCtxRecordEvent`: as `cuCtxRecordEvent` on its context.
pub(crate) fn green_ctx_record_event(h: CUgreenCtx, ev: CUevent) -> Res<()> {
    let mut st = state::sim()?.lock();
    let g = green(&st, h)?;
    event::record_context(&mut st, key(ev), g.ctx)
}

/// `cuGreenCtxWaitEvent`: as `cuCtxWaitEvent` on its context.
pub(crate) fn green_ctx_wait_event(h: CUgreenCtx, ev: CUevent) -> Res<()> {
    let st = state::sim()?.lock();
    let g = green(&st, h)?;
    event::context_wait(&st, key(ev), g.ctx)
}

/// `cuGreenCtxStreamCreate`: a non-blocking stream of its context.
pub(crate) fn green_ctx_stream_create(
    out: Out<CUstream>,
    h: CUgreenCtx,
    flags: c_uint,
    priority: c_int,
) -> Res<()> {
    let mut st = state::sim()?.lock();
    let g = green(&st, h)?;
    if flags != NON_BLOCKING {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "a green context's stream must be CU_STREAM_NON_BLOCKING",
        );
    }
    context::push_current(&st, g.ctx)?;
    let made = stream::create(&mut st, flags, priority);
    context::pop_current()?;
    let s = made?;
    st.ext.green.streams.insert(s, key(h));
    out.write(s as CUstream);
    Ok(())
}

/// `cuStreamGetGreenCtx`: NULL for a stream of no green context.
pub(crate) fn stream_get_green_ctx(h: CUstream, out: Out<CUgreenCtx>) -> Res<()> {
    let st = state::sim()?.lock();
    stream::context_of(&st, key(h))?;
    let g = st.ext.green.streams.get(&key(h)).copied().unwrap_or(0);
    out.write(g as CUgreenCtx);
    Ok(())
}
