/*
 * cuda_prelude.h: what the C test programs of tests/c share, so that they
 * need no CUDA headers: the CUDA Driver API types they use (layouts as the
 * real driver's), the CUresult values they check for, a loader that dlopens
 * a CUDA library and resolves a program's table of entry points, and the
 * `ok NAME` / `FAIL NAME: ...` check helpers of the programs that count their
 * checks and print a summary (driver_smoke.c, runtime_api.c).
 *
 * A program includes it first (it defines _GNU_SOURCE). One that resolves its
 * entry points with dlsym() then declares its own `cu` struct of them and a
 * `struct cu_entry` table of ENTRY(field, "symbol") lines for it (survive.h
 * does so for the survive programs); ENTRY and EXPECT refer to that `cu` by
 * name. ctor_lib.c links against the library instead and takes only types.
 * Everything here is static inline or marked unused, so a program that does
 * not use a part builds without warnings under -Wall -Wextra -Werror.
 */
#ifndef VGPU_CUDA_PRELUDE_H
#define VGPU_CUDA_PRELUDE_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Types --------------------------------------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

typedef struct {
    char bytes[16];
} CUuuid;

typedef struct {
    unsigned int id;
    char pad[4];
    union {
        char raw[64];
        int cooperative;
        int priority;
        struct {
            unsigned int x, y, z;
        } clusterDim;
        struct {
            CUevent event;
            int flags;
        } launchCompletionEvent;
    } value;
} CUlaunchAttribute;

typedef struct {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;

typedef struct {
    size_t srcXInBytes, srcY;
    unsigned int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    unsigned int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

_Static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute is 72 bytes");
_Static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig is 56 bytes");
_Static_assert(sizeof(CUDA_MEMCPY2D) == 128, "CUDA_MEMCPY2D is 128 bytes");

/* CUDA_MEMCPY3D_PEER: a 3D copy whose sides name their contexts. */
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    unsigned int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    CUcontext srcContext;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    unsigned int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    CUcontext dstContext;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D_PEER;

_Static_assert(sizeof(CUDA_MEMCPY3D_PEER) == 200, "CUDA_MEMCPY3D_PEER is 200 bytes");

/* The CUresult values the programs check for (the real driver's numbers). */
enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
    CUDA_ERROR_INVALID_CLUSTER_SIZE = 912,
};

/* ---- Loading ------------------------------------------------------------- */

/* The library a CUDA program opens; the programs' default. */
#define CU_LIBRARY "libcuda.so.1"

/* One entry point: where to store it and the symbol to resolve. */
struct cu_entry {
    void **slot;
    const char *symbol;
};

/* An entry of the including program's `cu` struct. */
#define ENTRY(field, symbol) { (void **)&cu.field, symbol }

/* The number of entries of a table (an array, not a pointer). */
#define CU_COUNT(table) (sizeof(table) / sizeof((table)[0]))

/*
 * dlopens LIBRARY (NULL: CU_LIBRARY) and stores each of the n symbols of
 * TABLE in its slot. Returns the library's handle; or NULL with *missing set
 * to the first symbol it does not export, or to NULL when dlopen() itself
 * failed (dlerror() then says why).
 */
static inline void *cu_open(const char *library, const struct cu_entry *table, size_t n,
                            const char **missing)
{
    void *lib = dlopen(library != NULL ? library : CU_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    *missing = NULL;
    if (lib == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        *table[i].slot = dlsym(lib, table[i].symbol);
        if (*table[i].slot == NULL) {
            *missing = table[i].symbol;
            return NULL;
        }
    }
    return lib;
}

/*
 * cu_open() for the programs that count their checks: prints `ok load
 * LIBRARY` and returns the handle; on failure prints `FAIL load: WHY` or
 * `FAIL resolve: LIBRARY does not export SYMBOL` and exits 2.
 */
static inline void *cu_load(const char *library, const struct cu_entry *table, size_t n)
{
    const char *missing;
    /* One line at a time, so a program that a driver crashes keeps every
     * line it printed before the crash, even into a pipe. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *lib = cu_open(library, table, n, &missing);
    if (library == NULL)
        library = CU_LIBRARY;
    if (lib == NULL) {
        if (missing == NULL)
            printf("FAIL load: %s\n", dlerror());
        else
            printf("FAIL resolve: %s does not export %s\n", library, missing);
        exit(2);
    }
    printf("ok load %s\n", library);
    return lib;
}

/* ---- Checks -------------------------------------------------------------- */

/*
 * Whether to run the checks that hand the library a destroyed or forged
 * handle, or a NULL pointer the driver does not check. vgpu refuses them with
 * the driver's documented code; the real driver does not always check them,
 * and may accept them or crash. So the checks run where the library is vgpu or its simulated device
 * (CU_TEST_INVALID_HANDLES=1, as the CI tests set it), and are left out where
 * a GPU machine compares the program's native and vgpu output.
 */
static inline int invalid_handle_checks(void)
{
    const char *v = getenv("CU_TEST_INVALID_HANDLES");
    return v != NULL && strcmp(v, "1") == 0;
}

/* The checks run so far and how many of them failed. */
static int checks __attribute__((unused)), failures __attribute__((unused));

/* The name of a CUresult by the library's cuGetErrorName, or "?". */
static inline const char *error_name(CUresult (*get_error_name)(CUresult, const char **),
                                     CUresult r)
{
    const char *name = NULL;
    if (get_error_name == NULL || get_error_name(r, &name) != CUDA_SUCCESS || name == NULL)
        return "?";
    return name;
}

/* Records one check: a CUDA call that must return `want`. */
static inline int expect_result(const char *name, CUresult got, CUresult want,
                                CUresult (*get_error_name)(CUresult, const char **))
{
    checks++;
    if (got == want) {
        printf("ok %s\n", name);
        return 1;
    }
    failures++;
    printf("FAIL %s: returned %s (%d), expected %s (%d)\n", name, error_name(get_error_name, got),
           got, error_name(get_error_name, want), want);
    return 0;
}

/* A CUDA call that must return `want`, named by the program's cu.GetErrorName. */
#define EXPECT(name, call, want) expect_result(name, (call), (want), cu.GetErrorName)

/* Records one check: a condition on results. */
static inline int expect_true(const char *name, int cond, const char *what)
{
    checks++;
    if (cond) {
        printf("ok %s\n", name);
        return 1;
    }
    failures++;
    printf("FAIL %s: %s\n", name, what);
    return 0;
}

/* Prints the summary `N checks, F failed` and returns the exit code: 0 when
 * every check passed, else 1. */
static inline int checks_summary(void)
{
    printf("%d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}

#endif
