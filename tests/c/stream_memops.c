/*
 * stream_memops: stream memory operations (cuStreamWriteValue32/64,
 * cuStreamWaitValue32/64) in stream order.
 *
 * - each write form (first, _v2, _ptsz on the per-thread stream) stores its
 *   value, of its width, at a device address, after the stream's earlier work;
 * - a wait whose condition holds (GEQ, EQ, AND, NOR, 32 and 64 bits, with
 *   FLUSH) lets the stream's later work run;
 * - one stream waits for a flag that another stream writes after its own
 *   work, then copies that work's result: the copy sees it (the writer's
 *   work is enqueued before the wait, so the program is deterministic);
 * - a wait whose condition is not met holds its stream (cuStreamQuery answers
 *   CUDA_ERROR_NOT_READY) until the host writes the value;
 * - every wait for a stream polls cuStreamQuery for at most 20 seconds, so a
 *   wait that is never met on a real device ends the program with a FAIL
 *   instead of a hang;
 * - a write captured into a graph runs at each launch, as one batch
 *   memory-operation node;
 * - a batch (cuStreamBatchMemOp_v2 and its _ptsz form) of writes and waits
 *   runs in order;
 * - bad flags give CUDA_ERROR_INVALID_VALUE.
 * With CU_TEST_INVALID_HANDLES=1 (vgpu and its simulated device only) it also
 * writes outside every allocation (alone and in a batch), which vgpu refuses with
 * CUDA_ERROR_INVALID_VALUE (the driver would fault on the device).
 *
 * It uses no module, so it runs on the simulated device and on a real GPU
 * alike (the output is the same).
 *
 * Build:  cc -std=c11 -O2 -Wall -o stream_memops stream_memops.c -ldl
 * Usage:  stream_memops [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
/* CUstreamBatchMemOpParams as a wait or write operation (48 bytes). */
typedef struct {
    unsigned int operation, pad0;
    CUdeviceptr address;
    unsigned long long value; /* value (32-bit operations: the low half) */
    unsigned int flags, pad1;
    CUdeviceptr alias;
    unsigned long long pad2;
} batch_op;
_Static_assert(sizeof(batch_op) == 48, "CUstreamBatchMemOpParams is 48 bytes");
typedef CUresult (*write32_fn)(CUstream, CUdeviceptr, unsigned int, unsigned int);
typedef CUresult (*write64_fn)(CUstream, CUdeviceptr, unsigned long long, unsigned int);

enum {
    WORDS = 64,
    SETTLE_SECONDS = 20,
    CUDA_ERROR_NOT_READY = 600,
    WAIT_GEQ = 0,
    WAIT_EQ = 1,
    WAIT_AND = 2,
    WAIT_NOR = 3,
    WAIT_FLUSH = 1 << 30,
    CU_STREAM_NON_BLOCKING = 1,
    CAPTURE_MODE_GLOBAL = 0,
    NODE_TYPE_BATCH_MEM_OP = 12,
    OP_WAIT_32 = 1,
    OP_WRITE_32 = 2,
    OP_WAIT_64 = 4,
    OP_WRITE_64 = 5,
};

#define CU_STREAM_PER_THREAD ((CUstream)0x2)

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamQuery)(CUstream);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
    CUresult (*GraphNodeGetType)(CUgraphNode, int *);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);
    write32_fn Write32, Write32V2, Write32Ptsz, Write32V2Ptsz;
    write64_fn Write64, Write64V2, Write64Ptsz, Write64V2Ptsz;
    write32_fn Wait32, Wait32V2, Wait32V2Ptsz;
    write64_fn Wait64, Wait64V2, Wait64V2Ptsz;
    CUresult (*BatchMemOp)(CUstream, unsigned int, batch_op *, unsigned int);
    CUresult (*BatchMemOpPtsz)(CUstream, unsigned int, batch_op *, unsigned int);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemsetD32Async, "cuMemsetD32Async"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamQuery, "cuStreamQuery"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    ENTRY(StreamEndCapture, "cuStreamEndCapture"),
    ENTRY(GraphGetNodes, "cuGraphGetNodes"),
    ENTRY(GraphNodeGetType, "cuGraphNodeGetType"),
    ENTRY(GraphInstantiate, "cuGraphInstantiateWithFlags"),
    ENTRY(GraphLaunch, "cuGraphLaunch"),
    ENTRY(GraphExecDestroy, "cuGraphExecDestroy"),
    ENTRY(GraphDestroy, "cuGraphDestroy"),
    ENTRY(Write32, "cuStreamWriteValue32"),
    ENTRY(Write32V2, "cuStreamWriteValue32_v2"),
    ENTRY(Write32Ptsz, "cuStreamWriteValue32_ptsz"),
    ENTRY(Write32V2Ptsz, "cuStreamWriteValue32_v2_ptsz"),
    ENTRY(Write64, "cuStreamWriteValue64"),
    ENTRY(Write64V2, "cuStreamWriteValue64_v2"),
    ENTRY(Write64Ptsz, "cuStreamWriteValue64_ptsz"),
    ENTRY(Write64V2Ptsz, "cuStreamWriteValue64_v2_ptsz"),
    ENTRY(Wait32, "cuStreamWaitValue32"),
    ENTRY(Wait32V2, "cuStreamWaitValue32_v2"),
    ENTRY(Wait32V2Ptsz, "cuStreamWaitValue32_v2_ptsz"),
    ENTRY(Wait64, "cuStreamWaitValue64"),
    ENTRY(Wait64V2, "cuStreamWaitValue64_v2"),
    ENTRY(Wait64V2Ptsz, "cuStreamWaitValue64_v2_ptsz"),
    ENTRY(BatchMemOp, "cuStreamBatchMemOp_v2"),
    ENTRY(BatchMemOpPtsz, "cuStreamBatchMemOp_v2_ptsz"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* The WORDS 32-bit words at d. */
static unsigned int host[WORDS];

static int read_back(CUdeviceptr d)
{
    return cu.MemcpyDtoH(host, d, sizeof host) == CUDA_SUCCESS;
}

static unsigned long long word64(int i)
{
    unsigned long long v;
    memcpy(&v, &host[i], sizeof v);
    return v;
}

/* Waits for stream `s` to finish its work, polling cuStreamQuery for at most
 * SETTLE_SECONDS: a wait-value whose condition is never met holds a stream for ever
 * on a real device, so a stream still busy then is a failure, and the program ends at
 * once (its held stream would block the rest, and its teardown). */
static int settle(const char *name, CUstream s)
{
    for (long i = 0; i < SETTLE_SECONDS * 1000L; i++) {
        CUresult r = cu.StreamQuery(s);
        if (r != CUDA_ERROR_NOT_READY)
            return EXPECT(name, r, CUDA_SUCCESS);
        usleep(1000);
    }
    expect_true(name, 0, "the stream is still busy: a wait-value was never met");
    checks_summary();
    fflush(stdout);
    _exit(1);
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    CUstream s, t;
    CUdeviceptr d, flag, out;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS) ||
        !EXPECT("stream", cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS) ||
        !EXPECT("stream_2", cu.StreamCreate(&t, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS) ||
        !EXPECT("alloc", cu.MemAlloc(&d, WORDS * 4), CUDA_SUCCESS) ||
        !EXPECT("alloc_flag", cu.MemAlloc(&flag, 8), CUDA_SUCCESS) ||
        !EXPECT("alloc_out", cu.MemAlloc(&out, WORDS * 4), CUDA_SUCCESS))
        return checks_summary();

    /* Driver 580 refuses the first forms (CUDA 8's, without _v2) with
     * CUDA_ERROR_NOT_SUPPORTED; the _v2 forms below are the working ones. */
    EXPECT("v1_write32", cu.Write32(s, d, 1, 0), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT("v1_write64", cu.Write64(s, d, 1, 0), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT("v1_write32_ptsz", cu.Write32Ptsz(NULL, d, 1, 0), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT("v1_write64_ptsz", cu.Write64Ptsz(NULL, d, 1, 0), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT("v1_wait32", cu.Wait32(s, d, 0, WAIT_GEQ), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT("v1_wait64", cu.Wait64(s, d, 0, WAIT_GEQ), CUDA_ERROR_NOT_SUPPORTED);

    /* Writes, after the stream's earlier memset, each form at its own word. */
    EXPECT("memset_zero", cu.MemsetD32Async(d, 0, WORDS, s), CUDA_SUCCESS);
    EXPECT("write32", cu.Write32V2(s, d + 0, 0x11111111u, 0), CUDA_SUCCESS);
    EXPECT("write32_v2", cu.Write32V2(s, d + 4, 0x22222222u, 0), CUDA_SUCCESS);
    /* Driver 580 on an H200 refuses CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER. */
    EXPECT("write32_no_barrier", cu.Write32V2(s, d + 8, 0x33333333u, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT("write64", cu.Write64V2(s, d + 16, 0x0102030405060708ull, 0), CUDA_SUCCESS);
    EXPECT("write64_v2", cu.Write64V2(s, d + 24, 0xF0E0D0C0B0A09080ull, 0), CUDA_SUCCESS);
    settle("synchronize_writes", s);
    expect_true("read_writes", read_back(d), "cuMemcpyDtoH failed");
    expect_true("write32_value", host[0] == 0x11111111u, "word 0 does not hold the write");
    expect_true("write32_v2_value", host[1] == 0x22222222u, "word 1 does not hold the write");
    expect_true("write32_no_barrier_not_written", host[2] == 0, "the refused write wrote word 2");
    expect_true("write32_width", host[3] == 0, "a 32-bit write touched the next word");
    expect_true("write64_value", word64(4) == 0x0102030405060708ull, "words 4-5 do not hold the write");
    expect_true("write64_v2_value", word64(6) == 0xF0E0D0C0B0A09080ull,
                "words 6-7 do not hold the write");

    /* The per-thread default stream forms. */
    EXPECT("write32_ptsz", cu.Write32V2Ptsz(CU_STREAM_PER_THREAD, d + 32, 7, 0), CUDA_SUCCESS);
    EXPECT("write32_v2_ptsz", cu.Write32V2Ptsz(NULL, d + 36, 8, 0), CUDA_SUCCESS);
    EXPECT("write64_ptsz", cu.Write64V2Ptsz(NULL, d + 40, 9, 0), CUDA_SUCCESS);
    EXPECT("write64_v2_ptsz", cu.Write64V2Ptsz(CU_STREAM_PER_THREAD, d + 48, 10, 0), CUDA_SUCCESS);
    settle("synchronize_ptsz", CU_STREAM_PER_THREAD);
    expect_true("read_ptsz", read_back(d), "cuMemcpyDtoH failed");
    expect_true("ptsz_values",
                host[8] == 7 && host[9] == 8 && word64(10) == 9 && word64(12) == 10,
                "the per-thread stream's writes are not all there");

    /* Waits whose condition holds let the stream go on. */
    EXPECT("wait32_geq", cu.Wait32V2(s, d + 0, 0x11111110u, WAIT_GEQ), CUDA_SUCCESS);
    EXPECT("wait32_eq", cu.Wait32V2(s, d + 4, 0x22222222u, WAIT_EQ), CUDA_SUCCESS);
    EXPECT("wait32_and", cu.Wait32V2(s, d + 0, 0x00000001u, WAIT_AND), CUDA_SUCCESS);
    EXPECT("wait32_nor", cu.Wait32V2(s, d + 12, 0x0000FFFFu, WAIT_NOR), CUDA_SUCCESS);
    /* An H200 cannot flush remote writes (CAN_FLUSH_REMOTE_WRITES 0). */
    EXPECT("wait32_flush", cu.Wait32V2(s, d + 0, 0x11111111u, WAIT_EQ | WAIT_FLUSH),
           CUDA_ERROR_NOT_SUPPORTED);
    EXPECT("wait64_eq", cu.Wait64V2(s, d + 16, 0x0102030405060708ull, WAIT_EQ), CUDA_SUCCESS);
    EXPECT("wait64_geq", cu.Wait64V2(s, d + 24, 0x8000000000000000ull, WAIT_GEQ), CUDA_SUCCESS);
    EXPECT("wait32_v2_ptsz", cu.Wait32V2Ptsz(NULL, d + 32, 7, WAIT_EQ), CUDA_SUCCESS);
    EXPECT("wait64_v2_ptsz", cu.Wait64V2Ptsz(NULL, d + 40, 9, WAIT_EQ), CUDA_SUCCESS);
    EXPECT("memset_after_waits", cu.MemsetD32Async(d + 128, 5, 4, s), CUDA_SUCCESS);
    settle("synchronize_waits", s);
    settle("synchronize_waits_ptsz", CU_STREAM_PER_THREAD);
    expect_true("read_waits", read_back(d), "cuMemcpyDtoH failed");
    expect_true("work_after_waits_ran", host[32] == 5 && host[35] == 5,
                "the memset after the waits did not run");

    /* Stream t waits for stream s's flag, then copies what s wrote before it. */
    EXPECT("flag_zero", cu.MemsetD32Async(flag, 0, 2, s), CUDA_SUCCESS);
    EXPECT("producer_memset", cu.MemsetD32Async(d, 0xABCD, WORDS, s), CUDA_SUCCESS);
    EXPECT("producer_flag", cu.Write32V2(s, flag, 1, 0), CUDA_SUCCESS);
    EXPECT("consumer_wait", cu.Wait32V2(t, flag, 1, WAIT_EQ), CUDA_SUCCESS);
    EXPECT("consumer_copy", cu.MemcpyDtoDAsync(out, d, WORDS * 4, t), CUDA_SUCCESS);
    settle("synchronize_consumer", t);
    settle("synchronize_producer", s);
    expect_true("read_consumer", read_back(out), "cuMemcpyDtoH failed");
    int all = 1;
    for (int i = 0; i < WORDS; i++)
        all &= host[i] == 0xABCD;
    expect_true("consumer_saw_producer", all, "the copy after the wait missed the producer's memset");

    /* A wait whose condition is not met holds its stream until another stream writes
     * the value. */
    EXPECT("held_wait", cu.Wait32V2(t, flag + 4, 5, WAIT_EQ), CUDA_SUCCESS);
    EXPECT("held_query", cu.StreamQuery(t), CUDA_ERROR_NOT_READY);
    /* Released by a write on stream s: a synchronous memset from the host does
     * not get past the held stream on a real device. */
    EXPECT("release_write", cu.Write32V2(s, flag + 4, 5, 0), CUDA_SUCCESS);
    settle("released", t);

    /* A captured write is a batch memory-operation node, run at each launch. */
    CUgraph g = NULL;
    CUgraphExec e = NULL;
    CUgraphNode node;
    size_t n = 1;
    int type = -1;
    EXPECT("capture_begin", cu.StreamBeginCapture(s, CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT("capture_write", cu.Write32V2(s, d + 60, 0xC0FFEE, 0), CUDA_SUCCESS);
    EXPECT("capture_end", cu.StreamEndCapture(s, &g), CUDA_SUCCESS);
    EXPECT("captured_nodes", cu.GraphGetNodes(g, &node, &n), CUDA_SUCCESS);
    expect_true("captured_one_node", n == 1, "the capture did not make one node");
    EXPECT("captured_type", cu.GraphNodeGetType(node, &type), CUDA_SUCCESS);
    expect_true("captured_batch_mem_op", type == NODE_TYPE_BATCH_MEM_OP,
                "the captured write is not a batch memory-operation node");
    expect_true("capture_did_not_run", read_back(d) && host[15] == 0xABCD,
                "the captured write ran at capture");
    EXPECT("instantiate", cu.GraphInstantiate(&e, g, 0), CUDA_SUCCESS);
    EXPECT("launch", cu.GraphLaunch(e, s), CUDA_SUCCESS);
    settle("synchronize_launch", s);
    expect_true("launch_wrote", read_back(d) && host[15] == 0xC0FFEE,
                "the launched graph did not write");
    EXPECT("exec_destroy", cu.GraphExecDestroy(e), CUDA_SUCCESS);
    EXPECT("graph_destroy", cu.GraphDestroy(g), CUDA_SUCCESS);

    /* A batch: two writes, then a wait on the first, then a 64-bit write. */
    batch_op ops[4];
    memset(ops, 0, sizeof ops);
    ops[0] = (batch_op){OP_WRITE_32, 0, d + 64, 0xAAAA0001u, 0, 0, 0, 0};
    ops[1] = (batch_op){OP_WRITE_32, 0, d + 68, 0xAAAA0002u, 0, 0, 0, 0};
    ops[2] = (batch_op){OP_WAIT_32, 0, d + 64, 0xAAAA0001u, WAIT_EQ, 0, 0, 0};
    ops[3] = (batch_op){OP_WRITE_64, 0, d + 72, 0x1122334455667788ull, 0, 0, 0, 0};
    EXPECT("batch", cu.BatchMemOp(s, 4, ops, 0), CUDA_SUCCESS);
    settle("synchronize_batch", s);
    expect_true("batch_values",
                read_back(d) && host[16] == 0xAAAA0001u && host[17] == 0xAAAA0002u &&
                    word64(18) == 0x1122334455667788ull,
                "the batch's writes are not all there");
    batch_op wait64 = {OP_WAIT_64, 0, d + 72, 0x1122334455667788ull, WAIT_EQ, 0, 0, 0};
    EXPECT("batch_ptsz", cu.BatchMemOpPtsz(NULL, 1, &wait64, 0), CUDA_SUCCESS);
    settle("synchronize_batch_ptsz", CU_STREAM_PER_THREAD);
    EXPECT("batch_bad_flags", cu.BatchMemOp(s, 1, &wait64, 1), CUDA_ERROR_INVALID_VALUE);

    /* Bad flags. */
    EXPECT("write_bad_flags", cu.Write32V2(s, d, 1, 2), CUDA_ERROR_INVALID_VALUE);
    EXPECT("write64_bad_flags", cu.Write64V2(s, d, 1, 4), CUDA_ERROR_INVALID_VALUE);
    EXPECT("wait_bad_flags", cu.Wait32V2(s, d, 1, 4), CUDA_ERROR_INVALID_VALUE);
    settle("synchronize_after_refusals", s);

    if (invalid_handle_checks()) {
        /* Outside every allocation: vgpu refuses it before the driver sees it. */
        EXPECT("write_past_allocation", cu.Write32V2(s, d + WORDS * 4, 1, 0),
               CUDA_ERROR_INVALID_VALUE);
        EXPECT("write64_straddling", cu.Write64V2(s, flag + 4, 1, 0), CUDA_ERROR_INVALID_VALUE);
        EXPECT("wait_unallocated", cu.Wait32V2(s, 0x1000, 1, WAIT_EQ), CUDA_ERROR_INVALID_VALUE);
        batch_op wild = {OP_WRITE_32, 0, d + WORDS * 4, 1, 0, 0, 0, 0};
        EXPECT("batch_past_allocation", cu.BatchMemOp(s, 1, &wild, 0), CUDA_ERROR_INVALID_VALUE);
        settle("synchronize_after_invalid", s);
    }

    EXPECT("free", cu.MemFree(d), CUDA_SUCCESS);
    EXPECT("free_flag", cu.MemFree(flag), CUDA_SUCCESS);
    EXPECT("free_out", cu.MemFree(out), CUDA_SUCCESS);
    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT("stream_destroy_2", cu.StreamDestroy(t), CUDA_SUCCESS);
    return checks_summary();
}
