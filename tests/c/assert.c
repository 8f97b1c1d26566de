/*
 * assert: a failed device assert gives CUDA_ERROR_ASSERT at the next
 * synchronization and its message on the program's own standard error,
 * as the driver writes it. The program points its standard error at a
 * temporary file around the synchronization, then reports on standard
 * output whether the message arrived there, so a comparison of standard
 * output covers it.
 *
 * The kernel, assert_lt(unsigned v, int n), asserts `i < v` in each of its
 * first n threads. It is PTX calling __assertfail on a GPU, and a built-in
 * kernel on vgpu's simulated device, so it runs on both.
 *
 * Build:  cc -std=c11 -O2 -Wall -o assert assert.c -ldl
 * Usage:  assert [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check (`ok NAME` or `FAIL NAME: ...`), then a
 *         summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <unistd.h>

enum { THREADS = 4, CUDA_ERROR_ASSERT = 710 };

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
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
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(LaunchKernel, "cuLaunchKernel"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* assert_lt in PTX: thread i < n calls __assertfail("i < v", "assert.cu",
 * 1, "assert_lt", 1) unless i < v. */
static const char GPU_MODULE[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".extern .func __assertfail(.param .b64 p0, .param .b64 p1, .param .b32 p2,"
    " .param .b64 p3, .param .b64 p4);\n"
    ".global .align 1 .b8 str_msg[6] = {105, 32, 60, 32, 118, 0};\n"
    ".global .align 1 .b8 str_file[10] = {97, 115, 115, 101, 114, 116, 46, 99, 117, 0};\n"
    ".global .align 1 .b8 str_func[10] = {97, 115, 115, 101, 114, 116, 95, 108, 116, 0};\n"
    ".visible .entry assert_lt(.param .u32 v, .param .u32 n)\n{\n"
    "  .reg .pred %p<3>;\n  .reg .b32 %r<5>;\n  .reg .b64 %rd<8>;\n"
    "  ld.param.u32 %r1, [v];\n  ld.param.u32 %r2, [n];\n  mov.u32 %r3, %tid.x;\n"
    "  setp.ge.s32 %p1, %r3, %r2;\n  @%p1 bra DONE;\n"
    "  setp.lt.u32 %p2, %r3, %r1;\n  @%p2 bra DONE;\n"
    "  mov.u64 %rd1, str_msg;\n  cvta.global.u64 %rd2, %rd1;\n"
    "  mov.u64 %rd3, str_file;\n  cvta.global.u64 %rd4, %rd3;\n"
    "  mov.u64 %rd5, str_func;\n  cvta.global.u64 %rd6, %rd5;\n"
    "  mov.u32 %r4, 1;\n  mov.u64 %rd7, 1;\n"
    "  {\n  .param .b64 param0;\n  st.param.b64 [param0], %rd2;\n"
    "  .param .b64 param1;\n  st.param.b64 [param1], %rd4;\n"
    "  .param .b32 param2;\n  st.param.b32 [param2], %r4;\n"
    "  .param .b64 param3;\n  st.param.b64 [param3], %rd6;\n"
    "  .param .b64 param4;\n  st.param.b64 [param4], %rd7;\n"
    "  call.uni __assertfail, (param0, param1, param2, param3, param4);\n"
    "  }\nDONE:\n  ret;\n}\n";
static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel assert_lt\n";

/* Launches assert_lt(v, THREADS) on one block of THREADS threads. */
static CUresult launch(CUfunction f, unsigned int v)
{
    int n = THREADS;
    void *params[] = {&v, &n};
    return cu.LaunchKernel(f, 1, 1, 1, THREADS, 1, 1, 0, NULL, params, NULL);
}

/* Counts the lines of `text` that hold `needle`. */
static int count_lines(const char *text, const char *needle)
{
    int count = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        size_t take = len < sizeof buf - 1 ? len : sizeof buf - 1;
        memcpy(buf, line, take);
        buf[take] = 0;
        count += strstr(buf, needle) != NULL;
        line += len + (end != NULL);
    }
    return count;
}

/* Synchronizes the context with standard error pointed at a temporary
 * file; returns the synchronization's result and leaves what was written
 * to standard error in `text` (NUL-terminated). */
static CUresult sync_capturing_stderr(char *text, size_t size)
{
    text[0] = 0;
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO);
    if (!tmp || saved < 0) {
        expect_true("capture", 0, "no temporary file or descriptor");
        return CUDA_ERROR_INVALID_VALUE;
    }
    fflush(stderr);
    dup2(fileno(tmp), STDERR_FILENO);
    CUresult r = cu.CtxSynchronize();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(text, 1, size - 1, tmp);
    text[n] = 0;
    fclose(tmp);
    return r;
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
        !EXPECT("function", cu.ModuleGetFunction(&f, mod, "assert_lt"), CUDA_SUCCESS))
        return checks_summary();

    static char text[1 << 16];
    const char *failed = "Assertion `i < v` failed";
    /* Every thread's assertion holds: no error, nothing on stderr. */
    EXPECT("launch_holds", launch(f, THREADS), CUDA_SUCCESS);
    EXPECT("sync_holds", sync_capturing_stderr(text, sizeof text), CUDA_SUCCESS);
    expect_true("no_message", count_lines(text, failed) == 0, "an assertion message appeared");
    /* Threads 2 and 3 fail: CUDA_ERROR_ASSERT, one message from each. */
    EXPECT("launch_fails", launch(f, 2), CUDA_SUCCESS);
    EXPECT("sync_fails", sync_capturing_stderr(text, sizeof text), CUDA_ERROR_ASSERT);
    int lines = count_lines(text, failed);
    char what[64];
    snprintf(what, sizeof what, "%d assertion messages on stderr", lines);
    expect_true("message_on_stderr", lines == 2, what);
    /* The error is sticky; the messages are not written again. */
    EXPECT("sync_again", sync_capturing_stderr(text, sizeof text), CUDA_ERROR_ASSERT);
    expect_true("message_once", count_lines(text, failed) == 0, "the message came again");
    return checks_summary();
}
