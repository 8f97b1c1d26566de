//! What the client knows about a session's objects, so that it can answer
//! locally: which ids are live contexts and on which device, each function's
//! parameter layout, and which device ranges exist (to route `cuMemcpy`).

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

/// A live context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtxInfo {
    pub device: i32,
    pub primary: bool,
}

/// A function's kernel parameters: (offset, size) each, from `cuFuncGetParamInfo`.
pub type ParamLayout = Arc<[(u32, u32)]>;

/// A loaded function.
#[derive(Clone, Debug)]
pub struct FunctionInfo {
    pub module: u64,
    pub params: ParamLayout,
    /// The kernel it was got from (`cuKernelGetFunction`), if any.
    pub kernel: Option<u64>,
}

/// A live JIT link (`cuLinkCreate`).
#[derive(Debug)]
pub struct LinkInfo {
    /// The options given to `cuLinkCreate`.
    pub keys: Vec<u32>,
    /// The address of the application's values array for them (0 for none),
    /// which it keeps valid until `cuLinkDestroy`: the client writes log
    /// sizes, wall time and log buffers back through it.
    pub values: usize,
    /// The image of the last `cuLinkComplete`, valid until `cuLinkDestroy`.
    pub cubin: Option<Box<[u8]>>,
}

#[derive(Debug, Default)]
pub struct Objects {
    pub contexts: HashMap<u64, CtxInfo>,
    /// Live JIT links by id.
    pub links: HashMap<u64, LinkInfo>,
    pub functions: HashMap<u64, FunctionInfo>,
    /// (module, name) → function id, so repeated look-ups return one handle.
    pub function_names: HashMap<(u64, Vec<u8>), u64>,
    /// (kernel, context) → function id, for `cuKernelGetFunction`.
    pub kernel_functions: HashMap<(u64, u64), u64>,
    /// Device ranges this session handed out: base → size.
    pub device_ranges: BTreeMap<u64, u64>,
    /// Address reservations (`cuMemAddressReserve`): base → size. Device
    /// memory for unified addressing.
    pub reserved: BTreeMap<u64, u64>,
    /// Mapped ranges and whether their access was set, as the worker keeps
    /// them: a copy into them may be posted once they serve copies.
    pub mapped: vgpu_proto::vmm::Mappings,
    /// Pinned host memory (shared, or local on a TCP session): client
    /// address → allocation.
    pub host: BTreeMap<u64, HostInfo>,
    /// Host registrations (`cuMemHostRegister`): the first registered
    /// byte → the registration. Their pages are `host` entries of kind
    /// [`HostKind::Registered`], which registrations sharing a page share.
    pub registrations: BTreeMap<u64, Registration>,
    /// Managed allocations: base → their advice and attachments.
    pub managed: BTreeMap<u64, crate::api::managed::Managed>,
    /// Context-local storage of the runtime's private interface: (context, key) → entry.
    pub ctx_storage: HashMap<(u64, usize), StorageEntry>,
    /// This process's retains of each device's primary context.
    pub primary_refs: HashMap<i32, u32>,
    /// Kernel names handed to the tools' module walk, kept alive per function.
    pub kernel_names: HashMap<u64, std::ffi::CString>,
    /// Each context's unique id (`cuCtxGetId`), in order of first sight, never reused.
    pub unique_ids: HashMap<u64, u64>,
    /// Live streams this session created: id → context.
    pub streams: HashMap<u64, u64>,
    /// Live green contexts: id → their device and, once asked for, the id
    /// of their context (`cuCtxFromGreenCtx`).
    pub greens: HashMap<u64, (i32, Option<u64>)>,
    /// Live events this session created: id → context.
    pub events: HashMap<u64, u64>,
    /// Live executable graphs this session instantiated: id → context.
    pub graph_execs: HashMap<u64, u64>,
    /// Streams (wire ids) on which a capture this session began is open:
    /// id → how many (the per-thread stream of several threads shares an id).
    pub capturing: HashMap<u64, u32>,
    /// The last dependency list `cuStreamGetCaptureInfo` returned for each
    /// stream (wire id), kept until the next such call on that stream: the
    /// application reads it through the pointers it was given.
    pub capture_lists: HashMap<u64, CaptureList>,
    /// The arguments `cuGraphKernelNodeGetParams` last returned for each
    /// kernel node (id), kept until the next such call on that node: the
    /// application reads them through the `kernelParams` it was given.
    pub kernel_node_args: HashMap<u64, KernelArgs>,
    /// Answers the worker gave that only this session's own calls change
    /// (see [`Answers`]).
    pub answers: Answers,
}

/// Answers kept so that a repeated question costs no round trip. Each holds
/// until a call of this session that can change it, which drops it; nothing
/// else changes them (a session's worker runs only this session's calls).
#[derive(Debug, Default)]
pub struct Answers {
    /// `cuFuncGetAttribute` / `cuKernelGetAttribute`: (function or kernel,
    /// attribute, device or -1) → value. Dropped for the handle's family by
    /// a set of any of its attributes.
    pub attributes: HashMap<(u64, u32, i64), i32>,
    /// `cuDevicePrimaryCtxGetState`: device → (flags, active). Dropped by
    /// every primary-context call (`api::context::primary_state_changed`).
    pub primary_state: HashMap<i32, (u32, i32)>,
    /// `cuLaunchKernelEx` configurations with launch attributes that the
    /// driver accepted (function, dimensions, shared memory, attribute
    /// bytes): the same configuration again is posted. Dropped for the
    /// function's family by an attribute set.
    pub launches: HashSet<LaunchConfig>,
}

/// A capture's dependency list as the application sees it.
#[derive(Debug, Default)]
pub struct CaptureList {
    /// Node handles (the worker's ids).
    pub nodes: Vec<usize>,
    pub edges: Vec<vgpu_abi::types::CUgraphEdgeData>,
}

/// A kernel node's arguments as the application sees them: the packed
/// buffer (8-byte aligned) and one pointer into it per parameter.
#[derive(Debug, Default)]
pub struct KernelArgs {
    pub words: Vec<u64>,
    pub ptrs: Vec<usize>,
}

/// A launch configuration, as [`Answers::launches`] keys it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    pub function: u64,
    pub context: u64,
    /// Grid and block dimensions, then dynamic shared memory.
    pub dims: [u64; 7],
    pub attributes: Vec<u8>,
}

/// Most entries an answer table keeps; past that it starts again empty.
const MAX_ANSWERS: usize = 1 << 16;

impl Answers {
    /// Keeps an attribute value.
    pub fn keep_attribute(&mut self, key: (u64, u32, i64), value: i32) {
        if self.attributes.len() >= MAX_ANSWERS {
            self.attributes.clear();
        }
        self.attributes.insert(key, value);
    }

    /// Keeps an accepted launch configuration.
    pub fn keep_launch(&mut self, config: LaunchConfig) {
        if self.launches.len() >= MAX_ANSWERS {
            self.launches.clear();
        }
        self.launches.insert(config);
    }

    /// Drops what an attribute set on any of `family` may have changed.
    pub fn attributes_changed(&mut self, family: &[u64]) {
        self.attributes.retain(|k, _| !family.contains(&k.0));
        self.launches.retain(|c| !family.contains(&c.function));
    }
}

/// Destructor of a context-local storage entry: `(context, key, value)`.
pub type StorageDtor =
    unsafe extern "C" fn(*mut std::ffi::c_void, *mut std::ffi::c_void, *mut std::ffi::c_void);

/// One context-local storage entry.
#[derive(Clone, Copy, Debug)]
pub struct StorageEntry {
    pub value: usize,
    pub dtor: Option<StorageDtor>,
}

/// Pinned host memory shared with the worker, or (on a TCP session) kept
/// in this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostInfo {
    pub len: u64,
    /// Where the worker mapped the same pages (0 when `local`).
    pub worker: u64,
    /// The pages' device pointer (0 when `local`).
    pub dptr: u64,
    pub flags: u32,
    /// Pages of this process only, unknown to the worker
    /// (`api::host_local`).
    pub local: bool,
    /// The context current at allocation (kept for `local` pages).
    pub ctx: u64,
    /// What made the pages.
    pub kind: HostKind,
}

/// One host registration: the bytes the application registered and the
/// flags `cuMemHostGetFlags` reports for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    pub len: u64,
    pub flags: u32,
}

/// What made shared or local host pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// `cuMemHostAlloc` / `cuMemAllocHost`.
    Alloc,
    /// Pages `cuMemHostRegister` moved; `start` and `len` are the bytes of
    /// the registration that moved them (the pages are whole pages around
    /// them, and later registrations may share them: see
    /// [`Objects::registrations`]).
    Registered { start: u64, len: u64 },
    /// `cuMemAllocManaged` (`crate::api::managed`).
    Managed,
}

impl Objects {
    /// Whether `ptr` lies in a device range or a reservation this session
    /// knows.
    pub fn is_device(&self, ptr: u64) -> bool {
        let inside = |m: &BTreeMap<u64, u64>| {
            m.range(..=ptr)
                .next_back()
                .is_some_and(|(&base, &size)| ptr - base < size)
        };
        inside(&self.device_ranges) || inside(&self.reserved)
    }

    /// Whether `[ptr, ptr + len)` lies inside one device range this session
    /// knows: the check the worker makes, made before a copy is posted.
    pub fn range_ok(&self, ptr: u64, len: u64) -> bool {
        if self.mapped.contains(ptr) {
            return self.mapped.accessible(ptr, len);
        }
        let Some((&base, &size)) = self.device_ranges.range(..=ptr).next_back() else {
            return false;
        };
        ptr.checked_add(len)
            .is_some_and(|end| base.checked_add(size).is_some_and(|limit| end <= limit))
    }

    /// Whether `ctx` is a live context and stream `sid` may be used in it:
    /// a sentinel (NULL, legacy, per-thread) or a live stream created in it.
    pub fn stream_ok(&self, ctx: u64, sid: u64) -> bool {
        self.contexts.contains_key(&ctx) && (sid < 3 || self.streams.get(&sid) == Some(&ctx))
    }

    /// Whether `ctx` is a live context and `id` a live executable graph
    /// instantiated in it.
    pub fn graph_exec_ok(&self, ctx: u64, id: u64) -> bool {
        self.contexts.contains_key(&ctx) && self.graph_execs.get(&id) == Some(&ctx)
    }

    /// Whether `ctx` is a live context and `eid` a live event created in it.
    pub fn event_ok(&self, ctx: u64, eid: u64) -> bool {
        self.contexts.contains_key(&ctx) && self.events.get(&eid) == Some(&ctx)
    }

    /// The shared pinned allocation holding `[p, p + len)`: (its client base, info).
    pub fn host_range(&self, p: u64, len: u64) -> Option<(u64, HostInfo)> {
        let (&base, &info) = self.host.range(..=p).next_back()?;
        let end = p.checked_add(len)?;
        (end <= base + info.len).then_some((base, info))
    }

    /// The registration whose bytes hold `p`: (its first byte, it).
    pub fn registration_at(&self, p: u64) -> Option<(u64, Registration)> {
        let (&start, &r) = self.registrations.range(..=p).next_back()?;
        (p - start < r.len).then_some((start, r))
    }

    /// Registers a context, giving it the next unique id the first time.
    pub fn add_context(&mut self, id: u64, info: CtxInfo) {
        self.contexts.insert(id, info);
        let next = self.unique_ids.len() as u64 + 1;
        self.unique_ids.entry(id).or_insert(next);
    }

    /// Removes and returns a context's storage entries, whose destructors the
    /// caller runs once no lock is held.
    pub fn take_storage(&mut self, ctx: u64) -> Vec<(usize, StorageEntry)> {
        let keys: Vec<(u64, usize)> = self
            .ctx_storage
            .keys()
            .filter(|k| k.0 == ctx)
            .copied()
            .collect();
        keys.into_iter()
            .filter_map(|k| self.ctx_storage.remove(&k).map(|e| (k.1, e)))
            .collect()
    }

    /// The handles whose attributes a set on `handle` may change: itself,
    /// the kernel it was got from, and every function got from that kernel
    /// (or from `handle`, when it is a kernel).
    pub fn attribute_family(&self, handle: u64) -> Vec<u64> {
        let mut family = vec![handle];
        let kernels: Vec<u64> = self
            .kernel_functions
            .iter()
            .filter(|(&(k, _), &f)| k == handle || f == handle)
            .map(|(&(k, _), _)| k)
            .collect();
        for (&(k, _), &f) in &self.kernel_functions {
            if kernels.contains(&k) {
                family.extend([k, f]);
            }
        }
        family.sort_unstable();
        family.dedup();
        family
    }

    /// Forgets a module's functions.
    pub fn forget_module(&mut self, module: u64) {
        self.functions.retain(|_, f| f.module != module);
        self.function_names.retain(|(m, _), _| *m != module);
        let functions = &self.functions;
        self.kernel_names.retain(|f, _| functions.contains_key(f));
        self.kernel_functions
            .retain(|(k, _), _| functions.contains_key(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ranges() {
        let mut o = Objects::default();
        o.device_ranges.insert(0x1000, 0x100);
        assert!(o.is_device(0x1000));
        assert!(o.is_device(0x10ff));
        assert!(!o.is_device(0x1100));
        assert!(!o.is_device(0xfff));
        assert!(o.range_ok(0x1000, 0x100));
        assert!(o.range_ok(0x10f0, 0x10));
        assert!(!o.range_ok(0x10f0, 0x11));
        assert!(!o.range_ok(0xff0, 0x20));
        assert!(!o.range_ok(0x10ff, u64::MAX));
    }

    #[test]
    fn reservations_are_device_memory_and_mappings_post_once_accessible() {
        let mut o = Objects::default();
        o.reserved.insert(0x20_0000, 0x80_0000);
        assert!(o.is_device(0x20_0000) && o.is_device(0x9f_ffff));
        assert!(!o.is_device(0xa0_0000));
        assert!(!o.range_ok(0x20_0000, 0x10), "reserved, not mapped");
        o.mapped.map(0x20_0000, 0x20_0000);
        assert!(!o.range_ok(0x20_0000, 0x10), "mapped, no access");
        o.mapped.set_access(0x20_0000, 0x20_0000, true);
        assert!(o.range_ok(0x20_0000, 0x20_0000));
        assert!(!o.range_ok(0x3f_fff0, 0x20), "past the mapping");
        o.mapped.unmap(0x20_0000, 0x20_0000);
        assert!(!o.range_ok(0x20_0000, 0x10), "unmapped");
    }

    #[test]
    fn attribute_sets_drop_their_family_only() {
        let mut o = Objects::default();
        // Kernel 1 gave functions 11 (context A) and 12 (context B); 20 is
        // a module function.
        o.kernel_functions.insert((1, 0xa), 11);
        o.kernel_functions.insert((1, 0xb), 12);
        assert_eq!(o.attribute_family(1), [1, 11, 12]);
        assert_eq!(o.attribute_family(11), [1, 11, 12]);
        assert_eq!(o.attribute_family(20), [20]);
        for h in [1, 11, 20] {
            o.answers.keep_attribute((h, 8, 0), 100);
            o.answers.keep_launch(LaunchConfig {
                function: h,
                context: 0xa,
                dims: [1; 7],
                attributes: vec![4],
            });
        }
        let family = o.attribute_family(12);
        o.answers.attributes_changed(&family);
        assert_eq!(o.answers.attributes.len(), 1);
        assert!(o.answers.attributes.contains_key(&(20, 8, 0)));
        assert_eq!(o.answers.launches.len(), 1);
    }

    #[test]
    fn streams_and_events_belong_to_live_contexts() {
        let mut o = Objects::default();
        let info = CtxInfo {
            device: 0,
            primary: false,
        };
        o.contexts.insert(7, info);
        o.streams.insert(30, 7);
        o.events.insert(40, 7);
        assert!(o.stream_ok(7, 0) && o.stream_ok(7, 2) && o.stream_ok(7, 30));
        assert!(!o.stream_ok(7, 31), "unknown stream");
        assert!(!o.stream_ok(8, 0), "no such context");
        assert!(o.event_ok(7, 40) && !o.event_ok(7, 41));
        o.contexts.insert(8, info);
        assert!(!o.stream_ok(8, 30), "a stream of another context");
        o.contexts.remove(&7);
        assert!(
            !o.stream_ok(7, 30) && !o.event_ok(7, 40),
            "a destroyed context"
        );
    }
}
