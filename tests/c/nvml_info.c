/*
 * nvml_info: what a monitoring tool asks NVML first (init, device count,
 * name, memory, compute processes), through whatever libnvidia-ml.so.1 the
 * loader finds, each answer checked against the CUDA Driver API of the same
 * process; and an allocation of this process counted in the device's memory.
 *
 * Build:  cc -std=c11 -O2 -Wall -o nvml_info nvml_info.c -ldl
 * Usage:  nvml_info [processes]
 *   processes: also check that this process is listed on device 0 with at
 *   least its allocation (where the process sees its own pid as NVML
 *   reports it: vgpu, or a native run in the host's pid namespace).
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary;
 * every line is the same natively and through vgpu.
 * Exit:   0 every check passed; 1 a check failed; 2 a library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

/* nvmlProcessInfo_t, the form of _v3. */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

/* The CUDA calls, by area: the devices, the primary context, memory. */
static struct {
    CUresult (*Init)(unsigned int), (*DeviceGetCount)(int *), (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice), (*DevicePrimaryCtxRelease)(CUdevice),
        (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t), (*MemFree)(CUdeviceptr);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry cu_table[] = {
    ENTRY(Init, "cuInit"), ENTRY(DeviceGetCount, "cuDeviceGetCount"),
    ENTRY(DeviceGetName, "cuDeviceGetName"), ENTRY(GetErrorName, "cuGetErrorName"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"), ENTRY(MemFree, "cuMemFree_v2"),
};

static struct {
    int (*Init)(void);
    int (*Shutdown)(void);
    int (*DeviceGetCount)(unsigned int *);
    int (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t *);
    int (*DeviceGetName)(nvmlDevice_t, char *, unsigned int);
    int (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
    int (*DeviceGetComputeRunningProcesses)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
} nvml;

static const struct cu_entry nvml_table[] = {
    { (void **)&nvml.Init, "nvmlInit_v2" },
    { (void **)&nvml.Shutdown, "nvmlShutdown" },
    { (void **)&nvml.DeviceGetCount, "nvmlDeviceGetCount_v2" },
    { (void **)&nvml.DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2" },
    { (void **)&nvml.DeviceGetName, "nvmlDeviceGetName" },
    { (void **)&nvml.DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo" },
    { (void **)&nvml.DeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses_v3" },
};

/* An NVML call that must return NVML_SUCCESS (0). */
static int nvml_ok(const char *name, int status)
{
    char what[64];
    snprintf(what, sizeof what, "NVML status %d", status);
    return expect_true(name, status == 0, what);
}

enum { ALLOCATION = 64 << 20, MAX_PROCESSES = 64, NVML_ERROR_INVALID_ARGUMENT = 2 };

int main(int argc, char **argv)
{
    int check_processes = argc > 1 && strcmp(argv[1], "processes") == 0;
    cu_load(NULL, cu_table, CU_COUNT(cu_table));
    cu_load("libnvidia-ml.so.1", nvml_table, CU_COUNT(nvml_table));

    if (!nvml_ok("nvml_init", nvml.Init()))
        return checks_summary();
    unsigned int count = 0;
    int cu_count = 0;
    nvml_ok("nvml_device_count", nvml.DeviceGetCount(&count));
    EXPECT("cu_init", cu.Init(0), CUDA_SUCCESS);
    EXPECT("cu_device_count", cu.DeviceGetCount(&cu_count), CUDA_SUCCESS);
    expect_true("device_count_matches", count >= 1 && (int)count == cu_count,
                "NVML and CUDA count different devices");

    nvmlDevice_t dev = NULL;
    char name[96] = "", cu_name[96] = "";
    expect_true("nvml_handle_past_count",
                nvml.DeviceGetHandleByIndex(count, &dev) == NVML_ERROR_INVALID_ARGUMENT,
                "not NVML_ERROR_INVALID_ARGUMENT");
    nvml_ok("nvml_handle_0", nvml.DeviceGetHandleByIndex(0, &dev));
    if (invalid_handle_checks())
        expect_true("nvml_memory_null", nvml.DeviceGetMemoryInfo(dev, NULL) == NVML_ERROR_INVALID_ARGUMENT,
                    "not NVML_ERROR_INVALID_ARGUMENT");
    nvml_ok("nvml_name", nvml.DeviceGetName(dev, name, sizeof name));
    EXPECT("cu_name", cu.DeviceGetName(cu_name, sizeof cu_name, 0), CUDA_SUCCESS);
    expect_true("name_matches", name[0] != '\0' && strcmp(name, cu_name) == 0,
                "NVML's name is not cuDeviceGetName's");

    CUcontext ctx = NULL;
    CUdeviceptr p = 0;
    nvmlMemory_t before = { 0 }, after = { 0 };
    EXPECT("primary_context", cu.DevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    EXPECT("set_context", cu.CtxSetCurrent(ctx), CUDA_SUCCESS);
    nvml_ok("memory_before", nvml.DeviceGetMemoryInfo(dev, &before));
    EXPECT("mem_alloc", cu.MemAlloc(&p, ALLOCATION), CUDA_SUCCESS);
    nvml_ok("memory_after", nvml.DeviceGetMemoryInfo(dev, &after));
    expect_true("memory_counts_allocation", after.used >= before.used + ALLOCATION,
                "used memory did not grow by the allocation");
    expect_true("memory_adds_up", after.total == after.free + after.used && after.total > 0,
                "total is not free + used");

    if (check_processes) {
        unsigned int n = MAX_PROCESSES;
        nvmlProcessInfo_t infos[MAX_PROCESSES];
        nvml_ok("processes", nvml.DeviceGetComputeRunningProcesses(dev, &n, infos));
        int mine = 0;
        for (unsigned int i = 0; i < n && i < MAX_PROCESSES; i++)
            if (infos[i].pid == (unsigned int)getpid() && infos[i].usedGpuMemory >= ALLOCATION)
                mine++;
        expect_true("process_listed_with_allocation", mine == 1,
                    "this process is not listed once with its allocation");
    }

    EXPECT("mem_free", cu.MemFree(p), CUDA_SUCCESS);
    EXPECT("release_context", cu.DevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    nvml_ok("nvml_shutdown", nvml.Shutdown());
    return checks_summary();
}
