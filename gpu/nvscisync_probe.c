/*
 * nvscisync_probe: what the native driver answers to
 * cuDeviceGetNvSciSyncAttributes on this machine, which vgpu does not
 * remote yet. Each case runs in a child process, so a crash is reported
 * rather than ending the probe.
 *
 * Build:  cc -std=c11 -O2 -Wall -o nvscisync_probe gpu/nvscisync_probe.c -ldl
 * Usage:  nvscisync_probe [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per case: `NAME -> CODE` or `NAME -> signal N`.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int CUresult;
static CUresult (*init)(unsigned int);
static CUresult (*attrs)(void *, int, int);

/* Runs one call in a child; prints its result or the signal that ended it. */
static void probe(const char *name, void *list, int device, int flags)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        CUresult r = attrs(list, device, flags);
        printf("%s -> %d\n", name, r);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        printf("%s -> signal %d\n", name, WTERMSIG(status));
}

int main(int argc, char **argv)
{
    void *lib = dlopen(argc > 1 ? argv[1] : "libcuda.so.1", RTLD_NOW);
    if (!lib || !(init = (CUresult(*)(unsigned int))dlsym(lib, "cuInit")) ||
        !(attrs = (CUresult(*)(void *, int, int))dlsym(lib, "cuDeviceGetNvSciSyncAttributes"))) {
        fprintf(stderr, "cannot load the driver\n");
        return 2;
    }
    printf("init -> %d\n", init(0));
    static char zeroed[4096];
    probe("null_list_signal", NULL, 0, 1);
    probe("zeroed_list_signal", zeroed, 0, 1);
    probe("zeroed_list_wait", zeroed, 0, 2);
    probe("zeroed_list_no_flags", zeroed, 0, 0);
    probe("zeroed_list_bad_flags", zeroed, 0, 4);
    probe("zeroed_list_bad_device", zeroed, 99, 1);
    return 0;
}
