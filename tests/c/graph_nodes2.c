/*
 * graph_nodes2: kernel node launch attributes.
 *
 * - cuGraphKernelNodeSetAttribute / GetAttribute: a priority, the cooperative
 *   flag and a memory synchronisation domain set on a kernel node read back;
 * - cuGraphKernelNodeCopyAttributes: another kernel node takes them all;
 * - a graph of the attributed node still runs its kernel;
 * - the results of an attribute call on an empty node and of an unknown
 *   attribute id are printed (the driver's code, compared on a GPU), and so
 *   is the priority of the attributed node's copy in a clone of its graph;
 * - batch memory-operation nodes (a met wait and a write): the write runs at
 *   each launch; the parameters read back and are replaced in the graph and
 *   in an executable graph; the results of a getter on an empty node and of
 *   nodes with flags 1 or no operations are printed;
 * - cuGraphConditionalHandleCreate: two handles of one graph differ; the
 *   result of unknown flags is printed.
 *
 * The kernel, fill_u32(unsigned *p, unsigned v, int n), is PTX on a GPU and
 * a built-in kernel on vgpu's simulated device, so it runs on both.
 *
 * Build:  cc -std=c11 -O2 -Wall -o graph_nodes2 graph_nodes2.c -ldl
 * Run:    ./graph_nodes2 [path/to/libcuda.so]
 */
#include "cuda_prelude.h"

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
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
_Static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS) == 72, "CUDA_KERNEL_NODE_PARAMS_v2 is 72 bytes");
/* CUstreamBatchMemOpParams as a write or wait: 48 bytes. */
typedef struct {
    unsigned int operation, pad0;
    CUdeviceptr address;
    unsigned long long value;
    unsigned int flags, pad1;
    CUdeviceptr alias;
    unsigned long long pad2;
} mem_op;
_Static_assert(sizeof(mem_op) == 48, "CUstreamBatchMemOpParams is 48 bytes");
typedef struct {
    CUcontext ctx;
    unsigned int count;
    mem_op *paramArray;
    unsigned int flags;
} batch_node_params;
/* CUlaunchAttributeValue (CUkernelNodeAttrValue): a 64-byte union. */
typedef union {
    char pad[64];
    int cooperative;
    int priority;
    int memSyncDomain;
} attr_value;

enum {
    BLOCK = 64,
    WORDS = 1024,
    ATTR_COOPERATIVE = 2,
    ATTR_PRIORITY = 8,
    ATTR_MEM_SYNC_DOMAIN = 10,
    ATTR_UNKNOWN = 99,
    OP_WAIT_VALUE_32 = 1,
    OP_WRITE_VALUE_32 = 2,
    WAIT_VALUE_GEQ = 0,
    NODE_TYPE_BATCH_MEM_OP = 12,
};

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
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*GraphCreate)(CUgraph *, unsigned int);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*GraphClone)(CUgraph *, CUgraph);
    CUresult (*GraphNodeFindInClone)(CUgraphNode *, CUgraphNode, CUgraph);
    CUresult (*GraphAddEmptyNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t);
    CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*GraphKernelNodeGetAttribute)(CUgraphNode, int, attr_value *);
    CUresult (*GraphKernelNodeSetAttribute)(CUgraphNode, int, const attr_value *);
    CUresult (*GraphKernelNodeCopyAttributes)(CUgraphNode, CUgraphNode);
    CUresult (*GraphAddBatchMemOpNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                       const batch_node_params *);
    CUresult (*GraphBatchMemOpNodeGetParams)(CUgraphNode, batch_node_params *);
    CUresult (*GraphBatchMemOpNodeSetParams)(CUgraphNode, const batch_node_params *);
    CUresult (*GraphExecBatchMemOpNodeSetParams)(CUgraphExec, CUgraphNode,
                                                 const batch_node_params *);
    CUresult (*GraphNodeGetType)(CUgraphNode, int *);
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
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(GraphCreate, "cuGraphCreate"),
    ENTRY(GraphDestroy, "cuGraphDestroy"),
    ENTRY(GraphClone, "cuGraphClone"),
    ENTRY(GraphNodeFindInClone, "cuGraphNodeFindInClone"),
    ENTRY(GraphAddEmptyNode, "cuGraphAddEmptyNode"),
    ENTRY(GraphAddKernelNode, "cuGraphAddKernelNode_v2"),
    ENTRY(GraphKernelNodeGetAttribute, "cuGraphKernelNodeGetAttribute"),
    ENTRY(GraphKernelNodeSetAttribute, "cuGraphKernelNodeSetAttribute"),
    ENTRY(GraphKernelNodeCopyAttributes, "cuGraphKernelNodeCopyAttributes"),
    ENTRY(GraphAddBatchMemOpNode, "cuGraphAddBatchMemOpNode"),
    ENTRY(GraphBatchMemOpNodeGetParams, "cuGraphBatchMemOpNodeGetParams"),
    ENTRY(GraphBatchMemOpNodeSetParams, "cuGraphBatchMemOpNodeSetParams"),
    ENTRY(GraphExecBatchMemOpNodeSetParams, "cuGraphExecBatchMemOpNodeSetParams"),
    ENTRY(GraphNodeGetType, "cuGraphNodeGetType"),
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

/* Prints a call's result, for results compared with the driver's on a GPU. */
static void show(const char *name, CUresult r)
{
    printf("ok %s: %s\n", name, error_name(cu.GetErrorName, r));
}

/* Reads attribute `attr` of `node` as an int (0 on failure, which EXPECT reports). */
static int get_int(const char *name, CUgraphNode node, int attr)
{
    attr_value v;
    memset(&v, 0, sizeof v);
    EXPECT(name, cu.GraphKernelNodeGetAttribute(node, attr, &v), CUDA_SUCCESS);
    return v.priority;
}

static CUresult set_int(CUgraphNode node, int attr, int value)
{
    attr_value v;
    memset(&v, 0, sizeof v);
    v.priority = value;
    return cu.GraphKernelNodeSetAttribute(node, attr, &v);
}

/* Sets, reads back and copies kernel node attributes, then runs the graph. */
static void kernel_attributes(CUfunction f, CUdeviceptr d, CUstream s)
{
    CUdeviceptr p = d;
    unsigned int v = 21;
    int n = WORDS;
    void *args[] = {&p, &v, &n};
    CUDA_KERNEL_NODE_PARAMS kp = {f, WORDS / BLOCK, 1, 1, BLOCK, 1, 1, 0, args, NULL, NULL, NULL};
    CUgraph g = NULL;
    CUgraphNode k1 = NULL, k2 = NULL, empty = NULL;
    if (!EXPECT("kattr_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS) ||
        !EXPECT("kattr_add_k1", cu.GraphAddKernelNode(&k1, g, NULL, 0, &kp), CUDA_SUCCESS) ||
        !EXPECT("kattr_add_k2", cu.GraphAddKernelNode(&k2, g, &k1, 1, &kp), CUDA_SUCCESS) ||
        !EXPECT("kattr_add_empty", cu.GraphAddEmptyNode(&empty, g, NULL, 0), CUDA_SUCCESS))
        return;

    printf("ok kattr_priority_default: %d\n", get_int("kattr_get_priority", k1, ATTR_PRIORITY));
    printf("ok kattr_cooperative_default: %d\n",
           get_int("kattr_get_cooperative", k1, ATTR_COOPERATIVE));

    EXPECT("kattr_set_priority", set_int(k1, ATTR_PRIORITY, -1), CUDA_SUCCESS);
    EXPECT("kattr_set_cooperative", set_int(k1, ATTR_COOPERATIVE, 1), CUDA_SUCCESS);
    EXPECT("kattr_set_domain", set_int(k1, ATTR_MEM_SYNC_DOMAIN, 1), CUDA_SUCCESS);
    expect_true("kattr_priority_read_back", get_int("kattr_get_priority", k1, ATTR_PRIORITY) == -1,
                "the priority set does not read back");
    expect_true("kattr_cooperative_read_back",
                get_int("kattr_get_cooperative", k1, ATTR_COOPERATIVE) == 1,
                "the cooperative flag set does not read back");
    expect_true("kattr_domain_read_back",
                get_int("kattr_get_domain", k1, ATTR_MEM_SYNC_DOMAIN) == 1,
                "the memory synchronisation domain set does not read back");

    EXPECT("kattr_copy", cu.GraphKernelNodeCopyAttributes(k2, k1), CUDA_SUCCESS);
    expect_true("kattr_copied_priority", get_int("kattr_get_priority", k2, ATTR_PRIORITY) == -1,
                "the copied node does not have the priority");
    expect_true("kattr_copied_domain", get_int("kattr_get_domain", k2, ATTR_MEM_SYNC_DOMAIN) == 1,
                "the copied node does not have the domain");

    CUgraph copy = NULL;
    CUgraphNode k1_copy = NULL;
    if (EXPECT("kattr_clone", cu.GraphClone(&copy, g), CUDA_SUCCESS) &&
        EXPECT("kattr_find_in_clone", cu.GraphNodeFindInClone(&k1_copy, k1, copy), CUDA_SUCCESS)) {
        printf("ok kattr_clone_priority: %d\n",
               get_int("kattr_get_clone_priority", k1_copy, ATTR_PRIORITY));
        EXPECT("kattr_clone_destroy", cu.GraphDestroy(copy), CUDA_SUCCESS);
    }

    attr_value out;
    show("kattr_get_on_empty", cu.GraphKernelNodeGetAttribute(empty, ATTR_PRIORITY, &out));
    show("kattr_set_on_empty", set_int(empty, ATTR_PRIORITY, 0));
    show("kattr_copy_from_empty", cu.GraphKernelNodeCopyAttributes(k2, empty));
    show("kattr_get_unknown", cu.GraphKernelNodeGetAttribute(k1, ATTR_UNKNOWN, &out));

    CUgraphExec exec = NULL;
    static unsigned int host[WORDS];
    EXPECT("kattr_reset", cu.MemsetD32(d, 0, WORDS), CUDA_SUCCESS);
    if (EXPECT("kattr_instantiate", cu.GraphInstantiate(&exec, g, 0), CUDA_SUCCESS)) {
        EXPECT("kattr_launch", cu.GraphLaunch(exec, s), CUDA_SUCCESS);
        EXPECT("kattr_sync", cu.StreamSynchronize(s), CUDA_SUCCESS);
        EXPECT("kattr_read", cu.MemcpyDtoH(host, d, sizeof host), CUDA_SUCCESS);
        int all = 1;
        for (int i = 0; i < WORDS; i++)
            all &= host[i] == 21;
        expect_true("kattr_kernel_ran", all, "the attributed kernel node did not fill the buffer");
        EXPECT("kattr_exec_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    }
    EXPECT("kattr_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

/* The first word of `d`. */
static unsigned int first_word(CUdeviceptr d)
{
    unsigned int v = 0;
    EXPECT("batch_read", cu.MemcpyDtoH(&v, d, sizeof v), CUDA_SUCCESS);
    return v;
}

/* A batch node of a met wait on word 1 and a write of `value` to word 0 of `d`. */
static void batch_ops(mem_op ops[2], CUdeviceptr d, unsigned int value)
{
    memset(ops, 0, 2 * sizeof *ops);
    ops[0].operation = OP_WAIT_VALUE_32;
    ops[0].address = d + 4;
    ops[0].value = 0;
    ops[0].flags = WAIT_VALUE_GEQ;
    ops[1].operation = OP_WRITE_VALUE_32;
    ops[1].address = d;
    ops[1].value = value;
}

/* Batch memory-operation nodes: run at each launch, read back, replaced in the graph
 * and in an executable graph. */
static void batch_nodes(CUcontext ctx, CUdeviceptr d, CUstream s)
{
    mem_op ops[2];
    batch_ops(ops, d, 7);
    batch_node_params p = {ctx, 2, ops, 0};
    CUgraph g = NULL;
    CUgraphNode node = NULL, empty = NULL;
    CUgraphExec exec = NULL;
    if (!EXPECT("batch_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS) ||
        !EXPECT("batch_add", cu.GraphAddBatchMemOpNode(&node, g, NULL, 0, &p), CUDA_SUCCESS) ||
        !EXPECT("batch_add_empty", cu.GraphAddEmptyNode(&empty, g, NULL, 0), CUDA_SUCCESS))
        return;
    int type = -1;
    EXPECT("batch_type", cu.GraphNodeGetType(node, &type), CUDA_SUCCESS);
    expect_true("batch_is_batch_node", type == NODE_TYPE_BATCH_MEM_OP,
                "the node is not a batch memory-operation node");
    batch_node_params got;
    memset(&got, 0, sizeof got);
    EXPECT("batch_get", cu.GraphBatchMemOpNodeGetParams(node, &got), CUDA_SUCCESS);
    expect_true("batch_get_params",
                got.ctx == ctx && got.count == 2 && got.flags == 0 && got.paramArray != NULL &&
                    got.paramArray[1].operation == OP_WRITE_VALUE_32 &&
                    got.paramArray[1].address == d && (unsigned int)got.paramArray[1].value == 7,
                "the node's parameters do not read back");

    EXPECT("batch_reset", cu.MemsetD32(d, 0, WORDS), CUDA_SUCCESS);
    if (EXPECT("batch_instantiate", cu.GraphInstantiate(&exec, g, 0), CUDA_SUCCESS)) {
        EXPECT("batch_launch", cu.GraphLaunch(exec, s), CUDA_SUCCESS);
        EXPECT("batch_sync", cu.StreamSynchronize(s), CUDA_SUCCESS);
        expect_true("batch_ran", first_word(d) == 7, "the batch node did not write its value");
        batch_ops(ops, d, 11);
        EXPECT("batch_exec_set", cu.GraphExecBatchMemOpNodeSetParams(exec, node, &p),
               CUDA_SUCCESS);
        EXPECT("batch_exec_launch", cu.GraphLaunch(exec, s), CUDA_SUCCESS);
        EXPECT("batch_exec_sync", cu.StreamSynchronize(s), CUDA_SUCCESS);
        expect_true("batch_exec_set_ran", first_word(d) == 11,
                    "the executable graph's batch node did not take its new value");
        EXPECT("batch_exec_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    }
    batch_ops(ops, d, 9);
    EXPECT("batch_set", cu.GraphBatchMemOpNodeSetParams(node, &p), CUDA_SUCCESS);
    memset(&got, 0, sizeof got);
    EXPECT("batch_get_after_set", cu.GraphBatchMemOpNodeGetParams(node, &got), CUDA_SUCCESS);
    expect_true("batch_set_params", got.count == 2 && (unsigned int)got.paramArray[1].value == 9,
                "the node did not take its new parameters");
    exec = NULL;
    if (EXPECT("batch_instantiate_after_set", cu.GraphInstantiate(&exec, g, 0), CUDA_SUCCESS)) {
        EXPECT("batch_launch_after_set", cu.GraphLaunch(exec, s), CUDA_SUCCESS);
        EXPECT("batch_sync_after_set", cu.StreamSynchronize(s), CUDA_SUCCESS);
        expect_true("batch_set_ran", first_word(d) == 9, "the batch node did not use its new value");
        EXPECT("batch_exec_destroy", cu.GraphExecDestroy(exec), CUDA_SUCCESS);
    }

    show("batch_get_on_empty", cu.GraphBatchMemOpNodeGetParams(empty, &got));
    batch_node_params flagged = {ctx, 2, ops, 1};
    CUgraphNode bad = NULL;
    show("batch_add_flags_1", cu.GraphAddBatchMemOpNode(&bad, g, NULL, 0, &flagged));
    batch_node_params none = {ctx, 0, NULL, 0};
    show("batch_add_no_ops", cu.GraphAddBatchMemOpNode(&bad, g, NULL, 0, &none));
    EXPECT("batch_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

/* Conditional handles: two of one graph differ; unknown flags are printed. */
static void conditional_handles(CUcontext ctx)
{
    CUgraph g = NULL;
    unsigned long long a = 0, b = 0, c = 0;
    if (!EXPECT("cond_graph", cu.GraphCreate(&g, 0), CUDA_SUCCESS))
        return;
    EXPECT("cond_create", cu.GraphConditionalHandleCreate(&a, g, ctx, 0, 0), CUDA_SUCCESS);
    EXPECT("cond_create_default", cu.GraphConditionalHandleCreate(&b, g, ctx, 1, 1),
           CUDA_SUCCESS);
    expect_true("cond_handles_differ", a != b, "two conditional handles are equal");
    show("cond_create_flags_2", cu.GraphConditionalHandleCreate(&c, g, ctx, 0, 2));
    EXPECT("cond_graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUdeviceptr d;
    CUstream s;
    char name[256] = {0};
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("device_name", cu.DeviceGetName(name, sizeof name, dev), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS) ||
        !EXPECT("alloc", cu.MemAlloc(&d, WORDS * 4), CUDA_SUCCESS) ||
        !EXPECT("stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS))
        return checks_summary();
    int sim = strstr(name, "simulated") != NULL;
    if (!EXPECT("load", cu.ModuleLoadData(&mod, sim ? SIM_MODULE : GPU_MODULE), CUDA_SUCCESS) ||
        !EXPECT("function", cu.ModuleGetFunction(&f, mod, "fill_u32"), CUDA_SUCCESS))
        return checks_summary();

    kernel_attributes(f, d, s);
    batch_nodes(ctx, d, s);
    conditional_handles(ctx);

    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT("module_unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
    EXPECT("free", cu.MemFree(d), CUDA_SUCCESS);
    return checks_summary();
}
