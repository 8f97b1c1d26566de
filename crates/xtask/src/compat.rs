//! `cargo xtask compat [--check]`: writes `docs/compatibility.md`, which lists
//! the implemented entry points by area and, for every other export, why it
//! still returns `CUDA_ERROR_NOT_SUPPORTED`.
//!
//! The implemented set is the remoting table (`crates/abi/src/remote/table.rs`:
//! its calls and its hand-written entry points, which `cargo xtask gen-calls`
//! checks against the client's `implement!` lines), the export set the
//! fixture of the real driver's exports, so the page cannot drift from the
//! code: CI runs `--check`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::Error;

/// (name prefixes, area, why what is not implemented is not).
const AREAS: &[(&[&str], &str, &str)] = &[
    (&["cudbg"], "Debugger hooks", "Symbols the CUDA debugger reads in the driver's own process; they have no meaning in a remoting client."),
    (&["cuGL", "cuGraphicsGL", "cuWGL", "cuEGL", "cuGraphicsEGL", "cuVDPAU", "cuGraphicsVDPAU", "cuGraphics"], "Graphics interop", "They share graphics objects of the application's process with CUDA; the driver runs in the worker, which cannot reach them. Not planned."),
    (&["cuCheckpoint"], "Process checkpointing", "The driver checkpoints the process that owns the GPU state, which is the session's worker: the application passes its own pid and the calls act on its worker, whose state and restore thread they report. Another pid is CUDA_ERROR_INVALID_VALUE, with a log line: it names another process, whose worker this client cannot reach."),
    (&["cuCoredump"], "Core dumps", "GPU core dumps are written by the driver of the process that owns the GPU state, the session's worker: the attributes are the worker's, for the current context or the whole worker, and the file and pipe names (CU_COREDUMP_FILE, CU_COREDUMP_PIPE) are paths on the worker's host, where the dumps land. The 13.x dump start and completion callbacks are not exported by driver 580."),
    (&["cuProfiler"], "Profiler control", "Profiling runs against the worker; not remoted yet."),
    (&["cuIpc"], "Inter-process handles", "Memory and event handles are the driver's own and open in another session of the same uid, on this host, as the host's IPC registry says (docs/adr/0005-ipc.md); a session of another uid, or over TCP, gets CUDA_ERROR_INVALID_VALUE."),
    (&["cuMemAllocManaged", "cuMemAdvise", "cuMemPrefetch", "cuMemRangeGetAttribute", "cuMemDiscard"], "Managed memory", "Served from host pages the client and the worker share at one address, registered with the driver (docs/adr/0005-managed-memory-and-host-registration.md); a TCP session cannot share pages, so there cuMemAllocManaged gives CUDA_ERROR_NOT_SUPPORTED."),
    (&["cuArray", "cuMipmappedArray", "cuTexObject", "cuSurfObject", "cuTexRef", "cuSurfRef"], "Arrays, textures and surfaces", "Not remoted yet; arrays, texture and surface objects and the legacy texture and surface references are handles of the session, and every copy with an array side is bounded by the array's extent in the worker."),
    (&["cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemAddressReserve", "cuMemAddressFree", "cuMemSetAccess", "cuMemGetAccess", "cuMemExport", "cuMemImport", "cuMemGetAllocationGranularity", "cuMemGetAllocationPropertiesFromHandle", "cuMemRetainAllocationHandle", "cuMemGetHandleForAddressRange"], "Virtual memory management", "Shareable handles (allocations passed between processes) and handles for address ranges are not remoted yet."),
    (&["cuGreenCtx", "cuDevResource", "cuDevSmResource", "cuCtxFromGreenCtx", "cuDeviceGetDevResource", "cuCtxGetDevResource", "cuStreamGetGreenCtx", "cuGreenCtxStreamCreate"], "Green contexts", "Not remoted yet; a green context's context and streams are adopted by the client like those it creates."),
    (&["cuMulticast"], "Multicast objects", "Not remoted yet; multicast handles are allocation handles of the session (`cuMemRelease` releases them)."),
    (&["cuMemPool", "cuMemAllocFromPoolAsync", "cuDeviceGetMemPool", "cuDeviceSetMemPool", "cuDeviceGetDefaultMemPool", "cuMemGetDefaultMemPool", "cuMemGetMemPool", "cuMemSetMemPool"], "Memory pools", "Pools are handles of the session; a pool passes between processes as a POSIX file descriptor (SCM_RIGHTS, as VMM allocations do) and its allocations as the driver's export data (docs/adr/0005-ipc.md)."),
    (&["cuExternalMemory", "cuImportExternal", "cuDestroyExternal", "cuSignalExternal", "cuWaitExternal", "cuExternalSemaphore"], "External memory and semaphores", "External memory imports POSIX file descriptors (the descriptor passes to the worker by SCM_RIGHTS, docs/adr/0005-ipc.md) and maps buffers; other handle types get the driver's answer. External semaphores import the same way, and signalling and waiting pass their parameters to the driver. A mipmapped array mapped on external memory is a mipmapped array of the session like cuMipmappedArrayCreate's (its levels, copies and cuMipmappedArrayDestroy); the simulated device maps its levels over the imported pages, each from a page boundary."),
    (&["cuMemHostRegister", "cuMemHostUnregister"], "Host memory registration", "The application's anonymous pages move in place into pages shared with the worker, which registers them (docs/adr/0005-managed-memory-and-host-registration.md); private file mappings, the stack and TCP sessions give CUDA_ERROR_NOT_SUPPORTED. Registrations of disjoint bytes may share pages, as driver 580 allows: the moved pages stay registered while any registration's pages meet them."),
    (&["cuGraph", "cuUserObject", "cuStreamBeginCapture", "cuStreamEndCapture", "cuStreamGetCaptureInfo", "cuStreamUpdateCaptureDependencies", "cuThreadExchangeStreamCaptureMode", "cuDeviceGraphMem", "cuDeviceGetGraphMem", "cuDeviceSetGraphMem"], "Graphs and stream capture", "Every entry point of this area is remoted."),
    (&["cuTensorMap"], "Tensor maps", "Not remoted yet."),
    (&["cuLink"], "JIT linker", "The link lives in the worker; the JIT options of cuLinkCreate (log buffers, their sizes, wall time) are copied back into the application's after every call on the link, failed inputs included, cuLinkAddFile reads the file where the application runs, and the linked image stays in the application's memory until cuLinkDestroy."),
    (&["cuLaunchHostFunc", "cuStreamAddCallback"], "Host callbacks", "They run in the client process, in stream order, over the session's callback channel (docs/protocol.md); not over TCP sessions yet, and a CUDA call from inside one returns CUDA_ERROR_NOT_PERMITTED."),
    (&["cuMemcpyPeer", "cuCtxEnablePeerAccess", "cuCtxDisablePeerAccess", "cuDeviceCanAccessPeer", "cuDeviceGetP2P"], "Peer access", "Not remoted yet; the contexts of a peer copy are the session's and both ranges are checked against its allocations."),
    (&["cuLogs"], "Driver logs", "The log is the worker driver's, which runs the calls: cuLogsCurrent and cuLogsDumpToMemory read it, and cuLogsDumpToFile writes its lines where the application runs. Log callbacks run in the application's process, on the session's callback thread, with the driver's level and message: the worker registers a function of its own with its driver, which queues each message as an event on the callback channel (docs/protocol.md), so a message the driver logs inside a call the application waits for runs its callbacks on the calling thread before that call returns, and others run on the callback thread shortly after. At most 1024 events (1 MiB) wait; past that messages are dropped, and the worker logs how many. Handles are ids of the client: one it never gave out, or took back, is CUDA_ERROR_INVALID_VALUE. Over TCP, as host callbacks, registering is CUDA_ERROR_NOT_SUPPORTED. The simulated device calls the callbacks with each line it logs."),
    (&["cuStreamWaitValue", "cuStreamWriteValue", "cuStreamBatchMemOp"], "Stream memory operations", "Every form is remoted; the worker checks each address against the session's allocations."),
];

/// Areas for everything not matched above, by prefix.
const GENERAL: &[(&str, &str)] = &[
    ("cuDevicePrimaryCtx", "Contexts"),
    ("cuCtx", "Contexts"),
    ("cuDevice", "Devices"),
    ("cuDriver", "Initialisation and versions"),
    ("cuInit", "Initialisation and versions"),
    ("cuGetErrorName", "Errors"),
    ("cuGetErrorString", "Errors"),
    ("cuGetProcAddress", "Entry points and export tables"),
    ("cuGetExportTable", "Entry points and export tables"),
    ("cuMemcpy", "Copies and memsets"),
    ("cuMemset", "Copies and memsets"),
    ("cuMem", "Memory"),
    ("cuPointer", "Memory"),
    ("cuStream", "Streams"),
    ("cuEvent", "Events"),
    ("cuModule", "Modules, libraries and kernels"),
    ("cuLibrary", "Modules, libraries and kernels"),
    ("cuKernel", "Modules, libraries and kernels"),
    ("cuFunc", "Modules, libraries and kernels"),
    ("cuLaunch", "Launches and occupancy"),
    ("cuOccupancy", "Launches and occupancy"),
    ("cuParam", "Launches and occupancy"),
];

const GENERAL_REASON: &str =
    "Not remoted yet: no application traced so far (PyTorch, CuPy, cuda-python, cudarc) calls it.";

/// What an implemented entry point of an area does differently from the
/// native driver, printed after the area's implemented list.
const NOTES: &[(&str, &str)] = &[
    ("Devices", "`cuDeviceRegisterAsyncNotification`'s function runs in the application's process, on the session's callback thread, with a copy of the driver's `CUasyncNotificationInfo` and the handle the application got, an id of the client's (one it never gave out, or took back, is `CUDA_ERROR_INVALID_VALUE`); it is queued and dropped as the log callbacks are (Driver logs). The simulated device never raises a notification. Over TCP registering is `CUDA_ERROR_NOT_SUPPORTED`."),
    ("Graphs and stream capture", "External-semaphore signal and wait nodes carry their semaphores as the session's handles and their parameters as the driver reads them; the arrays their GetParams calls return are kept by the client as long as the node. The generic cuGraphAddNode, cuGraphAddNode_v2, cuGraphNodeSetParams and cuGraphExecNodeSetParams go, by node type, the way that type's own entry point goes (so every type keeps its checks and translation); a conditional node's body graphs, which the driver makes, become graphs of the session. The simulated device runs an IF, WHILE or SWITCH node by its handle's default value (it cannot run cudaGraphSetConditional, so a WHILE node whose default is nonzero fails its launch with CUDA_ERROR_NOT_SUPPORTED). Batch memory-operation nodes are remoted; the worker checks each wait's and write's address against the session's allocations, as for cuStreamBatchMemOp, and the simulated device runs a node's operations in order at each launch. Kernel node attributes are remoted; the simulated device keeps a kernel node's priority, cooperative flag, access policy window and memory synchronisation domain and map (checked as for a stream), copies them between kernel nodes and refuses other attributes with CUDA_ERROR_INVALID_VALUE; they do not change how it runs a kernel. Memcpy nodes take device, array and shared pinned host memory (cuMemHostAlloc); a new memcpy node with a pageable host side becomes, in the worker's graph, a child graph of the device copy and a host node copying between the application's memory and shared pinned staging memory (its type and parameters are still answered as a memcpy node's, but its clones show a child graph node); such a node takes new parameters in its graph and in an executable graph (a pageable side through new staging memory, any other copy straight; in an executable graph the driver judges the change as a child graph's), but a memcpy node made without a pageable side cannot be given one, which is refused; an asynchronous 1D copy with pageable memory on a capturing stream, or a 2D one whose rows have no gaps between them, is captured the same way (a host node and a copy through staging memory), a 2D one with gaps between its rows is refused; host nodes and user objects' destructors run in the application's process over the callback channel. Memory allocation and free nodes are remoted (the worker accepts work in an allocation's range from the node's creation on); the simulated device allocates a graph allocation when its node is made and keeps it, and reads every graph memory attribute as 0."),
    ("Host memory registration", "The application's anonymous pages move in place into pages shared with the worker, which registers them (docs/adr/0005-managed-memory-and-host-registration.md); private file mappings, the stack and TCP sessions give `CUDA_ERROR_NOT_SUPPORTED`. Registrations of disjoint bytes may share pages, as driver 580 allows: the moved pages stay registered while any registration's pages meet them, and flags, device pointers and pointer ranges answer per registration; a shared page keeps the device-side flags of the registration that moved it."),
    ("External memory and semaphores", "A mipmapped array mapped on external memory (`cuExternalMemoryGetMappedMipmappedArray`) is a mipmapped array of the session like `cuMipmappedArrayCreate`'s: its levels, copies to and from them and `cuMipmappedArrayDestroy` behave the same. The simulated device maps the levels over the imported pages, each from a page boundary after the one before, and refuses levels that do not fit the object with `CUDA_ERROR_INVALID_VALUE`."),
    ("Memory", "`cuMemBatchDecompressAsync` carries its operations by value; the worker checks every source, destination and `dstActBytes` range against the session's allocations and returns the driver's status and error index. On a device with a decompression engine a range outside them fails its operation with `CUDA_ERROR_INVALID_VALUE` and its error index; an H100 or H200 has none (`CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK` 0), so there such an address reaches the driver as NULL and the driver, which runs nothing, answers the batch (driver 580: `CUDA_ERROR_NOT_SUPPORTED`). The simulated device has a Snappy engine (mask 2), so CI runs real decompression through vgpu."),
    ("Modules, libraries and kernels", "`cuLibraryGetUnifiedFunction` asks the worker's driver, so its errors are the driver's (`CUDA_ERROR_NOT_FOUND` for a symbol that is not a unified function, as on GPUs without unified function pointers). A pointer it finds is an address in the worker's process: the application gets that value, which it can pass to kernels, but calling it from the application's own code is not possible."),
];

/// Entry points of a general area that are not remoted for a reason of
/// their own.
const NAMED: &[(&[&str], &str)] = &[
    (&["cuMemGetAttribute", "cuMemGetAttribute_v2"], "Exported by the driver but declared in no CUDA header: their parameters are not known."),
    (&["cuDeviceGetNvSciSyncAttributes"], "It fills an NvSciSync attribute list of the application's process, which the worker cannot reach; not remoted."),
];

fn area(name: &str) -> (&'static str, &'static str) {
    for (prefixes, area, reason) in AREAS {
        if prefixes.iter().any(|p| name.starts_with(p)) {
            return (area, reason);
        }
    }
    let reason = NAMED
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map_or(GENERAL_REASON, |(_, r)| r);
    GENERAL
        .iter()
        .find(|(p, _)| name.starts_with(p))
        .map_or(("Other", reason), |(_, a)| (a, reason))
}

/// Every entry point the remoting table implements.
fn implemented() -> BTreeSet<String> {
    vgpu_abi::remote::CALLS
        .iter()
        .map(|c| c.name.to_string())
        .chain(
            vgpu_abi::remote::MANUAL
                .iter()
                .flat_map(|m| m.names.iter().map(|n| n.to_string())),
        )
        .collect()
}

/// The names inside the client's hand-written `implement!` lines.
pub fn implement_lines(api_mod: &str) -> BTreeSet<String> {
    let start = api_mod.find("implement! {").unwrap_or(api_mod.len());
    api_mod[start..]
        .lines()
        .filter_map(|l| {
            let t = l.trim_start();
            let name: String = t
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (name.starts_with("cu") && t[name.len()..].starts_with('(')).then_some(name)
        })
        .collect()
}

fn render(root: &Path) -> Result<String, Error> {
    let exports = std::fs::read_to_string(root.join("fixtures/libcuda-580-exports.txt"))?;
    let done = implemented();
    // Per area: the implemented entry points, and the others by reason.
    type Area<'a> = (Vec<&'a str>, BTreeMap<&'static str, Vec<&'a str>>);
    let mut by_area: BTreeMap<&str, Area<'_>> = BTreeMap::new();
    let names: Vec<&str> = exports
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    for name in &names {
        let (a, reason) = area(name);
        let e = by_area.entry(a).or_default();
        if done.contains(*name) {
            e.0.push(name);
        } else {
            e.1.entry(reason).or_default().push(name);
        }
    }
    let total = names.len();
    let implemented = names.iter().filter(|n| done.contains(**n)).count();
    let mut out = String::new();
    out.push_str("# Compatibility\n\n");
    out.push_str(
        "<!-- Written by `cargo xtask compat`; CI checks it is current. Do not edit. -->\n\n",
    );
    out.push_str(&format!(
        "vgpu's client exports all {total} symbols of the real driver (580). {implemented} are implemented; \
         every other one returns `CUDA_ERROR_NOT_SUPPORTED` and, with `VGPU_LOG` set, names itself once. \
         `VGPU_TRACE=FILE` shows which calls a program makes.\n\n"
    ));
    out.push_str("| area | implemented | not yet |\n|---|---|---|\n");
    for (a, (yes, no)) in &by_area {
        let not_yet: usize = no.values().map(Vec::len).sum();
        out.push_str(&format!("| {a} | {} | {not_yet} |\n", yes.len()));
    }
    out.push('\n');
    for (a, (yes, no)) in &by_area {
        out.push_str(&format!("## {a}\n\n"));
        if !yes.is_empty() {
            out.push_str(&format!(
                "Implemented: {}.\n\n",
                yes.iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for (_, note) in NOTES.iter().filter(|(area, _)| area == a) {
            out.push_str(&format!("{note}\n\n"));
        }
        for (reason, no) in no {
            out.push_str(&format!("Not yet ({}): {reason}\n\n", no.len()));
            out.push_str(&format!(
                "{}.\n\n",
                no.iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    Ok(out)
}

/// Writes (or with `check`, compares) `docs/compatibility.md`.
pub fn run(check: bool) -> Result<(), Error> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = render(&root)?;
    let path = root.join("docs/compatibility.md");
    if check {
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != page {
            return Err("docs/compatibility.md is out of date: run `cargo xtask compat`".into());
        }
        println!("docs/compatibility.md is current");
        return Ok(());
    }
    std::fs::write(&path, page)?;
    println!("wrote {}", path.display());
    Ok(())
}
