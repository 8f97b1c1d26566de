//! The simulator's one global: the configuration and the tables behind one mutex.
//!
//! [`State`] composes the tables. Each submodule owns one kind of entry: its data type and
//! the operations on that entry alone; none of them reaches back up to `State`. Operations
//! that need several tables, the current context or a fresh handle live above, in the area
//! modules (`crate::context`, `crate::stream`, …), which take the `State`.

pub(crate) mod array;
pub(crate) mod context;
pub(crate) mod event;
pub(crate) mod funcattr;
pub(crate) mod green;
pub(crate) mod hostmem;
pub(crate) mod ipc;
pub(crate) mod library;
pub(crate) mod memory;
pub(crate) mod module;
pub(crate) mod pointer;
pub(crate) mod pool;
pub(crate) mod stream;
pub(crate) mod vmm;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::config::Config;
use crate::cu::CUresult;
use crate::error::{err, Res};
use array::{Array, MipmappedArray, TexObject, TexRef};
use context::{Context, PrimaryCtx};
use event::Event;
use funcattr::Attrs;
use hostmem::Host;
use library::Libraries;
use memory::Allocation;
use module::{Function, Module};
use pointer::Facts;
use pool::Pools;
use stream::Stream;

/// Every table of the simulator. Handles are keys into these maps.
pub(crate) struct State {
    next_handle: usize,
    /// Per-device bytes in live allocations.
    pub used: Vec<u64>,
    /// Per-device primary context bookkeeping.
    pub primary: Vec<PrimaryCtx>,
    pub contexts: HashMap<usize, Context>,
    /// Live allocations keyed by base address.
    pub allocs: BTreeMap<u64, Allocation>,
    pub streams: HashMap<usize, Stream>,
    pub events: HashMap<usize, Event>,
    pub modules: HashMap<usize, Module>,
    pub functions: HashMap<usize, Function>,
    /// Libraries, kernels, attributes, page-locked host memory, pointer facts.
    pub ext: Ext,
}

/// Every table of the CUDA 12 entry points: libraries and kernels, function attributes,
/// registered and allocated host memory, per-allocation pointer facts (buffer ids,
/// stream-ordered origin), memory pools, virtual memory management and CUDA arrays.
#[derive(Debug, Default)]
pub(crate) struct Ext {
    pub libraries: Libraries,
    pub attrs: Attrs,
    pub host: Host,
    pub facts: Facts,
    pub pools: Pools,
    /// Reservations, physical allocations and mappings (`cuMemMap`).
    pub vmm: vmm::Vmm,
    /// Live CUDA arrays by handle.
    pub arrays: HashMap<usize, Array>,
    /// Live mipmapped arrays by handle.
    pub mipmaps: HashMap<usize, MipmappedArray>,
    /// Live texture and surface objects by value, and the last value handed out.
    pub tex_objects: BTreeMap<u64, TexObject>,
    pub last_tex_object: u64,
    /// Graphs, executable graphs and open stream captures.
    pub graphs: crate::graph::Graphs,
    /// Live JIT links by handle.
    pub links: HashMap<usize, crate::link::Link>,
    /// Legacy parameter buffers (`cuParamSet*`) by function handle.
    pub legacy_params: HashMap<usize, Vec<u8>>,
    /// Device `printf` output not yet flushed ([`crate::printf`]).
    pub printf: Vec<u8>,
    /// Legacy texture references by handle: those `cuTexRefCreate` made and
    /// the modules' references the application has set up.
    pub texrefs: HashMap<usize, TexRef>,
    /// The array bound to each module surface reference, by handle.
    pub surfrefs: HashMap<usize, usize>,
    /// Contexts (first) that enabled peer access to another (second).
    pub peers: BTreeSet<(usize, usize)>,
    /// Green contexts, their resource descriptors and streams.
    pub green: green::Greens,
    /// Inter-process handles exported and opened.
    pub ipc: ipc::Ipc,
    /// Messages of failed device assertions not yet flushed.
    pub asserted: Vec<u8>,
    /// The process's checkpoint state (`CUprocessState`).
    pub checkpoint_state: u32,
    /// GPU core dump settings.
    pub coredump: crate::coredump::Coredump,
    /// Driver logs of failed calls (`cuLogs*`).
    pub logs: crate::logs::Logs,
    /// Async notification registrations: handle -> device. The simulated
    /// device never raises a notification.
    pub notifications: HashMap<usize, i32>,
}

/// First handle value handed out; 0x1 and 0x2 stay free for `CU_STREAM_LEGACY` and
/// `CU_STREAM_PER_THREAD`.
const FIRST_HANDLE: usize = 0x100;

impl State {
    fn new(devices: u32) -> Self {
        let n = devices as usize;
        Self {
            next_handle: FIRST_HANDLE,
            used: vec![0; n],
            primary: vec![PrimaryCtx::default(); n],
            contexts: HashMap::new(),
            allocs: BTreeMap::new(),
            streams: HashMap::new(),
            events: HashMap::new(),
            modules: HashMap::new(),
            functions: HashMap::new(),
            ext: Ext::default(),
        }
    }

    /// A fresh handle value, never reused, aligned to 16 so it looks like a pointer.
    pub fn mint(&mut self) -> usize {
        let h = self.next_handle;
        self.next_handle += 0x10;
        h
    }
}

/// The initialised simulator.
pub(crate) struct Sim {
    pub cfg: Config,
    state: Mutex<State>,
}

impl Sim {
    pub fn new(cfg: Config) -> Self {
        let state = Mutex::new(State::new(cfg.devices));
        Self { cfg, state }
    }

    /// Locks the tables. A panic caught while they were held cannot leave them torn in a
    /// way that matters to a test double, so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of devices, as a `CUdevice`-compatible count.
    pub fn device_count(&self) -> i32 {
        // MAX_DEVICES is 8, so the count always fits.
        i32::try_from(self.cfg.devices).unwrap_or(0)
    }

    /// Checks a device ordinal.
    pub fn check_device(&self, dev: i32) -> Res<usize> {
        if (0..self.device_count()).contains(&dev) {
            Ok(dev as usize)
        } else {
            err(
                CUresult::CUDA_ERROR_INVALID_DEVICE,
                format!("device ordinal {dev} is not in 0..{}", self.cfg.devices),
            )
        }
    }
}

/// The result of the first `cuInit`: the simulator, or the error every later call sees.
static SIM: OnceLock<Result<Sim, CUresult>> = OnceLock::new();

/// Initialises the simulator once (`cuInit`); later calls return the first outcome.
pub(crate) fn init() -> Res<()> {
    let outcome = SIM.get_or_init(|| {
        let cfg = Config::from_env();
        eprintln!("vgpu-sim: SIMULATED CUDA device on host memory (a test double, not a GPU)");
        if cfg.devices == 0 {
            Err(CUresult::CUDA_ERROR_NO_DEVICE)
        } else {
            Ok(Sim::new(cfg))
        }
    });
    match outcome {
        Ok(_) => Ok(()),
        Err(code) => err(*code, "VGPU_SIM_DEVICES=0: no simulated device"),
    }
}

/// Initialises the simulator with a given configuration, for tests.
#[cfg(test)]
pub(crate) fn init_with(cfg: Config) {
    let _ = SIM.get_or_init(|| Ok(Sim::new(cfg)));
}

/// The simulator, or `CUDA_ERROR_NOT_INITIALIZED` before a successful `cuInit`.
pub(crate) fn sim() -> Res<&'static Sim> {
    match SIM.get() {
        Some(Ok(sim)) => Ok(sim),
        _ => err(
            CUresult::CUDA_ERROR_NOT_INITIALIZED,
            "cuInit has not succeeded",
        ),
    }
}

/// Whether errors are logged (`VGPU_LOG`).
pub(crate) fn log_enabled() -> bool {
    matches!(SIM.get(), Some(Ok(sim)) if sim.cfg.log)
}
