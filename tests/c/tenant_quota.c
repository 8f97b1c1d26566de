/*
 * tenant_quota: a client of a tenant whose device-memory limit is LIMIT_MIB
 * (the mediator file's `memory_limit`), checking from the client's side what
 * the mediator enforces outside it:
 *   - cuMemGetInfo reports the tenant's view: total = the limit, free = the
 *     limit less what the tenant's sessions hold;
 *   - cuMemAlloc, cuMemAllocPitch, cuMemAllocAsync, cuMemCreate and
 *     cuArrayCreate succeed up to the limit and fail with
 *     CUDA_ERROR_OUT_OF_MEMORY past it;
 *   - freed memory (cuMemFree, cuMemFreeAsync, cuMemRelease, cuArrayDestroy)
 *     is given back.
 * The limit is split into 8 chunks of LIMIT_MIB/8 MiB (a multiple of the
 * allocation granularity: LIMIT_MIB a multiple of 16).
 *
 * With HOLD set it prints `ready` holding 4 chunks and waits for a line on
 * standard input before it frees them (another session of the same tenant
 * then sees them used).
 *
 * Prints `ok NAME` or `FAIL NAME: ...` per check and a summary; exits 0 when
 * every check passed, 1 otherwise, 2 on bad arguments or no library. Runs
 * only through vgpu: natively there is no tenant limit.
 *
 * Build:  cc -std=c11 -O2 -Wall -o tenant_quota tenant_quota.c -ldl
 * Usage:  tenant_quota LIMIT_MIB
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

_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");

typedef struct CUarray_st *CUarray;

typedef struct {
    size_t Width;
    size_t Height;
    int Format; /* CUarray_format */
    unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;

_Static_assert(sizeof(CUDA_ARRAY_DESCRIPTOR) == 24, "CUDA_ARRAY_DESCRIPTOR is 24 bytes");

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*CtxCreate)(CUcontext *, unsigned int, CUdevice);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
    CUresult (*MemRelease)(CUmemGenericAllocationHandle);
    CUresult (*ArrayCreate)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
    CUresult (*ArrayDestroy)(CUarray);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(CtxCreate, "cuCtxCreate_v2"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemGetInfo, "cuMemGetInfo_v2"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemAllocPitch, "cuMemAllocPitch_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemAllocAsync, "cuMemAllocAsync"),
    ENTRY(MemFreeAsync, "cuMemFreeAsync"),
    ENTRY(MemCreate, "cuMemCreate"),
    ENTRY(MemRelease, "cuMemRelease"),
    ENTRY(ArrayCreate, "cuArrayCreate_v2"),
    ENTRY(ArrayDestroy, "cuArrayDestroy"),
};

static int failures;

enum { CUDA_ERROR_OUT_OF_MEMORY = 2 };

/* Prints `ok NAME`, or `FAIL NAME: ` and `fmt` with `value`. */
static void check(const char *name, int good, const char *fmt, long long value)
{
    if (good) {
        printf("ok %s\n", name);
    } else {
        printf("FAIL %s: ", name);
        printf(fmt, value);
        printf("\n");
        failures++;
    }
}

/* cuMemGetInfo's free and total, in MiB, checked against the expected. */
static void expect_info(const char *name, size_t want_free_mib, size_t want_total_mib)
{
    size_t free_b = 0, total_b = 0;
    CUresult r = cu.MemGetInfo(&free_b, &total_b);
    if (r != CUDA_SUCCESS) {
        check(name, 0, "cuMemGetInfo returned %lld", r);
        return;
    }
    char what[96];
    snprintf(what, sizeof what, "%s total", name);
    check(what, total_b == want_total_mib << 20, "total %lld MiB", (long long)(total_b >> 20));
    snprintf(what, sizeof what, "%s free", name);
    check(what, free_b == want_free_mib << 20, "free %lld MiB", (long long)(free_b >> 20));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tenant_quota LIMIT_MIB\n");
        return 2;
    }
    size_t limit_mib = strtoull(argv[1], NULL, 10);
    if (limit_mib < 16 || limit_mib % 16 != 0) {
        fprintf(stderr, "tenant_quota: LIMIT_MIB must be a multiple of 16\n");
        return 2;
    }
    if (cu_load(NULL, entries, CU_COUNT(entries)) == NULL) {
        return 2;
    }
    size_t chunk_mib = limit_mib / 8, chunk = chunk_mib << 20;
    CUdevice dev;
    CUcontext ctx;
    if (cu.Init(0) != CUDA_SUCCESS || cu.DeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cu.CtxCreate(&ctx, 0, dev) != CUDA_SUCCESS) {
        printf("FAIL init\n");
        return 1;
    }
    expect_info("empty", limit_mib, limit_mib);

    /* cuMemAlloc: eight chunks fit, the ninth does not. */
    CUdeviceptr d[9] = {0};
    int n = 0;
    CUresult r = CUDA_SUCCESS;
    while (n < 9 && (r = cu.MemAlloc(&d[n], chunk)) == CUDA_SUCCESS) {
        n++;
    }
    check("cuMemAlloc fills the limit", n == 8, "%lld chunks fit, not 8", n);
    check("cuMemAlloc past the limit", r == CUDA_ERROR_OUT_OF_MEMORY, "returned %lld", r);
    expect_info("full", 0, limit_mib);

    /* Two chunks freed: a pitched allocation of one chunk fits, of three not. */
    cu.MemFree(d[--n]);
    cu.MemFree(d[--n]);
    CUdeviceptr p = 0;
    size_t pitch = 0;
    r = cu.MemAllocPitch(&p, &pitch, 2048, chunk / 2048 * 3, 4);
    check("cuMemAllocPitch past the limit", r == CUDA_ERROR_OUT_OF_MEMORY, "returned %lld", r);
    r = cu.MemAllocPitch(&p, &pitch, 2048, chunk / 2048, 4);
    check("cuMemAllocPitch within the limit", r == CUDA_SUCCESS, "returned %lld", r);
    if (r == CUDA_SUCCESS) {
        cu.MemFree(p);
    }
    /* Narrow rows: width x height fits, but the allocation is pitch x height. */
    r = cu.MemAllocPitch(&p, &pitch, 4, chunk / 4, 4);
    check("cuMemAllocPitch counts the pitch", r == CUDA_ERROR_OUT_OF_MEMORY, "returned %lld", r);
    if (r == CUDA_SUCCESS) {
        cu.MemFree(p);
    }

    /* Stream-ordered: two chunks do not fit, one does, and comes back. */
    CUdeviceptr a = 0;
    r = cu.MemAllocAsync(&a, 3 * chunk, NULL);
    check("cuMemAllocAsync past the limit", r == CUDA_ERROR_OUT_OF_MEMORY, "returned %lld", r);
    r = cu.MemAllocAsync(&a, chunk, NULL);
    check("cuMemAllocAsync within the limit", r == CUDA_SUCCESS, "returned %lld", r);
    if (r == CUDA_SUCCESS) {
        expect_info("async held", chunk_mib, limit_mib);
        cu.MemFreeAsync(a, NULL);
        cu.CtxSynchronize();
    }

    /* Physical memory (VMM): the same limit. */
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = 1;          /* CU_MEM_ALLOCATION_TYPE_PINNED */
    prop.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE */
    prop.location.id = dev;
    CUmemGenericAllocationHandle h = 0;
    r = cu.MemCreate(&h, 4 * chunk, &prop, 0);
    check("cuMemCreate past the limit", r == CUDA_ERROR_OUT_OF_MEMORY, "returned %lld", r);
    r = cu.MemCreate(&h, 2 * chunk, &prop, 0);
    check("cuMemCreate within the limit", r == CUDA_SUCCESS, "returned %lld", r);
    if (r == CUDA_SUCCESS) {
        expect_info("created", 0, limit_mib);
        cu.MemRelease(h);
    }
    expect_info("released", 2 * chunk_mib, limit_mib);

    /* CUDA arrays: rows of 4096 float4 (64 KiB), charged until destroyed. */
    CUDA_ARRAY_DESCRIPTOR desc = {4096, 3 * chunk / 65536, 0x20 /* FLOAT */, 4};
    CUarray arr = NULL;
    r = cu.ArrayCreate(&arr, &desc);
    check("cuArrayCreate past the limit", r == CUDA_ERROR_OUT_OF_MEMORY, "returned %lld", r);
    desc.Height = chunk / 65536;
    r = cu.ArrayCreate(&arr, &desc);
    check("cuArrayCreate within the limit", r == CUDA_SUCCESS, "returned %lld", r);
    if (r == CUDA_SUCCESS) {
        expect_info("array held", chunk_mib, limit_mib);
        cu.ArrayDestroy(arr);
    }
    expect_info("array destroyed", 2 * chunk_mib, limit_mib);

    /* Keep four chunks for another session to see, when asked to. */
    while (n > 4) {
        cu.MemFree(d[--n]);
    }
    if (getenv("HOLD") != NULL) {
        printf("ready\n");
        fflush(stdout);
        char line[16];
        if (fgets(line, sizeof line, stdin) == NULL) {
            clearerr(stdin);
        }
    }
    while (n > 0) {
        cu.MemFree(d[--n]);
    }
    expect_info("all freed", limit_mib, limit_mib);
    printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
