/*
 * graph_nodes3: external-semaphore nodes, the generic node calls and
 * conditional nodes.
 *
 * - external-semaphore signal and wait nodes on a timeline semaphore: the
 *   signal's value is there after each launch, a met wait lets the graph go
 *   on, the parameters read back, the graph's setters and the executable
 *   graph's setters take effect at the next launch; a captured signal is a
 *   signal node that signals at each launch. The simulated device
 *   has no Vulkan to export a semaphore and takes a memfd named
 *   `vgpu-sim-semaphore` as its stand-in (crates/sim/src/semaphore.rs); a
 *   real driver refuses it, so on a GPU only the import's result and the
 *   answers about nodes without semaphores are printed;
 * - cuGraphAddNode of a kernel, memset, memcpy (to pageable memory), host,
 *   event record, child graph (copied and moved), memory allocation and
 *   free, batch memory-operation and empty node: the graph runs and every
 *   result is checked on the device; cuGraphNodeSetParams and
 *   cuGraphExecNodeSetParams of the kernel node take effect at the next
 *   launch; cuGraphAddNode_v2 with default edge data;
 * - a memcpy node from pageable memory takes new parameters (another
 *   pageable source, in the graph and in an executable graph; the other
 *   direction; device memory on both sides) and copies by them;
 * - conditional nodes (cuGraphAddNode): an IF node of a handle whose
 *   default is 1 runs its body, one whose default is 0 does not; a SWITCH
 *   node runs the body its value picks; a WHILE node of value 0 runs
 *   nothing;
 * - the results of unknown types, mismatched types, setters of free nodes,
 *   edge data that is not the default and impossible conditional nodes are
 *   printed (the driver's codes, compared on a GPU).
 * With CU_TEST_INVALID_HANDLES=1 (vgpu and its simulated device only) it also
 * adds a node of a destroyed semaphore, passes NULL node parameters and
 * makes a graph a child of itself, which the driver documents as undefined
 * (or crashes on) and vgpu refuses.
 *
 * The kernel, fill_u32(unsigned *p, unsigned v, int n), is PTX on a GPU and
 * a built-in kernel on vgpu's simulated device, so it runs on both.
 *
 * Build:  cc -std=c11 -O2 -Wall -o graph_nodes3 graph_nodes3.c -ldl
 * Usage:  graph_nodes3 [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <stddef.h>
#include <sys/mman.h>

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUextSemaphore_st *CUexternalSemaphore;
typedef void (*host_fn)(void *);
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
} kernel_params;
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
} memcpy3d;
typedef struct {
    int flags, reserved;
    CUcontext copyCtx;
    memcpy3d copyParams;
} memcpy_node_params;
typedef struct {
    CUdeviceptr dst;
    size_t pitch;
    unsigned int value, elementSize;
    size_t width, height;
    CUcontext ctx;
} memset_node_params;
typedef struct {
    host_fn fn;
    void *userData;
} host_node_params;
typedef struct {
    int type, id;
} mem_location;
typedef struct {
    int allocType, handleTypes;
    mem_location location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} mem_pool_props;
typedef struct {
    mem_pool_props poolProps;
    const void *accessDescs;
    size_t accessDescCount, bytesize;
    CUdeviceptr dptr;
} mem_alloc_node_params;
/* CUstreamBatchMemOpParams as a write: 48 bytes. */
typedef struct {
    unsigned int operation, pad0;
    CUdeviceptr address;
    unsigned long long value;
    unsigned int flags, pad1;
    CUdeviceptr alias;
    unsigned long long pad2;
} mem_op;
typedef struct {
    CUcontext ctx;
    unsigned int count;
    mem_op *paramArray;
    unsigned int flags;
} batch_node_params;
/* CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS and _WAIT_PARAMS: the fence value first. */
typedef struct {
    unsigned long long fence_value;
    unsigned char rest[136];
} sem_params;
typedef struct {
    CUexternalSemaphore *extSemArray;
    const sem_params *paramsArray;
    unsigned int numExtSems;
} ext_sem_node_params;
typedef struct {
    unsigned long long handle;
    int type;
    unsigned int size;
    CUgraph *phGraph_out;
    CUcontext ctx;
} conditional_node_params;
/* CUgraphNodeParams: the type, then a 232-byte union. */
typedef struct {
    unsigned int type;
    int reserved0[3];
    union {
        long long reserved1[29];
        kernel_params kernel;
        memcpy_node_params memcpy;
        memset_node_params memset;
        host_node_params host;
        struct {
            CUgraph graph;
            int ownership;
        } graph;
        struct {
            CUevent event;
        } event;
        ext_sem_node_params ext;
        mem_alloc_node_params alloc;
        struct {
            CUdeviceptr dptr;
        } free;
        batch_node_params memOp;
        conditional_node_params conditional;
    } u;
    long long reserved2;
} node_params;
_Static_assert(sizeof(memcpy3d) == 200, "CUDA_MEMCPY3D is 200 bytes");
_Static_assert(sizeof(mem_pool_props) == 88, "CUmemPoolProps is 88 bytes");
_Static_assert(sizeof(mem_op) == 48, "CUstreamBatchMemOpParams is 48 bytes");
_Static_assert(sizeof(sem_params) == 144, "semaphore parameters are 144 bytes");
_Static_assert(sizeof(node_params) == 256, "CUgraphNodeParams is 256 bytes");
_Static_assert(offsetof(node_params, u) == 16, "the union starts at byte 16");

enum {
    BLOCK = 64,
    WORDS = 1024,
    BYTES = WORDS * 4,
    TYPE_KERNEL = 0,
    TYPE_MEMCPY = 1,
    TYPE_MEMSET = 2,
    TYPE_HOST = 3,
    TYPE_GRAPH = 4,
    TYPE_EMPTY = 5,
    TYPE_EVENT_RECORD = 7,
    TYPE_EXT_SIGNAL = 8,
    TYPE_EXT_WAIT = 9,
    TYPE_MEM_ALLOC = 10,
    TYPE_MEM_FREE = 11,
    TYPE_BATCH_MEM_OP = 12,
    TYPE_CONDITIONAL = 13,
    MEMORYTYPE_HOST = 1,
    MEMORYTYPE_DEVICE = 2,
    OWNERSHIP_MOVE = 1,
    COND_IF = 0,
    COND_WHILE = 1,
    COND_SWITCH = 2,
    COND_ASSIGN_DEFAULT = 1,
    OP_WRITE_VALUE_32 = 2,
    TIMELINE_SEMAPHORE_FD = 9,
};

typedef struct {
    int type;
    union {
        int fd;
        struct {
            void *handle;
            const void *name;
        } win32;
    } handle;
    unsigned int flags;
    unsigned int reserved[16];
} sem_handle_desc;
_Static_assert(sizeof(sem_handle_desc) == 96, "the semaphore handle descriptor is 96 bytes");

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
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
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ImportExternalSemaphore)(CUexternalSemaphore *, const sem_handle_desc *);
    CUresult (*DestroyExternalSemaphore)(CUexternalSemaphore);
    CUresult (*SignalExternalSemaphoresAsync)(const CUexternalSemaphore *, const sem_params *,
                                              unsigned int, CUstream);
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*GraphCreate)(CUgraph *, unsigned int);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
    CUresult (*GraphNodeGetType)(CUgraphNode, int *);
    CUresult (*GraphChildGraphNodeGetGraph)(CUgraphNode, CUgraph *);
    CUresult (*GraphMemcpyNodeGetParams)(CUgraphNode, memcpy3d *);
    CUresult (*GraphAddEmptyNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t);
    CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const kernel_params *);
    CUresult (*GraphAddSignalNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const ext_sem_node_params *);
    CUresult (*GraphAddWaitNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                 const ext_sem_node_params *);
    CUresult (*GraphSignalNodeGetParams)(CUgraphNode, ext_sem_node_params *);
    CUresult (*GraphSignalNodeSetParams)(CUgraphNode, const ext_sem_node_params *);
    CUresult (*GraphWaitNodeGetParams)(CUgraphNode, ext_sem_node_params *);
    CUresult (*GraphWaitNodeSetParams)(CUgraphNode, const ext_sem_node_params *);
    CUresult (*GraphExecSignalNodeSetParams)(CUgraphExec, CUgraphNode,
                                             const ext_sem_node_params *);
    CUresult (*GraphExecWaitNodeSetParams)(CUgraphExec, CUgraphNode,
                                           const ext_sem_node_params *);
    CUresult (*GraphAddNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, node_params *);
    CUresult (*GraphAddNode_v2)(CUgraphNode *, CUgraph, const CUgraphNode *,
                                const CUgraphEdgeData *, size_t, node_params *);
    CUresult (*GraphNodeSetParams)(CUgraphNode, node_params *);
    CUresult (*GraphExecNodeSetParams)(CUgraphExec, CUgraphNode, node_params *);
    CUresult (*GraphConditionalHandleCreate)(unsigned long long *, CUgraph, CUcontext,
                                             unsigned int, unsigned int);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetName, "cuDeviceGetName"),
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
    ENTRY(EventSynchronize, "cuEventSynchronize"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(ImportExternalSemaphore, "cuImportExternalSemaphore"),
    ENTRY(DestroyExternalSemaphore, "cuDestroyExternalSemaphore"),
    ENTRY(SignalExternalSemaphoresAsync, "cuSignalExternalSemaphoresAsync"),
    ENTRY(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    ENTRY(StreamEndCapture, "cuStreamEndCapture"),
    ENTRY(GraphCreate, "cuGraphCreate"),
    ENTRY(GraphDestroy, "cuGraphDestroy"),
    ENTRY(GraphGetNodes, "cuGraphGetNodes"),
    ENTRY(GraphNodeGetType, "cuGraphNodeGetType"),
    ENTRY(GraphChildGraphNodeGetGraph, "cuGraphChildGraphNodeGetGraph"),
    ENTRY(GraphMemcpyNodeGetParams, "cuGraphMemcpyNodeGetParams"),
    ENTRY(GraphAddEmptyNode, "cuGraphAddEmptyNode"),
    ENTRY(GraphAddKernelNode, "cuGraphAddKernelNode_v2"),
    ENTRY(GraphAddSignalNode, "cuGraphAddExternalSemaphoresSignalNode"),
    ENTRY(GraphAddWaitNode, "cuGraphAddExternalSemaphoresWaitNode"),
    ENTRY(GraphSignalNodeGetParams, "cuGraphExternalSemaphoresSignalNodeGetParams"),
    ENTRY(GraphSignalNodeSetParams, "cuGraphExternalSemaphoresSignalNodeSetParams"),
    ENTRY(GraphWaitNodeGetParams, "cuGraphExternalSemaphoresWaitNodeGetParams"),
    ENTRY(GraphWaitNodeSetParams, "cuGraphExternalSemaphoresWaitNodeSetParams"),
    ENTRY(GraphExecSignalNodeSetParams, "cuGraphExecExternalSemaphoresSignalNodeSetParams"),
    ENTRY(GraphExecWaitNodeSetParams, "cuGraphExecExternalSemaphoresWaitNodeSetParams"),
    ENTRY(GraphAddNode, "cuGraphAddNode"),
    ENTRY(GraphAddNode_v2, "cuGraphAddNode_v2"),
    ENTRY(GraphNodeSetParams, "cuGraphNodeSetParams"),
    ENTRY(GraphExecNodeSetParams, "cuGraphExecNodeSetParams"),
    ENTRY(GraphConditionalHandleCreate, "cuGraphConditionalHandleCreate"),
    ENTRY(GraphInstantiate, "cuGraphInstantiateWithFlags"),
    ENTRY(GraphLaunch, "cuGraphLaunch"),
    ENTRY(GraphExecDestroy, "cuGraphExecDestroy"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

static const char GPU_MODULE[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry fill_u32(.param .u64 p, .param .u32 v, .param .u32 n)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [v];\n  ld.param.u32 %r2, [n];\n"
    "  mov.u32 %r3, %ctaid.x;\n  mov.u32 %r4, %ntid.x;\n  mov.u32 %r5, %tid.x;\n"
    "  mad.lo.s32 %r3, %r3, %r4, %r5;\n  setp.ge.s32 %p1, %r3, %r2;\n  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n  mul.wide.s32 %rd3, %r3, 4;\n"
    "  add.s64 %rd2, %rd2, %rd3;\n  st.global.u32 [%rd2], %r1;\nDONE:\n  ret;\n}\n";
static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel fill_u32\n";

static CUfunction fill;

/* Prints a call's result, for results compared with the driver's on a GPU. */
static void show(const char *name, CUresult r)
{
    printf("ok %s: %s\n", name, error_name(cu.GetErrorName, r));
}

/* A kernel launch of fill_u32(p, v, WORDS); the arguments live in `a`. */
struct fill_args {
    CUdeviceptr p;
    unsigned int v;
    int n;
    void *args[3];
};

static kernel_params fill_params(struct fill_args *a, CUdeviceptr p, unsigned int v)
{
    a->p = p;
    a->v = v;
    a->n = WORDS;
    a->args[0] = &a->p;
    a->args[1] = &a->v;
    a->args[2] = &a->n;
    kernel_params k = {fill, WORDS / BLOCK, 1, 1, BLOCK, 1, 1, 0, a->args, NULL, NULL, NULL};
    return k;
}

static node_params typed(unsigned int type)
{
    node_params p;
    memset(&p, 0, sizeof p);
    p.type = type;
    return p;
}

/* Whether every word of `d` is `v`. */
static int all_words(CUdeviceptr d, unsigned int v)
{
    static unsigned int host[WORDS];
    if (!EXPECT("read_words", cu.MemcpyDtoH(host, d, sizeof host), CUDA_SUCCESS))
        return 0;
    for (int i = 0; i < WORDS; i++)
        if (host[i] != v)
            return 0;
    return 1;
}

static int launch(const char *name, CUgraphExec e, CUstream s)
{
    return EXPECT(name, cu.GraphLaunch(e, s), CUDA_SUCCESS) &&
           EXPECT(name, cu.StreamSynchronize(s), CUDA_SUCCESS);
}

/* ---- external-semaphore nodes ---- */

/* The stand-in semaphore's value (see the header). */
static unsigned long long sem_value(int fd)
{
    unsigned long long v = 0;
    if (pread(fd, &v, sizeof v, 0) != (ssize_t)sizeof v)
        return ~0ULL;
    return v;
}

static void ext_params(ext_sem_node_params *p, CUexternalSemaphore *sem, sem_params *sp,
                       unsigned long long v)
{
    memset(sp, 0, sizeof *sp);
    sp->fence_value = v;
    p->extSemArray = sem;
    p->paramsArray = sp;
    p->numExtSems = 1;
}

static void host_flag(void *p)
{
    *(int *)p += 1;
}

/* Signal and wait nodes on a timeline semaphore (the simulated device's stand-in). */
static void semaphore_nodes(CUstream s)
{
    int fd = memfd_create("vgpu-sim-semaphore", MFD_CLOEXEC);
    unsigned long long zero = 0;
    if (fd < 0 || pwrite(fd, &zero, sizeof zero, 0) != (ssize_t)sizeof zero) {
        expect_true("extsem_memfd", 0, "no memfd");
        return;
    }
    int keep = dup(fd);
    sem_handle_desc d;
    memset(&d, 0, sizeof d);
    d.type = TIMELINE_SEMAPHORE_FD;
    d.handle.fd = fd;
    CUexternalSemaphore sem = NULL;
    CUresult r = cu.ImportExternalSemaphore(&sem, &d);
    show("extsem_import", r);
    if (r != CUDA_SUCCESS) {
        close(fd);
        close(keep);
        return;
    }

    CUgraph g = NULL;
    CUgraphNode sig = NULL, wait = NULL, host = NULL;
    ext_sem_node_params sp, wp;
    sem_params sv, wv;
    ext_params(&sp, &sem, &sv, 5);
    ext_params(&wp, &sem, &wv, 5);
    static int ran;
    node_params hp = typed(TYPE_HOST);
    hp.u.host.fn = host_flag;
    hp.u.host.userData = &ran;
    if (!EXPECT("extsem_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS) ||
        !EXPECT("extsem_add_signal", cu.GraphAddSignalNode(&sig, g, NULL, 0, &sp), CUDA_SUCCESS) ||
        !EXPECT("extsem_add_wait", cu.GraphAddWaitNode(&wait, g, &sig, 1, &wp), CUDA_SUCCESS) ||
        !EXPECT("extsem_add_host", cu.GraphAddNode(&host, g, &wait, 1, &hp), CUDA_SUCCESS))
        return;
    int type = -1;
    EXPECT("extsem_signal_type", cu.GraphNodeGetType(sig, &type), CUDA_SUCCESS);
    expect_true("extsem_signal_is_signal", type == TYPE_EXT_SIGNAL, "wrong node type");
    EXPECT("extsem_wait_type", cu.GraphNodeGetType(wait, &type), CUDA_SUCCESS);
    expect_true("extsem_wait_is_wait", type == TYPE_EXT_WAIT, "wrong node type");

    ext_sem_node_params got;
    memset(&got, 0, sizeof got);
    EXPECT("extsem_signal_get", cu.GraphSignalNodeGetParams(sig, &got), CUDA_SUCCESS);
    expect_true("extsem_signal_params",
                got.numExtSems == 1 && got.extSemArray != NULL && got.extSemArray[0] == sem &&
                    got.paramsArray != NULL && got.paramsArray[0].fence_value == 5,
                "the signal node's parameters do not read back");
    memset(&got, 0, sizeof got);
    EXPECT("extsem_wait_get", cu.GraphWaitNodeGetParams(wait, &got), CUDA_SUCCESS);
    expect_true("extsem_wait_params",
                got.numExtSems == 1 && got.extSemArray[0] == sem &&
                    got.paramsArray[0].fence_value == 5,
                "the wait node's parameters do not read back");

    CUgraphExec e = NULL;
    if (EXPECT("extsem_instantiate", cu.GraphInstantiate(&e, g, 0), CUDA_SUCCESS) &&
        launch("extsem_launch", e, s)) {
        expect_true("extsem_signalled_5", sem_value(keep) == 5, "the semaphore is not 5");
        expect_true("extsem_wait_passed", ran == 1, "the node after the wait did not run");
        ext_params(&sp, &sem, &sv, 12);
        EXPECT("extsem_exec_set_signal", cu.GraphExecSignalNodeSetParams(e, sig, &sp),
               CUDA_SUCCESS);
        ext_params(&wp, &sem, &wv, 12);
        EXPECT("extsem_exec_set_wait", cu.GraphExecWaitNodeSetParams(e, wait, &wp), CUDA_SUCCESS);
        if (launch("extsem_exec_launch", e, s)) {
            expect_true("extsem_exec_signalled_12", sem_value(keep) == 12,
                        "the executable graph's signal did not take its new value");
            expect_true("extsem_exec_wait_passed", ran == 2, "the node after the wait did not run");
        }
        CUexternalSemaphore two[2] = {sem, sem};
        sem_params tv[2];
        memset(tv, 0, sizeof tv);
        ext_sem_node_params twice = {two, tv, 2};
        show("extsem_exec_set_two", cu.GraphExecSignalNodeSetParams(e, sig, &twice));
        EXPECT("extsem_exec_destroy", cu.GraphExecDestroy(e), CUDA_SUCCESS);
    }
    memset(&got, 0, sizeof got);
    EXPECT("extsem_signal_get_after_exec_set", cu.GraphSignalNodeGetParams(sig, &got),
           CUDA_SUCCESS);
    expect_true("extsem_graph_keeps_5", got.paramsArray[0].fence_value == 5,
                "the executable graph's setter changed the graph's node");

    ext_params(&sp, &sem, &sv, 8);
    EXPECT("extsem_set_signal", cu.GraphSignalNodeSetParams(sig, &sp), CUDA_SUCCESS);
    ext_params(&wp, &sem, &wv, 8);
    EXPECT("extsem_set_wait", cu.GraphWaitNodeSetParams(wait, &wp), CUDA_SUCCESS);
    memset(&got, 0, sizeof got);
    EXPECT("extsem_signal_get_after_set", cu.GraphSignalNodeGetParams(sig, &got), CUDA_SUCCESS);
    expect_true("extsem_signal_set_params", got.paramsArray[0].fence_value == 8,
                "the signal node did not take its new value");
    memset(&got, 0, sizeof got);
    EXPECT("extsem_wait_get_after_set", cu.GraphWaitNodeGetParams(wait, &got), CUDA_SUCCESS);
    expect_true("extsem_wait_set_params", got.paramsArray[0].fence_value == 8,
                "the wait node did not take its new value");
    /* A timeline never goes back: start it again from 0 for the new value. */
    if (pwrite(keep, &zero, sizeof zero, 0) != (ssize_t)sizeof zero)
        expect_true("extsem_reset", 0, "cannot reset the semaphore");
    e = NULL;
    if (EXPECT("extsem_instantiate_after_set", cu.GraphInstantiate(&e, g, 0), CUDA_SUCCESS) &&
        launch("extsem_launch_after_set", e, s)) {
        expect_true("extsem_signalled_8", sem_value(keep) == 8, "the semaphore is not 8");
        EXPECT("extsem_exec_destroy", cu.GraphExecDestroy(e), CUDA_SUCCESS);
    }

    /* The generic form makes the same nodes. */
    CUgraphNode gsig = NULL;
    node_params np = typed(TYPE_EXT_SIGNAL);
    ext_params(&np.u.ext, &sem, &sv, 20);
    if (EXPECT("extsem_add_node_signal", cu.GraphAddNode(&gsig, g, &host, 1, &np), CUDA_SUCCESS)) {
        e = NULL;
        if (EXPECT("extsem_instantiate_generic", cu.GraphInstantiate(&e, g, 0), CUDA_SUCCESS) &&
            launch("extsem_launch_generic", e, s)) {
            expect_true("extsem_generic_signalled_20", sem_value(keep) == 20,
                        "the generic signal node did not signal");
            EXPECT("extsem_exec_destroy", cu.GraphExecDestroy(e), CUDA_SUCCESS);
        }
    }
    show("extsem_signal_get_on_wait", cu.GraphSignalNodeGetParams(wait, &got));

    /* A captured signal is a signal node, which signals at each launch. */
    CUgraph cg = NULL;
    sem_params cv;
    memset(&cv, 0, sizeof cv);
    cv.fence_value = 30;
    if (EXPECT("extsem_capture_begin", cu.StreamBeginCapture(s, 0), CUDA_SUCCESS)) {
        EXPECT("extsem_capture_signal", cu.SignalExternalSemaphoresAsync(&sem, &cv, 1, s),
               CUDA_SUCCESS);
        EXPECT("extsem_capture_end", cu.StreamEndCapture(s, &cg), CUDA_SUCCESS);
    }
    expect_true("extsem_capture_did_not_signal", sem_value(keep) == 20,
                "the captured signal ran at capture");
    CUgraphNode captured = NULL;
    size_t one = 1;
    if (cg != NULL && EXPECT("extsem_captured_nodes", cu.GraphGetNodes(cg, &captured, &one),
                             CUDA_SUCCESS)) {
        memset(&got, 0, sizeof got);
        EXPECT("extsem_captured_get", cu.GraphSignalNodeGetParams(captured, &got), CUDA_SUCCESS);
        expect_true("extsem_captured_params",
                    got.numExtSems == 1 && got.extSemArray[0] == sem &&
                        got.paramsArray[0].fence_value == 30,
                    "the captured signal node's parameters do not read back");
        e = NULL;
        if (EXPECT("extsem_captured_instantiate", cu.GraphInstantiate(&e, cg, 0), CUDA_SUCCESS) &&
            launch("extsem_captured_launch", e, s)) {
            expect_true("extsem_captured_signalled_30", sem_value(keep) == 30,
                        "the captured signal node did not signal");
            EXPECT("extsem_exec_destroy", cu.GraphExecDestroy(e), CUDA_SUCCESS);
        }
        EXPECT("extsem_captured_destroy", cu.GraphDestroy(cg), CUDA_SUCCESS);
    }
    EXPECT("extsem_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
    EXPECT("extsem_destroy", cu.DestroyExternalSemaphore(sem), CUDA_SUCCESS);
    close(keep);
    if (invalid_handle_checks()) {
        /* A destroyed semaphore in a new node; undefined on a real driver. */
        CUgraph g2 = NULL;
        CUgraphNode n2 = NULL;
        ext_params(&sp, &sem, &sv, 1);
        if (EXPECT("extsem_graph2", cu.GraphCreate(&g2, 0), CUDA_SUCCESS)) {
            EXPECT("extsem_add_destroyed", cu.GraphAddSignalNode(&n2, g2, NULL, 0, &sp),
                   CUDA_ERROR_INVALID_HANDLE);
            EXPECT("extsem_graph2_destroy", cu.GraphDestroy(g2), CUDA_SUCCESS);
        }
    }
}

/* Nodes without semaphores, answered on the simulated device and a GPU alike. */
static void semaphore_node_answers(void)
{
    CUgraph g = NULL;
    CUgraphNode empty = NULL, none = NULL;
    ext_sem_node_params p = {NULL, NULL, 0};
    if (!EXPECT("extsem0_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS) ||
        !EXPECT("extsem0_empty", cu.GraphAddEmptyNode(&empty, g, NULL, 0), CUDA_SUCCESS))
        return;
    show("extsem0_get_on_empty", cu.GraphSignalNodeGetParams(empty, &p));
    show("extsem0_set_on_empty", cu.GraphWaitNodeSetParams(empty, &p));
    CUresult r = cu.GraphAddSignalNode(&none, g, NULL, 0, &p);
    show("extsem0_add_no_semaphores", r);
    if (r == CUDA_SUCCESS) {
        memset(&p, 0, sizeof p);
        EXPECT("extsem0_get_no_semaphores", cu.GraphSignalNodeGetParams(none, &p), CUDA_SUCCESS);
        printf("ok extsem0_count: %u\n", p.numExtSems);
    }
    EXPECT("extsem0_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

/* ---- the generic node calls ---- */

static unsigned int pageable[WORDS];

/* Nodes of every kind through cuGraphAddNode, run and checked; the kernel node's
 * parameters replaced in the graph and in an executable graph. */
static void generic_nodes(CUcontext ctx, CUdeviceptr d, CUstream s)
{
    CUdeviceptr a = d, b = d + BYTES, c = d + 2 * BYTES, w = d + 3 * BYTES;
    CUgraph g = NULL, child = NULL, moved = NULL;
    CUgraphNode k = NULL, ms = NULL, cp = NULL, host = NULL, rec = NULL, sub = NULL, mv = NULL,
                alloc = NULL, freed = NULL, batch = NULL, empty = NULL, inner = NULL;
    CUevent ev = NULL;
    struct fill_args ka, ca, ma;
    static int ran;
    if (!EXPECT("gen_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS) ||
        !EXPECT("gen_child", cu.GraphCreate(&child, 0), CUDA_SUCCESS) ||
        !EXPECT("gen_moved", cu.GraphCreate(&moved, 0), CUDA_SUCCESS) ||
        !EXPECT("gen_event", cu.EventCreate(&ev, 0), CUDA_SUCCESS) ||
        !EXPECT("gen_reset", cu.MemsetD32(d, 0, 4 * WORDS), CUDA_SUCCESS))
        return;

    node_params p = typed(TYPE_KERNEL);
    p.u.kernel = fill_params(&ka, a, 5);
    EXPECT("gen_add_kernel", cu.GraphAddNode(&k, g, NULL, 0, &p), CUDA_SUCCESS);
    p = typed(TYPE_MEMSET);
    p.u.memset.dst = b;
    p.u.memset.value = 0x22;
    p.u.memset.elementSize = 4;
    p.u.memset.width = WORDS;
    p.u.memset.height = 1;
    p.u.memset.ctx = ctx;
    EXPECT("gen_add_memset", cu.GraphAddNode(&ms, g, NULL, 0, &p), CUDA_SUCCESS);
    p = typed(TYPE_MEMCPY);
    p.u.memcpy.copyCtx = ctx;
    p.u.memcpy.copyParams.srcMemoryType = MEMORYTYPE_DEVICE;
    p.u.memcpy.copyParams.srcDevice = a;
    p.u.memcpy.copyParams.dstMemoryType = MEMORYTYPE_HOST;
    p.u.memcpy.copyParams.dstHost = pageable;
    p.u.memcpy.copyParams.WidthInBytes = BYTES;
    p.u.memcpy.copyParams.Height = 1;
    p.u.memcpy.copyParams.Depth = 1;
    EXPECT("gen_add_memcpy", cu.GraphAddNode(&cp, g, &k, 1, &p), CUDA_SUCCESS);
    p = typed(TYPE_HOST);
    p.u.host.fn = host_flag;
    p.u.host.userData = &ran;
    EXPECT("gen_add_host", cu.GraphAddNode(&host, g, &cp, 1, &p), CUDA_SUCCESS);
    p = typed(TYPE_EVENT_RECORD);
    p.u.event.event = ev;
    EXPECT("gen_add_event_record", cu.GraphAddNode(&rec, g, &host, 1, &p), CUDA_SUCCESS);

    kernel_params kc = fill_params(&ca, c, 9);
    EXPECT("gen_child_kernel", cu.GraphAddKernelNode(&inner, child, NULL, 0, &kc), CUDA_SUCCESS);
    p = typed(TYPE_GRAPH);
    p.u.graph.graph = child;
    EXPECT("gen_add_child", cu.GraphAddNode(&sub, g, NULL, 0, &p), CUDA_SUCCESS);
    kernel_params km = fill_params(&ma, w + 64, 3);
    km.gridDimX = 1;
    ma.n = 16;
    EXPECT("gen_moved_kernel", cu.GraphAddKernelNode(&inner, moved, NULL, 0, &km), CUDA_SUCCESS);
    p = typed(TYPE_GRAPH);
    p.u.graph.graph = moved;
    p.u.graph.ownership = OWNERSHIP_MOVE;
    if (EXPECT("gen_add_moved_child", cu.GraphAddNode(&mv, g, NULL, 0, &p), CUDA_SUCCESS)) {
        CUgraph own = NULL;
        EXPECT("gen_moved_get_graph", cu.GraphChildGraphNodeGetGraph(mv, &own), CUDA_SUCCESS);
        printf("ok gen_moved_child_is_given_graph: %s\n", own == moved ? "yes" : "no");
    }

    p = typed(TYPE_MEM_ALLOC);
    p.u.alloc.poolProps.allocType = 1;
    p.u.alloc.poolProps.location.type = 1;
    p.u.alloc.poolProps.location.id = 0;
    p.u.alloc.bytesize = 1 << 16;
    EXPECT("gen_add_alloc", cu.GraphAddNode(&alloc, g, NULL, 0, &p), CUDA_SUCCESS);
    CUdeviceptr got = p.u.alloc.dptr;
    expect_true("gen_alloc_address_written", got != 0, "no address in the parameters");
    p = typed(TYPE_MEM_FREE);
    p.u.free.dptr = got;
    EXPECT("gen_add_free", cu.GraphAddNode(&freed, g, &alloc, 1, &p), CUDA_SUCCESS);

    mem_op op;
    memset(&op, 0, sizeof op);
    op.operation = OP_WRITE_VALUE_32;
    op.address = w;
    op.value = 77;
    p = typed(TYPE_BATCH_MEM_OP);
    p.u.memOp.ctx = ctx;
    p.u.memOp.count = 1;
    p.u.memOp.paramArray = &op;
    EXPECT("gen_add_batch", cu.GraphAddNode(&batch, g, NULL, 0, &p), CUDA_SUCCESS);
    p = typed(TYPE_EMPTY);
    CUgraphEdgeData edge;
    memset(&edge, 0, sizeof edge);
    EXPECT("gen_add_empty_v2", cu.GraphAddNode_v2(&empty, g, &rec, &edge, 1, &p), CUDA_SUCCESS);

    int type = -1;
    EXPECT("gen_memcpy_type", cu.GraphNodeGetType(cp, &type), CUDA_SUCCESS);
    expect_true("gen_memcpy_is_memcpy", type == TYPE_MEMCPY, "the copy is not a memcpy node");
    EXPECT("gen_alloc_type", cu.GraphNodeGetType(alloc, &type), CUDA_SUCCESS);
    expect_true("gen_alloc_is_alloc", type == TYPE_MEM_ALLOC, "not an allocation node");
    EXPECT("gen_child_type", cu.GraphNodeGetType(sub, &type), CUDA_SUCCESS);
    expect_true("gen_child_is_graph", type == TYPE_GRAPH, "not a child graph node");

    CUgraphExec e = NULL;
    if (EXPECT("gen_instantiate", cu.GraphInstantiate(&e, g, 0), CUDA_SUCCESS) &&
        launch("gen_launch", e, s)) {
        expect_true("gen_kernel_ran", all_words(a, 5), "the kernel node did not fill");
        expect_true("gen_memset_ran", all_words(b, 0x22), "the memset node did not fill");
        expect_true("gen_child_ran", all_words(c, 9), "the child graph did not run");
        int copied = 1;
        for (int i = 0; i < WORDS; i++)
            copied &= pageable[i] == 5;
        expect_true("gen_memcpy_ran", copied, "the memcpy node did not copy to pageable memory");
        expect_true("gen_host_ran", ran == 1, "the host node did not run");
        EXPECT("gen_event_done", cu.EventSynchronize(ev), CUDA_SUCCESS);
        unsigned int words[32];
        EXPECT("gen_read_w", cu.MemcpyDtoH(words, w, sizeof words), CUDA_SUCCESS);
        expect_true("gen_batch_ran", words[0] == 77, "the batch node did not write");
        expect_true("gen_moved_child_ran", words[16] == 3 && words[31] == 3,
                    "the moved child graph did not run");

        node_params kp = typed(TYPE_KERNEL);
        kp.u.kernel = fill_params(&ka, a, 7);
        EXPECT("gen_exec_set_kernel", cu.GraphExecNodeSetParams(e, k, &kp), CUDA_SUCCESS);
        if (launch("gen_exec_launch", e, s)) {
            int seven = 1;
            for (int i = 0; i < WORDS; i++)
                seven &= pageable[i] == 7;
            expect_true("gen_exec_set_ran", seven, "the executable graph kept the old kernel");
        }
        EXPECT("gen_exec_destroy", cu.GraphExecDestroy(e), CUDA_SUCCESS);
    }

    node_params kp = typed(TYPE_KERNEL);
    kp.u.kernel = fill_params(&ka, a, 6);
    EXPECT("gen_set_kernel", cu.GraphNodeSetParams(k, &kp), CUDA_SUCCESS);
    e = NULL;
    if (EXPECT("gen_instantiate_after_set", cu.GraphInstantiate(&e, g, 0), CUDA_SUCCESS) &&
        launch("gen_launch_after_set", e, s)) {
        expect_true("gen_set_ran", all_words(a, 6), "the kernel node kept its old value");
        EXPECT("gen_exec_destroy", cu.GraphExecDestroy(e), CUDA_SUCCESS);
    }

    node_params other = typed(TYPE_MEMSET);
    other.u.memset.dst = b;
    other.u.memset.elementSize = 4;
    other.u.memset.width = WORDS;
    other.u.memset.height = 1;
    show("gen_set_memset_on_kernel", cu.GraphNodeSetParams(k, &other));
    node_params fp = typed(TYPE_MEM_FREE);
    fp.u.free.dptr = got;
    show("gen_set_free", cu.GraphNodeSetParams(freed, &fp));
    if (invalid_handle_checks()) {
        /* NULL parameters; undefined on a real driver. */
        CUgraphNode none = NULL;
        EXPECT("gen_add_null_params", cu.GraphAddNode(&none, g, NULL, 0, NULL),
               CUDA_ERROR_INVALID_VALUE);
        EXPECT("gen_set_null_params", cu.GraphNodeSetParams(k, NULL), CUDA_ERROR_INVALID_VALUE);
        /* A graph made a child of itself, on which the driver crashes. */
        node_params self = typed(TYPE_GRAPH);
        self.u.graph.graph = g;
        EXPECT("gen_add_self_child", cu.GraphAddNode(&none, g, NULL, 0, &self),
               CUDA_ERROR_INVALID_VALUE);
    }
    node_params flagged = typed(TYPE_MEMCPY);
    flagged.u.memcpy.flags = 1;
    flagged.u.memcpy.copyCtx = ctx;
    flagged.u.memcpy.copyParams.srcMemoryType = MEMORYTYPE_DEVICE;
    flagged.u.memcpy.copyParams.srcDevice = a;
    flagged.u.memcpy.copyParams.dstMemoryType = MEMORYTYPE_DEVICE;
    flagged.u.memcpy.copyParams.dstDevice = b;
    flagged.u.memcpy.copyParams.WidthInBytes = BYTES;
    flagged.u.memcpy.copyParams.Height = 1;
    flagged.u.memcpy.copyParams.Depth = 1;
    CUgraphNode bad = NULL;
    show("gen_add_memcpy_flags_1", cu.GraphAddNode(&bad, g, NULL, 0, &flagged));
    node_params unknown = typed(99);
    show("gen_add_unknown_type", cu.GraphAddNode(&bad, g, NULL, 0, &unknown));
    node_params e2 = typed(TYPE_EMPTY);
    edge.type = 1;
    show("gen_add_v2_programmatic_edge", cu.GraphAddNode_v2(&bad, g, &k, &edge, 1, &e2));
    /* A programmatic edge (from the kernel's programmatic port) between kernel nodes. */
    node_params k2 = typed(TYPE_KERNEL);
    k2.u.kernel = fill_params(&ka, a, 8);
    edge.from_port = 1;
    show("gen_add_v2_kernel_programmatic", cu.GraphAddNode_v2(&bad, g, &k, &edge, 1, &k2));
    EXPECT("gen_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
    EXPECT("gen_child_destroy", cu.GraphDestroy(child), CUDA_SUCCESS);
    EXPECT("gen_event_destroy", cu.EventDestroy(ev), CUDA_SUCCESS);
}

/* ---- memcpy nodes with a pageable host side, given new parameters ---- */

static unsigned int page_a[WORDS], page_b[WORDS], page_out[WORDS];

static void fill_host(unsigned int *p, unsigned int v)
{
    for (int i = 0; i < WORDS; i++)
        p[i] = v;
}

static int host_is(const unsigned int *p, unsigned int v)
{
    for (int i = 0; i < WORDS; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* A 1D copy of BYTES bytes; NULL `from`/`to` is device memory `x`/`y`. */
static memcpy3d copy_1d(const void *from, CUdeviceptr x, void *to, CUdeviceptr y)
{
    memcpy3d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = from ? MEMORYTYPE_HOST : MEMORYTYPE_DEVICE;
    c.srcHost = from;
    c.srcDevice = from ? 0 : x;
    c.dstMemoryType = to ? MEMORYTYPE_HOST : MEMORYTYPE_DEVICE;
    c.dstHost = to;
    c.dstDevice = to ? 0 : y;
    c.WidthInBytes = BYTES;
    c.Height = 1;
    c.Depth = 1;
    return c;
}

static int run_once(const char *name, CUgraph g, CUstream s)
{
    CUgraphExec e = NULL;
    if (!EXPECT(name, cu.GraphInstantiate(&e, g, 0), CUDA_SUCCESS))
        return 0;
    int ok = launch(name, e, s);
    EXPECT(name, cu.GraphExecDestroy(e), CUDA_SUCCESS);
    return ok;
}

/* A memcpy node from pageable memory takes new parameters: another pageable
 * source, in an executable graph too, then the other direction, then device
 * memory on both sides. */
static void pageable_memcpy_set(CUcontext ctx, CUdeviceptr d, CUstream s)
{
    CUdeviceptr x = d, y = d + BYTES;
    CUgraph g = NULL;
    CUgraphNode node = NULL;
    fill_host(page_a, 1);
    fill_host(page_b, 2);
    memcpy3d c = copy_1d(page_a, 0, NULL, x);
    if (!EXPECT("pset_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS) ||
        !EXPECT("pset_reset", cu.MemsetD32(d, 0, 2 * WORDS), CUDA_SUCCESS))
        return;
    node_params p = typed(TYPE_MEMCPY);
    p.u.memcpy.copyCtx = ctx;
    p.u.memcpy.copyParams = c;
    if (!EXPECT("pset_add", cu.GraphAddNode(&node, g, NULL, 0, &p), CUDA_SUCCESS))
        return;
    if (run_once("pset_run", g, s))
        expect_true("pset_copied_a", all_words(x, 1), "the node did not copy page_a");

    p.u.memcpy.copyParams = copy_1d(page_b, 0, NULL, x);
    EXPECT("pset_set_b", cu.GraphNodeSetParams(node, &p), CUDA_SUCCESS);
    memcpy3d back;
    memset(&back, 0, sizeof back);
    EXPECT("pset_get", cu.GraphMemcpyNodeGetParams(node, &back), CUDA_SUCCESS);
    expect_true("pset_get_b", back.srcHost == page_b && back.dstDevice == x,
                "the node's parameters do not read back");
    if (run_once("pset_run_b", g, s))
        expect_true("pset_copied_b", all_words(x, 2), "the node did not take page_b");

    CUgraphExec e = NULL;
    if (EXPECT("pset_instantiate", cu.GraphInstantiate(&e, g, 0), CUDA_SUCCESS)) {
        fill_host(page_a, 3);
        node_params ep = typed(TYPE_MEMCPY);
        ep.u.memcpy.copyCtx = ctx;
        ep.u.memcpy.copyParams = copy_1d(page_a, 0, NULL, x);
        /* The driver judges which changes an executable graph takes: printed. */
        CUresult r = cu.GraphExecNodeSetParams(e, node, &ep);
        show("pset_exec_set_a", r);
        if (r == CUDA_SUCCESS && launch("pset_exec_launch", e, s))
            expect_true("pset_exec_copied_a", all_words(x, 3),
                        "the executable graph's node did not take page_a");
        EXPECT("pset_exec_destroy", cu.GraphExecDestroy(e), CUDA_SUCCESS);
    }
    if (run_once("pset_run_graph_kept", g, s))
        expect_true("pset_graph_kept_b", all_words(x, 2),
                    "the executable graph's setter changed the graph's node");

    fill_host(page_out, 0);
    p.u.memcpy.copyParams = copy_1d(NULL, x, page_out, 0);
    EXPECT("pset_set_to_host", cu.GraphNodeSetParams(node, &p), CUDA_SUCCESS);
    if (run_once("pset_run_to_host", g, s))
        expect_true("pset_copied_to_host", host_is(page_out, 2),
                    "the node did not copy to page_out");

    p.u.memcpy.copyParams = copy_1d(NULL, x, NULL, y);
    EXPECT("pset_set_device", cu.GraphNodeSetParams(node, &p), CUDA_SUCCESS);
    if (run_once("pset_run_device", g, s))
        expect_true("pset_copied_device", all_words(y, 2), "the node did not copy x to y");
    EXPECT("pset_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

/* ---- conditional nodes ---- */

/* A conditional node of handle `h` in `g` with `size` bodies written to `bodies`. */
/* The driver sets phGraph_out to an array of the body graphs that it owns,
 * valid as long as the node; *bodies gets that pointer (what the
 * application put there is not read). */
static CUresult add_conditional(CUgraphNode *node, CUgraph g, CUcontext ctx, unsigned long long h,
                                int type, unsigned int size, CUgraph **bodies)
{
    node_params p = typed(TYPE_CONDITIONAL);
    p.u.conditional.handle = h;
    p.u.conditional.type = type;
    p.u.conditional.size = size;
    p.u.conditional.phGraph_out = NULL;
    p.u.conditional.ctx = ctx;
    CUresult r = cu.GraphAddNode(node, g, NULL, 0, &p);
    *bodies = p.u.conditional.phGraph_out;
    return r;
}

/* Adds a fill of `p` with `v` to body graph `body`. */
static int body_fill(const char *name, CUgraph body, struct fill_args *a, CUdeviceptr p,
                     unsigned int v)
{
    kernel_params k = fill_params(a, p, v);
    CUgraphNode n = NULL;
    return EXPECT(name, cu.GraphAddKernelNode(&n, body, NULL, 0, &k), CUDA_SUCCESS);
}

/* IF nodes of handles whose default is 1 and 0, a SWITCH node and a WHILE node of 0. */
static void conditional_nodes(CUcontext ctx, CUdeviceptr d, CUstream s)
{
    CUdeviceptr e1 = d, e2 = d + BYTES, e3 = d + 2 * BYTES, e4 = d + 3 * BYTES;
    CUgraph g = NULL;
    /* A handle serves one conditional node (driver 580 refuses a second). */
    unsigned long long one = 0, zero = 0, pick = 0, loop = 0;
    struct fill_args a1, a2, a3, a4, a5;
    if (!EXPECT("cond_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS) ||
        !EXPECT("cond_reset", cu.MemsetD32(d, 0, 4 * WORDS), CUDA_SUCCESS) ||
        !EXPECT("cond_handle_1",
                cu.GraphConditionalHandleCreate(&one, g, ctx, 1, COND_ASSIGN_DEFAULT),
                CUDA_SUCCESS) ||
        !EXPECT("cond_handle_0",
                cu.GraphConditionalHandleCreate(&zero, g, ctx, 0, COND_ASSIGN_DEFAULT),
                CUDA_SUCCESS) ||
        !EXPECT("cond_handle_pick",
                cu.GraphConditionalHandleCreate(&pick, g, ctx, 1, COND_ASSIGN_DEFAULT),
                CUDA_SUCCESS) ||
        !EXPECT("cond_handle_loop",
                cu.GraphConditionalHandleCreate(&loop, g, ctx, 0, COND_ASSIGN_DEFAULT),
                CUDA_SUCCESS))
        return;
    CUgraphNode if1 = NULL, if0 = NULL, sw = NULL, wh = NULL, bad = NULL;
    CUgraph *p1 = NULL, *p0 = NULL, *ps = NULL, *pw = NULL, *pb = NULL;
    if (!EXPECT("cond_add_if_1", add_conditional(&if1, g, ctx, one, COND_IF, 1, &p1),
                CUDA_SUCCESS) ||
        !EXPECT("cond_add_if_0", add_conditional(&if0, g, ctx, zero, COND_IF, 1, &p0),
                CUDA_SUCCESS) ||
        !EXPECT("cond_add_switch", add_conditional(&sw, g, ctx, pick, COND_SWITCH, 2, &ps),
                CUDA_SUCCESS) ||
        !EXPECT("cond_add_while_0", add_conditional(&wh, g, ctx, loop, COND_WHILE, 1, &pw),
                CUDA_SUCCESS))
        return;
    if (!expect_true("cond_bodies_given", p1 && p0 && ps && pw, "phGraph_out was not set"))
        return;
    CUgraph b1 = p1[0], b0 = p0[0], bs[2] = {ps[0], ps[1]}, bw = pw[0];
    expect_true("cond_bodies_differ",
                b1 != NULL && b0 != NULL && bs[0] != NULL && bs[1] != NULL && bw != NULL &&
                    bs[0] != bs[1] && b1 != b0,
                "the body graphs are missing or shared");
    int type = -1;
    EXPECT("cond_type", cu.GraphNodeGetType(if1, &type), CUDA_SUCCESS);
    expect_true("cond_is_conditional", type == TYPE_CONDITIONAL, "not a conditional node");
    if (!body_fill("cond_body_if_1", b1, &a1, e1, 3) ||
        !body_fill("cond_body_if_0", b0, &a2, e2, 4) ||
        !body_fill("cond_body_case_0", bs[0], &a3, e3, 10) ||
        !body_fill("cond_body_case_1", bs[1], &a4, e3, 11) ||
        !body_fill("cond_body_while_0", bw, &a5, e4, 1))
        return;
    size_t count = 0;
    EXPECT("cond_body_nodes", cu.GraphGetNodes(b1, NULL, &count), CUDA_SUCCESS);
    expect_true("cond_body_has_node", count == 1, "the body graph does not hold its node");

    CUgraphExec e = NULL;
    if (EXPECT("cond_instantiate", cu.GraphInstantiate(&e, g, 0), CUDA_SUCCESS) &&
        launch("cond_launch", e, s)) {
        expect_true("cond_if_1_ran", all_words(e1, 3), "the IF body of a 1 did not run");
        expect_true("cond_if_0_skipped", all_words(e2, 0), "the IF body of a 0 ran");
        expect_true("cond_switch_picked_1", all_words(e3, 11), "the SWITCH did not run case 1");
        expect_true("cond_while_0_skipped", all_words(e4, 0), "the WHILE body of a 0 ran");
        EXPECT("cond_exec_destroy", cu.GraphExecDestroy(e), CUDA_SUCCESS);
    }
    show("cond_add_handle_taken", add_conditional(&bad, g, ctx, one, COND_IF, 1, &pb));
    /* Bad shapes, each on a handle of its own. */
    unsigned long long spare[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        EXPECT("cond_handle_spare",
               cu.GraphConditionalHandleCreate(&spare[i], g, ctx, 0, COND_ASSIGN_DEFAULT),
               CUDA_SUCCESS);
    show("cond_add_if_3_bodies", add_conditional(&bad, g, ctx, spare[0], COND_IF, 3, &pb));
    show("cond_add_while_2_bodies", add_conditional(&bad, g, ctx, spare[1], COND_WHILE, 2, &pb));
    show("cond_add_type_7", add_conditional(&bad, g, ctx, spare[2], 7, 1, &pb));
    node_params cp = typed(TYPE_CONDITIONAL);
    show("cond_set_params", cu.GraphNodeSetParams(if1, &cp));
    EXPECT("cond_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUdeviceptr d;
    CUstream s;
    char name[256] = {0};
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("device_name", cu.DeviceGetName(name, sizeof name, dev), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS) ||
        !EXPECT("alloc", cu.MemAlloc(&d, 4 * BYTES), CUDA_SUCCESS) ||
        !EXPECT("stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS))
        return checks_summary();
    int sim = strstr(name, "simulated") != NULL;
    if (!EXPECT("load", cu.ModuleLoadData(&mod, sim ? SIM_MODULE : GPU_MODULE), CUDA_SUCCESS) ||
        !EXPECT("function", cu.ModuleGetFunction(&fill, mod, "fill_u32"), CUDA_SUCCESS))
        return checks_summary();

    semaphore_nodes(s);
    semaphore_node_answers();
    generic_nodes(ctx, d, s);
    pageable_memcpy_set(ctx, d, s);
    conditional_nodes(ctx, d, s);

    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT("module_unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
    EXPECT("free", cu.MemFree(d), CUDA_SUCCESS);
    return checks_summary();
}
