//! Contexts: primary-context reference counts, created contexts, the per-thread
//! current-context stack, limits, sticky errors, the legacy usage count of
//! `cuCtxAttach`/`cuCtxDetach`, the preferred cache configuration and the implicit
//! streams' identities.

use std::cell::RefCell;

use crate::cu::CUresult;
use crate::device::MAX_PERSISTING_L2;
use crate::error::{err, Res};
use crate::state::context::{Context, LIMITS};
use crate::state::State;

/// `CU_CTX_SCHED_MASK`: the scheduling bits of the context flags.
const SCHED_MASK: u32 = 0x07;
/// Every flag bit a context may carry (`CU_CTX_SCHED_*`, `MAP_HOST`, `LMEM_RESIZE_TO_MAX`,
/// `COREDUMP_ENABLE`, `USER_COREDUMP_ENABLE`, `SYNC_MEMOPS`).
const FLAGS_MASK: u32 = 0xFF;
/// The API version every context reports (`cuCtxGetApiVersion`).
pub(crate) const API_VERSION: u32 = 3020;

/// `CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH`: not supported on compute capability 9.0.
const LIMIT_SYNC_DEPTH: usize = 3;
/// `CU_LIMIT_MAX_L2_FETCH_GRANULARITY`.
const LIMIT_L2_FETCH: usize = 5;
/// `CU_LIMIT_PERSISTING_L2_CACHE_SIZE`.
const LIMIT_PERSISTING_L2: usize = 6;
/// `CU_LIMIT_MAX`: limits at or above this are invalid.
const LIMIT_MAX: u32 = 10;

thread_local! {
    /// The calling thread's current-context stack (keys; the top is current).
    static STACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The key at the top of the calling thread's stack, if any.
pub(crate) fn top() -> Option<usize> {
    STACK
        .try_with(|s| s.borrow().last().copied())
        .ok()
        .flatten()
}

fn push(key: usize) {
    let _ = STACK.try_with(|s| s.borrow_mut().push(key));
}

fn pop() -> Option<usize> {
    STACK.try_with(|s| s.borrow_mut().pop()).ok().flatten()
}

/// Checks context flags (`CU_CTX_*`).
pub(crate) fn check_flags(flags: u32) -> Res<()> {
    let sched = flags & SCHED_MASK;
    if flags & !FLAGS_MASK != 0 || !matches!(sched, 0 | 1 | 2 | 4) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("context flags {flags:#x} are not valid"),
        );
    }
    Ok(())
}

/// Looks up a live context by key (`CUDA_ERROR_INVALID_CONTEXT` otherwise).
pub(crate) fn live(st: &State, key: usize) -> Res<&Context> {
    match st.contexts.get(&key) {
        Some(c) if c.active => Ok(c),
        _ => err(
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
            format!("context {key:#x} is not a live context"),
        ),
    }
}

/// Mutable variant of [`live`].
pub(crate) fn live_mut(st: &mut State, key: usize) -> Res<&mut Context> {
    match st.contexts.get_mut(&key) {
        Some(c) if c.active => Ok(c),
        _ => err(
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
            format!("context {key:#x} is not a live context"),
        ),
    }
}

/// The calling thread's current context, which must be live.
pub(crate) fn current(st: &State) -> Res<usize> {
    match top() {
        Some(key) => live(st, key).map(|_| key),
        None => err(
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
            "no current context on this thread",
        ),
    }
}

/// The current context, which must also be free of a sticky error.
pub(crate) fn current_usable(st: &State) -> Res<usize> {
    let key = current(st)?;
    live(st, key)?.usable()?;
    Ok(key)
}

/// Frees everything a context owns: allocations, streams, events, modules, functions.
fn release_resources(st: &mut State, ctx: usize) {
    let dead: Vec<u64> = st
        .allocs
        .iter()
        .filter(|(_, a)| a.ctx == ctx)
        .map(|(k, _)| *k)
        .collect();
    for base in dead {
        if crate::ipc::is_opened(st, base) {
            crate::ipc::context_gone(st, base);
        } else if let Some(a) = st.allocs.remove(&base) {
            st.used[a.device] -= a.size as u64;
            crate::pool::released(st, base);
        }
    }
    st.streams.retain(|_, s| s.ctx != ctx);
    st.events.retain(|_, e| e.ctx != ctx);
    st.modules.retain(|_, m| m.ctx != ctx);
    let modules = &st.modules;
    st.functions.retain(|_, f| modules.contains_key(&f.module));
    release_ext(st, ctx);
}

/// Forgets what context `ctx` owned once its resources are released: registered and
/// allocated host memory, facts about freed allocations, attributes of dead functions.
fn release_ext(st: &mut State, ctx: usize) {
    st.ext.host.release_context(ctx);
    crate::array::release_context(st, ctx);
    st.ext.tex_objects.retain(|_, t| t.ctx != ctx);
    let allocs = &st.allocs;
    st.ext.facts.retain(|base| allocs.contains_key(&base));
    let functions = &st.functions;
    st.ext
        .attrs
        .retain_functions(|f| functions.contains_key(&f));
}

/// `cuDevicePrimaryCtxRetain`: activates the primary context if needed and counts a
/// reference. Returns its key.
pub(crate) fn primary_retain(st: &mut State, dev: usize) -> Res<usize> {
    let key = match st.primary[dev].key {
        Some(k) => k,
        None => {
            let k = st.mint();
            st.primary[dev].key = Some(k);
            let mut ctx = Context::new(dev, st.primary[dev].flags, true);
            ctx.active = false;
            st.contexts.insert(k, ctx);
            k
        }
    };
    let flags = st.primary[dev].flags;
    if let Some(ctx) = st.contexts.get_mut(&key) {
        if !ctx.active {
            *ctx = Context::new(dev, flags, true);
        }
    }
    st.primary[dev].refcount += 1;
    Ok(key)
}

fn deactivate_primary(st: &mut State, dev: usize) {
    st.primary[dev].refcount = 0;
    if let Some(key) = st.primary[dev].key {
        release_resources(st, key);
        if let Some(ctx) = st.contexts.get_mut(&key) {
            ctx.active = false;
            ctx.sticky = None;
        }
    }
}

/// `cuDevicePrimaryCtxRelease_v2`: drops a reference; the last one destroys the context's
/// resources.
pub(crate) fn primary_release(st: &mut State, dev: usize) -> Res<()> {
    match st.primary[dev].refcount {
        0 => err(
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
            format!("primary context of device {dev} is not retained"),
        ),
        1 => {
            deactivate_primary(st, dev);
            Ok(())
        }
        _ => {
            st.primary[dev].refcount -= 1;
            Ok(())
        }
    }
}

/// `cuDevicePrimaryCtxReset_v2`: destroys the primary context's resources regardless of
/// its reference count.
pub(crate) fn primary_reset(st: &mut State, dev: usize) {
    deactivate_primary(st, dev);
}

/// `cuDevicePrimaryCtxGetState`: (flags, active).
pub(crate) fn primary_state(st: &State, dev: usize) -> (u32, bool) {
    let p = &st.primary[dev];
    (p.flags, p.refcount > 0)
}

/// `cuDevicePrimaryCtxSetFlags_v2`.
pub(crate) fn primary_set_flags(st: &mut State, dev: usize, flags: u32) -> Res<()> {
    check_flags(flags)?;
    st.primary[dev].flags = flags;
    if let Some(ctx) = st.primary[dev].key.and_then(|k| st.contexts.get_mut(&k)) {
        if ctx.active {
            ctx.flags = flags;
        }
    }
    Ok(())
}

/// `cuCtxCreate_v2`: creates a context and pushes it on the calling thread's stack.
pub(crate) fn create(st: &mut State, flags: u32, dev: usize) -> Res<usize> {
    check_flags(flags)?;
    let key = st.mint();
    st.contexts.insert(key, Context::new(dev, flags, false));
    push(key);
    Ok(key)
}

/// `cuCtxDestroy_v2`: destroys a created context (pops it if it is current here).
pub(crate) fn destroy(st: &mut State, key: usize) -> Res<()> {
    match st.contexts.get(&key) {
        Some(c) if !c.primary => {}
        Some(_) => {
            return err(
                CUresult::CUDA_ERROR_INVALID_CONTEXT,
                "a primary context is released with cuDevicePrimaryCtxRelease, not destroyed",
            )
        }
        None => {
            return err(
                CUresult::CUDA_ERROR_INVALID_CONTEXT,
                format!("context {key:#x} does not exist"),
            )
        }
    }
    release_resources(st, key);
    st.contexts.remove(&key);
    if top() == Some(key) {
        pop();
    }
    Ok(())
}

/// `cuCtxPushCurrent_v2`.
pub(crate) fn push_current(st: &State, key: usize) -> Res<()> {
    live(st, key)?;
    push(key);
    Ok(())
}

/// `cuCtxPopCurrent_v2`: the popped key.
pub(crate) fn pop_current() -> Res<usize> {
    match pop() {
        Some(k) => Ok(k),
        None => err(
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
            "the current-context stack is empty",
        ),
    }
}

/// `cuCtxSetCurrent`: replaces the top of the stack (`None` pops it).
pub(crate) fn set_current(st: &State, key: Option<usize>) -> Res<()> {
    match key {
        Some(k) => {
            live(st, k)?;
            pop();
            push(k);
        }
        None => {
            pop();
        }
    }
    Ok(())
}

/// Checks a `CUlimit` and returns its index.
fn limit_index(limit: u32) -> Res<usize> {
    let idx = limit as usize;
    if limit >= LIMIT_MAX {
        err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("limit {limit} is not a CUlimit"),
        )
    } else if idx >= LIMITS || idx == LIMIT_SYNC_DEPTH {
        err(
            CUresult::CUDA_ERROR_UNSUPPORTED_LIMIT,
            format!("limit {limit} is not supported on a simulated compute capability 9.0 device"),
        )
    } else {
        Ok(idx)
    }
}

/// `cuCtxGetLimit` on the current context.
pub(crate) fn get_limit(st: &State, limit: u32) -> Res<usize> {
    let idx = limit_index(limit)?;
    let ctx = current(st)?;
    Ok(live(st, ctx)?.limits[idx])
}

/// `cuCtxSetLimit` on the current context, clamping as the driver does.
pub(crate) fn set_limit(st: &mut State, limit: u32, value: usize) -> Res<()> {
    let idx = limit_index(limit)?;
    let ctx = current(st)?;
    let value = match idx {
        LIMIT_L2_FETCH => value.min(128),
        LIMIT_PERSISTING_L2 => value.min(MAX_PERSISTING_L2),
        _ => value,
    };
    live_mut(st, ctx)?.limits[idx] = value;
    Ok(())
}

/// The context a `CUcontext` argument names: NULL means the calling thread's current
/// one. It must be live.
pub(crate) fn given_or_current(st: &State, key: usize) -> Res<usize> {
    match key {
        0 => current(st),
        k => live(st, k).map(|_| k),
    }
}

/// `cuCtxAttach`: counts one more use of the current context (`flags` must be 0).
pub(crate) fn attach(st: &mut State, flags: u32) -> Res<usize> {
    if flags != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("cuCtxAttach flags must be 0, got {flags:#x}"),
        );
    }
    let key = current(st)?;
    live_mut(st, key)?.usage += 1;
    Ok(key)
}

/// `cuCtxDetach`: drops one use of `key`, which must be current on this thread; the last
/// use of a created context destroys it. A primary context is never destroyed here, and
/// detaching it more often than it was attached fails.
pub(crate) fn detach(st: &mut State, key: usize) -> Res<()> {
    if key == 0 || top() != Some(key) {
        return err(
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
            format!("context {key:#x} is not current on this thread"),
        );
    }
    let ctx = live_mut(st, key)?;
    if ctx.usage == 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
            "the primary context was not attached with cuCtxAttach",
        );
    }
    ctx.usage -= 1;
    if ctx.usage == 0 && !ctx.primary {
        destroy(st, key)?;
    }
    Ok(())
}

/// `CU_FUNC_CACHE_PREFER_EQUAL`: the largest `CUfunc_cache`.
const CACHE_PREFER_EQUAL: u32 = 3;
/// `CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE`: the largest `CUsharedconfig`.
const SHARED_EIGHT_BYTE: u32 = 2;
/// `CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE`: the fixed bank size of compute capability 9.0.
pub(crate) const SHARED_FOUR_BYTE: u32 = 1;

/// Checks a `CUfunc_cache` value.
pub(crate) fn check_cache_config(config: u32) -> Res<()> {
    if config > CACHE_PREFER_EQUAL {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{config} is not a CUfunc_cache"),
        );
    }
    Ok(())
}

/// Checks a `CUsharedconfig` value. Compute capability 9.0 has a fixed 4-byte bank size,
/// so a valid value changes nothing, as the driver documents.
pub(crate) fn check_shared_config(config: u32) -> Res<()> {
    if config > SHARED_EIGHT_BYTE {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{config} is not a CUsharedconfig"),
        );
    }
    Ok(())
}

/// `cuCtxSetCacheConfig` on the current context.
pub(crate) fn set_cache_config(st: &mut State, config: u32) -> Res<()> {
    check_cache_config(config)?;
    let key = current(st)?;
    live_mut(st, key)?.cache_config = config;
    Ok(())
}

/// `cuCtxGetCacheConfig` on the current context.
pub(crate) fn cache_config(st: &State) -> Res<u32> {
    Ok(live(st, current(st)?)?.cache_config)
}

/// `cuCtxSetFlags`: replaces the current context's flags; for a primary context these are
/// also the flags `cuDevicePrimaryCtxGetState` reports.
pub(crate) fn set_flags(st: &mut State, flags: u32) -> Res<()> {
    check_flags(flags)?;
    let key = current(st)?;
    let ctx = live_mut(st, key)?;
    ctx.flags = flags;
    if ctx.primary {
        let dev = ctx.device;
        st.primary[dev].flags = flags;
    }
    Ok(())
}
