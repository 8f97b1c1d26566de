/*
 * session_hold: a CUDA client that holds a session in known states, for the
 * tests of the mediator's session list and metrics (and for the container
 * test: a dynamically linked client that needs nothing but libc, libdl and
 * libcuda.so.1).
 *
 * It allocates BYTES of device memory, copies 4096 bytes to the device and
 * back COPIES times (checking the data), makes one call that must fail
 * (cuMemFree of an address it never allocated), then prints
 * `ready PID` and waits for a line on standard input (or its end). It then
 * frees the memory, prints `freed` and waits for another line; then it
 * destroys its context, prints `done` and exits.
 *
 * Build:  cc -std=c11 -O2 -Wall -o session_hold session_hold.c -ldl
 * Usage:  session_hold BYTES COPIES
 * Exit:   0 all went as described; 1 a call gave an unexpected result;
 *         2 bad arguments, or the library could not be loaded.
 */
#include "cuda_prelude.h"

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*CtxCreate)(CUcontext *, unsigned int, CUdevice);
    CUresult (*CtxDestroy)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(CtxCreate, "cuCtxCreate_v2"),
    ENTRY(CtxDestroy, "cuCtxDestroy_v2"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
};

#define MUST(call, want)                                                                 \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != (want)) {                                                              \
            printf("FAIL %s: %d (expected %d)\n", #call, r_, (int)(want));               \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

/* Waits for one line of standard input, or its end. */
static void wait_line(void)
{
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) {
        clearerr(stdin);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: session_hold BYTES COPIES\n");
        return 2;
    }
    size_t bytes = strtoull(argv[1], NULL, 10);
    long copies = strtol(argv[2], NULL, 10);
    if (bytes < 4096 || copies < 0) {
        fprintf(stderr, "session_hold: BYTES must be at least 4096, COPIES at least 0\n");
        return 2;
    }
    if (cu_load(NULL, entries, CU_COUNT(entries)) == NULL) {
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d;
    MUST(cu.Init(0), CUDA_SUCCESS);
    MUST(cu.DeviceGet(&dev, 0), CUDA_SUCCESS);
    MUST(cu.CtxCreate(&ctx, 0, dev), CUDA_SUCCESS);
    MUST(cu.MemAlloc(&d, bytes), CUDA_SUCCESS);
    static unsigned char out[4096], back[4096];
    for (long i = 0; i < copies; i++) {
        for (size_t j = 0; j < sizeof out; j++) {
            out[j] = (unsigned char)(i + (long)j);
        }
        MUST(cu.MemcpyHtoD(d, out, sizeof out), CUDA_SUCCESS);
        MUST(cu.MemcpyDtoH(back, d, sizeof back), CUDA_SUCCESS);
        if (memcmp(out, back, sizeof out) != 0) {
            printf("FAIL copy %ld: the data came back different\n", i);
            return 1;
        }
    }
    MUST(cu.MemFree(d + 16), CUDA_ERROR_INVALID_VALUE);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    wait_line();
    MUST(cu.MemFree(d), CUDA_SUCCESS);
    printf("freed\n");
    fflush(stdout);
    wait_line();
    MUST(cu.CtxDestroy(ctx), CUDA_SUCCESS);
    printf("done\n");
    return 0;
}
