/*
 * host_register: cuMemHostRegister of the program's own memory, as pinned-
 * memory users (numba's pinned arrays, cudaHostRegister) do: the bytes the
 * program wrote before registering are kept, copies into and out of the
 * registered pages and a kernel's stores through their device pointer are
 * seen by the CPU, the flags and pointer attributes read back, and
 * unregistering leaves the program its memory. Then bad input, each with the
 * driver's error code: registering a range twice, unregistering memory that
 * is not registered (or twice), unknown flags, NULL and empty ranges.
 * Registrations of disjoint bytes that share a page (two 100-byte blocks
 * side by side, and a third crossing into the next page) are accepted, as
 * driver 580 accepts them: each copies through its own bytes, answers its
 * own flags and range, and stays registered while the others are
 * unregistered; once all are, the memory is plain memory again and
 * registers anew.
 *
 * The kernel is PTX on a GPU and the simulated device's built-in
 * vector_add elsewhere, so the output is the same natively and through vgpu
 * (gpu/frameworks.sh compares the two).
 *
 * Build:  cc -std=c11 -O2 -Wall -o host_register host_register.c -ldl
 * Usage:  host_register [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <sys/mman.h>

enum { REGISTER_PORTABLE = 1, REGISTER_DEVICEMAP = 2, REGISTER_IOMEMORY = 4, REGISTER_READ_ONLY = 8 };
enum { DEV_CAN_USE_HOST_POINTER = 91, DEV_READ_ONLY_HOST_REGISTER = 113 };
enum { POINTER_MEMORY_TYPE = 2, POINTER_IS_MANAGED = 8, POINTER_RANGE_START = 11, POINTER_RANGE_SIZE = 12 };
enum { MEMORYTYPE_HOST = 1 };
enum {
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemAllocHost)(void **, unsigned int);
    CUresult (*MemAllocHost_v2)(void **, size_t);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemHostRegister)(void *, size_t, unsigned int);
    CUresult (*MemHostRegister_v1)(void *, size_t, unsigned int);
    CUresult (*MemHostUnregister)(void *);
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned int);
    CUresult (*MemHostGetFlags)(unsigned int *, void *);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemAllocHost, "cuMemAllocHost"),
    ENTRY(MemAllocHost_v2, "cuMemAllocHost_v2"),
    ENTRY(MemFreeHost, "cuMemFreeHost"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    ENTRY(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemHostRegister, "cuMemHostRegister_v2"),
    ENTRY(MemHostRegister_v1, "cuMemHostRegister"),
    ENTRY(MemHostUnregister, "cuMemHostUnregister"),
    ENTRY(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"),
    ENTRY(MemHostGetFlags, "cuMemHostGetFlags"),
    ENTRY(PointerGetAttribute, "cuPointerGetAttribute"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(LaunchKernel, "cuLaunchKernel"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* vector_add(const float *a, const float *b, float *c, int n): c[i] = a[i] + b[i]. */
static const char PTX[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                          ".visible .entry vector_add(.param .u64 pa, .param .u64 pb,\n"
                          "    .param .u64 pc, .param .u32 pn)\n{\n"
                          "  .reg .pred %p<2>;\n  .reg .b32 %r<6>;\n  .reg .f32 %f<4>;\n"
                          "  .reg .b64 %rd<11>;\n"
                          "  ld.param.u64 %rd1, [pa];\n  ld.param.u64 %rd2, [pb];\n"
                          "  ld.param.u64 %rd3, [pc];\n  ld.param.u32 %r1, [pn];\n"
                          "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n"
                          "  mov.u32 %r4, %tid.x;\n  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
                          "  setp.ge.s32 %p1, %r5, %r1;\n  @%p1 bra DONE;\n"
                          "  cvta.to.global.u64 %rd4, %rd1;\n  cvta.to.global.u64 %rd5, %rd2;\n"
                          "  cvta.to.global.u64 %rd6, %rd3;\n  mul.wide.s32 %rd7, %r5, 4;\n"
                          "  add.s64 %rd8, %rd4, %rd7;\n  add.s64 %rd9, %rd5, %rd7;\n"
                          "  add.s64 %rd10, %rd6, %rd7;\n  ld.global.f32 %f1, [%rd8];\n"
                          "  ld.global.f32 %f2, [%rd9];\n  add.f32 %f3, %f1, %f2;\n"
                          "  st.global.f32 [%rd10], %f3;\nDONE:\n  ret;\n}\n";
static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel vector_add\n";

#define N 4096
#define BYTES (3 * N * sizeof(float))

/* A kernel reads and writes registered pages through their device pointer. */
static void kernel_through(float *host, CUdeviceptr d)
{
    CUmodule mod;
    CUfunction fn;
    if (cu.ModuleLoadData(&mod, PTX) != CUDA_SUCCESS &&
        !EXPECT("module_load", cu.ModuleLoadData(&mod, SIM_MODULE), CUDA_SUCCESS))
        return;
    if (!EXPECT("module_get_function", cu.ModuleGetFunction(&fn, mod, "vector_add"), CUDA_SUCCESS))
        return;
    for (int i = 0; i < N; i++) {
        host[i] = (float)i;
        host[N + i] = 2.0f;
        host[2 * N + i] = 0.0f;
    }
    CUdeviceptr da = d, db = d + N * sizeof(float), dc = d + 2 * N * sizeof(float);
    int n = N;
    void *params[] = {&da, &db, &dc, &n};
    EXPECT("launch_on_registered",
           cu.LaunchKernel(fn, N / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    EXPECT("launch_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    int good = 1;
    for (int i = 0; i < N; i++)
        good &= host[2 * N + i] == (float)i + 2.0f;
    expect_true("cpu_sees_kernel_writes", good, "kernel stores not seen");
    EXPECT("module_unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
}

static void copies(unsigned int *host)
{
    CUdeviceptr d;
    CUstream s;
    if (!EXPECT("alloc_device", cu.MemAlloc(&d, BYTES), CUDA_SUCCESS))
        return;
    EXPECT("stream_create", cu.StreamCreate(&s, 0), CUDA_SUCCESS);
    EXPECT("memset_device", cu.MemsetD32(d, 0xABCD1234u, 3 * N), CUDA_SUCCESS);
    EXPECT("dtoh_async_into_registered", cu.MemcpyDtoHAsync(host, d, BYTES, s), CUDA_SUCCESS);
    EXPECT("dtoh_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    int good = 1;
    for (int i = 0; i < 3 * N; i++)
        good &= host[i] == 0xABCD1234u;
    expect_true("dtoh_registered_data", good, "copied bytes differ");
    for (int i = 0; i < 3 * N; i++)
        host[i] = (unsigned)i * 3u;
    EXPECT("htod_async_from_registered", cu.MemcpyHtoDAsync(d, host, BYTES, s), CUDA_SUCCESS);
    EXPECT("htod_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    static unsigned int back[3 * N];
    EXPECT("dtoh_back", cu.MemcpyDtoH(back, d, BYTES), CUDA_SUCCESS);
    expect_true("htod_registered_data", memcmp(back, host, BYTES) == 0, "bytes differ");
    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT("free_device", cu.MemFree(d), CUDA_SUCCESS);
}

/* A call that must fail: which error is the driver's to choose; its name is printed. */
static void expect_failure(const char *name, CUresult got)
{
    checks++;
    if (got != CUDA_SUCCESS) {
        printf("ok %s: %s\n", name, error_name(cu.GetErrorName, got));
        return;
    }
    failures++;
    printf("FAIL %s: succeeded, expected an error\n", name);
}

/* Device to `n` bytes of registered host memory at `host` and back from a
 * device copy of `pattern`: whether both directions carry the bytes. */
static int round_trip(unsigned char *host, size_t n, unsigned char pattern)
{
    CUdeviceptr d;
    if (cu.MemAlloc(&d, 4096) != CUDA_SUCCESS)
        return 0;
    unsigned char src[256], back[256];
    memset(src, pattern, n);
    int ok = cu.MemcpyHtoD(d, src, n) == CUDA_SUCCESS &&
             cu.MemcpyDtoH(host, d, n) == CUDA_SUCCESS && memcmp(host, src, n) == 0;
    for (size_t i = 0; i < n; i++)
        host[i] = (unsigned char)(pattern ^ i);
    ok = ok && cu.MemcpyHtoD(d, host, n) == CUDA_SUCCESS &&
         cu.MemcpyDtoH(back, d, n) == CUDA_SUCCESS && memcmp(back, host, n) == 0;
    cu.MemFree(d);
    return ok;
}

/* A kernel given the device pointers of two registrations in one page
 * adds a's floats into b's: b[i] = a[i] + b[i]. */
static void shared_kernel(float *a, float *b)
{
    CUmodule mod;
    CUfunction fn;
    if (cu.ModuleLoadData(&mod, PTX) != CUDA_SUCCESS &&
        !EXPECT("shared_module_load", cu.ModuleLoadData(&mod, SIM_MODULE), CUDA_SUCCESS))
        return;
    if (!EXPECT("shared_module_get_function", cu.ModuleGetFunction(&fn, mod, "vector_add"), CUDA_SUCCESS))
        return;
    for (int i = 0; i < 25; i++) {
        a[i] = (float)i;
        b[i] = 100.0f;
    }
    CUdeviceptr da = 0, db = 0;
    EXPECT("shared_kernel_pointer_a", cu.MemHostGetDevicePointer(&da, a, 0), CUDA_SUCCESS);
    EXPECT("shared_kernel_pointer_b", cu.MemHostGetDevicePointer(&db, b, 0), CUDA_SUCCESS);
    int n = 25;
    void *params[] = {&da, &db, &db, &n};
    EXPECT("shared_kernel_launch", cu.LaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL),
           CUDA_SUCCESS);
    EXPECT("shared_kernel_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    int good = 1;
    for (int i = 0; i < 25; i++)
        good &= b[i] == (float)i + 100.0f && a[i] == (float)i;
    expect_true("shared_kernel_writes", good, "kernel stores not seen");
    EXPECT("shared_module_unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
}

/* Registrations whose bytes are disjoint but whose pages are shared. */
static void shared_pages(void)
{
    unsigned char *page = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!expect_true("shared_mmap", page != MAP_FAILED, "mmap failed"))
        return;
    unsigned char *a = page, *b = page + 100, *c = page + 4000;
    memset(page, 0x77, 2 * 4096);
    unsigned int got = 0;
    EXPECT("shared_register_a", cu.MemHostRegister(a, 100, REGISTER_DEVICEMAP), CUDA_SUCCESS);
    EXPECT("shared_register_b", cu.MemHostRegister(b, 100, REGISTER_PORTABLE), CUDA_SUCCESS);
    EXPECT("shared_register_c_across_pages", cu.MemHostRegister(c, 200, 0), CUDA_SUCCESS);
    expect_true("shared_register_keeps_bytes", page[0] == 0x77 && page[150] == 0x77 && page[4150] == 0x77,
                "bytes changed by registering");
    EXPECT("shared_register_overlap", cu.MemHostRegister(b + 50, 100, 0),
           CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EXPECT("shared_flags_a", cu.MemHostGetFlags(&got, a + 10), CUDA_SUCCESS);
    expect_true("shared_flags_a_value", got == REGISTER_DEVICEMAP, "not DEVICEMAP");
    EXPECT("shared_flags_b", cu.MemHostGetFlags(&got, b + 10), CUDA_SUCCESS);
    expect_true("shared_flags_b_value", got == (REGISTER_PORTABLE | REGISTER_DEVICEMAP),
                "not PORTABLE | DEVICEMAP");
    CUdeviceptr start = 0;
    size_t size = 0;
    EXPECT("shared_range_start_b", cu.PointerGetAttribute(&start, POINTER_RANGE_START, (CUdeviceptr)(uintptr_t)(b + 10)),
           CUDA_SUCCESS);
    EXPECT("shared_range_size_b", cu.PointerGetAttribute(&size, POINTER_RANGE_SIZE, (CUdeviceptr)(uintptr_t)(b + 10)),
           CUDA_SUCCESS);
    expect_true("shared_range_b", start == (CUdeviceptr)(uintptr_t)b && size == 100, "not b's 100 bytes");
    CUdeviceptr d = 0;
    EXPECT("shared_device_pointer_b", cu.MemHostGetDevicePointer(&d, b, 0), CUDA_SUCCESS);
    expect_true("shared_copies_a", round_trip(a, 100, 0x11), "a's bytes did not travel");
    expect_true("shared_copies_b", round_trip(b, 100, 0x22), "b's bytes did not travel");
    expect_true("shared_copies_c", round_trip(c, 200, 0x33), "c's bytes did not travel");
    shared_kernel((float *)(void *)a, (float *)(void *)b);

    EXPECT("shared_unregister_a", cu.MemHostUnregister(a), CUDA_SUCCESS);
    expect_failure("shared_flags_a_after", cu.MemHostGetFlags(&got, a + 10));
    EXPECT("shared_flags_b_after_a", cu.MemHostGetFlags(&got, b + 10), CUDA_SUCCESS);
    EXPECT("shared_device_pointer_b_after_a", cu.MemHostGetDevicePointer(&d, b, 0), CUDA_SUCCESS);
    expect_true("shared_copies_b_after_a", round_trip(b, 100, 0x44), "b's bytes did not travel");
    expect_true("shared_copies_a_plain", round_trip(a, 100, 0x55), "a's bytes did not travel");
    expect_failure("shared_unregister_a_twice", cu.MemHostUnregister(a));
    EXPECT("shared_unregister_c", cu.MemHostUnregister(c), CUDA_SUCCESS);
    expect_true("shared_copies_b_after_c", round_trip(b, 100, 0x66), "b's bytes did not travel");
    EXPECT("shared_unregister_b", cu.MemHostUnregister(b), CUDA_SUCCESS);
    expect_failure("shared_flags_b_after", cu.MemHostGetFlags(&got, b + 10));
    expect_true("shared_unregister_keeps_bytes", b[0] == (0x66 ^ 0) && b[99] == (0x66 ^ 99) && c[0] == (0x33 ^ 0),
                "bytes changed by unregistering");
    EXPECT("shared_register_again", cu.MemHostRegister(a, 300, 0), CUDA_SUCCESS);
    expect_true("shared_copies_again", round_trip(a, 256, 0x77), "bytes did not travel");
    EXPECT("shared_unregister_again", cu.MemHostUnregister(a), CUDA_SUCCESS);
    munmap(page, 2 * 4096);
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) || !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("primary_ctx_retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("ctx_set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS))
        return checks_summary();

    /* The program's own anonymous pages, written before registration. */
    size_t len = 2 * BYTES;
    unsigned int *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!expect_true("mmap", mem != MAP_FAILED, "mmap failed"))
        return checks_summary();
    for (size_t i = 0; i < len / 4; i++)
        mem[i] = (unsigned)i ^ 0x5555u;
    unsigned int flags = REGISTER_PORTABLE | REGISTER_DEVICEMAP;
    if (!EXPECT("register", cu.MemHostRegister(mem, BYTES, flags), CUDA_SUCCESS))
        return checks_summary();
    int kept = 1;
    for (size_t i = 0; i < len / 4; i++)
        kept &= mem[i] == ((unsigned)i ^ 0x5555u);
    expect_true("register_keeps_bytes", kept, "bytes changed by registering");

    unsigned int got = 0;
    EXPECT("get_flags", cu.MemHostGetFlags(&got, mem), CUDA_SUCCESS);
    expect_true("get_flags_value", got == flags, "not PORTABLE | DEVICEMAP");
    EXPECT("get_flags_inside", cu.MemHostGetFlags(&got, mem + 100), CUDA_SUCCESS);
    CUdeviceptr d = 0;
    EXPECT("device_pointer", cu.MemHostGetDevicePointer(&d, mem, 0), CUDA_SUCCESS);
    int same = 0;
    cu.DeviceGetAttribute(&same, DEV_CAN_USE_HOST_POINTER, dev);
    if (same)
        expect_true("device_pointer_is_host_pointer", d == (CUdeviceptr)(uintptr_t)mem,
                    "device pointer differs from the host pointer");
    CUdeviceptr scratch = 0; /* the driver may write it even when it fails */
    EXPECT("device_pointer_flags", cu.MemHostGetDevicePointer(&scratch, mem, 1), CUDA_ERROR_INVALID_VALUE);
    unsigned int type = 0, managed = 7;
    EXPECT("pointer_memory_type",
           cu.PointerGetAttribute(&type, POINTER_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)mem),
           CUDA_SUCCESS);
    expect_true("pointer_memory_type_host", type == MEMORYTYPE_HOST, "not CU_MEMORYTYPE_HOST");
    EXPECT("pointer_is_managed",
           cu.PointerGetAttribute(&managed, POINTER_IS_MANAGED, (CUdeviceptr)(uintptr_t)mem),
           CUDA_SUCCESS);
    expect_true("pointer_is_managed_value", managed == 0, "IS_MANAGED is not 0");

    kernel_through((float *)mem, d);
    copies(mem);

    EXPECT("register_twice", cu.MemHostRegister(mem, BYTES, flags),
           CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EXPECT("register_overlap", cu.MemHostRegister((char *)mem + 4096, 4096, 0),
           CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EXPECT("unregister_inside", cu.MemHostUnregister((char *)mem + 4096), CUDA_ERROR_INVALID_VALUE);
    mem[5] = 555;
    EXPECT("unregister", cu.MemHostUnregister(mem), CUDA_SUCCESS);
    expect_true("unregister_keeps_bytes", mem[5] == 555 && mem[len / 4 - 1] == ((unsigned)(len / 4 - 1) ^ 0x5555u),
                "bytes changed by unregistering");
    EXPECT("unregister_twice", cu.MemHostUnregister(mem), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    static char never[64];
    EXPECT("unregister_never_registered", cu.MemHostUnregister(never),
           CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

    /* The first form and the other flags. */
    EXPECT("register_v1", cu.MemHostRegister_v1(mem, 4096, 0), CUDA_SUCCESS);
    EXPECT("get_flags_v1", cu.MemHostGetFlags(&got, mem), CUDA_SUCCESS);
    expect_true("get_flags_v1_value", got == REGISTER_DEVICEMAP, "not DEVICEMAP");
    EXPECT("unregister_v1", cu.MemHostUnregister(mem), CUDA_SUCCESS);
    EXPECT("get_flags_unregistered", cu.MemHostGetFlags(&got, mem), CUDA_ERROR_INVALID_VALUE);
    EXPECT("register_unaligned", cu.MemHostRegister((char *)mem + 100, 5000, 0), CUDA_SUCCESS);
    EXPECT("unregister_unaligned", cu.MemHostUnregister((char *)mem + 100), CUDA_SUCCESS);
    int read_only = 0;
    cu.DeviceGetAttribute(&read_only, DEV_READ_ONLY_HOST_REGISTER, dev);
    if (read_only) {
        EXPECT("register_read_only", cu.MemHostRegister(mem, 8192, REGISTER_READ_ONLY | REGISTER_DEVICEMAP),
               CUDA_SUCCESS);
        EXPECT("unregister_read_only", cu.MemHostUnregister(mem), CUDA_SUCCESS);
    }
    EXPECT("register_iomemory", cu.MemHostRegister(mem, 4096, REGISTER_IOMEMORY), CUDA_ERROR_INVALID_VALUE);
    EXPECT("register_unknown_flags", cu.MemHostRegister(mem, 4096, 0x10), CUDA_ERROR_INVALID_VALUE);
    EXPECT("register_null", cu.MemHostRegister(NULL, 4096, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT("register_empty", cu.MemHostRegister(mem, 0, 0), CUDA_ERROR_INVALID_VALUE);
    munmap(mem, len);

    void *p = NULL;
    /* The 32-bit first form answers CUDA_ERROR_INVALID_CONTEXT (driver 580). */
    EXPECT("alloc_host_v1", cu.MemAllocHost(&p, 4096), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT("alloc_host", cu.MemAllocHost_v2(&p, 4096), CUDA_SUCCESS);
    EXPECT("register_pinned", cu.MemHostRegister(p, 4096, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT("unregister_pinned", cu.MemHostUnregister(p), CUDA_ERROR_INVALID_VALUE);
    EXPECT("free_host", cu.MemFreeHost(p), CUDA_SUCCESS);
    shared_pages();
    EXPECT("primary_ctx_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
