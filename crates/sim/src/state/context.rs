//! Contexts: per-device primary-context bookkeeping and the contexts themselves, primary
//! or created.

use super::stream::Implicit;
use crate::cu::CUresult;
use crate::error::{err, Res};

/// Number of `CUlimit` values the simulator knows (`CU_LIMIT_STACK_SIZE` ..=
/// `CU_LIMIT_PERSISTING_L2_CACHE_SIZE`).
pub(crate) const LIMITS: usize = 7;
const DEFAULT_LIMITS: [usize; LIMITS] = [1024, 1 << 20, 8 << 20, 2, 2048, 64, 0];

/// Per-device primary-context bookkeeping.
#[derive(Clone, Debug, Default)]
pub(crate) struct PrimaryCtx {
    /// The handle, minted at the first retain and kept for the life of the process.
    pub key: Option<usize>,
    pub refcount: u32,
    pub flags: u32,
}

/// One context, primary or created.
#[derive(Debug)]
pub(crate) struct Context {
    pub device: usize,
    pub flags: u32,
    pub primary: bool,
    /// False for a primary context whose refcount dropped to zero (or that was reset).
    pub active: bool,
    /// The first asynchronous error; once set, the context is unusable.
    pub sticky: Option<CUresult>,
    pub limits: [usize; LIMITS],
    /// `cuCtxAttach` usage count: 1 for a created context (its creator's reference), 0 for
    /// a primary context; `cuCtxDetach` drops it and destroys a created context at 0.
    pub usage: u32,
    /// `cuCtxSetCacheConfig`'s `CUfunc_cache` (`CU_FUNC_CACHE_PREFER_NONE` at creation).
    pub cache_config: u32,
    /// The legacy (index 0) and per-thread (index 1) default streams' id, priority and
    /// attributes; they live and die with the context.
    pub implicit: [Implicit; 2],
}

impl Context {
    /// A fresh, active context.
    pub fn new(device: usize, flags: u32, primary: bool) -> Self {
        Self {
            device,
            flags,
            primary,
            active: true,
            sticky: None,
            limits: DEFAULT_LIMITS,
            usage: u32::from(!primary),
            cache_config: 0,
            implicit: Default::default(),
        }
    }

    /// Fails with the sticky error, if any.
    pub fn usable(&self) -> Res<()> {
        match self.sticky {
            Some(code) => err(
                code,
                "the context has a sticky error from an earlier launch",
            ),
            None => Ok(()),
        }
    }
}
