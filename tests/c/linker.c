/*
 * linker: the JIT linker, as numba and NVIDIA's ptxjit sample use it. A
 * link created with info and error log buffers takes one good input from
 * memory and one from a file, completes with an image that loads as a
 * module and holds the kernel, and is destroyed; a missing file is
 * CUDA_ERROR_FILE_NOT_FOUND; an input that is not PTX fails with
 * CUDA_ERROR_INVALID_IMAGE and puts the driver's error log into the
 * application's buffer (also when that buffer is too small: the log is cut
 * and NUL-terminated, and nothing past the buffer is written), and the link
 * still completes; an empty link completes; a NULL link state gets
 * CUDA_ERROR_INVALID_HANDLE.
 *
 * The inputs are PTX for a GPU, or the simulated device's module format
 * where the device is vgpu's simulated one, so it runs on both; it prints
 * only lines that are the same on both (no log text, no sizes).
 *
 * Build:  cc -std=c11 -O2 -Wall -o linker linker.c -ldl
 * Usage:  linker [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef struct CUlinkState_st *CUlinkState;

enum {
    JIT_INFO_LOG_BUFFER = 3,
    JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    JIT_ERROR_LOG_BUFFER = 5,
    JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    JIT_LOG_VERBOSE = 12,
    JIT_INPUT_PTX = 1,
    CUDA_ERROR_FILE_NOT_FOUND = 301,
    LOG = 4096,
    SMALL_LOG = 8,
    GUARD = 64,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*LinkCreate)(unsigned int, int *, void **, CUlinkState *);
    CUresult (*LinkAddData)(CUlinkState, int, void *, size_t, const char *, unsigned int, int *,
                            void **);
    CUresult (*LinkAddFile)(CUlinkState, int, const char *, unsigned int, int *, void **);
    CUresult (*LinkComplete)(CUlinkState, void **, size_t *);
    CUresult (*LinkDestroy)(CUlinkState);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetName, "cuDeviceGetName"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(LinkCreate, "cuLinkCreate_v2"),
    ENTRY(LinkAddData, "cuLinkAddData_v2"),
    ENTRY(LinkAddFile, "cuLinkAddFile_v2"),
    ENTRY(LinkComplete, "cuLinkComplete"),
    ENTRY(LinkDestroy, "cuLinkDestroy"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* A GPU's inputs: a kernel, and a device function it calls, in two PTX
 * inputs the linker resolves between them. */
static const char GPU_KERNEL[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".extern .func (.param .b32 r) bump(.param .b32 x);\n"
    ".visible .entry add_one(.param .u64 p)\n{\n"
    "  .reg .b64 %rd<3>;\n  .reg .b32 %r<3>;\n"
    "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  ld.global.u32 %r1, [%rd2];\n"
    "  { .param .b32 a; .param .b32 r; st.param.b32 [a], %r1;\n"
    "    call.uni (r), bump, (a); ld.param.b32 %r2, [r]; }\n"
    "  st.global.u32 [%rd2], %r2;\n  ret;\n}\n";
static const char GPU_HELPER[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .func (.param .b32 r) bump(.param .b32 x)\n{\n"
    "  .reg .b32 %r<3>;\n  ld.param.b32 %r1, [x];\n  add.s32 %r2, %r1, 1;\n"
    "  st.param.b32 [r], %r2;\n  ret;\n}\n";
/* The simulated device's inputs: a built-in kernel and a global. */
static const char SIM_KERNEL[] = "VGPU-SIM-MODULE 1\nkernel fill_u32\n";
static const char SIM_HELPER[] = "VGPU-SIM-MODULE 1\nglobal counter 4\n";
/* In no format either knows. */
static const char BAD_PTX[] = "this is not ptx;\n";

static char info_log[LOG], error_log[LOG];

/* A link with info and error logs of `error_size` bytes. `vals` must
 * outlive the link. */
static CUresult create(CUlinkState *link, void **vals, size_t error_size)
{
    static int opts[] = {JIT_INFO_LOG_BUFFER, JIT_INFO_LOG_BUFFER_SIZE_BYTES, JIT_ERROR_LOG_BUFFER,
                         JIT_ERROR_LOG_BUFFER_SIZE_BYTES, JIT_LOG_VERBOSE};
    memset(info_log, 0, sizeof info_log);
    memset(error_log, 'x', sizeof error_log);
    vals[0] = info_log;
    vals[1] = (void *)(uintptr_t)LOG;
    vals[2] = error_log;
    vals[3] = (void *)(uintptr_t)error_size;
    vals[4] = (void *)(uintptr_t)1;
    return cu.LinkCreate(5, opts, vals, link);
}

/* Writes `text` to a temporary file; returns its path (static storage). */
static const char *temp_file(const char *text)
{
    static char path[] = "/tmp/vgpu-linker-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n;
    close(fd);
    return ok ? path : NULL;
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    char name[256] = {0};
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("device_name", cu.DeviceGetName(name, sizeof name, dev), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS))
        return checks_summary();
    int sim = strstr(name, "simulated") != NULL;
    const char *kernel = sim ? SIM_KERNEL : GPU_KERNEL;
    const char *helper = sim ? SIM_HELPER : GPU_HELPER;
    const char *function = sim ? "fill_u32" : "add_one";

    /* A good link: one input from memory, one from a file. */
    CUlinkState link = NULL;
    void *vals[5];
    EXPECT("create", create(&link, vals, LOG), CUDA_SUCCESS);
    EXPECT("add_data", cu.LinkAddData(link, JIT_INPUT_PTX, (void *)kernel, strlen(kernel) + 1,
                                      "kernel.ptx", 0, NULL, NULL),
           CUDA_SUCCESS);
    const char *path = temp_file(helper);
    expect_true("temp_file", path != NULL, "cannot write a temporary file");
    if (path != NULL) {
        EXPECT("add_file", cu.LinkAddFile(link, JIT_INPUT_PTX, path, 0, NULL, NULL),
               CUDA_SUCCESS);
        unlink(path);
    }
    EXPECT("add_file_missing",
           cu.LinkAddFile(link, JIT_INPUT_PTX, "/nonexistent/vgpu-linker.ptx", 0, NULL, NULL),
           CUDA_ERROR_FILE_NOT_FOUND);
    void *cubin = NULL;
    size_t size = 0;
    EXPECT("complete", cu.LinkComplete(link, &cubin, &size), CUDA_SUCCESS);
    expect_true("complete_image", cubin != NULL && size > 0, "no image");
    expect_true("info_log_terminated", memchr(info_log, 0, LOG) != NULL, "info log not terminated");
    expect_true("info_log_size_in_range", (uintptr_t)vals[1] <= LOG, "info log size grew");
    CUmodule mod = NULL;
    CUfunction fn = NULL;
    EXPECT("load_linked", cu.ModuleLoadData(&mod, cubin), CUDA_SUCCESS);
    EXPECT("get_function", cu.ModuleGetFunction(&fn, mod, function), CUDA_SUCCESS);
    EXPECT("unload", cu.ModuleUnload(mod), CUDA_SUCCESS);
    EXPECT("complete_null_out", cu.LinkComplete(link, NULL, &size), CUDA_ERROR_INVALID_VALUE);
    EXPECT("destroy", cu.LinkDestroy(link), CUDA_SUCCESS);

    /* A bad PTX input: the driver's code, and its error log in our buffer. */
    EXPECT("create_for_bad", create(&link, vals, LOG), CUDA_SUCCESS);
    EXPECT("add_bad_ptx", cu.LinkAddData(link, JIT_INPUT_PTX, (void *)BAD_PTX, sizeof BAD_PTX,
                                         "bad.ptx", 0, NULL, NULL),
           CUDA_ERROR_INVALID_IMAGE);
    size_t len = strnlen(error_log, LOG);
    expect_true("bad_ptx_error_log", len > 0 && len < LOG, "no error log");
    expect_true("bad_ptx_error_log_size", (uintptr_t)vals[3] > 0 && (uintptr_t)vals[3] <= LOG,
                "error log size not set");
    EXPECT("complete_after_bad", cu.LinkComplete(link, &cubin, &size), CUDA_SUCCESS);
    EXPECT("destroy_bad", cu.LinkDestroy(link), CUDA_SUCCESS);
    EXPECT("create_empty", create(&link, vals, LOG), CUDA_SUCCESS);
    EXPECT("complete_empty", cu.LinkComplete(link, &cubin, &size), CUDA_SUCCESS);
    EXPECT("destroy_empty", cu.LinkDestroy(link), CUDA_SUCCESS);

    /* A too-small error log: cut and NUL-terminated, nothing written past it. */
    EXPECT("create_small_log", create(&link, vals, SMALL_LOG), CUDA_SUCCESS);
    EXPECT("add_bad_ptx_small_log",
           cu.LinkAddData(link, JIT_INPUT_PTX, (void *)BAD_PTX, sizeof BAD_PTX, "bad.ptx", 0,
                          NULL, NULL),
           CUDA_ERROR_INVALID_IMAGE);
    len = strnlen(error_log, SMALL_LOG);
    expect_true("small_log_cut", len == SMALL_LOG - 1, "the log is not cut to the buffer");
    int untouched = 1;
    for (int i = SMALL_LOG; i < SMALL_LOG + GUARD; i++)
        untouched &= error_log[i] == 'x';
    expect_true("small_log_no_overflow", untouched, "bytes past the buffer were written");
    EXPECT("destroy_small_log", cu.LinkDestroy(link), CUDA_SUCCESS);

    /* A NULL link state. */
    EXPECT("create_null_state", cu.LinkCreate(0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT("add_data_null_state", cu.LinkAddData(NULL, JIT_INPUT_PTX, (void *)kernel,
                                                 strlen(kernel) + 1, "k", 0, NULL, NULL),
           CUDA_ERROR_INVALID_HANDLE);
    EXPECT("complete_null_state", cu.LinkComplete(NULL, &cubin, &size), CUDA_ERROR_INVALID_HANDLE);
    EXPECT("destroy_null_state", cu.LinkDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
    if (invalid_handle_checks())
        EXPECT("destroy_twice", cu.LinkDestroy(link), CUDA_ERROR_INVALID_HANDLE);
    return checks_summary();
}
