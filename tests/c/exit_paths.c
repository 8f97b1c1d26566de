/*
 * exit_paths: a CUDA program that ends in one of the ways that crash or hang
 * other CUDA shims, and must still end with its own exit code (7).
 *
 *   exit_paths leak     exits without freeing memory, destroying streams or
 *                       contexts
 *   exit_paths atexit   calls CUDA from an atexit handler (glibc runs it
 *                       after the main thread's thread-local destructors)
 *   exit_paths tls      calls CUDA from a pthread_key_create destructor of
 *                       an exiting thread (after its thread-local destructors)
 *   exit_paths dlclose  dlcloses the library after use, opens it again, uses
 *                       it again, dlcloses it again and exits
 *
 * Each mode prints `ok MODE ...` once its CUDA work checked out, and exits 7.
 * A wrong result prints `FAIL ...` and exits 1.
 *
 * Build:  cc -std=c11 -O2 -Wall -o exit_paths exit_paths.c -ldl -lpthread
 */
#include "survive.h"

#include <pthread.h>

#define EXIT_CODE 7
#define BYTES (256u << 10)

static CUcontext ctx;
static CUdeviceptr mem;

static void setup(void) {
    OK("cuInit", cu.Init(0));
    OK("cuCtxCreate", cu.CtxCreate(&ctx, 0, 0));
    mem = survive_round_trip(BYTES, 11, "setup");
}

/* Uses the session from wherever this runs: the memory written by setup()
 * is intact, the context is current, and new memory works. */
static void use_again(const char *who) {
    CUcontext cur = NULL;
    OK("cuCtxGetCurrent", cu.CtxGetCurrent(&cur));
    if (cur != ctx) {
        printf("FAIL %s: current context %p, want %p\n", who, (void *)cur, (void *)ctx);
        exit(1);
    }
    survive_expect(mem, BYTES, 11, who);
    CUdeviceptr d = survive_round_trip(BYTES, 12, who);
    OK("cuMemFree", cu.MemFree(d));
    OK("cuCtxSynchronize", cu.CtxSynchronize());
}

static int leak(void) {
    CUstream s;
    CUcontext other;
    setup();
    for (unsigned i = 0; i < 8; i++)
        (void)survive_round_trip(4u << 20, 20 + i, "leak");
    OK("cuStreamCreate", cu.StreamCreate(&s, 0));
    OK("cuCtxCreate", cu.CtxCreate(&other, 0, 0));
    (void)survive_round_trip(1u << 20, 30, "leak in a second context");
    printf("ok leak: 33 MiB in 10 allocations, 2 contexts and a stream left behind\n");
    return EXIT_CODE;
}

static void at_exit(void) {
    use_again("atexit handler");
    OK("cuMemFree", cu.MemFree(mem));
    OK("cuCtxDestroy", cu.CtxDestroy(ctx));
    printf("ok atexit: CUDA calls from an atexit handler\n");
    fflush(stdout);
}

static int atexit_mode(void) {
    setup();
    if (atexit(at_exit) != 0) {
        printf("FAIL atexit\n");
        return 1;
    }
    return EXIT_CODE;
}

static pthread_key_t key;

static void key_destructor(void *value) {
    if (value != (void *)&mem) {
        printf("FAIL tls: destructor value %p\n", value);
        exit(1);
    }
    use_again("TLS destructor");
    printf("ok tls: CUDA calls from a pthread key destructor\n");
    fflush(stdout);
}

static void *tls_thread(void *arg) {
    (void)arg;
    OK("thread cuCtxSetCurrent", cu.CtxSetCurrent(ctx));
    /* Give this thread its own lane and context stack before it exits. */
    survive_expect(mem, BYTES, 11, "thread");
    if (pthread_setspecific(key, &mem) != 0) {
        printf("FAIL pthread_setspecific\n");
        exit(1);
    }
    return NULL;
}

static int tls_mode(void) {
    pthread_t t;
    setup();
    if (pthread_key_create(&key, key_destructor) != 0 ||
        pthread_create(&t, NULL, tls_thread, NULL) != 0 || pthread_join(t, NULL) != 0) {
        printf("FAIL pthread\n");
        return 1;
    }
    return EXIT_CODE;
}

static int mapped(void) {
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "libvgpu_cuda.so") || strstr(line, "libvgpu-cuda.so"))
            found = 1;
    fclose(f);
    return found;
}

static int dlclose_mode(void) {
    setup();
    if (dlclose(cu.lib) != 0) {
        printf("FAIL dlclose: %s\n", dlerror());
        return 1;
    }
    /* Built with -z nodelete: the code stays, so pointers taken before work. */
    if (mapped() != 1) {
        printf("FAIL dlclose: the library is no longer mapped\n");
        return 1;
    }
    use_again("after dlclose");
    survive_load();
    use_again("after dlopen again");
    if (dlclose(cu.lib) != 0) {
        printf("FAIL second dlclose: %s\n", dlerror());
        return 1;
    }
    printf("ok dlclose: the library stays mapped and the session works across dlclose\n");
    return EXIT_CODE;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    survive_load();
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "leak") == 0)
        return leak();
    if (strcmp(mode, "atexit") == 0)
        return atexit_mode();
    if (strcmp(mode, "tls") == 0)
        return tls_mode();
    if (strcmp(mode, "dlclose") == 0)
        return dlclose_mode();
    printf("usage: exit_paths leak|atexit|tls|dlclose\n");
    return 2;
}
