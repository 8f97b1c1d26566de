/*
 * coredump: GPU core dump attributes. The process-wide defaults are driver
 * 580's (only CU_COREDUMP_TRIGGER_HOST on; generation flags 0); the dump
 * file and pipe names read back; a context's ENABLE_ON_EXCEPTION set on
 * reads back on, and off again.
 *
 * Through vgpu these are the settings of the session's worker, which owns
 * the GPU state; its dumps and their file names are on the worker's host.
 *
 * Build:  cc -std=c11 -O2 -Wall -o coredump coredump.c -ldl
 * Usage:  coredump [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

enum {
    ON_EXCEPTION = 1,
    TRIGGER_HOST = 2,
    LIGHTWEIGHT = 3,
    USER_TRIGGER = 4,
    FILE_NAME = 5,
    PIPE_NAME = 6,
    GENERATION_FLAGS = 7,
};

typedef CUresult (*attribute_fn)(int, void *, size_t *);

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    attribute_fn Get;
    attribute_fn GetGlobal;
    attribute_fn Set;
    attribute_fn SetGlobal;
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(Get, "cuCoredumpGetAttribute"),
    ENTRY(GetGlobal, "cuCoredumpGetAttributeGlobal"),
    ENTRY(Set, "cuCoredumpSetAttribute"),
    ENTRY(SetGlobal, "cuCoredumpSetAttributeGlobal"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* A boolean attribute read with `get` must be `want`. */
static void expect_flag(const char *name, attribute_fn get, int attrib, int want)
{
    _Bool v = !want;
    size_t size = sizeof v;
    char label[64];
    snprintf(label, sizeof label, "%s_get", name);
    EXPECT(label, get(attrib, &v, &size), CUDA_SUCCESS);
    snprintf(label, sizeof label, "%s_value", name);
    expect_true(label, v == want, "another value");
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS))
        return checks_summary();

    expect_flag("global_on_exception", cu.GetGlobal, ON_EXCEPTION, 0);
    expect_flag("global_trigger_host", cu.GetGlobal, TRIGGER_HOST, 1);
    expect_flag("global_lightweight", cu.GetGlobal, LIGHTWEIGHT, 0);
    expect_flag("global_user_trigger", cu.GetGlobal, USER_TRIGGER, 0);
    int flags = -1;
    size_t size = sizeof flags;
    EXPECT("global_generation_flags", cu.GetGlobal(GENERATION_FLAGS, &flags, &size),
           CUDA_SUCCESS);
    expect_true("global_generation_flags_value", flags == 0, "not 0");
    char name[4096];
    size = sizeof name;
    EXPECT("global_file", cu.GetGlobal(FILE_NAME, name, &size), CUDA_SUCCESS);
    size = sizeof name;
    EXPECT("global_pipe", cu.GetGlobal(PIPE_NAME, name, &size), CUDA_SUCCESS);

    _Bool on = 1, off = 0;
    size = sizeof on;
    EXPECT("context_set_on", cu.Set(ON_EXCEPTION, &on, &size), CUDA_SUCCESS);
    expect_flag("context_on", cu.Get, ON_EXCEPTION, 1);
    size = sizeof off;
    EXPECT("context_set_off", cu.Set(ON_EXCEPTION, &off, &size), CUDA_SUCCESS);
    expect_flag("context_off", cu.Get, ON_EXCEPTION, 0);

    if (invalid_handle_checks()) {
        _Bool v;
        EXPECT("null_size", cu.GetGlobal(ON_EXCEPTION, &v, NULL), CUDA_ERROR_INVALID_VALUE);
        size = sizeof v;
        EXPECT("null_value", cu.GetGlobal(ON_EXCEPTION, NULL, &size), CUDA_ERROR_INVALID_VALUE);
    }
    return checks_summary();
}
