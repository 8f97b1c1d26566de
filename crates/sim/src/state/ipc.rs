//! Inter-process handles this process exported and opened (`crate::ipc`).

use std::collections::HashMap;
use std::os::fd::OwnedFd;

/// An opened handle: (exporting pid, tag, context that opened it).
pub(crate) type Key = (u32, u64, usize);

/// An opened allocation: its address here and how many opens are outstanding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opened {
    pub base: u64,
    pub count: u32,
}

#[derive(Debug, Default)]
pub(crate) struct Ipc {
    /// Exported events: key → (memfd proving the event lives, tag).
    pub events: HashMap<usize, (OwnedFd, u64)>,
    /// Exported pools: key → (memfd standing for the pool, its tag).
    pub pools: HashMap<usize, (OwnedFd, u64)>,
    /// Imported external memory objects: key → (the memfd, its size, the device).
    pub external: HashMap<usize, (OwnedFd, u64, usize)>,
    /// Imported external semaphores: key → (their memfd, whether timeline).
    pub semaphores: HashMap<usize, (OwnedFd, bool)>,
    pub opened: HashMap<Key, Opened>,
    /// `opened` by the address it gave.
    pub opened_at: HashMap<u64, Key>,
}
