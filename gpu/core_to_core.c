/* What handing one cache line from a core to another costs on this host:
 * two threads, pinned to CPUs A and B, take turns writing a shared word and
 * spinning until the other has written it back. Half a round trip is one
 * hand-off, the floor under each of a vgpu round trip's two crossings
 * (request to the worker, reply to the client), each of which moves a few
 * such lines.
 *
 *   cc -O2 -pthread -o core_to_core gpu/core_to_core.c && ./core_to_core A B [ROUNDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(64) _Atomic long word;
static long rounds;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        printf("FAIL cannot run on CPU %d\n", cpu);
        exit(1);
    }
}

static void *echo(void *arg)
{
    pin(*(int *)arg);
    for (long i = 0; i < rounds; i++) {
        while (atomic_load_explicit(&word, memory_order_acquire) != 2 * i + 1)
            __builtin_ia32_pause();
        atomic_store_explicit(&word, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        printf("usage: %s CPU_A CPU_B [ROUNDS]\n", argv[0]);
        return 2;
    }
    int a = atoi(argv[1]), b = atoi(argv[2]);
    rounds = argc > 3 ? atol(argv[3]) : 1000000;
    pthread_t t;
    pthread_create(&t, NULL, echo, &b);
    pin(a);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < rounds; i++) {
        atomic_store_explicit(&word, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&word, memory_order_acquire) != 2 * i + 2)
            __builtin_ia32_pause();
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(t, NULL);
    double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / rounds;
    printf("CPU %d <-> CPU %d: %.0f ns per round trip, %.0f ns per hand-off\n", a, b, ns, ns / 2);
    return 0;
}
