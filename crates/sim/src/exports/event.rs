//! Events: creation and destruction, and the model functions of the
//! generated event exports (`generated/mod.rs`).

use std::ffi::c_uint;

use super::stream::ptsz;
use crate::cu::{CUevent, CUresult, CUstream};
use crate::error::{err, Res};
use crate::event;
use crate::ffi::{handle, key, run, Out};
use crate::state;

/// `CU_EVENT_RECORD_EXTERNAL`, the only record flag.
const RECORD_FLAGS: c_uint = 1;

/// `cuEventCreate`.
///
/// # Safety
/// `ph_event` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(ph_event: *mut CUevent, flags: c_uint) -> CUresult {
    run("cuEventCreate", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(ph_event, "phEvent") }?;
        let k = event::create(&mut sim.lock(), flags)?;
        out.write(handle(k));
        Ok(())
    })
}

/// `cuEventDestroy_v2`.
#[no_mangle]
pub extern "C" fn cuEventDestroy_v2(h_event: CUevent) -> CUresult {
    run("cuEventDestroy_v2", || {
        event::destroy(&mut state::sim()?.lock(), key(h_event))
    })
}

/// `cuEventRecord`: stamps the monotonic clock now (earlier work already ran).
pub(crate) fn event_record(h_event: CUevent, h_stream: CUstream) -> Res<()> {
    event::record(&mut state::sim()?.lock(), key(h_event), key(h_stream))
}

/// `cuEventRecord_ptsz`.
pub(crate) fn event_record_ptsz(h_event: CUevent, h_stream: CUstream) -> Res<()> {
    event::record(&mut state::sim()?.lock(), key(h_event), ptsz(h_stream))
}

/// `cuEventRecordWithFlags`: the one flag (external) changes nothing
/// in the simulator, captured or not.
pub(crate) fn event_record_with_flags(
    h_event: CUevent,
    h_stream: CUstream,
    flags: c_uint,
) -> Res<()> {
    if flags & !RECORD_FLAGS != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("record flags {flags:#x}"),
        );
    }
    event_record(h_event, h_stream)
}

/// `cuEventRecordWithFlags_ptsz`.
pub(crate) fn event_record_with_flags_ptsz(
    h_event: CUevent,
    h_stream: CUstream,
    flags: c_uint,
) -> Res<()> {
    if flags & !RECORD_FLAGS != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("record flags {flags:#x}"),
        );
    }
    event_record_ptsz(h_event, h_stream)
}

/// `cuEventSynchronize`.
pub(crate) fn event_synchronize(h_event: CUevent) -> Res<()> {
    let mut st = state::sim()?.lock();
    crate::printf::flush(&mut st);
    event::synchronize(&st, key(h_event))
}

/// `cuEventQuery`: recorded work always finished.
pub(crate) fn event_query(h_event: CUevent) -> Res<()> {
    event::synchronize(&state::sim()?.lock(), key(h_event))
}

/// `cuEventElapsedTime`: milliseconds between two recorded events.
pub(crate) fn event_elapsed_time(ms: Out<f32>, h_start: CUevent, h_end: CUevent) -> Res<()> {
    ms.write(event::elapsed_ms(
        &state::sim()?.lock(),
        key(h_start),
        key(h_end),
    )?);
    Ok(())
}

/// `cuEventElapsedTime_v2`: as `cuEventElapsedTime`.
pub(crate) fn event_elapsed_time_v2(ms: Out<f32>, h_start: CUevent, h_end: CUevent) -> Res<()> {
    event_elapsed_time(ms, h_start, h_end)
}
