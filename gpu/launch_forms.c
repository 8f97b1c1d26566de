/* What each equivalent form of one empty-kernel launch costs the calling
 * thread in the real driver: the worker may launch any request in
 * whichever form is cheapest, so this measures them side by side, in
 * alternating rounds (the host drifts).
 *
 *   cc -O2 -o launch_forms gpu/launch_forms.c -ldl && ./launch_forms [N] [ROUNDS]
 *
 * Forms:
 *   params     cuLaunchKernel, kernelParams = {NULL} (what applications pass)
 *   null       cuLaunchKernel, kernelParams = NULL
 *   extra      cuLaunchKernel, extra = {CU_LAUNCH_PARAM_END}
 *   ptsz       cuLaunchKernel_ptsz
 *   ex         cuLaunchKernelEx with no attributes
 *   kernel     cuLaunchKernel given the CUkernel of cuLibraryLoadData
 * Prints one line per round and form: microseconds per launch call, and the
 * synchronize after them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUlibrary, *CUkernel;
typedef struct {
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream;
    void *attrs;
    unsigned numAttrs;
} CUlaunchConfig;
typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);

static const char PTX[] = ".version 7.0\n.target sm_52\n.address_size 64\n\n"
                          ".visible .entry empty()\n{\n    ret;\n}\n";

static void *lib;
static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        printf("FAIL no %s\n", name);
        exit(1);
    }
    return p;
}
#define CHECK(call)                                                                       \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != 0) {                                                                    \
            printf("FAIL %s returned %d\n", #call, r_);                                   \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == NULL) {
        printf("FAIL %s\n", dlerror());
        return 1;
    }
    CUresult (*init)(unsigned) = sym("cuInit");
    CUresult (*dev_get)(int *, int) = sym("cuDeviceGet");
    CUresult (*retain)(CUcontext *, int) = sym("cuDevicePrimaryCtxRetain");
    CUresult (*set_current)(CUcontext) = sym("cuCtxSetCurrent");
    CUresult (*load)(CUmodule *, const void *) = sym("cuModuleLoadData");
    CUresult (*get_fn)(CUfunction *, CUmodule, const char *) = sym("cuModuleGetFunction");
    CUresult (*lib_load)(CUlibrary *, const void *, void *, void *, unsigned, void *, void *,
                         unsigned) = sym("cuLibraryLoadData");
    CUresult (*lib_kernel)(CUkernel *, CUlibrary, const char *) = sym("cuLibraryGetKernel");
    CUresult (*stream_create)(CUstream *, unsigned) = sym("cuStreamCreate");
    CUresult (*sync)(CUstream) = sym("cuStreamSynchronize");
    launch_t launch = sym("cuLaunchKernel");
    launch_t launch_ptsz = sym("cuLaunchKernel_ptsz");
    CUresult (*launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **) =
        sym("cuLaunchKernelEx");

    int dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUlibrary library;
    CUkernel kernel;
    CUstream s;
    CHECK(init(0));
    CHECK(dev_get(&dev, 0));
    CHECK(retain(&ctx, dev));
    CHECK(set_current(ctx));
    CHECK(load(&mod, PTX));
    CHECK(get_fn(&fn, mod, "empty"));
    CHECK(lib_load(&library, PTX, NULL, NULL, 0, NULL, NULL, 0));
    CHECK(lib_kernel(&kernel, library, "empty"));
    CHECK(stream_create(&s, 1));
    void *no_params[1] = {NULL};
    void *extra[1] = {NULL}; /* CU_LAUNCH_PARAM_END */
    CUlaunchConfig cfg = {1, 1, 1, 1, 1, 1, 0, s, NULL, 0};
    const char *forms[] = {"params", "null", "extra", "ptsz", "ex", "kernel"};
    enum { FORMS = sizeof forms / sizeof *forms };
    for (int r = 1; r <= rounds; r++) {
        for (int f = 0; f < FORMS; f++) {
            for (long i = 0; i < 2000; i++) /* warm-up */
                CHECK(launch(fn, 1, 1, 1, 1, 1, 1, 0, s, no_params, NULL));
            CHECK(sync(s));
            double t0 = now_us();
            for (long i = 0; i < n; i++) {
                switch (f) {
                case 0: CHECK(launch(fn, 1, 1, 1, 1, 1, 1, 0, s, no_params, NULL)); break;
                case 1: CHECK(launch(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL)); break;
                case 2: CHECK(launch(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, extra)); break;
                case 3: CHECK(launch_ptsz(fn, 1, 1, 1, 1, 1, 1, 0, s, no_params, NULL)); break;
                case 4: CHECK(launch_ex(&cfg, fn, no_params, NULL)); break;
                case 5: CHECK(launch((CUfunction)kernel, 1, 1, 1, 1, 1, 1, 0, s, no_params, NULL)); break;
                }
            }
            double t1 = now_us();
            CHECK(sync(s));
            double t2 = now_us();
            printf("round %d %-7s %.3f us per launch, then %.0f us in cuStreamSynchronize\n", r,
                   forms[f], (t1 - t0) / (double)n, t2 - t1);
            fflush(stdout);
        }
    }
    return 0;
}
