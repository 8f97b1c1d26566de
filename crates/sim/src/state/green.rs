//! Green contexts of the simulated devices (the model is `exports::green`).

use std::collections::HashMap;

/// One green context.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Green {
    pub sms: u32,
    /// Its own context, on its device.
    pub ctx: usize,
    /// `cuGreenCtxGetId`.
    pub id: u64,
}

/// The green contexts, resource descriptors and green streams.
#[derive(Debug, Default)]
pub(crate) struct Greens {
    pub contexts: HashMap<usize, Green>,
    /// Descriptors by handle: the SMs they describe.
    pub descs: HashMap<usize, u32>,
    /// Streams of green contexts: stream → green context.
    pub streams: HashMap<usize, usize>,
    /// The last `cuGreenCtxGetId` handed out.
    pub last_id: u64,
}
