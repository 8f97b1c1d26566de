//! The remoting table. One line per entry point; see the parent module for
//! what each part means, and `docs/adding-an-entry-point.md` for how to add
//! one. Wire ids are explicit and append-only: never renumber or reuse one.
//!
//! `cargo xtask gen-calls` generates the code that carries these calls;
//! CI regenerates it and fails on any difference.

use super::remote_table;

remote_table! {
    calls {
        // ---- contexts ----
        context: cuCtxSynchronize = 12 gen (sync);
        context: cuCtxGetLimit = 13 gen;
        context: cuCtxSetLimit = 14 gen;
        context: cuCtxGetStreamPriorityRange = 15 gen [leastPriority: optional, greatestPriority: optional];
        context: cuCtxGetFlags = 16 gen;
        context: cuCtxGetApiVersion = 17 gen;
        context: cuDevicePrimaryCtxRelease_v2 = 21 client (sync, nocontext);
        context: cuDevicePrimaryCtxGetState = 22 client (nocontext);
        context: cuDevicePrimaryCtxSetFlags_v2 = 23 client (nocontext);
        context: cuDevicePrimaryCtxReset_v2 = 24 client (sync, nocontext);
        context: cuCtxSynchronize_v2 = 130 gen (sync);
        context: cuCtxAttach = 131 gen;
        context: cuCtxDetach = 132 gen (sync);
        context: cuCtxGetCacheConfig = 133 gen;
        context: cuCtxSetCacheConfig = 134 gen;
        context: cuCtxGetSharedMemConfig = 135 gen;
        context: cuCtxSetSharedMemConfig = 136 gen;
        context: cuCtxGetExecAffinity = 137 gen;
        context: cuCtxSetFlags = 138 gen;
        context: cuCtxResetPersistingL2Cache = 139 gen;
        context: cuCtxRecordEvent = 140 gen (posted);
        context: cuCtxWaitEvent = 141 gen (posted);

        // ---- memory ----
        memory: cuMemGetInfo_v2 = 32 gen;
        memory: cuMemGetAddressRange_v2 = 33 gen [pbase: optional, psize: optional];
        memory: cuMemGetInfo = 230 gen;
        memory: cuMemsetD2D8 = 150 gen (sync) [dstDevice: pitched(dstPitch, Width, Height)];
        memory: cuMemsetD2D16 = 151 gen (sync) [dstDevice: pitched(dstPitch, Width * 2, Height)];
        memory: cuMemsetD2D32 = 152 gen (sync) [dstDevice: pitched(dstPitch, Width * 4, Height)];
        memory: cuMemsetD2D8_v2 = 153 gen (sync) [dstDevice: pitched(dstPitch, Width, Height)];
        memory: cuMemsetD2D16_v2 = 154 gen (sync) [dstDevice: pitched(dstPitch, Width * 2, Height)];
        memory: cuMemsetD2D32_v2 = 155 gen (sync) [dstDevice: pitched(dstPitch, Width * 4, Height)];
        memory: cuMemsetD2D8_v2_ptds = 156 gen (sync) [dstDevice: pitched(dstPitch, Width, Height)];
        memory: cuMemsetD2D16_v2_ptds = 157 gen (sync) [dstDevice: pitched(dstPitch, Width * 2, Height)];
        memory: cuMemsetD2D32_v2_ptds = 158 gen (sync) [dstDevice: pitched(dstPitch, Width * 4, Height)];
        memory: cuMemsetD2D8Async = 159 gen (posted(stream)) [dstDevice: pitched(dstPitch, Width, Height)];
        memory: cuMemsetD2D16Async = 160 gen (posted(stream)) [dstDevice: pitched(dstPitch, Width * 2, Height)];
        memory: cuMemsetD2D32Async = 161 gen (posted(stream)) [dstDevice: pitched(dstPitch, Width * 4, Height)];
        memory: cuMemsetD2D8Async_ptsz = 162 gen (posted(stream)) [dstDevice: pitched(dstPitch, Width, Height)];
        memory: cuMemsetD2D16Async_ptsz = 163 gen (posted(stream)) [dstDevice: pitched(dstPitch, Width * 2, Height)];
        memory: cuMemsetD2D32Async_ptsz = 164 gen (posted(stream)) [dstDevice: pitched(dstPitch, Width * 4, Height)];

        // ---- devices (answered by the worker; the snapshot answers the rest) ----
        device: cuDeviceGetByPCIBusId = 170 gen (nocontext);
        device: cuDeviceGetExecAffinitySupport = 171 gen (nocontext);
        device: cuDeviceGetHostAtomicCapabilities = 172 gen (nocontext) [capabilities: array(count), operations: array(count)];
        device: cuDeviceGetLuid = 173 gen (nocontext) [luid: string(8)];
        device: cuDeviceGetProperties = 174 gen (nocontext);
        device: cuDeviceGetTexture1DLinearMaxWidth = 175 gen (nocontext);
        device: cuFlushGPUDirectRDMAWrites = 176 gen;

        // ---- streams ----
        stream: cuStreamSynchronize = 52 gen (sync);
        stream: cuStreamQuery = 53 gen (sync);
        stream: cuStreamWaitEvent = 54 client (posted);
        stream: cuStreamGetFlags = 55 gen;
        stream: cuStreamGetPriority = 56 gen;
        stream: cuStreamIsCapturing = 94 gen;
        stream: cuStreamSynchronize_ptsz = 120 gen (sync);
        stream: cuStreamQuery_ptsz = 121 gen (sync);
        stream: cuStreamWaitEvent_ptsz = 122 client (posted);
        stream: cuStreamGetFlags_ptsz = 123 gen;
        stream: cuStreamGetPriority_ptsz = 124 gen;
        stream: cuStreamIsCapturing_ptsz = 125 gen;
        stream: cuStreamAttachMemAsync = 180 gen;
        stream: cuStreamAttachMemAsync_ptsz = 181 gen;
        stream: cuStreamCopyAttributes = 182 gen;
        stream: cuStreamCopyAttributes_ptsz = 183 gen;
        stream: cuStreamGetAttribute = 184 gen [value: bytes];
        stream: cuStreamGetAttribute_ptsz = 185 gen [value_out: bytes];
        stream: cuStreamSetAttribute = 186 gen [param: bytes];
        stream: cuStreamSetAttribute_ptsz = 187 gen [value: bytes];
        stream: cuStreamGetCtx = 188 gen;
        stream: cuStreamGetCtx_ptsz = 189 gen;
        stream: cuStreamGetCtx_v2 = 190 gen;
        stream: cuStreamGetCtx_v2_ptsz = 191 gen;
        stream: cuStreamGetDevice = 192 gen;
        stream: cuStreamGetDevice_ptsz = 193 gen;
        stream: cuStreamGetId = 194 gen;
        stream: cuStreamGetId_ptsz = 195 gen;

        // ---- events ----
        event: cuEventRecord = 62 client (posted);
        event: cuEventSynchronize = 63 gen (sync);
        event: cuEventQuery = 64 gen (sync);
        event: cuEventElapsedTime = 65 gen;
        event: cuEventRecordWithFlags = 106 client (posted);
        event: cuEventRecord_ptsz = 126 client (posted);
        event: cuEventRecordWithFlags_ptsz = 127 client (posted);
        event: cuEventElapsedTime_v2 = 128 gen;

        // ---- modules, libraries, kernels and functions ----
        module: cuModuleGetLoadingMode = 95 gen (nocontext);
        library: cuFuncGetAttribute = 86 client;
        library: cuFuncSetAttribute = 87 client;
        library: cuKernelGetAttribute = 88 client;
        library: cuKernelSetAttribute = 89 client;
        module: cuModuleGetFunctionCount = 200 gen;
        module: cuModuleGetGlobal = 201 gen [dptr: optional, bytes: optional];
        module: cuModuleGetTexRef = 202 gen;
        module: cuModuleGetSurfRef = 203 gen;
        module: cuFuncGetModule = 204 gen;
        module: cuFuncIsLoaded = 205 gen;
        module: cuFuncLoad = 206 gen;
        module: cuFuncSetBlockShape = 207 gen;
        module: cuFuncSetCacheConfig = 208 gen;
        module: cuFuncSetSharedMemConfig = 209 gen;
        module: cuFuncSetSharedSize = 210 gen;
        library: cuKernelGetLibrary = 211 gen;
        library: cuKernelSetCacheConfig = 212 gen;
        library: cuLibraryGetKernelCount = 213 gen;
        library: cuLibraryGetManaged = 214 gen [dptr: optional, bytes: optional];

        // ---- launches and occupancy ----
        launch: cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags = 90 gen;
        launch: cuOccupancyAvailableDynamicSMemPerBlock = 91 gen;
        launch: cuOccupancyMaxActiveBlocksPerMultiprocessor = 129 gen;

        // ---- stream capture and graphs ----
        graph: cuStreamBeginCapture_v2 = 380 client;
        graph: cuStreamBeginCapture = 381 client;
        graph: cuStreamBeginCapture_v2_ptsz = 382 client;
        graph: cuStreamEndCapture = 383 client;
        graph: cuStreamEndCapture_ptsz = 384 client;
        graph: cuGraphCreate = 390 gen;
        graph: cuGraphDestroy = 391 gen [hGraph: destroys];
        graph: cuGraphInstantiateWithFlags = 392 gen;
        graph: cuGraphInstantiate_v2 = 393 gen [phErrorNode: optional, logBuffer: string(bufferSize)];
        graph: cuGraphLaunch = 394 gen (posted(stream));
        graph: cuGraphUpload = 395 gen;
        graph: cuGraphExecDestroy = 396 gen [hGraphExec: destroys];
        graph: cuGraphClone = 397 gen;
        graph: cuGraphExecGetFlags = 398 gen;
        graph: cuGraphLaunch_ptsz = 399 gen (posted(stream));
        graph: cuGraphUpload_ptsz = 400 gen;
        graph: cuGraphNodeGetType = 401 client;
        graph: cuGraphDestroyNode = 402 gen [hNode: destroys];
        graph: cuStreamBeginCapture_ptsz = 403 client;
        graph: cuGraphInstantiate = 404 gen [phErrorNode: optional, logBuffer: string(bufferSize)];
        graph: cuStreamGetCaptureInfo = 405 gen [id_out: optional];
        graph: cuStreamGetCaptureInfo_ptsz = 406 gen [id_out: optional];
        graph: cuGraphAddEmptyNode = 407 gen [dependencies: array(numDependencies)];
        graph: cuGraphAddDependencies = 408 gen [from: array(numDependencies), to: array(numDependencies)];
        graph: cuGraphRemoveDependencies = 409 gen [from: array(numDependencies), to: array(numDependencies)];
        graph: cuGraphAddEventRecordNode = 410 gen [dependencies: array(numDependencies)];
        graph: cuGraphAddEventWaitNode = 411 gen [dependencies: array(numDependencies)];
        graph: cuGraphEventRecordNodeGetEvent = 434 gen;
        graph: cuGraphEventRecordNodeSetEvent = 435 gen;
        graph: cuGraphEventWaitNodeGetEvent = 436 gen;
        graph: cuGraphEventWaitNodeSetEvent = 437 gen;
        graph: cuGraphExecEventRecordNodeSetEvent = 438 gen;
        graph: cuGraphExecEventWaitNodeSetEvent = 439 gen;
        graph: cuGraphNodeGetEnabled = 440 gen;
        graph: cuGraphNodeSetEnabled = 441 gen;
        graph: cuGraphNodeFindInClone = 442 gen;
        graph: cuGraphAddChildGraphNode = 443 gen (checked) [dependencies: array(numDependencies)];
        graph: cuGraphChildGraphNodeGetGraph = 444 gen;
        graph: cuGraphExecChildGraphNodeSetParams = 450 gen;
        graph: cuDeviceGraphMemTrim = 621 gen;
        graph: cuGraphAddMemFreeNode = 624 gen [dependencies: array(numDependencies)];
        graph: cuGraphMemFreeNodeGetParams = 625 gen;
        graph: cuUserObjectRetain = 453 gen;
        graph: cuUserObjectRelease = 454 gen;
        graph: cuGraphRetainUserObject = 455 gen;
        graph: cuGraphReleaseUserObject = 456 gen;

        // ---- stream memory operations ----
        memop: cuStreamWriteValue32 = 418 gen [addr: range(4)];
        memop: cuStreamWriteValue32_ptsz = 419 gen [addr: range(4)];
        memop: cuStreamWriteValue32_v2 = 420 gen [addr: range(4)];
        memop: cuStreamWriteValue32_v2_ptsz = 421 gen [addr: range(4)];
        memop: cuStreamWriteValue64 = 422 gen [addr: range(8)];
        memop: cuStreamWriteValue64_ptsz = 423 gen [addr: range(8)];
        memop: cuStreamWriteValue64_v2 = 424 gen [addr: range(8)];
        memop: cuStreamWriteValue64_v2_ptsz = 425 gen [addr: range(8)];
        memop: cuStreamWaitValue32 = 426 gen [addr: range(4)];
        memop: cuStreamWaitValue32_ptsz = 427 gen [addr: range(4)];
        memop: cuStreamWaitValue32_v2 = 428 gen [addr: range(4)];
        memop: cuStreamWaitValue32_v2_ptsz = 429 gen [addr: range(4)];
        memop: cuStreamWaitValue64 = 430 gen [addr: range(8)];
        memop: cuStreamWaitValue64_ptsz = 431 gen [addr: range(8)];
        memop: cuStreamWaitValue64_v2 = 432 gen [addr: range(8)];
        memop: cuStreamWaitValue64_v2_ptsz = 433 gen [addr: range(8)];

        // ---- profiler control ----
        profiler: cuProfilerInitialize = 220 gen;
        profiler: cuProfilerStart = 221 gen;
        profiler: cuProfilerStop = 222 gen;

        // ---- memory pools ----
        pool: cuMemPoolCreate = 340 gen [poolProps: bytes];
        pool: cuMemPoolTrimTo = 341 gen;
        pool: cuMemPoolSetAccess = 342 gen [map: array(count)];
        pool: cuMemPoolGetAccess = 343 gen [location: in];
        pool: cuDeviceGetDefaultMemPool = 344 gen (nocontext);
        pool: cuDeviceGetMemPool = 345 gen (nocontext);
        pool: cuDeviceSetMemPool = 346 gen (nocontext);
        pool: cuMemGetDefaultMemPool = 347 gen (nocontext) [location: in];
        pool: cuMemGetMemPool = 348 gen (nocontext) [location: in];
        pool: cuMemSetMemPool = 349 gen (nocontext) [location: in];
        // ---- virtual memory management ----
        vmm: cuMemGetAllocationGranularity = 300 gen [prop: bytes];
        vmm: cuMemGetAccess = 301 gen;
        // ---- CUDA arrays ----
        array: cuArrayCreate_v2 = 460 gen;
        array: cuArray3DCreate_v2 = 461 gen;
        array: cuArrayGetDescriptor_v2 = 462 gen;
        array: cuArray3DGetDescriptor_v2 = 463 gen;
        array: cuMemcpyAtoD_v2 = 464 gen (sync) [dstDevice: range(ByteCount)];
        array: cuMemcpyDtoA_v2 = 465 gen (sync) [srcDevice: range(ByteCount)];
        array: cuMemcpyAtoA_v2 = 466 gen (sync);
        array: cuArrayGetMemoryRequirements = 467 gen;
        array: cuArrayGetPlane = 468 gen;
        array: cuArrayGetSparseProperties = 469 gen;
        array: cuMipmappedArrayCreate = 477 gen;
        array: cuMipmappedArrayGetLevel = 478 gen;
        array: cuMipmappedArrayGetMemoryRequirements = 479 gen;
        array: cuMipmappedArrayGetSparseProperties = 480 gen;
    }

    manual {
        init: cuInit, cuDriverGetVersion;
        errors: cuGetErrorName, cuGetErrorString;
        dark: cuGetExportTable;
        procaddr: cuGetProcAddress, cuGetProcAddress_v2;
        device: cuDeviceGet, cuDeviceGetCount, cuDeviceGetName, cuDeviceGetUuid,
            cuDeviceGetUuid_v2, cuDeviceGetPCIBusId, cuDeviceTotalMem_v2, cuDeviceTotalMem,
            cuDeviceGetAttribute, cuDeviceComputeCapability;
        context: cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxSetFlags,
            cuDevicePrimaryCtxReset, cuCtxCreate_v2, cuCtxCreate_v4, cuCtxDestroy_v2,
            cuCtxPushCurrent_v2, cuCtxPopCurrent_v2, cuCtxSetCurrent, cuCtxGetCurrent,
            cuCtxGetDevice, cuCtxGetDevice_v2, cuCtxGetId, cuCtxCreate, cuCtxCreate_v3, cuCtxDestroy,
            cuCtxPushCurrent, cuCtxPopCurrent;
        memory: cuMemAlloc_v2, cuMemFree_v2, cuMemcpyHtoD_v2, cuMemcpyDtoH_v2, cuMemcpyDtoD_v2,
            cuMemcpyHtoD_v2_ptds, cuMemcpyDtoH_v2_ptds, cuMemcpyDtoD_v2_ptds,
            cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2, cuMemcpyDtoDAsync_v2,
            cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoDAsync_v2_ptsz,
            cuMemcpy, cuMemcpy_ptds, cuMemcpyAsync, cuMemcpyAsync_ptsz,
            cuMemsetD8_v2, cuMemsetD16_v2, cuMemsetD32_v2,
            cuMemsetD8_v2_ptds, cuMemsetD16_v2_ptds, cuMemsetD32_v2_ptds,
            cuMemsetD8Async, cuMemsetD16Async, cuMemsetD32Async,
            cuMemsetD8Async_ptsz, cuMemsetD16Async_ptsz, cuMemsetD32Async_ptsz,
            cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoD, cuMemcpyHtoDAsync, cuMemcpyDtoHAsync,
            cuMemcpyDtoDAsync, cuMemsetD8, cuMemsetD16, cuMemsetD32,
            cuMemAllocAsync, cuMemAllocAsync_ptsz, cuMemFreeAsync, cuMemFreeAsync_ptsz;
        copy: cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz,
            cuMemcpy2D_v2, cuMemcpy2DUnaligned_v2, cuMemcpy2D_v2_ptds, cuMemcpy2DUnaligned_v2_ptds,
            cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz, cuMemcpy2D, cuMemcpy2DUnaligned,
            cuMemcpy2DAsync, cuMemcpy3D, cuMemcpy3DAsync;
        stream: cuStreamCreate, cuStreamCreateWithPriority, cuStreamDestroy_v2, cuStreamDestroy;
        event: cuEventCreate, cuEventDestroy_v2, cuEventDestroy;
        module: cuModuleLoadData, cuModuleLoadDataEx, cuModuleUnload, cuModuleGetFunction,
            cuModuleGetGlobal_v2, cuModuleLoad, cuModuleLoadFatBinary, cuFuncGetParamInfo,
            cuFuncGetName, cuKernelGetName, cuModuleEnumerateFunctions, cuLibraryEnumerateKernels;
        library: cuLibraryLoadFromFile, cuLibraryLoadData, cuLibraryUnload, cuLibraryGetKernel,
            cuLibraryGetModule, cuLibraryGetGlobal, cuKernelGetFunction, cuKernelGetParamInfo;
        launch: cuLaunchKernel, cuLaunchKernel_ptsz, cuLaunchKernelEx, cuLaunchKernelEx_ptsz,
            cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz, cuOccupancyMaxActiveClusters;
        pointer: cuPointerGetAttribute, cuPointerGetAttributes;
        host: cuMemHostAlloc, cuMemAllocHost_v2, cuMemFreeHost, cuMemHostGetDevicePointer_v2,
            cuMemHostGetFlags;
        pool: cuMemPoolDestroy, cuMemPoolGetAttribute, cuMemPoolSetAttribute,
            cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz;
        vmm: cuMemAddressReserve, cuMemAddressFree, cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap,
            cuMemSetAccess, cuMemRetainAllocationHandle, cuMemGetAllocationPropertiesFromHandle;
        array: cuArrayDestroy, cuMemcpyHtoA_v2, cuMemcpyAtoH_v2, cuMemcpyHtoAAsync_v2,
            cuMemcpyAtoHAsync_v2, cuMipmappedArrayDestroy;
        texture: cuTexObjectCreate, cuTexObjectDestroy, cuTexObjectGetResourceDesc,
            cuTexObjectGetTextureDesc, cuTexObjectGetResourceViewDesc, cuSurfObjectCreate,
            cuSurfObjectDestroy, cuSurfObjectGetResourceDesc;
        graph: cuThreadExchangeStreamCaptureMode, cuStreamGetCaptureInfo_v2,
            cuStreamGetCaptureInfo_v2_ptsz, cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz,
            cuStreamUpdateCaptureDependencies, cuStreamUpdateCaptureDependencies_ptsz,
            cuStreamUpdateCaptureDependencies_v2, cuStreamUpdateCaptureDependencies_v2_ptsz,
            cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz,
            cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz,
            cuGraphGetNodes, cuGraphGetRootNodes, cuGraphNodeGetDependencies,
            cuGraphNodeGetDependentNodes, cuGraphGetEdges, cuGraphDebugDotPrint,
            cuGraphAddKernelNode_v2, cuGraphKernelNodeSetParams_v2, cuGraphExecUpdate_v2,
            cuGraphAddMemsetNode, cuGraphKernelNodeGetParams_v2, cuGraphAddHostNode,
            cuGraphHostNodeGetParams, cuGraphHostNodeSetParams, cuGraphExecHostNodeSetParams,
            cuGraphAddMemcpyNode, cuGraphMemcpyNodeGetParams, cuGraphMemcpyNodeSetParams,
            cuGraphExecMemcpyNodeSetParams, cuGraphExecKernelNodeSetParams_v2, cuGraphAddKernelNode,
            cuGraphKernelNodeGetParams, cuGraphKernelNodeSetParams, cuGraphExecKernelNodeSetParams,
            cuGraphMemsetNodeGetParams, cuGraphMemsetNodeSetParams, cuGraphExecMemsetNodeSetParams,
            cuGraphExecUpdate, cuGraphAddDependencies_v2, cuGraphRemoveDependencies_v2,
            cuGraphGetEdges_v2, cuGraphNodeGetDependencies_v2, cuGraphNodeGetDependentNodes_v2,
            cuUserObjectCreate, cuDeviceGetGraphMemAttribute, cuDeviceSetGraphMemAttribute,
            cuGraphAddMemAllocNode, cuGraphMemAllocNodeGetParams;
        tensormap: cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2colWide,
            cuTensorMapReplaceAddress;
        callback: cuLaunchHostFunc, cuLaunchHostFunc_ptsz, cuStreamAddCallback, cuStreamAddCallback_ptsz;
        memop: cuStreamBatchMemOp, cuStreamBatchMemOp_ptsz, cuStreamBatchMemOp_v2,
            cuStreamBatchMemOp_v2_ptsz;
    }

    ops {
        /// Control connection: opens a new lane. `kind` is a `lane_kind`. With
        /// `RINGS` three descriptors follow the reply (the lane socket, the
        /// submission ring, the completion ring); with `SOCKET` one, the lane
        /// socket. With `TCP` none: the client connects to `port` on the
        /// worker's host and sends `token`.
        lane: OpenLane = 1 {} => { kind: u8, port: u16, token: bytes(16) };

        /// Creates a context under the client's id; it becomes current on the
        /// lane. The blob holds its `CUexecAffinityParam`s, if any.
        context: CtxCreate = 10 { ctx: handle(Context), flags: u32, device: i32 } + blob => {} (nocontext);
        /// Destroys a context and forgets everything it owned.
        context: CtxDestroy = 11 { ctx: handle(Context) } => {} (sync, nocontext);
        /// Retains a device's primary context under the client's id.
        context: PrimaryCtxRetain = 20 { ctx: handle(Context), device: i32 } => {} (nocontext);
        /// Maps the client's id to a device's primary context without
        /// retaining it, as the CUDA runtime's private interface does.
        context: PrimaryCtxGet = 100 { ctx: handle(Context), device: i32 } => {} (nocontext);

        /// `cuMemAlloc`; the range joins the session's live allocations.
        memory: MemAlloc = 30 { bytes: u64 } => { dptr: devptr };
        /// `cuMemFree` of the base of a live allocation.
        memory: MemFree = 31 { dptr: devptr } => {} (sync);
        /// Host to device: the bytes are the blob.
        memory: MemcpyHtoD = 40 { dst: devptr, stream: handle(Stream), is_async: bool } + blob => {}
            (posted, sync_unless(is_async));
        /// Device to host: the bytes come back as the reply's blob.
        memory: MemcpyDtoH = 41 { src: devptr, bytes: u64, stream: handle(Stream), is_async: bool } => {} + blob
            (sync);
        /// Device to device.
        memory: MemcpyDtoD = 42 { dst: devptr, src: devptr, bytes: u64, stream: handle(Stream), is_async: bool } => {}
            (posted, sync_unless(is_async));
        /// `count` elements of `element` bytes (1, 2 or 4) set to `value`.
        memory: Memset = 43 { dst: devptr, value: u32, element: u8, count: u64, stream: handle(Stream), is_async: bool } => {}
            (posted, sync_unless(is_async));

        /// Creates a stream under the client's id.
        stream: StreamCreate = 50 { stream: handle(Stream), flags: u32, priority: i32 } => {} (posted);
        /// Destroys a stream.
        stream: StreamDestroy = 51 { stream: handle(Stream) } => {} (posted);
        /// Creates an event under the client's id.
        event: EventCreate = 60 { event: handle(Event), flags: u32 } => {} (posted);
        /// Destroys an event.
        event: EventDestroy = 61 { event: handle(Event) } => {} (posted);

        /// Loads a module under the client's id. The blob holds `options`
        /// JIT options (u32 option, u32 pad, u64 value each), then the image
        /// unless it was staged under `stage` (StageBlob). The reply's blob
        /// holds the options' final values (u64 each), then the info log and
        /// the error log, each NUL-terminated.
        module: ModuleLoadData = 70 { module: handle(Module), options: u32, stage: u64 } + blob => {} + blob;
        /// Unloads a module and forgets its functions and globals.
        module: ModuleUnload = 71 { module: handle(Module) } => {};
        /// A function by name (the blob) under the client's id; the reply's
        /// blob is the (offset u32, size u32) of each of its `params`.
        module: ModuleGetFunction = 72 { module: handle(Module), function: handle(Function) } + blob
            => { params: u32 } + blob;
        /// A module global by name (the blob).
        module: ModuleGlobal = 73 { module: handle(Module) } + blob => { dptr: devptr, bytes: u64 };
        /// The module's kernel names, each NUL-terminated, in the driver's
        /// order; the worker loads every function of the module.
        module: ModuleKernelNames = 107 { module: handle(Module) } => {} + blob;
        /// The name of a function (or, with `kernel`, a kernel), as the blob.
        module: FunctionName = 108 { function: handle(Function), kernel: bool } => {} + blob;
        /// The functions of a module (or, with `library`, the kernels of a
        /// library): the reply's blob holds `found` entries, each its id
        /// (u64; the worker mints ids for those the client never saw), its
        /// parameter count (u32) and each parameter's (offset u32, size u32).
        module: EnumerateFunctions = 109 { owner: u64, count: u32, library: bool } => { found: u32 } + blob;
        /// Builds up a large image in the worker, piece by piece (the blob);
        /// the load that names the stage id consumes it.
        module: StageBlob = 105 { stage: u64, offset: u64, total: u64 } + blob => {} (nocontext);

        /// Loads a library under the client's id: the blob holds `jit_options`
        /// JIT options then `library_options` library options (16 bytes each,
        /// as for ModuleLoadData), then the image unless staged; the reply
        /// as for ModuleLoadData.
        library: LibraryLoadData = 80 { library: handle(Library), jit_options: u32, library_options: u32, stage: u64 } + blob
            => {} + blob;
        /// Unloads a library.
        library: LibraryUnload = 81 { library: handle(Library) } => {};
        /// A kernel by name (the blob) under the client's id; the reply as for
        /// ModuleGetFunction. A kernel id is launchable like a function id.
        library: LibraryGetKernel = 82 { library: handle(Library), kernel: handle(Kernel) } + blob
            => { params: u32 } + blob;
        /// A library global by name (the blob).
        library: LibraryGlobal = 83 { library: handle(Library) } + blob => { dptr: devptr, bytes: u64 };
        /// The library's module in the current context, under the client's id.
        library: LibraryGetModule = 84 { library: handle(Library), module: handle(Module) } => {};
        /// The kernel's function in the current context, under the client's
        /// id; the reply as for ModuleGetFunction.
        library: KernelGetFunction = 85 { kernel: handle(Kernel), function: handle(Function) } => { params: u32 } + blob;

        /// A launch: the blob is the packed parameter buffer.
        launch: LaunchKernel = 74 { function: handle(Function), grid_x: u32, grid_y: u32, grid_z: u32,
            block_x: u32, block_y: u32, block_z: u32, shared: u32, stream: handle(Stream) } + blob => {} (posted);
        /// `cuOccupancyMaxActiveClusters`: the blob holds `attributes` `CUlaunchAttribute`s.
        launch: OccupancyMaxActiveClusters = 92 { function: handle(Function), grid_x: u32, grid_y: u32, grid_z: u32,
            block_x: u32, block_y: u32, block_z: u32, shared: u32, stream: handle(Stream), attributes: u32 } + blob
            => { clusters: i32 };
        /// `cuLaunchKernelEx`: the blob holds `attributes` `CUlaunchAttribute`s,
        /// then the packed parameter buffer.
        launch: LaunchKernelEx = 93 { function: handle(Function), grid_x: u32, grid_y: u32, grid_z: u32,
            block_x: u32, block_y: u32, block_z: u32, shared: u32, stream: handle(Stream), attributes: u32 } + blob
            => {} (posted);

        /// Shared pinned host memory: the worker maps and registers the pages
        /// and passes the memfd after the reply; the client maps the same
        /// pages at `address` when it can.
        host: MemHostAlloc = 96 { bytes: u64, flags: u32 } => { address: u64, dptr: devptr } (fd);
        /// Frees shared pinned host memory at its worker address.
        host: MemFreeHost = 97 { address: u64 } => {} (sync);
        /// Device from shared pinned host memory at its worker address.
        host: MemcpyHtoDShared = 98 { dst: devptr, host: u64, bytes: u64, stream: handle(Stream), is_async: bool } => {}
            (posted, sync_unless(is_async));
        /// Shared pinned host memory at its worker address from device.
        host: MemcpyDtoHShared = 99 { host: u64, src: devptr, bytes: u64, stream: handle(Stream), is_async: bool } => {}
            (posted, sync_unless(is_async));

        /// The blob holds attribute ids (u32 each); the reply's blob 16 bytes
        /// per attribute, its value zero-padded (context values as the
        /// client's ids). `single` asks as `cuPointerGetAttribute` does (an
        /// error for a pointer the driver does not know), otherwise as
        /// `cuPointerGetAttributes` (defaults and success).
        pointer: PointerGetAttributes = 101 { pointer: devptr, single: bool } + blob => {} + blob (nocontext);

        /// Stream-ordered allocation from the device's pool.
        memory: MemAllocAsync = 102 { bytes: u64, stream: handle(Stream) } => { dptr: devptr };
        /// Stream-ordered free.
        memory: MemFreeAsync = 103 { dptr: devptr, stream: handle(Stream) } => {};
        /// A 2D copy. `direction` 0: device to device; 1: host to device, the
        /// rows packed in the blob; 2: device to host, the rows come back
        /// packed in the reply's blob. Host sides carry 0 for their address,
        /// pitch and offsets.
        copy: Memcpy2D = 104 { direction: u8, src: devptr, src_pitch: u64, src_x: u64, src_y: u64,
            dst: devptr, dst_pitch: u64, dst_x: u64, dst_y: u64, width: u64, height: u64,
            stream: handle(Stream), is_async: bool } + blob => {} + blob (sync_unless(is_async));

        /// `cuDeviceGetGraphMemAttribute` (`set` false) or
        /// `cuDeviceSetGraphMemAttribute` (`set` true, `value` the client read)
        /// of device `dev`: every graph memory attribute is a `cuuint64_t`.
        graph: DeviceGraphMemAttribute = 620 { set: bool, dev: i32, attr: u32, value: u64 } => { value: u64 };
        /// `cuGraphAddMemAllocNode` in `graph` after `deps` nodes: the pool
        /// properties' allocation type, handle types and location, `bytes`,
        /// and `access` access descriptors. The blob holds the dependencies
        /// (node ids, u64 each), then the descriptors (location type, location
        /// id, flags: u32 each). The allocation's range joins the session's
        /// live allocations.
        graph: GraphMemAllocNode = 622 { graph: handle(Graph), deps: u32, alloc_type: u32,
            handle_types: u32, loc_type: u32, loc_id: i32, bytes: u64, access: u32 } + blob
            => { node: handle(GraphNode), dptr: devptr };
        /// `cuGraphMemAllocNodeGetParams`: as for GraphMemAllocNode; the blob
        /// holds the access descriptors.
        graph: GraphMemAllocNodeParams = 623 { node: handle(GraphNode) } => { alloc_type: u32,
            handle_types: u32, loc_type: u32, loc_id: i32, bytes: u64, dptr: devptr, access: u32 }
            + blob;

        /// `cuMemPoolDestroy`; the pool's id is forgotten once the driver
        /// has destroyed it (its outstanding allocations stay live).
        pool: PoolDestroy = 360 { pool: handle(MemPool) } => {};
        /// `cuMemPoolGetAttribute`: the value zero-extended to 64 bits; the
        /// client writes back as many bytes as
        /// `vgpu_abi::values::mem_pool_attribute_size` gives the attribute.
        pool: PoolGetAttribute = 361 { pool: handle(MemPool), attr: u32 } => { value: u64 };
        /// `cuMemPoolSetAttribute`: the value as the client read it, 4 or 8
        /// bytes by `vgpu_abi::values::mem_pool_attribute_size`, zero-extended.
        pool: PoolSetAttribute = 362 { pool: handle(MemPool), attr: u32, value: u64 } => {};
        /// `cuMemAllocFromPoolAsync`; the range joins the session's live
        /// allocations.
        pool: PoolAllocAsync = 363 { bytes: u64, pool: handle(MemPool), stream: handle(Stream) } => { dptr: devptr };
        /// `cuMemAddressReserve`; the range joins the session's reservations.
        vmm: MemAddressReserve = 302 { size: u64, alignment: u64, addr: devptr, flags: u64 } => { ptr: devptr };
        /// `cuMemAddressFree` of a whole reservation of this session with
        /// nothing mapped in it.
        vmm: MemAddressFree = 303 { ptr: devptr, size: u64 } => {};
        /// `cuMemCreate`; `prop` is the `CUmemAllocationProp`. The reply's
        /// `handle` is an id the worker minted for the driver's handle.
        vmm: MemCreate = 304 { size: u64, flags: u64, prop: bytes(32) } => { handle: u64 };
        /// `cuMemRelease` of an allocation handle id: one reference fewer.
        vmm: MemRelease = 305 { handle: u64 } => {};
        /// `cuMemMap` of an allocation handle id into a reservation of this
        /// session where nothing is mapped yet.
        vmm: MemMap = 306 { ptr: devptr, size: u64, offset: u64, handle: u64, flags: u64 } => {};
        /// `cuMemUnmap` of whole mappings of this session; their access ends.
        /// Synchronizing, as `cuMemFree` is: memory goes away.
        vmm: MemUnmap = 307 { ptr: devptr, size: u64 } => {} (sync);
        /// `cuMemSetAccess` over mapped memory of this session: the blob holds
        /// `count` `CUmemAccessDesc`s.
        vmm: MemSetAccess = 308 { ptr: devptr, size: u64, count: u32 } + blob => {};
        /// `cuMemRetainAllocationHandle` of a mapped address: the handle's id,
        /// with one reference more.
        vmm: MemRetainAllocationHandle = 309 { addr: u64 } => { handle: u64 };
        /// `cuMemGetAllocationPropertiesFromHandle` of a handle id: the
        /// `CUmemAllocationProp`.
        vmm: MemGetAllocationProperties = 310 { handle: u64 } => { prop: bytes(32) };
        /// Destroys a CUDA array and forgets its id.
        array: ArrayDestroy = 470 { array: handle(Array) } => {} (sync);
        /// Destroys a mipmapped array and forgets its id and its levels' ids.
        array: MipmappedArrayDestroy = 481 { mipmap: handle(MipmappedArray) } => {} (sync);
        /// A 3D copy with a CUDA array on at least one side (`cuMemcpy2D`
        /// and `cuMemcpy3D` forms). Each side's `kind` is a `CUmemorytype`:
        /// device (`addr`, `pitch`, `height` rows a slice), array (`array`)
        /// or host, whose rows travel packed in the request's blob (source)
        /// or the reply's blob (destination), `width` bytes each, `height`
        /// rows a slice; host sides carry 0 for their address, offsets and
        /// pitches. `x` is in bytes, `y` in rows, `z` in slices.
        array: MemcpyArray = 471 { src_kind: u8, src: devptr, src_array: handle(Array), src_x: u64,
            src_y: u64, src_z: u64, src_pitch: u64, src_height: u64, dst_kind: u8, dst: devptr,
            dst_array: handle(Array), dst_x: u64, dst_y: u64, dst_z: u64, dst_pitch: u64,
            dst_height: u64, width: u64, height: u64, depth: u64, stream: handle(Stream),
            is_async: bool } + blob => {} + blob (sync_unless(is_async));
        /// Host to array at byte `offset` (`cuMemcpyHtoA`): the bytes are the blob.
        array: MemcpyHtoA = 472 { array: handle(Array), offset: u64, stream: handle(Stream), is_async: bool } + blob
            => {} (sync_unless(is_async));
        /// Array at byte `offset` to host (`cuMemcpyAtoH`): the bytes come
        /// back as the reply's blob.
        array: MemcpyAtoH = 473 { array: handle(Array), offset: u64, bytes: u64, stream: handle(Stream), is_async: bool }
            => {} + blob (sync);
        /// Creates a texture object (`surface` false) or a surface object.
        /// The blob holds the `CUDA_RESOURCE_DESC` (array handles as the
        /// client's ids), then, for a texture, its `CUDA_TEXTURE_DESC` and,
        /// with `view`, its `CUDA_RESOURCE_VIEW_DESC`. The reply carries the
        /// driver's own value, which kernels take as a parameter.
        texture: TexObjectCreate = 474 { surface: bool, view: bool } + blob => { object: u64 };
        /// Destroys a texture or surface object this session created.
        texture: TexObjectDestroy = 475 { object: u64, surface: bool } => {} (sync);
        /// A descriptor of a texture or surface object: `what` 0 its
        /// `CUDA_RESOURCE_DESC` (array handles as ids), 1 its
        /// `CUDA_TEXTURE_DESC`, 2 its `CUDA_RESOURCE_VIEW_DESC`, as the
        /// reply's blob.
        texture: TexObjectDescribe = 476 { object: u64, surface: bool, what: u8 } => {} + blob;
        /// `cuThreadExchangeStreamCaptureMode` on the calling thread's lane:
        /// the lane's thread takes `mode` and answers its previous mode.
        graph: ExchangeCaptureMode = 385 { mode: u32 } => { mode: u32 } (nocontext);
        /// `cuStreamGetCaptureInfo_v2` (`_v3` with `edges`; the `_ptsz`
        /// forms with `per_thread`). When `status` is active the reply's blob
        /// holds the `count` current dependencies (node ids, u64 each), then
        /// with `edges` their `CUgraphEdgeData` (8 bytes each).
        graph: StreamCaptureInfo = 386 { stream: handle(Stream), per_thread: bool, edges: bool }
            => { status: u32, id: u64, graph: handle(Graph), count: u32 } + blob;
        /// `cuStreamUpdateCaptureDependencies` (`_v2` with `edges`): the blob
        /// holds `count` node ids (u64 each), then with `edges` their
        /// `CUgraphEdgeData` (8 bytes each).
        graph: UpdateCaptureDependencies = 387 { stream: handle(Stream), per_thread: bool, edges: bool,
            flags: u32, count: u32 } + blob => {};
        /// `cuStreamBeginCaptureToGraph`: the blob as for
        /// UpdateCaptureDependencies (edge data always present when `edges`).
        graph: BeginCaptureToGraph = 388 { stream: handle(Stream), per_thread: bool, graph: handle(Graph),
            mode: u32, count: u32, edges: bool } + blob => {};
        /// `cuGraphInstantiateWithParams` (`_ptsz` with `per_thread`): the
        /// executable graph, the node the driver blames and its
        /// `CUgraphInstantiateResult`.
        graph: InstantiateWithParams = 389 { graph: handle(Graph), flags: u64, upload_stream: handle(Stream),
            per_thread: bool } => { exec: handle(GraphExec), error_node: handle(GraphNode), result: u32 };
        /// A graph's nodes (`what` 0), root nodes (1), a node's dependencies
        /// (2) or dependent nodes (3), a graph's edges (4) of graph or node id
        /// `handle`. With `want` the driver fills `capacity` entries (node ids,
        /// u64 each, 0 for none; for edges `capacity` sources then `capacity`
        /// destinations), which are the reply's blob; `count` is the driver's.
        /// With `v2` the `_v2` form is called; with `edges` too, the blob
        /// then holds `capacity` `CUgraphEdgeData` (8 bytes each).
        graph: GraphQuery = 412 { what: u8, handle: u64, capacity: u64, want: bool, v2: bool,
            edges: bool } => { count: u64 } + blob;
        /// `cuGraphAddDependencies_v2` (`add`) or `cuGraphRemoveDependencies_v2`
        /// of `count` edges: the blob holds the sources (node ids, u64 each),
        /// the destinations, then their `CUgraphEdgeData` (8 bytes each).
        graph: GraphEdges = 451 { add: bool, graph: handle(Graph), count: u32 } + blob => {};
        /// `cuGraphDebugDotPrint`: the driver writes the file in the worker,
        /// whose bytes are the reply's blob; the client writes them at the
        /// application's path.
        graph: GraphDebugDotPrint = 413 { graph: handle(Graph), flags: u32 } => {} + blob;
        /// `cuGraphAddKernelNode_v2` in `graph` after `deps` nodes, or with
        /// `set` `cuGraphKernelNodeSetParams_v2` of `node` (with an `exec`,
        /// `cuGraphExecKernelNodeSetParams_v2` of its copy there): the blob holds the
        /// dependencies (node ids, u64 each), then the packed parameter
        /// buffer, laid out as the function's (or kernel's) parameters.
        graph: GraphKernelNode = 414 { graph: handle(Graph), node: handle(GraphNode), exec: handle(GraphExec),
            function: handle(Function),
            kernel: handle(Kernel), ctx: handle(Context), grid_x: u32, grid_y: u32, grid_z: u32,
            block_x: u32, block_y: u32, block_z: u32, shared: u32, deps: u32, set: bool } + blob
            => { node: handle(GraphNode) };
        /// `cuGraphExecUpdate_v2`. The driver's `status` is in the reply (the
        /// operation itself succeeds), because a failed update still says why
        /// in `result` and its nodes.
        graph: GraphExecUpdate = 415 { exec: handle(GraphExec), graph: handle(Graph) }
            => { status: u32, result: u32, error_node: handle(GraphNode), error_from_node: handle(GraphNode) };
        /// `cuGraphAddMemsetNode` in `graph` after `deps` nodes (`what` 0; the
        /// blob, ids u64 each), `cuGraphMemsetNodeSetParams` of `node` (1) or
        /// `cuGraphExecMemsetNodeSetParams` of `node` in `exec` (2); the
        /// worker checks the memset's range against the session's
        /// allocations, as for a memset.
        graph: GraphMemsetNode = 416 { what: u8, graph: handle(Graph), node: handle(GraphNode),
            exec: handle(GraphExec), ctx: handle(Context), dst: devptr, pitch: u64, value: u32,
            element: u32, width: u64, height: u64, deps: u32 } + blob => { node: handle(GraphNode) };
        /// `cuGraphMemsetNodeGetParams`.
        graph: GraphMemsetNodeParams = 449 { node: handle(GraphNode) } => { dst: devptr, pitch: u64,
            value: u32, element: u32, width: u64, height: u64 };
        /// `cuGraphKernelNodeGetParams_v2`: the node's launch, its arguments
        /// packed by the function's parameter layout as the reply's blob.
        graph: GraphKernelNodeParams = 417 { node: handle(GraphNode) } => { function: handle(Function),
            kernel: handle(Kernel), ctx: handle(Context), grid_x: u32, grid_y: u32, grid_z: u32,
            block_x: u32, block_y: u32, block_z: u32, shared: u32 } + blob;
        /// `cuGraphAddHostNode` in `graph` after `deps` nodes (`what` 0),
        /// `cuGraphHostNodeSetParams` of `node` (1) or
        /// `cuGraphExecHostNodeSetParams` of `node` in `exec` (2). The node
        /// runs a trampoline that asks the client to run its callback `id`
        /// over the callback channel at every launch, and waits for it. The
        /// blob holds the dependencies (node ids, u64 each).
        graph: GraphHostNode = 445 { what: u8, graph: handle(Graph), node: handle(GraphNode),
            exec: handle(GraphExec), id: u64, deps: u32 } + blob => { node: handle(GraphNode) };
        /// `cuGraphHostNodeGetParams`: the client's callback id of a host node.
        graph: GraphHostNodeParams = 446 { node: handle(GraphNode) } => { id: u64 };
        /// `cuGraphAddMemcpyNode` in `graph` after `deps` nodes (`what` 0),
        /// `cuGraphMemcpyNodeSetParams` of `node` (1) or
        /// `cuGraphExecMemcpyNodeSetParams` of `node` in `exec` (2), of a
        /// `CUDA_MEMCPY3D`. Each side's `kind` is its `CUmemorytype` and
        /// `addr` its device address or, for a host side, the application's
        /// host address, which must lie in shared pinned memory (the worker
        /// reads and writes it when the graph runs); `array` is an array id.
        /// The blob holds the dependencies (node ids, u64 each).
        graph: GraphMemcpyNode = 447 { what: u8, graph: handle(Graph), node: handle(GraphNode),
            exec: handle(GraphExec), ctx: handle(Context), deps: u32, src_kind: u8, src_addr: u64,
            src_array: handle(Array), src_x: u64, src_y: u64, src_z: u64, src_pitch: u64,
            src_height: u64, dst_kind: u8, dst_addr: u64, dst_array: handle(Array), dst_x: u64,
            dst_y: u64, dst_z: u64, dst_pitch: u64, dst_height: u64, width: u64, height: u64,
            depth: u64 } + blob => { node: handle(GraphNode) };
        /// `cuGraphMemcpyNodeGetParams`: the copy's sides as for GraphMemcpyNode.
        graph: GraphMemcpyNodeParams = 448 { node: handle(GraphNode) } => { src_kind: u8,
            src_addr: u64, src_array: handle(Array), src_x: u64, src_y: u64, src_z: u64,
            src_pitch: u64, src_height: u64, dst_kind: u8, dst_addr: u64, dst_array: handle(Array),
            dst_x: u64, dst_y: u64, dst_z: u64, dst_pitch: u64, dst_height: u64, width: u64,
            height: u64, depth: u64 };
        /// `cuStreamBatchMemOp` (every form): the blob holds the `count`
        /// `CUstreamBatchMemOpParams` (48 bytes each) as the application gave
        /// them; the worker checks each wait's and write's address against
        /// the session's allocations.
        memop: StreamBatchMemOp = 452 { stream: handle(Stream), count: u32, flags: u32 } + blob => {};
        /// `cuUserObjectCreate` with `count` references: the object's
        /// destructor is a worker trampoline that asks the client to run its
        /// callback `id` (the application's destructor and pointer) over the
        /// callback channel when the last reference goes.
        graph: UserObjectCreate = 457 { id: u64, count: u32, flags: u32 } => { object: handle(UserObject) };
        /// Encodes a tensor map on the driver: `kind` 0 `cuTensorMapEncodeTiled`,
        /// 1 `cuTensorMapEncodeIm2col`, 2 `cuTensorMapEncodeIm2colWide`. The
        /// blob holds `globalDim` (`rank` u64), `globalStrides` (`rank - 1`
        /// u64), then for tiled `boxDim` (`rank` u32), `elementStrides` (`rank`
        /// u32), then for im2col `pixelBoxLowerCorner` and
        /// `pixelBoxUpperCorner` (`rank - 2` i32 each); fields a form does not
        /// take are 0. `address` is passed to the driver unchecked, as the
        /// driver does not dereference it when encoding (kernels that use the
        /// map are checked on the launch path). The reply's blob is the
        /// 128-byte map.
        tensormap: TensorMapEncode = 540 { kind: u8, data_type: u32, rank: u32, address: devptr,
            channels_per_pixel: u32, pixels_per_column: u32, interleave: u32, mode: u32,
            swizzle: u32, l2_promotion: u32, oob_fill: u32, lower_width: i32, upper_width: i32 }
            + blob => {} + blob;
        /// `cuTensorMapReplaceAddress`: the blob is the 128-byte map, the
        /// reply's blob the map with `address` in it (unchecked, as above).
        tensormap: TensorMapReplaceAddress = 541 { address: devptr } + blob => {} + blob;

        /// Control connection: opens the session's callback channel, a
        /// socket whose client end follows the reply. The worker asks the
        /// client to run callback `id` by sending `id` (u64) and the stream's
        /// status (u32, then 4 bytes of padding); the client runs it and
        /// answers with `id` (u64). See `docs/protocol.md`.
        callback: OpenCallbacks = 520 {} => {} (fd, nocontext);
        /// A host callback in stream order: the worker enqueues a trampoline
        /// on the stream that asks the client to run callback `id`
        /// (`cuStreamAddCallback` with `status`, `cuLaunchHostFunc`
        /// without) over the callback channel, and returns once it has run.
        callback: HostCallback = 521 { stream: handle(Stream), id: u64, status: bool } => {} (posted);
    }
}
