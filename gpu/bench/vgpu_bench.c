/*
 * vgpu_bench: CUDA Driver API micro-benchmarks for `vgpu bench`.
 *
 * `vgpu bench` compiles this file with cc at run time (the source is built
 * into the vgpu binary) and runs each mode twice: on the native driver and
 * through vgpu. It needs no CUDA headers and no CUDA library at link time: it
 * declares what it uses and resolves each entry point with dlsym() from
 * dlopen() of $VGPU_BENCH_LIBCUDA, else "libcuda.so.1" -- the SONAME lookup
 * every CUDA program does, so LD_LIBRARY_PATH decides who answers.
 *
 * Build:  cc -std=c11 -O2 -Wall -pthread -o vgpu_bench vgpu_bench.c -ldl
 * Usage:  vgpu_bench MODE [-n ITERS] [-w WARMUP] [-t THREADS] [-b BYTES]
 * Modes:
 *   info          device, driver version and library; no figure
 *   launch        empty-kernel launches/s: THREADS threads, each launching
 *                 ITERS kernels on its own non-blocking stream, one
 *                 cuStreamSynchronize at the end     -> launch_<T>t launches/s
 *                 (and a "# thread T:" line each: time per launch call, then
 *                 in the final synchronize: who set the pace)
 *   launch_sync   median of ITERS (launch; cuStreamSynchronize) -> launch_sync us
 *   sync_idle     median cuStreamSynchronize on an idle stream  -> sync_idle us
 *   memcpy        BYTES copied host<->device, pinned (cuMemHostAlloc, async
 *                 copy + cuStreamSynchronize) and pageable (malloc, cuMemcpyHtoD/
 *                 DtoH); median of ITERS. Below 1 MiB the figure is the time
 *                 in us, else GB/s (1e9 bytes/s) -> memcpy_<size>_<kind>_<dir>
 *   alloc         median cuMemAlloc and cuMemFree of BYTES, ITERS allocations made
 *                 in batches (at most 8 GiB live) then freed -> alloc_<size>, free_<size> us
 *   graph         a graph of 100 empty-kernel launches captured on a stream
 *                 (cuStreamBeginCapture_v2 .. cuStreamEndCapture) and
 *                 instantiated once; median of ITERS (cuGraphLaunch;
 *                 cuStreamSynchronize)                     -> graph_100 us
 *                 (VGPU_BENCH_GRAPH_DOT=FILE writes the graph in DOT)
 *   first_kernel  cold start: init, context, module, one kernel, synchronize,
 *                 then print "first_kernel_done" (the parent times the process)
 *
 * Output (stdout): one `name value unit` line per figure; `# key text` lines
 * describe the run (device, library, warnings); a failure prints
 * `FAIL reason` and exits 1. Exit 2: bad usage; 3: the library could not be
 * loaded or lacks an entry point.
 *
 * The kernel is an empty PTX kernel (`.version 7.0 .target sm_52`, JIT-compiled
 * by the driver at cuModuleLoadData). On vgpu's simulated device (its name
 * contains "simulated") it is the built-in fill_u32 kernel writing one word.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

#define CU_STREAM_NON_BLOCKING 0x1u

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
    /* Optional: vgpu's simulated device has no pinned host memory. */
    CUresult (*MemHostAlloc)(void **, size_t, unsigned int);
    CUresult (*MemFreeHost)(void *);
    /* Needed by the graph mode only. */
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*GraphDebugDotPrint)(CUgraph, const char *, unsigned int);
} cu;

#define ENTRY(field, symbol, required) { (void **)&cu.field, symbol, required }
static const struct {
    void **slot;
    const char *symbol;
    int required;
} entries[] = {
    ENTRY(Init, "cuInit", 1),
    ENTRY(DriverGetVersion, "cuDriverGetVersion", 1),
    ENTRY(DeviceGet, "cuDeviceGet", 1),
    ENTRY(DeviceGetName, "cuDeviceGetName", 1),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent", 1),
    ENTRY(ModuleLoadData, "cuModuleLoadData", 1),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction", 1),
    ENTRY(MemAlloc, "cuMemAlloc_v2", 1),
    ENTRY(MemFree, "cuMemFree_v2", 1),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2", 1),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2", 1),
    ENTRY(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", 1),
    ENTRY(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", 1),
    ENTRY(StreamCreate, "cuStreamCreate", 1),
    ENTRY(StreamSynchronize, "cuStreamSynchronize", 1),
    ENTRY(LaunchKernel, "cuLaunchKernel", 1),
    ENTRY(GetErrorName, "cuGetErrorName", 1),
    ENTRY(MemHostAlloc, "cuMemHostAlloc", 0),
    ENTRY(MemFreeHost, "cuMemFreeHost", 0),
    ENTRY(StreamBeginCapture, "cuStreamBeginCapture_v2", 0),
    ENTRY(StreamEndCapture, "cuStreamEndCapture", 0),
    ENTRY(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 0),
    ENTRY(GraphLaunch, "cuGraphLaunch", 0),
    ENTRY(GraphExecDestroy, "cuGraphExecDestroy", 0),
    ENTRY(GraphDestroy, "cuGraphDestroy", 0),
    ENTRY(GraphDebugDotPrint, "cuGraphDebugDotPrint", 0),
};

static const char PTX_MODULE[] = ".version 7.0\n"
                                 ".target sm_52\n"
                                 ".address_size 64\n"
                                 "\n"
                                 ".visible .entry empty()\n"
                                 "{\n"
                                 "    ret;\n"
                                 "}\n";

/* The simulated device's module format (see crates/sim); fill_u32(p, v, n). */
static const char SIM_MODULE[] = "VGPU-SIM-MODULE 1\nkernel fill_u32\n";

static CUdevice g_dev;
static char g_name[256];
static CUcontext g_ctx;
static CUfunction g_fn;
static void **g_params; /* kernelParams of every launch */
static void *g_no_params[1] = {NULL};
static CUdeviceptr g_sim_word;
static unsigned int g_sim_value = 7;
static int g_sim_n = 1;
static void *g_sim_params[3] = {&g_sim_word, &g_sim_value, &g_sim_n};

static const char *error_name(CUresult r)
{
    const char *name = NULL;
    if (cu.GetErrorName == NULL || cu.GetErrorName(r, &name) != 0 || name == NULL)
        return "unknown error";
    return name;
}

/* A failed call ends the program: the harness reports the FAIL line. */
#define CHECK(call)                                                                       \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != 0) {                                                                    \
            printf("FAIL %s returned %s (%d)\n", #call, error_name(r_), r_);              \
            fflush(stdout);                                                               \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double *samples(long n)
{
    double *v = malloc((size_t)n * sizeof *v);
    if (v == NULL) {
        printf("FAIL out of host memory for %ld samples\n", n);
        exit(1);
    }
    return v;
}

/* "8b", "4kb", "1mb", "256mb", "1gb": the size part of figure names. */
static void size_label(size_t bytes, char *out, size_t cap)
{
    if (bytes >= (1u << 30) && bytes % (1u << 30) == 0)
        snprintf(out, cap, "%zugb", bytes >> 30);
    else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        snprintf(out, cap, "%zumb", bytes >> 20);
    else if (bytes >= (1u << 10) && bytes % (1u << 10) == 0)
        snprintf(out, cap, "%zukb", bytes >> 10);
    else
        snprintf(out, cap, "%zub", bytes);
}

/* cuInit, device 0, its primary context made current. */
static void setup(void)
{
    CHECK(cu.Init(0));
    CHECK(cu.DeviceGet(&g_dev, 0));
    CHECK(cu.DevicePrimaryCtxRetain(&g_ctx, g_dev));
    CHECK(cu.CtxSetCurrent(g_ctx));
    CHECK(cu.DeviceGetName(g_name, (int)sizeof g_name - 1, g_dev));
    printf("# device %s\n", g_name);
}

/* Loads the empty kernel (or the simulated device's stand-in). */
static void load_kernel(void)
{
    CUmodule mod;
    if (strcasestr(g_name, "simulated") != NULL) {
        CHECK(cu.ModuleLoadData(&mod, SIM_MODULE));
        CHECK(cu.ModuleGetFunction(&g_fn, mod, "fill_u32"));
        CHECK(cu.MemAlloc(&g_sim_word, 4));
        g_params = g_sim_params;
        printf("# kernel fill_u32 of one word (simulated device)\n");
    } else {
        CHECK(cu.ModuleLoadData(&mod, PTX_MODULE));
        CHECK(cu.ModuleGetFunction(&g_fn, mod, "empty"));
        g_params = g_no_params;
        printf("# kernel empty PTX kernel, 1 block of 1 thread\n");
    }
}

static CUresult launch(CUstream s)
{
    return cu.LaunchKernel(g_fn, 1, 1, 1, 1, 1, 1, 0, s, g_params, NULL);
}

static CUstream new_stream(void)
{
    CUstream s;
    CHECK(cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
    return s;
}

static void mode_info(void)
{
    int version = 0;
    CHECK(cu.DriverGetVersion(&version));
    printf("# cuda_version %d.%d\n", version / 1000, version % 1000 / 10);
}

struct launcher {
    pthread_t thread;
    pthread_barrier_t *start;
    long iters, warmup;
    CUresult failed;
    const char *what;
    double loop_us, sync_us; /* the launch loop, and the synchronize after it */
};

static void *launcher_main(void *arg)
{
    struct launcher *l = arg;
    CUresult r;
    CUstream s = NULL;
    if ((r = cu.CtxSetCurrent(g_ctx)) != 0) {
        l->what = "cuCtxSetCurrent";
    } else if ((r = cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING)) != 0) {
        l->what = "cuStreamCreate";
    } else {
        for (long i = 0; i < l->warmup && r == 0; i++)
            r = launch(s);
        if (r == 0)
            r = cu.StreamSynchronize(s);
        l->what = "warm-up";
    }
    /* Every thread reaches the barrier, failed or not, so none waits forever. */
    pthread_barrier_wait(l->start);
    if (r == 0) {
        l->what = "cuLaunchKernel";
        double t0 = now_us();
        for (long i = 0; i < l->iters && r == 0; i++)
            r = launch(s);
        double t1 = now_us();
        if (r == 0) {
            l->what = "cuStreamSynchronize";
            r = cu.StreamSynchronize(s);
        }
        l->loop_us = t1 - t0;
        l->sync_us = now_us() - t1;
    }
    l->failed = r;
    return NULL;
}

static void mode_launch(long threads, long iters, long warmup)
{
    load_kernel();
    struct launcher *ls = calloc((size_t)threads, sizeof *ls);
    pthread_barrier_t start;
    if (ls == NULL || pthread_barrier_init(&start, NULL, (unsigned)threads + 1) != 0) {
        printf("FAIL cannot set up %ld threads\n", threads);
        exit(1);
    }
    for (long t = 0; t < threads; t++) {
        ls[t].start = &start;
        ls[t].iters = iters;
        ls[t].warmup = warmup;
        if (pthread_create(&ls[t].thread, NULL, launcher_main, &ls[t]) != 0) {
            printf("FAIL cannot start thread %ld\n", t);
            exit(1);
        }
    }
    pthread_barrier_wait(&start);
    double t0 = now_us();
    for (long t = 0; t < threads; t++)
        pthread_join(ls[t].thread, NULL);
    double t1 = now_us();
    for (long t = 0; t < threads; t++) {
        if (ls[t].failed != 0) {
            printf("FAIL thread %ld: %s returned %s (%d)\n", t, ls[t].what,
                   error_name(ls[t].failed), ls[t].failed);
            exit(1);
        }
    }
    double per_s = (double)(threads * iters) / ((t1 - t0) / 1e6);
    /* Whether the launching threads or the GPU set the pace: a long final
     * synchronize means launches were queued faster than the GPU ran them. */
    for (long t = 0; t < threads; t++)
        printf("# thread %ld: %.3f us per cuLaunchKernel, then %.0f us in cuStreamSynchronize\n",
               t, ls[t].loop_us / (double)iters, ls[t].sync_us);
    printf("launch_%ldt %.1f launches/s\n", threads, per_s);
}

static void mode_launch_sync(long iters, long warmup)
{
    load_kernel();
    CUstream s = new_stream();
    for (long i = 0; i < warmup; i++) {
        CHECK(launch(s));
        CHECK(cu.StreamSynchronize(s));
    }
    double *v = samples(iters);
    double *calls = samples(iters);
    for (long i = 0; i < iters; i++) {
        double t0 = now_us();
        CHECK(launch(s));
        double t1 = now_us();
        CHECK(cu.StreamSynchronize(s));
        v[i] = now_us() - t0;
        calls[i] = t1 - t0;
    }
    /* How much of it the launch call took (through vgpu: posting it). */
    printf("# launch call %.3f us median\n", median(calls, iters));
    printf("launch_sync %.3f us\n", median(v, iters));
}

/* The kernels of the graph mode's graph. */
enum { GRAPH_KERNELS = 100, CU_STREAM_CAPTURE_MODE_GLOBAL = 0 };

static void mode_graph(long iters, long warmup)
{
    if (cu.StreamBeginCapture == NULL || cu.StreamEndCapture == NULL ||
        cu.GraphInstantiateWithFlags == NULL || cu.GraphLaunch == NULL ||
        cu.GraphExecDestroy == NULL || cu.GraphDestroy == NULL) {
        printf("FAIL the library lacks the stream-capture and graph entry points\n");
        exit(3);
    }
    load_kernel();
    CUstream s = new_stream();
    CUgraph graph;
    CUgraphExec exec;
    CHECK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < GRAPH_KERNELS; i++)
        CHECK(launch(s));
    CHECK(cu.StreamEndCapture(s, &graph));
    /* VGPU_BENCH_GRAPH_DOT=FILE: the captured graph in DOT, to compare sides. */
    const char *dot = getenv("VGPU_BENCH_GRAPH_DOT");
    if (dot != NULL && cu.GraphDebugDotPrint != NULL)
        CHECK(cu.GraphDebugDotPrint(graph, dot, 0));
    CHECK(cu.GraphInstantiateWithFlags(&exec, graph, 0));
    for (long i = 0; i < warmup; i++) {
        CHECK(cu.GraphLaunch(exec, s));
        CHECK(cu.StreamSynchronize(s));
    }
    double *v = samples(iters);
    for (long i = 0; i < iters; i++) {
        double t0 = now_us();
        CHECK(cu.GraphLaunch(exec, s));
        CHECK(cu.StreamSynchronize(s));
        v[i] = now_us() - t0;
    }
    CHECK(cu.GraphExecDestroy(exec));
    CHECK(cu.GraphDestroy(graph));
    printf("graph_%d %.3f us\n", GRAPH_KERNELS, median(v, iters));
}

static void mode_sync_idle(long iters, long warmup)
{
    CUstream s = new_stream();
    for (long i = 0; i < warmup; i++)
        CHECK(cu.StreamSynchronize(s));
    double *v = samples(iters);
    for (long i = 0; i < iters; i++) {
        double t0 = now_us();
        CHECK(cu.StreamSynchronize(s));
        v[i] = now_us() - t0;
    }
    printf("sync_idle %.3f us\n", median(v, iters));
}

/* Times one direction: median of `iters` copies after `warmup`. */
static double time_copy(int pinned, int h2d, CUstream s, void *host, CUdeviceptr dev,
                        size_t bytes, long iters, long warmup, double *v)
{
    for (long i = 0; i < warmup + iters; i++) {
        double t0 = now_us();
        if (pinned && h2d) {
            CHECK(cu.MemcpyHtoDAsync(dev, host, bytes, s));
            CHECK(cu.StreamSynchronize(s));
        } else if (pinned) {
            CHECK(cu.MemcpyDtoHAsync(host, dev, bytes, s));
            CHECK(cu.StreamSynchronize(s));
        } else if (h2d) {
            CHECK(cu.MemcpyHtoD(dev, host, bytes));
        } else {
            CHECK(cu.MemcpyDtoH(host, dev, bytes));
        }
        if (i >= warmup)
            v[i - warmup] = now_us() - t0;
    }
    return median(v, iters);
}

static void mode_memcpy(size_t bytes, long iters, long warmup)
{
    char label[32];
    size_label(bytes, label, sizeof label);
    CUstream s = new_stream();
    CUdeviceptr dev;
    CHECK(cu.MemAlloc(&dev, bytes));
    double *v = samples(iters);
    for (int pinned = 1; pinned >= 0; pinned--) {
        void *host = NULL;
        int page_locked = 0;
        if (pinned) {
            CUresult r = cu.MemHostAlloc != NULL ? cu.MemHostAlloc(&host, bytes, 0) : 801;
            if (r == 0) {
                page_locked = 1;
            } else if (strcasestr(g_name, "simulated") != NULL) {
                /* The simulated device has no page-locked memory to offer. */
                printf("# warn pinned memory unavailable on the simulated device (%s): the "
                       "pinned figures use ordinary memory\n",
                       error_name(r));
            } else {
                printf("FAIL cuMemHostAlloc(%zu bytes) returned %s (%d)\n", bytes, error_name(r),
                       r);
                exit(1);
            }
        }
        if (!page_locked && posix_memalign(&host, 4096, bytes) != 0) {
            printf("FAIL out of host memory for %zu bytes\n", bytes);
            exit(1);
        }
        memset(host, 0x5a, bytes); /* touch every page before timing */
        for (int h2d = 1; h2d >= 0; h2d--) {
            double us = time_copy(pinned, h2d, s, host, dev, bytes, iters, warmup, v);
            const char *kind = pinned ? "pinned" : "pageable", *dir = h2d ? "h2d" : "d2h";
            if (bytes < (1u << 20))
                printf("memcpy_%s_%s_%s %.3f us\n", label, kind, dir, us);
            else
                printf("memcpy_%s_%s_%s %.3f GB/s\n", label, kind, dir,
                       (double)bytes / 1e9 / (us / 1e6));
        }
        if (page_locked)
            CHECK(cu.MemFreeHost(host));
        else
            free(host);
    }
    CHECK(cu.MemFree(dev));
}

/*
 * Allocations are made in batches and then freed, as a program allocating
 * its buffers does: a batch is ITERS allocations, or as many as fit in 8 GiB.
 */
static void mode_alloc(size_t bytes, long iters, long warmup)
{
    char label[32];
    size_label(bytes, label, sizeof label);
    long batch = (long)((8ull << 30) / bytes);
    if (batch < 1)
        batch = 1;
    if (batch > iters)
        batch = iters;
    double *a = samples(iters), *f = samples(iters);
    CUdeviceptr *p = malloc((size_t)batch * sizeof *p);
    if (p == NULL) {
        printf("FAIL out of host memory\n");
        exit(1);
    }
    for (long w = 0; w < warmup; w++) {
        CHECK(cu.MemAlloc(&p[0], bytes));
        CHECK(cu.MemFree(p[0]));
    }
    for (long done = 0; done < iters;) {
        long n = iters - done < batch ? iters - done : batch;
        for (long i = 0; i < n; i++) {
            double t0 = now_us();
            CHECK(cu.MemAlloc(&p[i], bytes));
            a[done + i] = now_us() - t0;
        }
        for (long i = 0; i < n; i++) {
            double t0 = now_us();
            CHECK(cu.MemFree(p[i]));
            f[done + i] = now_us() - t0;
        }
        done += n;
    }
    printf("alloc_%s %.3f us\n", label, median(a, iters));
    printf("free_%s %.3f us\n", label, median(f, iters));
}

static void mode_first_kernel(void)
{
    load_kernel();
    CUstream s = new_stream();
    CHECK(launch(s));
    CHECK(cu.StreamSynchronize(s));
    printf("first_kernel_done\n");
    fflush(stdout);
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s info|launch|launch_sync|sync_idle|graph|memcpy|alloc|first_kernel "
            "[-n ITERS] [-w WARMUP] [-t THREADS] [-b BYTES]\n",
            argv0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long iters = 1000, warmup = 10, threads = 1;
    size_t bytes = 8;
    int opt;
    optind = 2;
    while ((opt = getopt(argc, argv, "n:w:t:b:")) != -1) {
        switch (opt) {
        case 'n':
            iters = atol(optarg);
            break;
        case 'w':
            warmup = atol(optarg);
            break;
        case 't':
            threads = atol(optarg);
            break;
        case 'b':
            bytes = (size_t)strtoull(optarg, NULL, 10);
            break;
        default:
            usage(argv[0]);
            return 2;
        }
    }
    if (iters < 1 || warmup < 0 || threads < 1 || threads > 256 || bytes < 1) {
        usage(argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);

    const char *library = getenv("VGPU_BENCH_LIBCUDA");
    if (library == NULL || library[0] == '\0')
        library = "libcuda.so.1";
    void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        printf("FAIL cannot load %s: %s\n", library, dlerror());
        return 3;
    }
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        *entries[i].slot = dlsym(lib, entries[i].symbol);
        if (*entries[i].slot == NULL && entries[i].required) {
            printf("FAIL %s does not export %s\n", library, entries[i].symbol);
            return 3;
        }
    }
    Dl_info info;
    const char *where = library;
    char *real = NULL;
    if (dladdr((void *)cu.Init, &info) != 0 && info.dli_fname != NULL) {
        real = realpath(info.dli_fname, NULL);
        where = real != NULL ? real : info.dli_fname;
    }
    /* vgpu's client library exports this marker; no NVIDIA driver does. */
    int shim = dlsym(lib, "vgpu_shim_marker") != NULL;
    printf("# library %s shim=%d\n", where, shim);
    free(real);

    setup();
    if (strcmp(mode, "info") == 0)
        mode_info();
    else if (strcmp(mode, "launch") == 0)
        mode_launch(threads, iters, warmup);
    else if (strcmp(mode, "launch_sync") == 0)
        mode_launch_sync(iters, warmup);
    else if (strcmp(mode, "sync_idle") == 0)
        mode_sync_idle(iters, warmup);
    else if (strcmp(mode, "graph") == 0)
        mode_graph(iters, warmup);
    else if (strcmp(mode, "memcpy") == 0)
        mode_memcpy(bytes, iters, warmup);
    else if (strcmp(mode, "alloc") == 0)
        mode_alloc(bytes, iters, warmup);
    else if (strcmp(mode, "first_kernel") == 0)
        mode_first_kernel();
    else {
        usage(argv[0]);
        return 2;
    }
    return 0;
}
