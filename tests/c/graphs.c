/*
 * graphs: stream capture and CUDA graphs as torch.cuda.CUDAGraph uses them.
 *
 * Work enqueued on a capturing stream (memsets, a device-to-device copy, an
 * event record) is captured, not run; the captured graph, instantiated,
 * replays it at each launch. The capture state is visible through
 * cuStreamIsCapturing; a synchronous allocation or a synchronization of the
 * capturing stream under global mode is refused with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, whose
 * cuStreamEndCapture then returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and
 * no graph; a thread in relaxed mode may allocate during another capture.
 * Asynchronous copies from and to pageable memory are captured too, and read
 * and write that memory at each launch.
 *
 * Without options it uses no module, so it runs on the simulated device and
 * on a real GPU alike, and the outputs can be compared. Options:
 *   --kernel   also captures a launch of the simulated device's fill_u32
 *              kernel (a simulator module: sim only);
 *   --handles  also uses destroyed graphs and executable graphs, which the
 *              driver documents as undefined behaviour, and adds a memset
 *              node outside every allocation: only through vgpu (and the
 *              simulator), which answer CUDA_ERROR_INVALID_VALUE;
 *
 * Build:  cc -std=c11 -O2 -Wall -o graphs graphs.c -ldl
 * Usage:  graphs [LIBRARY] [--kernel] [--handles]
 *         (default library: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct {
    unsigned char from_port, to_port, type, reserved[5];
} CUgraphEdgeData;
typedef struct {
    CUfunction func;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    void **kernelParams;
    void **extra;
    CUkernel kern;
    CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;
typedef struct {
    CUdeviceptr dst;
    size_t pitch;
    unsigned int value, elementSize;
    size_t width, height;
} CUDA_MEMSET_NODE_PARAMS;
typedef struct {
    int result;
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;
_Static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS) == 72, "CUDA_KERNEL_NODE_PARAMS_v2 is 72 bytes");
typedef struct {
    unsigned long long flags;
    CUstream hUploadStream;
    CUgraphNode hErrNode_out;
    int result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;

enum {
    WORDS = 1024,
    CU_STREAM_NON_BLOCKING = 1,
    CAPTURE_MODE_GLOBAL = 0,
    CAPTURE_MODE_RELAXED = 2,
    CAPTURE_STATUS_NONE = 0,
    CAPTURE_STATUS_ACTIVE = 1,
    CAPTURE_STATUS_INVALIDATED = 2,
    ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    GRAPH_NODE_TYPE_MEMSET = 2,
    GRAPH_NODE_TYPE_EMPTY = 5,
    GRAPH_NODE_TYPE_WAIT_EVENT = 6,
    GRAPH_NODE_TYPE_EVENT_RECORD = 7,
    SET_CAPTURE_DEPENDENCIES = 1,
    INSTANTIATE_FLAG_UPLOAD = 2,
    EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 2,
    ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*Memcpy2DAsync)(const CUDA_MEMCPY2D *, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamIsCapturing)(CUstream, int *);
    CUresult (*StreamAddCallback)(CUstream, void (*)(CUstream, CUresult, void *), void *,
                                  unsigned int);
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*ThreadExchangeStreamCaptureMode)(int *);
    CUresult (*StreamGetCaptureInfo)(CUstream, int *, unsigned long long *);
    CUresult (*StreamGetCaptureInfoV2)(CUstream, int *, unsigned long long *, CUgraph *,
                                       const CUgraphNode **, size_t *);
    CUresult (*StreamGetCaptureInfoV3)(CUstream, int *, unsigned long long *, CUgraph *,
                                       const CUgraphNode **, const CUgraphEdgeData **, size_t *);
    CUresult (*StreamUpdateCaptureDependencies)(CUstream, CUgraphNode *, size_t, unsigned int);
    CUresult (*StreamBeginCaptureToGraph)(CUstream, CUgraph, const CUgraphNode *,
                                          const CUgraphEdgeData *, size_t, int);
    CUresult (*GraphNodeGetType)(CUgraphNode, int *);
    CUresult (*GraphAddEmptyNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t);
    CUresult (*GraphAddEventRecordNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                        CUevent);
    CUresult (*GraphAddEventWaitNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUevent);
    CUresult (*GraphAddDependencies)(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t);
    CUresult (*GraphRemoveDependencies)(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t);
    CUresult (*GraphDestroyNode)(CUgraphNode);
    CUresult (*GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
    CUresult (*GraphDebugDotPrint)(CUgraph, const char *, unsigned int);
    CUresult (*GraphClone)(CUgraph *, CUgraph);
    CUresult (*GraphAddMemsetNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const CUDA_MEMSET_NODE_PARAMS *, CUcontext);
    CUresult (*GraphExecUpdate)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);
    CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*GraphKernelNodeSetParams)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*GraphKernelNodeGetParams)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*GraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
                                             const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*GraphGetRootNodes)(CUgraph, CUgraphNode *, size_t *);
    CUresult (*GraphGetEdges)(CUgraph, CUgraphNode *, CUgraphNode *, size_t *);
    CUresult (*GraphNodeGetDependencies)(CUgraphNode, CUgraphNode *, size_t *);
    CUresult (*GraphNodeGetDependentNodes)(CUgraphNode, CUgraphNode *, size_t *);
    CUresult (*EventCreate)(CUevent *, unsigned int);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*GraphCreate)(CUgraph *, unsigned int);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphInstantiateWithParams)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphUpload)(CUgraphExec, CUstream);
    CUresult (*GraphExecGetFlags)(CUgraphExec, unsigned long long *);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemsetD32Async, "cuMemsetD32Async"),
    ENTRY(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    ENTRY(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    ENTRY(Memcpy2DAsync, "cuMemcpy2DAsync_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamIsCapturing, "cuStreamIsCapturing"),
    ENTRY(StreamAddCallback, "cuStreamAddCallback"),
    ENTRY(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    ENTRY(StreamEndCapture, "cuStreamEndCapture"),
    ENTRY(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode"),
    ENTRY(StreamGetCaptureInfo, "cuStreamGetCaptureInfo"),
    ENTRY(StreamGetCaptureInfoV2, "cuStreamGetCaptureInfo_v2"),
    ENTRY(StreamGetCaptureInfoV3, "cuStreamGetCaptureInfo_v3"),
    ENTRY(StreamUpdateCaptureDependencies, "cuStreamUpdateCaptureDependencies"),
    ENTRY(StreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph"),
    ENTRY(GraphNodeGetType, "cuGraphNodeGetType"),
    ENTRY(GraphAddEmptyNode, "cuGraphAddEmptyNode"),
    ENTRY(GraphAddEventRecordNode, "cuGraphAddEventRecordNode"),
    ENTRY(GraphAddEventWaitNode, "cuGraphAddEventWaitNode"),
    ENTRY(GraphAddDependencies, "cuGraphAddDependencies"),
    ENTRY(GraphRemoveDependencies, "cuGraphRemoveDependencies"),
    ENTRY(GraphDestroyNode, "cuGraphDestroyNode"),
    ENTRY(GraphGetNodes, "cuGraphGetNodes"),
    ENTRY(GraphDebugDotPrint, "cuGraphDebugDotPrint"),
    ENTRY(GraphClone, "cuGraphClone"),
    ENTRY(GraphAddMemsetNode, "cuGraphAddMemsetNode"),
    ENTRY(GraphExecUpdate, "cuGraphExecUpdate_v2"),
    ENTRY(GraphAddKernelNode, "cuGraphAddKernelNode_v2"),
    ENTRY(GraphKernelNodeSetParams, "cuGraphKernelNodeSetParams_v2"),
    ENTRY(GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2"),
    ENTRY(GraphKernelNodeGetParams, "cuGraphKernelNodeGetParams_v2"),
    ENTRY(GraphGetRootNodes, "cuGraphGetRootNodes"),
    ENTRY(GraphGetEdges, "cuGraphGetEdges"),
    ENTRY(GraphNodeGetDependencies, "cuGraphNodeGetDependencies"),
    ENTRY(GraphNodeGetDependentNodes, "cuGraphNodeGetDependentNodes"),
    ENTRY(EventCreate, "cuEventCreate"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(EventRecord, "cuEventRecord"),
    ENTRY(EventSynchronize, "cuEventSynchronize"),
    ENTRY(GraphCreate, "cuGraphCreate"),
    ENTRY(GraphDestroy, "cuGraphDestroy"),
    ENTRY(GraphInstantiate, "cuGraphInstantiateWithFlags"),
    ENTRY(GraphInstantiateWithParams, "cuGraphInstantiateWithParams"),
    ENTRY(GraphLaunch, "cuGraphLaunch"),
    ENTRY(GraphUpload, "cuGraphUpload"),
    ENTRY(GraphExecGetFlags, "cuGraphExecGetFlags"),
    ENTRY(GraphExecDestroy, "cuGraphExecDestroy"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(LaunchKernel, "cuLaunchKernel"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

static CUstream stream;
static CUcontext primary;
/* Two buffers of WORDS words: a (memsets) and b (a copy of a). */
static CUdeviceptr a, b;

/* Whether words [from, to) of `p` all hold `value`. */
static int holds(CUdeviceptr p, int from, int to, unsigned int value)
{
    static unsigned int host[WORDS];
    if (cu.MemcpyDtoH(host, p, sizeof host) != CUDA_SUCCESS)
        return 0;
    for (int i = from; i < to; i++)
        if (host[i] != value)
            return 0;
    return 1;
}

/* Sets both buffers to their values before a launch: a = 1, b = 2. */
static int reset(void)
{
    return cu.MemsetD32(a, 1, WORDS) == CUDA_SUCCESS && cu.MemsetD32(b, 2, WORDS) == CUDA_SUCCESS;
}

static int capture_status(void)
{
    int status = -1;
    if (cu.StreamIsCapturing(stream, &status) != CUDA_SUCCESS)
        return -1;
    return status;
}

/* Captures memsets, a copy and an event record; checks nothing ran; returns
 * the graph (NULL on failure). */
static CUgraph capture_memsets(CUevent done)
{
    CUgraph graph = NULL;
    if (!EXPECT("begin_capture", cu.StreamBeginCapture(stream, CAPTURE_MODE_GLOBAL), CUDA_SUCCESS))
        return NULL;
    expect_true("is_capturing_active", capture_status() == CAPTURE_STATUS_ACTIVE,
                "cuStreamIsCapturing is not ACTIVE");
    int status = -1;
    unsigned long long id = 0, id_again = 0;
    CUgraph during = NULL;
    const CUgraphNode *deps = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t n = 99;
    EXPECT("info_v2_start", cu.StreamGetCaptureInfoV2(stream, &status, &id, &during, &deps, &n),
           CUDA_SUCCESS);
    expect_true("info_v2_start_values", status == CAPTURE_STATUS_ACTIVE && during != NULL && n == 0,
                "not active, no graph, or dependencies at the start");
    EXPECT("capture_memset_a", cu.MemsetD32Async(a, 5, WORDS, stream), CUDA_SUCCESS);
    n = 99;
    EXPECT("info_v3_after_memset",
           cu.StreamGetCaptureInfoV3(stream, &status, &id_again, NULL, &deps, &edges, &n),
           CUDA_SUCCESS);
    int type = -1;
    if (expect_true("info_v3_one_dependency", n == 1 && deps != NULL && id_again == id,
                    "not one dependency, or another capture id")) {
        CUgraphNode last = deps[0];
        EXPECT("dependency_node_type", cu.GraphNodeGetType(last, &type), CUDA_SUCCESS);
        expect_true("dependency_is_memset", type == GRAPH_NODE_TYPE_MEMSET,
                    "the dependency is not a memset node");
        EXPECT("update_dependencies",
               cu.StreamUpdateCaptureDependencies(stream, &last, 1, SET_CAPTURE_DEPENDENCIES),
               CUDA_SUCCESS);
    }
    EXPECT("capture_copy_a_to_b", cu.MemcpyDtoDAsync(b, a, WORDS * 4, stream), CUDA_SUCCESS);
    EXPECT("capture_memset_a_upper", cu.MemsetD32Async(a + WORDS * 2, 8, WORDS / 2, stream),
           CUDA_SUCCESS);
    EXPECT("capture_event_record", cu.EventRecord(done, stream), CUDA_SUCCESS);
    EXPECT("end_capture", cu.StreamEndCapture(stream, &graph), CUDA_SUCCESS);
    expect_true("end_capture_graph", graph != NULL, "cuStreamEndCapture gave no graph");
    expect_true("is_capturing_none_after", capture_status() == CAPTURE_STATUS_NONE,
                "cuStreamIsCapturing is not NONE after the capture");
    status = -1;
    EXPECT("info_after", cu.StreamGetCaptureInfo(stream, &status, &id), CUDA_SUCCESS);
    expect_true("info_after_none", status == CAPTURE_STATUS_NONE, "the capture status is not NONE");
    expect_true("capture_ran_nothing_a", holds(a, 0, WORDS, 1), "a changed during capture");
    expect_true("capture_ran_nothing_b", holds(b, 0, WORDS, 2), "b changed during capture");
    return graph;
}

/* Launches `exec` three times, checking the memory after each. */
static void replay(CUgraphExec exec, CUevent done)
{
    char name[64];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "replay_%d_reset", i);
        expect_true(name, reset(), "resetting the buffers failed");
        snprintf(name, sizeof name, "replay_%d_launch", i);
        EXPECT(name, cu.GraphLaunch(exec, stream), CUDA_SUCCESS);
        /* Driver 580 refuses to wait from the host on an event whose last
         * record was captured, even after the graph ran. */
        snprintf(name, sizeof name, "replay_%d_event", i);
        EXPECT(name, cu.EventSynchronize(done), CUDA_ERROR_INVALID_VALUE);
        snprintf(name, sizeof name, "replay_%d_sync", i);
        EXPECT(name, cu.StreamSynchronize(stream), CUDA_SUCCESS);
        snprintf(name, sizeof name, "replay_%d_a", i);
        expect_true(name, holds(a, 0, WORDS / 2, 5) && holds(a, WORDS / 2, WORDS, 8),
                    "a is not 5s then 8s");
        snprintf(name, sizeof name, "replay_%d_b", i);
        expect_true(name, holds(b, 0, WORDS, 5), "b is not 5s");
    }
}

/* A synchronous allocation and a synchronization of the capturing stream
 * under global mode; relaxed mode on this thread. */
/* A stream callback for the capture that must refuse it; counts its runs. */
static int stream_callback_runs;
static void count_stream_callback(CUstream s, CUresult status, void *data)
{
    (void)s, (void)status, (void)data;
    stream_callback_runs++;
}

static void forbidden_calls(void)
{
    CUgraph graph = (CUgraph)1;
    CUdeviceptr p = 0;
    EXPECT("forbid_begin", cu.StreamBeginCapture(stream, CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT("forbid_mem_alloc", cu.MemAlloc(&p, 4096), ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect_true("forbid_is_capturing_invalidated", capture_status() == CAPTURE_STATUS_INVALIDATED,
                "cuStreamIsCapturing is not INVALIDATED");
    EXPECT("forbid_end_invalidated", cu.StreamEndCapture(stream, &graph),
           ERROR_STREAM_CAPTURE_INVALIDATED);
    expect_true("forbid_end_no_graph", graph == NULL, "an invalidated capture gave a graph");
    expect_true("forbid_not_capturing_after", capture_status() == CAPTURE_STATUS_NONE,
                "cuStreamIsCapturing is not NONE after the invalidated capture");

    graph = (CUgraph)1;
    EXPECT("sync_begin", cu.StreamBeginCapture(stream, CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT("sync_capturing_stream", cu.StreamSynchronize(stream), ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT("sync_end_invalidated", cu.StreamEndCapture(stream, &graph),
           ERROR_STREAM_CAPTURE_INVALIDATED);
    expect_true("sync_end_no_graph", graph == NULL, "an invalidated capture gave a graph");

    /* cuStreamAddCallback on a capturing stream: the driver's answer. */
    graph = (CUgraph)1;
    EXPECT("callback_begin", cu.StreamBeginCapture(stream, CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT("callback_capturing_stream",
           cu.StreamAddCallback(stream, count_stream_callback, NULL, 0),
           ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT("callback_end_invalidated", cu.StreamEndCapture(stream, &graph),
           ERROR_STREAM_CAPTURE_INVALIDATED);
    expect_true("callback_not_run", stream_callback_runs == 0,
                "a refused stream callback ran");

    int mode = CAPTURE_MODE_RELAXED;
    EXPECT("relaxed_exchange", cu.ThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    expect_true("relaxed_previous_global", mode == CAPTURE_MODE_GLOBAL,
                "the thread's mode was not global");
    EXPECT("relaxed_begin", cu.StreamBeginCapture(stream, CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    p = 0;
    EXPECT("relaxed_mem_alloc", cu.MemAlloc(&p, 4096), CUDA_SUCCESS);
    graph = NULL;
    EXPECT("relaxed_end", cu.StreamEndCapture(stream, &graph), CUDA_SUCCESS);
    if (p != 0)
        EXPECT("relaxed_mem_free", cu.MemFree(p), CUDA_SUCCESS);
    if (expect_true("relaxed_end_graph", graph != NULL, "cuStreamEndCapture gave no graph"))
        EXPECT("relaxed_graph_destroy", cu.GraphDestroy(graph), CUDA_SUCCESS);
    mode = CAPTURE_MODE_GLOBAL;
    EXPECT("relaxed_restore", cu.ThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    expect_true("relaxed_previous_relaxed", mode == CAPTURE_MODE_RELAXED,
                "the thread's mode was not relaxed");

    EXPECT("legacy_stream_capture", cu.StreamBeginCapture(NULL, CAPTURE_MODE_GLOBAL),
           ERROR_STREAM_CAPTURE_UNSUPPORTED);
}

/* Captures a memset into an existing graph and replays it. */
static void capture_to_graph(void)
{
    CUgraph into = NULL, got = NULL;
    CUgraphExec exec = NULL;
    if (!EXPECT("to_graph_create", cu.GraphCreate(&into, 0), CUDA_SUCCESS))
        return;
    EXPECT("to_graph_begin",
           cu.StreamBeginCaptureToGraph(stream, into, NULL, NULL, 0, CAPTURE_MODE_GLOBAL),
           CUDA_SUCCESS);
    EXPECT("to_graph_memset", cu.MemsetD32Async(b, 9, WORDS, stream), CUDA_SUCCESS);
    EXPECT("to_graph_end", cu.StreamEndCapture(stream, &got), CUDA_SUCCESS);
    expect_true("to_graph_same_graph", got == into, "the capture gave another graph");
    CUDA_GRAPH_INSTANTIATE_PARAMS params = {INSTANTIATE_FLAG_UPLOAD, stream, (CUgraphNode)1, -1};
    if (EXPECT("to_graph_instantiate", cu.GraphInstantiateWithParams(&exec, into, &params),
               CUDA_SUCCESS)) {
        expect_true("to_graph_instantiate_result", params.result_out == 0,
                    "the instantiate result is not CUDA_GRAPH_INSTANTIATE_SUCCESS");
        expect_true("to_graph_reset", reset(), "resetting the buffers failed");
        EXPECT("to_graph_launch", cu.GraphLaunch(exec, stream), CUDA_SUCCESS);
        EXPECT("to_graph_sync", cu.StreamSynchronize(stream), CUDA_SUCCESS);
        expect_true("to_graph_data", holds(b, 0, WORDS, 9) && holds(a, 0, WORDS, 1),
                    "b is not 9s or a changed");
        EXPECT("to_graph_exec_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    }
    EXPECT("to_graph_destroy", cu.GraphDestroy(into), CUDA_SUCCESS);
}

/* Whether node `n` is of type `want`. */
static int node_is(CUgraphNode n, int want)
{
    int type = -1;
    return cu.GraphNodeGetType(n, &type) == CUDA_SUCCESS && type == want;
}

/* Whether the file at `path` starts with "digraph". */
static int is_dot_file(const char *path)
{
    char head[8] = {0};
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    size_t got = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    return got == 7 && strcmp(head, "digraph") == 0;
}

/* Builds a graph node by node: an empty root, an event record after it, an event
 * wait after that; adds and removes an edge, destroys a node, launches it. */
static void built_graph(CUevent done)
{
    CUgraph g = NULL;
    CUgraphNode root = NULL, record = NULL, wait = NULL, extra = NULL;
    CUgraphExec exec = NULL;
    if (!EXPECT("built_create", cu.GraphCreate(&g, 0), CUDA_SUCCESS))
        return;
    EXPECT("built_empty", cu.GraphAddEmptyNode(&root, g, NULL, 0), CUDA_SUCCESS);
    EXPECT("built_record", cu.GraphAddEventRecordNode(&record, g, &root, 1, done), CUDA_SUCCESS);
    EXPECT("built_wait", cu.GraphAddEventWaitNode(&wait, g, &record, 1, done), CUDA_SUCCESS);
    EXPECT("built_extra", cu.GraphAddEmptyNode(&extra, g, NULL, 0), CUDA_SUCCESS);
    expect_true("built_types",
                node_is(root, GRAPH_NODE_TYPE_EMPTY) &&
                    node_is(record, GRAPH_NODE_TYPE_EVENT_RECORD) &&
                    node_is(wait, GRAPH_NODE_TYPE_WAIT_EVENT),
                "a node has another type");
    size_t n = 0;
    EXPECT("built_get_nodes", cu.GraphGetNodes(g, NULL, &n), CUDA_SUCCESS);
    expect_true("built_four_nodes", n == 4, "the graph does not have 4 nodes");
    CUgraphNode roots[4] = {NULL, NULL, NULL, NULL};
    n = 4;
    EXPECT("built_get_roots", cu.GraphGetRootNodes(g, roots, &n), CUDA_SUCCESS);
    expect_true("built_two_roots",
                n == 2 && ((roots[0] == root && roots[1] == extra) ||
                           (roots[0] == extra && roots[1] == root)) &&
                    roots[2] == NULL,
                "the roots are not the empty nodes");
    EXPECT("built_add_edge", cu.GraphAddDependencies(g, &extra, &wait, 1), CUDA_SUCCESS);
    n = 0;
    EXPECT("built_get_edges", cu.GraphGetEdges(g, NULL, NULL, &n), CUDA_SUCCESS);
    expect_true("built_three_edges", n == 3, "the graph does not have 3 edges");
    n = 0;
    EXPECT("built_wait_deps", cu.GraphNodeGetDependencies(wait, NULL, &n), CUDA_SUCCESS);
    expect_true("built_wait_two_deps", n == 2, "the wait node does not have 2 dependencies");
    CUgraphNode after[2] = {NULL, NULL};
    n = 2;
    EXPECT("built_root_dependents", cu.GraphNodeGetDependentNodes(root, after, &n), CUDA_SUCCESS);
    expect_true("built_root_one_dependent", n == 1 && after[0] == record,
                "the root's dependent is not the record node");
    EXPECT("built_remove_edge", cu.GraphRemoveDependencies(g, &extra, &wait, 1), CUDA_SUCCESS);
    char dot[64];
    snprintf(dot, sizeof dot, "/tmp/vgpu-graphs-%d.dot", (int)getpid());
    if (EXPECT("built_dot_print", cu.GraphDebugDotPrint(g, dot, 0), CUDA_SUCCESS))
        expect_true("built_dot_file", is_dot_file(dot), "the DOT file does not start with digraph");
    unlink(dot);
    EXPECT("built_destroy_node", cu.GraphDestroyNode(extra), CUDA_SUCCESS);
    if (EXPECT("built_instantiate", cu.GraphInstantiate(&exec, g, 0), CUDA_SUCCESS)) {
        EXPECT("built_launch", cu.GraphLaunch(exec, stream), CUDA_SUCCESS);
        EXPECT("built_event_sync", cu.EventSynchronize(done), CUDA_SUCCESS);
        CUgraph copy = NULL;
        CUgraphNode more = NULL;
        CUgraphExecUpdateResultInfo info = {-1, NULL, NULL};
        if (EXPECT("built_clone", cu.GraphClone(&copy, g), CUDA_SUCCESS)) {
            EXPECT("built_update_same", cu.GraphExecUpdate(exec, copy, &info), CUDA_SUCCESS);
            expect_true("built_update_same_result", info.result == 0, "the update result is not 0");
            EXPECT("built_clone_more", cu.GraphAddEmptyNode(&more, copy, NULL, 0), CUDA_SUCCESS);
            EXPECT("built_update_changed", cu.GraphExecUpdate(exec, copy, &info),
                   ERROR_GRAPH_EXEC_UPDATE_FAILURE);
            expect_true("built_update_changed_result",
                        info.result == EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
                        "the update result is not TOPOLOGY_CHANGED");
            EXPECT("built_clone_destroy", cu.GraphDestroy(copy), CUDA_SUCCESS);
        }
        EXPECT("built_exec_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    }
    EXPECT("built_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

/* A memset node of two rows that cover a; with `handles`, one outside every
 * allocation, which vgpu refuses when it is added. */
static void memset_node(int handles)
{
    CUgraph g = NULL;
    CUgraphNode m = NULL;
    CUgraphExec exec = NULL;
    CUDA_MEMSET_NODE_PARAMS p = {a, WORDS * 2, 3, 4, WORDS / 2, 2};
    if (!EXPECT("memset_node_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS))
        return;
    EXPECT("memset_node_add", cu.GraphAddMemsetNode(&m, g, NULL, 0, &p, primary), CUDA_SUCCESS);
    if (EXPECT("memset_node_instantiate", cu.GraphInstantiate(&exec, g, 0), CUDA_SUCCESS)) {
        expect_true("memset_node_reset", reset(), "resetting the buffers failed");
        EXPECT("memset_node_launch", cu.GraphLaunch(exec, stream), CUDA_SUCCESS);
        EXPECT("memset_node_sync", cu.StreamSynchronize(stream), CUDA_SUCCESS);
        expect_true("memset_node_data", holds(a, 0, WORDS, 3) && holds(b, 0, WORDS, 2),
                    "a is not 3s or b changed");
        EXPECT("memset_node_exec_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    }
    if (handles) {
        CUDA_MEMSET_NODE_PARAMS wild = {a + WORDS * 4 * 64, 0, 3, 4, WORDS, 1};
        EXPECT("memset_node_out_of_range", cu.GraphAddMemsetNode(&m, g, NULL, 0, &wild, primary),
               CUDA_ERROR_INVALID_VALUE);
    }
    EXPECT("memset_node_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

/* Asynchronous copies between the device and pageable memory (a static
 * array to the device, the device to a stack array) on the capturing stream:
 * captured, they read and write that memory at each launch, not at capture.
 * With `two_d` the copies are cuMemcpy2DAsync of one row in and of gapless
 * rows out, as CUDA 13's runtime sends cudaMemcpyAsync. */
static void pageable_copy(int two_d)
{
    static unsigned int host[WORDS];
    unsigned int back[WORDS];
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    const char *tag = two_d ? "pageable_2d" : "pageable";
    char name[64];
#define NAME(what) (snprintf(name, sizeof name, "%s_%s", tag, what), name)
    for (int i = 0; i < WORDS; i++)
        host[i] = 300 + i;
    memset(back, 0, sizeof back);
    EXPECT(NAME("begin"), cu.StreamBeginCapture(stream, CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    if (two_d) {
        CUDA_MEMCPY2D in = {0}, out = {0};
        in.srcMemoryType = 1; /* CU_MEMORYTYPE_HOST */
        in.srcHost = host;
        in.srcPitch = sizeof host;
        in.dstMemoryType = 2; /* CU_MEMORYTYPE_DEVICE */
        in.dstDevice = a;
        in.dstPitch = sizeof host;
        in.WidthInBytes = sizeof host;
        in.Height = 1;
        out.srcMemoryType = 2;
        out.srcDevice = a;
        out.srcPitch = sizeof back / 4;
        out.dstMemoryType = 1;
        out.dstHost = back;
        out.dstPitch = sizeof back / 4;
        out.WidthInBytes = sizeof back / 4;
        out.Height = 4;
        EXPECT(NAME("copy_in"), cu.Memcpy2DAsync(&in, stream), CUDA_SUCCESS);
        EXPECT(NAME("copy_out"), cu.Memcpy2DAsync(&out, stream), CUDA_SUCCESS);
    } else {
        EXPECT(NAME("copy_in"), cu.MemcpyHtoDAsync(a, host, sizeof host, stream), CUDA_SUCCESS);
        EXPECT(NAME("copy_out"), cu.MemcpyDtoHAsync(back, a, sizeof back, stream), CUDA_SUCCESS);
    }
    EXPECT(NAME("end"), cu.StreamEndCapture(stream, &graph), CUDA_SUCCESS);
    expect_true(NAME("not_at_capture"), back[0] == 0 && back[WORDS - 1] == 0,
                "the captured copy ran at capture");
    if (graph == NULL ||
        !EXPECT(NAME("instantiate"), cu.GraphInstantiate(&exec, graph, 0), CUDA_SUCCESS))
        return;
    for (int launch = 0; launch < 2; launch++) {
        EXPECT(NAME(launch ? "launch_2" : "launch"), cu.GraphLaunch(exec, stream), CUDA_SUCCESS);
        EXPECT(NAME(launch ? "synchronize_2" : "synchronize"), cu.StreamSynchronize(stream),
               CUDA_SUCCESS);
        int same = 1;
        for (int i = 0; i < WORDS; i++)
            same &= back[i] == host[i];
        expect_true(NAME(launch ? "round_trip_2" : "round_trip"), same,
                    "the launch did not copy the pageable memory through the device");
        for (int i = 0; i < WORDS; i++)
            host[i] = 7000 + i;
    }
    EXPECT(NAME("exec_destroy"), cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    EXPECT(NAME("graph_destroy"), cu.GraphDestroy(graph), CUDA_SUCCESS);
#undef NAME
}

/* Captures a fill_u32 launch (a simulator kernel) and replays it twice. */
static void kernel_graph(void)
{
    static const char image[] = "VGPU-SIM-MODULE 1\nkernel fill_u32\n";
    CUmodule mod = NULL;
    CUfunction fill = NULL;
    if (!EXPECT("kernel_module_load", cu.ModuleLoadData(&mod, image), CUDA_SUCCESS) ||
        !EXPECT("kernel_get_function", cu.ModuleGetFunction(&fill, mod, "fill_u32"), CUDA_SUCCESS))
        return;
    CUdeviceptr p = b;
    unsigned int v = 42;
    int n = WORDS;
    void *args[] = {&p, &v, &n};
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    EXPECT("kernel_reset", cu.MemsetD32(b, 0, WORDS), CUDA_SUCCESS);
    EXPECT("kernel_begin", cu.StreamBeginCapture(stream, CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT("kernel_capture_launch", cu.LaunchKernel(fill, 4, 1, 1, 256, 1, 1, 0, stream, args, NULL),
           CUDA_SUCCESS);
    v = 0; /* the captured launch keeps the arguments it was given */
    EXPECT("kernel_end", cu.StreamEndCapture(stream, &graph), CUDA_SUCCESS);
    expect_true("kernel_capture_ran_nothing", holds(b, 0, WORDS, 0), "the kernel ran during capture");
    if (!EXPECT("kernel_instantiate", cu.GraphInstantiate(&exec, graph, 0), CUDA_SUCCESS))
        return;
    for (int i = 0; i < 2; i++) {
        EXPECT("kernel_replay_reset", cu.MemsetD32(b, 0, WORDS), CUDA_SUCCESS);
        EXPECT("kernel_replay_launch", cu.GraphLaunch(exec, stream), CUDA_SUCCESS);
        EXPECT("kernel_replay_sync", cu.StreamSynchronize(stream), CUDA_SUCCESS);
        expect_true("kernel_replay_data", holds(b, 0, WORDS, 42), "b is not 42s after the replay");
    }
    EXPECT("kernel_exec_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    EXPECT("kernel_graph_destroy", cu.GraphDestroy(graph), CUDA_SUCCESS);

    /* The same launch as a kernel node, then with new parameters. */
    CUgraphNode kn = NULL;
    v = 11;
    CUDA_KERNEL_NODE_PARAMS kp = {fill, 4, 1, 1, 256, 1, 1, 0, args, NULL, NULL, NULL};
    EXPECT("kernel_node_graph", cu.GraphCreate(&graph, 0), CUDA_SUCCESS);
    EXPECT("kernel_node_add", cu.GraphAddKernelNode(&kn, graph, NULL, 0, &kp), CUDA_SUCCESS);
    for (unsigned int want = 11; want <= 12; want++) {
        exec = NULL;
        EXPECT("kernel_node_instantiate", cu.GraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
        EXPECT("kernel_node_reset", cu.MemsetD32(b, 0, WORDS), CUDA_SUCCESS);
        EXPECT("kernel_node_launch", cu.GraphLaunch(exec, stream), CUDA_SUCCESS);
        EXPECT("kernel_node_sync", cu.StreamSynchronize(stream), CUDA_SUCCESS);
        expect_true(want == 11 ? "kernel_node_data" : "kernel_node_set_data",
                    holds(b, 0, WORDS, want), "b does not hold the node's value");
        EXPECT("kernel_node_exec_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
        v = 12;
        EXPECT("kernel_node_set_params", cu.GraphKernelNodeSetParams(kn, &kp), CUDA_SUCCESS);
    }
    /* An executable graph's copy of the node takes new parameters; the
     * graph's node keeps its own (12, checked below). */
    exec = NULL;
    EXPECT("kernel_exec_set_instantiate", cu.GraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
    v = 13;
    EXPECT("kernel_exec_set_params", cu.GraphExecKernelNodeSetParams(exec, kn, &kp), CUDA_SUCCESS);
    v = 12;
    EXPECT("kernel_exec_set_reset", cu.MemsetD32(b, 0, WORDS), CUDA_SUCCESS);
    EXPECT("kernel_exec_set_launch", cu.GraphLaunch(exec, stream), CUDA_SUCCESS);
    EXPECT("kernel_exec_set_sync", cu.StreamSynchronize(stream), CUDA_SUCCESS);
    expect_true("kernel_exec_set_data", holds(b, 0, WORDS, 13),
                "b does not hold the executable graph's new value");
    EXPECT("kernel_exec_set_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    CUDA_KERNEL_NODE_PARAMS got;
    memset(&got, 0, sizeof got);
    if (EXPECT("kernel_node_get_params", cu.GraphKernelNodeGetParams(kn, &got), CUDA_SUCCESS))
        expect_true("kernel_node_params_back",
                    got.func == fill && got.gridDimX == 4 && got.blockDimX == 256 &&
                        got.kernelParams != NULL &&
                        *(CUdeviceptr *)got.kernelParams[0] == b &&
                        *(unsigned int *)got.kernelParams[1] == 12 &&
                        *(int *)got.kernelParams[2] == WORDS,
                    "the node's parameters are not the ones set");
    EXPECT("kernel_node_graph_destroy", cu.GraphDestroy(graph), CUDA_SUCCESS);
    EXPECT("kernel_module_unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    const char *library = NULL;
    int kernel = 0, handles = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kernel") == 0)
            kernel = 1;
        else if (strcmp(argv[i], "--handles") == 0)
            handles = 1;
        else
            library = argv[i];
    }
    cu_load(library, entries, CU_COUNT(entries));
    CUdevice dev = 0;
    CUevent done = NULL;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(primary), CUDA_SUCCESS) ||
        !EXPECT("mem_alloc_a", cu.MemAlloc(&a, WORDS * 4), CUDA_SUCCESS) ||
        !EXPECT("mem_alloc_b", cu.MemAlloc(&b, WORDS * 4), CUDA_SUCCESS) ||
        !EXPECT("stream_create", cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS) ||
        !EXPECT("event_create", cu.EventCreate(&done, 0), CUDA_SUCCESS))
        return checks_summary();
    expect_true("reset", reset(), "resetting the buffers failed");
    expect_true("is_capturing_none", capture_status() == CAPTURE_STATUS_NONE,
                "cuStreamIsCapturing is not NONE before any capture");

    CUgraph graph = capture_memsets(done);
    CUgraphExec exec = NULL;
    if (graph != NULL && EXPECT("instantiate", cu.GraphInstantiate(&exec, graph, 0), CUDA_SUCCESS)) {
        unsigned long long flags = 1;
        EXPECT("exec_get_flags", cu.GraphExecGetFlags(exec, &flags), CUDA_SUCCESS);
        expect_true("exec_flags_zero", flags == 0, "the executable graph's flags are not 0");
        EXPECT("upload", cu.GraphUpload(exec, stream), CUDA_SUCCESS);
        replay(exec, done);
        EXPECT("exec_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    }
    if (graph != NULL)
        EXPECT("graph_destroy", cu.GraphDestroy(graph), CUDA_SUCCESS);
    forbidden_calls();
    capture_to_graph();
    built_graph(done);
    memset_node(handles);

    CUgraph empty = NULL;
    EXPECT("graph_create", cu.GraphCreate(&empty, 0), CUDA_SUCCESS);
    EXPECT("graph_create_bad_flags", cu.GraphCreate(&graph, 1), CUDA_ERROR_INVALID_VALUE);
    if (handles) {
        CUgraphExec gone = NULL;
        EXPECT("empty_instantiate", cu.GraphInstantiate(&gone, empty, 0), CUDA_SUCCESS);
        EXPECT("empty_exec_destroy", cu.GraphExecDestroy(gone), CUDA_SUCCESS);
        EXPECT("destroyed_exec_launch", cu.GraphLaunch(gone, stream), CUDA_ERROR_INVALID_VALUE);
        EXPECT("destroyed_exec_destroy", cu.GraphExecDestroy(gone), CUDA_ERROR_INVALID_VALUE);
        EXPECT("empty_graph_destroy", cu.GraphDestroy(empty), CUDA_SUCCESS);
        EXPECT("destroyed_graph_destroy", cu.GraphDestroy(empty), CUDA_ERROR_INVALID_VALUE);
        EXPECT("destroyed_graph_instantiate", cu.GraphInstantiate(&gone, empty, 0),
               CUDA_ERROR_INVALID_VALUE);
        EXPECT("forged_exec_launch", cu.GraphLaunch((CUgraphExec)0x5eed0, stream),
               CUDA_ERROR_INVALID_VALUE);
    } else {
        EXPECT("empty_graph_destroy", cu.GraphDestroy(empty), CUDA_SUCCESS);
    }
    if (kernel)
        kernel_graph();
    pageable_copy(0);
    pageable_copy(1);

    EXPECT("stream_sync_end", cu.StreamSynchronize(stream), CUDA_SUCCESS);
    EXPECT("event_destroy", cu.EventDestroy(done), CUDA_SUCCESS);
    EXPECT("stream_destroy", cu.StreamDestroy(stream), CUDA_SUCCESS);
    EXPECT("mem_free_a", cu.MemFree(a), CUDA_SUCCESS);
    EXPECT("mem_free_b", cu.MemFree(b), CUDA_SUCCESS);
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
