/*
 * survive.h: the few CUDA Driver API types and entry points that the
 * "survive" programs (fork_session.c, exit_paths.c) use, resolved with
 * dlsym() from whatever libcuda.so.1 the loader finds, and a CHECK helper
 * that prints `FAIL ...` and exits 1 on a wrong result.
 *
 * No CUDA headers are needed. Include it in exactly one .c file.
 */
#ifndef VGPU_SURVIVE_H
#define VGPU_SURVIVE_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
};

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

#define SURVIVE_ENTRY(field, symbol) { (void **)&cu.field, symbol }
static const struct {
    void **slot;
    const char *symbol;
} survive_entries[] = {
    SURVIVE_ENTRY(Init, "cuInit"),
    SURVIVE_ENTRY(DeviceGet, "cuDeviceGet"),
    SURVIVE_ENTRY(DeviceGetCount, "cuDeviceGetCount"),
    SURVIVE_ENTRY(CtxCreate, "cuCtxCreate_v2"),
    SURVIVE_ENTRY(CtxDestroy, "cuCtxDestroy_v2"),
    SURVIVE_ENTRY(CtxGetCurrent, "cuCtxGetCurrent"),
    SURVIVE_ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    SURVIVE_ENTRY(CtxPushCurrent, "cuCtxPushCurrent_v2"),
    SURVIVE_ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    SURVIVE_ENTRY(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SURVIVE_ENTRY(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SURVIVE_ENTRY(MemAlloc, "cuMemAlloc_v2"),
    SURVIVE_ENTRY(MemFree, "cuMemFree_v2"),
    SURVIVE_ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    SURVIVE_ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    SURVIVE_ENTRY(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    SURVIVE_ENTRY(MemsetD8, "cuMemsetD8_v2"),
    SURVIVE_ENTRY(StreamCreate, "cuStreamCreate"),
    SURVIVE_ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    SURVIVE_ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    SURVIVE_ENTRY(MemHostAlloc, "cuMemHostAlloc"),
    SURVIVE_ENTRY(MemFreeHost, "cuMemFreeHost"),
};

/* Loads libcuda.so.1 and every entry point; exits 2 if it cannot. */
static void survive_load(void) {
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        printf("FAIL load libcuda.so.1: %s\n", dlerror());
        exit(2);
    }
    for (size_t i = 0; i < sizeof survive_entries / sizeof survive_entries[0]; i++) {
        *survive_entries[i].slot = dlsym(cu.lib, survive_entries[i].symbol);
        if (!*survive_entries[i].slot) {
            printf("FAIL load %s: missing\n", survive_entries[i].symbol);
            exit(2);
        }
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
