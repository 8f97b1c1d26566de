//! Events.

use std::time::Instant;

/// One event.
#[derive(Debug)]
pub(crate) struct Event {
    pub ctx: usize,
    pub flags: u32,
    /// When it was last recorded; `None` until the first `cuEventRecord`.
    pub stamp: Option<Instant>,
}
