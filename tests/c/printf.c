/*
 * printf: device printf output appears on the program's own standard
 * output, in order, where the driver flushes it: a kernel's lines come out
 * at the context or stream synchronization that follows it, between the
 * host lines printed before and after that call. The program prints only deterministic lines; the test that runs it
 * checks their order.
 *
 * The kernel, print_u32(unsigned v, int n), prints `thread I value V` from
 * each of its first n threads. It is PTX calling vprintf on a GPU, and a
 * built-in kernel on vgpu's simulated device, so it runs on both.
 *
 * Build:  cc -std=c11 -O2 -Wall -o printf printf.c -ldl
 * Usage:  printf [LIBRARY]      (default: libcuda.so.1)
 * Output: `host: ...` lines, the kernels' lines, one line per check (`ok
 *         NAME` or `FAIL NAME: ...`), then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

enum { THREADS = 4 };

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetName, "cuDeviceGetName"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(LaunchKernel, "cuLaunchKernel"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* print_u32 in PTX: vprintf with the format "thread %u value %u\n" and an
 * 8-byte argument buffer in local memory. */
static const char GPU_MODULE[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 p0, .param .b64 p1);\n"
    ".global .align 1 .b8 fmt[20] = {116, 104, 114, 101, 97, 100, 32, 37, 117, 32, 118, 97, 108, 117, 101, 32, 37, 117, 10, 0};\n"
    ".visible .entry print_u32(.param .u32 v, .param .u32 n)\n{\n"
    "  .local .align 8 .b8 depot[8];\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<5>;\n  .reg .b64 %rd<5>;\n"
    "  mov.u64 %rd1, depot;\n  cvta.local.u64 %rd2, %rd1;\n"
    "  ld.param.u32 %r1, [v];\n  ld.param.u32 %r2, [n];\n  mov.u32 %r3, %tid.x;\n"
    "  setp.ge.s32 %p1, %r3, %r2;\n  @%p1 bra DONE;\n"
    "  st.local.u32 [%rd1], %r3;\n  st.local.u32 [%rd1+4], %r1;\n"
    "  mov.u64 %rd3, fmt;\n  cvta.global.u64 %rd4, %rd3;\n"
    "  {\n  .param .b64 param0;\n  st.param.b64 [param0], %rd4;\n"
    "  .param .b64 param1;\n  st.param.b64 [param1], %rd2;\n"
    "  .param .b32 retval0;\n  call.uni (retval0), vprintf, (param0, param1);\n"
    "  ld.param.b32 %r4, [retval0];\n  }\nDONE:\n  ret;\n}\n";
static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel print_u32\n";

/* Launches print_u32 with value `v` on `s`, `blocks` blocks of `threads`. */
static CUresult launch_n(CUfunction f, unsigned int v, CUstream s, unsigned int blocks,
                         unsigned int threads)
{
    int n = (int)(blocks * threads);
    void *params[] = {&v, &n};
    return cu.LaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, s, params, NULL);
}

static CUresult launch(CUfunction f, unsigned int v, CUstream s)
{
    return launch_n(f, v, s, 1, THREADS);
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUstream s;
    char name[256] = {0};
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("device_name", cu.DeviceGetName(name, sizeof name, dev), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS) ||
        !EXPECT("stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS))
        return checks_summary();
    int sim = strstr(name, "simulated") != NULL;
    if (!EXPECT("load", cu.ModuleLoadData(&mod, sim ? SIM_MODULE : GPU_MODULE), CUDA_SUCCESS) ||
        !EXPECT("function", cu.ModuleGetFunction(&f, mod, "print_u32"), CUDA_SUCCESS))
        return checks_summary();

    printf("host: before ctx sync\n");
    EXPECT("launch_7", launch(f, 7, NULL), CUDA_SUCCESS);
    EXPECT("ctx_sync", cu.CtxSynchronize(), CUDA_SUCCESS);
    printf("host: after ctx sync\n");
    EXPECT("launch_8", launch(f, 8, s), CUDA_SUCCESS);
    EXPECT("stream_sync", cu.StreamSynchronize(s), CUDA_SUCCESS);
    printf("host: after stream sync\n");
    if (sim) {
        /* More output in one flush than a pipe holds (about 2 MB): it all
         * arrives, and the synchronization returns. The driver's printf
         * buffer would drop most of it, so a GPU does not run this. */
        EXPECT("launch_big", launch_n(f, 5, NULL, 100, 1000), CUDA_SUCCESS);
        EXPECT("big_sync", cu.CtxSynchronize(), CUDA_SUCCESS);
    }
    EXPECT("unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    return checks_summary();
}
