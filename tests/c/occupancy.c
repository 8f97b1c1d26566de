/*
 * occupancy: the occupancy calculator. cuOccupancyMaxPotentialBlockSize
 * (with and without a blockSizeToDynamicSMemSize callback, which runs in
 * this process, and with a block size limit) and its WithFlags form give
 * the answer of the documented search over
 * cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, which this program
 * also runs itself: block sizes from the largest the function and device
 * allow down by the warp size, the first that reaches the most resident
 * threads, stopping once one fills a multiprocessor; the minimum grid is
 * that size's blocks per multiprocessor times the multiprocessors.
 * cuOccupancyMaxPotentialClusterSize gives a cluster size in 1..16. NULL
 * out-pointers get CUDA_ERROR_INVALID_VALUE.
 *
 * Its kernel is PTX on a GPU, or a built-in kernel of vgpu's simulated
 * device; it prints the answers as `value NAME N` lines, the same for the
 * native driver and vgpu on one machine.
 *
 * Build:  cc -std=c11 -O2 -Wall -o occupancy occupancy.c -ldl
 * Usage:  occupancy [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, value lines,
 *         then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef size_t (*smem_of_block)(int);

enum {
    ATTR_MAX_THREADS_PER_BLOCK = 1,
    ATTR_WARP_SIZE = 10,
    ATTR_MULTIPROCESSOR_COUNT = 16,
    ATTR_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    FUNC_MAX_THREADS_PER_BLOCK = 0,
    DISABLE_CACHING_OVERRIDE = 1,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*FuncGetAttribute)(int *, int, CUfunction);
    CUresult (*MaxActiveBlocks)(int *, CUfunction, int, size_t, unsigned int);
    CUresult (*MaxPotentialBlockSize)(int *, int *, CUfunction, smem_of_block, size_t, int);
    CUresult (*MaxPotentialBlockSizeWithFlags)(int *, int *, CUfunction, smem_of_block, size_t,
                                               int, unsigned int);
    CUresult (*MaxPotentialClusterSize)(int *, CUfunction, const CUlaunchConfig *);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetName, "cuDeviceGetName"),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(FuncGetAttribute, "cuFuncGetAttribute"),
    ENTRY(MaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"),
    ENTRY(MaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize"),
    ENTRY(MaxPotentialBlockSizeWithFlags, "cuOccupancyMaxPotentialBlockSizeWithFlags"),
    ENTRY(MaxPotentialClusterSize, "cuOccupancyMaxPotentialClusterSize"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* A kernel that uses 4 KiB of static shared memory, so shared memory
 * limits occupancy too. */
static const char GPU_MODULE[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry scale(.param .u64 p)\n{\n"
    "  .shared .align 4 .b8 tile[4096];\n"
    "  .reg .b64 %rd<3>;\n  .reg .b32 %r<4>;\n"
    "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, %tid.x;\n  st.shared.u32 [tile], %r1;\n  bar.sync 0;\n"
    "  ld.shared.u32 %r2, [tile];\n  st.global.u32 [%rd2], %r2;\n  ret;\n}\n";
static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel fill_u32\n";

static int callback_calls;

/* 32 bytes of dynamic shared memory per thread. */
static size_t smem_per_thread(int block)
{
    callback_calls++;
    return (size_t)block * 32;
}

static int device_attr(CUdevice dev, int attr)
{
    int v = 0;
    cu.DeviceGetAttribute(&v, attr, dev);
    return v;
}

/* The documented search, by this program's own occupancy queries. */
static CUresult search(CUdevice dev, CUfunction f, smem_of_block smem_of, size_t smem, int limit,
                       unsigned int flags, int *grid, int *block)
{
    int func_max = 0;
    CUresult r = cu.FuncGetAttribute(&func_max, FUNC_MAX_THREADS_PER_BLOCK, f);
    if (r != CUDA_SUCCESS)
        return r;
    int warp = device_attr(dev, ATTR_WARP_SIZE);
    int sm_threads = device_attr(dev, ATTR_MAX_THREADS_PER_MULTIPROCESSOR);
    int cap = device_attr(dev, ATTR_MAX_THREADS_PER_BLOCK);
    if (func_max < cap)
        cap = func_max;
    if (limit > 0 && limit < cap)
        cap = limit;
    int best_block = 0, best_blocks = 0, best_threads = 0;
    for (int aligned = (cap + warp - 1) / warp * warp; aligned > 0; aligned -= warp) {
        int b = aligned < cap ? aligned : cap;
        int blocks = 0;
        r = cu.MaxActiveBlocks(&blocks, f, b, smem_of ? smem_of(b) : smem, flags);
        if (r != CUDA_SUCCESS)
            return r;
        if (b * blocks > best_threads) {
            best_block = b;
            best_blocks = blocks;
            best_threads = b * blocks;
        }
        if (best_threads == sm_threads)
            break;
    }
    *grid = best_blocks * device_attr(dev, ATTR_MULTIPROCESSOR_COUNT);
    *block = best_block;
    return CUDA_SUCCESS;
}

/* One case: the driver's answer, checked against the search. */
static void check_case(const char *name, CUdevice dev, CUfunction f, smem_of_block smem_of,
                       size_t smem, int limit, int with_flags, unsigned int flags)
{
    int grid = -1, block = -1, want_grid = -2, want_block = -2;
    char label[96];
    snprintf(label, sizeof label, "%s_call", name);
    CUresult r = with_flags
                     ? cu.MaxPotentialBlockSizeWithFlags(&grid, &block, f, smem_of, smem, limit, flags)
                     : cu.MaxPotentialBlockSize(&grid, &block, f, smem_of, smem, limit);
    if (!EXPECT(label, r, CUDA_SUCCESS))
        return;
    printf("value %s_block %d\nvalue %s_min_grid %d\n", name, block, name, grid);
    snprintf(label, sizeof label, "%s_search", name);
    EXPECT(label, search(dev, f, smem_of, smem, limit, flags, &want_grid, &want_block),
           CUDA_SUCCESS);
    snprintf(label, sizeof label, "%s_matches_search", name);
    expect_true(label, grid == want_grid && block == want_block, "differs from the search");
    snprintf(label, sizeof label, "%s_positive", name);
    expect_true(label, grid > 0 && block > 0 && (limit == 0 || block <= limit),
                "no block size, or one above the limit");
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    char name[256] = {0};
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("device_name", cu.DeviceGetName(name, sizeof name, dev), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS))
        return checks_summary();
    int sim = strstr(name, "simulated") != NULL;
    if (!EXPECT("load", cu.ModuleLoadData(&mod, sim ? SIM_MODULE : GPU_MODULE), CUDA_SUCCESS) ||
        !EXPECT("function", cu.ModuleGetFunction(&f, mod, sim ? "fill_u32" : "scale"),
                CUDA_SUCCESS))
        return checks_summary();

    check_case("plain", dev, f, NULL, 0, 0, 0, 0);
    check_case("fixed_smem", dev, f, NULL, 16384, 0, 0, 0);
    callback_calls = 0;
    check_case("callback", dev, f, smem_per_thread, 0, 0, 0, 0);
    expect_true("callback_ran", callback_calls > 0, "the callback never ran");
    check_case("limit_100", dev, f, NULL, 0, 100, 0, 0);
    check_case("with_flags", dev, f, smem_per_thread, 0, 0, 1, DISABLE_CACHING_OVERRIDE);

    int grid, block;
    EXPECT("null_block", cu.MaxPotentialBlockSize(&grid, NULL, f, NULL, 0, 0),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("null_grid", cu.MaxPotentialBlockSize(NULL, &block, f, NULL, 0, 0),
           CUDA_ERROR_INVALID_VALUE);

    CUlaunchConfig config = {1, 1, 1, 128, 1, 1, 0, NULL, NULL, 0};
    int cluster = -1;
    if (EXPECT("cluster_size", cu.MaxPotentialClusterSize(&cluster, f, &config), CUDA_SUCCESS))
        printf("value cluster_size %d\n", cluster);
    expect_true("cluster_size_range", cluster >= 1 && cluster <= 16, "out of 1..16");
    EXPECT("cluster_size_null", cu.MaxPotentialClusterSize(NULL, f, &config),
           CUDA_ERROR_INVALID_VALUE);
    return checks_summary();
}
