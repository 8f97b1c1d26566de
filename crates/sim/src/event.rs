//! Events with real timing: `cuEventRecord` stamps a monotonic clock. Waiting on an event
//! (`cuStreamWaitEvent`, `cuCtxWaitEvent`) only checks its arguments: recorded work has
//! always completed.

use std::time::Instant;

use crate::context;
use crate::cu::CUresult;
use crate::error::{err, Res};
use crate::state::event::Event;
use crate::state::State;
use crate::stream;

/// `CU_EVENT_BLOCKING_SYNC`.
const BLOCKING_SYNC: u32 = 0x1;
/// `CU_EVENT_DISABLE_TIMING`.
const DISABLE_TIMING: u32 = 0x2;
/// `CU_EVENT_INTERPROCESS`: requires `CU_EVENT_DISABLE_TIMING`.
const INTERPROCESS: u32 = 0x4;

/// `CU_EVENT_WAIT_EXTERNAL`: the only `cuStreamWaitEvent` flag.
const WAIT_EXTERNAL: u32 = 0x1;

/// Looks up an event (`CUDA_ERROR_INVALID_HANDLE` if unknown).
pub(crate) fn get(st: &State, key: usize) -> Res<&Event> {
    match st.events.get(&key) {
        Some(e) => Ok(e),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("event {key:#x} does not exist"),
        ),
    }
}

/// `cuEventCreate` in the current context.
pub(crate) fn create(st: &mut State, flags: u32) -> Res<usize> {
    let known = BLOCKING_SYNC | DISABLE_TIMING | INTERPROCESS;
    if flags & !known != 0 || (flags & INTERPROCESS != 0 && flags & DISABLE_TIMING == 0) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("event flags {flags:#x} are not valid"),
        );
    }
    let ctx = context::current(st)?;
    let key = st.mint();
    st.events.insert(
        key,
        Event {
            ctx,
            flags,
            stamp: None,
            captured: false,
        },
    );
    Ok(key)
}

/// `cuEventDestroy_v2`.
pub(crate) fn destroy(st: &mut State, key: usize) -> Res<()> {
    get(st, key)?;
    st.events.remove(&key);
    crate::ipc::event_destroyed(st, key);
    Ok(())
}

/// `cuEventRecord`: all earlier work on the stream is done, so the event completes now.
pub(crate) fn record(st: &mut State, key: usize, stream_key: usize) -> Res<()> {
    let ctx = stream::usable(st, stream_key)?;
    if get(st, key)?.ctx != ctx {
        return err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            "event and stream belong to different contexts",
        );
    }
    if crate::graph::captured(st, stream_key, || crate::graph::Work::EventRecord {
        event: key,
        captured: true,
    })? {
        if let Some(e) = st.events.get_mut(&key) {
            e.captured = true;
        }
        return Ok(());
    }
    if let Some(e) = st.events.get_mut(&key) {
        e.stamp = Some(Instant::now());
        e.captured = false;
    }
    Ok(())
}

/// An event record node that `cuGraphAddEventRecordNode` made, in a launched
/// graph: the event completes now, and the host may wait on it again.
pub(crate) fn record_replayed(st: &mut State, key: usize) -> Res<()> {
    match st.events.get_mut(&key) {
        Some(e) => {
            e.stamp = Some(Instant::now());
            e.captured = false;
            Ok(())
        }
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            "the graph's event was destroyed",
        ),
    }
}

/// `cuCtxRecordEvent`: all earlier work of context `ctx` is done, so the event completes
/// now. The event must belong to `ctx` (`CUDA_ERROR_INVALID_HANDLE` otherwise).
pub(crate) fn record_context(st: &mut State, key: usize, ctx: usize) -> Res<()> {
    context::live(st, ctx)?.usable()?;
    if get(st, key)?.ctx != ctx {
        return err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            "event and context differ",
        );
    }
    if let Some(e) = st.events.get_mut(&key) {
        e.stamp = Some(Instant::now());
    }
    Ok(())
}

/// `cuCtxWaitEvent`: checks its arguments; the event may belong to another context, and
/// with synchronous execution its work has already completed.
pub(crate) fn context_wait(st: &State, key: usize, ctx: usize) -> Res<()> {
    context::live(st, ctx)?.usable()?;
    get(st, key).map(|_| ())
}

/// `cuStreamWaitEvent`: checks its arguments; with synchronous execution every event has
/// already completed.
pub(crate) fn stream_wait(st: &State, stream: usize, ev: usize, flags: u32) -> Res<()> {
    if flags & !WAIT_EXTERNAL != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("cuStreamWaitEvent flags {flags:#x} are not valid"),
        );
    }
    stream::usable(st, stream)?;
    get(st, ev)?;
    Ok(())
}

/// `cuEventSynchronize` / `cuEventQuery`: recorded work is always complete, so this
/// reports the event's context's sticky error, if any.
/// An event whose last record was captured into a graph is refused with
/// `CUDA_ERROR_INVALID_VALUE`, as driver 580 refuses it.
pub(crate) fn synchronize(st: &State, key: usize) -> Res<()> {
    let e = get(st, key)?;
    if e.captured {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the event's last record was captured into a graph",
        );
    }
    context::live(st, e.ctx)?.usable()
}

/// `cuEventElapsedTime`: milliseconds from `start` to `end`.
pub(crate) fn elapsed_ms(st: &State, start: usize, end: usize) -> Res<f32> {
    let (s, e) = (get(st, start)?, get(st, end)?);
    if (s.flags | e.flags) & DISABLE_TIMING != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            "an event was created with CU_EVENT_DISABLE_TIMING",
        );
    }
    let (Some(t0), Some(t1)) = (s.stamp, e.stamp) else {
        return err(
            CUresult::CUDA_ERROR_NOT_READY,
            "an event was never recorded",
        );
    };
    let ms = if t1 >= t0 {
        t1.duration_since(t0).as_secs_f64() * 1e3
    } else {
        -(t0.duration_since(t1).as_secs_f64() * 1e3)
    };
    // The API returns f32 milliseconds; the precision loss is the API's.
    #[allow(clippy::cast_possible_truncation)]
    let ms = ms as f32;
    Ok(ms)
}
