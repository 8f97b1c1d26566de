/*
 * green_contexts: the first device's SM resource, split into groups (the
 * query form, then two groups and what remains), a resource descriptor of
 * one group, a green context over it: its id, its SMs, its context (made
 * current, used for an allocation and a copy, and for cuCtxGetDevResource),
 * a stream of it (cuStreamGetGreenCtx, a copy on it), an event recorded on
 * it and waited for; then its destruction, and a forged green context.
 *
 * The driver's SM counts are the device's: they are printed, so that runs
 * natively and through vgpu can be compared line by line.
 *
 * Build:  cc -std=c11 -O2 -Wall -o green_contexts green_contexts.c -ldl
 * Usage:  green_contexts [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef struct CUgreenCtx_st *CUgreenCtx;
typedef struct CUdevResourceDesc_st *CUdevResourceDesc;

typedef struct {
    unsigned int smCount, minSmPartitionSize, smCoscheduledAlignment;
} CUdevSmResource;

typedef struct {
    int type;
    unsigned char internal_padding[92];
    union {
        CUdevSmResource sm;
        unsigned char oversize[48];
    } res;
} CUdevResource;

_Static_assert(sizeof(CUdevResource) == 144, "CUdevResource is 144 bytes");

enum {
    RESOURCE_TYPE_SM = 1,
    GREEN_CTX_DEFAULT_STREAM = 1,
    STREAM_NON_BLOCKING = 1,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned int);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*DeviceGetDevResource)(CUdevice, CUdevResource *, int);
    CUresult (*CtxGetDevResource)(CUcontext, CUdevResource *, int);
    CUresult (*GreenCtxGetDevResource)(CUgreenCtx, CUdevResource *, int);
    CUresult (*DevSmResourceSplitByCount)(CUdevResource *, unsigned int *, const CUdevResource *,
                                          CUdevResource *, unsigned int, unsigned int);
    CUresult (*DevResourceGenerateDesc)(CUdevResourceDesc *, CUdevResource *, unsigned int);
    CUresult (*GreenCtxCreate)(CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned int);
    CUresult (*GreenCtxDestroy)(CUgreenCtx);
    CUresult (*CtxFromGreenCtx)(CUcontext *, CUgreenCtx);
    CUresult (*GreenCtxGetId)(CUgreenCtx, unsigned long long *);
    CUresult (*GreenCtxRecordEvent)(CUgreenCtx, CUevent);
    CUresult (*GreenCtxWaitEvent)(CUgreenCtx, CUevent);
    CUresult (*GreenCtxStreamCreate)(CUstream *, CUgreenCtx, unsigned int, int);
    CUresult (*StreamGetGreenCtx)(CUstream, CUgreenCtx *);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxGetCurrent, "cuCtxGetCurrent"),
    ENTRY(CtxGetDevice, "cuCtxGetDevice"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(EventCreate, "cuEventCreate"),
    ENTRY(EventSynchronize, "cuEventSynchronize"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(DeviceGetDevResource, "cuDeviceGetDevResource"),
    ENTRY(CtxGetDevResource, "cuCtxGetDevResource"),
    ENTRY(GreenCtxGetDevResource, "cuGreenCtxGetDevResource"),
    ENTRY(DevSmResourceSplitByCount, "cuDevSmResourceSplitByCount"),
    ENTRY(DevResourceGenerateDesc, "cuDevResourceGenerateDesc"),
    ENTRY(GreenCtxCreate, "cuGreenCtxCreate"),
    ENTRY(GreenCtxDestroy, "cuGreenCtxDestroy"),
    ENTRY(CtxFromGreenCtx, "cuCtxFromGreenCtx"),
    ENTRY(GreenCtxGetId, "cuGreenCtxGetId"),
    ENTRY(GreenCtxRecordEvent, "cuGreenCtxRecordEvent"),
    ENTRY(GreenCtxWaitEvent, "cuGreenCtxWaitEvent"),
    ENTRY(GreenCtxStreamCreate, "cuGreenCtxStreamCreate"),
    ENTRY(StreamGetGreenCtx, "cuStreamGetGreenCtx"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* A call that must fail: which error is the driver's to choose; its name is printed. */
static int expect_failure(const char *name, CUresult got)
{
    checks++;
    if (got != CUDA_SUCCESS) {
        printf("ok %s: %s\n", name, error_name(cu.GetErrorName, got));
        return 1;
    }
    failures++;
    printf("FAIL %s: succeeded, expected an error\n", name);
    return 0;
}

int main(int argc, char **argv)
{
    const char *library = argc > 1 ? argv[1] : NULL;
    cu_load(library, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext primary;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(primary), CUDA_SUCCESS))
        return checks_summary();

    /* The device's SMs. */
    CUdevResource all;
    memset(&all, 0, sizeof(all));
    if (!EXPECT("device_resource", cu.DeviceGetDevResource(dev, &all, RESOURCE_TYPE_SM),
                CUDA_SUCCESS))
        return checks_summary();
    printf("ok device_sms: %u min %u align %u\n", all.res.sm.smCount,
           all.res.sm.minSmPartitionSize, all.res.sm.smCoscheduledAlignment);
    expect_true("device_resource_type", all.type == RESOURCE_TYPE_SM && all.res.sm.smCount > 0,
                "not an SM resource with SMs");
    CUdevResource dummy;
    expect_failure("device_resource_bad_type", cu.DeviceGetDevResource(dev, &dummy, 7));
    CUdevResource ctx_res;
    memset(&ctx_res, 0, sizeof(ctx_res));
    EXPECT("primary_resource", cu.CtxGetDevResource(primary, &ctx_res, RESOURCE_TYPE_SM),
           CUDA_SUCCESS);
    expect_true("primary_resource_sms", ctx_res.res.sm.smCount == all.res.sm.smCount,
                "the primary context does not have every SM");

    /* Splits: the query form, then two groups of 16 SMs and the rest. */
    unsigned int groups = 0;
    EXPECT("split_query", cu.DevSmResourceSplitByCount(NULL, &groups, &all, NULL, 0, 16),
           CUDA_SUCCESS);
    printf("ok split_query_groups: %u\n", groups);
    CUdevResource parts[2], rest;
    memset(parts, 0, sizeof(parts));
    memset(&rest, 0, sizeof(rest));
    groups = 2;
    EXPECT("split_two", cu.DevSmResourceSplitByCount(parts, &groups, &all, &rest, 0, 16),
           CUDA_SUCCESS);
    printf("ok split_two_values: %u groups of %u, %u remaining\n", groups,
           parts[0].res.sm.smCount, rest.res.sm.smCount);
    expect_true("split_two_sum",
                groups == 2 && parts[0].res.sm.smCount >= 16 &&
                    parts[0].res.sm.smCount == parts[1].res.sm.smCount &&
                    2 * parts[0].res.sm.smCount + rest.res.sm.smCount == all.res.sm.smCount,
                "the groups and the rest are not the device's SMs");
    groups = 1;
    expect_failure("split_too_large",
                   cu.DevSmResourceSplitByCount(parts, &groups, &all, &rest, 0, 100000));

    /* A green context over one group. */
    CUdevResourceDesc desc = NULL;
    if (!EXPECT("generate_desc", cu.DevResourceGenerateDesc(&desc, &parts[0], 1), CUDA_SUCCESS))
        return checks_summary();
    CUgreenCtx g = NULL;
    expect_failure("green_create_bad_flags", cu.GreenCtxCreate(&g, desc, dev, 0));
    if (!EXPECT("green_create", cu.GreenCtxCreate(&g, desc, dev, GREEN_CTX_DEFAULT_STREAM),
                CUDA_SUCCESS))
        return checks_summary();
    unsigned long long id = 0;
    EXPECT("green_id", cu.GreenCtxGetId(g, &id), CUDA_SUCCESS);
    expect_true("green_id_value", id != 0, "a green context's id is not 0");
    CUdevResource g_res;
    memset(&g_res, 0, sizeof(g_res));
    EXPECT("green_resource", cu.GreenCtxGetDevResource(g, &g_res, RESOURCE_TYPE_SM),
           CUDA_SUCCESS);
    expect_true("green_resource_sms", g_res.res.sm.smCount == parts[0].res.sm.smCount,
                "the green context does not have its group's SMs");

    /* Its context, like any context. */
    CUcontext gctx = NULL, cur = NULL;
    EXPECT("ctx_from_green", cu.CtxFromGreenCtx(&gctx, g), CUDA_SUCCESS);
    expect_true("ctx_from_green_other", gctx != NULL && gctx != primary,
                "the green context's context is not a context of its own");
    EXPECT("ctx_from_green_again", cu.CtxFromGreenCtx(&cur, g), CUDA_SUCCESS);
    expect_true("ctx_from_green_same", cur == gctx, "a second ask gives another context");
    EXPECT("green_ctx_set_current", cu.CtxSetCurrent(gctx), CUDA_SUCCESS);
    EXPECT("green_ctx_get_current", cu.CtxGetCurrent(&cur), CUDA_SUCCESS);
    expect_true("green_ctx_is_current", cur == gctx, "not the context set");
    CUdevice gdev = -1;
    EXPECT("green_ctx_device", cu.CtxGetDevice(&gdev), CUDA_SUCCESS);
    expect_true("green_ctx_device_value", gdev == dev, "not the green context's device");
    memset(&ctx_res, 0, sizeof(ctx_res));
    EXPECT("green_ctx_resource", cu.CtxGetDevResource(gctx, &ctx_res, RESOURCE_TYPE_SM),
           CUDA_SUCCESS);
    expect_true("green_ctx_resource_sms", ctx_res.res.sm.smCount == parts[0].res.sm.smCount,
                "the context does not have the green context's SMs");

    enum { BYTES = 4096 };
    static unsigned char in[BYTES], out[BYTES];
    for (int i = 0; i < BYTES; i++)
        in[i] = (unsigned char)(i * 11 + 5);
    CUdeviceptr d = 0;
    EXPECT("green_alloc", cu.MemAlloc(&d, BYTES), CUDA_SUCCESS);
    EXPECT("green_htod", cu.MemcpyHtoD(d, in, BYTES), CUDA_SUCCESS);

    /* A stream of it. */
    CUstream s = NULL;
    expect_failure("green_stream_blocking", cu.GreenCtxStreamCreate(&s, g, 0, 0));
    if (EXPECT("green_stream_create",
               cu.GreenCtxStreamCreate(&s, g, STREAM_NON_BLOCKING, 0), CUDA_SUCCESS)) {
        CUgreenCtx back = NULL;
        EXPECT("stream_get_green_ctx", cu.StreamGetGreenCtx(s, &back), CUDA_SUCCESS);
        expect_true("stream_get_green_ctx_value", back == g, "not the stream's green context");
        memset(out, 0, BYTES);
        EXPECT("green_stream_dtoh", cu.MemcpyDtoHAsync(out, d, BYTES, s), CUDA_SUCCESS);
        EXPECT("green_stream_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
        expect_true("green_stream_data", memcmp(in, out, BYTES) == 0, "the bytes differ");
        EXPECT("green_stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    }

    /* An event of its context, recorded on it and waited for. */
    CUevent e = NULL;
    EXPECT("green_event_create", cu.EventCreate(&e, 0), CUDA_SUCCESS);
    EXPECT("green_record_event", cu.GreenCtxRecordEvent(g, e), CUDA_SUCCESS);
    EXPECT("green_wait_event", cu.GreenCtxWaitEvent(g, e), CUDA_SUCCESS);
    EXPECT("green_event_synchronize", cu.EventSynchronize(e), CUDA_SUCCESS);
    EXPECT("green_event_destroy", cu.EventDestroy(e), CUDA_SUCCESS);
    EXPECT("green_free", cu.MemFree(d), CUDA_SUCCESS);

    EXPECT("back_to_primary", cu.CtxSetCurrent(primary), CUDA_SUCCESS);
    EXPECT("green_destroy", cu.GreenCtxDestroy(g), CUDA_SUCCESS);
    if (invalid_handle_checks()) {
        expect_failure("green_id_destroyed", cu.GreenCtxGetId(g, &id));
        expect_failure("green_ctx_after_destroy", cu.CtxSetCurrent(gctx));
        CUgreenCtx forged = (CUgreenCtx)(uintptr_t)0x4700800000000099ull;
        expect_failure("green_id_forged", cu.GreenCtxGetId(forged, &id));
        expect_failure("ctx_from_forged_green", cu.CtxFromGreenCtx(&cur, forged));
        expect_failure("green_destroy_forged", cu.GreenCtxDestroy(forged));
    }
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
