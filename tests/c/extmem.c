/*
 * extmem: external memory. A VMM allocation exported as a POSIX file
 * descriptor is imported as external memory
 * (CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD, the descriptor then belongs to
 * CUDA), and a buffer mapped on it shares the allocation's bytes both ways.
 * Under CU_TEST_INVALID_HANDLES (answers not yet read off a GPU): a
 * descriptor that is no exported memory, a buffer past the object's end, and
 * a destroyed object.
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

_Static_assert(sizeof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC) == 104, "handle desc is 104 bytes");
_Static_assert(sizeof(CUDA_EXTERNAL_MEMORY_BUFFER_DESC) == 88, "buffer desc is 88 bytes");

enum {
    CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
    CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1,
};

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
