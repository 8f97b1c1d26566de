/*
 * extsem: external semaphores shared by two processes, on the simulated
 * device. It has no Vulkan or Direct3D to export a semaphore, so it takes a
 * memfd named `vgpu-sim-semaphore` as its stand-in for one (see
 * crates/sim/src/semaphore.rs); a real driver refuses that descriptor, so
 * this program runs in CI only. The parent imports the timeline semaphore
 * and signals 1, passes the descriptor to the child (SCM_RIGHTS), which
 * imports it, waits for 1 and signals 2; the parent waits for 2. Then bad
 * input: a descriptor that is no semaphore, a handle type without one, and a
 * destroyed semaphore.
 *
 * Build:  cc -std=c11 -O2 -Wall -o extsem extsem.c -ldl
 * Usage:  extsem [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, then each process's summary (the child's first).
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be loaded.
 */
#include "cuda_prelude.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

typedef struct CUextSemaphore_st *CUexternalSemaphore;

typedef struct {
    int type;
    union {
        int fd;
        struct {
            void *handle;
            const void *name;
        } win32;
        const void *nvSciSyncObj;
    } handle;
    unsigned int flags;
    unsigned int reserved[16];
} CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC;

typedef struct {
    unsigned long long fence_value;
    unsigned char rest[136];
} CUDA_EXTERNAL_SEMAPHORE_PARAMS;

_Static_assert(sizeof(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC) == 96, "handle desc is 96 bytes");
_Static_assert(sizeof(CUDA_EXTERNAL_SEMAPHORE_PARAMS) == 144, "params are 144 bytes");

enum { OPAQUE_WIN32 = 2, TIMELINE_SEMAPHORE_FD = 9 };

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*ImportExternalSemaphore)(CUexternalSemaphore *,
                                        const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC *);
    CUresult (*SignalExternalSemaphoresAsync)(const CUexternalSemaphore *,
                                              const CUDA_EXTERNAL_SEMAPHORE_PARAMS *,
                                              unsigned int, CUstream);
    CUresult (*WaitExternalSemaphoresAsync)(const CUexternalSemaphore *,
                                            const CUDA_EXTERNAL_SEMAPHORE_PARAMS *, unsigned int,
                                            CUstream);
    CUresult (*DestroyExternalSemaphore)(CUexternalSemaphore);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(ImportExternalSemaphore, "cuImportExternalSemaphore"),
    ENTRY(SignalExternalSemaphoresAsync, "cuSignalExternalSemaphoresAsync"),
    ENTRY(WaitExternalSemaphoresAsync, "cuWaitExternalSemaphoresAsync"),
    ENTRY(DestroyExternalSemaphore, "cuDestroyExternalSemaphore"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

static int sock[2];

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

static void send_fd(int s, int fd)
{
    char byte = 'F';
    struct iovec iov = {&byte, 1};
    char space[CMSG_SPACE(sizeof(int))];
    memset(space, 0, sizeof space);
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space;
    msg.msg_controllen = sizeof space;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(s, &msg, 0) != 1)
        exit(1);
}

static int recv_fd(int s)
{
    char byte;
    struct iovec iov = {&byte, 1};
    char space[CMSG_SPACE(sizeof(int))];
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space;
    msg.msg_controllen = sizeof space;
    if (recvmsg(s, &msg, 0) != 1)
        exit(1);
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    int fd = -1;
    if (c != NULL && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static CUresult import(CUexternalSemaphore *sem, int type, int fd)
{
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC d;
    memset(&d, 0, sizeof d);
    d.type = type;
    d.handle.fd = fd;
    return cu.ImportExternalSemaphore(sem, &d);
}

static CUresult fence(CUexternalSemaphore sem, unsigned long long v, int wait)
{
    CUDA_EXTERNAL_SEMAPHORE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.fence_value = v;
    return wait ? cu.WaitExternalSemaphoresAsync(&sem, &p, 1, NULL)
                : cu.SignalExternalSemaphoresAsync(&sem, &p, 1, NULL);
}

static int child(void)
{
    CUdevice dev = start();
    int fd = recv_fd(sock[1]);
    CUexternalSemaphore sem = NULL;
    EXPECT("child_import", import(&sem, TIMELINE_SEMAPHORE_FD, fd), CUDA_SUCCESS);
    EXPECT("child_waits_for_1", fence(sem, 1, 1), CUDA_SUCCESS);
    EXPECT("child_signals_2", fence(sem, 2, 0), CUDA_SUCCESS);
    EXPECT("child_synchronize", cu.StreamSynchronize(NULL), CUDA_SUCCESS);
    EXPECT("child_destroy", cu.DestroyExternalSemaphore(sem), CUDA_SUCCESS);
    EXPECT("child_primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    printf("child: ");
    return checks_summary();
}

static int parent(pid_t pid)
{
    CUdevice dev = start();
    int fd = memfd_create("vgpu-sim-semaphore", MFD_CLOEXEC);
    CUexternalSemaphore sem = NULL, bad = NULL;
    int devnull = open("/dev/null", O_RDONLY);
    EXPECT("import_dev_null", import(&bad, TIMELINE_SEMAPHORE_FD, devnull), CUDA_ERROR_INVALID_VALUE);
    close(devnull);
    EXPECT("import_win32", import(&bad, OPAQUE_WIN32, -1), CUDA_ERROR_INVALID_VALUE);
    EXPECT("import", import(&sem, TIMELINE_SEMAPHORE_FD, dup(fd)), CUDA_SUCCESS);
    EXPECT("signal_none", cu.SignalExternalSemaphoresAsync(&sem, NULL, 0, NULL), CUDA_SUCCESS);
    EXPECT("signals_1", fence(sem, 1, 0), CUDA_SUCCESS);
    send_fd(sock[0], fd);
    close(fd);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        printf("FAIL child did not exit\n");
        return 1;
    }
    EXPECT("waits_for_child_2", fence(sem, 2, 1), CUDA_SUCCESS);
    EXPECT("destroy", cu.DestroyExternalSemaphore(sem), CUDA_SUCCESS);
    EXPECT("signal_destroyed", fence(sem, 3, 0), CUDA_ERROR_INVALID_HANDLE);
    EXPECT("destroy_twice", cu.DestroyExternalSemaphore(sem), CUDA_ERROR_INVALID_HANDLE);
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    int rc = checks_summary();
    return WEXITSTATUS(status) != 0 ? 1 : rc;
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sock) != 0)
        return 2;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0)
        exit(child());
    return parent(pid);
}
