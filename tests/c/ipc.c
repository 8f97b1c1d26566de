/*
 * ipc: two processes share device memory and an event through the CUDA
 * inter-process handles, both ways. The parent exports an allocation and an
 * interprocess event and sends their 64-byte handles down a pipe; the child
 * opens them, reads the parent's bytes, writes its own, waits on the event,
 * and exports an allocation of its own back; the parent opens that, reads
 * the child's bytes and writes its answer, which the child reads. Then bad
 * input, each with driver 580's error code: handles opened in the process
 * that exported them, exports of an address outside any allocation, of pool
 * memory and of a non-interprocess event, an address never opened or closed
 * once too often, bad flags, forged and zero handles, and (under
 * CU_TEST_INVALID_HANDLES, answers not yet read off a GPU) a forged event
 * handle and cuMemFree of opened memory.
 *
 * The processes fork before either touches CUDA, and take turns: one waits
 * on a pipe while the other checks, so the lines come out in one order.
 * Through vgpu the two processes are two sessions, with two workers.
 *
 * Build:  cc -std=c11 -O2 -Wall -pthread -o ipc ipc.c -ldl
 * Usage:  ipc [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then each
 *         process's summary (the child's first).
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

typedef struct {
    char reserved[64];
} CUipcHandle;

typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

typedef struct {
    int allocType;
    int handleTypes;
    struct {
        int type;
        int id;
    } location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps;

typedef struct {
    unsigned char reserved[64];
} CUmemPoolPtrExportData;

_Static_assert(sizeof(CUmemPoolProps) == 88, "CUmemPoolProps is 88 bytes");

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

_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc is 12 bytes");

enum {
    CUDA_ERROR_UNKNOWN = 999,
    CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CU_MEM_HANDLE_TYPE_NONE = 0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
    CU_MEM_HANDLE_TYPE_FABRIC = 8,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1,
};

enum {
    CUDA_ERROR_MAP_FAILED = 205,
    CU_EVENT_DISABLE_TIMING = 2,
    CU_EVENT_INTERPROCESS = 4,
    CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1,
};

#define MIB (1024 * 1024)
#define WORDS (MIB / 4)

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned int);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventQuery)(CUevent);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned int);
    CUresult (*CtxSynchronize)(void);
    CUresult (*IpcGetMemHandle)(CUipcHandle *, CUdeviceptr);
    CUresult (*IpcOpenMemHandle)(CUdeviceptr *, CUipcHandle, unsigned int);
    CUresult (*IpcCloseMemHandle)(CUdeviceptr);
    CUresult (*IpcGetEventHandle)(CUipcHandle *, CUevent);
    CUresult (*IpcOpenEventHandle)(CUevent *, CUipcHandle);
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
    CUresult (*MemImportFromShareableHandle)(CUmemGenericAllocationHandle *, void *, int);
    CUresult (*MemGetHandleForAddressRange)(void *, CUdeviceptr, size_t, int, unsigned long long);
    CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
    CUresult (*MemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
    CUresult (*MemPoolDestroy)(CUmemoryPool);
    CUresult (*MemPoolSetAccess)(CUmemoryPool, const CUmemAccessDesc *, size_t);
    CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*MemPoolExportToShareableHandle)(void *, CUmemoryPool, int, unsigned long long);
    CUresult (*MemPoolImportFromShareableHandle)(CUmemoryPool *, void *, int, unsigned long long);
    CUresult (*MemPoolExportPointer)(CUmemPoolPtrExportData *, CUdeviceptr);
    CUresult (*MemPoolImportPointer)(CUdeviceptr *, CUmemoryPool, CUmemPoolPtrExportData *);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemAllocAsync, "cuMemAllocAsync"),
    ENTRY(MemFreeAsync, "cuMemFreeAsync"),
    ENTRY(EventCreate, "cuEventCreate"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(EventRecord, "cuEventRecord"),
    ENTRY(EventSynchronize, "cuEventSynchronize"),
    ENTRY(EventQuery, "cuEventQuery"),
    ENTRY(StreamWaitEvent, "cuStreamWaitEvent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(IpcGetMemHandle, "cuIpcGetMemHandle"),
    ENTRY(IpcOpenMemHandle, "cuIpcOpenMemHandle_v2"),
    ENTRY(IpcCloseMemHandle, "cuIpcCloseMemHandle"),
    ENTRY(IpcGetEventHandle, "cuIpcGetEventHandle"),
    ENTRY(IpcOpenEventHandle, "cuIpcOpenEventHandle"),
    ENTRY(MemGetAllocationGranularity, "cuMemGetAllocationGranularity"),
    ENTRY(MemCreate, "cuMemCreate"),
    ENTRY(MemRelease, "cuMemRelease"),
    ENTRY(MemAddressReserve, "cuMemAddressReserve"),
    ENTRY(MemAddressFree, "cuMemAddressFree"),
    ENTRY(MemMap, "cuMemMap"),
    ENTRY(MemUnmap, "cuMemUnmap"),
    ENTRY(MemSetAccess, "cuMemSetAccess"),
    ENTRY(MemExportToShareableHandle, "cuMemExportToShareableHandle"),
    ENTRY(MemImportFromShareableHandle, "cuMemImportFromShareableHandle"),
    ENTRY(MemGetHandleForAddressRange, "cuMemGetHandleForAddressRange"),
    ENTRY(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool"),
    ENTRY(MemPoolCreate, "cuMemPoolCreate"),
    ENTRY(MemPoolDestroy, "cuMemPoolDestroy"),
    ENTRY(MemPoolSetAccess, "cuMemPoolSetAccess"),
    ENTRY(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync"),
    ENTRY(MemPoolExportToShareableHandle, "cuMemPoolExportToShareableHandle"),
    ENTRY(MemPoolImportFromShareableHandle, "cuMemPoolImportFromShareableHandle"),
    ENTRY(MemPoolExportPointer, "cuMemPoolExportPointer"),
    ENTRY(MemPoolImportPointer, "cuMemPoolImportPointer"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* The pipes: parent to child and child to parent; a socket pair for
 * descriptors (SCM_RIGHTS). */
static int down[2], up[2], sock[2];

static void send_fd(int s, int fd)
{
    char byte = 'F';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.space;
    msg.msg_controllen = sizeof u.space;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(s, &msg, 0) != 1) {
        printf("FAIL sendmsg\n");
        exit(1);
    }
}

static int recv_fd(int s)
{
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.space;
    msg.msg_controllen = sizeof u.space;
    if (recvmsg(s, &msg, 0) != 1) {
        printf("FAIL recvmsg\n");
        exit(1);
    }
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    int fd = -1;
    if (c != NULL && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static CUmemAllocationProp vmm_prop(CUdevice dev, int types)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = types;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

/* Maps `h` (`size` bytes) at a fresh reservation, read-write on `dev`. */
static CUdeviceptr vmm_map(CUdevice dev, CUmemGenericAllocationHandle h, size_t size)
{
    CUdeviceptr va = 0;
    CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    if (cu.MemAddressReserve(&va, size, 0, 0, 0) != CUDA_SUCCESS ||
        cu.MemMap(va, size, 0, h, 0) != CUDA_SUCCESS ||
        cu.MemSetAccess(va, size, &rw, 1) != CUDA_SUCCESS)
        return 0;
    return va;
}

static void vmm_unmap(CUdeviceptr va, size_t size)
{
    cu.MemUnmap(va, size);
    cu.MemAddressFree(va, size);
}

static void send_bytes(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n) {
        printf("FAIL pipe write\n");
        exit(1);
    }
}

static void recv_bytes(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r <= 0) {
            printf("FAIL pipe read\n");
            exit(1);
        }
        got += (size_t)r;
    }
}

/* Whether `words` words at `p` all read back as `value`. */
static int holds(CUdeviceptr p, size_t words, unsigned int value)
{
    static unsigned int host[WORDS];
    if (cu.MemcpyDtoH(host, p, words * sizeof host[0]) != CUDA_SUCCESS)
        return 0;
    for (size_t i = 0; i < words; i++)
        if (host[i] != value)
            return 0;
    return 1;
}

static CUdevice start(void)
{
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    if (cu.Init(0) != CUDA_SUCCESS || cu.DeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cu.DevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cu.CtxSetCurrent(ctx) != CUDA_SUCCESS) {
        printf("FAIL start\n");
        exit(1);
    }
    return dev;
}

/* The child: opens the parent's memory and event, answers with its own. */
static int child(void)
{
    CUdevice dev = start();
    CUipcHandle mem, ev;
    recv_bytes(down[0], &mem, sizeof mem);
    recv_bytes(down[0], &ev, sizeof ev);

    CUdeviceptr p = 0, again = 0;
    EXPECT("child_open_bad_flags", cu.IpcOpenMemHandle(&p, mem, 2), CUDA_ERROR_INVALID_VALUE);
    EXPECT("child_open", cu.IpcOpenMemHandle(&p, mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
           CUDA_SUCCESS);
    expect_true("child_reads_parent_bytes", holds(p, WORDS, 0x11111111), "not the parent's");
    EXPECT("child_open_again", cu.IpcOpenMemHandle(&again, mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
           CUDA_SUCCESS);
    expect_true("child_open_again_same_address", again == p, "another address");
    EXPECT("child_close_one_of_two", cu.IpcCloseMemHandle(again), CUDA_SUCCESS);
    expect_true("child_still_open", holds(p, WORDS, 0x11111111), "gone after one close");
    EXPECT("child_writes", cu.MemsetD32(p + MIB / 2, 0x22222222, WORDS / 2), CUDA_SUCCESS);
    EXPECT("child_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);

    CUevent opened = NULL;
    EXPECT("child_open_event", cu.IpcOpenEventHandle(&opened, ev), CUDA_SUCCESS);
    EXPECT("child_event_synchronize", cu.EventSynchronize(opened), CUDA_SUCCESS);
    EXPECT("child_event_query", cu.EventQuery(opened), CUDA_SUCCESS);
    EXPECT("child_stream_waits_event", cu.StreamWaitEvent(NULL, opened, 0), CUDA_SUCCESS);
    EXPECT("child_destroy_opened_event", cu.EventDestroy(opened), CUDA_SUCCESS);

    CUdeviceptr own = 0;
    EXPECT("child_alloc", cu.MemAlloc(&own, MIB), CUDA_SUCCESS);
    EXPECT("child_close_never_opened", cu.IpcCloseMemHandle(own), CUDA_ERROR_INVALID_VALUE);
    CUipcHandle forged = mem, zero;
    for (size_t i = 0; i < sizeof forged.reserved; i++)
        forged.reserved[i] ^= 0x5a;
    memset(&zero, 0, sizeof zero);
    CUdeviceptr f = 0;
    EXPECT("child_open_forged", cu.IpcOpenMemHandle(&f, forged, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT("child_open_zero", cu.IpcOpenMemHandle(&f, zero, 1), CUDA_ERROR_INVALID_VALUE);
    CUevent fe = NULL;
    EXPECT("child_open_zero_event", cu.IpcOpenEventHandle(&fe, zero), CUDA_ERROR_MAP_FAILED);
    if (invalid_handle_checks()) {
        EXPECT("child_open_forged_event", cu.IpcOpenEventHandle(&fe, forged),
               CUDA_ERROR_MAP_FAILED);
        EXPECT("child_free_opened", cu.MemFree(p), CUDA_ERROR_INVALID_VALUE);
    }

    /* The other way: the child's memory, opened by the parent. */
    EXPECT("child_fill", cu.MemsetD32(own, 0x33333333, WORDS), CUDA_SUCCESS);
    CUipcHandle back;
    EXPECT("child_export", cu.IpcGetMemHandle(&back, own), CUDA_SUCCESS);
    EXPECT("child_close", cu.IpcCloseMemHandle(p), CUDA_SUCCESS);
    EXPECT("child_close_again", cu.IpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);
    send_bytes(up[1], &back, sizeof back);

    char turn;
    recv_bytes(down[0], &turn, 1);
    expect_true("child_reads_parent_answer", holds(own, WORDS / 2, 0x44444444) &&
                                                 holds(own + MIB / 2, WORDS / 2, 0x33333333),
                "not the parent's answer");
    EXPECT("child_free", cu.MemFree(own), CUDA_SUCCESS);

    /* A VMM allocation of the parent, its descriptor passed by SCM_RIGHTS. */
    send_bytes(up[1], &turn, 1);
    size_t size = 0;
    recv_bytes(down[0], &size, sizeof size);
    int fd = recv_fd(sock[1]);
    expect_true("child_received_descriptor", fd >= 0, "no descriptor");
    CUmemGenericAllocationHandle imported = 0;
    EXPECT("child_import_fd",
           cu.MemImportFromShareableHandle(&imported, (void *)(uintptr_t)fd,
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           CUDA_SUCCESS);
    close(fd);
    CUdeviceptr va = vmm_map(dev, imported, size);
    expect_true("child_maps_imported", va != 0, "map failed");
    expect_true("child_reads_parent_vmm", va != 0 && holds(va, WORDS, 0x55555555),
                "not the parent's VMM bytes");
    EXPECT("child_writes_vmm", cu.MemsetD32(va, 0x66666666, WORDS / 2), CUDA_SUCCESS);
    EXPECT("child_vmm_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    vmm_unmap(va, size);
    EXPECT("child_release_imported", cu.MemRelease(imported), CUDA_SUCCESS);
    send_bytes(up[1], &turn, 1);

    /* A pool of the parent and one of its allocations. */
    CUmemPoolPtrExportData shared_ptr;
    int pool_fd = recv_fd(sock[1]);
    recv_bytes(down[0], &shared_ptr, sizeof shared_ptr);
    CUmemoryPool pool = NULL;
    EXPECT("child_import_pool",
           cu.MemPoolImportFromShareableHandle(&pool, (void *)(uintptr_t)pool_fd,
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           CUDA_SUCCESS);
    close(pool_fd);
    CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT("child_pool_access", cu.MemPoolSetAccess(pool, &rw, 1), CUDA_SUCCESS);
    CUdeviceptr from_pool = 0;
    EXPECT("child_import_pointer", cu.MemPoolImportPointer(&from_pool, pool, &shared_ptr),
           CUDA_SUCCESS);
    expect_true("child_reads_pool_memory", holds(from_pool, WORDS, 0x77777777),
                "not the parent's pool memory");
    EXPECT("child_writes_pool_memory", cu.MemsetD32(from_pool, 0x88888888, WORDS / 2), CUDA_SUCCESS);
    EXPECT("child_free_imported_pointer", cu.MemFreeAsync(from_pool, NULL), CUDA_SUCCESS);
    EXPECT("child_pool_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    EXPECT("child_destroy_imported_pool", cu.MemPoolDestroy(pool), CUDA_SUCCESS);
    send_bytes(up[1], &turn, 1);
    recv_bytes(down[0], &turn, 1);
    EXPECT("child_primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    printf("child: ");
    return checks_summary();
}

/* The parent's VMM allocation, exported as a descriptor; bad input first. */
static void vmm_export(CUdevice dev)
{
    CUmemAllocationProp prop = vmm_prop(dev, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    size_t size = 0;
    EXPECT("vmm_granularity", cu.MemGetAllocationGranularity(&size, &prop, 0), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h = 0, plain = 0, bad = 0;
    EXPECT("vmm_create", cu.MemCreate(&h, size, &prop, 0), CUDA_SUCCESS);
    CUmemAllocationProp none = vmm_prop(dev, CU_MEM_HANDLE_TYPE_NONE);
    EXPECT("vmm_create_unshareable", cu.MemCreate(&plain, size, &none, 0), CUDA_SUCCESS);
    int fd = -1;
    EXPECT("vmm_export_unshareable",
           cu.MemExportToShareableHandle(&fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           CUDA_ERROR_INVALID_VALUE);
    char fabric[64];
    EXPECT("vmm_export_fabric", cu.MemExportToShareableHandle(fabric, h, CU_MEM_HANDLE_TYPE_FABRIC, 0),
           CUDA_ERROR_INVALID_VALUE);
    int devnull = open("/dev/null", O_RDONLY);
    EXPECT("vmm_import_dev_null",
           cu.MemImportFromShareableHandle(&bad, (void *)(uintptr_t)devnull,
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           CUDA_ERROR_UNKNOWN);
    int plain_memfd = memfd_create("not-cuda", MFD_CLOEXEC);
    EXPECT("vmm_import_memfd",
           cu.MemImportFromShareableHandle(&bad, (void *)(uintptr_t)plain_memfd,
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           CUDA_ERROR_UNKNOWN);
    close(plain_memfd);
    EXPECT("vmm_import_closed",
           cu.MemImportFromShareableHandle(&bad, (void *)(uintptr_t)plain_memfd,
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           CUDA_ERROR_UNKNOWN);
    close(devnull);
    EXPECT("vmm_release_unshareable", cu.MemRelease(plain), CUDA_SUCCESS);

    CUdeviceptr va = vmm_map(dev, h, size);
    expect_true("vmm_maps", va != 0, "map failed");
    EXPECT("vmm_fill", cu.MemsetD32(va, 0x55555555, WORDS), CUDA_SUCCESS);
    EXPECT("vmm_fill_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    EXPECT("vmm_export_fd",
           cu.MemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           CUDA_SUCCESS);
    expect_true("vmm_export_gives_descriptor", fd >= 0 && fcntl(fd, F_GETFD) >= 0,
                "not an open descriptor of this process");
    send_bytes(down[1], &size, sizeof size);
    send_fd(sock[0], fd);
    close(fd);
    char turn;
    recv_bytes(up[0], &turn, 1);
    expect_true("vmm_reads_child_write",
                holds(va, WORDS / 2, 0x66666666) && holds(va + MIB / 2, WORDS / 2, 0x55555555),
                "not the child's VMM bytes");
    vmm_unmap(va, size);
    EXPECT("vmm_release", cu.MemRelease(h), CUDA_SUCCESS);
}

/* A pool exported as a descriptor, and one of its allocations as export data. */
static void pool_export(CUdevice dev)
{
    CUmemoryPool def = NULL, pool = NULL;
    int fd = -1;
    EXPECT("default_pool", cu.DeviceGetDefaultMemPool(&def, dev), CUDA_SUCCESS);
    EXPECT("default_pool_export",
           cu.MemPoolExportToShareableHandle(&fd, def, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           CUDA_ERROR_INVALID_VALUE);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    EXPECT("pool_create_shareable", cu.MemPoolCreate(&pool, &props), CUDA_SUCCESS);
    EXPECT("pool_export",
           cu.MemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           CUDA_SUCCESS);
    CUdeviceptr p = 0;
    EXPECT("pool_alloc", cu.MemAllocFromPoolAsync(&p, MIB, pool, NULL), CUDA_SUCCESS);
    EXPECT("pool_fill", cu.MemsetD32(p, 0x77777777, WORDS), CUDA_SUCCESS);
    EXPECT("pool_fill_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    CUmemPoolPtrExportData data;
    EXPECT("pool_export_pointer", cu.MemPoolExportPointer(&data, p), CUDA_SUCCESS);
    send_fd(sock[0], fd);
    close(fd);
    send_bytes(down[1], &data, sizeof data);
    char turn;
    recv_bytes(up[0], &turn, 1);
    expect_true("pool_reads_child_write",
                holds(p, WORDS / 2, 0x88888888) && holds(p + MIB / 2, WORDS / 2, 0x77777777),
                "not the child's write");
    EXPECT("pool_free", cu.MemFreeAsync(p, NULL), CUDA_SUCCESS);
    EXPECT("pool_free_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    EXPECT("pool_destroy", cu.MemPoolDestroy(pool), CUDA_SUCCESS);
}

/* A dma-buf descriptor of `p`'s first `bytes` bytes. */
static void dma_buf(CUdeviceptr p, size_t bytes)
{
    int fd = -1;
    EXPECT("dma_buf", cu.MemGetHandleForAddressRange(&fd, p, bytes, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
           CUDA_SUCCESS);
    expect_true("dma_buf_descriptor", fd >= 0 && fcntl(fd, F_GETFD) >= 0, "not an open descriptor");
    if (fd >= 0)
        close(fd);
}

/* The parent: exports memory and an event, then opens the child's memory. */
static int parent(pid_t pid)
{
    CUdevice dev = start();
    CUdeviceptr p = 0;
    EXPECT("alloc", cu.MemAlloc(&p, MIB), CUDA_SUCCESS);
    EXPECT("fill", cu.MemsetD32(p, 0x11111111, WORDS), CUDA_SUCCESS);
    dma_buf(p, MIB);
    CUipcHandle mem, ev;
    EXPECT("export", cu.IpcGetMemHandle(&mem, p), CUDA_SUCCESS);
    CUdeviceptr own = 0;
    EXPECT("open_in_exporter", cu.IpcOpenMemHandle(&own, mem, 1), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT("close_own_allocation", cu.IpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);
    CUipcHandle unused;
    EXPECT("export_outside_allocations", cu.IpcGetMemHandle(&unused, p + 2 * MIB + 4096),
           CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr pooled = 0;
    EXPECT("alloc_async", cu.MemAllocAsync(&pooled, MIB, NULL), CUDA_SUCCESS);
    EXPECT("export_pool_memory", cu.IpcGetMemHandle(&unused, pooled), CUDA_ERROR_INVALID_VALUE);
    EXPECT("free_async", cu.MemFreeAsync(pooled, NULL), CUDA_SUCCESS);

    CUevent plain = NULL, shared = NULL;
    EXPECT("event_create", cu.EventCreate(&plain, 0), CUDA_SUCCESS);
    EXPECT("export_plain_event", cu.IpcGetEventHandle(&ev, plain), CUDA_ERROR_INVALID_HANDLE);
    EXPECT("event_create_interprocess",
           cu.EventCreate(&shared, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS), CUDA_SUCCESS);
    EXPECT("export_event", cu.IpcGetEventHandle(&ev, shared), CUDA_SUCCESS);
    CUevent mine = NULL;
    EXPECT("open_event_in_exporter", cu.IpcOpenEventHandle(&mine, ev), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT("record_event", cu.EventRecord(shared, NULL), CUDA_SUCCESS);
    EXPECT("synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    send_bytes(down[1], &mem, sizeof mem);
    send_bytes(down[1], &ev, sizeof ev);

    CUipcHandle back;
    recv_bytes(up[0], &back, sizeof back);
    expect_true("reads_child_bytes",
                holds(p, WORDS / 2, 0x11111111) && holds(p + MIB / 2, WORDS / 2, 0x22222222),
                "not the child's bytes");
    CUdeviceptr q = 0;
    EXPECT("open_child_memory", cu.IpcOpenMemHandle(&q, back, 1), CUDA_SUCCESS);
    expect_true("reads_child_memory", holds(q, WORDS, 0x33333333), "not the child's memory");
    EXPECT("answers", cu.MemsetD32(q, 0x44444444, WORDS / 2), CUDA_SUCCESS);
    EXPECT("answers_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    EXPECT("close_child_memory", cu.IpcCloseMemHandle(q), CUDA_SUCCESS);
    char turn = 1;
    send_bytes(down[1], &turn, 1);
    recv_bytes(up[0], &turn, 1);
    vmm_export(dev);
    pool_export(dev);
    send_bytes(down[1], &turn, 1);

    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        printf("FAIL child did not exit\n");
        return 1;
    }
    EXPECT("event_destroy", cu.EventDestroy(shared), CUDA_SUCCESS);
    EXPECT("plain_event_destroy", cu.EventDestroy(plain), CUDA_SUCCESS);
    EXPECT("free", cu.MemFree(p), CUDA_SUCCESS);
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    int rc = checks_summary();
    return WEXITSTATUS(status) != 0 ? 1 : rc;
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    if (pipe(down) != 0 || pipe(up) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sock) != 0) {
        printf("FAIL pipe\n");
        return 2;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        printf("FAIL fork\n");
        return 2;
    }
    if (pid == 0)
        exit(child());
    return parent(pid);
}
