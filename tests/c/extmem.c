/*
 * extmem: external memory. A VMM allocation exported as a POSIX file
 * descriptor is imported as external memory
 * (CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD, the descriptor then belongs to
 * CUDA), and a buffer mapped on it shares the allocation's bytes both ways.
 * Under CU_TEST_INVALID_HANDLES (answers not yet read off a GPU): a
 * descriptor that is no exported memory, a buffer past the object's end, and
 * a destroyed object.
 * A mipmapped array mapped on the same object behaves like one from
 * cuMipmappedArrayCreate: its levels have halving extents, take and give
 * back their own bytes, and cuMipmappedArrayDestroy destroys it. Calls that
 * must fail print the driver's code.
 *
 * Build:  cc -std=c11 -O2 -Wall -o extmem extmem.c -ldl
 * Usage:  extmem [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <fcntl.h>

typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUextMemory_st *CUexternalMemory;

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

typedef struct {
    struct {
        int type;
        int id;
    } location;
    int flags;
} CUmemAccessDesc;

typedef struct {
    int type;
    union {
        int fd;
        struct {
            void *handle;
            const void *name;
        } win32;
        const void *nvSciBufObject;
    } handle;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_HANDLE_DESC;

typedef struct {
    unsigned long long offset;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_BUFFER_DESC;

typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;

typedef struct {
    size_t Width, Height, Depth;
    int Format;
    unsigned int NumChannels, Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

typedef struct {
    unsigned long long offset;
    CUDA_ARRAY3D_DESCRIPTOR arrayDesc;
    unsigned int numLevels;
    unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC;

_Static_assert(sizeof(CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC) == 120,
               "mipmapped array desc is 120 bytes");
_Static_assert(sizeof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC) == 104, "handle desc is 104 bytes");
_Static_assert(sizeof(CUDA_EXTERNAL_MEMORY_BUFFER_DESC) == 88, "buffer desc is 88 bytes");

enum {
    CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
    CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1,
    CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
};

/* The mipmapped array's shape: 1D, 32-bit elements, WIDTH wide, LEVELS levels. */
#define WIDTH 64u
#define LEVELS 4

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, int);
    CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
    CUresult (*MemRelease)(CUmemGenericAllocationHandle);
    CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*MemAddressFree)(CUdeviceptr, size_t);
    CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                       unsigned long long);
    CUresult (*MemUnmap)(CUdeviceptr, size_t);
    CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*MemExportToShareableHandle)(void *, CUmemGenericAllocationHandle, int,
                                           unsigned long long);
    CUresult (*ImportExternalMemory)(CUexternalMemory *, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *);
    CUresult (*ExternalMemoryGetMappedBuffer)(CUdeviceptr *, CUexternalMemory,
                                              const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *);
    CUresult (*DestroyExternalMemory)(CUexternalMemory);
    CUresult (*ExternalMemoryGetMappedMipmappedArray)(
        CUmipmappedArray *, CUexternalMemory, const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC *);
    CUresult (*MipmappedArrayGetLevel)(CUarray *, CUmipmappedArray, unsigned int);
    CUresult (*MipmappedArrayDestroy)(CUmipmappedArray);
    CUresult (*Array3DGetDescriptor)(CUDA_ARRAY3D_DESCRIPTOR *, CUarray);
    CUresult (*MemcpyHtoA)(CUarray, size_t, const void *, size_t);
    CUresult (*MemcpyAtoH)(void *, CUarray, size_t, size_t);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemGetAllocationGranularity, "cuMemGetAllocationGranularity"),
    ENTRY(MemCreate, "cuMemCreate"),
    ENTRY(MemRelease, "cuMemRelease"),
    ENTRY(MemAddressReserve, "cuMemAddressReserve"),
    ENTRY(MemAddressFree, "cuMemAddressFree"),
    ENTRY(MemMap, "cuMemMap"),
    ENTRY(MemUnmap, "cuMemUnmap"),
    ENTRY(MemSetAccess, "cuMemSetAccess"),
    ENTRY(MemExportToShareableHandle, "cuMemExportToShareableHandle"),
    ENTRY(ImportExternalMemory, "cuImportExternalMemory"),
    ENTRY(ExternalMemoryGetMappedBuffer, "cuExternalMemoryGetMappedBuffer"),
    ENTRY(DestroyExternalMemory, "cuDestroyExternalMemory"),
    ENTRY(ExternalMemoryGetMappedMipmappedArray, "cuExternalMemoryGetMappedMipmappedArray"),
    ENTRY(MipmappedArrayGetLevel, "cuMipmappedArrayGetLevel"),
    ENTRY(MipmappedArrayDestroy, "cuMipmappedArrayDestroy"),
    ENTRY(Array3DGetDescriptor, "cuArray3DGetDescriptor_v2"),
    ENTRY(MemcpyHtoA, "cuMemcpyHtoA_v2"),
    ENTRY(MemcpyAtoH, "cuMemcpyAtoH_v2"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* Whether the first `words` words at `p` all read back as `value`. */
static int holds(CUdeviceptr p, size_t words, unsigned int value)
{
    static unsigned int host[1 << 18];
    if (words > sizeof host / sizeof host[0] ||
        cu.MemcpyDtoH(host, p, words * sizeof host[0]) != CUDA_SUCCESS)
        return 0;
    for (size_t i = 0; i < words; i++)
        if (host[i] != value)
            return 0;
    return 1;
}

/* A call that must fail: which error is the driver's to choose; its name is printed. */
static void expect_failure(const char *name, CUresult got)
{
    checks++;
    if (got != CUDA_SUCCESS) {
        printf("ok %s: %s\n", name, error_name(cu.GetErrorName, got));
        return;
    }
    failures++;
    printf("FAIL %s: succeeded, expected an error\n", name);
}

/* A mipmapped array on external memory `ext` of `size` bytes: its levels'
 * shapes, each level's own bytes both ways, and its destruction. */
static void mipmapped(CUexternalMemory ext, size_t size)
{
    CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC md;
    memset(&md, 0, sizeof md);
    md.arrayDesc.Width = WIDTH;
    md.arrayDesc.Format = CU_AD_FORMAT_UNSIGNED_INT32;
    md.arrayDesc.NumChannels = 1;
    md.numLevels = LEVELS;
    CUmipmappedArray m = NULL;
    if (!EXPECT("mipmap_map", cu.ExternalMemoryGetMappedMipmappedArray(&m, ext, &md),
                CUDA_SUCCESS))
        return;
    CUarray level[LEVELS];
    int shapes = 1;
    for (unsigned i = 0; i < LEVELS; i++) {
        CUDA_ARRAY3D_DESCRIPTOR got;
        memset(&got, 0, sizeof got);
        EXPECT("mipmap_get_level", cu.MipmappedArrayGetLevel(&level[i], m, i), CUDA_SUCCESS);
        EXPECT("mipmap_level_descriptor", cu.Array3DGetDescriptor(&got, level[i]), CUDA_SUCCESS);
        shapes &= got.Width == (size_t)(WIDTH >> i) && got.Height == 0 && got.Depth == 0 &&
                  got.Format == CU_AD_FORMAT_UNSIGNED_INT32 && got.NumChannels == 1;
    }
    expect_true("mipmap_level_shapes", shapes, "a level's extent is not half the one above");
    CUarray past = NULL;
    expect_failure("mipmap_level_past_last", cu.MipmappedArrayGetLevel(&past, m, LEVELS));

    /* Every level gets its own pattern; each reads back as written. */
    unsigned int in[LEVELS][WIDTH], out[WIDTH];
    for (unsigned i = 0; i < LEVELS; i++) {
        for (unsigned j = 0; j < WIDTH; j++)
            in[i][j] = 0x1000u * (i + 1) + j;
        EXPECT("mipmap_level_upload",
               cu.MemcpyHtoA(level[i], 0, in[i], (WIDTH >> i) * sizeof(unsigned int)),
               CUDA_SUCCESS);
    }
    int same = 1;
    for (unsigned i = 0; i < LEVELS; i++) {
        size_t bytes = (WIDTH >> i) * sizeof(unsigned int);
        memset(out, 0, sizeof out);
        EXPECT("mipmap_level_download", cu.MemcpyAtoH(out, level[i], 0, bytes), CUDA_SUCCESS);
        same &= memcmp(in[i], out, bytes) == 0;
    }
    expect_true("mipmap_levels_hold_their_bytes", same, "a level's bytes differ");
    expect_failure("mipmap_level_upload_past_end",
                   cu.MemcpyHtoA(level[LEVELS - 1], 0, in[0], sizeof in[0]));
    EXPECT("mipmap_destroy", cu.MipmappedArrayDestroy(m), CUDA_SUCCESS);

    /* Descriptors the driver refuses. */
    CUmipmappedArray bad = NULL;
    CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC many = md;
    many.numLevels = 8; /* a width of 64 has 7 levels */
    expect_failure("mipmap_too_many_levels",
                   cu.ExternalMemoryGetMappedMipmappedArray(&bad, ext, &many));
    CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC beyond = md;
    beyond.offset = size;
    expect_failure("mipmap_past_end", cu.ExternalMemoryGetMappedMipmappedArray(&bad, ext, &beyond));
    if (invalid_handle_checks()) {
        /* Driver 580 corrupts its heap on no levels and aborts; vgpu's
         * worker refuses it first. */
        CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC none = md;
        none.numLevels = 0;
        expect_failure("mipmap_no_levels",
                       cu.ExternalMemoryGetMappedMipmappedArray(&bad, ext, &none));
        expect_failure("mipmap_destroy_twice", cu.MipmappedArrayDestroy(m));
        expect_failure("mipmap_level_of_destroyed", cu.MipmappedArrayGetLevel(&past, m, 0));
    }
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    EXPECT("init", cu.Init(0), CUDA_SUCCESS);
    EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS);
    EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS);

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t size = 0;
    EXPECT("granularity", cu.MemGetAllocationGranularity(&size, &prop, 0), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h = 0;
    EXPECT("vmm_create", cu.MemCreate(&h, size, &prop, 0), CUDA_SUCCESS);
    CUdeviceptr va = 0;
    CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT("vmm_reserve", cu.MemAddressReserve(&va, size, 0, 0, 0), CUDA_SUCCESS);
    EXPECT("vmm_map", cu.MemMap(va, size, 0, h, 0), CUDA_SUCCESS);
    EXPECT("vmm_access", cu.MemSetAccess(va, size, &rw, 1), CUDA_SUCCESS);
    size_t words = size / 4 < (1 << 18) ? size / 4 : (1 << 18);
    EXPECT("vmm_fill", cu.MemsetD32(va, 0x12345678, words), CUDA_SUCCESS);
    EXPECT("vmm_fill_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    int fd = -1;
    EXPECT("vmm_export_fd",
           cu.MemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           CUDA_SUCCESS);

    CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc;
    memset(&desc, 0, sizeof desc);
    desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
    desc.handle.fd = fd;
    desc.size = size;
    CUexternalMemory ext = NULL;
    EXPECT("import_external_memory", cu.ImportExternalMemory(&ext, &desc), CUDA_SUCCESS);
    CUDA_EXTERNAL_MEMORY_BUFFER_DESC buf;
    memset(&buf, 0, sizeof buf);
    buf.size = size;
    CUdeviceptr p = 0;
    EXPECT("mapped_buffer", cu.ExternalMemoryGetMappedBuffer(&p, ext, &buf), CUDA_SUCCESS);
    expect_true("buffer_reads_allocation", holds(p, words, 0x12345678), "not the allocation's bytes");
    EXPECT("buffer_write", cu.MemsetD32(p, 0x0badf00d, words), CUDA_SUCCESS);
    EXPECT("buffer_write_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    expect_true("allocation_reads_buffer", holds(va, words, 0x0badf00d), "not the buffer's bytes");

    mipmapped(ext, size);

    if (invalid_handle_checks()) {
        CUDA_EXTERNAL_MEMORY_BUFFER_DESC past = buf;
        past.offset = size;
        CUdeviceptr q = 0;
        EXPECT("buffer_past_end", cu.ExternalMemoryGetMappedBuffer(&q, ext, &past),
               CUDA_ERROR_INVALID_VALUE);
        CUDA_EXTERNAL_MEMORY_HANDLE_DESC null_desc = desc;
        null_desc.handle.fd = open("/dev/null", O_RDONLY);
        CUexternalMemory bad = NULL;
        EXPECT("import_dev_null", cu.ImportExternalMemory(&bad, &null_desc), CUDA_ERROR_INVALID_VALUE);
        close(null_desc.handle.fd);
    }
    EXPECT("buffer_free", cu.MemFree(p), CUDA_SUCCESS);
    EXPECT("destroy_external_memory", cu.DestroyExternalMemory(ext), CUDA_SUCCESS);
    if (invalid_handle_checks()) {
        CUdeviceptr q = 0;
        EXPECT("buffer_of_destroyed", cu.ExternalMemoryGetMappedBuffer(&q, ext, &buf),
               CUDA_ERROR_INVALID_HANDLE);
        EXPECT("destroy_twice", cu.DestroyExternalMemory(ext), CUDA_ERROR_INVALID_HANDLE);
    }
    EXPECT("vmm_unmap", cu.MemUnmap(va, size), CUDA_SUCCESS);
    EXPECT("vmm_address_free", cu.MemAddressFree(va, size), CUDA_SUCCESS);
    EXPECT("vmm_release", cu.MemRelease(h), CUDA_SUCCESS);
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
