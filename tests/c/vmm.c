/*
 * vmm: CUDA virtual memory management end to end. Reserves an address
 * range, creates physical allocations, maps them, sets access, fills and
 * copies through the mappings and reads the bytes back; asks what the
 * driver says about a mapped address (address range, pointer attributes,
 * access flags, allocation properties, the handle behind it); then checks
 * that bad input is refused: mapping over a mapped range, sizes that are not
 * a multiple of the granularity, a forged allocation handle, releasing a
 * handle twice, and copies into reserved memory that is not mapped, past a
 * mapping, and into a range after it was unmapped.
 *
 * It assumes nothing the driver does not promise: sizes come from
 * cuMemGetAllocationGranularity, and the refused calls print the driver's
 * error name, so the output of a native run and of a run through vgpu can be
 * compared line for line (gpu/frameworks.sh does). The copies that must be
 * refused come last, so a driver that faulted on one instead could not
 * disturb the checks before it.
 *
 * Build:  cc -std=c11 -O2 -Wall -o vmm vmm.c -ldl
 * Usage:  vmm [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` (with the error name for a refused
 *         call) or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef unsigned long long CUmemGenericAllocationHandle;

typedef struct {
    int type; /* CUmemLocationType */
    int id;
} CUmemLocation;

typedef struct {
    int type;                 /* CUmemAllocationType */
    int requestedHandleTypes; /* CUmemAllocationHandleType */
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;

typedef struct {
    CUmemLocation location;
    int flags; /* CUmemAccess_flags */
} CUmemAccessDesc;

_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc is 12 bytes");

enum {
    CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
    CU_MEMORYTYPE_DEVICE = 2,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
    CU_POINTER_ATTRIBUTE_MAPPED = 13,
    CU_POINTER_ATTRIBUTE_ACCESS_FLAGS = 16,
    /* Bytes copied through the mappings. */
    CHUNK = 4096,
};

/* A value no driver handed out in this process. */
#define FORGED_HANDLE 0x600dbeefULL

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, int);
    CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*MemAddressFree)(CUdeviceptr, size_t);
    CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
    CUresult (*MemRelease)(CUmemGenericAllocationHandle);
    CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                       unsigned long long);
    CUresult (*MemUnmap)(CUdeviceptr, size_t);
    CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*MemGetAccess)(unsigned long long *, const CUmemLocation *, CUdeviceptr);
    CUresult (*MemRetainAllocationHandle)(CUmemGenericAllocationHandle *, void *);
    CUresult (*MemGetAllocationPropertiesFromHandle)(CUmemAllocationProp *,
                                                     CUmemGenericAllocationHandle);
    CUresult (*MemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemGetAllocationGranularity, "cuMemGetAllocationGranularity"),
    ENTRY(MemAddressReserve, "cuMemAddressReserve"),
    ENTRY(MemAddressFree, "cuMemAddressFree"),
    ENTRY(MemCreate, "cuMemCreate"),
    ENTRY(MemRelease, "cuMemRelease"),
    ENTRY(MemMap, "cuMemMap"),
    ENTRY(MemUnmap, "cuMemUnmap"),
    ENTRY(MemSetAccess, "cuMemSetAccess"),
    ENTRY(MemGetAccess, "cuMemGetAccess"),
    ENTRY(MemRetainAllocationHandle, "cuMemRetainAllocationHandle"),
    ENTRY(MemGetAllocationPropertiesFromHandle, "cuMemGetAllocationPropertiesFromHandle"),
    ENTRY(MemGetAddressRange, "cuMemGetAddressRange_v2"),
    ENTRY(PointerGetAttribute, "cuPointerGetAttribute"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemsetD32Async, "cuMemsetD32Async"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* Records one check: a call that must fail. Prints the driver's error name,
 * which a native run and a run through vgpu must agree on. */
static int refused(const char *name, CUresult r)
{
    checks++;
    if (r != CUDA_SUCCESS) {
        printf("ok %s: %s\n", name, error_name(cu.GetErrorName, r));
        return 1;
    }
    failures++;
    printf("FAIL %s: succeeded\n", name);
    return 0;
}

/* Whether the CHUNK bytes at `p` read back as `want`. */
static int reads_back(CUdeviceptr p, const unsigned char *want)
{
    static unsigned char got[CHUNK];
    memset(got, 0, sizeof got);
    return cu.MemcpyDtoH(got, p, CHUNK) == CUDA_SUCCESS && memcmp(got, want, CHUNK) == 0;
}

static CUmemAllocationProp device_prop(CUdevice dev)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

/* Read-write access for `dev` to `[va, va + size)`. */
static CUresult allow(CUdevice dev, CUdeviceptr va, size_t size)
{
    CUmemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = dev;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return cu.MemSetAccess(va, size, &desc, 1);
}

/* What the driver says about mapped address `p` in the first mapping
 * (`base`, `size` bytes). */
static void queries(CUdevice dev, CUdeviceptr base, size_t size, CUmemGenericAllocationHandle h)
{
    CUdeviceptr p = base + 100;
    CUdeviceptr range_base = 0;
    size_t range_size = 0;
    if (EXPECT("address_range", cu.MemGetAddressRange(&range_base, &range_size, p), CUDA_SUCCESS))
        expect_true("address_range_is_the_mapping", range_base == base && range_size == size,
                    "base or size differ from the mapping's");
    unsigned int type = 0, mapped = 0, access = 0;
    int ordinal = -1;
    CUdeviceptr start = 0;
    size_t len = 0;
    EXPECT("attribute_memory_type", cu.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
           CUDA_SUCCESS);
    expect_true("attribute_memory_type_device", type == CU_MEMORYTYPE_DEVICE, "not device memory");
    EXPECT("attribute_device_ordinal",
           cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p), CUDA_SUCCESS);
    expect_true("attribute_device_ordinal_value", ordinal == dev, "another device");
    EXPECT("attribute_range_start",
           cu.PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p), CUDA_SUCCESS);
    EXPECT("attribute_range_size", cu.PointerGetAttribute(&len, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p),
           CUDA_SUCCESS);
    /* Driver 580 does not answer with the mapping's own bounds here (unlike
     * cuMemGetAddressRange); what holds is that the range holds the pointer. */
    expect_true("attribute_range_holds_the_pointer", start <= p && p - start < len,
                "the range does not hold the pointer");
    EXPECT("attribute_mapped", cu.PointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, p),
           CUDA_SUCCESS);
    expect_true("attribute_mapped_value", mapped == 1, "not mapped");
    EXPECT("attribute_access_flags",
           cu.PointerGetAttribute(&access, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, p), CUDA_SUCCESS);
    expect_true("attribute_access_flags_value", access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                "not read-write");

    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, dev};
    unsigned long long flags = 0;
    if (EXPECT("get_access", cu.MemGetAccess(&flags, &loc, p), CUDA_SUCCESS))
        expect_true("get_access_read_write", flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                    "access flags are not read-write");

    CUmemAllocationProp prop;
    memset(&prop, 0xff, sizeof prop);
    if (EXPECT("properties", cu.MemGetAllocationPropertiesFromHandle(&prop, h), CUDA_SUCCESS))
        expect_true("properties_value",
                    prop.type == CU_MEM_ALLOCATION_TYPE_PINNED &&
                        prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
                        prop.location.id == dev,
                    "not pinned memory of this device");

    CUmemGenericAllocationHandle again = 0;
    if (EXPECT("retain_handle", cu.MemRetainAllocationHandle(&again, (void *)(uintptr_t)p),
               CUDA_SUCCESS)) {
        expect_true("retain_handle_same", again == h, "another handle than the one mapped");
        EXPECT("release_retained", cu.MemRelease(again), CUDA_SUCCESS);
    }
}

/* Bad input, refused; anything that succeeded anyway is undone. */
static void bad_input(CUdevice dev, size_t gran, CUdeviceptr va, CUmemGenericAllocationHandle h)
{
    CUmemAllocationProp prop = device_prop(dev);
    refused("map_over_mapped", cu.MemMap(va, gran, 0, h, 0));

    CUdeviceptr odd = 0;
    if (!refused("reserve_misaligned_size", cu.MemAddressReserve(&odd, gran + 1, 0, 0, 0)))
        cu.MemAddressFree(odd, gran + 1);
    CUmemGenericAllocationHandle half = 0;
    if (!refused("create_misaligned_size", cu.MemCreate(&half, gran / 2, &prop, 0)))
        cu.MemRelease(half);

    if (invalid_handle_checks()) {
        refused("map_forged_handle", cu.MemMap(va + 3 * gran, gran, 0, FORGED_HANDLE, 0));
        CUmemAllocationProp got;
        refused("properties_forged_handle",
                cu.MemGetAllocationPropertiesFromHandle(&got, FORGED_HANDLE));
        refused("release_forged_handle", cu.MemRelease(FORGED_HANDLE));
    }

    CUmemGenericAllocationHandle once = 0;
    if (EXPECT("create_to_release_twice", cu.MemCreate(&once, gran, &prop, 0), CUDA_SUCCESS)) {
        EXPECT("release_first", cu.MemRelease(once), CUDA_SUCCESS);
        if (invalid_handle_checks())
            refused("release_second", cu.MemRelease(once));
    }
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev = 0;
    CUcontext primary = NULL;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(primary), CUDA_SUCCESS))
        return checks_summary();

    CUmemAllocationProp prop = device_prop(dev);
    size_t gran = 0;
    if (!EXPECT("granularity",
                cu.MemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                CUDA_SUCCESS) ||
        !expect_true("granularity_value", gran >= CHUNK && gran % CHUNK == 0,
                     "granularity is not a multiple of the chunk"))
        return checks_summary();

    /* Four granules reserved: [0, 2) mapped to `big`, [2, 3) to `small`, [3, 4) never. */
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle big = 0, small = 0;
    if (!EXPECT("reserve", cu.MemAddressReserve(&va, 4 * gran, 0, 0, 0), CUDA_SUCCESS) ||
        !expect_true("reserve_aligned", va != 0 && va % gran == 0, "not granularity-aligned") ||
        !EXPECT("create_big", cu.MemCreate(&big, 2 * gran, &prop, 0), CUDA_SUCCESS) ||
        !EXPECT("create_small", cu.MemCreate(&small, gran, &prop, 0), CUDA_SUCCESS) ||
        !EXPECT("map_big", cu.MemMap(va, 2 * gran, 0, big, 0), CUDA_SUCCESS) ||
        !EXPECT("map_small", cu.MemMap(va + 2 * gran, gran, 0, small, 0), CUDA_SUCCESS) ||
        !EXPECT("set_access_big", allow(dev, va, 2 * gran), CUDA_SUCCESS) ||
        !EXPECT("set_access_small", allow(dev, va + 2 * gran, gran), CUDA_SUCCESS))
        return checks_summary();

    /* Fill the whole first mapping, then copy across its granule boundary. */
    static unsigned char pattern[CHUNK], fill[CHUNK];
    for (int i = 0; i < CHUNK; i++)
        pattern[i] = (unsigned char)(i * 7 + 3);
    for (int i = 0; i < CHUNK; i += 4)
        memcpy(fill + i, &(unsigned int){0x5aa5c33cu}, 4);
    EXPECT("memset_mapping", cu.MemsetD32(va, 0x5aa5c33cu, 2 * gran / 4), CUDA_SUCCESS);
    expect_true("memset_reads_back", reads_back(va + 2 * gran - CHUNK, fill),
                "the end of the mapping does not hold the fill");
    CUdeviceptr across = va + gran - CHUNK / 2;
    EXPECT("htod_across_granules", cu.MemcpyHtoD(across, pattern, CHUNK), CUDA_SUCCESS);
    expect_true("htod_reads_back", reads_back(across, pattern), "the bytes differ");
    EXPECT("dtod_between_mappings", cu.MemcpyDtoD(va + 2 * gran, across, CHUNK), CUDA_SUCCESS);
    expect_true("dtod_reads_back", reads_back(va + 2 * gran, pattern), "the bytes differ");
    static unsigned char fill2[CHUNK];
    for (int i = 0; i < CHUNK; i += 4)
        memcpy(fill2 + i, &(unsigned int){0x01020304u}, 4);
    EXPECT("memset_async_mapping", cu.MemsetD32Async(va, 0x01020304u, CHUNK / 4, NULL), CUDA_SUCCESS);
    EXPECT("memset_async_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    expect_true("memset_async_reads_back", reads_back(va, fill2), "the start does not hold the fill");

    queries(dev, va, 2 * gran, big);
    bad_input(dev, gran, va, big);

    /* Copies the driver refuses: unmapped, past the last mapping, unmapped after use. */
    refused("htod_reserved_unmapped", cu.MemcpyHtoD(va + 3 * gran, pattern, CHUNK));
    refused("htod_past_mapping", cu.MemcpyHtoD(va + 3 * gran - CHUNK / 2, pattern, CHUNK));
    EXPECT("unmap_big", cu.MemUnmap(va, 2 * gran), CUDA_SUCCESS);
    refused("htod_after_unmap", cu.MemcpyHtoD(va, pattern, CHUNK));
    static unsigned char sink[CHUNK];
    refused("dtoh_after_unmap", cu.MemcpyDtoH(sink, across, CHUNK));
    expect_true("small_still_mapped", reads_back(va + 2 * gran, pattern),
                "the second mapping lost its bytes");

    /* The second mapping goes as NCCL frees its buffers: handle and size
     * found from the address alone. */
    CUmemGenericAllocationHandle found = 0;
    size_t found_size = 0;
    CUdeviceptr second = va + 2 * gran;
    EXPECT("teardown_retain", cu.MemRetainAllocationHandle(&found, (void *)(uintptr_t)second),
           CUDA_SUCCESS);
    EXPECT("teardown_release_retained", cu.MemRelease(found), CUDA_SUCCESS);
    EXPECT("teardown_size", cu.MemGetAddressRange(NULL, &found_size, second), CUDA_SUCCESS);
    expect_true("teardown_size_value", found_size == gran, "not the mapping's size");
    EXPECT("unmap_small", cu.MemUnmap(second, found_size), CUDA_SUCCESS);
    EXPECT("release_big", cu.MemRelease(big), CUDA_SUCCESS);
    EXPECT("release_small", cu.MemRelease(found), CUDA_SUCCESS);
    EXPECT("address_free", cu.MemAddressFree(va, 4 * gran), CUDA_SUCCESS);
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
