//! Stream-ordered allocation (`cuMemAllocAsync`/`cuMemFreeAsync`). Streams run their work
//! at enqueue time, so a stream-ordered allocation or free takes effect at once; what
//! stays stream-ordered is the checking: the stream must be usable, and the allocation is
//! made in the stream's context from the device's default pool.

use crate::cu::{CUdeviceptr, CUresult};
use crate::error::{err, Res};
use crate::memory;
use crate::state::State;
use crate::stream;

/// `cuMemAllocAsync`: `size` bytes in the context of stream `stream_key`.
pub(crate) fn alloc(
    st: &mut State,
    budget: u64,
    size: usize,
    stream_key: usize,
) -> Res<CUdeviceptr> {
    let ctx = stream::usable(st, stream_key)?;
    let p = memory::alloc(st, budget, ctx, size)?;
    st.ext.facts.mark_stream_ordered(p);
    Ok(p)
}

/// `cuMemFreeAsync`: `p` must be the base of a live allocation (NULL included: unlike
/// `cuMemFree`, the stream-ordered free has nothing to do for NULL and says so).
pub(crate) fn free(st: &mut State, p: CUdeviceptr, stream_key: usize) -> Res<()> {
    stream::usable(st, stream_key)?;
    if p == 0 {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "cuMemFreeAsync(NULL)");
    }
    memory::free(st, p)
}
