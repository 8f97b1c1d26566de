/*
 * runtime_api: the CUDA 12 entry points that cudart and frameworks use beyond
 * the basics, through whatever libcuda.so.1 the loader finds (or argv[1]):
 * libraries and kernels, function and kernel attributes, occupancy,
 * cuLaunchKernelEx (cooperative, clusters, completion events), cooperative
 * launches, stream capture queries, the module loading mode, stream-ordered
 * allocation, 2D copies, pinned host memory and pointer attributes. Every
 * result is checked, data included, and so are the error codes of bad calls.
 *
 * It is written for vgpu's simulated device (an H100-like model: 132 SMs,
 * built-in kernels vector_add, saxpy and fill_u32 in a text module format).
 * It needs no CUDA headers (its types come from cuda_prelude.h); every entry
 * point is resolved with dlsym().
 *
 * The loading mode it expects is the one CUDA_MODULE_LOADING selects (EAGER,
 * or LAZY by default), so running it with that variable set checks that the
 * variable reaches the driver.
 *
 * Build:  cc -std=c11 -O2 -Wall -Wextra -o runtime_api runtime_api.c -ldl
 * Usage:  runtime_api [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

enum {
    FUNC_MAX_THREADS_PER_BLOCK = 0,
    FUNC_NUM_REGS = 4,
    FUNC_PTX_VERSION = 5,
    FUNC_MAX_DYNAMIC_SHARED = 8,
    FUNC_CARVEOUT = 9,
    FUNC_NON_PORTABLE_CLUSTER = 14,
    FUNC_ATTRIBUTE_MAX = 16,
};
enum {
    LAUNCH_COOPERATIVE = 2,
    LAUNCH_CLUSTER_DIMENSION = 4,
    LAUNCH_PRIORITY = 8,
    LAUNCH_COMPLETION_EVENT = 12,
};
enum { MEMORYTYPE_HOST = 1, MEMORYTYPE_DEVICE = 2, MEMORYTYPE_UNIFIED = 4 };
enum {
    POINTER_CONTEXT = 1,
    POINTER_MEMORY_TYPE = 2,
    POINTER_DEVICE_POINTER = 3,
    POINTER_HOST_POINTER = 4,
    POINTER_DEVICE_ORDINAL = 9,
    POINTER_RANGE_START = 11,
    POINTER_RANGE_SIZE = 12,
    POINTER_MAPPED = 13,
};
enum { JIT_INFO_LOG_BUFFER = 3, JIT_INFO_LOG_BUFFER_SIZE = 4 };
enum { MEMHOSTALLOC_PORTABLE = 1, MEMHOSTALLOC_DEVICEMAP = 2 };
enum { MODULE_EAGER_LOADING = 1, MODULE_LAZY_LOADING = 2 };

/* CUDA_LAUNCH_PARAMS, one entry of cuLaunchCooperativeKernelMultiDevice. */
struct launch_params {
    CUfunction function;
    unsigned int grid[3], block[3], shared;
    CUstream stream;
    void **params;
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*CtxCreate)(CUcontext *, unsigned int, CUdevice);
    CUresult (*CtxDestroy)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned int);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventQuery)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleGetLoadingMode)(int *);
    CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*LibraryLoadData)(CUlibrary *, const void *, int *, void **, unsigned int, int *,
                                void **, unsigned int);
    CUresult (*LibraryUnload)(CUlibrary);
    CUresult (*LibraryGetKernel)(CUkernel *, CUlibrary, const char *);
    CUresult (*LibraryGetModule)(CUmodule *, CUlibrary);
    CUresult (*LibraryGetGlobal)(CUdeviceptr *, size_t *, CUlibrary, const char *);
    CUresult (*LibraryGetUnifiedFunction)(void **, CUlibrary, const char *);
    CUresult (*KernelGetFunction)(CUfunction *, CUkernel);
    CUresult (*KernelGetParamInfo)(CUkernel, size_t, size_t *, size_t *);
    CUresult (*KernelGetAttribute)(int *, int, CUkernel, CUdevice);
    CUresult (*KernelSetAttribute)(int, int, CUkernel, CUdevice);
    CUresult (*FuncGetAttribute)(int *, int, CUfunction);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*OccupancyMaxActiveBlocks)(int *, CUfunction, int, size_t);
    CUresult (*OccupancyMaxActiveBlocksWithFlags)(int *, CUfunction, int, size_t, unsigned int);
    CUresult (*OccupancyAvailableDynamicSMem)(size_t *, CUfunction, int, int);
    CUresult (*OccupancyMaxActiveClusters)(int *, CUfunction, const CUlaunchConfig *);
    CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*LaunchCooperativeKernelMultiDevice)(struct launch_params *, unsigned int, unsigned int);
    CUresult (*LaunchCooperativeKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                                        unsigned int, unsigned int, unsigned int, unsigned int,
                                        CUstream, void **);
    CUresult (*StreamIsCapturing)(CUstream, int *);
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*Memcpy2D)(const CUDA_MEMCPY2D *);
    CUresult (*Memcpy2DAsync)(const CUDA_MEMCPY2D *, CUstream);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned int);
    CUresult (*MemAllocHost)(void **, size_t);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned int);
    CUresult (*MemHostGetFlags)(unsigned int *, void *);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*PointerGetAttributes)(unsigned int, int *, void **, CUdeviceptr);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*DevicePrimaryCtxGetState)(CUdevice, unsigned int *, int *);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*DevicePrimaryCtxSetFlags)(CUdevice, unsigned int);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(CtxCreate, "cuCtxCreate_v2"),
    ENTRY(CtxDestroy, "cuCtxDestroy_v2"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemGetInfo, "cuMemGetInfo_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemsetD8, "cuMemsetD8_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(EventCreate, "cuEventCreate"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(EventRecord, "cuEventRecord"),
    ENTRY(EventQuery, "cuEventQuery"),
    ENTRY(EventElapsedTime, "cuEventElapsedTime"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(ModuleGetLoadingMode, "cuModuleGetLoadingMode"),
    ENTRY(LaunchKernel, "cuLaunchKernel"),
    ENTRY(LibraryLoadData, "cuLibraryLoadData"),
    ENTRY(LibraryUnload, "cuLibraryUnload"),
    ENTRY(LibraryGetKernel, "cuLibraryGetKernel"),
    ENTRY(LibraryGetModule, "cuLibraryGetModule"),
    ENTRY(LibraryGetGlobal, "cuLibraryGetGlobal"),
    ENTRY(LibraryGetUnifiedFunction, "cuLibraryGetUnifiedFunction"),
    ENTRY(KernelGetFunction, "cuKernelGetFunction"),
    ENTRY(KernelGetParamInfo, "cuKernelGetParamInfo"),
    ENTRY(KernelGetAttribute, "cuKernelGetAttribute"),
    ENTRY(KernelSetAttribute, "cuKernelSetAttribute"),
    ENTRY(FuncGetAttribute, "cuFuncGetAttribute"),
    ENTRY(FuncSetAttribute, "cuFuncSetAttribute"),
    ENTRY(OccupancyMaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
    ENTRY(OccupancyMaxActiveBlocksWithFlags, "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"),
    ENTRY(OccupancyAvailableDynamicSMem, "cuOccupancyAvailableDynamicSMemPerBlock"),
    ENTRY(OccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters"),
    ENTRY(LaunchKernelEx, "cuLaunchKernelEx"),
    ENTRY(LaunchCooperativeKernel, "cuLaunchCooperativeKernel"),
    ENTRY(LaunchCooperativeKernelMultiDevice, "cuLaunchCooperativeKernelMultiDevice"),
    ENTRY(StreamIsCapturing, "cuStreamIsCapturing"),
    ENTRY(MemAllocAsync, "cuMemAllocAsync"),
    ENTRY(MemFreeAsync, "cuMemFreeAsync"),
    ENTRY(Memcpy2D, "cuMemcpy2D_v2"),
    ENTRY(Memcpy2DAsync, "cuMemcpy2DAsync_v2"),
    ENTRY(MemHostAlloc, "cuMemHostAlloc"),
    ENTRY(MemAllocHost, "cuMemAllocHost_v2"),
    ENTRY(MemFreeHost, "cuMemFreeHost"),
    ENTRY(DevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(DevicePrimaryCtxSetFlags, "cuDevicePrimaryCtxSetFlags_v2"),
    ENTRY(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"),
    ENTRY(MemHostGetFlags, "cuMemHostGetFlags"),
    ENTRY(PointerGetAttribute, "cuPointerGetAttribute"),
    ENTRY(PointerGetAttributes, "cuPointerGetAttributes"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

static const char LIBRARY_IMAGE[] = "VGPU-SIM-MODULE 1\n"
                                    "kernel vector_add\n"
                                    "kernel saxpy\n"
                                    "kernel fill_u32\n"
                                    "kernel not_builtin\n"
                                    "global counter 4\n";

static CUcontext ctx;
static CUdevice dev;

/* Records one check: an integer result. */
static int expect_eq(const char *name, long long got, long long want)
{
    char what[80];
    snprintf(what, sizeof what, "got %lld, expected %lld", got, want);
    return expect_true(name, got == want, what);
}

/* A launch's outcome: its own result, or the next synchronization's when the
 * launch itself was accepted (a pipelined launch reports its error there). */
static CUresult launched(CUresult r)
{
    return r != CUDA_SUCCESS ? r : cu.CtxSynchronize();
}

static void loading_mode(void)
{
    const char *env = getenv("CUDA_MODULE_LOADING");
    int want = env != NULL && strcmp(env, "EAGER") == 0 ? MODULE_EAGER_LOADING : MODULE_LAZY_LOADING;
    int mode = -1;
    EXPECT("loading_mode", cu.ModuleGetLoadingMode(&mode), CUDA_SUCCESS);
    expect_eq(want == MODULE_EAGER_LOADING ? "loading_mode_eager" : "loading_mode_lazy", mode, want);
    EXPECT("loading_mode_null", cu.ModuleGetLoadingMode(NULL), CUDA_ERROR_INVALID_VALUE);
}

/* fill_u32(p, v, n) through `f` (a function or a kernel), one block. */
static CUresult fill(CUfunction f, CUdeviceptr p, unsigned v, int n)
{
    void *params[] = {&p, &v, &n};
    return launched(cu.LaunchKernel(f, 1, 1, 1, (unsigned)n, 1, 1, 0, NULL, params, NULL));
}

static void libraries(void)
{
    CUlibrary lib, bad;
    CUkernel kadd, kfill, kmissing;
    CUfunction fadd, ffill, fmod;
    CUmodule mod;
    char log[256] = {0};
    int keys[] = {JIT_INFO_LOG_BUFFER, JIT_INFO_LOG_BUFFER_SIZE};
    void *vals[] = {log, (void *)(uintptr_t)sizeof log};

    EXPECT("library_load_garbage",
           cu.LibraryLoadData(&bad, "// PTX\n.version 8.0\n", NULL, NULL, 0, NULL, NULL, 0),
           CUDA_ERROR_INVALID_IMAGE);
    EXPECT("library_load_null", cu.LibraryLoadData(NULL, LIBRARY_IMAGE, NULL, NULL, 0, NULL, NULL, 0),
           CUDA_ERROR_INVALID_VALUE);
    if (!EXPECT("library_load", cu.LibraryLoadData(&lib, LIBRARY_IMAGE, keys, vals, 2, NULL, NULL, 0),
                CUDA_SUCCESS))
        return;
    expect_true("library_load_info_log", strstr(log, "library loaded") != NULL, log);

    EXPECT("library_get_kernel", cu.LibraryGetKernel(&kadd, lib, "vector_add"), CUDA_SUCCESS);
    EXPECT("library_get_kernel_fill", cu.LibraryGetKernel(&kfill, lib, "fill_u32"), CUDA_SUCCESS);
    EXPECT("library_get_kernel_not_builtin", cu.LibraryGetKernel(&kmissing, lib, "not_builtin"),
           CUDA_ERROR_NOT_FOUND);
    EXPECT("library_get_kernel_missing", cu.LibraryGetKernel(&kmissing, lib, "missing"),
           CUDA_ERROR_NOT_FOUND);
    EXPECT("library_get_kernel_null", cu.LibraryGetKernel(NULL, lib, "vector_add"),
           CUDA_ERROR_INVALID_VALUE);

    size_t off = 0, size = 0;
    EXPECT("kernel_param_info", cu.KernelGetParamInfo(kadd, 3, &off, &size), CUDA_SUCCESS);
    expect_true("kernel_param_info_layout", off == 24 && size == 4, "vector_add's n is not at 24/4");
    EXPECT("kernel_param_info_past_end", cu.KernelGetParamInfo(kadd, 4, &off, &size),
           CUDA_ERROR_INVALID_VALUE);

    EXPECT("kernel_get_function", cu.KernelGetFunction(&fadd, kadd), CUDA_SUCCESS);
    EXPECT("kernel_get_function_fill", cu.KernelGetFunction(&ffill, kfill), CUDA_SUCCESS);
    EXPECT("kernel_get_function_null", cu.KernelGetFunction(NULL, kadd), CUDA_ERROR_INVALID_VALUE);
    EXPECT("library_get_module", cu.LibraryGetModule(&mod, lib), CUDA_SUCCESS);
    EXPECT("library_module_get_function", cu.ModuleGetFunction(&fmod, mod, "saxpy"), CUDA_SUCCESS);

    /* The kernel handle launches like a function (vector_add over 1000 floats). */
    enum { N = 1000 };
    static float a[N], b[N], c[N];
    CUdeviceptr da, db, dc;
    int n = N;
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 0.25f * (float)i;
    }
    EXPECT("library_alloc", cu.MemAlloc(&da, sizeof a), CUDA_SUCCESS);
    EXPECT("library_alloc_b", cu.MemAlloc(&db, sizeof b), CUDA_SUCCESS);
    EXPECT("library_alloc_c", cu.MemAlloc(&dc, sizeof c), CUDA_SUCCESS);
    EXPECT("library_copy_a", cu.MemcpyHtoD(da, a, sizeof a), CUDA_SUCCESS);
    EXPECT("library_copy_b", cu.MemcpyHtoD(db, b, sizeof b), CUDA_SUCCESS);
    void *params[] = {&da, &db, &dc, &n};
    EXPECT("kernel_handle_launch",
           launched(cu.LaunchKernel((CUfunction)kadd, 8, 1, 1, 128, 1, 1, 0, NULL, params, NULL)),
           CUDA_SUCCESS);
    EXPECT("kernel_handle_read", cu.MemcpyDtoH(c, dc, sizeof c), CUDA_SUCCESS);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= c[i] == a[i] + b[i];
    expect_true("kernel_handle_result", ok, "c[i] != a[i] + b[i]");

    /* saxpy through the library's module: c = 2a + c. */
    float alpha = 2.0f;
    void *sparams[] = {&alpha, &da, &dc, &n};
    EXPECT("library_module_launch",
           launched(cu.LaunchKernel(fmod, 4, 1, 1, 256, 1, 1, 0, NULL, sparams, NULL)), CUDA_SUCCESS);
    EXPECT("library_module_read", cu.MemcpyDtoH(c, dc, sizeof c), CUDA_SUCCESS);
    ok = 1;
    for (int i = 0; i < N; i++)
        ok &= c[i] == 2.0f * a[i] + a[i] + b[i];
    expect_true("library_module_result", ok, "c[i] != 2a[i] + a[i] + b[i]");

    /* The library's global, written by a kernel. */
    CUdeviceptr g = 0;
    size_t gsize = 0;
    unsigned gval = 0;
    EXPECT("library_get_global", cu.LibraryGetGlobal(&g, &gsize, lib, "counter"), CUDA_SUCCESS);
    expect_eq("library_global_size", (long long)gsize, 4);
    EXPECT("library_get_global_missing", cu.LibraryGetGlobal(&g, &gsize, lib, "nope"),
           CUDA_ERROR_NOT_FOUND);
    /* A kernel is not a unified function; nor is a name the library lacks. */
    void *unified = NULL;
    EXPECT("library_unified_kernel", cu.LibraryGetUnifiedFunction(&unified, lib, "vector_add"),
           CUDA_ERROR_NOT_FOUND);
    EXPECT("library_unified_missing", cu.LibraryGetUnifiedFunction(&unified, lib, "nope"),
           CUDA_ERROR_NOT_FOUND);
    if (invalid_handle_checks())
        EXPECT("library_unified_null", cu.LibraryGetUnifiedFunction(NULL, lib, "vector_add"),
               CUDA_ERROR_INVALID_VALUE);
    EXPECT("library_global_fill", fill(ffill, g, 0xC0FFEEu, 1), CUDA_SUCCESS);
    EXPECT("library_global_read", cu.MemcpyDtoH(&gval, g, 4), CUDA_SUCCESS);
    expect_eq("library_global_value", gval, 0xC0FFEE);

    EXPECT("library_free_a", cu.MemFree(da), CUDA_SUCCESS);
    EXPECT("library_free_b", cu.MemFree(db), CUDA_SUCCESS);
    EXPECT("library_free_c", cu.MemFree(dc), CUDA_SUCCESS);
    EXPECT("library_unload", cu.LibraryUnload(lib), CUDA_SUCCESS);
    EXPECT("library_unload_twice", cu.LibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
}

static void attributes(CUfunction add, CUkernel k)
{
    int v = -1;
    EXPECT("func_attr_max_threads", cu.FuncGetAttribute(&v, FUNC_MAX_THREADS_PER_BLOCK, add), CUDA_SUCCESS);
    expect_eq("func_attr_max_threads_value", v, 1024);
    EXPECT("func_attr_num_regs", cu.FuncGetAttribute(&v, FUNC_NUM_REGS, add), CUDA_SUCCESS);
    expect_eq("func_attr_num_regs_value", v, 16);
    EXPECT("func_attr_ptx_version", cu.FuncGetAttribute(&v, FUNC_PTX_VERSION, add), CUDA_SUCCESS);
    expect_eq("func_attr_ptx_version_value", v, 90);
    EXPECT("func_attr_max_dynamic_shared", cu.FuncGetAttribute(&v, FUNC_MAX_DYNAMIC_SHARED, add),
           CUDA_SUCCESS);
    expect_eq("func_attr_max_dynamic_shared_default", v, 48 * 1024);
    EXPECT("func_attr_out_of_range", cu.FuncGetAttribute(&v, FUNC_ATTRIBUTE_MAX, add),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("func_attr_null", cu.FuncGetAttribute(NULL, FUNC_NUM_REGS, add), CUDA_ERROR_INVALID_VALUE);

    /* 64 KiB of dynamic shared memory needs the opt-in. */
    CUdeviceptr d;
    int n = 4;
    EXPECT("shared_alloc", cu.MemAlloc(&d, 64), CUDA_SUCCESS);
    void *params[] = {&d, &d, &d, &n};
    EXPECT("launch_64k_shared_without_opt_in",
           launched(cu.LaunchKernel(add, 1, 1, 1, 4, 1, 1, 64 << 10, NULL, params, NULL)),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("func_set_max_dynamic_shared", cu.FuncSetAttribute(add, FUNC_MAX_DYNAMIC_SHARED, 64 << 10),
           CUDA_SUCCESS);
    EXPECT("func_attr_max_dynamic_shared_set", cu.FuncGetAttribute(&v, FUNC_MAX_DYNAMIC_SHARED, add),
           CUDA_SUCCESS);
    expect_eq("func_attr_max_dynamic_shared_value", v, 64 << 10);
    EXPECT("launch_64k_shared_with_opt_in",
           launched(cu.LaunchKernel(add, 1, 1, 1, 4, 1, 1, 64 << 10, NULL, params, NULL)), CUDA_SUCCESS);
    EXPECT("func_set_max_dynamic_shared_too_large",
           cu.FuncSetAttribute(add, FUNC_MAX_DYNAMIC_SHARED, 300000), CUDA_ERROR_INVALID_VALUE);
    EXPECT("func_set_read_only", cu.FuncSetAttribute(add, FUNC_NUM_REGS, 8), CUDA_ERROR_INVALID_VALUE);
    EXPECT("func_set_carveout", cu.FuncSetAttribute(add, FUNC_CARVEOUT, 50), CUDA_SUCCESS);
    EXPECT("func_attr_carveout", cu.FuncGetAttribute(&v, FUNC_CARVEOUT, add), CUDA_SUCCESS);
    expect_eq("func_attr_carveout_value", v, 50);
    EXPECT("shared_free", cu.MemFree(d), CUDA_SUCCESS);

    /* Kernel attributes are per device and shared with the kernel's function. */
    CUfunction kf;
    EXPECT("kernel_set_attribute", cu.KernelSetAttribute(FUNC_MAX_DYNAMIC_SHARED, 100000, k, dev),
           CUDA_SUCCESS);
    EXPECT("kernel_get_attribute", cu.KernelGetAttribute(&v, FUNC_MAX_DYNAMIC_SHARED, k, dev), CUDA_SUCCESS);
    expect_eq("kernel_get_attribute_value", v, 100000);
    EXPECT("kernel_get_attribute_regs", cu.KernelGetAttribute(&v, FUNC_NUM_REGS, k, dev), CUDA_SUCCESS);
    expect_eq("kernel_get_attribute_regs_value", v, 16);
    EXPECT("kernel_get_attribute_bad_device", cu.KernelGetAttribute(&v, FUNC_NUM_REGS, k, 99),
           101 /* CUDA_ERROR_INVALID_DEVICE */);
    EXPECT("kernel_set_attribute_read_only", cu.KernelSetAttribute(FUNC_NUM_REGS, 1, k, dev),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("kernel_function_for_attributes", cu.KernelGetFunction(&kf, k), CUDA_SUCCESS);
    EXPECT("func_attr_of_kernel_function", cu.FuncGetAttribute(&v, FUNC_MAX_DYNAMIC_SHARED, kf),
           CUDA_SUCCESS);
    expect_eq("func_attr_of_kernel_function_value", v, 100000);
    /* A set through the kernel's function is seen through the kernel, and
       asked again (vgpu keeps answers until a set that may change them). */
    EXPECT("func_set_kernel_function", cu.FuncSetAttribute(kf, FUNC_MAX_DYNAMIC_SHARED, 50000), CUDA_SUCCESS);
    EXPECT("kernel_attr_after_function_set", cu.KernelGetAttribute(&v, FUNC_MAX_DYNAMIC_SHARED, k, dev),
           CUDA_SUCCESS);
    expect_eq("kernel_attr_after_function_set_value", v, 50000);
    EXPECT("kernel_set_same_value", cu.KernelSetAttribute(FUNC_MAX_DYNAMIC_SHARED, 50000, k, dev), CUDA_SUCCESS);
    EXPECT("kernel_set_back", cu.KernelSetAttribute(FUNC_MAX_DYNAMIC_SHARED, 100000, k, dev), CUDA_SUCCESS);
    EXPECT("func_attr_after_kernel_set", cu.FuncGetAttribute(&v, FUNC_MAX_DYNAMIC_SHARED, kf), CUDA_SUCCESS);
    expect_eq("func_attr_after_kernel_set_value", v, 100000);
}

/* The primary context's state follows retains, releases and flags, however
   often it is asked. */
static void primary_context_state(void)
{
    unsigned int flags = 99;
    int active = -1;
    CUcontext p;
    EXPECT("primary_state", cu.DevicePrimaryCtxGetState(dev, &flags, &active), CUDA_SUCCESS);
    expect_eq("primary_state_inactive", active, 0);
    expect_eq("primary_state_default_flags", (long long)flags, 0);
    EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&p, dev), CUDA_SUCCESS);
    for (int i = 0; i < 3; i++) {
        EXPECT("primary_state_retained", cu.DevicePrimaryCtxGetState(dev, &flags, &active), CUDA_SUCCESS);
        expect_eq("primary_state_active", active, 1);
    }
    EXPECT("primary_set_flags", cu.DevicePrimaryCtxSetFlags(dev, 4 /* BLOCKING_SYNC */), CUDA_SUCCESS);
    EXPECT("primary_state_flags", cu.DevicePrimaryCtxGetState(dev, &flags, &active), CUDA_SUCCESS);
    expect_eq("primary_state_flags_value", (long long)flags, 4);
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    EXPECT("primary_state_released", cu.DevicePrimaryCtxGetState(dev, &flags, &active), CUDA_SUCCESS);
    expect_eq("primary_state_released_inactive", active, 0);
    EXPECT("primary_set_flags_back", cu.DevicePrimaryCtxSetFlags(dev, 0), CUDA_SUCCESS);
    EXPECT("primary_state_bad_device", cu.DevicePrimaryCtxGetState(99, &flags, &active),
           101 /* CUDA_ERROR_INVALID_DEVICE */);
    EXPECT("primary_state_null", cu.DevicePrimaryCtxGetState(dev, NULL, &active), CUDA_ERROR_INVALID_VALUE);
}

static void occupancy(CUfunction add)
{
    int blocks = -1;
    size_t smem = 0;
    EXPECT("occupancy_blocks", cu.OccupancyMaxActiveBlocks(&blocks, add, 256, 0), CUDA_SUCCESS);
    expect_eq("occupancy_blocks_256", blocks, 8);
    EXPECT("occupancy_blocks_flags", cu.OccupancyMaxActiveBlocksWithFlags(&blocks, add, 1024, 0, 1),
           CUDA_SUCCESS);
    expect_eq("occupancy_blocks_1024", blocks, 2);
    EXPECT("occupancy_blocks_shared", cu.OccupancyMaxActiveBlocksWithFlags(&blocks, add, 64, 60000, 0),
           CUDA_SUCCESS);
    expect_eq("occupancy_blocks_shared_value", blocks, 3);
    EXPECT("occupancy_blocks_bad_flags", cu.OccupancyMaxActiveBlocksWithFlags(&blocks, add, 256, 0, 2),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("occupancy_blocks_zero_block", cu.OccupancyMaxActiveBlocks(&blocks, add, 0, 0),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("occupancy_blocks_null", cu.OccupancyMaxActiveBlocks(NULL, add, 256, 0), CUDA_ERROR_INVALID_VALUE);
    /* add opted into 64 KiB: two blocks of 256 could use 114688 bytes each. */
    EXPECT("occupancy_dynamic_smem", cu.OccupancyAvailableDynamicSMem(&smem, add, 2, 256), CUDA_SUCCESS);
    expect_eq("occupancy_dynamic_smem_value", (long long)smem, 64 << 10);
    EXPECT("occupancy_dynamic_smem_crowded", cu.OccupancyAvailableDynamicSMem(&smem, add, 64, 256),
           CUDA_SUCCESS);
    expect_eq("occupancy_dynamic_smem_crowded_value", (long long)smem, 0);

    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = LAUNCH_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = 2;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    CUlaunchConfig cfg = {4, 1, 1, 1024, 1, 1, 0, NULL, &attr, 1};
    int clusters = -1;
    EXPECT("occupancy_clusters", cu.OccupancyMaxActiveClusters(&clusters, add, &cfg), CUDA_SUCCESS);
    expect_eq("occupancy_clusters_value", clusters, 128);
    cfg.numAttrs = 0;
    EXPECT("occupancy_clusters_unspecified", cu.OccupancyMaxActiveClusters(&clusters, add, &cfg),
           CUDA_ERROR_INVALID_CLUSTER_SIZE);
    EXPECT("occupancy_clusters_null_config", cu.OccupancyMaxActiveClusters(&clusters, add, NULL),
           CUDA_ERROR_INVALID_VALUE);
}

/* cuLaunchKernelEx of vector_add over the buffers, with `nattrs` attributes. */
static CUresult launch_ex(CUfunction f, unsigned grid, CUlaunchAttribute *attrs, unsigned nattrs,
                          CUdeviceptr *bufs, int *n)
{
    CUlaunchConfig cfg = {grid, 1, 1, 256, 1, 1, 0, NULL, attrs, nattrs};
    void *params[] = {&bufs[0], &bufs[1], &bufs[2], n};
    return launched(cu.LaunchKernelEx(&cfg, f, params, NULL));
}

static CUlaunchAttribute cluster(unsigned x, unsigned y, unsigned z)
{
    CUlaunchAttribute a;
    memset(&a, 0, sizeof a);
    a.id = LAUNCH_CLUSTER_DIMENSION;
    a.value.clusterDim.x = x;
    a.value.clusterDim.y = y;
    a.value.clusterDim.z = z;
    return a;
}

/* cuLaunchCooperativeKernelMultiDevice with one device: c = a + b on a
 * created stream, with or without the synchronization flags; bad flags, no
 * entries, the NULL stream and a grid too large are refused. */
static void multi_device(CUfunction add, CUdeviceptr *bufs, int *n, const float *a)
{
    CUstream s;
    if (!EXPECT("multi_stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS))
        return;
    void *params[] = {&bufs[0], &bufs[1], &bufs[2], n};
    struct launch_params p = {add, {16, 1, 1}, {256, 1, 1}, 0, s, params};
    EXPECT("multi_clear", cu.MemsetD8(bufs[2], 0, (size_t)*n * sizeof(float)), CUDA_SUCCESS);
    EXPECT("multi_launch", cu.LaunchCooperativeKernelMultiDevice(&p, 1, 0), CUDA_SUCCESS);
    EXPECT("multi_sync", cu.StreamSynchronize(s), CUDA_SUCCESS);
    float c[1000];
    EXPECT("multi_read", cu.MemcpyDtoH(c, bufs[2], sizeof c), CUDA_SUCCESS);
    int ok = 1;
    for (int i = 0; i < 1000; i++)
        ok &= c[i] == 2.0f * a[i];
    expect_true("multi_result", ok, "c[i] != 2 a[i]");
    EXPECT("multi_launch_no_syncs", cu.LaunchCooperativeKernelMultiDevice(&p, 1, 3), CUDA_SUCCESS);
    EXPECT("multi_sync_no_syncs", cu.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT("multi_bad_flags", cu.LaunchCooperativeKernelMultiDevice(&p, 1, 4), CUDA_ERROR_INVALID_VALUE);
    EXPECT("multi_no_entries", cu.LaunchCooperativeKernelMultiDevice(&p, 0, 0), CUDA_ERROR_INVALID_VALUE);
    struct launch_params null_stream = p;
    null_stream.stream = NULL;
    EXPECT("multi_null_stream", cu.LaunchCooperativeKernelMultiDevice(&null_stream, 1, 0),
           CUDA_ERROR_INVALID_VALUE);
    struct launch_params big = p;
    big.grid[0] = 2000;
    EXPECT("multi_too_large", cu.LaunchCooperativeKernelMultiDevice(&big, 1, 0),
           CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    EXPECT("multi_stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
}

static void launch_kernel_ex(CUfunction add, CUkernel kadd)
{
    enum { N = 4096 };
    static float a[N], c[N];
    CUdeviceptr bufs[3];
    int n = N;
    for (int i = 0; i < N; i++)
        a[i] = (float)i;
    for (int i = 0; i < 3; i++)
        EXPECT("launch_ex_alloc", cu.MemAlloc(&bufs[i], sizeof a), CUDA_SUCCESS);
    EXPECT("launch_ex_copy_a", cu.MemcpyHtoD(bufs[0], a, sizeof a), CUDA_SUCCESS);
    EXPECT("launch_ex_copy_b", cu.MemcpyHtoD(bufs[1], a, sizeof a), CUDA_SUCCESS);

    EXPECT("launch_ex_plain", launch_ex(add, 16, NULL, 0, bufs, &n), CUDA_SUCCESS);
    EXPECT("launch_ex_read", cu.MemcpyDtoH(c, bufs[2], sizeof c), CUDA_SUCCESS);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= c[i] == 2.0f * a[i];
    expect_true("launch_ex_result", ok, "c[i] != 2 a[i]");

    CUlaunchAttribute coop;
    memset(&coop, 0, sizeof coop);
    coop.id = LAUNCH_COOPERATIVE;
    coop.value.cooperative = 1;
    EXPECT("launch_ex_cooperative", launch_ex(add, 16, &coop, 1, bufs, &n), CUDA_SUCCESS);
    /* 8 blocks of 256 per SM, 132 SMs: 1056 blocks fit, 1057 do not. */
    EXPECT("launch_ex_cooperative_fits", launch_ex(add, 1056, &coop, 1, bufs, &n), CUDA_SUCCESS);
    EXPECT("launch_ex_cooperative_too_large", launch_ex(add, 1057, &coop, 1, bufs, &n),
           CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    void *params[] = {&bufs[0], &bufs[1], &bufs[2], &n};
    EXPECT("launch_cooperative", launched(cu.LaunchCooperativeKernel(add, 16, 1, 1, 256, 1, 1, 0, NULL, params)),
           CUDA_SUCCESS);
    EXPECT("launch_cooperative_too_large",
           launched(cu.LaunchCooperativeKernel(add, 2000, 1, 1, 256, 1, 1, 0, NULL, params)),
           CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    multi_device(add, bufs, &n, a);

    CUlaunchAttribute two = cluster(2, 1, 1), odd = cluster(3, 1, 1), zero = cluster(0, 1, 1),
                      big = cluster(16, 1, 1);
    EXPECT("launch_ex_cluster", launch_ex(add, 16, &two, 1, bufs, &n), CUDA_SUCCESS);
    EXPECT("launch_ex_cluster_not_dividing_grid", launch_ex(add, 16, &odd, 1, bufs, &n),
           CUDA_ERROR_INVALID_CLUSTER_SIZE);
    EXPECT("launch_ex_cluster_zero", launch_ex(add, 16, &zero, 1, bufs, &n), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    EXPECT("launch_ex_cluster_non_portable", launch_ex(add, 16, &big, 1, bufs, &n),
           CUDA_ERROR_INVALID_CLUSTER_SIZE);
    EXPECT("func_set_non_portable_cluster", cu.FuncSetAttribute(add, FUNC_NON_PORTABLE_CLUSTER, 1),
           CUDA_SUCCESS);
    EXPECT("launch_ex_cluster_non_portable_allowed", launch_ex(add, 16, &big, 1, bufs, &n), CUDA_SUCCESS);
    /* An accepted configuration again (vgpu posts it), then one the
       attribute change makes invalid again: refused at once, not later. */
    EXPECT("launch_ex_cluster_non_portable_again", launch_ex(add, 16, &big, 1, bufs, &n), CUDA_SUCCESS);
    EXPECT("launch_ex_cluster_again", launch_ex(add, 16, &two, 1, bufs, &n), CUDA_SUCCESS);
    EXPECT("func_unset_non_portable_cluster", cu.FuncSetAttribute(add, FUNC_NON_PORTABLE_CLUSTER, 0),
           CUDA_SUCCESS);
    EXPECT("launch_ex_cluster_non_portable_refused_again", cu.LaunchKernelEx(
               &(CUlaunchConfig){16, 1, 1, 256, 1, 1, 0, NULL, &big, 1}, add,
               (void *[]){&bufs[0], &bufs[1], &bufs[2], &n}, NULL),
           CUDA_ERROR_INVALID_CLUSTER_SIZE);
    EXPECT("launch_ex_cluster_not_dividing_grid_again", launch_ex(add, 16, &odd, 1, bufs, &n),
           CUDA_ERROR_INVALID_CLUSTER_SIZE);
    EXPECT("func_set_non_portable_cluster_again", cu.FuncSetAttribute(add, FUNC_NON_PORTABLE_CLUSTER, 1),
           CUDA_SUCCESS);

    /* Several attributes at once, and a completion event. */
    CUevent done;
    EXPECT("launch_ex_event_create", cu.EventCreate(&done, 0), CUDA_SUCCESS);
    CUlaunchAttribute many[4];
    memset(many, 0, sizeof many);
    many[0] = coop;
    many[1] = two;
    many[2].id = LAUNCH_PRIORITY;
    many[2].value.priority = -2;
    many[3].id = LAUNCH_COMPLETION_EVENT;
    many[3].value.launchCompletionEvent.event = done;
    memset(c, 0, sizeof c);
    EXPECT("launch_ex_clear", cu.MemcpyHtoD(bufs[2], c, sizeof c), CUDA_SUCCESS);
    EXPECT("launch_ex_many_attributes", launch_ex((CUfunction)kadd, 16, many, 4, bufs, &n), CUDA_SUCCESS);
    EXPECT("launch_ex_completion_event", cu.EventQuery(done), CUDA_SUCCESS);
    EXPECT("launch_ex_many_read", cu.MemcpyDtoH(c, bufs[2], sizeof c), CUDA_SUCCESS);
    ok = 1;
    for (int i = 0; i < N; i++)
        ok &= c[i] == 2.0f * a[i];
    expect_true("launch_ex_many_result", ok, "c[i] != 2 a[i]");
    EXPECT("launch_ex_event_destroy", cu.EventDestroy(done), CUDA_SUCCESS);

    CUlaunchAttribute bogus;
    memset(&bogus, 0, sizeof bogus);
    bogus.id = 15;
    EXPECT("launch_ex_unknown_attribute", launch_ex(add, 16, &bogus, 1, bufs, &n), CUDA_ERROR_INVALID_VALUE);
    EXPECT("launch_ex_null_config", launched(cu.LaunchKernelEx(NULL, add, params, NULL)),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("launch_ex_zero_grid", launch_ex(add, 0, NULL, 0, bufs, &n), CUDA_ERROR_INVALID_VALUE);
    for (int i = 0; i < 3; i++)
        EXPECT("launch_ex_free", cu.MemFree(bufs[i]), CUDA_SUCCESS);
}

static void streams_and_pools(void)
{
    CUstream s;
    int status = -1;
    if (!EXPECT("stream_create", cu.StreamCreate(&s, 0), CUDA_SUCCESS))
        return;
    EXPECT("stream_is_capturing", cu.StreamIsCapturing(s, &status), CUDA_SUCCESS);
    expect_eq("stream_is_capturing_none", status, 0);
    status = -1;
    EXPECT("stream_is_capturing_null_stream", cu.StreamIsCapturing(NULL, &status), CUDA_SUCCESS);
    expect_eq("stream_is_capturing_null_stream_none", status, 0);
    EXPECT("stream_is_capturing_null_out", cu.StreamIsCapturing(s, NULL), CUDA_ERROR_INVALID_VALUE);

    enum { N = 1 << 16 };
    static uint32_t out[N / 4];
    size_t free0 = 0, free1 = 0, total = 0;
    CUdeviceptr p = 0, z = 0;
    EXPECT("mem_get_info_before", cu.MemGetInfo(&free0, &total), CUDA_SUCCESS);
    if (!EXPECT("mem_alloc_async", cu.MemAllocAsync(&p, N, s), CUDA_SUCCESS))
        return;
    EXPECT("mem_get_info_after", cu.MemGetInfo(&free1, &total), CUDA_SUCCESS);
    expect_true("mem_alloc_async_charged", free1 + N <= free0, "free memory did not drop");
    EXPECT("mem_alloc_async_zero", cu.MemAllocAsync(&z, 0, s), CUDA_ERROR_INVALID_VALUE);
    EXPECT("mem_alloc_async_null", cu.MemAllocAsync(NULL, 64, s), CUDA_ERROR_INVALID_VALUE);
    EXPECT("mem_async_memset", cu.MemsetD32(p, 0x5A5A5A5Au, N / 4), CUDA_SUCCESS);
    EXPECT("mem_async_read", cu.MemcpyDtoH(out, p, N), CUDA_SUCCESS);
    int ok = 1;
    for (int i = 0; i < N / 4; i++)
        ok &= out[i] == 0x5A5A5A5Au;
    expect_true("mem_async_data", ok, "words are not 0x5A5A5A5A");
    EXPECT("mem_free_async", cu.MemFreeAsync(p, s), CUDA_SUCCESS);
    EXPECT("mem_free_async_sync", cu.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT("mem_free_async_twice", cu.MemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
    EXPECT("mem_copy_after_free_async", cu.MemcpyDtoH(out, p, 16), CUDA_ERROR_INVALID_VALUE);
    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
}

static void copies_2d(void)
{
    /* A 40x8 host image (pitch 48) into columns 8..48 of rows 2..10 of a
     * 64x12 device image, across to a second image (unified addressing),
     * and back into a host image of pitch 56 with the async form. */
    enum { W = 40, H = 8, HP = 48, DP = 64, DR = 12, BP = 56 };
    static unsigned char src[HP * H], img[DP * DR], back[BP * H];
    CUdeviceptr d, d2;
    CUstream s;
    for (int i = 0; i < HP * H; i++)
        src[i] = (unsigned char)(i * 13 + 1);
    EXPECT("copy2d_alloc", cu.MemAlloc(&d, DP * DR), CUDA_SUCCESS);
    EXPECT("copy2d_alloc_second", cu.MemAlloc(&d2, DP * H), CUDA_SUCCESS);
    EXPECT("copy2d_stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS);
    EXPECT("copy2d_clear", cu.MemsetD8(d, 0xEE, DP * DR), CUDA_SUCCESS);

    CUDA_MEMCPY2D h2d;
    memset(&h2d, 0, sizeof h2d);
    h2d.srcMemoryType = MEMORYTYPE_HOST;
    h2d.srcHost = src;
    h2d.srcPitch = HP;
    h2d.dstMemoryType = MEMORYTYPE_DEVICE;
    h2d.dstDevice = d;
    h2d.dstPitch = DP;
    h2d.dstXInBytes = 8;
    h2d.dstY = 2;
    h2d.WidthInBytes = W;
    h2d.Height = H;
    EXPECT("copy2d_htod", cu.Memcpy2D(&h2d), CUDA_SUCCESS);
    EXPECT("copy2d_htod_read", cu.MemcpyDtoH(img, d, sizeof img), CUDA_SUCCESS);
    int ok = 1;
    for (int r = 0; r < DR; r++)
        for (int x = 0; x < DP; x++) {
            int inside = r >= 2 && r < 2 + H && x >= 8 && x < 8 + W;
            ok &= img[r * DP + x] == (inside ? src[(r - 2) * HP + (x - 8)] : 0xEE);
        }
    expect_true("copy2d_htod_data", ok, "device image differs");

    CUDA_MEMCPY2D d2d;
    memset(&d2d, 0, sizeof d2d);
    d2d.srcMemoryType = MEMORYTYPE_UNIFIED;
    d2d.srcDevice = d;
    d2d.srcPitch = DP;
    d2d.srcXInBytes = 8;
    d2d.srcY = 2;
    d2d.dstMemoryType = MEMORYTYPE_DEVICE;
    d2d.dstDevice = d2;
    d2d.dstPitch = DP;
    d2d.WidthInBytes = W;
    d2d.Height = H;
    EXPECT("copy2d_dtod", cu.Memcpy2D(&d2d), CUDA_SUCCESS);

    CUDA_MEMCPY2D d2h;
    memset(&d2h, 0, sizeof d2h);
    d2h.srcMemoryType = MEMORYTYPE_DEVICE;
    d2h.srcDevice = d2;
    d2h.srcPitch = DP;
    d2h.dstMemoryType = MEMORYTYPE_HOST;
    d2h.dstHost = back;
    d2h.dstPitch = BP;
    d2h.WidthInBytes = W;
    d2h.Height = H;
    memset(back, 0x77, sizeof back);
    EXPECT("copy2d_dtoh_async", cu.Memcpy2DAsync(&d2h, s), CUDA_SUCCESS);
    EXPECT("copy2d_dtoh_sync", cu.StreamSynchronize(s), CUDA_SUCCESS);
    ok = 1;
    for (int r = 0; r < H; r++)
        for (int x = 0; x < BP; x++)
            ok &= back[r * BP + x] == (x < W ? src[r * HP + x] : 0x77);
    expect_true("copy2d_round_trip", ok, "host image differs after HtoD, DtoD, DtoH");

    /* Bounds: nothing moves when a check fails. */
    EXPECT("copy2d_clear_second", cu.MemsetD8(d2, 0x11, DP * H), CUDA_SUCCESS);
    CUDA_MEMCPY2D bad = d2d;
    bad.Height = H + 1; /* 9 rows of pitch 64 do not fit the 8-row second image */
    EXPECT("copy2d_dst_past_end", cu.Memcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = d2d;
    bad.srcY = 5; /* rows 5..13 of a 12-row image */
    EXPECT("copy2d_src_past_end", cu.Memcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = d2d;
    bad.dstXInBytes = 30; /* 30 + 40 > pitch 64 */
    EXPECT("copy2d_width_past_pitch", cu.Memcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = h2d;
    bad.dstY = 5; /* rows 5..13 of a 12-row image */
    EXPECT("copy2d_htod_past_end", cu.Memcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = d2h;
    bad.srcDevice = d2 + DP * H; /* just past the allocation */
    EXPECT("copy2d_dtoh_outside", cu.Memcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = d2h;
    bad.dstHost = NULL;
    EXPECT("copy2d_null_host", cu.Memcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = d2d;
    bad.dstMemoryType = 0;
    EXPECT("copy2d_bad_memory_type", cu.Memcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
    EXPECT("copy2d_null", cu.Memcpy2D(NULL), CUDA_ERROR_INVALID_VALUE);
    static unsigned char untouched[DP * H];
    EXPECT("copy2d_untouched_read", cu.MemcpyDtoH(untouched, d2, sizeof untouched), CUDA_SUCCESS);
    ok = 1;
    for (int i = 0; i < DP * H; i++)
        ok &= untouched[i] == 0x11;
    expect_true("copy2d_failed_copies_touch_nothing", ok, "a refused copy wrote bytes");

    /* Device to device needs no message of its size: more than 64 MiB at once. */
    enum { BW = 8000, BPITCH = 8192, BH = 8200 };
    static unsigned char row[BPITCH];
    CUdeviceptr bs, bd;
    if (EXPECT("copy2d_big_alloc", cu.MemAlloc(&bs, (size_t)BPITCH * BH), CUDA_SUCCESS) &&
        EXPECT("copy2d_big_alloc_second", cu.MemAlloc(&bd, (size_t)BPITCH * BH), CUDA_SUCCESS)) {
        EXPECT("copy2d_big_fill", cu.MemsetD32(bs, 0x01020304u, (size_t)BPITCH * BH / 4), CUDA_SUCCESS);
        EXPECT("copy2d_big_clear", cu.MemsetD8(bd, 0, (size_t)BPITCH * BH), CUDA_SUCCESS);
        CUDA_MEMCPY2D big;
        memset(&big, 0, sizeof big);
        big.srcMemoryType = MEMORYTYPE_DEVICE;
        big.srcDevice = bs;
        big.srcPitch = BPITCH;
        big.dstMemoryType = MEMORYTYPE_DEVICE;
        big.dstDevice = bd;
        big.dstPitch = BPITCH;
        big.WidthInBytes = BW;
        big.Height = BH;
        EXPECT("copy2d_dtod_larger_than_a_message", cu.Memcpy2D(&big), CUDA_SUCCESS);
        EXPECT("copy2d_big_read", cu.MemcpyDtoH(row, bd + (size_t)BPITCH * (BH - 1), BPITCH), CUDA_SUCCESS);
        ok = 1;
        for (int x = 0; x < BPITCH; x++)
            ok &= row[x] == (x < BW ? (unsigned char)(4 - x % 4) : 0);
        expect_true("copy2d_big_last_row", ok, "the last row differs");
        EXPECT("copy2d_big_free", cu.MemFree(bs), CUDA_SUCCESS);
        EXPECT("copy2d_big_free_second", cu.MemFree(bd), CUDA_SUCCESS);
    }

    EXPECT("copy2d_free", cu.MemFree(d), CUDA_SUCCESS);
    EXPECT("copy2d_free_second", cu.MemFree(d2), CUDA_SUCCESS);
    EXPECT("copy2d_stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
}

static void pinned_host(CUfunction fillf)
{
    enum { N = 2048 };
    uint32_t *h = NULL;
    void *h2 = NULL;
    unsigned flags = 99;
    CUdeviceptr dp = 0, d = 0;
    if (!EXPECT("mem_host_alloc", cu.MemHostAlloc((void **)&h, N * 4, MEMHOSTALLOC_DEVICEMAP | MEMHOSTALLOC_PORTABLE),
                CUDA_SUCCESS))
        return;
    EXPECT("mem_host_get_flags", cu.MemHostGetFlags(&flags, h + 100), CUDA_SUCCESS);
    expect_eq("mem_host_get_flags_value", flags, MEMHOSTALLOC_DEVICEMAP | MEMHOSTALLOC_PORTABLE);
    EXPECT("mem_host_get_device_pointer", cu.MemHostGetDevicePointer(&dp, h, 0), CUDA_SUCCESS);
    EXPECT("mem_host_get_device_pointer_flags", cu.MemHostGetDevicePointer(&dp, h, 1),
           CUDA_ERROR_INVALID_VALUE);
    int local = 0;
    CUdeviceptr nowhere = 0;
    EXPECT("mem_host_get_device_pointer_unpinned", cu.MemHostGetDevicePointer(&nowhere, &local, 0),
           CUDA_ERROR_INVALID_VALUE);

    /* A kernel writes the pinned pages through their device pointer. */
    for (int i = 0; i < N; i++)
        h[i] = 1;
    EXPECT("pinned_kernel_write", fill(fillf, dp, 0xFEEDu, 256), CUDA_SUCCESS);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= h[i] == (i < 256 ? 0xFEEDu : 1u);
    expect_true("pinned_kernel_data", ok, "the kernel's writes are not in the pinned pages");

    /* Copies to and from pinned pages. */
    for (int i = 0; i < N; i++)
        h[i] = (uint32_t)i * 5u;
    EXPECT("pinned_alloc_device", cu.MemAlloc(&d, N * 4), CUDA_SUCCESS);
    EXPECT("pinned_htod", cu.MemcpyHtoD(d, h, N * 4), CUDA_SUCCESS);
    memset(h, 0, N * 4);
    EXPECT("pinned_dtoh", cu.MemcpyDtoH(h, d, N * 4), CUDA_SUCCESS);
    ok = 1;
    for (int i = 0; i < N; i++)
        ok &= h[i] == (uint32_t)i * 5u;
    expect_true("pinned_round_trip", ok, "pinned round trip differs");

    /* Pointer attributes of pinned memory. */
    unsigned type = 0;
    void *host_ptr = NULL;
    CUdeviceptr dev_ptr = 0;
    EXPECT("pointer_pinned_type", cu.PointerGetAttribute(&type, POINTER_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)(h + 4)),
           CUDA_SUCCESS);
    expect_eq("pointer_pinned_type_host", type, MEMORYTYPE_HOST);
    EXPECT("pointer_pinned_host_pointer",
           cu.PointerGetAttribute(&host_ptr, POINTER_HOST_POINTER, (CUdeviceptr)(uintptr_t)(h + 4)), CUDA_SUCCESS);
    expect_true("pointer_pinned_host_pointer_value", host_ptr == (void *)(h + 4), "host pointer differs");
    EXPECT("pointer_pinned_device_pointer",
           cu.PointerGetAttribute(&dev_ptr, POINTER_DEVICE_POINTER, (CUdeviceptr)(uintptr_t)h), CUDA_SUCCESS);
    expect_true("pointer_pinned_device_pointer_value", dev_ptr == dp, "device pointer differs");

    EXPECT("mem_alloc_host", cu.MemAllocHost(&h2, 100), CUDA_SUCCESS);
    EXPECT("mem_alloc_host_flags", cu.MemHostGetFlags(&flags, h2), CUDA_SUCCESS);
    expect_eq("mem_alloc_host_flags_value", flags, 0);
    EXPECT("mem_free_host_second", cu.MemFreeHost(h2), CUDA_SUCCESS);
    EXPECT("pinned_free_device", cu.MemFree(d), CUDA_SUCCESS);
    EXPECT("mem_free_host", cu.MemFreeHost(h), CUDA_SUCCESS);
    EXPECT("mem_free_host_twice", cu.MemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
    EXPECT("mem_host_get_flags_freed", cu.MemHostGetFlags(&flags, &local), CUDA_ERROR_INVALID_VALUE);
}

static void pointer_attributes(void)
{
    CUdeviceptr d;
    if (!EXPECT("pointer_alloc", cu.MemAlloc(&d, 1000), CUDA_SUCCESS))
        return;
    CUcontext owner = NULL;
    unsigned type = 0;
    int ordinal = -1;
    CUdeviceptr start = 0, dptr = 0;
    size_t size = 0;
    void *host_ptr = NULL;
    EXPECT("pointer_context", cu.PointerGetAttribute(&owner, POINTER_CONTEXT, d), CUDA_SUCCESS);
    expect_true("pointer_context_value", owner == ctx, "not the allocating context");
    EXPECT("pointer_type", cu.PointerGetAttribute(&type, POINTER_MEMORY_TYPE, d + 10), CUDA_SUCCESS);
    expect_eq("pointer_type_device", type, MEMORYTYPE_DEVICE);
    EXPECT("pointer_ordinal", cu.PointerGetAttribute(&ordinal, POINTER_DEVICE_ORDINAL, d), CUDA_SUCCESS);
    expect_eq("pointer_ordinal_value", ordinal, dev);
    EXPECT("pointer_range_start", cu.PointerGetAttribute(&start, POINTER_RANGE_START, d + 999), CUDA_SUCCESS);
    expect_true("pointer_range_start_value", start == d, "range start is not the base");
    EXPECT("pointer_range_size", cu.PointerGetAttribute(&size, POINTER_RANGE_SIZE, d + 999), CUDA_SUCCESS);
    expect_eq("pointer_range_size_value", (long long)size, 1000);
    EXPECT("pointer_device_pointer", cu.PointerGetAttribute(&dptr, POINTER_DEVICE_POINTER, d + 3), CUDA_SUCCESS);
    expect_true("pointer_device_pointer_value", dptr == d + 3, "device pointer differs");
    EXPECT("pointer_host_pointer_of_device_memory", cu.PointerGetAttribute(&host_ptr, POINTER_HOST_POINTER, d),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("pointer_unknown", cu.PointerGetAttribute(&type, POINTER_MEMORY_TYPE, 0x1000), CUDA_ERROR_INVALID_VALUE);
    EXPECT("pointer_bad_attribute", cu.PointerGetAttribute(&type, 99, d), CUDA_ERROR_INVALID_VALUE);
    EXPECT("pointer_null_data", cu.PointerGetAttribute(NULL, POINTER_MEMORY_TYPE, d), CUDA_ERROR_INVALID_VALUE);

    int attrs[] = {POINTER_CONTEXT, POINTER_MEMORY_TYPE, POINTER_DEVICE_ORDINAL, POINTER_MAPPED, POINTER_RANGE_SIZE};
    unsigned mapped = 9;
    owner = (CUcontext)(uintptr_t)1;
    type = 9;
    ordinal = 9;
    size = 9;
    void *data[] = {&owner, &type, &ordinal, &mapped, &size};
    EXPECT("pointer_attributes_unknown", cu.PointerGetAttributes(5, attrs, data, 0x1000), CUDA_SUCCESS);
    expect_true("pointer_attributes_unknown_defaults",
                owner == NULL && type == 0 && ordinal == -2 && mapped == 0 && size == 0,
                "an unknown pointer does not report the defaults");
    EXPECT("pointer_attributes_device", cu.PointerGetAttributes(5, attrs, data, d + 1), CUDA_SUCCESS);
    expect_true("pointer_attributes_device_values",
                owner == ctx && type == MEMORYTYPE_DEVICE && ordinal == dev && mapped == 1 && size == 1000,
                "device pointer attributes differ");
    EXPECT("pointer_attributes_zero", cu.PointerGetAttributes(0, attrs, data, d), CUDA_ERROR_INVALID_VALUE);
    EXPECT("pointer_free", cu.MemFree(d), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));

    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) || !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("ctx_create", cu.CtxCreate(&ctx, 0, dev), CUDA_SUCCESS))
        goto done;

    loading_mode();
    libraries();

    /* A library kept loaded for the remaining sections. */
    CUlibrary keep;
    CUkernel kadd, kfill, ksaxpy;
    CUfunction add, fillf;
    if (!EXPECT("keep_library_load", cu.LibraryLoadData(&keep, LIBRARY_IMAGE, NULL, NULL, 0, NULL, NULL, 0),
                CUDA_SUCCESS) ||
        !EXPECT("keep_get_kernel_add", cu.LibraryGetKernel(&kadd, keep, "vector_add"), CUDA_SUCCESS) ||
        !EXPECT("keep_get_kernel_fill", cu.LibraryGetKernel(&kfill, keep, "fill_u32"), CUDA_SUCCESS) ||
        !EXPECT("keep_get_kernel_saxpy", cu.LibraryGetKernel(&ksaxpy, keep, "saxpy"), CUDA_SUCCESS) ||
        !EXPECT("keep_function_add", cu.KernelGetFunction(&add, kadd), CUDA_SUCCESS) ||
        !EXPECT("keep_function_fill", cu.KernelGetFunction(&fillf, kfill), CUDA_SUCCESS))
        goto done;

    attributes(add, ksaxpy);
    primary_context_state();
    occupancy(add);
    launch_kernel_ex(add, kadd);
    streams_and_pools();
    copies_2d();
    pinned_host(fillf);
    pointer_attributes();

    EXPECT("keep_library_unload", cu.LibraryUnload(keep), CUDA_SUCCESS);
    EXPECT("ctx_destroy", cu.CtxDestroy(ctx), CUDA_SUCCESS);

done:
    return checks_summary();
}
