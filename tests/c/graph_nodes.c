/*
 * graph_nodes: typed node parameters and executable-graph settings of graphs
 * built node by node.
 *
 * - event record and event wait nodes: their event, read back and replaced
 *   (in the graph and in an executable graph); a getter or setter of one kind
 *   on a node of another kind gives CUDA_ERROR_INVALID_VALUE;
 * - cuGraphNodeGetEnabled/SetEnabled: a disabled memset node does not run
 *   until enabled again; an event node cannot be disabled;
 * - cuGraphNodeFindInClone: each node's copy in a clone, and
 *   CUDA_ERROR_INVALID_VALUE for a graph that is not its clone; removing an
 *   edge that does not exist gives CUDA_ERROR_INVALID_VALUE;
 * - child graph nodes: the node runs a copy of the child graph (changing the
 *   child afterwards changes nothing), cuGraphChildGraphNodeGetGraph gives
 *   the node's own graph, and a node of another type gives
 *   CUDA_ERROR_INVALID_VALUE; an executable graph's child graph node takes
 *   another graph of the same shape;
 * - a graph whose child node holds an event record node: the event completes
 *   at each launch;
 * - host nodes: the function runs in this process, with its userData, at
 *   each launch, in order (an event recorded after a sleeping host node
 *   completes after it); its parameters read back and replaced in the graph
 *   and in an executable graph; a CUDA call from inside one returns (success
 *   or CUDA_ERROR_NOT_PERMITTED, as the driver documents), never hangs; a
 *   cuLaunchHostFunc on a capturing stream becomes a host node run at each
 *   launch;
 * - memset nodes' parameters read back and replaced, in the graph and in an
 *   executable graph; a memset getter or setter on an empty node gives
 *   CUDA_ERROR_INVALID_VALUE;
 * - memcpy nodes: host (pinned) to device to device to host, the host memory
 *   read at each launch; parameters read back and replaced in the graph and
 *   in an executable graph; a memcpy getter on a host node gives
 *   CUDA_ERROR_INVALID_VALUE.
 * - memory allocation and free nodes: the graph's allocation set, copied
 *   out and freed at each launch; their types and parameters; a free node
 *   of an address no allocation node gave is refused.
 * - graph memory attributes: read, high watermarks reset (and nothing
 *   else set), trimmed.
 * - user objects: references held by the application, a graph (retained or
 *   moved) and an executable graph; the destructor runs once, in this
 *   process, when the last one goes.
 * - memcpy nodes whose host side is pageable memory (static and stack
 *   arrays, pitched rows): read and written at each launch, the bytes
 *   between rows untouched; the nodes are memcpy nodes with the parameters
 *   given.
 * With CU_TEST_INVALID_HANDLES=1 (vgpu and its simulated device only) it also
 * adds a destroyed graph as a child and launches a destroyed executable
 * graph, which the driver documents as undefined and vgpu refuses.
 *
 * It uses no module, so it runs on the simulated device and on a real GPU
 * alike (the output is the same).
 *
 * Build:  cc -std=c11 -O2 -Wall -o graph_nodes graph_nodes.c -ldl
 * Usage:  graph_nodes [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <time.h>

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct {
    unsigned char from_port, to_port, type, reserved[5];
} CUgraphEdgeData;
typedef void (*host_fn)(void *);
typedef struct CUuserObject_st *CUuserObject;
/* CUmemLocation, CUmemAccessDesc, CUmemPoolProps (88 bytes) and
 * CUDA_MEM_ALLOC_NODE_PARAMS. */
typedef struct {
    int type, id;
} mem_location;
typedef struct {
    mem_location location;
    int flags;
} mem_access_desc;
typedef struct {
    int allocType, handleTypes;
    mem_location location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} mem_pool_props;
_Static_assert(sizeof(mem_pool_props) == 88, "CUmemPoolProps is 88 bytes");
typedef struct {
    mem_pool_props poolProps;
    const mem_access_desc *accessDescs;
    size_t accessDescCount, bytesize;
    CUdeviceptr dptr;
} mem_alloc_node_params;
typedef struct {
    host_fn fn;
    void *userData;
} CUDA_HOST_NODE_PARAMS;
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    unsigned int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    void *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    unsigned int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    void *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;
_Static_assert(sizeof(CUDA_MEMCPY3D) == 200, "CUDA_MEMCPY3D is 200 bytes");
typedef struct {
    CUdeviceptr dst;
    size_t pitch;
    unsigned int value, elementSize;
    size_t width, height;
} CUDA_MEMSET_NODE_PARAMS;

enum {
    WORDS = 256,
    CU_STREAM_NON_BLOCKING = 1,
    NODE_TYPE_MEMCPY = 1,
    NODE_TYPE_MEMSET = 2,
    MEMORY_HOST = 1,
    MEMORY_DEVICE = 2,
    NODE_TYPE_HOST = 3,
    CUDA_ERROR_NOT_PERMITTED = 800,
    NODE_TYPE_GRAPH = 4,
    NODE_TYPE_EVENT_RECORD = 7,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned int);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventQuery)(CUevent);
    CUresult (*GraphCreate)(CUgraph *, unsigned int);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*DeviceGetGraphMemAttribute)(CUdevice, int, void *);
    CUresult (*DeviceSetGraphMemAttribute)(CUdevice, int, void *);
    CUresult (*DeviceGraphMemTrim)(CUdevice);
    CUresult (*GraphAddMemAllocNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                     mem_alloc_node_params *);
    CUresult (*GraphMemAllocNodeGetParams)(CUgraphNode, mem_alloc_node_params *);
    CUresult (*GraphAddMemFreeNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                    CUdeviceptr);
    CUresult (*GraphMemFreeNodeGetParams)(CUgraphNode, CUdeviceptr *);
    CUresult (*GraphClone)(CUgraph *, CUgraph);
    CUresult (*GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
    CUresult (*GraphNodeGetType)(CUgraphNode, int *);
    CUresult (*GraphAddEmptyNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t);
    CUresult (*GraphAddMemsetNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const CUDA_MEMSET_NODE_PARAMS *, CUcontext);
    CUresult (*GraphMemsetNodeGetParams)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS *);
    CUresult (*GraphMemsetNodeSetParams)(CUgraphNode, const CUDA_MEMSET_NODE_PARAMS *);
    CUresult (*GraphExecMemsetNodeSetParams)(CUgraphExec, CUgraphNode,
                                             const CUDA_MEMSET_NODE_PARAMS *, CUcontext);
    CUresult (*GraphAddEventRecordNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                        CUevent);
    CUresult (*GraphAddEventWaitNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUevent);
    CUresult (*GraphEventRecordNodeGetEvent)(CUgraphNode, CUevent *);
    CUresult (*GraphEventRecordNodeSetEvent)(CUgraphNode, CUevent);
    CUresult (*GraphEventWaitNodeGetEvent)(CUgraphNode, CUevent *);
    CUresult (*GraphEventWaitNodeSetEvent)(CUgraphNode, CUevent);
    CUresult (*GraphExecEventRecordNodeSetEvent)(CUgraphExec, CUgraphNode, CUevent);
    CUresult (*GraphExecEventWaitNodeSetEvent)(CUgraphExec, CUgraphNode, CUevent);
    CUresult (*GraphNodeGetEnabled)(CUgraphExec, CUgraphNode, unsigned int *);
    CUresult (*GraphNodeSetEnabled)(CUgraphExec, CUgraphNode, unsigned int);
    CUresult (*GraphNodeFindInClone)(CUgraphNode *, CUgraphNode, CUgraph);
    CUresult (*GraphAddChildGraphNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                       CUgraph);
    CUresult (*GraphChildGraphNodeGetGraph)(CUgraphNode, CUgraph *);
    CUresult (*GraphExecChildGraphNodeSetParams)(CUgraphExec, CUgraphNode, CUgraph);
    CUresult (*GraphRemoveDependencies)(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t);
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*LaunchHostFunc)(CUstream, host_fn, void *);
    CUresult (*UserObjectCreate)(CUuserObject *, void *, host_fn, unsigned int, unsigned int);
    CUresult (*UserObjectRetain)(CUuserObject, unsigned int);
    CUresult (*UserObjectRelease)(CUuserObject, unsigned int);
    CUresult (*GraphRetainUserObject)(CUgraph, CUuserObject, unsigned int, unsigned int);
    CUresult (*GraphReleaseUserObject)(CUgraph, CUuserObject, unsigned int);
    CUresult (*GraphAddDependenciesV2)(CUgraph, const CUgraphNode *, const CUgraphNode *,
                                       const CUgraphEdgeData *, size_t);
    CUresult (*GraphRemoveDependenciesV2)(CUgraph, const CUgraphNode *, const CUgraphNode *,
                                          const CUgraphEdgeData *, size_t);
    CUresult (*GraphGetEdgesV2)(CUgraph, CUgraphNode *, CUgraphNode *, CUgraphEdgeData *,
                                size_t *);
    CUresult (*GraphNodeGetDependenciesV2)(CUgraphNode, CUgraphNode *, CUgraphEdgeData *,
                                           size_t *);
    CUresult (*GraphNodeGetDependentNodesV2)(CUgraphNode, CUgraphNode *, CUgraphEdgeData *,
                                             size_t *);
    CUresult (*GraphAddHostNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                 const CUDA_HOST_NODE_PARAMS *);
    CUresult (*GraphHostNodeGetParams)(CUgraphNode, CUDA_HOST_NODE_PARAMS *);
    CUresult (*GraphHostNodeSetParams)(CUgraphNode, const CUDA_HOST_NODE_PARAMS *);
    CUresult (*GraphExecHostNodeSetParams)(CUgraphExec, CUgraphNode, const CUDA_HOST_NODE_PARAMS *);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemAllocHost)(void **, size_t);
    CUresult (*MemFreeHost)(void *);
    CUresult (*GraphAddMemcpyNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const CUDA_MEMCPY3D *, CUcontext);
    CUresult (*GraphMemcpyNodeGetParams)(CUgraphNode, CUDA_MEMCPY3D *);
    CUresult (*GraphMemcpyNodeSetParams)(CUgraphNode, const CUDA_MEMCPY3D *);
    CUresult (*GraphExecMemcpyNodeSetParams)(CUgraphExec, CUgraphNode, const CUDA_MEMCPY3D *,
                                             CUcontext);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(EventCreate, "cuEventCreate"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(EventQuery, "cuEventQuery"),
    ENTRY(GraphCreate, "cuGraphCreate"),
    ENTRY(GraphDestroy, "cuGraphDestroy"),
    ENTRY(DeviceGetGraphMemAttribute, "cuDeviceGetGraphMemAttribute"),
    ENTRY(DeviceSetGraphMemAttribute, "cuDeviceSetGraphMemAttribute"),
    ENTRY(DeviceGraphMemTrim, "cuDeviceGraphMemTrim"),
    ENTRY(GraphAddMemAllocNode, "cuGraphAddMemAllocNode"),
    ENTRY(GraphMemAllocNodeGetParams, "cuGraphMemAllocNodeGetParams"),
    ENTRY(GraphAddMemFreeNode, "cuGraphAddMemFreeNode"),
    ENTRY(GraphMemFreeNodeGetParams, "cuGraphMemFreeNodeGetParams"),
    ENTRY(GraphClone, "cuGraphClone"),
    ENTRY(GraphGetNodes, "cuGraphGetNodes"),
    ENTRY(GraphNodeGetType, "cuGraphNodeGetType"),
    ENTRY(GraphAddEmptyNode, "cuGraphAddEmptyNode"),
    ENTRY(GraphAddMemsetNode, "cuGraphAddMemsetNode"),
    ENTRY(GraphMemsetNodeGetParams, "cuGraphMemsetNodeGetParams"),
    ENTRY(GraphMemsetNodeSetParams, "cuGraphMemsetNodeSetParams"),
    ENTRY(GraphExecMemsetNodeSetParams, "cuGraphExecMemsetNodeSetParams"),
    ENTRY(GraphAddEventRecordNode, "cuGraphAddEventRecordNode"),
    ENTRY(GraphAddEventWaitNode, "cuGraphAddEventWaitNode"),
    ENTRY(GraphEventRecordNodeGetEvent, "cuGraphEventRecordNodeGetEvent"),
    ENTRY(GraphEventRecordNodeSetEvent, "cuGraphEventRecordNodeSetEvent"),
    ENTRY(GraphEventWaitNodeGetEvent, "cuGraphEventWaitNodeGetEvent"),
    ENTRY(GraphEventWaitNodeSetEvent, "cuGraphEventWaitNodeSetEvent"),
    ENTRY(GraphExecEventRecordNodeSetEvent, "cuGraphExecEventRecordNodeSetEvent"),
    ENTRY(GraphExecEventWaitNodeSetEvent, "cuGraphExecEventWaitNodeSetEvent"),
    ENTRY(GraphNodeGetEnabled, "cuGraphNodeGetEnabled"),
    ENTRY(GraphNodeSetEnabled, "cuGraphNodeSetEnabled"),
    ENTRY(GraphNodeFindInClone, "cuGraphNodeFindInClone"),
    ENTRY(GraphAddChildGraphNode, "cuGraphAddChildGraphNode"),
    ENTRY(GraphChildGraphNodeGetGraph, "cuGraphChildGraphNodeGetGraph"),
    ENTRY(GraphExecChildGraphNodeSetParams, "cuGraphExecChildGraphNodeSetParams"),
    ENTRY(GraphRemoveDependencies, "cuGraphRemoveDependencies"),
    ENTRY(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    ENTRY(StreamEndCapture, "cuStreamEndCapture"),
    ENTRY(LaunchHostFunc, "cuLaunchHostFunc"),
    ENTRY(UserObjectCreate, "cuUserObjectCreate"),
    ENTRY(UserObjectRetain, "cuUserObjectRetain"),
    ENTRY(UserObjectRelease, "cuUserObjectRelease"),
    ENTRY(GraphRetainUserObject, "cuGraphRetainUserObject"),
    ENTRY(GraphReleaseUserObject, "cuGraphReleaseUserObject"),
    ENTRY(GraphAddDependenciesV2, "cuGraphAddDependencies_v2"),
    ENTRY(GraphRemoveDependenciesV2, "cuGraphRemoveDependencies_v2"),
    ENTRY(GraphGetEdgesV2, "cuGraphGetEdges_v2"),
    ENTRY(GraphNodeGetDependenciesV2, "cuGraphNodeGetDependencies_v2"),
    ENTRY(GraphNodeGetDependentNodesV2, "cuGraphNodeGetDependentNodes_v2"),
    ENTRY(GraphAddHostNode, "cuGraphAddHostNode"),
    ENTRY(GraphHostNodeGetParams, "cuGraphHostNodeGetParams"),
    ENTRY(GraphHostNodeSetParams, "cuGraphHostNodeSetParams"),
    ENTRY(GraphExecHostNodeSetParams, "cuGraphExecHostNodeSetParams"),
    ENTRY(MemGetInfo, "cuMemGetInfo_v2"),
    ENTRY(MemAllocHost, "cuMemAllocHost_v2"),
    ENTRY(MemFreeHost, "cuMemFreeHost"),
    ENTRY(GraphAddMemcpyNode, "cuGraphAddMemcpyNode"),
    ENTRY(GraphMemcpyNodeGetParams, "cuGraphMemcpyNodeGetParams"),
    ENTRY(GraphMemcpyNodeSetParams, "cuGraphMemcpyNodeSetParams"),
    ENTRY(GraphExecMemcpyNodeSetParams, "cuGraphExecMemcpyNodeSetParams"),
    ENTRY(EventSynchronize, "cuEventSynchronize"),
    ENTRY(GraphInstantiate, "cuGraphInstantiateWithFlags"),
    ENTRY(GraphLaunch, "cuGraphLaunch"),
    ENTRY(GraphExecDestroy, "cuGraphExecDestroy"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

static CUcontext ctx;

/* Whether every word at d holds v. */
static int holds(CUdeviceptr d, unsigned int v)
{
    static unsigned int host[WORDS];
    if (cu.MemcpyDtoH(host, d, sizeof host) != CUDA_SUCCESS)
        return 0;
    for (int i = 0; i < WORDS; i++)
        if (host[i] != v)
            return 0;
    return 1;
}

/* A node setting the WORDS words at d to v in graph g after dep (or none). */
static CUresult add_memset(CUgraphNode *out, CUgraph g, CUgraphNode dep, CUdeviceptr d,
                           unsigned int v)
{
    CUDA_MEMSET_NODE_PARAMS p = {d, 0, v, 4, WORDS, 1};
    return cu.GraphAddMemsetNode(out, g, dep ? &dep : NULL, dep ? 1 : 0, &p, ctx);
}

static void event_nodes(CUstream s)
{
    CUevent e1, e2;
    CUgraph g;
    CUgraphNode rec, wait, empty;
    CUevent got = NULL;
    CUgraphExec x;
    EXPECT("event_create_1", cu.EventCreate(&e1, 0), CUDA_SUCCESS);
    EXPECT("event_create_2", cu.EventCreate(&e2, 0), CUDA_SUCCESS);
    EXPECT("event_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS);
    EXPECT("add_record", cu.GraphAddEventRecordNode(&rec, g, NULL, 0, e1), CUDA_SUCCESS);
    EXPECT("add_wait", cu.GraphAddEventWaitNode(&wait, g, &rec, 1, e1), CUDA_SUCCESS);
    EXPECT("add_empty", cu.GraphAddEmptyNode(&empty, g, &wait, 1), CUDA_SUCCESS);
    EXPECT("record_get", cu.GraphEventRecordNodeGetEvent(rec, &got), CUDA_SUCCESS);
    expect_true("record_get_event", got == e1, "the record node's event is not the one given");
    EXPECT("record_set", cu.GraphEventRecordNodeSetEvent(rec, e2), CUDA_SUCCESS);
    EXPECT("record_get_again", cu.GraphEventRecordNodeGetEvent(rec, &got), CUDA_SUCCESS);
    expect_true("record_set_event", got == e2, "the record node did not take the new event");
    EXPECT("wait_get", cu.GraphEventWaitNodeGetEvent(wait, &got), CUDA_SUCCESS);
    expect_true("wait_get_event", got == e1, "the wait node's event is not the one given");
    EXPECT("wait_set", cu.GraphEventWaitNodeSetEvent(wait, e2), CUDA_SUCCESS);
    EXPECT("wait_get_again", cu.GraphEventWaitNodeGetEvent(wait, &got), CUDA_SUCCESS);
    expect_true("wait_set_event", got == e2, "the wait node did not take the new event");
    /* A typed getter or setter on a node of another type. */
    EXPECT("record_get_on_wait", cu.GraphEventRecordNodeGetEvent(wait, &got),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("wait_get_on_record", cu.GraphEventWaitNodeGetEvent(rec, &got),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("record_get_on_empty", cu.GraphEventRecordNodeGetEvent(empty, &got),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("wait_set_on_empty", cu.GraphEventWaitNodeSetEvent(empty, e1),
           CUDA_ERROR_INVALID_VALUE);
    /* In an executable graph. */
    EXPECT("event_instantiate", cu.GraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    EXPECT("exec_record_set", cu.GraphExecEventRecordNodeSetEvent(x, rec, e1), CUDA_SUCCESS);
    EXPECT("exec_wait_set", cu.GraphExecEventWaitNodeSetEvent(x, wait, e1), CUDA_SUCCESS);
    EXPECT("exec_record_set_on_wait", cu.GraphExecEventRecordNodeSetEvent(x, wait, e2),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("exec_wait_set_on_empty", cu.GraphExecEventWaitNodeSetEvent(x, empty, e2),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("exec_record_keeps_graph", cu.GraphEventRecordNodeGetEvent(rec, &got), CUDA_SUCCESS);
    expect_true("exec_set_leaves_graph", got == e2,
                "setting the executable graph's event changed the graph's node");
    EXPECT("event_launch", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("event_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT("event_recorded", cu.EventQuery(e1), CUDA_SUCCESS);
    /* Event nodes cannot be disabled. */
    unsigned int on = 7;
    EXPECT("enabled_on_event", cu.GraphNodeGetEnabled(x, rec, &on), CUDA_ERROR_INVALID_VALUE);
    EXPECT("disable_event", cu.GraphNodeSetEnabled(x, rec, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT("event_exec_destroy", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    EXPECT("event_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
    EXPECT("event_destroy_1", cu.EventDestroy(e1), CUDA_SUCCESS);
    EXPECT("event_destroy_2", cu.EventDestroy(e2), CUDA_SUCCESS);
}

static void enabled_nodes(CUstream s, CUdeviceptr d)
{
    CUgraph g;
    CUgraphNode set;
    CUgraphExec x;
    unsigned int on = 7;
    EXPECT("enable_memset_zero", cu.MemsetD32(d, 0, WORDS), CUDA_SUCCESS);
    EXPECT("enable_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS);
    EXPECT("enable_add_memset", add_memset(&set, g, NULL, d, 3), CUDA_SUCCESS);
    EXPECT("enable_instantiate", cu.GraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    EXPECT("enabled_get", cu.GraphNodeGetEnabled(x, set, &on), CUDA_SUCCESS);
    expect_true("enabled_at_first", on == 1, "a fresh node is not enabled");
    EXPECT("disable", cu.GraphNodeSetEnabled(x, set, 0), CUDA_SUCCESS);
    EXPECT("enabled_get_disabled", cu.GraphNodeGetEnabled(x, set, &on), CUDA_SUCCESS);
    expect_true("disabled_reads_0", on == 0, "a disabled node reads as enabled");
    EXPECT("disabled_launch", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("disabled_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("disabled_did_not_run", holds(d, 0), "a disabled memset node ran");
    EXPECT("enable", cu.GraphNodeSetEnabled(x, set, 1), CUDA_SUCCESS);
    EXPECT("enabled_launch", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("enabled_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("enabled_ran", holds(d, 3), "a re-enabled memset node did not run");
    /* The memset node's parameters, read back and replaced. */
    CUDA_MEMSET_NODE_PARAMS got;
    memset(&got, 0, sizeof got);
    EXPECT("memset_get", cu.GraphMemsetNodeGetParams(set, &got), CUDA_SUCCESS);
    expect_true("memset_get_params",
                got.dst == d && got.value == 3 && got.elementSize == 4 && got.width == WORDS &&
                    got.height == 1,
                "the memset node's parameters are not the ones given");
    CUDA_MEMSET_NODE_PARAMS five = {d, 0, 5, 4, WORDS, 1}, six = {d, 0, 6, 4, WORDS, 1};
    EXPECT("memset_exec_set", cu.GraphExecMemsetNodeSetParams(x, set, &five, ctx), CUDA_SUCCESS);
    EXPECT("memset_exec_set_launch", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("memset_exec_set_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("memset_exec_set_ran", holds(d, 5), "the executable graph's memset did not change");
    EXPECT("memset_get_after_exec_set", cu.GraphMemsetNodeGetParams(set, &got), CUDA_SUCCESS);
    expect_true("memset_graph_kept_params", got.value == 3,
                "setting the executable graph's node changed the graph's");
    EXPECT("memset_set", cu.GraphMemsetNodeSetParams(set, &six), CUDA_SUCCESS);
    EXPECT("memset_get_after_set", cu.GraphMemsetNodeGetParams(set, &got), CUDA_SUCCESS);
    expect_true("memset_set_params", got.value == 6, "the memset node did not take its new value");
    EXPECT("enable_exec_destroy", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    EXPECT("memset_instantiate_2", cu.GraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    EXPECT("memset_launch_2", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("memset_synchronize_2", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("memset_set_ran", holds(d, 6), "a graph instantiated after the set did not use it");
    CUgraphNode empty;
    EXPECT("memset_add_empty", cu.GraphAddEmptyNode(&empty, g, NULL, 0), CUDA_SUCCESS);
    EXPECT("memset_get_on_empty", cu.GraphMemsetNodeGetParams(empty, &got),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("memset_set_on_empty", cu.GraphMemsetNodeSetParams(empty, &six),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("memset_exec_destroy_2", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    EXPECT("enable_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

/* What the host nodes' functions record: globals of this program. */
static pid_t main_pid;
static int host_runs, host_same_pid, other_runs, slept;
static void *host_seen;
static int tag_a = 1, tag_b = 2;
static CUresult inner_result = -1;

static void count_run(void *data)
{
    host_runs++;
    host_seen = data;
    host_same_pid = getpid() == main_pid;
}

static void other_run(void *data)
{
    (void)data;
    other_runs++;
}

static void sleeper(void *data)
{
    (void)data;
    struct timespec t = {0, 200 * 1000 * 1000};
    nanosleep(&t, NULL);
    slept = 1;
}

static void calls_cuda(void *data)
{
    (void)data;
    size_t f, t;
    inner_result = cu.MemGetInfo(&f, &t);
}

static void host_nodes(CUstream s, CUdeviceptr d)
{
    CUgraph g;
    CUgraphNode before, host, after, sleep_node, rec;
    CUgraphExec x;
    CUevent e;
    int type = -1;
    CUDA_HOST_NODE_PARAMS p = {count_run, &tag_a}, got = {NULL, NULL};
    EXPECT("host_event", cu.EventCreate(&e, 0), CUDA_SUCCESS);
    EXPECT("host_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS);
    EXPECT("host_add_before", add_memset(&before, g, NULL, d, 1), CUDA_SUCCESS);
    EXPECT("host_add", cu.GraphAddHostNode(&host, g, &before, 1, &p), CUDA_SUCCESS);
    EXPECT("host_add_after", add_memset(&after, g, host, d, 2), CUDA_SUCCESS);
    EXPECT("host_type", cu.GraphNodeGetType(host, &type), CUDA_SUCCESS);
    expect_true("host_is_host_node", type == NODE_TYPE_HOST, "the node is not a host node");
    EXPECT("host_get", cu.GraphHostNodeGetParams(host, &got), CUDA_SUCCESS);
    expect_true("host_get_params", got.fn == count_run && got.userData == &tag_a,
                "the host node's parameters are not the ones given");
    EXPECT("host_get_on_memset", cu.GraphHostNodeGetParams(after, &got), CUDA_ERROR_INVALID_VALUE);
    CUDA_HOST_NODE_PARAMS null_fn = {NULL, &tag_a};
    CUgraphNode unused;
    EXPECT("host_add_null_fn", cu.GraphAddHostNode(&unused, g, NULL, 0, &null_fn),
           CUDA_ERROR_INVALID_VALUE);
    /* A sleeping host node delays the event recorded after it. */
    CUDA_HOST_NODE_PARAMS sp = {sleeper, NULL};
    EXPECT("host_add_sleeper", cu.GraphAddHostNode(&sleep_node, g, &after, 1, &sp), CUDA_SUCCESS);
    EXPECT("host_add_record", cu.GraphAddEventRecordNode(&rec, g, &sleep_node, 1, e), CUDA_SUCCESS);
    EXPECT("host_instantiate", cu.GraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    EXPECT("host_launch", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("host_event_sync", cu.EventSynchronize(e), CUDA_SUCCESS);
    expect_true("host_event_waited", slept == 1, "the event completed before the host node ran");
    EXPECT("host_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("host_ran_once", host_runs == 1, "the host node did not run exactly once");
    expect_true("host_user_data", host_seen == &tag_a, "the host node got another userData");
    expect_true("host_in_process", host_same_pid, "the host node ran in another process");
    expect_true("host_after_ran", holds(d, 2), "the memset after the host node did not run last");
    EXPECT("host_launch_2", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("host_synchronize_2", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("host_ran_twice", host_runs == 2, "the host node did not run at each launch");
    /* The executable graph's copy takes new parameters; the graph's keeps its own. */
    CUDA_HOST_NODE_PARAMS other = {other_run, &tag_b};
    EXPECT("host_exec_set", cu.GraphExecHostNodeSetParams(x, host, &other), CUDA_SUCCESS);
    EXPECT("host_exec_set_on_memset", cu.GraphExecHostNodeSetParams(x, after, &other),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("host_launch_3", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("host_synchronize_3", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("host_exec_set_ran", other_runs == 1 && host_runs == 2,
                "the executable graph did not run its new host function");
    EXPECT("host_get_after_exec_set", cu.GraphHostNodeGetParams(host, &got), CUDA_SUCCESS);
    expect_true("host_graph_kept_params", got.fn == count_run,
                "setting the executable graph's node changed the graph's");
    /* The graph's node takes new parameters: a host function that calls CUDA. */
    CUDA_HOST_NODE_PARAMS inner = {calls_cuda, NULL};
    EXPECT("host_set", cu.GraphHostNodeSetParams(host, &inner), CUDA_SUCCESS);
    EXPECT("host_get_after_set", cu.GraphHostNodeGetParams(host, &got), CUDA_SUCCESS);
    expect_true("host_set_params", got.fn == calls_cuda && got.userData == NULL,
                "the host node did not take the new parameters");
    EXPECT("host_exec_destroy", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    EXPECT("host_instantiate_2", cu.GraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    EXPECT("host_launch_inner", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("host_synchronize_inner", cu.StreamSynchronize(s), CUDA_SUCCESS);
    /* The driver documents that host functions must not call CUDA, and that
     * such a call may return CUDA_ERROR_NOT_PERMITTED: either answer, never
     * a hang. */
    expect_true("host_inner_call_returned",
                inner_result == CUDA_SUCCESS || inner_result == CUDA_ERROR_NOT_PERMITTED,
                "the CUDA call from the host function did not return");
    EXPECT("host_exec_destroy_2", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    /* cuLaunchHostFunc on a capturing stream: a host node, run at each launch. */
    CUgraph captured = NULL;
    CUgraphNode nodes[2];
    size_t count = 2;
    int runs_before = other_runs;
    EXPECT("host_capture_begin", cu.StreamBeginCapture(s, 0), CUDA_SUCCESS);
    EXPECT("host_capture_launch_host_func", cu.LaunchHostFunc(s, other_run, &tag_b), CUDA_SUCCESS);
    EXPECT("host_capture_end", cu.StreamEndCapture(s, &captured), CUDA_SUCCESS);
    expect_true("host_capture_ran_nothing", other_runs == runs_before,
                "the captured host function ran at capture");
    EXPECT("host_capture_nodes", cu.GraphGetNodes(captured, nodes, &count), CUDA_SUCCESS);
    type = -1;
    if (count == 1)
        cu.GraphNodeGetType(nodes[0], &type);
    expect_true("host_capture_is_host_node", count == 1 && type == NODE_TYPE_HOST,
                "the capture did not make one host node");
    EXPECT("host_capture_instantiate", cu.GraphInstantiate(&x, captured, 0), CUDA_SUCCESS);
    EXPECT("host_capture_launch", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("host_capture_launch_2", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("host_capture_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("host_capture_ran_twice", other_runs == runs_before + 2,
                "the captured host function did not run at each launch");
    EXPECT("host_capture_exec_destroy", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    EXPECT("host_capture_graph_destroy", cu.GraphDestroy(captured), CUDA_SUCCESS);
    EXPECT("host_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
    EXPECT("host_event_destroy", cu.EventDestroy(e), CUDA_SUCCESS);
}

/* A copy of `bytes` bytes between host memory and device memory. */
static CUDA_MEMCPY3D linear(unsigned int src_type, const void *src_host, CUdeviceptr src_dev,
                            unsigned int dst_type, void *dst_host, CUdeviceptr dst_dev,
                            size_t bytes)
{
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = src_type;
    c.srcHost = src_host;
    c.srcDevice = src_dev;
    c.dstMemoryType = dst_type;
    c.dstHost = dst_host;
    c.dstDevice = dst_dev;
    c.WidthInBytes = bytes;
    c.Height = 1;
    c.Depth = 1;
    return c;
}

static void memcpy_nodes(CUstream s, CUdeviceptr d, CUdeviceptr d2)
{
    unsigned int *in = NULL, *out = NULL;
    CUgraph g;
    CUgraphNode up, across, down, host_node;
    CUgraphExec x;
    CUDA_MEMCPY3D got;
    int type = -1;
    const size_t bytes = WORDS * 4;
    if (!EXPECT("memcpy_pinned_in", cu.MemAllocHost((void **)&in, bytes), CUDA_SUCCESS) ||
        !EXPECT("memcpy_pinned_out", cu.MemAllocHost((void **)&out, bytes), CUDA_SUCCESS))
        return;
    for (int i = 0; i < WORDS; i++)
        in[i] = 1000 + i;
    memset(out, 0, bytes);
    EXPECT("memcpy_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS);
    CUDA_MEMCPY3D c_up = linear(MEMORY_HOST, in, 0, MEMORY_DEVICE, NULL, d, bytes);
    CUDA_MEMCPY3D c_across = linear(MEMORY_DEVICE, NULL, d, MEMORY_DEVICE, NULL, d2, bytes);
    CUDA_MEMCPY3D c_down = linear(MEMORY_DEVICE, NULL, d2, MEMORY_HOST, out, 0, bytes);
    EXPECT("memcpy_add_up", cu.GraphAddMemcpyNode(&up, g, NULL, 0, &c_up, ctx), CUDA_SUCCESS);
    EXPECT("memcpy_add_across", cu.GraphAddMemcpyNode(&across, g, &up, 1, &c_across, ctx),
           CUDA_SUCCESS);
    EXPECT("memcpy_add_down", cu.GraphAddMemcpyNode(&down, g, &across, 1, &c_down, ctx),
           CUDA_SUCCESS);
    EXPECT("memcpy_type", cu.GraphNodeGetType(up, &type), CUDA_SUCCESS);
    expect_true("memcpy_is_memcpy_node", type == NODE_TYPE_MEMCPY, "the node is not a memcpy node");
    memset(&got, 0, sizeof got);
    EXPECT("memcpy_get", cu.GraphMemcpyNodeGetParams(up, &got), CUDA_SUCCESS);
    expect_true("memcpy_get_params",
                got.srcMemoryType == MEMORY_HOST && got.srcHost == in &&
                    got.dstMemoryType == MEMORY_DEVICE && got.dstDevice == d &&
                    got.WidthInBytes == bytes && got.Height == 1 && got.Depth == 1,
                "the memcpy node's parameters are not the ones given");
    CUDA_HOST_NODE_PARAMS hp = {other_run, NULL};
    EXPECT("memcpy_add_host", cu.GraphAddHostNode(&host_node, g, NULL, 0, &hp), CUDA_SUCCESS);
    EXPECT("memcpy_get_on_host", cu.GraphMemcpyNodeGetParams(host_node, &got),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("memcpy_instantiate", cu.GraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    EXPECT("memcpy_launch", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("memcpy_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    int same = 1;
    for (int i = 0; i < WORDS; i++)
        same &= out[i] == 1000u + i;
    expect_true("memcpy_round_trip", same, "host to device to device to host lost the data");
    /* The copies read the host memory at each launch. */
    for (int i = 0; i < WORDS; i++)
        in[i] = 7;
    EXPECT("memcpy_launch_2", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("memcpy_synchronize_2", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("memcpy_reads_at_launch", out[0] == 7 && out[WORDS - 1] == 7,
                "the second launch did not copy the new host data");
    /* The executable graph's middle copy goes the other way (d2 to d), so the
     * last copy reads d2 as set before the launch; the graph's own node takes
     * other parameters, which the executable graph does not see. */
    CUDA_MEMCPY3D c_back = linear(MEMORY_DEVICE, NULL, d2, MEMORY_DEVICE, NULL, d, bytes);
    EXPECT("memcpy_exec_set", cu.GraphExecMemcpyNodeSetParams(x, across, &c_back, ctx),
           CUDA_SUCCESS);
    EXPECT("memcpy_exec_set_on_host", cu.GraphExecMemcpyNodeSetParams(x, host_node, &c_back, ctx),
           CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY3D c_direct = linear(MEMORY_DEVICE, NULL, d, MEMORY_HOST, out, 0, bytes);
    EXPECT("memcpy_set_node", cu.GraphMemcpyNodeSetParams(across, &c_direct), CUDA_SUCCESS);
    EXPECT("memcpy_get_after_set", cu.GraphMemcpyNodeGetParams(across, &got), CUDA_SUCCESS);
    expect_true("memcpy_set_params", got.dstMemoryType == MEMORY_HOST && got.dstHost == out,
                "the memcpy node did not take the new parameters");
    EXPECT("memcpy_set_d2", cu.MemsetD32(d2, 99, WORDS), CUDA_SUCCESS);
    EXPECT("memcpy_launch_3", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("memcpy_synchronize_3", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("memcpy_exec_set_ran", out[0] == 99 && out[WORDS - 1] == 99,
                "the executable graph's middle copy did not take its new direction");
    EXPECT("memcpy_exec_destroy", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    EXPECT("memcpy_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
    EXPECT("memcpy_free_in", cu.MemFreeHost(in), CUDA_SUCCESS);
    EXPECT("memcpy_free_out", cu.MemFreeHost(out), CUDA_SUCCESS);
}

/* Memcpy nodes whose host side is pageable memory of this process (a static
 * array to the device, then the device to a stack array, four 16-byte rows
 * 32 bytes apart): each launch reads and writes that memory then, and the
 * bytes between the rows stay as they were. */
static void pageable_memcpy_nodes(CUstream s, CUdeviceptr d)
{
    static unsigned int plain[WORDS];
    unsigned char rows[4 * 32];
    CUgraph g;
    CUgraphNode up, down;
    CUgraphExec x;
    CUDA_MEMCPY3D got;
    int type = -1;
    for (int i = 0; i < WORDS; i++)
        plain[i] = 500 + i;
    memset(rows, 0xEE, sizeof rows);
    EXPECT("pageable_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS);
    CUDA_MEMCPY3D c_up = linear(MEMORY_HOST, plain, 0, MEMORY_DEVICE, NULL, d, WORDS * 4);
    CUDA_MEMCPY3D c_down = linear(MEMORY_DEVICE, NULL, d + 4, MEMORY_HOST, rows, 0, 16);
    c_down.srcPitch = 16;
    c_down.dstPitch = 32;
    c_down.Height = 4;
    EXPECT("pageable_add_up", cu.GraphAddMemcpyNode(&up, g, NULL, 0, &c_up, ctx), CUDA_SUCCESS);
    EXPECT("pageable_add_down", cu.GraphAddMemcpyNode(&down, g, &up, 1, &c_down, ctx),
           CUDA_SUCCESS);
    EXPECT("pageable_type", cu.GraphNodeGetType(down, &type), CUDA_SUCCESS);
    expect_true("pageable_is_memcpy_node", type == NODE_TYPE_MEMCPY,
                "the node is not a memcpy node");
    memset(&got, 0, sizeof got);
    EXPECT("pageable_get", cu.GraphMemcpyNodeGetParams(down, &got), CUDA_SUCCESS);
    expect_true("pageable_get_params",
                got.srcMemoryType == MEMORY_DEVICE && got.srcDevice == d + 4 &&
                    got.dstMemoryType == MEMORY_HOST && got.dstHost == rows &&
                    got.dstPitch == 32 && got.WidthInBytes == 16 && got.Height == 4,
                "the memcpy node's parameters are not the ones given");
    EXPECT("pageable_instantiate", cu.GraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    for (int launch = 0; launch < 2; launch++) {
        EXPECT(launch ? "pageable_launch_2" : "pageable_launch", cu.GraphLaunch(x, s),
               CUDA_SUCCESS);
        EXPECT(launch ? "pageable_synchronize_2" : "pageable_synchronize",
               cu.StreamSynchronize(s), CUDA_SUCCESS);
        int same = 1;
        for (int r = 0; r < 4; r++) {
            unsigned int v[4];
            memcpy(v, rows + r * 32, sizeof v);
            for (int i = 0; i < 4; i++)
                same &= v[i] == plain[1 + r * 4 + i];
            for (int i = 16; i < 32; i++)
                same &= rows[r * 32 + i] == 0xEE;
        }
        expect_true(launch ? "pageable_round_trip_2" : "pageable_round_trip", same,
                    "the rows do not hold the pageable source, or a gap was written");
        /* The next launch reads the new values. */
        for (int i = 0; i < WORDS; i++)
            plain[i] = 9000 + i;
    }
    EXPECT("pageable_exec_destroy", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    EXPECT("pageable_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

/* What the user objects' destructors record. */
static volatile int destroyed_a, destroyed_b, destructor_same_pid;

static void destroy_object(void *data)
{
    *(volatile int *)data += 1;
    destructor_same_pid = getpid() == main_pid;
}

/* Waits up to 5 s for *flag to become 1 (the driver may run a destructor on
 * its own thread, after the call that released the last reference). */
static int eventually(volatile int *flag)
{
    for (int i = 0; i < 500 && *flag == 0; i++) {
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    return *flag == 1;
}

static void user_objects(CUstream s)
{
    enum { NO_DESTRUCTOR_SYNC = 1, MOVE = 1 };
    CUuserObject a = NULL, b = NULL, bad;
    CUgraph g;
    CUgraphExec x;
    EXPECT("user_create", cu.UserObjectCreate(&a, (void *)&destroyed_a, destroy_object, 1,
                                              NO_DESTRUCTOR_SYNC),
           CUDA_SUCCESS);
    EXPECT("user_create_null_destructor", cu.UserObjectCreate(&bad, NULL, NULL, 1,
                                                              NO_DESTRUCTOR_SYNC),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("user_retain", cu.UserObjectRetain(a, 2), CUDA_SUCCESS);
    EXPECT("user_release_two", cu.UserObjectRelease(a, 2), CUDA_SUCCESS);
    expect_true("user_alive", destroyed_a == 0, "the destructor ran while a reference was held");
    /* A graph holds a reference; the application's last one goes. */
    EXPECT("user_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS);
    EXPECT("user_graph_retain", cu.GraphRetainUserObject(g, a, 1, 0), CUDA_SUCCESS);
    EXPECT("user_release_last_own", cu.UserObjectRelease(a, 1), CUDA_SUCCESS);
    expect_true("user_graph_keeps_alive", destroyed_a == 0, "the graph's reference did not count");
    EXPECT("user_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
    expect_true("user_destroyed_with_graph", eventually(&destroyed_a),
                "the destructor did not run once when the graph went");
    expect_true("user_destructor_in_process", destructor_same_pid,
                "the destructor ran in another process");
    /* A reference moved to a graph, then held by its executable graph. */
    EXPECT("user_create_b", cu.UserObjectCreate(&b, (void *)&destroyed_b, destroy_object, 1,
                                                NO_DESTRUCTOR_SYNC),
           CUDA_SUCCESS);
    EXPECT("user_graph_b", cu.GraphCreate(&g, 0), CUDA_SUCCESS);
    EXPECT("user_graph_move", cu.GraphRetainUserObject(g, b, 1, MOVE), CUDA_SUCCESS);
    EXPECT("user_instantiate", cu.GraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    EXPECT("user_graph_b_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
    EXPECT("user_launch", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("user_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("user_exec_keeps_alive", destroyed_b == 0,
                "the executable graph's reference did not count");
    EXPECT("user_exec_destroy", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    expect_true("user_destroyed_with_exec", eventually(&destroyed_b),
                "the destructor did not run once when the executable graph went");
}

static void clones(void)
{
    CUgraph g, copy, other;
    CUgraphNode a, b, found = NULL;
    int type = -1;
    EXPECT("clone_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS);
    EXPECT("clone_add_a", cu.GraphAddEmptyNode(&a, g, NULL, 0), CUDA_SUCCESS);
    EXPECT("clone_add_b", cu.GraphAddEmptyNode(&b, g, &a, 1), CUDA_SUCCESS);
    EXPECT("clone", cu.GraphClone(&copy, g), CUDA_SUCCESS);
    EXPECT("find_a", cu.GraphNodeFindInClone(&found, a, copy), CUDA_SUCCESS);
    expect_true("find_a_is_copy", found != NULL && found != a, "no distinct copy of node a");
    EXPECT("find_a_type", cu.GraphNodeGetType(found, &type), CUDA_SUCCESS);
    expect_true("find_a_same_type", type == 5, "the copy of an empty node is not empty");
    CUgraphNode found_b = NULL;
    EXPECT("find_b", cu.GraphNodeFindInClone(&found_b, b, copy), CUDA_SUCCESS);
    expect_true("find_b_distinct", found_b != NULL && found_b != found,
                "nodes a and b have the same copy");
    /* Edges with data (_v2): the one edge a -> b, default data. */
    CUgraphNode from[2] = {NULL, NULL}, to[2] = {NULL, NULL};
    CUgraphEdgeData data[2];
    memset(data, 0xff, sizeof data);
    size_t count = 2;
    EXPECT("edges_v2", cu.GraphGetEdgesV2(g, from, to, data, &count), CUDA_SUCCESS);
    expect_true("edges_v2_one_default",
                count == 1 && from[0] == a && to[0] == b && data[0].from_port == 0 &&
                    data[0].to_port == 0 && data[0].type == 0,
                "the graph's edge, with default data, did not come back");
    count = 2;
    EXPECT("dependencies_v2", cu.GraphNodeGetDependenciesV2(b, from, data, &count), CUDA_SUCCESS);
    expect_true("dependencies_v2_a", count == 1 && from[0] == a, "b does not depend on a");
    count = 2;
    EXPECT("dependents_v2", cu.GraphNodeGetDependentNodesV2(a, to, NULL, &count), CUDA_SUCCESS);
    expect_true("dependents_v2_b", count == 1 && to[0] == b, "a has not b as dependent");
    CUgraphEdgeData plain = {0, 0, 0, {0, 0, 0, 0, 0}};
    EXPECT("remove_edge_v2", cu.GraphRemoveDependenciesV2(g, &a, &b, &plain, 1), CUDA_SUCCESS);
    EXPECT("remove_edge_v2_again", cu.GraphRemoveDependenciesV2(g, &a, &b, NULL, 1),
           CUDA_ERROR_INVALID_VALUE);
    count = 2;
    EXPECT("edges_v2_none", cu.GraphGetEdgesV2(g, NULL, NULL, NULL, &count), CUDA_SUCCESS);
    expect_true("edges_v2_zero", count == 0, "the removed edge is still counted");
    EXPECT("add_edge_v2", cu.GraphAddDependenciesV2(g, &a, &b, NULL, 1), CUDA_SUCCESS);
    /* Removing an edge that does not exist (b -> a; the edge is a -> b). */
    EXPECT("remove_missing_edge", cu.GraphRemoveDependencies(g, &b, &a, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT("remove_edge", cu.GraphRemoveDependencies(g, &a, &b, 1), CUDA_SUCCESS);
    EXPECT("remove_edge_again", cu.GraphRemoveDependencies(g, &a, &b, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT("other_graph", cu.GraphCreate(&other, 0), CUDA_SUCCESS);
    EXPECT("find_in_not_clone", cu.GraphNodeFindInClone(&found, a, other),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("find_in_original", cu.GraphNodeFindInClone(&found, a, g), CUDA_ERROR_INVALID_VALUE);
    EXPECT("clone_destroy_other", cu.GraphDestroy(other), CUDA_SUCCESS);
    EXPECT("clone_destroy_copy", cu.GraphDestroy(copy), CUDA_SUCCESS);
    EXPECT("clone_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

static void child_graphs(CUstream s, CUdeviceptr d, CUdeviceptr d2)
{
    CUgraph child, parent, inner = NULL;
    CUgraphNode set, node, after, extra;
    CUgraphExec x;
    CUevent e;
    size_t n = 0;
    int type = -1;
    EXPECT("child_zero", cu.MemsetD32(d, 0, WORDS), CUDA_SUCCESS);
    EXPECT("child_zero_2", cu.MemsetD32(d2, 0, WORDS), CUDA_SUCCESS);
    EXPECT("child_event", cu.EventCreate(&e, 0), CUDA_SUCCESS);
    EXPECT("child_create", cu.GraphCreate(&child, 0), CUDA_SUCCESS);
    EXPECT("child_add_memset", add_memset(&set, child, NULL, d, 5), CUDA_SUCCESS);
    EXPECT("child_add_record", cu.GraphAddEventRecordNode(&extra, child, &set, 1, e),
           CUDA_SUCCESS);
    EXPECT("parent_create", cu.GraphCreate(&parent, 0), CUDA_SUCCESS);
    EXPECT("add_child", cu.GraphAddChildGraphNode(&node, parent, NULL, 0, child), CUDA_SUCCESS);
    EXPECT("add_after_child", add_memset(&after, parent, node, d2, 6), CUDA_SUCCESS);
    EXPECT("child_type", cu.GraphNodeGetType(node, &type), CUDA_SUCCESS);
    expect_true("child_is_graph_node", type == NODE_TYPE_GRAPH, "the node is not a child graph node");
    EXPECT("child_get_graph", cu.GraphChildGraphNodeGetGraph(node, &inner), CUDA_SUCCESS);
    expect_true("child_graph_is_copy", inner != NULL && inner != child,
                "the node's graph is the one it was made from");
    EXPECT("child_graph_nodes", cu.GraphGetNodes(inner, NULL, &n), CUDA_SUCCESS);
    expect_true("child_graph_two_nodes", n == 2, "the node's graph does not hold two nodes");
    EXPECT("child_get_graph_on_memset", cu.GraphChildGraphNodeGetGraph(after, &inner),
           CUDA_ERROR_INVALID_VALUE);
    /* Changing the child afterwards changes nothing in the parent. */
    CUgraphNode late;
    EXPECT("child_add_late", add_memset(&late, child, NULL, d2, 9), CUDA_SUCCESS);
    EXPECT("parent_instantiate", cu.GraphInstantiate(&x, parent, 0), CUDA_SUCCESS);
    EXPECT("parent_launch", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("parent_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("child_ran", holds(d, 5), "the child graph's memset did not run");
    expect_true("after_child_ran", holds(d2, 6),
                "the node after the child did not run last, or the late node ran");
    EXPECT("child_event_recorded", cu.EventQuery(e), CUDA_SUCCESS);
    /* A second launch runs it again. */
    EXPECT("child_rezero", cu.MemsetD32(d, 0, WORDS), CUDA_SUCCESS);
    EXPECT("parent_launch_2", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("parent_synchronize_2", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("child_ran_again", holds(d, 5), "the child graph did not run at the second launch");
    if (invalid_handle_checks()) {
        /* The driver crashes on a graph made a child of itself. */
        EXPECT("child_self", cu.GraphAddChildGraphNode(&late, child, NULL, 0, child),
               CUDA_ERROR_INVALID_VALUE);
    }
    /* The executable graph's child node takes another graph of the same shape. */
    CUgraph child2;
    CUgraphNode set2, rec2;
    EXPECT("child2_create", cu.GraphCreate(&child2, 0), CUDA_SUCCESS);
    EXPECT("child2_add_memset", add_memset(&set2, child2, NULL, d, 7), CUDA_SUCCESS);
    EXPECT("child2_add_record", cu.GraphAddEventRecordNode(&rec2, child2, &set2, 1, e), CUDA_SUCCESS);
    EXPECT("exec_child_set", cu.GraphExecChildGraphNodeSetParams(x, node, child2), CUDA_SUCCESS);
    EXPECT("exec_child_set_on_memset", cu.GraphExecChildGraphNodeSetParams(x, after, child2),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("parent_launch_3", cu.GraphLaunch(x, s), CUDA_SUCCESS);
    EXPECT("parent_synchronize_3", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("exec_child_set_ran", holds(d, 7), "the executable graph's child did not change");
    EXPECT("child2_destroy", cu.GraphDestroy(child2), CUDA_SUCCESS);
    EXPECT("parent_exec_destroy", cu.GraphExecDestroy(x), CUDA_SUCCESS);

    if (invalid_handle_checks()) {
        CUgraph gone;
        CUgraphExec gone_x;
        EXPECT("gone_create", cu.GraphCreate(&gone, 0), CUDA_SUCCESS);
        EXPECT("gone_destroy", cu.GraphDestroy(gone), CUDA_SUCCESS);
        EXPECT("add_destroyed_child", cu.GraphAddChildGraphNode(&late, parent, NULL, 0, gone),
               CUDA_ERROR_INVALID_VALUE);
        EXPECT("gone_exec_instantiate", cu.GraphInstantiate(&gone_x, parent, 0), CUDA_SUCCESS);
        EXPECT("gone_exec_destroy", cu.GraphExecDestroy(gone_x), CUDA_SUCCESS);
        EXPECT("launch_destroyed_exec", cu.GraphLaunch(gone_x, s), CUDA_ERROR_INVALID_VALUE);
        EXPECT("launch_uninstantiated", cu.GraphLaunch((CUgraphExec)parent, s),
               CUDA_ERROR_INVALID_VALUE);
    }
    EXPECT("parent_destroy", cu.GraphDestroy(parent), CUDA_SUCCESS);
    EXPECT("child_destroy", cu.GraphDestroy(child), CUDA_SUCCESS);
    EXPECT("child_event_destroy", cu.EventDestroy(e), CUDA_SUCCESS);
}

/* Memory allocation and free nodes: an allocation of the graph, set by a
 * memset node and copied to d by a memcpy node, then freed, at each launch;
 * the nodes' types and parameters; a free node of an address no allocation
 * node gave is refused. */
static void memory_nodes(CUstream s, CUdeviceptr d, CUdevice dev)
{
    enum { NODE_TYPE_MEM_ALLOC = 10, NODE_TYPE_MEM_FREE = 11, ON_DEVICE = 1, READ_WRITE = 3 };
    CUgraph g;
    CUgraphNode alloc, set, copy, freed, refused;
    CUgraphExec x;
    mem_access_desc access = {{ON_DEVICE, dev}, READ_WRITE};
    mem_alloc_node_params p, got;
    int type = -1;
    CUdeviceptr at = 1;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = 1; /* CU_MEM_ALLOCATION_TYPE_PINNED */
    p.poolProps.location.type = ON_DEVICE;
    p.poolProps.location.id = dev;
    p.accessDescs = &access;
    p.accessDescCount = 1;
    p.bytesize = WORDS * 4;
    EXPECT("alloc_node_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS);
    if (!EXPECT("alloc_node_add", cu.GraphAddMemAllocNode(&alloc, g, NULL, 0, &p), CUDA_SUCCESS))
        return;
    expect_true("alloc_node_address", p.dptr != 0, "the allocation node gave no address");
    EXPECT("alloc_node_memset", add_memset(&set, g, alloc, p.dptr, 42), CUDA_SUCCESS);
    CUDA_MEMCPY3D c = linear(MEMORY_DEVICE, NULL, p.dptr, MEMORY_DEVICE, NULL, d, WORDS * 4);
    EXPECT("alloc_node_copy", cu.GraphAddMemcpyNode(&copy, g, &set, 1, &c, ctx), CUDA_SUCCESS);
    EXPECT("free_node_add", cu.GraphAddMemFreeNode(&freed, g, &copy, 1, p.dptr), CUDA_SUCCESS);
    EXPECT("free_node_not_allocated", cu.GraphAddMemFreeNode(&refused, g, NULL, 0, d),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("alloc_node_type", cu.GraphNodeGetType(alloc, &type), CUDA_SUCCESS);
    expect_true("alloc_node_is_alloc", type == NODE_TYPE_MEM_ALLOC,
                "the node is not a memory allocation node");
    EXPECT("free_node_type", cu.GraphNodeGetType(freed, &type), CUDA_SUCCESS);
    expect_true("free_node_is_free", type == NODE_TYPE_MEM_FREE,
                "the node is not a memory free node");
    memset(&got, 0, sizeof got);
    EXPECT("alloc_node_get", cu.GraphMemAllocNodeGetParams(alloc, &got), CUDA_SUCCESS);
    expect_true("alloc_node_params",
                got.dptr == p.dptr && got.bytesize == WORDS * 4 && got.poolProps.allocType == 1 &&
                    got.poolProps.location.type == ON_DEVICE &&
                    got.poolProps.location.id == dev && got.accessDescCount == 1 &&
                    got.accessDescs != NULL && got.accessDescs[0].flags == READ_WRITE,
                "the allocation node's parameters are not the ones given");
    EXPECT("free_node_get", cu.GraphMemFreeNodeGetParams(freed, &at), CUDA_SUCCESS);
    expect_true("free_node_params", at == p.dptr, "the free node's address is not the one given");
    EXPECT("alloc_get_on_free", cu.GraphMemAllocNodeGetParams(freed, &got),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("alloc_node_instantiate", cu.GraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    for (int launch = 0; launch < 2; launch++) {
        EXPECT("alloc_node_zero", cu.MemsetD32(d, 0, WORDS), CUDA_SUCCESS);
        EXPECT(launch ? "alloc_node_launch_2" : "alloc_node_launch", cu.GraphLaunch(x, s),
               CUDA_SUCCESS);
        EXPECT(launch ? "alloc_node_synchronize_2" : "alloc_node_synchronize",
               cu.StreamSynchronize(s), CUDA_SUCCESS);
        expect_true(launch ? "alloc_node_ran_2" : "alloc_node_ran", holds(d, 42),
                    "the copy from the graph's allocation did not arrive");
    }
    EXPECT("alloc_node_exec_destroy", cu.GraphExecDestroy(x), CUDA_SUCCESS);
    EXPECT("alloc_node_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

/* The device's graph memory attributes: with no memory allocation node in
 * this program, the used high watermark reads 0 once reset; only the high
 * watermarks may be set, and only to 0; trimming succeeds. */
static void graph_memory(CUdevice dev)
{
    unsigned long long v = 1;
    enum { USED_CURRENT = 0, USED_HIGH = 1, RESERVED_CURRENT = 2, RESERVED_HIGH = 3 };
    EXPECT("graph_mem_used", cu.DeviceGetGraphMemAttribute(dev, USED_CURRENT, &v), CUDA_SUCCESS);
    EXPECT("graph_mem_reserved", cu.DeviceGetGraphMemAttribute(dev, RESERVED_CURRENT, &v),
           CUDA_SUCCESS);
    v = 0;
    EXPECT("graph_mem_reset_used_high", cu.DeviceSetGraphMemAttribute(dev, USED_HIGH, &v),
           CUDA_SUCCESS);
    EXPECT("graph_mem_reset_reserved_high",
           cu.DeviceSetGraphMemAttribute(dev, RESERVED_HIGH, &v), CUDA_SUCCESS);
    v = 1;
    EXPECT("graph_mem_used_high", cu.DeviceGetGraphMemAttribute(dev, USED_HIGH, &v),
           CUDA_SUCCESS);
    /* A reset high watermark restarts from what is in use now, which live
     * graph allocations may keep above 0. */
    unsigned long long cur = 0;
    EXPECT("graph_mem_used_after_reset", cu.DeviceGetGraphMemAttribute(dev, USED_CURRENT, &cur),
           CUDA_SUCCESS);
    expect_true("graph_mem_used_high_reset", v >= cur && v <= cur + (64ull << 20),
                "the reset high watermark is not near what is in use");
    v = 0;
    EXPECT("graph_mem_set_current", cu.DeviceSetGraphMemAttribute(dev, USED_CURRENT, &v),
           CUDA_ERROR_INVALID_VALUE);
    v = 5;
    EXPECT("graph_mem_set_high_nonzero", cu.DeviceSetGraphMemAttribute(dev, USED_HIGH, &v),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("graph_mem_trim", cu.DeviceGraphMemTrim(dev), CUDA_SUCCESS);
    EXPECT("graph_mem_bad_device", cu.DeviceGraphMemTrim(99), CUDA_ERROR_INVALID_DEVICE);
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 && argv[1][0] != '-' ? argv[1] : NULL, entries, CU_COUNT(entries));
    main_pid = getpid();
    CUdevice dev;
    CUstream s;
    CUdeviceptr d, d2;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS) ||
        !EXPECT("stream", cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS) ||
        !EXPECT("alloc", cu.MemAlloc(&d, WORDS * 4), CUDA_SUCCESS) ||
        !EXPECT("alloc_2", cu.MemAlloc(&d2, WORDS * 4), CUDA_SUCCESS))
        return checks_summary();
    event_nodes(s);
    enabled_nodes(s, d);
    host_nodes(s, d);
    memcpy_nodes(s, d, d2);
    pageable_memcpy_nodes(s, d);
    user_objects(s);
    clones();
    child_graphs(s, d, d2);
    memory_nodes(s, d, dev);
    graph_memory(dev);
    EXPECT("free", cu.MemFree(d), CUDA_SUCCESS);
    EXPECT("free_2", cu.MemFree(d2), CUDA_SUCCESS);
    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    return checks_summary();
}
