/*
 * multi_device: one process, one session, every device at once.
 *
 * - Each device's primary context is retained and used by a thread of its
 *   own, all at the same time: allocations, memsets and copies, every byte
 *   checked, and cuCtxGetDevice / the pointer's device ordinal.
 * - Peer access between the first two devices: cuDeviceCanAccessPeer and
 *   cuDeviceGetP2PAttribute both ways (printed: the machine's answer),
 *   cuCtxEnablePeerAccess / cuCtxDisablePeerAccess and their errors.
 * - Copies between devices, every byte checked: cuMemcpyPeer,
 *   cuMemcpyPeerAsync, cuMemcpy3DPeer, and the unified forms (cuMemcpy,
 *   cuMemcpyAsync, cuMemcpyDtoD) across devices, 8 MiB at a time.
 * - A stream of one device waits on an event recorded on the other.
 * - With a destroyed context current (memMapIPCDrv's order of calls), the
 *   VMM calls that need no context: granularity, create, export, release.
 *
 * With fewer than two devices it prints `skip: N device(s)` and exits 0.
 *
 * Build:  cc -std=c11 -O2 -Wall -pthread -o multi_device multi_device.c -ldl
 * Usage:  multi_device [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <pthread.h>

/* The VMM allocation properties (32 bytes, as the driver's). */
typedef struct {
    int type;
    int requestedHandleTypes;
    struct {
        int type;
        int id;
    } location;
    void *win32HandleMetaData;
    unsigned char allocFlags[8];
} CUmemAllocationProp;

_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");

enum {
    MEMORY_DEVICE = 2,
    ALLOCATION_PINNED = 1,
    LOCATION_DEVICE = 1,
    HANDLE_POSIX_FD = 1,
    P2P_ACCESS_SUPPORTED = 2,
    POINTER_DEVICE_ORDINAL = 9,
    MAX_DEVICES = 8,
    BYTES = 8 << 20,
    ROUNDS = 16,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*PrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*Memcpy)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned int);
    CUresult (*EventCreate)(CUevent *, unsigned int);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*DeviceCanAccessPeer)(int *, CUdevice, CUdevice);
    CUresult (*DeviceGetP2PAttribute)(int *, int, CUdevice, CUdevice);
    CUresult (*CtxEnablePeerAccess)(CUcontext, unsigned int);
    CUresult (*CtxDisablePeerAccess)(CUcontext);
    CUresult (*MemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
    CUresult (*MemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
    CUresult (*Memcpy3DPeer)(const CUDA_MEMCPY3D_PEER *);
    CUresult (*CtxCreate)(CUcontext *, unsigned int, CUdevice);
    CUresult (*CtxDestroy)(CUcontext);
    CUresult (*MemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, int);
    CUresult (*MemCreate)(unsigned long long *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
    CUresult (*MemExportToShareableHandle)(void *, unsigned long long, int, unsigned long long);
    CUresult (*MemRelease)(unsigned long long);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetCount, "cuDeviceGetCount"),
    ENTRY(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxGetDevice, "cuCtxGetDevice"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    ENTRY(Memcpy, "cuMemcpy"),
    ENTRY(MemcpyAsync, "cuMemcpyAsync"),
    ENTRY(PointerGetAttribute, "cuPointerGetAttribute"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamWaitEvent, "cuStreamWaitEvent"),
    ENTRY(EventCreate, "cuEventCreate"),
    ENTRY(EventRecord, "cuEventRecord"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(DeviceCanAccessPeer, "cuDeviceCanAccessPeer"),
    ENTRY(DeviceGetP2PAttribute, "cuDeviceGetP2PAttribute"),
    ENTRY(CtxEnablePeerAccess, "cuCtxEnablePeerAccess"),
    ENTRY(CtxDisablePeerAccess, "cuCtxDisablePeerAccess"),
    ENTRY(MemcpyPeer, "cuMemcpyPeer"),
    ENTRY(MemcpyPeerAsync, "cuMemcpyPeerAsync"),
    ENTRY(Memcpy3DPeer, "cuMemcpy3DPeer"),
    ENTRY(CtxCreate, "cuCtxCreate_v2"),
    ENTRY(CtxDestroy, "cuCtxDestroy_v2"),
    ENTRY(MemGetAllocationGranularity, "cuMemGetAllocationGranularity"),
    ENTRY(MemCreate, "cuMemCreate"),
    ENTRY(MemExportToShareableHandle, "cuMemExportToShareableHandle"),
    ENTRY(MemRelease, "cuMemRelease"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* Checks run on several threads at once: one lock around each report. */
static pthread_mutex_t report = PTHREAD_MUTEX_INITIALIZER;

static int check(const char *name, CUresult got, CUresult want)
{
    pthread_mutex_lock(&report);
    int r = EXPECT(name, got, want);
    pthread_mutex_unlock(&report);
    return r;
}

static int check_true(const char *name, int cond, const char *what)
{
    pthread_mutex_lock(&report);
    int r = expect_true(name, cond, what);
    pthread_mutex_unlock(&report);
    return r;
}

/* Fills `buf` with bytes that depend on `seed` and the position. */
static void fill(unsigned char *buf, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        buf[i] = (unsigned char)(x >> 24);
    }
}

static CUcontext ctx[MAX_DEVICES];
static CUdeviceptr mem[MAX_DEVICES];

/* What one device's thread found. */
static struct {
    int calls_ok, cur_ok, memset_ok, copy_ok;
} result[MAX_DEVICES];

/* One device's thread: its context current, ROUNDS of memset and copies
 * through its own memory, each checked into result[d] (printed by main in
 * device order, so the output does not depend on thread timing). */
static void *device_thread(void *arg)
{
    int d = (int)(intptr_t)arg;
    unsigned char *in = malloc(BYTES), *out = malloc(BYTES);
    int cur_ok = 1, memset_ok = 1, copy_ok = 1, calls_ok = 1;
    calls_ok &= cu.CtxSetCurrent(ctx[d]) == CUDA_SUCCESS;
    for (int r = 0; r < ROUNDS && calls_ok; r++) {
        CUdevice got = -1;
        calls_ok &= cu.CtxGetDevice(&got) == CUDA_SUCCESS;
        cur_ok &= got == d;
        unsigned int value = 0x01010101u * (unsigned)(d * 16 + r);
        calls_ok &= cu.MemsetD32(mem[d], value, BYTES / 4) == CUDA_SUCCESS;
        calls_ok &= cu.MemcpyDtoH(out, mem[d], BYTES) == CUDA_SUCCESS;
        for (size_t i = 0; i < BYTES; i += 4097)
            memset_ok &= out[i] == (unsigned char)(d * 16 + r);
        fill(in, BYTES, (unsigned)(d * 100 + r));
        calls_ok &= cu.MemcpyHtoD(mem[d], in, BYTES) == CUDA_SUCCESS;
        calls_ok &= cu.MemcpyDtoH(out, mem[d], BYTES) == CUDA_SUCCESS;
        copy_ok &= memcmp(in, out, BYTES) == 0;
    }
    result[d].calls_ok = calls_ok;
    result[d].cur_ok = cur_ok;
    result[d].memset_ok = memset_ok;
    result[d].copy_ok = copy_ok;
    free(in);
    free(out);
    return NULL;
}

/* Prints device d's thread results as checks. */
static void thread_checks(int d)
{
    char name[64];
    snprintf(name, sizeof(name), "thread_%d_calls", d);
    check_true(name, result[d].calls_ok, "a call failed");
    snprintf(name, sizeof(name), "thread_%d_current_device", d);
    check_true(name, result[d].cur_ok, "cuCtxGetDevice named another device");
    snprintf(name, sizeof(name), "thread_%d_memset", d);
    check_true(name, result[d].memset_ok, "the memset bytes differ");
    snprintf(name, sizeof(name), "thread_%d_copies", d);
    check_true(name, result[d].copy_ok, "the copied bytes differ");
}

/* Copies between devices 0 and 1, every byte checked. */
static void copies(void)
{
    unsigned char *in = malloc(BYTES), *out = malloc(BYTES);
    CUdeviceptr a = mem[0], b = mem[1];

    fill(in, BYTES, 1);
    check("htod_0", cu.MemcpyHtoD(a, in, BYTES), CUDA_SUCCESS);
    check("memcpy_peer_0_to_1", cu.MemcpyPeer(b, ctx[1], a, ctx[0], BYTES), CUDA_SUCCESS);
    check("dtoh_1", cu.MemcpyDtoH(out, b, BYTES), CUDA_SUCCESS);
    check_true("memcpy_peer_0_to_1_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    fill(in, BYTES, 2);
    check("htod_1", cu.MemcpyHtoD(b, in, BYTES), CUDA_SUCCESS);
    CUstream s = NULL;
    check("stream_create_0", cu.StreamCreate(&s, 0), CUDA_SUCCESS);
    check("memcpy_peer_async_1_to_0", cu.MemcpyPeerAsync(a, ctx[0], b, ctx[1], BYTES, s),
          CUDA_SUCCESS);
    check("stream_synchronize_0", cu.StreamSynchronize(s), CUDA_SUCCESS);
    check("dtoh_0", cu.MemcpyDtoH(out, a, BYTES), CUDA_SUCCESS);
    check_true("memcpy_peer_async_1_to_0_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    /* Unified addressing: the pointers say which device they are on. */
    fill(in, BYTES, 3);
    check("htod_0_unified", cu.MemcpyHtoD(a, in, BYTES), CUDA_SUCCESS);
    check("memcpy_unified_0_to_1", cu.Memcpy(b, a, BYTES), CUDA_SUCCESS);
    check("dtoh_1_unified", cu.MemcpyDtoH(out, b, BYTES), CUDA_SUCCESS);
    check_true("memcpy_unified_0_to_1_data", memcmp(in, out, BYTES) == 0, "the bytes differ");
    fill(in, BYTES, 4);
    check("htod_1_unified", cu.MemcpyHtoD(b, in, BYTES), CUDA_SUCCESS);
    check("memcpy_async_unified_1_to_0", cu.MemcpyAsync(a, b, BYTES, s), CUDA_SUCCESS);
    check("stream_synchronize_unified", cu.StreamSynchronize(s), CUDA_SUCCESS);
    check("dtoh_0_unified", cu.MemcpyDtoH(out, a, BYTES), CUDA_SUCCESS);
    check_true("memcpy_async_unified_1_to_0_data", memcmp(in, out, BYTES) == 0,
               "the bytes differ");
    fill(in, BYTES, 5);
    check("htod_0_dtod", cu.MemcpyHtoD(a, in, BYTES), CUDA_SUCCESS);
    check("memcpy_dtod_0_to_1", cu.MemcpyDtoD(b, a, BYTES), CUDA_SUCCESS);
    check("dtoh_1_dtod", cu.MemcpyDtoH(out, b, BYTES), CUDA_SUCCESS);
    check_true("memcpy_dtod_0_to_1_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    /* 3D: 64 rows of 1000 bytes, pitch 4096 on device 0 and 1024 on device 1. */
    fill(in, BYTES, 6);
    check("htod_0_3d", cu.MemcpyHtoD(a, in, BYTES), CUDA_SUCCESS);
    check("memset_1_3d", cu.MemsetD32(b, 0, BYTES / 4), CUDA_SUCCESS);
    CUDA_MEMCPY3D_PEER c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = MEMORY_DEVICE;
    c.srcDevice = a;
    c.srcContext = ctx[0];
    c.srcPitch = 4096;
    c.srcHeight = 64;
    c.dstMemoryType = MEMORY_DEVICE;
    c.dstDevice = b;
    c.dstContext = ctx[1];
    c.dstPitch = 1024;
    c.dstHeight = 64;
    c.WidthInBytes = 1000;
    c.Height = 64;
    c.Depth = 1;
    check("memcpy_3d_peer_0_to_1", cu.Memcpy3DPeer(&c), CUDA_SUCCESS);
    check("dtoh_1_3d", cu.MemcpyDtoH(out, b, 64 * 1024), CUDA_SUCCESS);
    int rows = 1;
    for (int r = 0; r < 64; r++) {
        rows &= memcmp(in + r * 4096, out + r * 1024, 1000) == 0;
        for (int i = 1000; i < 1024; i++)
            rows &= out[r * 1024 + i] == 0;
    }
    check_true("memcpy_3d_peer_0_to_1_data", rows, "the rows differ or the gaps were written");

    check("memcpy_peer_past_end", cu.MemcpyPeer(b, ctx[1], a + 16, ctx[0], BYTES),
          CUDA_ERROR_INVALID_VALUE);
    check("stream_destroy_0", cu.StreamDestroy(s), CUDA_SUCCESS);
    free(in);
    free(out);
}

/* A stream of device 1 waits on an event that device 0's stream records
 * after a copy; then device 1 copies what device 0 wrote. */
static void cross_device_event(void)
{
    unsigned char *in = malloc(BYTES), *out = malloc(BYTES);
    CUstream s0 = NULL, s1 = NULL;
    CUevent e = NULL;
    fill(in, BYTES, 7);
    check("set_current_0_event", cu.CtxSetCurrent(ctx[0]), CUDA_SUCCESS);
    check("stream_create_event_0", cu.StreamCreate(&s0, 0), CUDA_SUCCESS);
    check("event_create_0", cu.EventCreate(&e, 2 /* DISABLE_TIMING */), CUDA_SUCCESS);
    check("set_current_1_event", cu.CtxSetCurrent(ctx[1]), CUDA_SUCCESS);
    check("stream_create_event_1", cu.StreamCreate(&s1, 0), CUDA_SUCCESS);
    check("set_current_0_record", cu.CtxSetCurrent(ctx[0]), CUDA_SUCCESS);
    check("htod_0_event", cu.MemcpyHtoD(mem[0], in, BYTES), CUDA_SUCCESS);
    check("memset_0_event", cu.MemsetD32(mem[0], 0x5a5a5a5au, 1024), CUDA_SUCCESS);
    check("event_record_0", cu.EventRecord(e, s0), CUDA_SUCCESS);
    check("set_current_1_wait", cu.CtxSetCurrent(ctx[1]), CUDA_SUCCESS);
    check("stream_wait_event_1", cu.StreamWaitEvent(s1, e, 0), CUDA_SUCCESS);
    check("memcpy_async_after_event", cu.MemcpyAsync(mem[1], mem[0], BYTES, s1), CUDA_SUCCESS);
    check("stream_synchronize_event_1", cu.StreamSynchronize(s1), CUDA_SUCCESS);
    check("dtoh_1_event", cu.MemcpyDtoH(out, mem[1], BYTES), CUDA_SUCCESS);
    memset(in, 0x5a, 4096);
    check_true("cross_device_event_data", memcmp(in, out, BYTES) == 0, "the bytes differ");
    check("stream_destroy_event_1", cu.StreamDestroy(s1), CUDA_SUCCESS);
    check("set_current_0_cleanup", cu.CtxSetCurrent(ctx[0]), CUDA_SUCCESS);
    check("stream_destroy_event_0", cu.StreamDestroy(s0), CUDA_SUCCESS);
    check("event_destroy_0", cu.EventDestroy(e), CUDA_SUCCESS);
    free(in);
    free(out);
}

/* Peer access between the contexts of devices 0 and 1. */
static void peer_access(void)
{
    int can01 = -1, can10 = -1, attr = -1;
    check("can_access_0_1", cu.DeviceCanAccessPeer(&can01, 0, 1), CUDA_SUCCESS);
    check("can_access_1_0", cu.DeviceCanAccessPeer(&can10, 1, 0), CUDA_SUCCESS);
    printf("ok can_access_values: %d %d\n", can01, can10);
    check("p2p_access_supported_0_1", cu.DeviceGetP2PAttribute(&attr, P2P_ACCESS_SUPPORTED, 0, 1),
          CUDA_SUCCESS);
    printf("ok p2p_access_supported_value: %d\n", attr);
    if (!can01 || !can10)
        return;
    check("set_current_0_peer", cu.CtxSetCurrent(ctx[0]), CUDA_SUCCESS);
    check("enable_peer_bad_flags", cu.CtxEnablePeerAccess(ctx[1], 1), CUDA_ERROR_INVALID_VALUE);
    check("enable_peer_0_to_1", cu.CtxEnablePeerAccess(ctx[1], 0), CUDA_SUCCESS);
    check("enable_peer_0_to_1_again", cu.CtxEnablePeerAccess(ctx[1], 0),
          CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    check("set_current_1_peer", cu.CtxSetCurrent(ctx[1]), CUDA_SUCCESS);
    check("enable_peer_1_to_0", cu.CtxEnablePeerAccess(ctx[0], 0), CUDA_SUCCESS);
    check("disable_peer_1_to_0", cu.CtxDisablePeerAccess(ctx[0]), CUDA_SUCCESS);
    check("disable_peer_1_to_0_again", cu.CtxDisablePeerAccess(ctx[0]),
          CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    check("set_current_0_peer_again", cu.CtxSetCurrent(ctx[0]), CUDA_SUCCESS);
}

/* As the memMapIPCDrv sample does: a context on each of two devices, peer
 * access between them, then both destroyed, which leaves the destroyed
 * first one current (cuCtxCreate pushed both; cuCtxSetCurrent replaced the
 * top). The VMM calls that need no context still succeed. */
static void destroyed_current(void)
{
    CUcontext a = NULL, b = NULL;
    check("ctx_create_dev_0", cu.CtxCreate(&a, 0, 0), CUDA_SUCCESS);
    check("ctx_create_dev_1", cu.CtxCreate(&b, 0, 1), CUDA_SUCCESS);
    check("set_current_dev_0_ctx", cu.CtxSetCurrent(a), CUDA_SUCCESS);
    check("ctx_destroy_dev_0", cu.CtxDestroy(a), CUDA_SUCCESS);
    check("ctx_destroy_dev_1", cu.CtxDestroy(b), CUDA_SUCCESS);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = ALLOCATION_PINNED;
    prop.location.type = LOCATION_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = HANDLE_POSIX_FD;
    size_t granularity = 0;
    check("granularity_destroyed_current",
          cu.MemGetAllocationGranularity(&granularity, &prop, 0), CUDA_SUCCESS);
    unsigned long long handle = 0;
    int fd = -1;
    if (check("mem_create_destroyed_current", cu.MemCreate(&handle, granularity, &prop, 0),
              CUDA_SUCCESS)) {
        check("export_destroyed_current",
              cu.MemExportToShareableHandle(&fd, handle, HANDLE_POSIX_FD, 0), CUDA_SUCCESS);
        check_true("export_destroyed_current_fd", fd >= 0, "no descriptor");
        if (fd >= 0)
            close(fd);
        check("release_destroyed_current", cu.MemRelease(handle), CUDA_SUCCESS);
    }
    check("set_current_none", cu.CtxSetCurrent(NULL), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    const char *library = argc > 1 ? argv[1] : NULL;
    cu_load(library, entries, CU_COUNT(entries));
    int count = 0;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device_count", cu.DeviceGetCount(&count), CUDA_SUCCESS))
        return checks_summary();
    if (count < 2) {
        printf("skip: %d device(s)\n", count);
        return 0;
    }
    if (count > MAX_DEVICES)
        count = MAX_DEVICES;
    printf("ok devices: %d\n", count);
    for (int d = 0; d < count; d++) {
        char name[64];
        snprintf(name, sizeof(name), "primary_retain_%d", d);
        check(name, cu.PrimaryCtxRetain(&ctx[d], d), CUDA_SUCCESS);
        snprintf(name, sizeof(name), "set_current_%d", d);
        check(name, cu.CtxSetCurrent(ctx[d]), CUDA_SUCCESS);
        snprintf(name, sizeof(name), "alloc_%d", d);
        check(name, cu.MemAlloc(&mem[d], BYTES), CUDA_SUCCESS);
        int ordinal = -1;
        snprintf(name, sizeof(name), "pointer_ordinal_%d", d);
        check(name, cu.PointerGetAttribute(&ordinal, POINTER_DEVICE_ORDINAL, mem[d]), CUDA_SUCCESS);
        snprintf(name, sizeof(name), "pointer_ordinal_%d_value", d);
        check_true(name, ordinal == d, "the pointer names another device");
    }

    /* Every device at once, a thread each. */
    pthread_t threads[MAX_DEVICES];
    for (int d = 0; d < count; d++)
        pthread_create(&threads[d], NULL, device_thread, (void *)(intptr_t)d);
    for (int d = 0; d < count; d++)
        pthread_join(threads[d], NULL);
    for (int d = 0; d < count; d++)
        thread_checks(d);

    peer_access();
    copies();
    cross_device_event();

    for (int d = 0; d < count; d++) {
        char name[64];
        check("set_current_cleanup", cu.CtxSetCurrent(ctx[d]), CUDA_SUCCESS);
        snprintf(name, sizeof(name), "free_%d", d);
        check(name, cu.MemFree(mem[d]), CUDA_SUCCESS);
        snprintf(name, sizeof(name), "primary_release_%d", d);
        check(name, cu.PrimaryCtxRelease(d), CUDA_SUCCESS);
    }
    check("set_current_null", cu.CtxSetCurrent(NULL), CUDA_SUCCESS);
    destroyed_current();
    return checks_summary();
}
