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
        memory: cuMemGetAddressRange_v2 = 33 client [pbase: optional, psize: optional];
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
        stream: cuStreamIsCapturing = 94 client (capture);
        stream: cuStreamSynchronize_ptsz = 120 gen (sync);
        stream: cuStreamQuery_ptsz = 121 gen (sync);
        stream: cuStreamWaitEvent_ptsz = 122 client (posted);
        stream: cuStreamGetFlags_ptsz = 123 gen;
        stream: cuStreamGetPriority_ptsz = 124 gen;
        stream: cuStreamIsCapturing_ptsz = 125 client (capture);
        stream: cuStreamAttachMemAsync = 180 client;
        stream: cuStreamAttachMemAsync_ptsz = 181 client;
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
        launch: cuParamSetSize = 685 gen;
        launch: cuParamSeti = 686 gen;
        launch: cuParamSetf = 687 gen;
        launch: cuParamSetTexRef = 689 gen;
        launch: cuLaunch = 690 gen;
        launch: cuLaunchGrid = 691 gen;
        launch: cuLaunchGridAsync = 692 gen;

        // ---- stream capture and graphs ----
        graph: cuStreamBeginCapture_v2 = 380 client;
        graph: cuStreamBeginCapture = 381 client;
        graph: cuStreamBeginCapture_v2_ptsz = 382 client;
        graph: cuStreamEndCapture = 383 client;
        graph: cuStreamEndCapture_ptsz = 384 client;
        graph: cuGraphCreate = 390 gen;
        graph: cuGraphDestroy = 391 client [hGraph: destroys];
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
        graph: cuGraphDestroyNode = 402 client [hNode: destroys];
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
        graph: cuGraphKernelNodeCopyAttributes = 626 gen;
        graph: cuGraphKernelNodeGetAttribute = 627 gen [value_out: bytes];
        graph: cuGraphKernelNodeSetAttribute = 628 gen [value: bytes];
        graph: cuGraphConditionalHandleCreate = 631 gen;
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

        // ---- driver logs ----
        logs: cuLogsCurrent = 696 gen (nocontext);

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
        vmm: cuMemGetAllocationGranularity = 300 gen (nocontext) [prop: bytes];
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
        array: cuMemcpyAtoD = 740 gen (sync) [dstDevice: range(ByteCount)];
        array: cuMemcpyDtoA = 741 gen (sync) [srcDevice: range(ByteCount)];
        array: cuMemcpyAtoA = 742 gen (sync);
        array: cuMemcpyAtoD_v2_ptds = 743 gen (sync) [dstDevice: range(ByteCount)];
        array: cuMemcpyDtoA_v2_ptds = 744 gen (sync) [srcDevice: range(ByteCount)];
        array: cuMemcpyAtoA_v2_ptds = 745 gen (sync);
        array: cuArrayCreate = 746 gen;
        array: cuArray3DCreate = 747 gen;
        array: cuArrayGetDescriptor = 748 gen;
        array: cuArray3DGetDescriptor = 749 gen;
        external: cuExternalMemoryGetMappedMipmappedArray = 632 gen (checked);

        // ---- peer access (one context a device here; the driver answers) ----
        peer: cuDeviceCanAccessPeer = 750 gen (nocontext);
        peer: cuDeviceGetP2PAttribute = 751 gen (nocontext);
        peer: cuDeviceGetP2PAtomicCapabilities = 752 gen (nocontext) [capabilities: array(count), operations: array(count)];
        peer: cuCtxEnablePeerAccess = 753 gen;
        peer: cuCtxDisablePeerAccess = 754 gen;
        peer: cuMemcpyPeer = 755 gen (sync) [dstDevice: range(ByteCount), srcDevice: range(ByteCount)];
        peer: cuMemcpyPeer_ptds = 756 gen (sync) [dstDevice: range(ByteCount), srcDevice: range(ByteCount)];
        peer: cuMemcpyPeerAsync = 757 gen (posted(stream)) [dstDevice: range(ByteCount), srcDevice: range(ByteCount)];
        peer: cuMemcpyPeerAsync_ptsz = 758 gen (posted(stream)) [dstDevice: range(ByteCount), srcDevice: range(ByteCount)];

        // ---- legacy texture and surface references (the driver answers) ----
        texref: cuTexRefCreate = 760 gen;
        texref: cuTexRefDestroy = 761 gen [hTexRef: destroys];
        texref: cuTexRefSetArray = 762 gen;
        texref: cuTexRefGetArray = 763 gen;
        texref: cuTexRefSetMipmappedArray = 764 gen;
        texref: cuTexRefGetMipmappedArray = 765 gen;
        texref: cuTexRefSetAddress = 766 gen [dptr: range(bytes)];
        texref: cuTexRefSetAddress_v2 = 767 gen [dptr: range(bytes)];
        texref: cuTexRefGetAddress = 768 gen;
        texref: cuTexRefGetAddress_v2 = 769 gen;
        texref: cuTexRefSetAddress2D = 770 gen;
        texref: cuTexRefSetAddress2D_v2 = 771 gen;
        texref: cuTexRefSetAddress2D_v3 = 772 gen;
        texref: cuTexRefSetFormat = 773 gen;
        texref: cuTexRefGetFormat = 774 gen;
        texref: cuTexRefSetAddressMode = 775 gen;
        texref: cuTexRefGetAddressMode = 776 gen;
        texref: cuTexRefSetFilterMode = 777 gen;
        texref: cuTexRefGetFilterMode = 778 gen;
        texref: cuTexRefSetMipmapFilterMode = 779 gen;
        texref: cuTexRefGetMipmapFilterMode = 780 gen;
        texref: cuTexRefSetMipmapLevelBias = 781 gen;
        texref: cuTexRefGetMipmapLevelBias = 782 gen;
        texref: cuTexRefSetMipmapLevelClamp = 783 gen;
        texref: cuTexRefGetMipmapLevelClamp = 784 gen;
        texref: cuTexRefSetMaxAnisotropy = 785 gen;
        texref: cuTexRefGetMaxAnisotropy = 786 gen;
        texref: cuTexRefSetBorderColor = 787 gen [pBorderColor: in, pBorderColor: array(4)];
        texref: cuTexRefGetBorderColor = 788 gen [pBorderColor: array(4)];
        texref: cuTexRefSetFlags = 789 gen;
        texref: cuTexRefGetFlags = 790 gen;
        texref: cuSurfRefSetArray = 791 gen;
        texref: cuSurfRefGetArray = 792 gen;

        // ---- multicast objects ----
        multicast: cuMulticastGetGranularity = 805 gen;

        // ---- green contexts ----
        green: cuDeviceGetDevResource = 810 gen (nocontext);
        green: cuCtxGetDevResource = 811 gen;
        green: cuGreenCtxGetDevResource = 812 gen;
        green: cuDevResourceGenerateDesc = 813 gen [resources: in, resources: array(nbResources)];
        green: cuGreenCtxCreate = 814 client (nocontext);
        green: cuGreenCtxGetId = 815 gen;
        green: cuGreenCtxRecordEvent = 816 gen;
        green: cuGreenCtxWaitEvent = 817 gen;
        green: cuCtxFromGreenCtx = 818 client;
        green: cuGreenCtxStreamCreate = 819 client;
        green: cuStreamGetGreenCtx = 820 gen;
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
            cuLibraryGetModule, cuLibraryGetGlobal, cuKernelGetFunction, cuKernelGetParamInfo,
            cuLibraryGetUnifiedFunction;
        launch: cuLaunchKernel, cuLaunchKernel_ptsz, cuLaunchKernelEx, cuLaunchKernelEx_ptsz,
            cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz, cuOccupancyMaxActiveClusters,
            cuOccupancyMaxPotentialClusterSize, cuParamSetv, cuLaunchCooperativeKernelMultiDevice;
        pointer: cuPointerGetAttribute, cuPointerGetAttributes;
        host: cuMemHostAlloc, cuMemAllocHost_v2, cuMemFreeHost, cuMemHostGetDevicePointer_v2,
            cuMemHostGetFlags;
        pool: cuMemPoolDestroy, cuMemPoolGetAttribute, cuMemPoolSetAttribute,
            cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz, cuMemPoolExportToShareableHandle,
            cuMemPoolImportFromShareableHandle, cuMemPoolExportPointer, cuMemPoolImportPointer;
        vmm: cuMemAddressReserve, cuMemAddressFree, cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap,
            cuMemSetAccess, cuMemRetainAllocationHandle, cuMemGetAllocationPropertiesFromHandle,
            cuMemExportToShareableHandle, cuMemImportFromShareableHandle, cuMemGetHandleForAddressRange,
            cuMemMapArrayAsync, cuMemMapArrayAsync_ptsz;
        external: cuImportExternalMemory, cuExternalMemoryGetMappedBuffer, cuDestroyExternalMemory,
            cuImportExternalSemaphore, cuSignalExternalSemaphoresAsync,
            cuSignalExternalSemaphoresAsync_ptsz, cuWaitExternalSemaphoresAsync,
            cuWaitExternalSemaphoresAsync_ptsz, cuDestroyExternalSemaphore;
        ipc: cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2, cuIpcCloseMemHandle,
            cuIpcGetEventHandle, cuIpcOpenEventHandle;
        array: cuArrayDestroy, cuMemcpyHtoA_v2, cuMemcpyAtoH_v2, cuMemcpyHtoAAsync_v2,
            cuMemcpyAtoHAsync_v2, cuMipmappedArrayDestroy, cuMemcpyHtoA, cuMemcpyAtoH,
            cuMemcpyHtoAAsync, cuMemcpyAtoHAsync, cuMemcpyHtoA_v2_ptds, cuMemcpyAtoH_v2_ptds,
            cuMemcpyHtoAAsync_v2_ptsz, cuMemcpyAtoHAsync_v2_ptsz;
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
            cuGraphAddMemAllocNode, cuGraphMemAllocNodeGetParams, cuGraphAddBatchMemOpNode,
            cuGraphBatchMemOpNodeGetParams, cuGraphBatchMemOpNodeSetParams,
            cuGraphExecBatchMemOpNodeSetParams, cuGraphAddExternalSemaphoresSignalNode,
            cuGraphAddExternalSemaphoresWaitNode, cuGraphExternalSemaphoresSignalNodeGetParams,
            cuGraphExternalSemaphoresSignalNodeSetParams, cuGraphExternalSemaphoresWaitNodeGetParams,
            cuGraphExternalSemaphoresWaitNodeSetParams,
            cuGraphExecExternalSemaphoresSignalNodeSetParams,
            cuGraphExecExternalSemaphoresWaitNodeSetParams, cuGraphAddNode, cuGraphAddNode_v2,
            cuGraphNodeSetParams, cuGraphExecNodeSetParams;
        tensormap: cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2colWide,
            cuTensorMapReplaceAddress;
        callback: cuLaunchHostFunc, cuLaunchHostFunc_ptsz, cuStreamAddCallback, cuStreamAddCallback_ptsz;
        occupancy: cuOccupancyMaxPotentialBlockSize, cuOccupancyMaxPotentialBlockSizeWithFlags;
        checkpoint: cuCheckpointProcessGetState, cuCheckpointProcessGetRestoreThreadId,
            cuCheckpointProcessLock, cuCheckpointProcessCheckpoint, cuCheckpointProcessRestore,
            cuCheckpointProcessUnlock;
        coredump: cuCoredumpGetAttribute, cuCoredumpGetAttributeGlobal, cuCoredumpSetAttribute,
            cuCoredumpSetAttributeGlobal;
        logs: cuLogsDumpToMemory, cuLogsDumpToFile;
        notify: cuLogsRegisterCallback, cuLogsUnregisterCallback, cuDeviceRegisterAsyncNotification,
            cuDeviceUnregisterAsyncNotification;
        link: cuLinkCreate, cuLinkCreate_v2, cuLinkAddData, cuLinkAddData_v2, cuLinkAddFile,
            cuLinkAddFile_v2, cuLinkComplete, cuLinkDestroy;
        host: cuMemAllocHost, cuMemAlloc, cuMemFree, cuMemAllocPitch, cuMemGetAddressRange,
            cuMemHostGetDevicePointer;
        memory: cuMemAllocPitch_v2;
        pointer: cuPointerSetAttribute;
        host_register: cuMemHostRegister, cuMemHostRegister_v2, cuMemHostUnregister;
        managed: cuMemAllocManaged, cuMemPrefetchAsync, cuMemPrefetchAsync_ptsz, cuMemPrefetchAsync_v2,
            cuMemPrefetchAsync_v2_ptsz, cuMemAdvise, cuMemAdvise_v2;
        managed_range: cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync_ptsz,
            cuMemDiscardBatchAsync, cuMemDiscardBatchAsync_ptsz, cuMemDiscardAndPrefetchBatchAsync,
            cuMemDiscardAndPrefetchBatchAsync_ptsz, cuMemRangeGetAttribute, cuMemRangeGetAttributes;
        multicast: cuMulticastCreate, cuMulticastAddDevice, cuMulticastBindMem, cuMulticastBindAddr,
            cuMulticastUnbind;
        green: cuGreenCtxDestroy, cuDevSmResourceSplitByCount;
        peer: cuMemcpy3DPeer, cuMemcpy3DPeer_ptds, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz;
        batch: cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz, cuMemcpyBatchAsync_v2,
            cuMemcpyBatchAsync_v2_ptsz;
        batch3d: cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz, cuMemcpy3DBatchAsync_v2,
            cuMemcpy3DBatchAsync_v2_ptsz;
        memop: cuStreamBatchMemOp, cuStreamBatchMemOp_ptsz, cuStreamBatchMemOp_v2,
            cuStreamBatchMemOp_v2_ptsz;
        decompress: cuMemBatchDecompressAsync, cuMemBatchDecompressAsync_ptsz;
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
        /// `cuGraphAddBatchMemOpNode` in `graph` after `deps` nodes (`what`
        /// 0), `cuGraphBatchMemOpNodeSetParams` of `node` (1) or
        /// `cuGraphExecBatchMemOpNodeSetParams` of `node` in `exec` (2): the
        /// blob holds the dependencies (ids, u64 each), then the `count`
        /// `CUstreamBatchMemOpParams` (48 bytes each); the worker checks each
        /// wait's and write's address against the session's allocations, as
        /// for cuStreamBatchMemOp.
        graph: GraphBatchMemOpNode = 629 { what: u8, graph: handle(Graph), node: handle(GraphNode),
            exec: handle(GraphExec), ctx: handle(Context), count: u32, flags: u32, deps: u32 } + blob
            => { node: handle(GraphNode) };
        /// `cuGraphBatchMemOpNodeGetParams`: the blob holds the `count`
        /// operations.
        graph: GraphBatchMemOpNodeParams = 630 { node: handle(GraphNode) } => { ctx: handle(Context),
            count: u32, flags: u32 } + blob;
        /// `cuGraphAddExternalSemaphoresSignalNode` (`wait` false) or
        /// `cuGraphAddExternalSemaphoresWaitNode` (`wait` true) in `graph`
        /// after `deps` nodes (`what` 0), the node's `…SetParams` (1) or the
        /// executable graph's `cuGraphExecExternalSemaphores…NodeSetParams`
        /// of `node` in `exec` (2): the blob holds the dependencies (ids, u64
        /// each), then `count` semaphore ids (u64 each), then their `count`
        /// signal or wait parameter structs (144 bytes each).
        graph: GraphExtSemNode = 563 { what: u8, wait: bool, graph: handle(Graph),
            node: handle(GraphNode), exec: handle(GraphExec), count: u32, deps: u32 } + blob
            => { node: handle(GraphNode) };
        /// `cuGraphExternalSemaphoresSignalNodeGetParams` (`wait` false) or
        /// `…WaitNodeGetParams` (true): the blob holds `count` semaphore ids
        /// (u64 each), then their `count` parameter structs (144 bytes each).
        graph: GraphExtSemNodeParams = 564 { node: handle(GraphNode), wait: bool } => { count: u32 }
            + blob;
        /// `cuGraphAddNode` (`_v2`) of a `CU_GRAPH_NODE_TYPE_CONDITIONAL` node
        /// in `graph` after `deps` nodes (the blob: their ids, u64 each, then
        /// with `edges` their `CUgraphEdgeData`, 8 bytes each), of conditional
        /// handle `handle`, `CUgraphConditionalNodeType` `kind`, `size` body
        /// graphs, in context `ctx`: the reply's blob holds the ids of the
        /// body graphs the driver made (u64 each).
        graph: GraphConditionalNode = 565 { graph: handle(Graph), deps: u32, edges: bool,
            handle: u64, kind: u32, size: u32, ctx: handle(Context) } + blob
            => { node: handle(GraphNode), count: u32 } + blob;
        /// `cuGraphAddNode` (`_v2`, `what` 0, in `graph` after `deps` nodes:
        /// the blob as for GraphConditionalNode), `cuGraphNodeSetParams` (1, of
        /// `node`) or `cuGraphExecNodeSetParams` (2, of `node` in `exec`) of a
        /// node whose parameters hold at most one handle or address: `ty` is
        /// its `CUgraphNodeType`; `value` a child graph's id (with `ownership`),
        /// an event's id or a freed address, by type; any other type travels
        /// with its parameters zero, for the driver to judge.
        graph: GraphNodeGeneric = 566 { what: u8, graph: handle(Graph), node: handle(GraphNode),
            exec: handle(GraphExec), deps: u32, edges: bool, ty: u32, value: u64, ownership: u32 }
            + blob => { node: handle(GraphNode) };

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
        /// `handle` is an id the worker minted for the driver's handle. Like
        /// the granularity query, the export and the release, it needs no
        /// context: driver 580 runs them with a destroyed one current (the
        /// memMapIPCDrv sample does so on a machine of two GPUs).
        vmm: MemCreate = 304 { size: u64, flags: u64, prop: bytes(32) } => { handle: u64 } (nocontext);
        /// `cuMemRelease` of an allocation handle id: one reference fewer.
        vmm: MemRelease = 305 { handle: u64 } => {} (nocontext);
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
        /// `cuMemMapArrayAsync` (`_ptsz` with `per_thread`): the blob holds
        /// `count` `CUarrayMapInfo`s, their arrays and allocation handles as
        /// this session's ids.
        vmm: MemMapArrayAsync = 830 { count: u32, stream: handle(Stream), per_thread: bool } + blob => {};
        /// `cuMulticastCreate`; `prop` is the `CUmulticastObjectProp`. The
        /// reply's `handle` is an id the worker minted for the driver's
        /// handle, among the allocation handles (`cuMemRelease` releases it).
        multicast: MulticastCreate = 800 { prop: bytes(32) } => { handle: u64 };
        /// `cuMulticastAddDevice` of a multicast handle id.
        multicast: MulticastAddDevice = 801 { handle: u64, device: i32 } => {};
        /// `cuMulticastBindMem`: allocation handle id `mem` into multicast
        /// handle id `handle`.
        multicast: MulticastBindMem = 802 { handle: u64, mc_offset: u64, mem: u64, mem_offset: u64,
            size: u64, flags: u64 } => {};
        /// `cuMulticastBindAddr`: `size` bytes at `ptr`, which must be mapped
        /// memory of this session, into multicast handle id `handle`.
        multicast: MulticastBindAddr = 803 { handle: u64, mc_offset: u64, ptr: devptr, size: u64,
            flags: u64 } => {};
        /// `cuMulticastUnbind` of a range of multicast handle id `handle` on `device`.
        multicast: MulticastUnbind = 804 { handle: u64, device: i32, mc_offset: u64, size: u64 } => {};
        /// `cuGreenCtxDestroy`: the green context's id is forgotten, and with
        /// it the ids of its context (`cuCtxFromGreenCtx`) and of what that
        /// context owned.
        green: GreenCtxDestroy = 821 { green: handle(GreenCtx) } => {} (sync, nocontext);
        /// `cuDevSmResourceSplitByCount` of the `CUdevResource` `input` (144
        /// bytes) into at most `groups` groups: with `want_result` the reply's
        /// blob holds the groups' `CUdevResource`s, with `want_remaining`
        /// `remaining` is the SMs left over; `groups` back is the driver's count.
        green: SmResourceSplit = 822 { input: bytes(144), groups: u32, want_result: bool,
            want_remaining: bool, use_flags: u32, min_count: u32 }
            => { groups: u32, remaining: bytes(144) } + blob (nocontext);
        /// `cuIpcGetMemHandle` of device memory of this session: the driver's
        /// 64-byte handle, recorded in the host's IPC registry under this
        /// session's uid (`docs/adr/0005-ipc.md`).
        ipc: IpcGetMemHandle = 311 { dptr: devptr } => { handle: bytes(64) };
        /// `cuIpcOpenMemHandle_v2`: opens a handle another session of the same
        /// uid exported; the mapping (`size` bytes) joins this session's live
        /// ranges. Opening it again in this session gives the same address.
        ipc: IpcOpenMemHandle = 312 { handle: bytes(64), flags: u32 } => { dptr: devptr, size: u64 };
        /// `cuIpcCloseMemHandle` of an address this session opened: one
        /// reference fewer (`left` remain); the range leaves at the last.
        ipc: IpcCloseMemHandle = 313 { dptr: devptr } => { left: u32 } (sync);
        /// `cuIpcGetEventHandle` of an interprocess event of this session,
        /// recorded in the registry as for memory.
        ipc: IpcGetEventHandle = 314 { event: handle(Event) } => { handle: bytes(64) };
        /// `cuIpcOpenEventHandle` under the client's new event id.
        ipc: IpcOpenEventHandle = 315 { event: handle(Event), handle: bytes(64) } => {};
        /// `cuMemExportToShareableHandle` of a handle id as a POSIX file
        /// descriptor: the driver's descriptor follows the reply, and the
        /// worker closes its own copy.
        vmm: MemExportFd = 522 { handle: u64, flags: u64 } => {} (fd, nocontext);
        /// `cuMemExportToShareableHandle` of another type (`kind`): the
        /// driver's answer, its handle in `data` (a fabric handle is 64 bytes).
        vmm: MemExportShareable = 523 { handle: u64, kind: u32, flags: u64 } => { data: bytes(64) };
        /// `cuMemImportFromShareableHandle` of the POSIX file descriptor that
        /// follows the request: a fresh handle id. The worker closes the
        /// descriptor after the driver's call, as the application keeps its own.
        vmm: MemImportFd = 524 {} => { handle: u64 } (fd_in);
        /// `cuMemImportFromShareableHandle` of another type (`kind`), the
        /// handle's bytes in `data`.
        vmm: MemImportShareable = 525 { kind: u32, data: bytes(64) } => { handle: u64 };
        /// `cuMemGetHandleForAddressRange` of a range of this session, as a
        /// dma-buf descriptor (`kind` 1), which follows the reply.
        vmm: MemRangeHandleFd = 526 { dptr: devptr, size: u64, kind: u32, flags: u64 } => {} (fd);
        /// `cuMemPoolExportToShareableHandle` as a POSIX file descriptor,
        /// which follows the reply (as for `MemExportFd`).
        pool: PoolExportFd = 527 { pool: handle(MemPool), flags: u64 } => {} (fd);
        /// `cuMemPoolExportToShareableHandle` of another type: the driver's
        /// answer, its handle in `data`.
        pool: PoolExportShareable = 528 { pool: handle(MemPool), kind: u32, flags: u64 } => { data: bytes(64) };
        /// `cuMemPoolImportFromShareableHandle` of the POSIX file descriptor
        /// that follows the request: the imported pool's fresh id.
        pool: PoolImportFd = 529 { flags: u64 } => { pool: handle(MemPool) } (fd_in);
        /// `cuMemPoolImportFromShareableHandle` of another type, its bytes in `data`.
        pool: PoolImportShareable = 530 { kind: u32, flags: u64, data: bytes(64) } => { pool: handle(MemPool) };
        /// `cuMemPoolExportPointer` of an allocation of this session: the
        /// driver's 64 bytes of export data.
        pool: PoolExportPointer = 531 { dptr: devptr } => { data: bytes(64) };
        /// `cuMemPoolImportPointer` from an imported pool; the allocation
        /// (`size` bytes) joins the session's live ranges until freed.
        pool: PoolImportPointer = 532 { pool: handle(MemPool), data: bytes(64) } => { dptr: devptr, size: u64 };
        /// `cuImportExternalMemory` of a POSIX file descriptor
        /// (`CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`) that follows the
        /// request: `desc` is the `CUDA_EXTERNAL_MEMORY_HANDLE_DESC` with the
        /// descriptor's field zero; the worker puts its copy there, and the
        /// driver owns it once the import succeeds.
        external: ImportExternalMemoryFd = 316 { desc: bytes(104) } => { mem: u64 } (fd_in);
        /// `cuImportExternalMemory` of another type: `desc` with its
        /// pointers (Win32 handle and name, NvSciBuf object) zero, as they
        /// name nothing in the worker; the driver's answer.
        external: ImportExternalMemory = 317 { desc: bytes(104) } => { mem: u64 };
        /// `cuExternalMemoryGetMappedBuffer`; the buffer joins the session's
        /// live allocations, and `cuMemFree` frees it.
        external: ExternalMemoryMappedBuffer = 318 { mem: u64, offset: u64, size: u64,
            flags: u32 } => { dptr: devptr };
        /// `cuDestroyExternalMemory`; the id is forgotten.
        external: DestroyExternalMemory = 319 { mem: u64 } => {} (sync);
        /// `cuImportExternalSemaphore` of a POSIX file descriptor (opaque or
        /// timeline semaphore) that follows the request, as for external
        /// memory: `desc` is the `CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC` with
        /// the descriptor's field zero.
        external: ImportExternalSemaphoreFd = 320 { desc: bytes(96) } => { sem: u64 } (fd_in);
        /// `cuImportExternalSemaphore` of another type, its pointers zero:
        /// the driver's answer.
        external: ImportExternalSemaphore = 321 { desc: bytes(96) } => { sem: u64 };
        /// `cuSignalExternalSemaphoresAsync` (`wait` false) or
        /// `cuWaitExternalSemaphoresAsync` on `stream`: the blob holds `count`
        /// semaphore ids (u64 each), then their 144-byte parameter structs.
        external: ExternalSemaphores = 322 { stream: handle(Stream), count: u32, wait: bool } + blob => {};
        /// `cuDestroyExternalSemaphore`; the id is forgotten.
        external: DestroyExternalSemaphore = 323 { sem: u64 } => {} (sync);
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
        /// client to run callback `id` by sending `id` (u64), the stream's
        /// status (u32) and a payload length of 0 (u32); the client runs it
        /// and answers with `id` (u64). Events (a non-zero length, its
        /// payload following) get no answer. See `docs/protocol.md`.
        callback: OpenCallbacks = 520 {} => {} (fd, nocontext);
        /// A host callback in stream order: the worker enqueues a trampoline
        /// on the stream that asks the client to run callback `id`
        /// (`cuStreamAddCallback` with `status`, `cuLaunchHostFunc`
        /// without) over the callback channel, and returns once it has run.
        callback: HostCallback = 521 { stream: handle(Stream), id: u64, status: bool } => {} (posted);

        /// `cuLinkCreate_v2` under the client's id: the blob holds `options`
        /// JIT options (16 bytes each, as for ModuleLoadData). The worker
        /// keeps the options, with log buffers of its own, until LinkDestroy:
        /// the driver writes them during later calls on the link.
        link: LinkCreate = 680 { link: u64, options: u32 } + blob => {};
        /// `cuLinkAddData_v2` (and `cuLinkAddFile_v2`, whose file the client
        /// reads): the blob holds `options` JIT options, then the input's
        /// name (`name_len` bytes, no NUL; `has_name` false for a NULL name),
        /// then the data unless staged under `stage`. The driver's `status`
        /// is in the reply, whose blob holds the link's options (final
        /// values, info log, error log, as for ModuleLoadData) then this
        /// call's, so a failed input still brings its error log back.
        link: LinkAddData = 681 { link: u64, kind: u32, options: u32, stage: u64,
            has_name: bool, name_len: u32 } + blob => { status: u32, link_options: u32 } + blob;
        /// `cuLinkComplete`: the reply's blob holds the link's options (as
        /// for LinkAddData, `link_options` bytes), then the `cubin` bytes of
        /// the linked image when `status` is success.
        link: LinkComplete = 682 { link: u64 } => { status: u32, link_options: u32, cubin: u64 } + blob;
        /// `cuLinkDestroy`: the worker forgets the link and its options.
        link: LinkDestroy = 683 { link: u64 } => {};
        /// `cuOccupancyMaxPotentialClusterSize`: the fields and blob as for
        /// OccupancyMaxActiveClusters.
        launch: OccupancyMaxPotentialClusterSize = 684 { function: handle(Function), grid_x: u32, grid_y: u32,
            grid_z: u32, block_x: u32, block_y: u32, block_z: u32, shared: u32, stream: handle(Stream),
            attributes: u32 } + blob => { cluster_size: i32 };
        /// `cuParamSetv` (deprecated): the blob is the bytes to put at
        /// `offset` of the function's legacy parameter buffer.
        launch: ParamSetv = 688 { function: handle(Function), offset: i32 } + blob => {};
        /// Control connection: opens the session's output channel, the
        /// read end of a pipe that the worker makes its standard output;
        /// it follows the reply. The driver writes device `printf` output
        /// there when it flushes it (synchronization, module unload,
        /// context destruction), before the synchronizing call replies; the
        /// client drains it after each call it waited for and writes the
        /// bytes to the application's standard output. See `docs/protocol.md`.
        output: OpenOutput = 693 {} => {} (fd, nocontext);
        /// Managed memory and registered host memory: shared pages that the
        /// worker maps at `address` (0: where it chooses; otherwise exactly
        /// there), registers with the driver with `flags`
        /// (`CU_MEMHOSTREGISTER_*`) and passes after the reply. The client
        /// maps them at the reply's `address`. `MemFreeHost` frees them.
        host: MemShare = 560 { address: u64, bytes: u64, flags: u32 } => { address: u64, dptr: devptr } (fd);
        /// `cuMemAllocPitch_v2`: the driver chooses the pitch; the
        /// allocation (`pitch * height` bytes) is the session's.
        memory: MemAllocPitch = 561 { width: u64, height: u64, element: u32 } => { dptr: devptr, pitch: u64 };
        /// `cuPointerSetAttribute` of `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`
        /// (the only settable attribute) to `value`.
        pointer: PointerSetSyncMemops = 562 { pointer: devptr, value: u32 } => {} (nocontext);
        /// Process checkpointing of the session's worker, the process that
        /// owns the driver: `action` 0 `cuCheckpointProcessGetState`, 1
        /// `GetRestoreThreadId`, 2 `Lock` (with `timeout_ms`), 3
        /// `Checkpoint`, 4 `Restore` (the blob holds `gpu_pairs`
        /// `CUcheckpointGpuPair`s, 32 bytes each), 5 `Unlock`. The reply
        /// carries the state and the restore thread id where asked.
        checkpoint: CheckpointProcess = 694 { action: u8, timeout_ms: u32, gpu_pairs: u32 } + blob
            => { state: u32, tid: i32 } (nocontext);
        /// A core dump attribute of the worker's driver, for the current
        /// context or (`global`) the process: `set` writes the blob (the
        /// application's `size` bytes), otherwise the driver fills a buffer
        /// of `size` bytes, which is the reply's blob; `size` in the reply
        /// is the driver's. File and pipe names are paths on the worker's
        /// host, where the dumps land.
        coredump: CoredumpAttribute = 695 { attrib: u32, global: bool, set: bool, size: u64 } + blob
            => { size: u64 } + blob;
        /// `cuLogsDumpToMemory` of the worker's driver logs into a buffer of
        /// `size` bytes, from `iterator` when `has_iterator`: the driver's
        /// status, advanced iterator and `size` are in the reply, the bytes
        /// written (without the NUL) are its blob. `cuLogsDumpToFile`
        /// dumps this way and writes the file where the client runs.
        logs: LogsDump = 697 { has_iterator: bool, iterator: u32, size: u64, flags: u32 }
            => { status: u32, iterator: u32, size: u64 } + blob (nocontext);
        /// `cuLibraryGetUnifiedFunction` of the symbol named by the blob:
        /// the driver's pointer, an address in the worker's process.
        library: LibraryUnifiedFunction = 698 { library: handle(Library) } + blob
            => { fptr: u64 };
        /// `cuLaunchCooperativeKernelMultiDevice` of `devices` entries: per
        /// entry the blob holds a 48-byte head (function id and stream id,
        /// u64 each; grid, block, shared memory and the parameter bytes'
        /// length, u32 each), then the packed parameter buffer.
        launch: LaunchMultiDevice = 699 { devices: u32, flags: u32 } + blob => {};

        /// `cuLogsRegisterCallback` (`register`) of a worker trampoline that
        /// sends each log message to the client as an event for its callback
        /// `id` (see `docs/protocol.md`), or `cuLogsUnregisterCallback` of the
        /// one registered as `id`. `null`: the application passed a NULL
        /// function (or handle): the driver is asked with NULL, for its code.
        notify: LogsCallback = 700 { id: u64, register: bool, null: bool } => {} (nocontext);
        /// `cuDeviceRegisterAsyncNotification` (`register`) on `device` of a
        /// worker trampoline that sends each notification's
        /// `CUasyncNotificationInfo` to the client as an event for its
        /// callback `id`, or `cuDeviceUnregisterAsyncNotification` of the one
        /// registered as `id`. `null`: the application's function is NULL;
        /// `no_out`: its handle pointer is NULL (both passed on to the
        /// driver, for its code).
        notify: AsyncNotification = 701 { device: i32, id: u64, register: bool, null: bool,
            no_out: bool } => {} (nocontext);
        /// `cuMemBatchDecompressAsync` (both forms) of `count` operations on
        /// `stream`: the blob holds the `CUmemDecompressParams` (64 bytes
        /// each) as the application gave them, none when `params` is false
        /// (its array was NULL). The worker checks every source, destination
        /// and `dstActBytes` range against the session's allocations; the
        /// reply gives the driver's status and, when `error_index` was
        /// asked, the index after the call (the driver starts from the
        /// application's `index` and writes the failing operation, or
        /// `u64::MAX` for the batch as a whole). A refused range fails its
        /// operation with `CUDA_ERROR_INVALID_VALUE` on a device with a
        /// decompression engine, and reaches the driver as NULL on one
        /// without (which runs nothing and answers the batch itself).
        decompress: MemBatchDecompress = 633 { stream: handle(Stream), count: u64, flags: u32,
            params: bool, error_index: bool, index: u64 } + blob => { status: u32, error_index: u64 };
        /// The events the worker's driver raised on this lane's thread inside
        /// the lane's waited requests (log callbacks run inside the failing
        /// call): the blob holds them as the callback channel carries them
        /// (16-byte header, then the payload), oldest first; `dropped` counts
        /// those past the lane's bound. The lane holds none afterwards. Sent
        /// by the client when a reply has `reply_flags::EVENTS`, so that the
        /// application's functions run before the call returns.
        notify: TakeEvents = 759 {} => { dropped: u32 } + blob (nocontext);
        /// Control connection: one of NVML's values for `libvgpu-nvml.so`
        /// (`vgpu_proto::nvml`): `what` picks the value, `device` the
        /// worker's device ordinal (ignored by system values) and `arg` its
        /// argument (a clock or sensor type). The values are the tenant's
        /// (the session's uid) where they are per process (memory,
        /// processes) and the host's NVML's otherwise. `status` is NVML's
        /// return code; `a` and `b` carry numbers, the blob a string, the
        /// process list (16 bytes each: pid u32, 0 u32, memory u64) or the
        /// field values the request's blob asked for (`nvmlFieldValue_t`,
        /// 40 bytes each).
        nvml: NvmlQuery = 860 { device: u32, what: u32, arg: u32 } + blob => { status: u32, a: u64, b: u64 } + blob (nocontext);
    }
}
