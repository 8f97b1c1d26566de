/*
 * fork_session: CUDA across fork(), as docs/adr/0003-fork-and-exit.md
 * documents it for vgpu.
 *
 * The parent initialises CUDA (cuInit, a context, memory with a pattern, a
 * stream) and forks. The child:
 *   - gets CUDA_ERROR_NOT_INITIALIZED from every call before its own cuInit;
 *   - after cuInit, has no current context, and the handles it inherited
 *     fail: the context with CUDA_ERROR_INVALID_CONTEXT, the stream with
 *     CUDA_ERROR_INVALID_HANDLE, the device pointer with
 *     CUDA_ERROR_INVALID_VALUE; the parent's pinned host memory stays
 *     mapped (shared with the parent) but is not pinned memory of the
 *     child's session: cuMemFreeHost refuses it, copies treat it as pageable;
 *   - uses CUDA through a fresh session of its own (context, memory, copies);
 *   - exits 0.
 * The parent then checks that its own memory, stream and context still work.
 *
 * `fork_session busy N` forks N times while a second parent thread keeps
 * making CUDA calls; every child must initialise and work (no deadlock on a
 * lock that the busy thread held at the fork).
 *
 * Build:  cc -std=c11 -O2 -Wall -o fork_session fork_session.c -ldl -lpthread
 * Output: `ok NAME` lines; `FAIL ...` and exit 1 on the first wrong result.
 */
#include "survive.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define PARENT_BYTES (1u << 20)
#define CHILD_BYTES (512u << 10)

static CUcontext parent_ctx;
static CUdeviceptr parent_mem;
static CUstream parent_stream;
static unsigned char *parent_pinned;
#define PINNED_BYTES (64u << 10)

static void child_checks(void) {
    CUdeviceptr d = 0;
    CUcontext cur = (CUcontext)0x1, ctx = NULL, primary = NULL;
    unsigned char buf[256];

    /* Before cuInit: the parent's session is not the child's. */
    CHECK("child cuMemAlloc before cuInit", cu.MemAlloc(&d, 256), CUDA_ERROR_NOT_INITIALIZED);
    CHECK("child cuCtxSynchronize before cuInit", cu.CtxSynchronize(),
          CUDA_ERROR_NOT_INITIALIZED);
    CHECK("child cuMemcpyDtoH before cuInit", cu.MemcpyDtoH(buf, parent_mem, sizeof buf),
          CUDA_ERROR_NOT_INITIALIZED);
    printf("ok child_not_initialized_before_cuinit\n");

    OK("child cuInit", cu.Init(0));
    printf("ok child_cuinit\n");

    /* No context is current in the child, whatever was current at the fork. */
    OK("child cuCtxGetCurrent", cu.CtxGetCurrent(&cur));
    if (cur != NULL) {
        printf("FAIL child cuCtxGetCurrent: %p is current, want none\n", (void *)cur);
        exit(1);
    }
    CHECK("child cuMemAlloc without a context", cu.MemAlloc(&d, 256), CUDA_ERROR_INVALID_CONTEXT);
    printf("ok child_starts_without_context\n");

    /* Inherited handles fail, before the child owns anything. */
    CHECK("child inherited cuMemcpyDtoH", cu.MemcpyDtoH(buf, parent_mem, sizeof buf),
          CUDA_ERROR_INVALID_VALUE);
    CHECK("child inherited cuCtxSetCurrent", cu.CtxSetCurrent(parent_ctx),
          CUDA_ERROR_INVALID_CONTEXT);
    CHECK("child inherited cuCtxPushCurrent", cu.CtxPushCurrent(parent_ctx),
          CUDA_ERROR_INVALID_CONTEXT);
    CHECK("child inherited cuCtxDestroy", cu.CtxDestroy(parent_ctx), CUDA_ERROR_INVALID_CONTEXT);

    /* A session of its own. */
    OK("child cuCtxCreate", cu.CtxCreate(&ctx, 0, 0));
    CHECK("child inherited cuStreamSynchronize", cu.StreamSynchronize(parent_stream),
          CUDA_ERROR_INVALID_HANDLE);
    CHECK("child inherited cuMemcpyHtoD", cu.MemcpyHtoD(parent_mem, buf, sizeof buf),
          CUDA_ERROR_INVALID_VALUE);
    CHECK("child inherited cuMemsetD8", cu.MemsetD8(parent_mem, 0, sizeof buf),
          CUDA_ERROR_INVALID_VALUE);
    CHECK("child inherited cuMemFree", cu.MemFree(parent_mem), CUDA_ERROR_INVALID_VALUE);
    printf("ok child_inherited_handles_fail\n");

    /* The parent's pinned pages: mapped, readable, not the child's to free. */
    CHECK("child inherited cuMemFreeHost", cu.MemFreeHost(parent_pinned),
          CUDA_ERROR_INVALID_VALUE);
    {
        unsigned char *want = malloc(PINNED_BYTES), *back = malloc(PINNED_BYTES);
        CUdeviceptr d = 0;
        survive_pattern(want, PINNED_BYTES, 6);
        OK("child cuMemAlloc", cu.MemAlloc(&d, PINNED_BYTES));
        OK("child cuMemcpyHtoD from inherited pinned memory",
           cu.MemcpyHtoD(d, parent_pinned, PINNED_BYTES));
        OK("child cuMemcpyDtoH", cu.MemcpyDtoH(back, d, PINNED_BYTES));
        if (memcmp(want, back, PINNED_BYTES) != 0) {
            printf("FAIL child: the inherited pinned memory did not copy right\n");
            exit(1);
        }
        OK("child cuMemFree", cu.MemFree(d));
        free(want);
        free(back);
    }
    printf("ok child_inherited_pinned_memory_is_pageable\n");

    CUdeviceptr mine = survive_round_trip(CHILD_BYTES, 2, "child");
    OK("child cuMemFree", cu.MemFree(mine));
    OK("child cuCtxDestroy", cu.CtxDestroy(ctx));
    /* The primary context works in the child too. */
    OK("child cuDevicePrimaryCtxRetain", cu.PrimaryCtxRetain(&primary, 0));
    OK("child cuCtxSetCurrent(primary)", cu.CtxSetCurrent(primary));
    mine = survive_round_trip(CHILD_BYTES, 3, "child primary");
    OK("child cuMemFree", cu.MemFree(mine));
    printf("ok child_own_session\n");
    fflush(stdout);
}

static void wait_child(pid_t pid, const char *what) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        printf("FAIL %s: waitpid\n", what);
        exit(1);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("FAIL %s: the child ended with status %#x\n", what, status);
        exit(1);
    }
}

static int fork_once(void) {
    CUcontext cur = NULL;
    unsigned char buf[256];

    OK("cuInit", cu.Init(0));
    OK("cuCtxCreate", cu.CtxCreate(&parent_ctx, 0, 0));
    parent_mem = survive_round_trip(PARENT_BYTES, 1, "parent");
    OK("cuStreamCreate", cu.StreamCreate(&parent_stream, 0));
    OK("cuMemHostAlloc", cu.MemHostAlloc((void **)&parent_pinned, PINNED_BYTES, 0));
    survive_pattern(parent_pinned, PINNED_BYTES, 6);
    printf("ok parent_ready\n");
    fflush(stdout);

    pid_t pid = fork();
    if (pid < 0) {
        printf("FAIL fork\n");
        return 1;
    }
    if (pid == 0) {
        child_checks();
        exit(0);
    }
    wait_child(pid, "fork child");
    printf("ok child_exited_0\n");

    /* The parent's session is untouched. */
    OK("parent cuCtxGetCurrent", cu.CtxGetCurrent(&cur));
    if (cur != parent_ctx) {
        printf("FAIL parent: the current context changed across the fork\n");
        return 1;
    }
    survive_expect(parent_mem, PARENT_BYTES, 1, "parent after the child");
    OK("parent cuStreamSynchronize", cu.StreamSynchronize(parent_stream));
    OK("parent cuMemcpyDtoH", cu.MemcpyDtoH(buf, parent_mem, sizeof buf));
    CUdeviceptr more = survive_round_trip(PARENT_BYTES, 4, "parent after the child");
    OK("parent cuMemFree", cu.MemFree(more));
    OK("parent cuMemFree", cu.MemFree(parent_mem));
    {
        /* The parent's pinned memory is still its own. */
        CUdeviceptr d = 0;
        OK("parent cuMemAlloc", cu.MemAlloc(&d, PINNED_BYTES));
        OK("parent cuMemcpyHtoD from pinned memory", cu.MemcpyHtoD(d, parent_pinned, PINNED_BYTES));
        memset(parent_pinned, 0, PINNED_BYTES);
        OK("parent cuMemcpyDtoH into pinned memory", cu.MemcpyDtoH(parent_pinned, d, PINNED_BYTES));
        survive_expect(d, PINNED_BYTES, 6, "parent pinned");
        OK("parent cuMemFree", cu.MemFree(d));
        OK("parent cuMemFreeHost", cu.MemFreeHost(parent_pinned));
    }
    OK("parent cuStreamDestroy", cu.StreamDestroy(parent_stream));
    OK("parent cuCtxDestroy", cu.CtxDestroy(parent_ctx));
    printf("ok parent_session_untouched\n");
    return 0;
}

static atomic_int stop_busy;
static atomic_long busy_calls;

static void *busy(void *arg) {
    (void)arg;
    OK("busy cuCtxSetCurrent", cu.CtxSetCurrent(parent_ctx));
    unsigned seed = 100;
    while (!atomic_load(&stop_busy)) {
        CUdeviceptr d = survive_round_trip(4096, seed++, "busy thread");
        OK("busy cuMemFree", cu.MemFree(d));
        OK("busy cuCtxSynchronize", cu.CtxSynchronize());
        atomic_fetch_add(&busy_calls, 5);
    }
    return NULL;
}

static int fork_busy(int n) {
    pthread_t t;
    OK("cuInit", cu.Init(0));
    OK("cuCtxCreate", cu.CtxCreate(&parent_ctx, 0, 0));
    parent_mem = survive_round_trip(PARENT_BYTES, 1, "parent");
    if (pthread_create(&t, NULL, busy, NULL) != 0) {
        printf("FAIL pthread_create\n");
        return 1;
    }
    while (atomic_load(&busy_calls) < 50)
        usleep(1000);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            printf("FAIL fork\n");
            return 1;
        }
        if (pid == 0) {
            CUcontext c = NULL;
            OK("busy child cuInit", cu.Init(0));
            OK("busy child cuCtxCreate", cu.CtxCreate(&c, 0, 0));
            CUdeviceptr d = survive_round_trip(8192, 1000u + (unsigned)i, "busy child");
            OK("busy child cuMemFree", cu.MemFree(d));
            exit(0);
        }
        wait_child(pid, "busy child");
    }
    atomic_store(&stop_busy, 1);
    pthread_join(t, NULL);
    survive_expect(parent_mem, PARENT_BYTES, 1, "parent after the busy forks");
    printf("ok busy_forks %d (%ld calls on the busy thread)\n", n, atomic_load(&busy_calls));
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    survive_load();
    if (argc > 2 && strcmp(argv[1], "busy") == 0)
        return fork_busy(atoi(argv[2]));
    return fork_once();
}
