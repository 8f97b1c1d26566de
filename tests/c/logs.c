/*
 * logs: the driver's error log. An iterator from cuLogsCurrent, then a
 * failing call (a module image in no known format), then
 * cuLogsDumpToMemory from that iterator gives the failure's lines, NUL
 * terminated, with their length in *size, and advances the iterator so
 * that a second dump gives nothing; a buffer too small for any line is
 * CUDA_ERROR_INVALID_VALUE with *size 0; a NULL buffer and non-zero flags
 * are CUDA_ERROR_INVALID_VALUE; cuLogsDumpToFile writes the lines into a
 * file. Through vgpu the log is the worker driver's, and the file is
 * written where the program runs.
 *
 * It prints no log text (it holds times and thread ids).
 *
 * Build:  cc -std=c11 -O2 -Wall -o logs logs.c -ldl
 * Usage:  logs [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <sys/stat.h>

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*LogsCurrent)(unsigned int *, unsigned int);
    CUresult (*LogsDumpToMemory)(unsigned int *, char *, size_t *, unsigned int);
    CUresult (*LogsDumpToFile)(unsigned int *, const char *, unsigned int);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(LogsCurrent, "cuLogsCurrent"),
    ENTRY(LogsDumpToMemory, "cuLogsDumpToMemory"),
    ENTRY(LogsDumpToFile, "cuLogsDumpToFile"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS))
        return checks_summary();

    unsigned int it = 0, start;
    EXPECT("current", cu.LogsCurrent(&it, 0), CUDA_SUCCESS);
    /* Driver 580 takes the reserved flags without a word. */
    EXPECT("current_flags", cu.LogsCurrent(&it, 1), CUDA_SUCCESS);
    EXPECT("current_again", cu.LogsCurrent(&it, 0), CUDA_SUCCESS);
    start = it;
    EXPECT("bad_image", cu.ModuleLoadData(&mod, "not a module image"), CUDA_ERROR_INVALID_IMAGE);

    static char buf[32768];
    size_t size = sizeof buf;
    EXPECT("dump", cu.LogsDumpToMemory(&it, buf, &size, 0), CUDA_SUCCESS);
    expect_true("dump_has_lines", size > 0 && strlen(buf) == size, "no lines, or a wrong size");
    size = sizeof buf;
    EXPECT("dump_again", cu.LogsDumpToMemory(&it, buf, &size, 0), CUDA_SUCCESS);
    expect_true("dump_again_empty", size == 0, "lines dumped twice");

    unsigned int from = start;
    char tiny[4];
    size = sizeof tiny;
    EXPECT("dump_too_small", cu.LogsDumpToMemory(&from, tiny, &size, 0), CUDA_ERROR_INVALID_VALUE);
    expect_true("dump_too_small_size", size == 0, "size not 0");
    size = sizeof buf;
    EXPECT("dump_null_buffer", cu.LogsDumpToMemory(&from, NULL, &size, 0),
           CUDA_ERROR_INVALID_VALUE);

    char path[] = "/tmp/vgpu-logs-XXXXXX";
    int fd = mkstemp(path);
    expect_true("temp_file", fd >= 0, "cannot make a temporary file");
    if (fd >= 0) {
        close(fd);
        from = start;
        EXPECT("dump_to_file", cu.LogsDumpToFile(&from, path, 0), CUDA_SUCCESS);
        struct stat st;
        expect_true("file_has_lines", stat(path, &st) == 0 && st.st_size > 0, "empty file");
        unlink(path);
    }
    return checks_summary();
}
