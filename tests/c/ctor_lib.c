/*
 * ctor_lib: a shared library that initialises CUDA in its constructor, the
 * way some Python extension modules do: while the loader runs it (under the
 * loader lock), on whatever thread called dlopen().
 *
 * The constructor calls cuInit, creates a context, allocates CTOR_BYTES of
 * device memory and writes a pattern into it (a host-to-device copy of the
 * first half, a 32-bit memset of the second). Functions exported for the
 * loader of the library (tests/python/cffi_ctor.py) report how that went and
 * read the memory back from any thread.
 *
 * It links against libcuda.so.1 directly, so dlopen() of this library loads
 * the CUDA library too, also under the loader lock.
 *
 * Build:  cc -std=c11 -O2 -Wall -shared -fPIC -o libctor_lib.so ctor_lib.c \
 *             -L DIR_WITH_LIBCUDA_SO -lcuda -lpthread
 */
#include "cuda_prelude.h"

#include <sys/syscall.h>

/* The entry points it calls, linked directly rather than resolved with dlsym(). */
CUresult cuInit(unsigned int);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuCtxCreate_v2(CUcontext *, unsigned int, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemsetD32_v2(CUdeviceptr, unsigned int, size_t);

#define CTOR_BYTES (1u << 20)
#define FILL 0xC0FFEE11u

static CUresult status = -1;
static const char *failed_call = "the constructor did not run";
static long ctor_tid;
static CUcontext ctx;
static CUdeviceptr mem;

/* The bytes the constructor writes: a pattern, then FILL as 32-bit words. */
void ctor_expected(unsigned char *out, size_t n) {
    uint32_t x = 0x12345678u;
    for (size_t i = 0; i < n && i < CTOR_BYTES; i++) {
        if (i < CTOR_BYTES / 2) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            out[i] = (unsigned char)(x >> 24);
        } else {
            uint32_t fill = FILL;
            out[i] = ((unsigned char *)&fill)[i % 4];
        }
    }
}

#define STEP(call)                  \
    do {                            \
        CUresult r_ = (call);       \
        if (r_ != 0) {              \
            status = r_;            \
            failed_call = #call;    \
            return;                 \
        }                           \
    } while (0)

__attribute__((constructor)) static void ctor(void) {
    static unsigned char half[CTOR_BYTES / 2];
    CUdevice dev;
    ctor_tid = syscall(SYS_gettid);
    ctor_expected(half, sizeof half);
    STEP(cuInit(0));
    STEP(cuDeviceGet(&dev, 0));
    STEP(cuCtxCreate_v2(&ctx, 0, dev));
    STEP(cuMemAlloc_v2(&mem, CTOR_BYTES));
    STEP(cuMemcpyHtoD_v2(mem, half, sizeof half));
    STEP(cuMemsetD32_v2(mem + CTOR_BYTES / 2, FILL, CTOR_BYTES / 2 / 4));
    status = 0;
    failed_call = "";
}

/* 0 when the constructor's CUDA work succeeded, else the CUresult it failed with. */
int ctor_status(void) { return status; }

/* The call that failed, or "". */
const char *ctor_failed_call(void) { return failed_call; }

/* The thread id (gettid) the constructor ran on. */
long ctor_thread(void) { return ctor_tid; }

size_t ctor_bytes(void) { return CTOR_BYTES; }

unsigned long long ctor_device_pointer(void) { return mem; }

/* Reads the constructor's memory back, from any thread: makes its context
 * current on the calling thread and copies n bytes; returns the CUresult. */
int ctor_read(unsigned char *out, size_t n) {
    CUresult r = cuCtxSetCurrent(ctx);
    if (r != 0)
        return r;
    return cuMemcpyDtoH_v2(out, mem, n < CTOR_BYTES ? n : CTOR_BYTES);
}
