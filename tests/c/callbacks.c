/*
 * callbacks: host callbacks (cuLaunchHostFunc, cuStreamAddCallback) run in
 * this process, with this program's userData, in stream order, exactly once.
 *
 * - a host function between two memsets runs once, with its userData, in
 *   this process (it writes a global of the program and sees its pid);
 * - a host function writes pinned host memory that a later copy on the same
 *   stream reads: the copy waits for it;
 * - cuStreamAddCallback gets the application's stream and CUDA_SUCCESS;
 * - many callbacks in a row run in order;
 * - a callback that sleeps delays the stream's later work: an event recorded
 *   after it is not complete until it returns;
 * - a CUDA call from inside a callback returns (the driver documents that
 *   callbacks must not call CUDA and that such a call may fail with
 *   CUDA_ERROR_NOT_PERMITTED): success or that error, never a hang;
 * - a callback on a stream destroyed right after it still runs;
 * - the program exits after its callbacks are done.
 *
 * It uses no module, so it runs on the simulated device and on a real GPU
 * alike (the output is the same).
 *
 * Build:  cc -std=c11 -O2 -Wall -pthread -o callbacks callbacks.c -ldl
 * Usage:  callbacks [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <pthread.h>
#include <time.h>

enum { CUDA_ERROR_NOT_READY = 600, CUDA_ERROR_NOT_PERMITTED = 800, WORDS = 256, MANY = 100 };

typedef void (*host_fn)(void *);
typedef void (*stream_callback)(CUstream, CUresult, void *);

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemAllocHost)(void **, size_t);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*LaunchHostFunc)(CUstream, host_fn, void *);
    CUresult (*StreamAddCallback)(CUstream, stream_callback, void *, unsigned int);
    CUresult (*EventCreate)(CUevent *, unsigned int);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventQuery)(CUevent);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemAllocHost, "cuMemAllocHost_v2"),
    ENTRY(MemFreeHost, "cuMemFreeHost"),
    ENTRY(MemsetD32Async, "cuMemsetD32Async"),
    ENTRY(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemGetInfo, "cuMemGetInfo_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(LaunchHostFunc, "cuLaunchHostFunc"),
    ENTRY(StreamAddCallback, "cuStreamAddCallback"),
    ENTRY(EventCreate, "cuEventCreate"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(EventRecord, "cuEventRecord"),
    ENTRY(EventQuery, "cuEventQuery"),
    ENTRY(EventSynchronize, "cuEventSynchronize"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* What the callbacks record: globals of this program. */
static pid_t main_pid;
static int ran, same_pid, tag = 7;
static void *seen_data;
static unsigned int *pinned;
static int order[MANY], done_count;
static CUstream seen_stream;
static CUresult seen_status = -1;
static int slept;
static CUresult inner_result = -1;

static void once(void *data)
{
    ran++;
    seen_data = data;
    same_pid = getpid() == main_pid;
}

static void write_pinned(void *data)
{
    for (int i = 0; i < WORDS; i++)
        pinned[i] = *(unsigned int *)data;
}

static void stream_cb(CUstream s, CUresult status, void *data)
{
    seen_stream = s;
    seen_status = status;
    *(int *)data += 1;
}

static void record(void *data)
{
    if (done_count < MANY)
        order[done_count++] = (int)(intptr_t)data;
}

static void sleeper(void *data)
{
    (void)data;
    struct timespec t = {0, 300 * 1000 * 1000};
    nanosleep(&t, NULL);
    slept = 1;
}

static void calls_cuda(void *data)
{
    (void)data;
    size_t f, t;
    inner_result = cu.MemGetInfo(&f, &t);
}

static int holds(CUdeviceptr d, unsigned int v)
{
    static unsigned int host[WORDS];
    if (cu.MemcpyDtoH(host, d, sizeof host) != CUDA_SUCCESS)
        return 0;
    for (int i = 0; i < WORDS; i++)
        if (host[i] != v)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    main_pid = getpid();
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUdeviceptr d;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS) ||
        !EXPECT("stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS) ||
        !EXPECT("alloc", cu.MemAlloc(&d, WORDS * 4), CUDA_SUCCESS) ||
        !EXPECT("alloc_host", cu.MemAllocHost((void **)&pinned, WORDS * 4), CUDA_SUCCESS))
        return checks_summary();

    /* A host function between two memsets. */
    EXPECT("memset_before", cu.MemsetD32Async(d, 1, WORDS, s), CUDA_SUCCESS);
    EXPECT("launch_host_func", cu.LaunchHostFunc(s, once, &tag), CUDA_SUCCESS);
    EXPECT("memset_after", cu.MemsetD32Async(d, 2, WORDS, s), CUDA_SUCCESS);
    EXPECT("synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("host_func_ran_once", ran == 1, "the host function did not run exactly once");
    expect_true("host_func_user_data", seen_data == &tag, "the host function got another userData");
    expect_true("host_func_in_process", same_pid, "the host function ran in another process");
    expect_true("memset_after_applied", holds(d, 2), "the device does not hold the second memset");

    /* A later copy reads what the host function wrote. */
    static unsigned int value = 42;
    memset(pinned, 0, WORDS * 4);
    EXPECT("launch_writer", cu.LaunchHostFunc(s, write_pinned, &value), CUDA_SUCCESS);
    EXPECT("copy_after_writer", cu.MemcpyHtoDAsync(d, pinned, WORDS * 4, s), CUDA_SUCCESS);
    EXPECT("synchronize_writer", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("copy_saw_host_func", holds(d, 42), "the copy ran before the host function");

    /* cuStreamAddCallback. */
    int calls = 0;
    EXPECT("add_callback", cu.StreamAddCallback(s, stream_cb, &calls, 0), CUDA_SUCCESS);
    EXPECT("add_callback_flags", cu.StreamAddCallback(s, stream_cb, &calls, 1),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("add_callback_null", cu.StreamAddCallback(s, NULL, &calls, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT("launch_host_func_null", cu.LaunchHostFunc(s, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT("synchronize_callback", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("callback_ran_once", calls == 1, "the stream callback did not run exactly once");
    expect_true("callback_stream", seen_stream == s, "the callback got another stream");
    expect_true("callback_status", seen_status == CUDA_SUCCESS, "the callback got an error status");

    /* Many in a row keep their order. */
    int queued = 1;
    for (int i = 0; i < MANY && queued; i++)
        queued = cu.LaunchHostFunc(s, record, (void *)(intptr_t)i) == CUDA_SUCCESS;
    expect_true("many_queued", queued, "a host function was refused");
    EXPECT("synchronize_many", cu.StreamSynchronize(s), CUDA_SUCCESS);
    int in_order = done_count == MANY;
    for (int i = 0; i < done_count; i++)
        in_order = in_order && order[i] == i;
    expect_true("many_in_order", in_order, "the host functions ran out of order or not all");

    /* A sleeping callback delays the stream's later work. */
    CUevent e;
    EXPECT("event", cu.EventCreate(&e, 0), CUDA_SUCCESS);
    EXPECT("launch_sleeper", cu.LaunchHostFunc(s, sleeper, NULL), CUDA_SUCCESS);
    EXPECT("record_after_sleeper", cu.EventRecord(e, s), CUDA_SUCCESS);
    CUresult q = cu.EventQuery(e);
    expect_true("query_waits_for_sleeper",
                q == CUDA_ERROR_NOT_READY || (q == CUDA_SUCCESS && slept),
                "the event completed before the callback returned");
    EXPECT("event_synchronize", cu.EventSynchronize(e), CUDA_SUCCESS);
    expect_true("sleeper_done", slept, "the event completed before the callback returned");

    /* A CUDA call from inside a callback returns. */
    EXPECT("launch_calls_cuda", cu.LaunchHostFunc(s, calls_cuda, NULL), CUDA_SUCCESS);
    EXPECT("synchronize_calls_cuda", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("inner_call_returned",
                inner_result == CUDA_SUCCESS || inner_result == CUDA_ERROR_NOT_PERMITTED,
                "the call inside the callback gave neither success nor NOT_PERMITTED");

    /* The per-thread default stream and the NULL stream take them too. */
    ran = 0;
    EXPECT("launch_null_stream", cu.LaunchHostFunc(NULL, once, &tag), CUDA_SUCCESS);
    EXPECT("synchronize_null_stream", cu.StreamSynchronize(NULL), CUDA_SUCCESS);
    expect_true("null_stream_ran_once", ran == 1, "the host function did not run once");

    /* Exit with the callbacks done. */
    ran = 0;
    EXPECT("launch_last", cu.LaunchHostFunc(s, once, &tag), CUDA_SUCCESS);
    EXPECT("event_destroy", cu.EventDestroy(e), CUDA_SUCCESS);
    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT("synchronize_last", cu.CtxSynchronize(), CUDA_SUCCESS);
    expect_true("last_ran_once", ran == 1, "the last host function did not run once");
    EXPECT("free_host", cu.MemFreeHost(pinned), CUDA_SUCCESS);
    EXPECT("free", cu.MemFree(d), CUDA_SUCCESS);
    EXPECT("release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
