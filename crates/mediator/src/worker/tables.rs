//! The session's handle tables: client-minted ids → real driver handles, and
//! every live device range the session owns.
//!
//! Every resource records the context that owns it, so destroying or resetting
//! a context forgets its streams, events, modules, functions and allocations:
//! a stale id then fails with `CUDA_ERROR_INVALID_HANDLE` instead of reaching
//! the driver as a dangling pointer.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use vgpu_abi::HandleKind;

use super::status::{INVALID_CONTEXT, INVALID_HANDLE, INVALID_VALUE};
use crate::driver::{DevPtr, Handle, Status};

/// A raw driver handle stored as an integer so tables are `Send`.
pub type Raw = usize;

/// Ids below this are the CUDA stream sentinels: 0 (NULL), 1 (legacy), 2 (per-thread).
const STREAM_SENTINELS: u64 = 3;

/// The owner recorded for handles that belong to a device rather than a
/// context (memory pools): no context's destruction forgets them.
const NO_CONTEXT: u64 = 0;

/// The driver's answer for a handle of `kind` it does not know: every
/// memory-pool and graph call documents `CUDA_ERROR_INVALID_VALUE` for a
/// bad pool or graph; other handles are `CUDA_ERROR_INVALID_HANDLE`.
fn unknown(kind: HandleKind) -> Status {
    match kind {
        // The pool and graph calls answer CUDA_ERROR_INVALID_VALUE for a
        // handle they do not know.
        HandleKind::MemPool | HandleKind::Graph | HandleKind::GraphNode | HandleKind::GraphExec => {
            INVALID_VALUE
        }
        _ => INVALID_HANDLE,
    }
}

/// Converts a stored handle back to the driver's pointer type.
pub fn as_handle(raw: Raw) -> Handle {
    raw as Handle
}

#[derive(Debug, Clone, Copy)]
pub struct Owned {
    pub real: Raw,
    pub ctx: u64,
}

#[derive(Debug, Clone)]
pub struct Function {
    pub real: Raw,
    pub module: u64,
    /// (offset, size) of every kernel parameter, in order; shared, so a
    /// launch takes it without copying.
    pub params: std::sync::Arc<[(u32, u32)]>,
}

/// Who owns a device range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeOwner {
    /// `cuMemAlloc` in this context.
    Alloc { ctx: u64 },
    /// A module or library global.
    Global { module: u64 },
    /// Shared pinned host memory (keyed by its worker address).
    Host { base: u64 },
    /// Memory another session exported, opened in this context
    /// (`cuIpcOpenMemHandle`).
    Ipc { ctx: u64 },
}

/// A live shared pinned allocation (`worker::host`), by its worker address.
#[derive(Debug)]
pub struct HostAlloc {
    pub len: usize,
    pub dptr: DevPtr,
    /// Keeps the pages' file alive for the life of the mapping.
    pub fd: std::os::fd::OwnedFd,
}

#[derive(Debug, Clone, Copy)]
pub struct Range {
    pub size: u64,
    pub owner: RangeOwner,
    /// The session's ordinal of the device an allocation is on
    /// ([`super::held`]); `None` where unknown or not an allocation.
    pub device: Option<u32>,
}

#[derive(Debug, Default)]
pub struct Tables {
    pub ctxs: HashMap<u64, Raw>,
    /// The contexts the session created (`cuCtxCreate`): id → the
    /// session's ordinal of their device ([`super::held`]).
    pub created_ctxs: HashMap<u64, u32>,
    /// Private, with `functions`: every removal goes through a method that
    /// bumps `gone`, which lanes' launch caches depend on.
    streams: HashMap<u64, Owned>,
    pub events: HashMap<u64, Owned>,
    pub modules: HashMap<u64, Owned>,
    pub libraries: HashMap<u64, Owned>,
    functions: HashMap<u64, Function>,
    /// Bumped (under the tables' lock) whenever a stream or function leaves
    /// the tables; shared with [`super::Session::handles_gone`], which lanes
    /// read without the lock.
    gone: Arc<AtomicU64>,
    pub ranges: BTreeMap<DevPtr, Range>,
    /// Large images being uploaded in pieces (StageBlob), by stage id.
    pub staged: HashMap<u64, Vec<u8>>,
    /// Shared pinned host allocations by worker address.
    pub host: BTreeMap<u64, HostAlloc>,
    /// Handles of the other kinds, by id (the kind is in the id's tag).
    others: HashMap<u64, Other>,
    /// `others` by (kind, real handle): a capture's graph nodes are looked
    /// up by handle once per call that returns them.
    other_ids: HashMap<(HandleKind, Raw), u64>,
    /// Ids minted here so far ([`vgpu_proto::ids::worker`]).
    minted: u64,
    /// Reservations, allocation handles and mappings (`cuMemMap`).
    pub vmm: super::vmm::Vmm,
    /// Texture and surface objects the session created, by the driver's
    /// own value (applications pass it to kernels, so it is not translated).
    pub tex_objects: HashMap<u64, TexObject>,
    /// Addresses a graph allocates (allocation nodes, captured
    /// `cuMemAllocAsync`): each launch of the graph allocates the same
    /// address again, so a free outside the graph goes to the driver and the
    /// range stays known.
    pub graph_allocs: std::collections::HashSet<u64>,
    /// JIT links by the client's id.
    pub links: super::link::Links,
    /// Inter-process handles exported and opened (`cuIpc*`).
    pub ipc: super::ipc::Ipc,
    /// Bytes of the session's own device allocations (`Alloc` ranges that
    /// are not a graph's), by device: with the VMM handles' bytes, the
    /// device memory the session's slot reports ([`Tables::publish_memory`]).
    held: super::held::Held,
}

/// A texture or surface object the session created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TexObject {
    pub surface: bool,
    pub ctx: u64,
}

/// A handle of a kind without a table of its own.
#[derive(Debug, Clone, Copy)]
struct Other {
    kind: HandleKind,
    real: Raw,
    ctx: u64,
}

impl Tables {
    /// The counter bumped whenever a stream or function leaves the tables.
    pub fn gone_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.gone)
    }

    fn bump_gone(&self) {
        self.gone.fetch_add(1, Ordering::SeqCst);
    }

    /// A new stream id must not name a live stream.
    pub fn fresh_stream(&self, id: u64) -> Result<(), Status> {
        Self::fresh(&self.streams, id)
    }

    /// A new function id must not name a live function or kernel.
    pub fn fresh_function(&self, id: u64) -> Result<(), Status> {
        Self::fresh(&self.functions, id)
    }

    pub fn insert_stream(&mut self, id: u64, stream: Owned) {
        self.streams.insert(id, stream);
    }

    pub fn insert_function(&mut self, id: u64, function: Function) {
        self.functions.insert(id, function);
    }

    /// Forgets stream `id` (destroyed).
    pub fn forget_stream(&mut self, id: u64) {
        self.streams.remove(&id);
        self.bump_gone();
    }

    pub fn ctx(&self, id: u64) -> Option<Raw> {
        self.ctxs.get(&id).copied()
    }

    pub fn stream(&self, id: u64) -> Result<Raw, Status> {
        if id < STREAM_SENTINELS {
            // The sentinels are the driver's own values (0, 1, 2).
            return Raw::try_from(id).map_err(|_| INVALID_HANDLE);
        }
        self.streams.get(&id).map(|o| o.real).ok_or(INVALID_HANDLE)
    }

    pub fn event(&self, id: u64) -> Result<Raw, Status> {
        self.events.get(&id).map(|o| o.real).ok_or(INVALID_HANDLE)
    }

    pub fn module(&self, id: u64) -> Result<Raw, Status> {
        self.modules.get(&id).map(|o| o.real).ok_or(INVALID_HANDLE)
    }

    pub fn library(&self, id: u64) -> Result<Raw, Status> {
        self.libraries
            .get(&id)
            .map(|o| o.real)
            .ok_or(INVALID_HANDLE)
    }

    pub fn function(&self, id: u64) -> Result<&Function, Status> {
        self.functions.get(&id).ok_or(INVALID_HANDLE)
    }

    /// The real handle behind the id of a `kind` handle the application
    /// passed. 0 is NULL, which the driver itself judges (for streams it is
    /// the legacy default stream). An unknown id is
    /// `CUDA_ERROR_INVALID_CONTEXT` for contexts, `CUDA_ERROR_INVALID_VALUE`
    /// for memory pools, graphs, their nodes and executable graphs,
    /// `CUDA_ERROR_INVALID_HANDLE` otherwise, as the driver answers for a
    /// handle it does not know.
    pub fn handle(&self, kind: HandleKind, id: u64) -> Result<Raw, Status> {
        match kind {
            HandleKind::Stream => self.stream(id),
            _ if id == 0 => Ok(0),
            HandleKind::Context => self.ctx(id).ok_or(INVALID_CONTEXT),
            HandleKind::Event => self.event(id),
            HandleKind::Module => self.module(id),
            HandleKind::Library => self.library(id),
            HandleKind::Function | HandleKind::Kernel => self.function(id).map(|f| f.real),
            _ => self
                .others
                .get(&id)
                .filter(|o| o.kind == kind)
                .map(|o| o.real)
                .ok_or_else(|| unknown(kind)),
        }
    }

    /// The id of a real `kind` handle the driver handed out: the id it
    /// already has, or a new one minted here and owned by context `ctx`
    /// (a memory pool belongs to its device, and outlives any context).
    /// NULL is 0.
    pub fn id_of(&mut self, kind: HandleKind, real: Raw, ctx: u64) -> u64 {
        if real == 0 {
            return 0;
        }
        let ctx = if kind == HandleKind::MemPool {
            NO_CONTEXT
        } else {
            ctx
        };
        let owned =
            |m: &HashMap<u64, Owned>| m.iter().find(|(_, o)| o.real == real).map(|(&id, _)| id);
        let known = match kind {
            HandleKind::Context => self
                .ctxs
                .iter()
                .find(|(_, &r)| r == real)
                .map(|(&id, _)| id),
            HandleKind::Stream => owned(&self.streams),
            HandleKind::Event => owned(&self.events),
            HandleKind::Module => owned(&self.modules),
            HandleKind::Library => owned(&self.libraries),
            _ => self.other_ids.get(&(kind, real)).copied(),
        };
        if let Some(id) = known {
            return id;
        }
        let id = self.mint(kind);
        let o = Owned { real, ctx };
        match kind {
            HandleKind::Context => {
                self.ctxs.insert(id, real);
            }
            HandleKind::Stream => {
                self.streams.insert(id, o);
            }
            HandleKind::Event => {
                self.events.insert(id, o);
            }
            HandleKind::Module => {
                self.modules.insert(id, o);
            }
            HandleKind::Library => {
                self.libraries.insert(id, o);
            }
            _ => {
                self.others.insert(id, Other { kind, real, ctx });
                self.other_ids.insert((kind, real), id);
            }
        }
        id
    }

    /// Forgets the `kind` handle `id` of a kind without a table of its own
    /// (destroyed); whether it was known.
    pub fn forget_other(&mut self, kind: HandleKind, id: u64) -> bool {
        match self.others.get(&id) {
            Some(o) if o.kind == kind => {
                self.other_ids.remove(&(o.kind, o.real));
                self.others.remove(&id).is_some()
            }
            _ => false,
        }
    }

    /// Forgets every id of a kind without a table of its own that names
    /// the real handle `real` (destroyed with its owner).
    pub fn forget_real(&mut self, kind: HandleKind, real: Raw) {
        self.others.retain(|_, o| o.kind != kind || o.real != real);
        self.other_ids.remove(&(kind, real));
    }

    /// The id of function or kernel `real`, if the table has it.
    pub fn function_id(&self, real: Raw) -> Option<u64> {
        self.functions
            .iter()
            .find(|(_, f)| f.real == real)
            .map(|(&id, _)| id)
    }

    /// A fresh id of `kind`, minted here.
    pub fn mint(&mut self, kind: HandleKind) -> u64 {
        self.minted += 1;
        vgpu_proto::ids::worker(kind, self.minted)
    }

    /// Checks a device range an operation touches; refused ranges are
    /// logged with the reason.
    pub fn check(&self, ptr: DevPtr, len: u64) -> Result<(), Status> {
        self.check_range(ptr, len).map_err(|why| {
            tracing::warn!("memory operation refused: {why}");
            INVALID_VALUE
        })
    }

    /// A new id must not already name a live object of its kind.
    pub fn fresh<T>(map: &HashMap<u64, T>, id: u64) -> Result<(), Status> {
        if id < STREAM_SENTINELS || map.contains_key(&id) {
            return Err(INVALID_VALUE);
        }
        Ok(())
    }

    /// Records a device allocation of context `ctx` on the session's
    /// device `device` (`cuMemAlloc`, stream-ordered and pool allocations;
    /// [`super::held::device_of`]): copies and memsets may reach it.
    pub fn insert_alloc(&mut self, ptr: DevPtr, size: u64, ctx: u64, device: Option<u32>) {
        let owner = RangeOwner::Alloc { ctx };
        let range = Range {
            size,
            owner,
            device,
        };
        if let Some(old) = self.ranges.insert(ptr, range) {
            self.held.sub(old.device, self.counted(ptr, &old));
        }
        // A new allocation at an address a graph allocated before (the
        // graph's memory went back to the driver): it is an ordinary one
        // until a graph claims it again (`graph_allocs`).
        self.graph_allocs.remove(&ptr);
        self.held.add(device, size);
        self.publish_memory();
    }

    /// Records an address a graph allocates (an allocation node, a captured
    /// `cuMemAllocAsync`): reachable like an allocation, but not counted as
    /// memory the session holds (the graph holds it while it runs).
    pub fn insert_graph_alloc(&mut self, ptr: DevPtr, size: u64, ctx: u64) {
        self.insert_alloc(ptr, size, ctx, None);
        self.held.sub(None, size);
        self.graph_allocs.insert(ptr);
        self.publish_memory();
    }

    /// Takes the allocation based at `ptr` out of the live ranges; `None`
    /// if no allocation of the session starts there.
    pub fn take_alloc(&mut self, ptr: DevPtr) -> Option<Range> {
        match self.ranges.get(&ptr) {
            Some(&r) if matches!(r.owner, RangeOwner::Alloc { .. }) => {
                self.ranges.remove(&ptr);
                self.held.sub(r.device, self.counted(ptr, &r));
                self.publish_memory();
                Some(r)
            }
            _ => None,
        }
    }

    /// Puts back an allocation [`Tables::take_alloc`] took (the driver refused to free it).
    pub fn restore_alloc(&mut self, ptr: DevPtr, range: Range) {
        self.ranges.insert(ptr, range);
        self.held.add(range.device, self.counted(ptr, &range));
        self.publish_memory();
    }

    /// The bytes of range `r` at `ptr` that count as held memory.
    fn counted(&self, ptr: DevPtr, r: &Range) -> u64 {
        match r.owner {
            RangeOwner::Alloc { .. } if !self.graph_allocs.contains(&ptr) => r.size,
            _ => 0,
        }
    }

    /// Publishes the device memory the session holds to its session slot,
    /// by device: its own allocations and the bytes of its `cuMemCreate`
    /// handles.
    pub fn publish_memory(&self) {
        let held = self.held_memory();
        held.publish();
        // The same count is what the session's tenant is charged.
        crate::tenants::quota::publish(held.total());
    }

    /// The device memory the session holds, by device.
    pub fn held_memory(&self) -> super::held::Held {
        let mut all = self.held.clone();
        self.vmm.add_created(&mut all);
        all
    }

    /// Checks that `[ptr, ptr + len)` lies inside one live device range, or
    /// in mapped memory whose access was set.
    pub fn check_range(&self, ptr: DevPtr, len: u64) -> Result<(), String> {
        if len == 0 || self.vmm.accessible(ptr, len) {
            return Ok(());
        }
        if self.vmm.reserved(ptr, 1) {
            return Err(format!(
                "{len} bytes at {ptr:#x}: reserved (cuMemAddressReserve), but not mapped \
                 with access set throughout"
            ));
        }
        let Some((&base, r)) = self.ranges.range(..=ptr).next_back() else {
            return Err(format!(
                "{len} bytes at {ptr:#x}: no live allocation at or below this address"
            ));
        };
        let end = ptr
            .checked_add(len)
            .ok_or_else(|| format!("{len} bytes at {ptr:#x} wraps"))?;
        if ptr >= base + r.size {
            return Err(format!(
                "{len} bytes at {ptr:#x}: no live allocation of this session contains it \
                 (nearest below ends at {:#x})",
                base + r.size
            ));
        }
        if end > base + r.size {
            return Err(format!(
                "{len} bytes at {ptr:#x} run past the allocation {base:#x}..{:#x} ({} bytes, {:?})",
                base + r.size,
                r.size,
                r.owner
            ));
        }
        Ok(())
    }

    /// Forgets everything owned by module `id`.
    pub fn forget_module(&mut self, id: u64) {
        self.modules.remove(&id);
        self.functions.retain(|_, f| f.module != id);
        self.bump_gone();
        self.ranges
            .retain(|_, r| r.owner != RangeOwner::Global { module: id });
    }

    /// Forgets everything owned by library `id`.
    pub fn forget_library(&mut self, id: u64) {
        self.forget_module(id);
        self.libraries.remove(&id);
    }

    /// Forgets everything owned by context `ctx` (destroyed or reset).
    pub fn forget_context_resources(&mut self, ctx: u64) {
        self.streams.retain(|_, o| o.ctx != ctx);
        self.bump_gone();
        self.events.retain(|_, o| o.ctx != ctx);
        let modules: Vec<u64> = self
            .modules
            .iter()
            .filter(|(_, o)| o.ctx == ctx)
            .map(|(&id, _)| id)
            .collect();
        for m in modules {
            self.forget_module(m);
        }
        let libraries: Vec<u64> = self
            .libraries
            .iter()
            .filter(|(_, o)| o.ctx == ctx)
            .map(|(&id, _)| id)
            .collect();
        for l in libraries {
            self.forget_library(l);
        }
        let freed: Vec<(Option<u32>, u64)> = self
            .ranges
            .iter()
            .filter(|(_, r)| r.owner == RangeOwner::Alloc { ctx })
            .map(|(&p, r)| (r.device, self.counted(p, r)))
            .collect();
        for (device, bytes) in freed {
            self.held.sub(device, bytes);
        }
        self.publish_memory();
        self.ranges.retain(|_, r| {
            r.owner != RangeOwner::Alloc { ctx } && r.owner != RangeOwner::Ipc { ctx }
        });
        self.others.retain(|_, o| o.ctx != ctx);
        self.tex_objects.retain(|_, o| o.ctx != ctx);
        let others = &self.others;
        self.other_ids.retain(|_, id| others.contains_key(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_memory_follows_allocations() {
        let mut t = Tables::default();
        t.insert_alloc(0x1000, 100, 7, Some(0));
        t.insert_alloc(0x2000, 50, 8, Some(2));
        t.insert_graph_alloc(0x3000, 1000, 7);
        assert_eq!(
            t.held.total(),
            150,
            "a graph's allocation is not the session's"
        );
        assert_eq!(t.held.by_device(), &[100, 0, 50]);
        let r = t.take_alloc(0x1000).expect("live");
        assert_eq!(t.held.total(), 50);
        assert_eq!(t.held.by_device(), &[0, 0, 50]);
        assert!(t.take_alloc(0x1000).is_none(), "gone");
        assert!(t.take_alloc(0x1001).is_none(), "not a base");
        t.restore_alloc(0x1000, r);
        assert_eq!(t.held.by_device(), &[100, 0, 50]);
        t.insert_alloc(0x1000, 10, 7, Some(1));
        assert_eq!(
            t.held.by_device(),
            &[0, 10, 50],
            "the same address again replaces the old size and device"
        );
        t.forget_context_resources(7);
        assert_eq!(t.held.by_device(), &[0, 0, 50]);
        t.insert_alloc(0x3000, 5, 8, None);
        assert_eq!(
            t.held.total(),
            55,
            "a graph's old address allocated again counts"
        );
        assert_eq!(t.held.by_device(), &[0, 0, 50], "on no known device");
    }

    #[test]
    fn ranges_are_checked() {
        let mut t = Tables::default();
        t.ranges.insert(
            0x1000,
            Range {
                size: 0x100,
                owner: RangeOwner::Alloc { ctx: 7 },
                device: Some(0),
            },
        );
        assert!(t.check_range(0x1000, 0x100).is_ok());
        assert!(t.check_range(0x1080, 0x80).is_ok());
        assert!(t.check_range(0x1080, 0x81).is_err());
        assert!(t.check_range(0x0fff, 1).is_err());
        assert!(t.check_range(u64::MAX, 2).is_err());
        assert!(t.check_range(0x5000, 0).is_ok());
        t.forget_context_resources(7);
        assert!(t.check_range(0x1000, 1).is_err());
    }

    #[test]
    fn pools_are_device_owned_handles() {
        let mut t = Tables::default();
        let id = t.id_of(HandleKind::MemPool, 0x7000, 5);
        assert_eq!(
            t.id_of(HandleKind::MemPool, 0x7000, 6),
            id,
            "one id per pool"
        );
        assert_eq!(t.handle(HandleKind::MemPool, id), Ok(0x7000));
        // A context's end leaves pools alone.
        t.forget_context_resources(5);
        assert_eq!(t.handle(HandleKind::MemPool, id), Ok(0x7000));
        // A forged or destroyed pool is the driver's CUDA_ERROR_INVALID_VALUE.
        assert_eq!(t.handle(HandleKind::MemPool, id + 1), Err(INVALID_VALUE));
        t.forget_other(HandleKind::Event, id);
        assert_eq!(t.handle(HandleKind::MemPool, id), Ok(0x7000));
        t.forget_other(HandleKind::MemPool, id);
        assert_eq!(t.handle(HandleKind::MemPool, id), Err(INVALID_VALUE));
        assert_eq!(
            t.handle(HandleKind::MemPool, 0),
            Ok(0),
            "NULL is the driver's to judge"
        );
        assert_ne!(
            t.id_of(HandleKind::MemPool, 0x7000, 5),
            id,
            "a new pool at the same address"
        );
    }

    #[test]
    fn destroyed_arrays_leave_the_tables() {
        let mut t = Tables::default();
        let a = t.id_of(HandleKind::Array, 0xa000, 7);
        let level = t.id_of(HandleKind::Array, 0xb000, 7);
        let m = t.id_of(HandleKind::MipmappedArray, 0xc000, 7);
        assert_eq!(t.handle(HandleKind::Array, a), Ok(0xa000));
        // An array id is not a mipmapped array's.
        assert_eq!(t.handle(HandleKind::MipmappedArray, a), Err(INVALID_HANDLE));
        assert!(!t.forget_other(HandleKind::MipmappedArray, a));
        assert!(t.forget_other(HandleKind::Array, a));
        assert_eq!(t.handle(HandleKind::Array, a), Err(INVALID_HANDLE));
        t.forget_real(HandleKind::Array, 0xb000);
        assert_eq!(t.handle(HandleKind::Array, level), Err(INVALID_HANDLE));
        assert_eq!(t.handle(HandleKind::MipmappedArray, m), Ok(0xc000));
        t.tex_objects.insert(
            5,
            TexObject {
                surface: false,
                ctx: 7,
            },
        );
        t.forget_context_resources(7);
        assert_eq!(t.handle(HandleKind::MipmappedArray, m), Err(INVALID_HANDLE));
        assert!(t.tex_objects.is_empty());
    }

    #[test]
    fn other_handles_are_found_by_handle_and_forgotten() {
        let mut t = Tables::default();
        let id = t.id_of(HandleKind::GraphNode, 0x50, 7);
        assert_eq!(t.id_of(HandleKind::GraphNode, 0x50, 7), id);
        assert_ne!(t.id_of(HandleKind::Graph, 0x50, 7), id);
        assert_eq!(t.handle(HandleKind::GraphNode, id), Ok(0x50));
        t.forget_other(HandleKind::GraphNode, id);
        assert_eq!(t.handle(HandleKind::GraphNode, id), Err(INVALID_VALUE));
        let again = t.id_of(HandleKind::GraphNode, 0x50, 7);
        assert_ne!(again, id);
        t.forget_context_resources(7);
        assert_eq!(t.handle(HandleKind::GraphNode, again), Err(INVALID_VALUE));
        assert_ne!(t.id_of(HandleKind::GraphNode, 0x50, 8), again);
    }

    #[test]
    fn stream_sentinels_pass_through() {
        let t = Tables::default();
        assert_eq!(t.stream(0), Ok(0));
        assert_eq!(t.stream(1), Ok(1));
        assert_eq!(t.stream(2), Ok(2));
        assert_eq!(t.stream(99), Err(INVALID_HANDLE));
    }
}
