/*
 * guest_bench: three figures of a CUDA library, for comparing a VM guest's
 * ivshmem path with the host's local rings (scripts/vm-bench runs it in
 * both places against the simulated device):
 *
 *   posted   launches per second of an empty-bodied kernel (fill_u32 over
 *            zero elements), N of them, then one cuCtxSynchronize
 *   rtt      microseconds per cuCtxSynchronize on an idle context (a call
 *            that waits for its answer)
 *   copy     GB/s of 64 MiB host-to-device and device-to-host copies from
 *            pageable memory, every byte checked once
 *
 * Build:  cc -std=c11 -O2 -Wall -o guest_bench guest_bench.c -ldl
 * Usage:  guest_bench [LIBRARY]      (default: libcuda.so.1)
 * Output: `posted N /s`, `rtt N us`, `htod N GB/s`, `dtoh N GB/s`, then
 *         `bench ok`; exit 1 on any failure.
 */
#include "../c/cuda_prelude.h"

#include <time.h>

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*CtxCreate)(CUcontext *, unsigned int, CUdevice);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **,
                             void **);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(CtxCreate, "cuCtxCreate_v2"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(LaunchKernel, "cuLaunchKernel"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* The simulated device's module (a test double's kernels). */
static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel fill_u32\n";

enum { LAUNCHES = 20000, SYNCS = 5000, COPY = 64 << 20, COPIES = 4 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Exits 1 with the call's name and error unless it succeeded. */
static void must(const char *what, CUresult r)
{
    if (r != CUDA_SUCCESS) {
        printf("FAIL %s: %s\n", what, error_name(cu.GetErrorName, r));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    must("cuInit", cu.Init(0));
    must("cuDeviceGet", cu.DeviceGet(&dev, 0));
    must("cuCtxCreate", cu.CtxCreate(&ctx, 0, dev));

    CUmodule mod;
    CUfunction fill;
    CUdeviceptr out;
    must("cuModuleLoadData", cu.ModuleLoadData(&mod, SIM_MODULE));
    must("cuModuleGetFunction", cu.ModuleGetFunction(&fill, mod, "fill_u32"));
    must("cuMemAlloc", cu.MemAlloc(&out, COPY));
    unsigned int value = 7, count = 0;
    void *params[] = {&out, &value, &count};
    must("warm-up launch", cu.LaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    must("warm-up sync", cu.CtxSynchronize());
    double t = now();
    for (int i = 0; i < LAUNCHES; i++)
        must("cuLaunchKernel", cu.LaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    must("cuCtxSynchronize", cu.CtxSynchronize());
    printf("posted %.0f /s\n", LAUNCHES / (now() - t));

    t = now();
    for (int i = 0; i < SYNCS; i++)
        must("cuCtxSynchronize", cu.CtxSynchronize());
    printf("rtt %.2f us\n", (now() - t) / SYNCS * 1e6);

    unsigned char *in = malloc(COPY), *back = malloc(COPY);
    for (size_t i = 0; i < COPY; i++)
        in[i] = (unsigned char)(i * 131 + (i >> 16));
    t = now();
    for (int i = 0; i < COPIES; i++)
        must("cuMemcpyHtoD", cu.MemcpyHtoD(out, in, COPY));
    printf("htod %.2f GB/s\n", (double)COPY * COPIES / (now() - t) / 1e9);
    t = now();
    for (int i = 0; i < COPIES; i++)
        must("cuMemcpyDtoH", cu.MemcpyDtoH(back, out, COPY));
    printf("dtoh %.2f GB/s\n", (double)COPY * COPIES / (now() - t) / 1e9);
    if (memcmp(in, back, COPY) != 0) {
        printf("FAIL copy: the bytes that came back differ\n");
        return 1;
    }
    printf("bench ok\n");
    return 0;
}
