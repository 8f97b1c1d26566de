/*
 * thread_context: a thread that makes a context current with cuCtxSetCurrent
 * alone, as a framework's worker thread does, must then see that context in
 * every call, including the calls that take no context argument.
 *
 * The case is the one torch.compile's backward pass met: autograd's thread
 * makes the primary context current and asks cuPointerGetAttribute for a
 * tensor's device pointer, which the driver answers only under a current
 * context. A second thread that made no context current gets the driver's
 * CUDA_ERROR_INVALID_CONTEXT for the same question.
 *
 * It uses no module, so it runs on the simulated device and on a real GPU
 * alike (gpu/thread_context.sh compares the two).
 *
 * Build:  cc -std=c11 -O2 -Wall -pthread -o thread_context thread_context.c -ldl
 * Usage:  thread_context [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <pthread.h>

enum { CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3, WORDS = 1024 };

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxGetCurrent, "cuCtxGetCurrent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(PointerGetAttribute, "cuPointerGetAttribute"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

static CUcontext primary;
static CUdeviceptr buffer;

/* Whether all WORDS words of `buffer` hold `value` (read under the calling
 * thread's current context). */
static int buffer_holds(unsigned int value)
{
    static unsigned int host[WORDS];
    if (cu.MemcpyDtoH(host, buffer, sizeof host) != CUDA_SUCCESS)
        return 0;
    for (int i = 0; i < WORDS; i++)
        if (host[i] != value)
            return 0;
    return 1;
}

/* A thread that made no context current. */
static void *bare_thread(void *arg)
{
    (void)arg;
    CUcontext ctx = (CUcontext)1;
    EXPECT("bare_thread_get_current", cu.CtxGetCurrent(&ctx), CUDA_SUCCESS);
    expect_true("bare_thread_has_no_context", ctx == NULL, "cuCtxGetCurrent is not NULL");
    CUdeviceptr dev = 0;
    EXPECT("bare_thread_pointer_attribute",
           cu.PointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, buffer),
           CUDA_ERROR_INVALID_CONTEXT);
    return NULL;
}

/* A thread whose only context call is cuCtxSetCurrent, whose first call
 * after it takes no context argument. */
static void *set_current_thread(void *arg)
{
    (void)arg;
    EXPECT("thread_set_current", cu.CtxSetCurrent(primary), CUDA_SUCCESS);
    CUdeviceptr dev = 0;
    if (EXPECT("thread_pointer_attribute",
               cu.PointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, buffer),
               CUDA_SUCCESS))
        expect_true("thread_pointer_attribute_value", dev == buffer,
                    "the device pointer is not the allocation's address");
    EXPECT("thread_memset", cu.MemsetD32(buffer, 9, WORDS), CUDA_SUCCESS);
    EXPECT("thread_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    expect_true("thread_memset_data", buffer_holds(9), "the buffer does not hold 9s");
    return NULL;
}

static void run_thread(const char *name, void *(*body)(void *))
{
    pthread_t t;
    if (!expect_true(name, pthread_create(&t, NULL, body, NULL) == 0, "pthread_create failed"))
        return;
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev = 0;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(primary), CUDA_SUCCESS) ||
        !EXPECT("mem_alloc", cu.MemAlloc(&buffer, WORDS * 4), CUDA_SUCCESS))
        return checks_summary();
    EXPECT("memset", cu.MemsetD32(buffer, 7, WORDS), CUDA_SUCCESS);
    CUdeviceptr got = 0;
    EXPECT("pointer_attribute",
           cu.PointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, buffer),
           CUDA_SUCCESS);
    run_thread("bare_thread", bare_thread);
    run_thread("set_current_thread", set_current_thread);
    expect_true("main_sees_thread_memset", buffer_holds(9), "the buffer does not hold 9s");
    EXPECT("mem_free", cu.MemFree(buffer), CUDA_SUCCESS);
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
