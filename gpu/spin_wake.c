/* How late a polling thread notices a write, by how it polls and how long
 * it has polled: thread B waits WAIT µs, stamps the clock and writes a
 * word; thread A, polling the word since B began waiting, stamps the clock
 * when it sees the write. The median of A's stamp minus B's is the notice
 * delay. Polling with PAUSE between reads (what vgpu's rings and most spin
 * loops do) is compared with polling by plain reads: a hypervisor that
 * exits a virtual CPU on long PAUSE loops (pause-loop exiting) makes the
 * first late after some microseconds, and the second not.
 *
 *   cc -O2 -pthread -o spin_wake gpu/spin_wake.c && ./spin_wake [CPU_A CPU_B]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { SAMPLES = 2001 };

static _Alignas(64) _Atomic long word;
static _Alignas(64) _Atomic long go;
static double written_at[SAMPLES];
static double wait_us;
static int cpu_b;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* B: for each sample, waits until A is polling, waits wait_us, writes. */
static void *writer(void *arg)
{
    (void)arg;
    pin(cpu_b);
    for (long i = 0; i < SAMPLES; i++) {
        while (atomic_load_explicit(&go, memory_order_acquire) != i + 1)
            ;
        double until = now_ns() + wait_us * 1e3;
        while (now_ns() < until)
            ;
        written_at[i] = now_ns();
        atomic_store_explicit(&word, i + 1, memory_order_release);
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run(int cpu_a, int pause, double wait)
{
    static double late[SAMPLES];
    wait_us = wait;
    atomic_store(&word, 0);
    atomic_store(&go, 0);
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    pin(cpu_a);
    for (long i = 0; i < SAMPLES; i++) {
        atomic_store_explicit(&go, i + 1, memory_order_release);
        if (pause) {
            while (atomic_load_explicit(&word, memory_order_acquire) != i + 1)
                __builtin_ia32_pause();
        } else {
            while (atomic_load_explicit(&word, memory_order_acquire) != i + 1)
                ;
        }
        late[i] = now_ns() - written_at[i];
    }
    pthread_join(t, NULL);
    qsort(late, SAMPLES, sizeof *late, cmp);
    printf("poll %-6s after %5.1f us: notice delay median %4.0f ns, 90th %5.0f ns, 99th %6.0f ns\n",
           pause ? "PAUSE" : "plain", wait, late[SAMPLES / 2], late[SAMPLES * 9 / 10],
           late[SAMPLES * 99 / 100]);
}

int main(int argc, char **argv)
{
    int cpu_a = argc > 2 ? atoi(argv[1]) : 2;
    cpu_b = argc > 2 ? atoi(argv[2]) : 5;
    const double waits[] = {0.5, 2, 5, 10, 30};
    for (unsigned w = 0; w < sizeof waits / sizeof *waits; w++)
        for (int pause = 1; pause >= 0; pause--)
            run(cpu_a, pause, waits[w]);
    return 0;
}
