/*
 * pools: the CUDA memory-pool family as frameworks use it (CuPy's
 * MemoryAsyncPool, cuda.core's device memory resource, cudart's
 * cudaMallocAsync): the device's default and current pool, a created pool's
 * attributes of both value types (int and cuuint64_t), its access, stream-
 * ordered allocation from it and through cuMemAllocAsync once it is the
 * device's current pool, trimming, and destruction; then bad input, each
 * with the driver's error code: a forged pool, a pool destroyed twice, an
 * attribute that does not exist, a read-only attribute, a pointer freed
 * twice, and the use of a destroyed pool.
 *
 * Its checks hold on any device (relations between the counters, never
 * their exact values), so it runs on the simulated device and on a real GPU
 * alike, and its output is the same natively and through vgpu
 * (gpu/frameworks.sh compares the two).
 *
 * Build:  cc -std=c11 -O2 -Wall -pthread -o pools pools.c -ldl
 * Usage:  pools [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef struct CUmemPoolHandle_st *CUmemoryPool;

typedef struct {
    int type; /* CUmemLocationType */
    int id;
} CUmemLocation;

typedef struct {
    int allocType;   /* CUmemAllocationType */
    int handleTypes; /* CUmemAllocationHandleType */
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps;

typedef struct {
    CUmemLocation location;
    int flags; /* CUmemAccess_flags */
} CUmemAccessDesc;

_Static_assert(sizeof(CUmemPoolProps) == 88, "CUmemPoolProps is 88 bytes");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc is 12 bytes");

enum {
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
    CU_STREAM_NON_BLOCKING = 1,
    CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17,
    /* CUmemPool_attribute */
    REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
    REUSE_ALLOW_OPPORTUNISTIC = 2,
    REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
    RELEASE_THRESHOLD = 4,
    RESERVED_MEM_CURRENT = 5,
    RESERVED_MEM_HIGH = 6,
    USED_MEM_CURRENT = 7,
    USED_MEM_HIGH = 8,
};

#define MIB (1024 * 1024)
#define WORDS (MIB / 4)

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
    CUresult (*DeviceGetMemPool)(CUmemoryPool *, CUdevice);
    CUresult (*DeviceSetMemPool)(CUdevice, CUmemoryPool);
    CUresult (*MemGetDefaultMemPool)(CUmemoryPool *, CUmemLocation *, int);
    CUresult (*MemGetMemPool)(CUmemoryPool *, CUmemLocation *, int);
    CUresult (*MemSetMemPool)(CUmemLocation *, int, CUmemoryPool);
    CUresult (*MemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
    CUresult (*MemPoolDestroy)(CUmemoryPool);
    CUresult (*MemPoolGetAttribute)(CUmemoryPool, int, void *);
    CUresult (*MemPoolSetAttribute)(CUmemoryPool, int, void *);
    CUresult (*MemPoolTrimTo)(CUmemoryPool, size_t);
    CUresult (*MemPoolSetAccess)(CUmemoryPool, const CUmemAccessDesc *, size_t);
    CUresult (*MemPoolGetAccess)(int *, CUmemoryPool, CUmemLocation *);
    CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(MemsetD32Async, "cuMemsetD32Async"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(PointerGetAttribute, "cuPointerGetAttribute"),
    ENTRY(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool"),
    ENTRY(DeviceGetMemPool, "cuDeviceGetMemPool"),
    ENTRY(DeviceSetMemPool, "cuDeviceSetMemPool"),
    ENTRY(MemGetDefaultMemPool, "cuMemGetDefaultMemPool"),
    ENTRY(MemGetMemPool, "cuMemGetMemPool"),
    ENTRY(MemSetMemPool, "cuMemSetMemPool"),
    ENTRY(MemPoolCreate, "cuMemPoolCreate"),
    ENTRY(MemPoolDestroy, "cuMemPoolDestroy"),
    ENTRY(MemPoolGetAttribute, "cuMemPoolGetAttribute"),
    ENTRY(MemPoolSetAttribute, "cuMemPoolSetAttribute"),
    ENTRY(MemPoolTrimTo, "cuMemPoolTrimTo"),
    ENTRY(MemPoolSetAccess, "cuMemPoolSetAccess"),
    ENTRY(MemPoolGetAccess, "cuMemPoolGetAccess"),
    ENTRY(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync"),
    ENTRY(MemAllocAsync, "cuMemAllocAsync"),
    ENTRY(MemFreeAsync, "cuMemFreeAsync"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

static CUstream stream;

/* A cuuint64_t attribute of `pool`; UINT64_MAX when the call fails. */
static uint64_t u64_attribute(CUmemoryPool pool, int attr)
{
    uint64_t v = 0;
    if (cu.MemPoolGetAttribute(pool, attr, &v) != CUDA_SUCCESS)
        return UINT64_MAX;
    return v;
}

/* An int attribute of `pool`; -1 when the call fails. The bytes past the int
 * must stay untouched: the value is an int, not a wider type. */
static int int_attribute(CUmemoryPool pool, int attr, int *past_untouched)
{
    int v[2] = {-1, 0x5a5a5a5a};
    if (cu.MemPoolGetAttribute(pool, attr, &v[0]) != CUDA_SUCCESS)
        return -1;
    *past_untouched = v[1] == 0x5a5a5a5a;
    return v[0];
}

/* Fills WORDS words at `p` with `value` on the stream and reads them back. */
static int fill_and_check(CUdeviceptr p, size_t words, unsigned int value)
{
    static unsigned int host[WORDS];
    if (cu.MemsetD32Async(p, value, words, stream) != CUDA_SUCCESS ||
        cu.StreamSynchronize(stream) != CUDA_SUCCESS ||
        cu.MemcpyDtoH(host, p, words * sizeof host[0]) != CUDA_SUCCESS)
        return 0;
    for (size_t i = 0; i < words; i++)
        if (host[i] != value)
            return 0;
    return 1;
}

/* The device's default and current pool, by both generations of the API. */
static CUmemoryPool device_pools(CUdevice dev, CUmemLocation *loc)
{
    CUmemoryPool def = NULL, cur = NULL, def13 = NULL, cur13 = NULL;
    EXPECT("default_pool", cu.DeviceGetDefaultMemPool(&def, dev), CUDA_SUCCESS);
    EXPECT("current_pool", cu.DeviceGetMemPool(&cur, dev), CUDA_SUCCESS);
    expect_true("current_is_default", def != NULL && cur == def, "another pool is current");
    EXPECT("mem_default_pool",
           cu.MemGetDefaultMemPool(&def13, loc, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
    EXPECT("mem_current_pool", cu.MemGetMemPool(&cur13, loc, CU_MEM_ALLOCATION_TYPE_PINNED),
           CUDA_SUCCESS);
    expect_true("mem_pools_match", def13 == def && cur13 == def,
                "cuMemGet*MemPool named other pools");
    EXPECT("destroy_default_pool", cu.MemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
    EXPECT("default_bad_device", cu.DeviceGetDefaultMemPool(&cur, 9999), CUDA_ERROR_INVALID_DEVICE);
    return def;
}

/* A created pool's attributes: defaults, both value types, the rules. */
static void attributes(CUmemoryPool pool)
{
    int past = 0, flag;
    uint64_t v;
    for (int a = REUSE_FOLLOW_EVENT_DEPENDENCIES; a <= REUSE_ALLOW_INTERNAL_DEPENDENCIES; a++) {
        char name[40];
        snprintf(name, sizeof name, "reuse_%d_default_enabled", a);
        expect_true(name, int_attribute(pool, a, &past) == 1 && past,
                    "not 1, or more than an int written");
    }
    expect_true("release_threshold_default", u64_attribute(pool, RELEASE_THRESHOLD) == 0,
                "not 0");
    expect_true("counters_start_at_zero",
                u64_attribute(pool, RESERVED_MEM_CURRENT) == 0 &&
                    u64_attribute(pool, USED_MEM_CURRENT) == 0 &&
                    u64_attribute(pool, USED_MEM_HIGH) == 0,
                "a new pool holds memory");

    flag = 0;
    EXPECT("set_opportunistic_off",
           cu.MemPoolSetAttribute(pool, REUSE_ALLOW_OPPORTUNISTIC, &flag), CUDA_SUCCESS);
    expect_true("opportunistic_off", int_attribute(pool, REUSE_ALLOW_OPPORTUNISTIC, &past) == 0,
                "still on");
    flag = 1;
    EXPECT("set_opportunistic_on",
           cu.MemPoolSetAttribute(pool, REUSE_ALLOW_OPPORTUNISTIC, &flag), CUDA_SUCCESS);

    /* A value past 32 bits must travel whole. */
    v = 0x123456789ull;
    EXPECT("set_release_threshold", cu.MemPoolSetAttribute(pool, RELEASE_THRESHOLD, &v),
           CUDA_SUCCESS);
    expect_true("release_threshold_64_bits",
                u64_attribute(pool, RELEASE_THRESHOLD) == 0x123456789ull, "value changed");
    /* Keep everything freed: the trim below then has memory to release. */
    v = UINT64_MAX;
    EXPECT("set_release_threshold_max", cu.MemPoolSetAttribute(pool, RELEASE_THRESHOLD, &v),
           CUDA_SUCCESS);

    v = 4096;
    EXPECT("set_reserved_current_read_only",
           cu.MemPoolSetAttribute(pool, RESERVED_MEM_CURRENT, &v), CUDA_ERROR_INVALID_VALUE);
    EXPECT("set_used_high_nonzero", cu.MemPoolSetAttribute(pool, USED_MEM_HIGH, &v),
           CUDA_ERROR_INVALID_VALUE);
    v = 0;
    EXPECT("reset_used_high", cu.MemPoolSetAttribute(pool, USED_MEM_HIGH, &v), CUDA_SUCCESS);
    EXPECT("reset_reserved_high", cu.MemPoolSetAttribute(pool, RESERVED_MEM_HIGH, &v),
           CUDA_SUCCESS);
    EXPECT("get_attribute_0", cu.MemPoolGetAttribute(pool, 0, &v), CUDA_ERROR_INVALID_VALUE);
    EXPECT("get_attribute_99", cu.MemPoolGetAttribute(pool, 99, &v), CUDA_ERROR_INVALID_VALUE);
    EXPECT("set_attribute_99", cu.MemPoolSetAttribute(pool, 99, &v), CUDA_ERROR_INVALID_VALUE);
    EXPECT("get_attribute_null", cu.MemPoolGetAttribute(pool, RELEASE_THRESHOLD, NULL),
           CUDA_ERROR_INVALID_VALUE);
}

/* Stream-ordered allocation from the pool, its counters, free and trim. */
static void allocate_from(CUmemoryPool pool)
{
    CUdeviceptr p = 0;
    CUmemoryPool owner = NULL;
    EXPECT("alloc_from_pool", cu.MemAllocFromPoolAsync(&p, MIB, pool, stream), CUDA_SUCCESS);
    expect_true("alloc_from_pool_data", fill_and_check(p, WORDS, 0xabcd1234u),
                "memset and read back differ");
    EXPECT("pointer_pool", cu.PointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p),
           CUDA_SUCCESS);
    expect_true("pointer_pool_is_pool", owner == pool, "another pool");
    uint64_t used = u64_attribute(pool, USED_MEM_CURRENT);
    uint64_t reserved = u64_attribute(pool, RESERVED_MEM_CURRENT);
    expect_true("used_counts_allocation", used != UINT64_MAX && used >= MIB, "under 1 MiB");
    expect_true("reserved_covers_used", reserved != UINT64_MAX && reserved >= used,
                "less reserved than used");
    expect_true("used_high_covers_used", u64_attribute(pool, USED_MEM_HIGH) >= used,
                "high watermark under current");
    EXPECT("free_async", cu.MemFreeAsync(p, stream), CUDA_SUCCESS);
    EXPECT("free_async_sync", cu.StreamSynchronize(stream), CUDA_SUCCESS);
    expect_true("used_back_to_zero", u64_attribute(pool, USED_MEM_CURRENT) == 0, "still used");
    reserved = u64_attribute(pool, RESERVED_MEM_CURRENT);
    expect_true("freed_memory_kept", reserved != UINT64_MAX && reserved > 0,
                "released despite the threshold");
    EXPECT("free_async_twice", cu.MemFreeAsync(p, stream), CUDA_ERROR_INVALID_VALUE);
    EXPECT("trim", cu.MemPoolTrimTo(pool, 0), CUDA_SUCCESS);
    expect_true("trim_releases", u64_attribute(pool, RESERVED_MEM_CURRENT) == 0,
                "memory still reserved");
}

/* The pool as the device's current pool: cuMemAllocAsync takes from it. */
static void as_current(CUdevice dev, CUmemLocation *loc, CUmemoryPool def, CUmemoryPool pool)
{
    CUmemoryPool cur = NULL, owner = NULL;
    CUdeviceptr q = 0;
    EXPECT("set_current", cu.DeviceSetMemPool(dev, pool), CUDA_SUCCESS);
    EXPECT("get_current", cu.DeviceGetMemPool(&cur, dev), CUDA_SUCCESS);
    expect_true("current_is_pool", cur == pool, "another pool is current");
    EXPECT("alloc_async_current", cu.MemAllocAsync(&q, 64 * 1024, stream), CUDA_SUCCESS);
    expect_true("alloc_async_current_data", fill_and_check(q, 16 * 1024, 0x600dcafeu),
                "memset and read back differ");
    EXPECT("alloc_async_pointer_pool",
           cu.PointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, q), CUDA_SUCCESS);
    expect_true("alloc_async_from_current", owner == pool, "allocated from another pool");
    expect_true("alloc_async_counted", u64_attribute(pool, USED_MEM_CURRENT) >= 64 * 1024,
                "the pool does not count it");
    EXPECT("alloc_async_free", cu.MemFreeAsync(q, stream), CUDA_SUCCESS);
    EXPECT("mem_set_default", cu.MemSetMemPool(loc, CU_MEM_ALLOCATION_TYPE_PINNED, def),
           CUDA_SUCCESS);
    EXPECT("mem_get_current", cu.MemGetMemPool(&cur, loc, CU_MEM_ALLOCATION_TYPE_PINNED),
           CUDA_SUCCESS);
    expect_true("default_current_again", cur == def, "the pool is still current");
}

/* Destruction with an allocation outstanding, then the destroyed pool. */
static void destroy(CUdevice dev, CUmemoryPool def, CUmemoryPool pool)
{
    CUmemoryPool cur = NULL;
    CUdeviceptr r = 0, x = 0;
    uint64_t v = 0;
    EXPECT("outstanding_alloc", cu.MemAllocFromPoolAsync(&r, 4096, pool, stream), CUDA_SUCCESS);
    EXPECT("outstanding_sync", cu.StreamSynchronize(stream), CUDA_SUCCESS);
    EXPECT("set_current_again", cu.DeviceSetMemPool(dev, pool), CUDA_SUCCESS);
    EXPECT("destroy", cu.MemPoolDestroy(pool), CUDA_SUCCESS);
    EXPECT("current_after_destroy", cu.DeviceGetMemPool(&cur, dev), CUDA_SUCCESS);
    expect_true("destroy_resets_current", cur == def, "the destroyed pool is current");
    expect_true("outstanding_alloc_lives", fill_and_check(r, 1024, 0x0badf00du),
                "the allocation died with its pool");
    EXPECT("free_after_destroy", cu.MemFreeAsync(r, stream), CUDA_SUCCESS);
    EXPECT("free_after_destroy_sync", cu.StreamSynchronize(stream), CUDA_SUCCESS);
    EXPECT("destroy_twice", cu.MemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
    EXPECT("destroyed_get_attribute", cu.MemPoolGetAttribute(pool, RELEASE_THRESHOLD, &v),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("destroyed_alloc", cu.MemAllocFromPoolAsync(&x, 4096, pool, stream),
           CUDA_ERROR_INVALID_VALUE);
    /* Driver 580 takes a destroyed pool as the current one without a word;
     * vgpu no longer knows it and refuses it. */
    if (invalid_handle_checks())
        EXPECT("destroyed_set_current", cu.DeviceSetMemPool(dev, pool), CUDA_ERROR_INVALID_VALUE);
}

/* Pools that never were: NULL, and zeroed memory posing as a pool. */
static void forged(CUdevice dev)
{
    static uint64_t zeroed[512];
    CUmemoryPool fake = (CUmemoryPool)(void *)zeroed;
    CUdeviceptr x = 0;
    uint64_t v = 0;
    EXPECT("null_destroy", cu.MemPoolDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT("forged_destroy", cu.MemPoolDestroy(fake), CUDA_ERROR_INVALID_VALUE);
    EXPECT("forged_get_attribute", cu.MemPoolGetAttribute(fake, RELEASE_THRESHOLD, &v),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("forged_alloc", cu.MemAllocFromPoolAsync(&x, 4096, fake, stream),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("forged_set_current", cu.DeviceSetMemPool(dev, fake), CUDA_ERROR_INVALID_VALUE);
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev = 0;
    CUcontext primary = NULL;
    EXPECT("init", cu.Init(0), CUDA_SUCCESS);
    EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS);
    EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS);
    EXPECT("set_current_context", cu.CtxSetCurrent(primary), CUDA_SUCCESS);
    EXPECT("stream", cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, dev};
    CUmemoryPool def = device_pools(dev, &loc);

    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.location = loc;
    CUmemoryPool pool = NULL;
    EXPECT("create_bad_type", cu.MemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
    EXPECT("create_null_props", cu.MemPoolCreate(&pool, NULL), CUDA_ERROR_INVALID_VALUE);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    EXPECT("create", cu.MemPoolCreate(&pool, &props), CUDA_SUCCESS);
    expect_true("create_new_pool", pool != NULL && pool != def, "not a new pool");

    int flags = 0;
    CUmemAccessDesc own = {loc, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT("get_access", cu.MemPoolGetAccess(&flags, pool, &loc), CUDA_SUCCESS);
    expect_true("own_device_read_write", flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                "not read-write");
    EXPECT("set_access", cu.MemPoolSetAccess(pool, &own, 1), CUDA_SUCCESS);

    attributes(pool);
    allocate_from(pool);
    as_current(dev, &loc, def, pool);
    destroy(dev, def, pool);
    forged(dev);

    EXPECT("stream_destroy", cu.StreamDestroy(stream), CUDA_SUCCESS);
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
