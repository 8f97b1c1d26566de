/*
 * worker_loss: a C client (default SIGPIPE disposition, unlike Rust and
 * Python programs, which ignore SIGPIPE) whose worker dies under it.
 *
 * It copies 32 MiB host-to-device in a loop, printing `copied N` after each,
 * until a copy fails (the test kills or crashes the worker meanwhile). The
 * failing call and every later one, cuInit included, must return
 * CUDA_ERROR_DEVICE_UNAVAILABLE within 2 s; the process must not die of
 * SIGPIPE or anything else. Prints `every call failed fast` and exits 0.
 *
 * Build:  cc -std=c11 -O2 -Wall -o worker_loss worker_loss.c -ldl -lpthread
 */
#include "survive.h"

#include <time.h>

#define BYTES (32u << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define FAST(what, call)                                                        \
    do {                                                                        \
        double t0_ = now();                                                     \
        CHECK(what, call, CUDA_ERROR_DEVICE_UNAVAILABLE);                       \
        if (now() - t0_ > 2.0) {                                                \
            printf("FAIL %s took %.1f s after the loss\n", (what), now() - t0_); \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

int main(void) {
    CUcontext ctx, c2;
    CUdeviceptr d, d2;
    unsigned char *buf = malloc(BYTES);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!buf)
        return 1;
    survive_load();
    OK("cuInit", cu.Init(0));
    OK("cuCtxCreate", cu.CtxCreate(&ctx, 0, 0));
    OK("cuMemAlloc", cu.MemAlloc(&d, BYTES));
    survive_pattern(buf, BYTES, 5);
    double start = now();
    for (long i = 1;; i++) {
        CUresult r = cu.MemcpyHtoD(d, buf, BYTES);
        if (r != CUDA_SUCCESS) {
            CHECK("the copy in flight", r, CUDA_ERROR_DEVICE_UNAVAILABLE);
            printf("lost after %ld copies\n", i - 1);
            break;
        }
        printf("copied %ld\n", i);
        if (now() - start > 60) {
            printf("FAIL nobody took the worker away\n");
            return 1;
        }
    }
    for (int round = 0; round < 2; round++) {
        FAST("cuInit", cu.Init(0));
        FAST("cuMemAlloc", cu.MemAlloc(&d2, 256));
        FAST("cuMemcpyHtoD", cu.MemcpyHtoD(d, buf, 4096));
        FAST("cuMemcpyDtoH", cu.MemcpyDtoH(buf, d, 4096));
        FAST("cuMemsetD8", cu.MemsetD8(d, 0, 4096));
        FAST("cuCtxSynchronize", cu.CtxSynchronize());
        FAST("cuCtxCreate", cu.CtxCreate(&c2, 0, 0));
        FAST("cuMemFree", cu.MemFree(d));
    }
    printf("every call failed fast\n");
    return 0;
}
