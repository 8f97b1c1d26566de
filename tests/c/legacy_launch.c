/*
 * legacy_launch: the deprecated launch interface, which driver 580 still
 * serves. A function's block shape (cuFuncSetBlockShape), shared memory
 * size (cuFuncSetSharedSize) and parameter buffer (cuParamSetSize,
 * cuParamSeti, cuParamSetf, cuParamSetv) drive cuLaunchGrid, cuLaunch and
 * cuLaunchGridAsync, whose kernel fills a buffer that is read back: each
 * launch writes its value into exactly the elements its grid covers.
 *
 * The kernel, fill_u32(unsigned *p, unsigned v, int n), is PTX on a GPU and
 * a built-in kernel on vgpu's simulated device, so it runs on both.
 *
 * Build:  cc -std=c11 -O2 -Wall -o legacy_launch legacy_launch.c -ldl
 * Usage:  legacy_launch [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

enum { BLOCK = 64, WORDS = 1024 };

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*FuncSetBlockShape)(CUfunction, int, int, int);
    CUresult (*FuncSetSharedSize)(CUfunction, unsigned int);
    CUresult (*ParamSetSize)(CUfunction, unsigned int);
    CUresult (*ParamSeti)(CUfunction, int, unsigned int);
    CUresult (*ParamSetf)(CUfunction, int, float);
    CUresult (*ParamSetv)(CUfunction, int, void *, unsigned int);
    CUresult (*Launch)(CUfunction);
    CUresult (*LaunchGrid)(CUfunction, int, int);
    CUresult (*LaunchGridAsync)(CUfunction, int, int, CUstream);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetName, "cuDeviceGetName"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(FuncSetBlockShape, "cuFuncSetBlockShape"),
    ENTRY(FuncSetSharedSize, "cuFuncSetSharedSize"),
    ENTRY(ParamSetSize, "cuParamSetSize"),
    ENTRY(ParamSeti, "cuParamSeti"),
    ENTRY(ParamSetf, "cuParamSetf"),
    ENTRY(ParamSetv, "cuParamSetv"),
    ENTRY(Launch, "cuLaunch"),
    ENTRY(LaunchGrid, "cuLaunchGrid"),
    ENTRY(LaunchGridAsync, "cuLaunchGridAsync"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

static const char GPU_MODULE[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry fill_u32(.param .u64 p, .param .u32 v, .param .u32 n)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [v];\n  ld.param.u32 %r2, [n];\n"
    "  mov.u32 %r3, %ctaid.x;\n  mov.u32 %r4, %ntid.x;\n  mov.u32 %r5, %tid.x;\n"
    "  mad.lo.s32 %r3, %r3, %r4, %r5;\n  setp.ge.s32 %p1, %r3, %r2;\n  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n  mul.wide.s32 %rd3, %r3, 4;\n"
    "  add.s64 %rd2, %rd2, %rd3;\n  st.global.u32 [%rd2], %r1;\nDONE:\n  ret;\n}\n";
static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel fill_u32\n";

static unsigned int host[WORDS];

/* Whether the first `covered` words hold `v` and the rest `rest`. */
static int filled(unsigned int covered, unsigned int v, unsigned int rest)
{
    for (unsigned int i = 0; i < WORDS; i++)
        if (host[i] != (i < covered ? v : rest))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUdeviceptr d;
    CUstream s;
    char name[256] = {0};
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("device_name", cu.DeviceGetName(name, sizeof name, dev), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS) ||
        !EXPECT("alloc", cu.MemAlloc(&d, WORDS * 4), CUDA_SUCCESS) ||
        !EXPECT("stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS))
        return checks_summary();
    int sim = strstr(name, "simulated") != NULL;
    if (!EXPECT("load", cu.ModuleLoadData(&mod, sim ? SIM_MODULE : GPU_MODULE), CUDA_SUCCESS) ||
        !EXPECT("function", cu.ModuleGetFunction(&f, mod, "fill_u32"), CUDA_SUCCESS))
        return checks_summary();

    EXPECT("block_shape", cu.FuncSetBlockShape(f, BLOCK, 1, 1), CUDA_SUCCESS);
    EXPECT("shared_size", cu.FuncSetSharedSize(f, 0), CUDA_SUCCESS);
    EXPECT("param_setv", cu.ParamSetv(f, 0, &d, sizeof d), CUDA_SUCCESS);
    EXPECT("param_setf", cu.ParamSetf(f, 8, 1.5f), CUDA_SUCCESS);
    EXPECT("param_seti_value", cu.ParamSeti(f, 8, 7), CUDA_SUCCESS);
    EXPECT("param_seti_count", cu.ParamSeti(f, 12, WORDS), CUDA_SUCCESS);
    EXPECT("param_set_size", cu.ParamSetSize(f, 16), CUDA_SUCCESS);

    /* 4 blocks of 64: the first 256 words. */
    EXPECT("memset", cu.MemsetD32(d, 0, WORDS), CUDA_SUCCESS);
    EXPECT("launch_grid", cu.LaunchGrid(f, 4, 1), CUDA_SUCCESS);
    EXPECT("launch_grid_sync", cu.CtxSynchronize(), CUDA_SUCCESS);
    EXPECT("launch_grid_read", cu.MemcpyDtoH(host, d, sizeof host), CUDA_SUCCESS);
    expect_true("launch_grid_filled", filled(4 * BLOCK, 7, 0), "wrong words filled");

    /* One block, a new value: the first 64 words. */
    EXPECT("param_seti_value_2", cu.ParamSeti(f, 8, 9), CUDA_SUCCESS);
    EXPECT("memset_2", cu.MemsetD32(d, 0, WORDS), CUDA_SUCCESS);
    EXPECT("launch", cu.Launch(f), CUDA_SUCCESS);
    EXPECT("launch_sync", cu.CtxSynchronize(), CUDA_SUCCESS);
    EXPECT("launch_read", cu.MemcpyDtoH(host, d, sizeof host), CUDA_SUCCESS);
    expect_true("launch_filled", filled(BLOCK, 9, 0), "wrong words filled");

    /* 16 blocks on a stream, over the whole buffer. */
    EXPECT("param_seti_value_3", cu.ParamSeti(f, 8, 11), CUDA_SUCCESS);
    EXPECT("launch_grid_async", cu.LaunchGridAsync(f, 16, 1, s), CUDA_SUCCESS);
    EXPECT("launch_grid_async_sync", cu.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT("launch_grid_async_read", cu.MemcpyDtoH(host, d, sizeof host), CUDA_SUCCESS);
    expect_true("launch_grid_async_filled", filled(WORDS, 11, 0), "wrong words filled");

    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT("unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
    EXPECT("free", cu.MemFree(d), CUDA_SUCCESS);
    return checks_summary();
}
