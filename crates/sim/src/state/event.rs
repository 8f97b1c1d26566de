//! Events.

use std::time::Instant;

/// One event.
#[derive(Debug)]
pub(crate) struct Event {
    pub ctx: usize,
    pub flags: u32,
    /// When it was last recorded; `None` until the first `cuEventRecord`.
    pub stamp: Option<Instant>,
    /// Its last `cuEventRecord` was captured into a graph: driver 580 then
    /// refuses to wait on it from the host (`CUDA_ERROR_INVALID_VALUE`), even
    /// after the graph ran, until a record outside a capture.
    pub captured: bool,
}
