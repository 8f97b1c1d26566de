//! Streams. Work is executed synchronously at enqueue time, so every stream is always
//! idle; what a stream keeps is its context, flags, priority, unique id and attributes
//! (`cuStreamSetAttribute`). The implicit streams (legacy and per-thread) keep theirs in
//! their context; the per-thread stream's are shared by every thread of the context.

use crate::context;
use crate::cu::{CUlaunchMemSyncDomainMap, CUresult, CUstreamAttrValue, CUsynchronizationPolicy};
use crate::error::{err, Res};
use crate::state::stream::{AttrValue, Attrs, Stream};
use crate::state::State;

/// `CU_STREAM_LEGACY`.
pub(crate) const LEGACY: usize = 0x1;
/// `CU_STREAM_PER_THREAD`.
pub(crate) const PER_THREAD: usize = 0x2;
/// `CU_STREAM_NON_BLOCKING`: the only stream flag.
const NON_BLOCKING: u32 = 0x1;
/// Least (numerically greatest) stream priority, as on an H100.
pub(crate) const LEAST_PRIORITY: i32 = 0;
/// Greatest (numerically least) stream priority, as on an H100.
pub(crate) const GREATEST_PRIORITY: i32 = -5;

/// Whether `key` names one of the implicit streams (NULL, legacy, per-thread).
pub(crate) fn implicit(key: usize) -> bool {
    matches!(key, 0 | LEGACY | PER_THREAD)
}

/// The context whose work stream `key` carries. Implicit streams belong to the current
/// context; unknown streams give `CUDA_ERROR_INVALID_HANDLE`.
pub(crate) fn context_of(st: &State, key: usize) -> Res<usize> {
    if implicit(key) {
        return context::current(st);
    }
    match st.streams.get(&key) {
        Some(s) => context::live(st, s.ctx).map(|_| s.ctx),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("stream {key:#x} does not exist"),
        ),
    }
}

/// The context behind stream `key`, which must be free of a sticky error; for work
/// enqueued on the stream.
pub(crate) fn usable(st: &State, key: usize) -> Res<usize> {
    let ctx = context_of(st, key)?;
    context::live(st, ctx)?.usable()?;
    Ok(ctx)
}

/// `cuStreamCreateWithPriority` (`cuStreamCreate` passes priority 0). Out-of-range
/// priorities are clamped, as the driver does.
pub(crate) fn create(st: &mut State, flags: u32, priority: i32) -> Res<usize> {
    if flags & !NON_BLOCKING != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("stream flags {flags:#x} are not valid"),
        );
    }
    let ctx = context::current(st)?;
    let key = st.mint();
    let priority = priority.clamp(GREATEST_PRIORITY, LEAST_PRIORITY);
    st.streams.insert(
        key,
        Stream {
            ctx,
            flags,
            priority,
            attrs: Attrs::new(),
            stalled: None,
        },
    );
    Ok(key)
}

/// `cuStreamDestroy_v2`.
pub(crate) fn destroy(st: &mut State, key: usize) -> Res<()> {
    match st.streams.remove(&key) {
        Some(_) => Ok(()),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("stream {key:#x} cannot be destroyed: not a created stream"),
        ),
    }
}

/// `cuStreamSynchronize` / `cuStreamQuery` (`query`): the stream is idle unless an unmet
/// wait-value holds it, so this reports the context's sticky error, if any, what an open
/// capture forbids, or `CUDA_ERROR_NOT_READY` while the held wait's condition is still
/// not met (where the driver's synchronize would block, the simulator answers as a query
/// does); a met condition releases the stream.
pub(crate) fn synchronize(st: &mut State, key: usize, query: bool) -> Res<()> {
    usable(st, key)?;
    crate::graph::forbid_sync(st, key, query)?;
    let Some(wait) = st.streams.get(&key).and_then(|s| s.stalled) else {
        return Ok(());
    };
    wait.run(st)?;
    if let Some(s) = st.streams.get_mut(&key) {
        s.stalled = None;
    }
    Ok(())
}

/// `cuStreamGetFlags`.
pub(crate) fn flags(st: &State, key: usize) -> Res<u32> {
    context_of(st, key)?;
    Ok(st.streams.get(&key).map_or(0, |s| s.flags))
}

/// `cuStreamGetPriority`.
pub(crate) fn priority(st: &State, key: usize) -> Res<i32> {
    props(st, key).map(|(p, _)| p)
}

/// Index of an implicit stream in its context's
/// [`implicit`](crate::state::context::Context::implicit) streams: 0 for the NULL and legacy
/// streams, 1 for the per-thread stream.
fn implicit_index(key: usize) -> usize {
    usize::from(key == PER_THREAD)
}

fn no_stream<T>(key: usize) -> Res<T> {
    err(
        CUresult::CUDA_ERROR_INVALID_HANDLE,
        format!("stream {key:#x} does not exist"),
    )
}

/// A stream's priority and other attributes.
fn props(st: &State, key: usize) -> Res<(i32, &Attrs)> {
    let ctx = context_of(st, key)?;
    if implicit(key) {
        let s = &context::live(st, ctx)?.implicit[implicit_index(key)];
        return Ok((s.priority, &s.attrs));
    }
    match st.streams.get(&key) {
        Some(s) => Ok((s.priority, &s.attrs)),
        None => no_stream(key),
    }
}

/// Mutable variant of [`props`].
fn props_mut(st: &mut State, key: usize) -> Res<(&mut i32, &mut Attrs)> {
    let ctx = context_of(st, key)?;
    if implicit(key) {
        let s = &mut context::live_mut(st, ctx)?.implicit[implicit_index(key)];
        return Ok((&mut s.priority, &mut s.attrs));
    }
    match st.streams.get_mut(&key) {
        Some(s) => Ok((&mut s.priority, &mut s.attrs)),
        None => no_stream(key),
    }
}

/// `cuStreamGetId`: unique for the life of the process, never reused. A created stream's
/// id comes from its handle; an implicit stream's is minted on first request and lasts as
/// long as its context.
pub(crate) fn id(st: &mut State, key: usize) -> Res<u64> {
    let ctx = context_of(st, key)?;
    if !implicit(key) {
        return Ok((key >> 4) as u64);
    }
    let idx = implicit_index(key);
    if context::live(st, ctx)?.implicit[idx].id == 0 {
        let id = (st.mint() >> 4) as u64;
        context::live_mut(st, ctx)?.implicit[idx].id = id;
    }
    Ok(context::live(st, ctx)?.implicit[idx].id)
}

/// The `CUstreamAttrID`s a stream has (`CU_LAUNCH_ATTRIBUTE_*` valid for streams).
pub(crate) const ATTR_ACCESS_POLICY_WINDOW: u32 = 1;
const ATTR_SYNC_POLICY: u32 = 3;
pub(crate) const ATTR_PRIORITY: u32 = 8;
pub(crate) const ATTR_MEM_SYNC_DOMAIN_MAP: u32 = 9;
pub(crate) const ATTR_MEM_SYNC_DOMAIN: u32 = 10;
/// `CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE`.
const MAX_ACCESS_POLICY_WINDOW: usize = 134_213_632;
/// `CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT`.
const MEM_SYNC_DOMAINS: u8 = 4;

fn check_attr(attr: u32) -> Res<()> {
    match attr {
        ATTR_ACCESS_POLICY_WINDOW
        | ATTR_SYNC_POLICY
        | ATTR_PRIORITY
        | ATTR_MEM_SYNC_DOMAIN_MAP
        | ATTR_MEM_SYNC_DOMAIN => Ok(()),
        _ => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{attr} is not a stream attribute"),
        ),
    }
}

pub(crate) fn zeroed() -> CUstreamAttrValue {
    CUstreamAttrValue { pad: [0; 64] }
}

/// An attribute's value before it is first set: no access policy window, automatic
/// synchronisation, domain map {default: 0, remote: 1}, the default domain.
pub(crate) fn default_value(attr: u32) -> CUstreamAttrValue {
    let mut v = zeroed();
    match attr {
        ATTR_SYNC_POLICY => v.syncPolicy = CUsynchronizationPolicy::CU_SYNC_POLICY_AUTO,
        ATTR_MEM_SYNC_DOMAIN_MAP => {
            v.memSyncDomainMap = CUlaunchMemSyncDomainMap {
                default_: 0,
                remote: 1,
            };
        }
        _ => {}
    }
    v
}

/// Checks the field of `v` that `attr` (not the priority) selects and returns a value
/// holding only it.
pub(crate) fn normalize(attr: u32, v: &CUstreamAttrValue) -> Res<CUstreamAttrValue> {
    let bad = |why: String| err(CUresult::CUDA_ERROR_INVALID_VALUE, why);
    let mut out = zeroed();
    match attr {
        ATTR_ACCESS_POLICY_WINDOW => {
            // SAFETY: the window is plain data (a pointer that is never dereferenced,
            // integers and an f32); every bit pattern is a valid value.
            let w = unsafe { v.accessPolicyWindow };
            if w.num_bytes > MAX_ACCESS_POLICY_WINDOW {
                return bad(format!(
                    "access policy window of {} bytes exceeds {MAX_ACCESS_POLICY_WINDOW}",
                    w.num_bytes
                ));
            }
            if !(0.0..=1.0).contains(&w.hitRatio) || w.hitProp.0 > 2 || w.missProp.0 > 1 {
                return bad(
                    "access policy window: hitRatio not in [0, 1] or bad hitProp/missProp".into(),
                );
            }
            out.accessPolicyWindow = w;
        }
        ATTR_SYNC_POLICY => {
            // SAFETY: a 32-bit enum; every bit pattern is a valid value.
            let p = unsafe { v.syncPolicy };
            if !(1..=4).contains(&p.0) {
                return bad(format!("{} is not a CUsynchronizationPolicy", p.0));
            }
            out.syncPolicy = p;
        }
        ATTR_MEM_SYNC_DOMAIN_MAP => {
            // SAFETY: two bytes; every bit pattern is a valid value.
            let m = unsafe { v.memSyncDomainMap };
            if m.default_ >= MEM_SYNC_DOMAINS || m.remote >= MEM_SYNC_DOMAINS {
                return bad(format!(
                    "domain map {m:?} names a domain >= {MEM_SYNC_DOMAINS}"
                ));
            }
            out.memSyncDomainMap = m;
        }
        ATTR_MEM_SYNC_DOMAIN => {
            // SAFETY: a 32-bit enum; every bit pattern is a valid value.
            let d = unsafe { v.memSyncDomain };
            if d.0 > 1 {
                return bad(format!("{} is not a CUlaunchMemSyncDomain", d.0));
            }
            out.memSyncDomain = d;
        }
        _ => return bad(format!("{attr} is not a settable stream attribute")),
    }
    Ok(out)
}

/// `cuStreamGetAttribute`: the value last set, or the attribute's default.
pub(crate) fn get_attr(st: &State, key: usize, attr: u32) -> Res<CUstreamAttrValue> {
    let (priority, attrs) = props(st, key)?;
    check_attr(attr)?;
    if attr == ATTR_PRIORITY {
        let mut v = zeroed();
        v.priority = priority;
        return Ok(v);
    }
    Ok(attrs
        .get(&attr)
        .map_or_else(|| default_value(attr), |a| a.0))
}

/// `cuStreamSetAttribute`: checks and keeps the value; a priority is clamped to the
/// device's range, as at creation.
pub(crate) fn set_attr(st: &mut State, key: usize, attr: u32, v: &CUstreamAttrValue) -> Res<()> {
    props(st, key)?;
    check_attr(attr)?;
    if attr == ATTR_PRIORITY {
        // SAFETY: an int; every bit pattern is a valid value.
        let p = unsafe { v.priority };
        *props_mut(st, key)?.0 = p.clamp(GREATEST_PRIORITY, LEAST_PRIORITY);
        return Ok(());
    }
    let value = normalize(attr, v)?;
    props_mut(st, key)?.1.insert(attr, AttrValue(value));
    Ok(())
}

/// `cuStreamCopyAttributes`: `dst` takes every attribute of `src`, priority included. Both
/// must belong to the same context (`CUDA_ERROR_INVALID_VALUE` otherwise).
pub(crate) fn copy_attrs(st: &mut State, dst: usize, src: usize) -> Res<()> {
    let (dctx, sctx) = (context_of(st, dst)?, context_of(st, src)?);
    if dctx != sctx {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "streams of different contexts",
        );
    }
    let (priority, attrs) = props(st, src)?;
    let attrs = attrs.clone();
    let (p, a) = props_mut(st, dst)?;
    *p = priority;
    *a = attrs;
    Ok(())
}

/// `cuStreamAttachMemAsync`: the simulator has no managed memory and its device cannot
/// access pageable memory, so every pointer is refused with `CUDA_ERROR_INVALID_VALUE`,
/// as the driver refuses memory that is not managed, after the stream and flags checks.
pub(crate) fn attach_mem(st: &State, key: usize, dptr: u64, flags: u32) -> Res<()> {
    usable(st, key)?;
    // CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_HOST, CU_MEM_ATTACH_SINGLE
    if !matches!(flags, 1 | 2 | 4) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{flags:#x} is not one CUmemAttach_flags value"),
        );
    }
    err(
        CUresult::CUDA_ERROR_INVALID_VALUE,
        format!("{dptr:#x} is not managed memory (the simulator has none)"),
    )
}
