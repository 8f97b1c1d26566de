//! Streams. Work is executed synchronously at enqueue time, so every stream is always
//! idle; what a stream keeps is its context, flags and priority.

use crate::context;
use crate::cu::CUresult;
use crate::event;
use crate::state::{err, Res, State};

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
/// `CU_EVENT_WAIT_EXTERNAL`: the only `cuStreamWaitEvent` flag.
const WAIT_EXTERNAL: u32 = 0x1;

/// One created stream.
#[derive(Debug)]
pub(crate) struct Stream {
    pub ctx: usize,
    pub flags: u32,
    pub priority: i32,
}

/// Whether `key` names one of the implicit streams (NULL, legacy, per-thread).
fn implicit(key: usize) -> bool {
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

/// `cuStreamSynchronize` / `cuStreamQuery`: the stream is always idle, so this reports
/// the context's sticky error, if any.
pub(crate) fn synchronize(st: &State, key: usize) -> Res<()> {
    usable(st, key).map(|_| ())
}

/// `cuStreamGetFlags`.
pub(crate) fn flags(st: &State, key: usize) -> Res<u32> {
    context_of(st, key)?;
    Ok(st.streams.get(&key).map_or(0, |s| s.flags))
}

/// `cuStreamGetPriority`.
pub(crate) fn priority(st: &State, key: usize) -> Res<i32> {
    context_of(st, key)?;
    Ok(st.streams.get(&key).map_or(0, |s| s.priority))
}

/// `cuStreamWaitEvent`: checks its arguments; with synchronous execution every event has
/// already completed.
pub(crate) fn wait_event(st: &State, stream: usize, ev: usize, flags: u32) -> Res<()> {
    if flags & !WAIT_EXTERNAL != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("cuStreamWaitEvent flags {flags:#x} are not valid"),
        );
    }
    usable(st, stream)?;
    event::get(st, ev)?;
    Ok(())
}
