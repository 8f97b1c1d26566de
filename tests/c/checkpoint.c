/*
 * checkpoint: process checkpointing of the calling process. Its state is
 * running; it has a restore thread; lock, checkpoint, restore and unlock
 * move it through locked, checkpointed, locked and running again; device
 * memory written before the checkpoint reads back the same after the
 * restore; a NULL state pointer is CUDA_ERROR_INVALID_VALUE.
 *
 * Through vgpu the process that owns the GPU state is the session's worker,
 * which these calls act on. The program prints only lines that are the
 * same natively and through vgpu (not the thread id).
 *
 * Build:  cc -std=c11 -O2 -Wall -o checkpoint checkpoint.c -ldl
 * Usage:  checkpoint [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

enum { RUNNING = 0, LOCKED = 1, CHECKPOINTED = 2, WORDS = 1024 };

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*GetState)(int, int *);
    CUresult (*GetRestoreThreadId)(int, int *);
    CUresult (*Lock)(int, void *);
    CUresult (*Checkpoint)(int, void *);
    CUresult (*Restore)(int, void *);
    CUresult (*Unlock)(int, void *);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(GetState, "cuCheckpointProcessGetState"),
    ENTRY(GetRestoreThreadId, "cuCheckpointProcessGetRestoreThreadId"),
    ENTRY(Lock, "cuCheckpointProcessLock"),
    ENTRY(Checkpoint, "cuCheckpointProcessCheckpoint"),
    ENTRY(Restore, "cuCheckpointProcessRestore"),
    ENTRY(Unlock, "cuCheckpointProcessUnlock"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* The process state must be `want`. */
static void expect_state(const char *name, int pid, int want)
{
    int state = -1;
    char label[64];
    snprintf(label, sizeof label, "%s_get", name);
    EXPECT(label, cu.GetState(pid, &state), CUDA_SUCCESS);
    snprintf(label, sizeof label, "%s_is", name);
    expect_true(label, state == want, "another process state");
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d;
    static unsigned int host[WORDS];
    int pid = (int)getpid();
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS) ||
        !EXPECT("alloc", cu.MemAlloc(&d, WORDS * 4), CUDA_SUCCESS) ||
        !EXPECT("memset", cu.MemsetD32(d, 0x5eed, WORDS), CUDA_SUCCESS))
        return checks_summary();

    expect_state("running", pid, RUNNING);
    int tid = 0;
    EXPECT("restore_thread", cu.GetRestoreThreadId(pid, &tid), CUDA_SUCCESS);
    expect_true("restore_thread_positive", tid > 0, "no thread id");
    EXPECT("state_null", cu.GetState(pid, NULL), CUDA_ERROR_INVALID_VALUE);

    EXPECT("lock", cu.Lock(pid, NULL), CUDA_SUCCESS);
    expect_state("locked", pid, LOCKED);
    EXPECT("checkpoint", cu.Checkpoint(pid, NULL), CUDA_SUCCESS);
    expect_state("checkpointed", pid, CHECKPOINTED);
    EXPECT("restore", cu.Restore(pid, NULL), CUDA_SUCCESS);
    expect_state("restored", pid, LOCKED);
    EXPECT("unlock", cu.Unlock(pid, NULL), CUDA_SUCCESS);
    expect_state("unlocked", pid, RUNNING);

    EXPECT("read_back", cu.MemcpyDtoH(host, d, sizeof host), CUDA_SUCCESS);
    int same = 1;
    for (int i = 0; i < WORDS; i++)
        same &= host[i] == 0x5eed;
    expect_true("memory_survives", same, "device memory changed across the checkpoint");
    EXPECT("free", cu.MemFree(d), CUDA_SUCCESS);
    return checks_summary();
}
