/*
 * multicast: multicast objects on the first device. Whether the device
 * supports them is its CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED; without
 * support cuMulticastCreate and cuMulticastGetGranularity must fail (their
 * errors are printed), with it an object is made, the device added, physical
 * memory bound and unbound, and the object released with cuMemRelease. Then
 * a handle the program was never given.
 *
 * Build:  cc -std=c11 -O2 -Wall -o multicast multicast.c -ldl
 * Usage:  multicast [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef unsigned long long CUmemGenericAllocationHandle;

typedef struct {
    unsigned int numDevices;
    size_t size;
    unsigned long long handleTypes, flags;
} CUmulticastObjectProp;

typedef struct {
    int type;
    int requestedHandleTypes;
    struct {
        int type, id;
    } location;
    void *win32HandleMetaData;
    unsigned char compressionType, gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
} CUmemAllocationProp;

_Static_assert(sizeof(CUmulticastObjectProp) == 32, "CUmulticastObjectProp is 32 bytes");
_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");

enum {
    ATTRIBUTE_MULTICAST_SUPPORTED = 132,
    GRANULARITY_MINIMUM = 0,
    GRANULARITY_RECOMMENDED = 1,
    ALLOCATION_PINNED = 1,
    LOCATION_DEVICE = 1,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
    CUresult (*MemRelease)(CUmemGenericAllocationHandle);
    CUresult (*MulticastCreate)(CUmemGenericAllocationHandle *, const CUmulticastObjectProp *);
    CUresult (*MulticastAddDevice)(CUmemGenericAllocationHandle, CUdevice);
    CUresult (*MulticastBindMem)(CUmemGenericAllocationHandle, size_t, CUmemGenericAllocationHandle,
                                 size_t, size_t, unsigned long long);
    CUresult (*MulticastBindAddr)(CUmemGenericAllocationHandle, size_t, CUdeviceptr, size_t,
                                  unsigned long long);
    CUresult (*MulticastUnbind)(CUmemGenericAllocationHandle, CUdevice, size_t, size_t);
    CUresult (*MulticastGetGranularity)(size_t *, const CUmulticastObjectProp *, int);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemCreate, "cuMemCreate"),
    ENTRY(MemRelease, "cuMemRelease"),
    ENTRY(MulticastCreate, "cuMulticastCreate"),
    ENTRY(MulticastAddDevice, "cuMulticastAddDevice"),
    ENTRY(MulticastBindMem, "cuMulticastBindMem"),
    ENTRY(MulticastBindAddr, "cuMulticastBindAddr"),
    ENTRY(MulticastUnbind, "cuMulticastUnbind"),
    ENTRY(MulticastGetGranularity, "cuMulticastGetGranularity"),
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

/* With support: an object over one device, physical memory bound and unbound. */
static void supported(CUdevice dev, CUmulticastObjectProp *prop)
{
    size_t gran = 0, rec = 0;
    EXPECT("granularity_minimum", cu.MulticastGetGranularity(&gran, prop, GRANULARITY_MINIMUM),
           CUDA_SUCCESS);
    EXPECT("granularity_recommended",
           cu.MulticastGetGranularity(&rec, prop, GRANULARITY_RECOMMENDED), CUDA_SUCCESS);
    expect_true("granularity_values", gran > 0 && rec >= gran && rec % gran == 0,
                "the recommended granularity is not a multiple of the minimum");
    prop->size = rec;
    CUmemGenericAllocationHandle mc = 0, mem = 0;
    if (!EXPECT("create", cu.MulticastCreate(&mc, prop), CUDA_SUCCESS))
        return;
    EXPECT("add_device", cu.MulticastAddDevice(mc, dev), CUDA_SUCCESS);
    CUmemAllocationProp mp;
    memset(&mp, 0, sizeof(mp));
    mp.type = ALLOCATION_PINNED;
    mp.location.type = LOCATION_DEVICE;
    mp.location.id = dev;
    EXPECT("mem_create", cu.MemCreate(&mem, rec, &mp, 0), CUDA_SUCCESS);
    EXPECT("bind_mem", cu.MulticastBindMem(mc, 0, mem, 0, rec, 0), CUDA_SUCCESS);
    EXPECT("unbind", cu.MulticastUnbind(mc, dev, 0, rec), CUDA_SUCCESS);
    EXPECT("mem_release", cu.MemRelease(mem), CUDA_SUCCESS);
    EXPECT("release", cu.MemRelease(mc), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    const char *library = argc > 1 ? argv[1] : NULL;
    cu_load(library, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS))
        return checks_summary();
    int support = -1;
    EXPECT("attribute_multicast_supported",
           cu.DeviceGetAttribute(&support, ATTRIBUTE_MULTICAST_SUPPORTED, dev), CUDA_SUCCESS);
    printf("ok multicast_supported: %d\n", support);

    CUmulticastObjectProp prop = {1, 2u << 20, 0, 0};
    if (support) {
        supported(dev, &prop);
    } else {
        size_t gran = 0;
        expect_failure("granularity_unsupported",
                       cu.MulticastGetGranularity(&gran, &prop, GRANULARITY_MINIMUM));
        CUmemGenericAllocationHandle mc = 0;
        expect_failure("create_unsupported", cu.MulticastCreate(&mc, &prop));
    }

    /* A handle this program was never given. */
    if (invalid_handle_checks()) {
        CUmemGenericAllocationHandle forged = 0x5150;
        expect_failure("add_device_forged", cu.MulticastAddDevice(forged, dev));
        expect_failure("bind_addr_forged", cu.MulticastBindAddr(forged, 0, 0, 2u << 20, 0));
        expect_failure("unbind_forged", cu.MulticastUnbind(forged, dev, 0, 2u << 20));
        expect_failure("release_forged", cu.MemRelease(forged));
        CUmemGenericAllocationHandle mc = 0;
        expect_failure("create_null_prop", cu.MulticastCreate(&mc, NULL));
    }
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
