/*
 * driver_smoke: exercises the CUDA Driver API through whatever libcuda.so.1
 * the loader finds (or the library named in argv[1]) and checks every result,
 * including the error codes of bad calls.
 *
 * It is written for vgpu's simulated device: the module it loads is the
 * simulator's text format. It needs no CUDA headers; the few types it uses
 * come from cuda_prelude.h and every entry point is resolved with dlsym().
 *
 * Build:  cc -std=c11 -O2 -Wall -o driver_smoke driver_smoke.c -ldl
 * Usage:  driver_smoke [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

enum { CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1 };

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetUuid)(CUuuid *, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*CtxCreate)(CUcontext *, unsigned int, CUdevice);
    CUresult (*CtxDestroy)(CUcontext);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*MemsetD16)(CUdeviceptr, unsigned short, size_t);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamQuery)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned int);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventQuery)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DriverGetVersion, "cuDriverGetVersion"),
    ENTRY(DeviceGetCount, "cuDeviceGetCount"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetName, "cuDeviceGetName"),
    ENTRY(DeviceGetUuid, "cuDeviceGetUuid_v2"),
    ENTRY(DeviceTotalMem, "cuDeviceTotalMem_v2"),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute"),
    ENTRY(CtxCreate, "cuCtxCreate_v2"),
    ENTRY(CtxDestroy, "cuCtxDestroy_v2"),
    ENTRY(CtxGetCurrent, "cuCtxGetCurrent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemGetInfo, "cuMemGetInfo_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    ENTRY(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    ENTRY(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    ENTRY(MemsetD8, "cuMemsetD8_v2"),
    ENTRY(MemsetD16, "cuMemsetD16_v2"),
    ENTRY(MemsetD32, "cuMemsetD32_v2"),
    ENTRY(MemsetD32Async, "cuMemsetD32Async"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamQuery, "cuStreamQuery"),
    ENTRY(EventCreate, "cuEventCreate"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(EventRecord, "cuEventRecord"),
    ENTRY(EventSynchronize, "cuEventSynchronize"),
    ENTRY(EventQuery, "cuEventQuery"),
    ENTRY(EventElapsedTime, "cuEventElapsedTime"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(LaunchKernel, "cuLaunchKernel"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel vector_add\n";

static void before_init(void)
{
    int count = -1;
    CUdevice dev;
    CUdeviceptr p;
    EXPECT("device_count_before_init", cu.DeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT("device_get_before_init", cu.DeviceGet(&dev, 0), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT("mem_alloc_before_init", cu.MemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
}

static int device_queries(CUdevice *dev)
{
    int count = 0, version = 0, threads = 0;
    char name[256] = {0};
    size_t total = 0;
    CUuuid uuid;

    EXPECT("driver_version", cu.DriverGetVersion(&version), CUDA_SUCCESS);
    expect_true("driver_version_positive", version > 0, "version is not positive");
    if (!EXPECT("device_count", cu.DeviceGetCount(&count), CUDA_SUCCESS) ||
        !expect_true("device_count_positive", count > 0, "no device"))
        return 0;
    EXPECT("device_count_null", cu.DeviceGetCount(NULL), CUDA_ERROR_INVALID_VALUE);
    if (!EXPECT("device_get", cu.DeviceGet(dev, 0), CUDA_SUCCESS))
        return 0;
    CUdevice other;
    EXPECT("device_get_out_of_range", cu.DeviceGet(&other, count), CUDA_ERROR_INVALID_DEVICE);
    EXPECT("device_get_null", cu.DeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT("device_name", cu.DeviceGetName(name, (int)sizeof name - 1, *dev), CUDA_SUCCESS);
    expect_true("device_name_nonempty", name[0] != '\0', "empty name");
    EXPECT("device_name_null", cu.DeviceGetName(NULL, 16, *dev), CUDA_ERROR_INVALID_VALUE);
    EXPECT("device_uuid", cu.DeviceGetUuid(&uuid, *dev), CUDA_SUCCESS);
    EXPECT("device_total_mem", cu.DeviceTotalMem(&total, *dev), CUDA_SUCCESS);
    expect_true("device_total_mem_positive", total > 0, "total memory is 0");
    EXPECT("device_attribute",
           cu.DeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, *dev),
           CUDA_SUCCESS);
    expect_true("device_attribute_positive", threads > 0, "max threads per block is not positive");
    return 1;
}

static void memory(void)
{
    enum { N = 4096 };
    static unsigned char in[N], out[N];
    CUdeviceptr a = 0, b = 0;
    size_t free_mem = 0, total_mem = 0;

    EXPECT("mem_alloc_null", cu.MemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr z;
    EXPECT("mem_alloc_zero", cu.MemAlloc(&z, 0), CUDA_ERROR_INVALID_VALUE);
    if (!EXPECT("mem_alloc", cu.MemAlloc(&a, N), CUDA_SUCCESS) ||
        !EXPECT("mem_alloc_second", cu.MemAlloc(&b, N), CUDA_SUCCESS))
        return;
    EXPECT("mem_get_info", cu.MemGetInfo(&free_mem, &total_mem), CUDA_SUCCESS);
    expect_true("mem_get_info_sane", free_mem <= total_mem && total_mem > 0, "free > total or total 0");

    for (int i = 0; i < N; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    EXPECT("memcpy_htod", cu.MemcpyHtoD(a, in, N), CUDA_SUCCESS);
    EXPECT("memcpy_dtod", cu.MemcpyDtoD(b, a, N), CUDA_SUCCESS);
    memset(out, 0, N);
    EXPECT("memcpy_dtoh", cu.MemcpyDtoH(out, b, N), CUDA_SUCCESS);
    expect_true("memcpy_round_trip", memcmp(in, out, N) == 0, "bytes differ after HtoD, DtoD, DtoH");

    EXPECT("memcpy_htod_beyond_allocation", cu.MemcpyHtoD(a + N - 16, in, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT("memcpy_dtoh_beyond_allocation", cu.MemcpyDtoH(out, a + 16, N), CUDA_ERROR_INVALID_VALUE);

    EXPECT("memset_d8", cu.MemsetD8(a, 0xab, N), CUDA_SUCCESS);
    EXPECT("memset_d8_read", cu.MemcpyDtoH(out, a, N), CUDA_SUCCESS);
    int ok8 = 1;
    for (int i = 0; i < N; i++)
        ok8 &= out[i] == 0xab;
    expect_true("memset_d8_value", ok8, "bytes are not 0xab");

    EXPECT("memset_d16", cu.MemsetD16(a, 0x1234, N / 2), CUDA_SUCCESS);
    uint16_t h16[N / 2];
    EXPECT("memset_d16_read", cu.MemcpyDtoH(h16, a, N), CUDA_SUCCESS);
    int ok16 = 1;
    for (int i = 0; i < N / 2; i++)
        ok16 &= h16[i] == 0x1234;
    expect_true("memset_d16_value", ok16, "halfwords are not 0x1234");

    EXPECT("memset_d32", cu.MemsetD32(a, 0xdeadbeefu, N / 4), CUDA_SUCCESS);
    uint32_t h32[N / 4];
    EXPECT("memset_d32_read", cu.MemcpyDtoH(h32, a, N), CUDA_SUCCESS);
    int ok32 = 1;
    for (int i = 0; i < N / 4; i++)
        ok32 &= h32[i] == 0xdeadbeefu;
    expect_true("memset_d32_value", ok32, "words are not 0xdeadbeef");

    EXPECT("mem_free", cu.MemFree(a), CUDA_SUCCESS);
    EXPECT("mem_free_twice", cu.MemFree(a), CUDA_ERROR_INVALID_VALUE);
    EXPECT("mem_free_second", cu.MemFree(b), CUDA_SUCCESS);
}

static void streams_and_events(void)
{
    enum { N = 1024 };
    static uint32_t in[N], out[N];
    CUstream s;
    CUevent start, stop;
    CUdeviceptr d;
    float ms = -1.0f;

    if (!EXPECT("stream_create", cu.StreamCreate(&s, 0), CUDA_SUCCESS))
        return;
    EXPECT("stream_create_null", cu.StreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT("event_create_start", cu.EventCreate(&start, 0), CUDA_SUCCESS);
    EXPECT("event_create_stop", cu.EventCreate(&stop, 0), CUDA_SUCCESS);
    if (!EXPECT("stream_alloc", cu.MemAlloc(&d, sizeof in), CUDA_SUCCESS))
        return;
    for (int i = 0; i < N; i++)
        in[i] = (uint32_t)i * 3u;

    EXPECT("event_record_start", cu.EventRecord(start, s), CUDA_SUCCESS);
    EXPECT("memcpy_htod_async", cu.MemcpyHtoDAsync(d, in, sizeof in, s), CUDA_SUCCESS);
    EXPECT("memset_d32_async", cu.MemsetD32Async(d, 7u, N / 2, s), CUDA_SUCCESS);
    EXPECT("memcpy_dtoh_async", cu.MemcpyDtoHAsync(out, d, sizeof out, s), CUDA_SUCCESS);
    EXPECT("event_record_stop", cu.EventRecord(stop, s), CUDA_SUCCESS);
    EXPECT("stream_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT("event_synchronize", cu.EventSynchronize(stop), CUDA_SUCCESS);
    EXPECT("stream_query", cu.StreamQuery(s), CUDA_SUCCESS);
    EXPECT("event_query", cu.EventQuery(stop), CUDA_SUCCESS);
    EXPECT("event_elapsed_time", cu.EventElapsedTime(&ms, start, stop), CUDA_SUCCESS);
    expect_true("event_elapsed_time_nonnegative", ms >= 0.0f, "elapsed time is negative");
    EXPECT("event_elapsed_time_null", cu.EventElapsedTime(NULL, start, stop), CUDA_ERROR_INVALID_VALUE);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= out[i] == (i < N / 2 ? 7u : (uint32_t)i * 3u);
    expect_true("stream_ordered_result", ok, "async copy/memset results are wrong or out of order");

    EXPECT("stream_free", cu.MemFree(d), CUDA_SUCCESS);
    EXPECT("event_destroy_start", cu.EventDestroy(start), CUDA_SUCCESS);
    EXPECT("event_destroy_stop", cu.EventDestroy(stop), CUDA_SUCCESS);
    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT("stream_synchronize_destroyed", cu.StreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
}

static void module_and_launch(void)
{
    enum { N = 1000 };
    static float a[N], b[N], c[N];
    CUmodule mod;
    CUfunction fn, missing;
    CUdeviceptr da, db, dc;
    int n = N;

    static const char garbage[] = "\x01\x02 this is not a module";
    CUmodule bad;
    EXPECT("module_load_garbage", cu.ModuleLoadData(&bad, garbage), CUDA_ERROR_INVALID_IMAGE);
    if (!EXPECT("module_load", cu.ModuleLoadData(&mod, SIM_MODULE), CUDA_SUCCESS))
        return;
    EXPECT("module_get_function_missing", cu.ModuleGetFunction(&missing, mod, "no_such_kernel"),
           CUDA_ERROR_NOT_FOUND);
    if (!EXPECT("module_get_function", cu.ModuleGetFunction(&fn, mod, "vector_add"), CUDA_SUCCESS))
        return;

    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = (float)(2 * i) + 0.5f;
        c[i] = 0.0f;
    }
    EXPECT("launch_alloc_a", cu.MemAlloc(&da, sizeof a), CUDA_SUCCESS);
    EXPECT("launch_alloc_b", cu.MemAlloc(&db, sizeof b), CUDA_SUCCESS);
    EXPECT("launch_alloc_c", cu.MemAlloc(&dc, sizeof c), CUDA_SUCCESS);
    EXPECT("launch_copy_a", cu.MemcpyHtoD(da, a, sizeof a), CUDA_SUCCESS);
    EXPECT("launch_copy_b", cu.MemcpyHtoD(db, b, sizeof b), CUDA_SUCCESS);
    void *params[] = {&da, &db, &dc, &n};
    EXPECT("launch_kernel", cu.LaunchKernel(fn, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL),
           CUDA_SUCCESS);
    EXPECT("launch_synchronize", cu.CtxSynchronize(), CUDA_SUCCESS);
    EXPECT("launch_copy_c", cu.MemcpyDtoH(c, dc, sizeof c), CUDA_SUCCESS);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= c[i] == a[i] + b[i];
    expect_true("launch_result", ok, "c[i] != a[i] + b[i]");

    EXPECT("launch_free_a", cu.MemFree(da), CUDA_SUCCESS);
    EXPECT("launch_free_b", cu.MemFree(db), CUDA_SUCCESS);
    EXPECT("launch_free_c", cu.MemFree(dc), CUDA_SUCCESS);
    EXPECT("module_unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));

    before_init();
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS))
        goto done;

    CUdevice dev;
    if (!device_queries(&dev))
        goto done;

    CUcontext ctx = NULL, current = NULL;
    if (!EXPECT("ctx_create", cu.CtxCreate(&ctx, 0, dev), CUDA_SUCCESS))
        goto done;
    EXPECT("ctx_get_current", cu.CtxGetCurrent(&current), CUDA_SUCCESS);
    expect_true("ctx_is_current", current == ctx, "the new context is not current");

    memory();
    streams_and_events();
    module_and_launch();

    EXPECT("ctx_destroy", cu.CtxDestroy(ctx), CUDA_SUCCESS);
    CUdeviceptr p;
    EXPECT("mem_alloc_without_context", cu.MemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);

done:
    return checks_summary();
}
