/*
 * vector_add_driver: a small program written against the CUDA Driver API.
 *
 * It queries the device, loads a module holding `vector_add`, adds two
 * vectors on the device and checks every element of the result. `vgpu demo`
 * runs it through vgpu; gpu/e2e.sh runs it natively and through vgpu and
 * compares the two outputs.
 *
 * It needs no CUDA headers and no CUDA library at link time: it declares the
 * few types it uses and resolves each entry point with dlsym() from
 * dlopen("libcuda.so.1") -- the same SONAME lookup every CUDA program does,
 * so LD_LIBRARY_PATH decides whether the NVIDIA driver or vgpu answers.
 *
 * The module is, in order of preference: the file given with -m; the text
 * module of vgpu's simulated device when the device name contains
 * "simulated"; otherwise PTX (below) that the driver compiles at load time.
 *
 * Build:  cc -std=c11 -O2 -Wall -o vector_add_driver vector_add_driver.c -ldl
 * Usage:  vector_add_driver [-n ELEMENTS] [-m MODULE_FILE] [-l LIBRARY]
 * Output: deterministic lines on stdout; where libcuda was loaded from on stderr.
 * Exit:   0 pass; 1 a CUDA call failed or the result is wrong; 2 bad usage;
 *         3 the library could not be loaded or lacks an entry point.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

#define ENTRY(field, symbol) { (void **)&cu.field, symbol }
static const struct {
    void **slot;
    const char *symbol;
} entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DriverGetVersion, "cuDriverGetVersion"),
    ENTRY(DeviceGetCount, "cuDeviceGetCount"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetName, "cuDeviceGetName"),
    ENTRY(DeviceTotalMem, "cuDeviceTotalMem_v2"),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(LaunchKernel, "cuLaunchKernel"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* The module format of vgpu's simulated device (see crates/sim). */
static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel vector_add\n";

/* vector_add(const float *a, const float *b, float *c, int n): c[i] = a[i] + b[i]. */
static const char PTX_MODULE[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry vector_add(\n"
    "    .param .u64 param_a,\n"
    "    .param .u64 param_b,\n"
    "    .param .u64 param_c,\n"
    "    .param .s32 param_n\n"
    ")\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b32 %r<6>;\n"
    "    .reg .f32 %f<4>;\n"
    "    .reg .b64 %rd<11>;\n"
    "\n"
    "    ld.param.u64 %rd1, [param_a];\n"
    "    ld.param.u64 %rd2, [param_b];\n"
    "    ld.param.u64 %rd3, [param_c];\n"
    "    ld.param.s32 %r1, [param_n];\n"
    "    mov.u32 %r2, %ctaid.x;\n"
    "    mov.u32 %r3, %ntid.x;\n"
    "    mov.u32 %r4, %tid.x;\n"
    "    mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "    setp.ge.s32 %p1, %r5, %r1;\n"
    "    @%p1 bra DONE;\n"
    "    mul.wide.s32 %rd4, %r5, 4;\n"
    "    cvta.to.global.u64 %rd5, %rd1;\n"
    "    add.s64 %rd6, %rd5, %rd4;\n"
    "    cvta.to.global.u64 %rd7, %rd2;\n"
    "    add.s64 %rd8, %rd7, %rd4;\n"
    "    cvta.to.global.u64 %rd9, %rd3;\n"
    "    add.s64 %rd10, %rd9, %rd4;\n"
    "    ld.global.f32 %f1, [%rd6];\n"
    "    ld.global.f32 %f2, [%rd8];\n"
    "    add.f32 %f3, %f1, %f2;\n"
    "    st.global.f32 [%rd10], %f3;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

static const char *error_name(CUresult r)
{
    const char *name = NULL;
    if (cu.GetErrorName == NULL || cu.GetErrorName(r, &name) != 0 || name == NULL)
        return "unknown error";
    return name;
}

#define CHECK(call)                                                                       \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != 0) {                                                                    \
            printf("FAIL: %s returned %s (%d)\n", #call, error_name(r_), r_);             \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *bigger = realloc(buf, 2 * cap + 1);
        if (bigger == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (buf == NULL || failed) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0'; /* the driver reads text images up to the NUL */
    *len = n + 1;
    return buf;
}

static int run(int n, const char *module_file)
{
    CHECK(cu.Init(0));
    printf("cuInit: ok\n");

    int version = 0;
    CHECK(cu.DriverGetVersion(&version));
    printf("driver API version: %d.%d\n", version / 1000, version % 1000 / 10);

    int count = 0;
    CHECK(cu.DeviceGetCount(&count));
    printf("devices: %d\n", count);
    if (count < 1) {
        printf("FAIL: no device\n");
        return 1;
    }

    CUdevice dev;
    CHECK(cu.DeviceGet(&dev, 0));
    char name[256] = {0};
    CHECK(cu.DeviceGetName(name, (int)sizeof name - 1, dev));
    printf("device 0: %s\n", name);

    int major = 0, minor = 0, sms = 0;
    CHECK(cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CHECK(cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CHECK(cu.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    printf("compute capability: %d.%d, multiprocessors: %d\n", major, minor, sms);

    size_t total = 0;
    CHECK(cu.DeviceTotalMem(&total, dev));
    printf("memory: %zu MiB\n", total >> 20);

    CUcontext ctx;
    CHECK(cu.DevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cu.CtxSetCurrent(ctx));
    printf("context: primary context of device 0 is current\n");

    const char *image;
    size_t image_len;
    const char *kind;
    char *owned = NULL;
    if (module_file != NULL) {
        owned = read_file(module_file, &image_len);
        if (owned == NULL) {
            printf("FAIL: cannot read module file %s\n", module_file);
            return 1;
        }
        image = owned;
        kind = "module file";
    } else if (strcasestr(name, "simulated") != NULL) {
        image = SIM_MODULE;
        image_len = sizeof SIM_MODULE;
        kind = "simulated-device text module";
    } else {
        image = PTX_MODULE;
        image_len = sizeof PTX_MODULE;
        kind = "PTX, compiled by the driver";
    }
    CUmodule mod;
    CHECK(cu.ModuleLoadData(&mod, image));
    free(owned);
    printf("module: %s (%zu bytes) loaded\n", kind, image_len);

    CUfunction fn;
    CHECK(cu.ModuleGetFunction(&fn, mod, "vector_add"));
    printf("function: vector_add found\n");

    size_t bytes = (size_t)n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    if (a == NULL || b == NULL || c == NULL) {
        printf("FAIL: out of host memory for %d elements\n", n);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = (float)(i % 1000) * 2.0f;
        c[i] = -1.0f;
    }

    CUdeviceptr da, db, dc;
    CHECK(cu.MemAlloc(&da, bytes));
    CHECK(cu.MemAlloc(&db, bytes));
    CHECK(cu.MemAlloc(&dc, bytes));
    printf("allocated: 3 x %zu bytes on the device\n", bytes);
    CHECK(cu.MemcpyHtoD(da, a, bytes));
    CHECK(cu.MemcpyHtoD(db, b, bytes));
    printf("copied in: a and b\n");

    unsigned int block = 256;
    unsigned int grid = (unsigned int)((n + (int)block - 1) / (int)block);
    void *params[] = {&da, &db, &dc, &n};
    CHECK(cu.LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL));
    CHECK(cu.CtxSynchronize());
    printf("launched: vector_add<<<%u, %u>>>(a, b, c, %d) and synchronized\n", grid, block, n);

    CHECK(cu.MemcpyDtoH(c, dc, bytes));
    printf("copied out: c\n");

    int wrong = 0, first_wrong = -1;
    for (int i = 0; i < n; i++) {
        if (c[i] != a[i] + b[i]) {
            if (first_wrong < 0)
                first_wrong = i;
            wrong++;
        }
    }

    CHECK(cu.MemFree(da));
    CHECK(cu.MemFree(db));
    CHECK(cu.MemFree(dc));
    CHECK(cu.ModuleUnload(mod));
    CHECK(cu.DevicePrimaryCtxRelease(dev));

    if (wrong != 0) {
        printf("FAIL: %d of %d elements wrong; first c[%d] = %g, expected %g\n", wrong, n, first_wrong,
               (double)c[first_wrong], (double)(a[first_wrong] + b[first_wrong]));
        return 1;
    }
    printf("checked: all %d elements equal a[i] + b[i]\n", n);
    free(a);
    free(b);
    free(c);
    printf("PASS\n");
    return 0;
}

int main(int argc, char **argv)
{
    int n = 1 << 20;
    const char *module_file = NULL;
    const char *library = "libcuda.so.1";
    int opt;
    while ((opt = getopt(argc, argv, "n:m:l:h")) != -1) {
        switch (opt) {
        case 'n':
            n = atoi(optarg);
            break;
        case 'm':
            module_file = optarg;
            break;
        case 'l':
            library = optarg;
            break;
        default:
            fprintf(stderr, "usage: %s [-n ELEMENTS] [-m MODULE_FILE] [-l LIBRARY]\n", argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (n < 1 || n > (1 << 26)) {
        fprintf(stderr, "%s: -n wants 1..67108864 elements\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);

    void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        printf("FAIL: cannot load %s: %s\n", library, dlerror());
        return 3;
    }
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        *entries[i].slot = dlsym(lib, entries[i].symbol);
        if (*entries[i].slot == NULL) {
            printf("FAIL: %s does not export %s\n", library, entries[i].symbol);
            return 3;
        }
    }
    Dl_info info;
    if (dladdr((void *)cu.Init, &info) != 0 && info.dli_fname != NULL) {
        char *real = realpath(info.dli_fname, NULL);
        fprintf(stderr, "library: %s is %s\n", library, real != NULL ? real : info.dli_fname);
        free(real);
    }
    printf("library: %s loaded, %zu entry points resolved\n", library,
           sizeof entries / sizeof entries[0]);

    return run(n, module_file);
}
