/*
 * survive.h: what the "survive" programs (fork_session.c, exit_paths.c,
 * worker_loss.c) share over cuda_prelude.h: the entry points they use,
 * resolved with dlsym() from whatever libcuda.so.1 the loader finds, a CHECK
 * helper that prints `FAIL ...` and exits 1 on a wrong result, and helpers
 * that write and check patterns in device memory.
 *
 * No CUDA headers are needed. Include it in exactly one .c file per program.
 */
#ifndef VGPU_SURVIVE_H
#define VGPU_SURVIVE_H

#include "cuda_prelude.h"

static struct {
    void *lib;
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*CtxCreate)(CUcontext *, unsigned int, CUdevice);
    CUresult (*CtxDestroy)(CUcontext);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*PrimaryCtxRelease)(CUdevice);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned int);
    CUresult (*MemFreeHost)(void *);
} cu;

static const struct cu_entry survive_entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetCount, "cuDeviceGetCount"),
    ENTRY(CtxCreate, "cuCtxCreate_v2"),
    ENTRY(CtxDestroy, "cuCtxDestroy_v2"),
    ENTRY(CtxGetCurrent, "cuCtxGetCurrent"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxPushCurrent, "cuCtxPushCurrent_v2"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    ENTRY(MemsetD8, "cuMemsetD8_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(MemHostAlloc, "cuMemHostAlloc"),
    ENTRY(MemFreeHost, "cuMemFreeHost"),
};

/* Loads libcuda.so.1 and every entry point; exits 2 if it cannot. */
static void survive_load(void) {
    const char *missing;
    cu.lib = cu_open(CU_LIBRARY, survive_entries, CU_COUNT(survive_entries), &missing);
    if (!cu.lib) {
        if (missing)
            printf("FAIL load %s: missing\n", missing);
        else
            printf("FAIL load " CU_LIBRARY ": %s\n", dlerror());
        exit(2);
    }
}

/* Prints `FAIL WHAT: got G want W` (with the pid) and exits 1 unless got == want. */
#define CHECK(what, got, want)                                                          \
    do {                                                                                \
        CUresult got_ = (got);                                                          \
        if (got_ != (want)) {                                                           \
            printf("FAIL [%d] %s: got %d want %d (%s:%d)\n", (int)getpid(), (what), got_, \
                   (int)(want), __FILE__, __LINE__);                                    \
            fflush(stdout);                                                             \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define OK(what, call) CHECK(what, call, CUDA_SUCCESS)

/* Fills buf with bytes that depend on seed and position. */
static inline void survive_pattern(unsigned char *buf, size_t n, unsigned seed) {
    uint32_t x = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (unsigned char)(x >> 24);
    }
}

/* Allocates n bytes, copies a seeded pattern in and back, checks it, and
 * returns the device pointer (left allocated). Exits 1 on any error. */
static inline CUdeviceptr survive_round_trip(size_t n, unsigned seed, const char *who) {
    unsigned char *src = malloc(n), *back = malloc(n);
    CUdeviceptr d = 0;
    char what[128];
    if (!src || !back) {
        printf("FAIL %s: out of host memory\n", who);
        exit(1);
    }
    survive_pattern(src, n, seed);
    memset(back, 0, n);
    snprintf(what, sizeof what, "%s cuMemAlloc", who);
    OK(what, cu.MemAlloc(&d, n));
    snprintf(what, sizeof what, "%s cuMemcpyHtoD", who);
    OK(what, cu.MemcpyHtoD(d, src, n));
    snprintf(what, sizeof what, "%s cuMemcpyDtoH", who);
    OK(what, cu.MemcpyDtoH(back, d, n));
    if (memcmp(src, back, n) != 0) {
        printf("FAIL [%d] %s: the data read back differs from what was written\n", (int)getpid(),
               who);
        exit(1);
    }
    free(src);
    free(back);
    return d;
}

/* Checks that device memory d (n bytes) still holds the pattern of seed. */
static inline void survive_expect(CUdeviceptr d, size_t n, unsigned seed, const char *who) {
    unsigned char *want = malloc(n), *back = malloc(n);
    char what[128];
    if (!want || !back) {
        printf("FAIL %s: out of host memory\n", who);
        exit(1);
    }
    survive_pattern(want, n, seed);
    snprintf(what, sizeof what, "%s cuMemcpyDtoH", who);
    OK(what, cu.MemcpyDtoH(back, d, n));
    if (memcmp(want, back, n) != 0) {
        printf("FAIL [%d] %s: device memory lost its pattern\n", (int)getpid(), who);
        exit(1);
    }
    free(want);
    free(back);
}

#endif
