/*
 * managed: managed memory as CUDA programs use it. cuMemAllocManaged pages
 * that the CPU writes and a kernel reads, and that a kernel writes and the
 * CPU reads after synchronization; copies and memsets through them; the
 * pointer attributes of managed memory; advice, prefetches and stream
 * attachment read back with cuMemRangeGetAttribute(s); and bad input, each
 * with the driver's error code: advice on memory that is not managed, a
 * prefetch to a device that does not exist, attribute sizes that do not
 * fit, flags that do not exist. Then pitched allocations and
 * CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, the rest of the memory calls.
 *
 * The kernel is PTX on a GPU and the simulated device's built-in
 * vector_add elsewhere (the PTX image is tried first), so the program runs
 * on both, and its output is the same natively and through vgpu
 * (gpu/frameworks.sh compares the two).
 *
 * Build:  cc -std=c11 -O2 -Wall -o managed managed.c -ldl
 * Usage:  managed [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef struct {
    int type; /* CUmemLocationType */
    int id;
} CUmemLocation;

enum { ATTACH_GLOBAL = 1, ATTACH_HOST = 2, ATTACH_SINGLE = 4 };
enum { DEV_MANAGED_MEMORY = 83, DEV_CONCURRENT_MANAGED_ACCESS = 89 };
enum {
    ADVISE_SET_READ_MOSTLY = 1,
    ADVISE_UNSET_READ_MOSTLY = 2,
    ADVISE_SET_PREFERRED_LOCATION = 3,
    ADVISE_SET_ACCESSED_BY = 5,
    ADVISE_UNSET_ACCESSED_BY = 6,
};
enum {
    RANGE_READ_MOSTLY = 1,
    RANGE_PREFERRED_LOCATION = 2,
    RANGE_ACCESSED_BY = 3,
    RANGE_LAST_PREFETCH_LOCATION = 4,
    RANGE_PREFERRED_LOCATION_TYPE = 5,
    RANGE_PREFERRED_LOCATION_ID = 6,
    RANGE_LAST_PREFETCH_LOCATION_TYPE = 7,
    RANGE_LAST_PREFETCH_LOCATION_ID = 8,
};
enum { LOCATION_DEVICE = 1, LOCATION_HOST = 2 };
enum {
    POINTER_CONTEXT = 1,
    POINTER_SYNC_MEMOPS = 6,
    POINTER_DEVICE_POINTER = 3,
    POINTER_HOST_POINTER = 4,
    POINTER_IS_MANAGED = 8,
    POINTER_DEVICE_ORDINAL = 9,
    POINTER_RANGE_START = 11,
    POINTER_RANGE_SIZE = 12,
    POINTER_MAPPED = 13,
};
enum { DEVICE_CPU = -1, DEVICE_INVALID = -2 };

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAllocManaged)(CUdeviceptr *, size_t, unsigned int);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemAdvise)(CUdeviceptr, size_t, int, CUdevice);
    CUresult (*MemAdvise_v2)(CUdeviceptr, size_t, int, CUmemLocation);
    CUresult (*MemPrefetchAsync)(CUdeviceptr, size_t, CUdevice, CUstream);
    CUresult (*MemPrefetchAsync_v2)(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream);
    CUresult (*MemRangeGetAttribute)(void *, size_t, int, CUdeviceptr, size_t);
    CUresult (*MemRangeGetAttributes)(void **, size_t *, int *, size_t, CUdeviceptr, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamAttachMemAsync)(CUstream, CUdeviceptr, size_t, unsigned int);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*PointerSetAttribute)(const void *, int, CUdeviceptr);
    CUresult (*MemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
    CUresult (*MemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
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
    ENTRY(MemAllocManaged, "cuMemAllocManaged"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemAdvise, "cuMemAdvise"),
    ENTRY(MemAdvise_v2, "cuMemAdvise_v2"),
    ENTRY(MemPrefetchAsync, "cuMemPrefetchAsync"),
    ENTRY(MemPrefetchAsync_v2, "cuMemPrefetchAsync_v2"),
    ENTRY(MemRangeGetAttribute, "cuMemRangeGetAttribute"),
    ENTRY(MemRangeGetAttributes, "cuMemRangeGetAttributes"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamAttachMemAsync, "cuStreamAttachMemAsync"),
    ENTRY(PointerGetAttribute, "cuPointerGetAttribute"),
    ENTRY(PointerSetAttribute, "cuPointerSetAttribute"),
    ENTRY(MemAllocPitch, "cuMemAllocPitch_v2"),
    ENTRY(MemGetAddressRange, "cuMemGetAddressRange_v2"),
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

static int range_int(int attr, CUdeviceptr p, size_t n)
{
    int v = 12345;
    if (cu.MemRangeGetAttribute(&v, sizeof v, attr, p, n) != CUDA_SUCCESS)
        return 12345;
    return v;
}

/* CPU stores seen by a kernel, the kernel's stores seen by the CPU. */
static void coherence(CUdeviceptr m)
{
    CUmodule mod;
    CUfunction fn;
    if (cu.ModuleLoadData(&mod, PTX) != CUDA_SUCCESS &&
        !EXPECT("module_load", cu.ModuleLoadData(&mod, SIM_MODULE), CUDA_SUCCESS))
        return;
    if (!EXPECT("module_get_function", cu.ModuleGetFunction(&fn, mod, "vector_add"), CUDA_SUCCESS))
        return;
    float *a = (float *)(uintptr_t)m, *b = a + N, *c = b + N;
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 0.5f * (float)i;
        c[i] = -1.0f;
    }
    CUdeviceptr da = m, db = m + N * sizeof(float), dc = m + 2 * N * sizeof(float);
    int n = N;
    void *params[] = {&da, &db, &dc, &n};
    EXPECT("launch_on_managed", cu.LaunchKernel(fn, N / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL),
           CUDA_SUCCESS);
    EXPECT("synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    int good = 1;
    for (int i = 0; i < N; i++)
        good &= c[i] == a[i] + b[i];
    expect_true("cpu_sees_kernel_writes", good, "c[i] != a[i] + b[i] after synchronization");

    /* Copies and memsets into managed memory, read by the CPU. */
    static unsigned int host[N];
    for (int i = 0; i < N; i++)
        host[i] = 0xC0DE0000u + (unsigned)i;
    EXPECT("htod_into_managed", cu.MemcpyHtoD(m, host, sizeof host), CUDA_SUCCESS);
    unsigned int *u = (unsigned int *)(uintptr_t)m;
    good = 1;
    for (int i = 0; i < N; i++)
        good &= u[i] == host[i];
    expect_true("cpu_sees_htod", good, "bytes copied in differ");
    EXPECT("memset_managed", cu.MemsetD32(m + N * 4, 0x5A5A5A5Au, N), CUDA_SUCCESS);
    EXPECT("memset_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    expect_true("cpu_sees_memset", u[N] == 0x5A5A5A5Au && u[2 * N - 1] == 0x5A5A5A5Au,
                "memset value not seen");
    u[7] = 77;
    unsigned int back[8] = {0};
    EXPECT("dtoh_from_managed", cu.MemcpyDtoH(back, m, sizeof back), CUDA_SUCCESS);
    expect_true("dtoh_sees_cpu_store", back[7] == 77 && back[0] == host[0], "CPU store not copied");
    EXPECT("dtod_managed", cu.MemcpyDtoD(m + 2 * N * 4, m, 64), CUDA_SUCCESS);
    EXPECT("dtod_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    expect_true("cpu_sees_dtod", u[2 * N + 7] == 77, "device-to-device copy not seen");
    EXPECT("module_unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
}

static void pointer_attributes(CUdeviceptr m, size_t bytes, CUcontext ctx)
{
    unsigned int managed = 0, mapped = 0;
    int ordinal = -1;
    CUdeviceptr dptr = 0, start = 0;
    void *hptr = NULL;
    size_t size = 0;
    CUcontext owner = NULL;
    EXPECT("pointer_is_managed", cu.PointerGetAttribute(&managed, POINTER_IS_MANAGED, m + 8),
           CUDA_SUCCESS);
    expect_true("pointer_is_managed_value", managed == 1, "IS_MANAGED is not 1");
    EXPECT("pointer_device_pointer", cu.PointerGetAttribute(&dptr, POINTER_DEVICE_POINTER, m + 8),
           CUDA_SUCCESS);
    expect_true("pointer_device_pointer_value", dptr == m + 8, "device pointer differs");
    EXPECT("pointer_host_pointer", cu.PointerGetAttribute(&hptr, POINTER_HOST_POINTER, m + 8),
           CUDA_SUCCESS);
    expect_true("pointer_host_pointer_value", (CUdeviceptr)(uintptr_t)hptr == m + 8,
                "host pointer differs");
    EXPECT("pointer_range_start", cu.PointerGetAttribute(&start, POINTER_RANGE_START, m + 8),
           CUDA_SUCCESS);
    expect_true("pointer_range_start_value", start == m, "range start differs");
    EXPECT("pointer_range_size", cu.PointerGetAttribute(&size, POINTER_RANGE_SIZE, m + 8),
           CUDA_SUCCESS);
    expect_true("pointer_range_size_value", size == bytes, "range size differs");
    EXPECT("pointer_device_ordinal", cu.PointerGetAttribute(&ordinal, POINTER_DEVICE_ORDINAL, m),
           CUDA_SUCCESS);
    expect_true("pointer_device_ordinal_value", ordinal == 0, "ordinal is not 0");
    EXPECT("pointer_context", cu.PointerGetAttribute(&owner, POINTER_CONTEXT, m), CUDA_SUCCESS);
    expect_true("pointer_context_value", owner == ctx, "context differs");
    EXPECT("pointer_mapped", cu.PointerGetAttribute(&mapped, POINTER_MAPPED, m), CUDA_SUCCESS);
    expect_true("pointer_mapped_value", mapped == 1, "MAPPED is not 1");
    CUdeviceptr base = 0;
    size = 0;
    EXPECT("address_range", cu.MemGetAddressRange(&base, &size, m + 1000), CUDA_SUCCESS);
    expect_true("address_range_value", base == m && size == bytes, "base or size differs");
}

static void advice(CUdeviceptr m, size_t bytes, CUstream s)
{
    size_t page = 65536;
    EXPECT("advise_read_mostly", cu.MemAdvise(m, bytes, ADVISE_SET_READ_MOSTLY, 0), CUDA_SUCCESS);
    expect_true("range_read_mostly", range_int(RANGE_READ_MOSTLY, m, bytes) == 1, "not 1");
    EXPECT("advise_unset_read_mostly_part", cu.MemAdvise(m, page, ADVISE_UNSET_READ_MOSTLY, 0),
           CUDA_SUCCESS);
    expect_true("range_read_mostly_mixed", range_int(RANGE_READ_MOSTLY, m, bytes) == 0, "not 0");
    expect_true("range_read_mostly_rest",
                range_int(RANGE_READ_MOSTLY, m + page, bytes - page) == 1, "not 1");

    expect_true("range_preferred_none", range_int(RANGE_PREFERRED_LOCATION, m, bytes) == DEVICE_INVALID,
                "not CU_DEVICE_INVALID");
    EXPECT("advise_preferred_device",
           cu.MemAdvise(m, bytes, ADVISE_SET_PREFERRED_LOCATION, 0), CUDA_SUCCESS);
    expect_true("range_preferred_device", range_int(RANGE_PREFERRED_LOCATION, m, bytes) == 0,
                "not device 0");
    CUmemLocation host = {LOCATION_HOST, 0};
    EXPECT("advise_v2_preferred_host",
           cu.MemAdvise_v2(m, page, ADVISE_SET_PREFERRED_LOCATION, host), CUDA_SUCCESS);
    expect_true("range_preferred_host", range_int(RANGE_PREFERRED_LOCATION, m, page) == DEVICE_CPU,
                "not CU_DEVICE_CPU");
    expect_true("range_preferred_mixed",
                range_int(RANGE_PREFERRED_LOCATION, m, bytes) == DEVICE_INVALID, "not invalid");
    expect_true("range_preferred_type_host",
                range_int(RANGE_PREFERRED_LOCATION_TYPE, m, page) == LOCATION_HOST, "not host");
    expect_true("range_preferred_type_device",
                range_int(RANGE_PREFERRED_LOCATION_TYPE, m + page, page) == LOCATION_DEVICE,
                "not device");
    expect_true("range_preferred_id_device",
                range_int(RANGE_PREFERRED_LOCATION_ID, m + page, page) == 0, "not 0");

    int by[2] = {7, 7};
    EXPECT("advise_accessed_by", cu.MemAdvise(m, bytes, ADVISE_SET_ACCESSED_BY, 0), CUDA_SUCCESS);
    EXPECT("range_accessed_by", cu.MemRangeGetAttribute(by, sizeof by, RANGE_ACCESSED_BY, m, bytes),
           CUDA_SUCCESS);
    expect_true("range_accessed_by_value", by[0] == 0 && by[1] == DEVICE_INVALID,
                "not {0, CU_DEVICE_INVALID}");
    EXPECT("advise_unset_accessed_by", cu.MemAdvise(m, bytes, ADVISE_UNSET_ACCESSED_BY, 0),
           CUDA_SUCCESS);
    EXPECT("range_accessed_by_none",
           cu.MemRangeGetAttribute(by, sizeof by, RANGE_ACCESSED_BY, m, bytes), CUDA_SUCCESS);
    expect_true("range_accessed_by_none_value", by[0] == DEVICE_INVALID && by[1] == DEVICE_INVALID,
                "not all CU_DEVICE_INVALID");

    int concurrent = 0;
    cu.DeviceGetAttribute(&concurrent, DEV_CONCURRENT_MANAGED_ACCESS, 0);
    if (concurrent) {
        EXPECT("prefetch_device", cu.MemPrefetchAsync(m, bytes, 0, s), CUDA_SUCCESS);
        EXPECT("prefetch_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
        expect_true("range_last_prefetch_device",
                    range_int(RANGE_LAST_PREFETCH_LOCATION, m, bytes) == 0, "not device 0");
        EXPECT("prefetch_v2_host", cu.MemPrefetchAsync_v2(m, page, host, 0, s), CUDA_SUCCESS);
        EXPECT("prefetch_v2_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
        expect_true("range_last_prefetch_host",
                    range_int(RANGE_LAST_PREFETCH_LOCATION, m, page) == DEVICE_CPU, "not CPU");
        expect_true("range_last_prefetch_type_host",
                    range_int(RANGE_LAST_PREFETCH_LOCATION_TYPE, m, page) == LOCATION_HOST, "not host");
        expect_true("range_last_prefetch_mixed",
                    range_int(RANGE_LAST_PREFETCH_LOCATION, m, bytes) == DEVICE_INVALID, "not invalid");
        CUmemLocation dev0 = {LOCATION_DEVICE, 0};
        EXPECT("prefetch_v2_flags", cu.MemPrefetchAsync_v2(m, page, dev0, 1, s),
               CUDA_ERROR_INVALID_VALUE);
        EXPECT("prefetch_invalid_device", cu.MemPrefetchAsync(m, bytes, 99, s),
               CUDA_ERROR_INVALID_DEVICE);
    }

    int rm = -1, pref = -1;
    void *data[] = {&rm, &pref};
    size_t sizes[] = {sizeof rm, sizeof pref};
    int attrs[] = {RANGE_READ_MOSTLY, RANGE_PREFERRED_LOCATION};
    EXPECT("range_attributes", cu.MemRangeGetAttributes(data, sizes, attrs, 2, m + page, page),
           CUDA_SUCCESS);
    expect_true("range_attributes_values", rm == 1 && pref == 0, "not {1, 0}");

    int v;
    EXPECT("range_attribute_size", cu.MemRangeGetAttribute(&v, 8, RANGE_READ_MOSTLY, m, bytes),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("range_attribute_unknown", cu.MemRangeGetAttribute(&v, 4, 99, m, bytes),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("range_attribute_past_end",
           cu.MemRangeGetAttribute(&v, 4, RANGE_READ_MOSTLY, m, bytes + (1 << 20)),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("advise_unknown", cu.MemAdvise(m, bytes, 99, 0), CUDA_ERROR_INVALID_VALUE);
    CUmemLocation dev99 = {LOCATION_DEVICE, 99};
    EXPECT("advise_invalid_device", cu.MemAdvise_v2(m, bytes, ADVISE_SET_PREFERRED_LOCATION, dev99),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("advise_size_0", cu.MemAdvise(m, 0, ADVISE_SET_READ_MOSTLY, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT("advise_unaligned", cu.MemAdvise(m + 100, 1000, ADVISE_SET_READ_MOSTLY, 0), CUDA_SUCCESS);

    EXPECT("attach_host", cu.StreamAttachMemAsync(s, m, 0, ATTACH_HOST), CUDA_SUCCESS);
    EXPECT("attach_single", cu.StreamAttachMemAsync(s, m, 0, ATTACH_SINGLE), CUDA_SUCCESS);
    EXPECT("attach_part", cu.StreamAttachMemAsync(s, m, 4096, ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
    EXPECT("attach_global", cu.StreamAttachMemAsync(s, m, 0, ATTACH_GLOBAL), CUDA_SUCCESS);
    EXPECT("attach_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT("attach_flags", cu.StreamAttachMemAsync(s, m, 0, 3), CUDA_ERROR_INVALID_VALUE);
}

/* Managed calls on memory that is not managed. */
static void not_managed(void)
{
    CUdeviceptr d;
    int v;
    if (!EXPECT("alloc_device", cu.MemAlloc(&d, 1 << 16), CUDA_SUCCESS))
        return;
    EXPECT("advise_device_memory", cu.MemAdvise(d, 1 << 16, ADVISE_SET_READ_MOSTLY, 0),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("range_attribute_device_memory",
           cu.MemRangeGetAttribute(&v, 4, RANGE_READ_MOSTLY, d, 1 << 16), CUDA_ERROR_INVALID_VALUE);
    unsigned int managed = 7;
    EXPECT("pointer_is_managed_device",
           cu.PointerGetAttribute(&managed, POINTER_IS_MANAGED, d), CUDA_SUCCESS);
    expect_true("pointer_is_managed_device_value", managed == 0, "IS_MANAGED is not 0");
    EXPECT("prefetch_device_memory", cu.MemPrefetchAsync(d, 1 << 16, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT("attach_device_memory", cu.StreamAttachMemAsync(NULL, d, 0, ATTACH_HOST), CUDA_ERROR_INVALID_VALUE);
    EXPECT("free_device", cu.MemFree(d), CUDA_SUCCESS);
}

/* The rest of the memory calls: pitched allocations and SYNC_MEMOPS. */
static void memory_rest(CUdeviceptr m)
{
    CUdeviceptr d = 0;
    size_t pitch = 0;
    if (EXPECT("alloc_pitch", cu.MemAllocPitch(&d, &pitch, 100, 10, 4), CUDA_SUCCESS)) {
        expect_true("alloc_pitch_holds_row", pitch >= 100 && pitch % 32 == 0,
                    "pitch smaller than a row or not 32-byte aligned");
        static unsigned char rows[10 * 4096], back[10 * 4096];
        for (size_t i = 0; i < sizeof rows; i++)
            rows[i] = (unsigned char)(i * 7);
        EXPECT("pitch_copy_in", cu.MemcpyHtoD(d, rows, pitch * 10), CUDA_SUCCESS);
        EXPECT("pitch_copy_out", cu.MemcpyDtoH(back, d, pitch * 10), CUDA_SUCCESS);
        expect_true("pitch_round_trip", memcmp(rows, back, pitch * 10) == 0, "bytes differ");
        EXPECT("pitch_copy_past_end", cu.MemcpyHtoD(d, rows, pitch * 10 + 1), CUDA_ERROR_INVALID_VALUE);
        unsigned int one = 1, got = 0;
        EXPECT("set_sync_memops", cu.PointerSetAttribute(&one, POINTER_SYNC_MEMOPS, d), CUDA_SUCCESS);
        EXPECT("get_sync_memops", cu.PointerGetAttribute(&got, POINTER_SYNC_MEMOPS, d), CUDA_SUCCESS);
        expect_true("sync_memops_set", got == 1, "SYNC_MEMOPS is not 1");
        EXPECT("set_context_attribute", cu.PointerSetAttribute(&one, POINTER_CONTEXT, d),
               CUDA_ERROR_INVALID_VALUE);
        EXPECT("free_pitch", cu.MemFree(d), CUDA_SUCCESS);
    }
    EXPECT("alloc_pitch_element_3", cu.MemAllocPitch(&d, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
    unsigned int on = 7;
    EXPECT("get_sync_memops_managed", cu.PointerGetAttribute(&on, POINTER_SYNC_MEMOPS, m), CUDA_SUCCESS);
    expect_true("sync_memops_managed", on == 1, "SYNC_MEMOPS of managed memory is not 1");
    unsigned int one = 1;
    EXPECT("set_sync_memops_managed", cu.PointerSetAttribute(&one, POINTER_SYNC_MEMOPS, m), CUDA_SUCCESS);
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
    int supported = 0;
    EXPECT("attribute_managed_memory", cu.DeviceGetAttribute(&supported, DEV_MANAGED_MEMORY, dev),
           CUDA_SUCCESS);
    expect_true("managed_memory_supported", supported == 1, "the device has no managed memory");

    CUdeviceptr m = 0, bad;
    size_t bytes = 4 * 65536 + 100; /* more than the three arrays of `coherence` */
    EXPECT("alloc_managed_flags_0", cu.MemAllocManaged(&bad, 4096, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT("alloc_managed_flags_3", cu.MemAllocManaged(&bad, 4096, 3), CUDA_ERROR_INVALID_VALUE);
    EXPECT("alloc_managed_size_0", cu.MemAllocManaged(&bad, 0, ATTACH_GLOBAL),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT("alloc_managed_null", cu.MemAllocManaged(NULL, 4096, ATTACH_GLOBAL),
           CUDA_ERROR_INVALID_VALUE);
    if (!EXPECT("alloc_managed", cu.MemAllocManaged(&m, bytes, ATTACH_GLOBAL), CUDA_SUCCESS))
        return checks_summary();
    CUstream s;
    EXPECT("stream_create", cu.StreamCreate(&s, 0), CUDA_SUCCESS);

    coherence(m);
    pointer_attributes(m, bytes, ctx);
    advice(m, 4 * 65536, s);
    not_managed();
    memory_rest(m);

    CUdeviceptr h = 0;
    EXPECT("alloc_managed_host", cu.MemAllocManaged(&h, 1000, ATTACH_HOST), CUDA_SUCCESS);
    ((volatile char *)(uintptr_t)h)[999] = 9;
    EXPECT("free_managed_host", cu.MemFree(h), CUDA_SUCCESS);
    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT("free_managed", cu.MemFree(m), CUDA_SUCCESS);
    if (invalid_handle_checks())
        EXPECT("free_managed_twice", cu.MemFree(m), CUDA_ERROR_INVALID_VALUE);
    EXPECT("primary_ctx_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
