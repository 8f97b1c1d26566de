//! The shape of the function table. The data lives in `generated/functions.rs`.

/// One exported driver symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FnDesc {
    /// Export symbol, e.g. `cuMemAlloc_v2`.
    pub name: &'static str,
    /// API name the symbol is a variant of, e.g. `cuMemAlloc` (what `cuGetProcAddress`
    /// is asked for).
    pub base: &'static str,
    /// ABI version from the `PFN_` typedef, e.g. 3020: callers asking `cuGetProcAddress`
    /// at a version ≥ this may get this variant. 0 when no typedef exists.
    pub version: u32,
    /// Per-thread-default-stream flavour of the symbol.
    pub per_thread: PerThread,
    /// Whether a `PFN_` typedef gave the signature. When false, `params` is empty and
    /// the symbol must answer `CUDA_ERROR_NOT_SUPPORTED`.
    pub signature_known: bool,
    /// Parameters in order.
    pub params: &'static [Param],
}

/// Per-thread default stream variant of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PerThread {
    /// Legacy default stream (no suffix).
    None,
    /// `_ptds`: per-thread default stream, synchronous API.
    Ptds,
    /// `_ptsz`: per-thread default stream, asynchronous API (takes a stream).
    Ptsz,
}

/// One parameter of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Name as in the header.
    pub name: &'static str,
    /// Normalised C type, e.g. `const char *`.
    pub c_type: &'static str,
    /// How the parameter is used, as far as the header's types say.
    pub kind: ParamKind,
}

/// How a parameter carries data. Derived from the C type by the generator:
/// a pointer to `const` is `In`, any other data pointer is `Out` (the headers do not
/// mark in/out pointers, so `InOut` is never derived automatically), `void *` host
/// memory with a byte count is `HostBuf`, untyped `void *` is `Opaque`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// Read by the driver through a pointer, or a struct passed by value.
    In,
    /// Written by the driver through a pointer.
    Out,
    /// Read and written through a pointer.
    InOut,
    /// A handle value.
    Handle(HandleKind),
    /// A device address (`CUdeviceptr`).
    DevPtr,
    /// Host memory whose byte length is parameter number `len_param`.
    HostBuf {
        /// Index of the length parameter.
        len_param: u8,
    },
    /// An integer, float, flag word or enum by value.
    Scalar,
    /// A function pointer.
    Callback,
    /// Untyped pointer whose meaning depends on other arguments.
    Opaque,
}

/// What a handle parameter refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum HandleKind {
    Context,
    Stream,
    Event,
    Module,
    Function,
    Library,
    Kernel,
    Graph,
    GraphNode,
    GraphExec,
    GraphDeviceNode,
    GraphConditional,
    MemPool,
    MemGenericAllocation,
    Array,
    MipmappedArray,
    TexRef,
    SurfRef,
    TexObject,
    SurfObject,
    ExternalMemory,
    ExternalSemaphore,
    GraphicsResource,
    LinkState,
    UserObject,
    GreenCtx,
    DevResourceDesc,
    AsyncCallback,
    LogsCallback,
    EglStreamConnection,
    /// A device ordinal (`CUdevice`).
    Device,
}
