/*
 * peer: peer access and copies between contexts on the first device:
 * cuDeviceCanAccessPeer, cuDeviceGetP2PAttribute and
 * cuDeviceGetP2PAtomicCapabilities of the device with itself and, when there
 * is a second device, with it; cuCtxEnablePeerAccess and
 * cuCtxDisablePeerAccess between two contexts of one device and of the
 * context itself; cuMemcpyPeer and its asynchronous and per-thread forms
 * and cuMemcpy3DPeer between two contexts, and ranges outside their
 * allocations.
 *
 * Where the driver's exact error is not documented the check prints it
 * (`ok NAME: CUDA_ERROR_...`), so that runs natively and through vgpu can be
 * compared line by line.
 *
 * Build:  cc -std=c11 -O2 -Wall -o peer peer.c -ldl
 * Usage:  peer [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

enum {
    MEMORY_DEVICE = 2,
    P2P_PERFORMANCE_RANK = 1,
    P2P_ACCESS_SUPPORTED = 2,
    ATOMIC_INTEGER_ADD = 0,
    ATOMIC_CAS = 9,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*CtxCreate)(CUcontext *, unsigned int, CUdevice);
    CUresult (*CtxDestroy)(CUcontext);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*DeviceCanAccessPeer)(int *, CUdevice, CUdevice);
    CUresult (*DeviceGetP2PAttribute)(int *, int, CUdevice, CUdevice);
    CUresult (*DeviceGetP2PAtomicCapabilities)(unsigned int *, const int *, unsigned int,
                                               CUdevice, CUdevice);
    CUresult (*CtxEnablePeerAccess)(CUcontext, unsigned int);
    CUresult (*CtxDisablePeerAccess)(CUcontext);
    CUresult (*MemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
    CUresult (*MemcpyPeerPtds)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
    CUresult (*MemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
    CUresult (*MemcpyPeerAsyncPtsz)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t,
                                    CUstream);
    CUresult (*Memcpy3DPeer)(const CUDA_MEMCPY3D_PEER *);
    CUresult (*Memcpy3DPeerAsync)(const CUDA_MEMCPY3D_PEER *, CUstream);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetCount, "cuDeviceGetCount"),
    ENTRY(CtxCreate, "cuCtxCreate_v2"),
    ENTRY(CtxDestroy, "cuCtxDestroy_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(DeviceCanAccessPeer, "cuDeviceCanAccessPeer"),
    ENTRY(DeviceGetP2PAttribute, "cuDeviceGetP2PAttribute"),
    ENTRY(DeviceGetP2PAtomicCapabilities, "cuDeviceGetP2PAtomicCapabilities"),
    ENTRY(CtxEnablePeerAccess, "cuCtxEnablePeerAccess"),
    ENTRY(CtxDisablePeerAccess, "cuCtxDisablePeerAccess"),
    ENTRY(MemcpyPeer, "cuMemcpyPeer"),
    ENTRY(MemcpyPeerPtds, "cuMemcpyPeer_ptds"),
    ENTRY(MemcpyPeerAsync, "cuMemcpyPeerAsync"),
    ENTRY(MemcpyPeerAsyncPtsz, "cuMemcpyPeerAsync_ptsz"),
    ENTRY(Memcpy3DPeer, "cuMemcpy3DPeer"),
    ENTRY(Memcpy3DPeerAsync, "cuMemcpy3DPeerAsync"),
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

/* The device with itself, and with a second device when there is one. */
static void queries(CUdevice dev)
{
    int can = -1;
    EXPECT("can_access_self", cu.DeviceCanAccessPeer(&can, dev, dev), CUDA_SUCCESS);
    expect_true("can_access_self_value", can == 0, "a device is not its own peer");
    int value = -1;
    expect_failure("p2p_attribute_self",
                   cu.DeviceGetP2PAttribute(&value, P2P_ACCESS_SUPPORTED, dev, dev));
    int ops[2] = {ATOMIC_INTEGER_ADD, ATOMIC_CAS};
    unsigned int caps[2] = {7, 7};
    expect_failure("p2p_atomics_self", cu.DeviceGetP2PAtomicCapabilities(caps, ops, 2, dev, dev));
    expect_failure("can_access_bad_device", cu.DeviceCanAccessPeer(&can, dev, 64));

    int count = 0;
    cu.DeviceGetCount(&count);
    if (count < 2)
        return;
    /* Printed as values: whether two devices are peers is the machine's answer. */
    CUdevice other;
    EXPECT("device_get_second", cu.DeviceGet(&other, 1), CUDA_SUCCESS);
    EXPECT("can_access_second", cu.DeviceCanAccessPeer(&can, dev, other), CUDA_SUCCESS);
    printf("ok can_access_second_value: %d\n", can);
    CUresult r = cu.DeviceGetP2PAttribute(&value, P2P_ACCESS_SUPPORTED, dev, other);
    printf("ok p2p_access_supported_second: %s %d\n", error_name(cu.GetErrorName, r),
           r == CUDA_SUCCESS ? value : -1);
}

/* Two contexts of one device: peer access, and copies between them. */
static void contexts(CUdevice dev)
{
    enum { BYTES = 4096 };
    CUcontext a = NULL, b = NULL;
    if (!EXPECT("ctx_create_a", cu.CtxCreate(&a, 0, dev), CUDA_SUCCESS) ||
        !EXPECT("ctx_create_b", cu.CtxCreate(&b, 0, dev), CUDA_SUCCESS))
        return;
    CUdeviceptr db = 0, da = 0;
    EXPECT("set_current_b", cu.CtxSetCurrent(b), CUDA_SUCCESS);
    EXPECT("alloc_b", cu.MemAlloc(&db, BYTES), CUDA_SUCCESS);
    EXPECT("set_current_a", cu.CtxSetCurrent(a), CUDA_SUCCESS);
    EXPECT("alloc_a", cu.MemAlloc(&da, BYTES), CUDA_SUCCESS);

    expect_failure("enable_peer_self", cu.CtxEnablePeerAccess(a, 0));
    expect_failure("enable_peer_same_device", cu.CtxEnablePeerAccess(b, 0));
    expect_failure("disable_peer_not_enabled", cu.CtxDisablePeerAccess(b));
    expect_failure("disable_peer_self", cu.CtxDisablePeerAccess(a));

    static unsigned char in[BYTES], out[BYTES];
    for (int i = 0; i < BYTES; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    EXPECT("htod_a", cu.MemcpyHtoD(da, in, BYTES), CUDA_SUCCESS);
    EXPECT("memcpy_peer", cu.MemcpyPeer(db, b, da, a, BYTES), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("dtoh_b", cu.MemcpyDtoH(out, db, BYTES), CUDA_SUCCESS);
    expect_true("memcpy_peer_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    for (int i = 0; i < BYTES; i++)
        in[i] = (unsigned char)(i * 5 + 1);
    EXPECT("htod_b", cu.MemcpyHtoD(db, in, BYTES), CUDA_SUCCESS);
    EXPECT("memcpy_peer_ptds", cu.MemcpyPeerPtds(da, a, db, b, BYTES), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("dtoh_a", cu.MemcpyDtoH(out, da, BYTES), CUDA_SUCCESS);
    expect_true("memcpy_peer_ptds_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    CUstream s = NULL;
    EXPECT("stream_create", cu.StreamCreate(&s, 0), CUDA_SUCCESS);
    EXPECT("htod_a_again", cu.MemcpyHtoD(da, in + 1, BYTES - 1), CUDA_SUCCESS);
    EXPECT("memcpy_peer_async", cu.MemcpyPeerAsync(db, b, da, a, BYTES / 2, s), CUDA_SUCCESS);
    EXPECT("memcpy_peer_async_ptsz",
           cu.MemcpyPeerAsyncPtsz(db + BYTES / 2, b, da + BYTES / 2, a, BYTES / 2, NULL),
           CUDA_SUCCESS);
    EXPECT("stream_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT("per_thread_synchronize", cu.StreamSynchronize((CUstream)0x2), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("dtoh_b_async", cu.MemcpyDtoH(out, db, BYTES), CUDA_SUCCESS);
    expect_true("memcpy_peer_async_data", memcmp(in + 1, out, BYTES - 1) == 0,
                "the bytes differ");
    cu.StreamDestroy(s);

    /* The 3D form: 16 rows of 128 bytes from a to b, then back asynchronously. */
    CUDA_MEMCPY3D_PEER c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = MEMORY_DEVICE;
    c.srcDevice = da;
    c.srcContext = a;
    c.srcPitch = 256;
    c.srcHeight = 16;
    c.dstMemoryType = MEMORY_DEVICE;
    c.dstDevice = db;
    c.dstContext = b;
    c.dstPitch = 128;
    c.dstHeight = 16;
    c.WidthInBytes = 128;
    c.Height = 16;
    c.Depth = 1;
    for (int i = 0; i < BYTES; i++)
        in[i] = (unsigned char)(i * 3 + 7);
    EXPECT("htod_a_3d", cu.MemcpyHtoD(da, in, BYTES), CUDA_SUCCESS);
    EXPECT("memcpy_3d_peer", cu.Memcpy3DPeer(&c), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("dtoh_b_3d", cu.MemcpyDtoH(out, db, 128 * 16), CUDA_SUCCESS);
    int rows_ok = 1;
    for (int r = 0; r < 16; r++)
        rows_ok &= memcmp(in + r * 256, out + r * 128, 128) == 0;
    expect_true("memcpy_3d_peer_data", rows_ok, "the rows differ");
    CUstream s3 = NULL;
    EXPECT("stream_create_3d", cu.StreamCreate(&s3, 0), CUDA_SUCCESS);
    c.Height = 40;
    c.srcHeight = 40;
    c.dstHeight = 40;
    c.srcPitch = 128;
    expect_failure("memcpy_3d_peer_past_end", cu.Memcpy3DPeer(&c));
    c.Height = 8;
    EXPECT("memcpy_3d_peer_async", cu.Memcpy3DPeerAsync(&c, s3), CUDA_SUCCESS);
    EXPECT("stream_synchronize_3d", cu.StreamSynchronize(s3), CUDA_SUCCESS);
    cu.StreamDestroy(s3);

    expect_failure("memcpy_peer_past_end", cu.MemcpyPeer(db, b, da + 8, a, BYTES));
    expect_failure("memcpy_peer_dst_past_end", cu.MemcpyPeer(db + 16, b, da, a, BYTES));

    EXPECT("free_b", cu.MemFree(db), CUDA_SUCCESS);
    EXPECT("ctx_destroy_b", cu.CtxDestroy(b), CUDA_SUCCESS);
    if (invalid_handle_checks()) {
        expect_failure("memcpy_peer_destroyed_context", cu.MemcpyPeer(da, a, da, b, 16));
        expect_failure("enable_peer_destroyed_context", cu.CtxEnablePeerAccess(b, 0));
        c.dstDevice = da;
        c.dstContext = b;
        expect_failure("memcpy_3d_peer_destroyed_context", cu.Memcpy3DPeer(&c));
    }
    EXPECT("free_a", cu.MemFree(da), CUDA_SUCCESS);
    EXPECT("ctx_destroy_a", cu.CtxDestroy(a), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    const char *library = argc > 1 ? argv[1] : NULL;
    cu_load(library, entries, CU_COUNT(entries));
    CUdevice dev;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS))
        return checks_summary();
    queries(dev);
    contexts(dev);
    return checks_summary();
}
