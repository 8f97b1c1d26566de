/*
 * Runs in a guest (crates/cli/tests/e2e_vm.rs). Finds the ivshmem PCI device
 * by scanning sysfs the way the client does (vendor 0x1af4, device 0x1110,
 * class 0x0500xx), prints its BAR sizes and IVPosition, then checks what the
 * host wrote into the shared memory (BAR2) and answers through it:
 *
 *   offset 0          u64 magic "VGPUPRB1" (host)
 *   offset 8          u64 seed (host)
 *   offset 16         u64 pattern length L (host)
 *   offset 24         u64 answer: seed ^ ANSWER_XOR (guest, written last)
 *   4096 .. +L        pattern(seed) (host)
 *   size/2 .. +L      the pattern's complement, byte by byte (guest)
 *
 * pattern() is crates/cli/tests/common's: xorshift64, eight bytes a step.
 *
 *   ivshmem_probe                      check and answer
 *   ivshmem_probe doorbell PEER VEC    then write (PEER << 16) | VEC to the
 *                                      Doorbell register (BAR0 offset 12)
 *
 * Every line it prints is "ok ...", a value ("bar2 SIZE") or "FAIL ..."; it
 * exits 1 at the first failure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAGIC 0x3142525055504756ull /* "VGPUPRB1" little-endian */
#define ANSWER_XOR 0x5a5a5a5a5a5a5a5aull
#define PATTERN_AT 4096u
#define REG_IVPOSITION 8u
#define REG_DOORBELL 12u

static const char *const DEVICES = "/sys/bus/pci/devices";

static void fail(const char *what) {
    printf("FAIL %s\n", what);
    fflush(stdout);
    exit(1);
}

/* Reads one hex attribute of a PCI device; -1 when it cannot. */
static long long attribute(const char *bdf, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", DEVICES, bdf, name);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    unsigned long long v;
    int n = fscanf(f, "%llx", &v);
    fclose(f);
    return n == 1 ? (long long)v : -1;
}

/* The size of BAR `bar` from the device's `resource` file; 0 when unset. */
static uint64_t bar_size(const char *bdf, int bar) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/resource", DEVICES, bdf);
    FILE *f = fopen(path, "r");
    if (!f) fail("open resource");
    unsigned long long start = 0, end = 0, flags = 0;
    for (int i = 0; i <= bar; i++) {
        if (fscanf(f, "%llx %llx %llx", &start, &end, &flags) != 3) fail("parse resource");
    }
    fclose(f);
    return start == 0 && end == 0 ? 0 : end - start + 1;
}

/* Maps BAR `bar` (`len` bytes) through its sysfs resource file. */
static void *map_bar(const char *bdf, int bar, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/resource%d", DEVICES, bdf, bar);
    int fd = open(path, O_RDWR | O_SYNC);
    if (fd < 0) fail("open resource file");
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) fail("mmap resource file");
    return p;
}

static uint64_t pattern_next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static int find_device(char *bdf, size_t len) {
    DIR *d = opendir(DEVICES);
    if (!d) fail("open /sys/bus/pci/devices");
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (attribute(e->d_name, "vendor") == 0x1af4 && attribute(e->d_name, "device") == 0x1110 &&
            (attribute(e->d_name, "class") >> 8) == 0x0500) {
            snprintf(bdf, len, "%s", e->d_name);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    char bdf[256];
    if (!find_device(bdf, sizeof bdf)) fail("no ivshmem device (1af4:1110, class 0500xx)");
    printf("ok found %s\n", bdf);
    uint64_t bar0 = bar_size(bdf, 0), bar2 = bar_size(bdf, 2);
    printf("bar0 %" PRIu64 "\n", bar0);
    printf("bar1 %" PRIu64 "\n", bar_size(bdf, 1));
    printf("bar2 %" PRIu64 "\n", bar2);
    if (bar0 == 0 || bar2 < 2 * PATTERN_AT) fail("BAR0 or BAR2 missing or too small");

    volatile uint32_t *regs = map_bar(bdf, 0, 4096);
    printf("ivposition %" PRIu32 "\n", regs[REG_IVPOSITION / 4]);

    unsigned char *shm = map_bar(bdf, 2, bar2);
    uint64_t head[3];
    memcpy(head, shm, sizeof head);
    if (head[0] != MAGIC) fail("magic");
    uint64_t seed = head[1], len = head[2];
    if (len > bar2 / 2 - PATTERN_AT) fail("pattern length");
    printf("ok magic\n");

    uint64_t x = seed * 0x9E3779B97F4A7C15ull | 1, word = 0;
    for (uint64_t i = 0; i < len; i++) {
        if (i % 8 == 0) word = pattern_next(&x);
        unsigned char want = (unsigned char)(word >> (8 * (i % 8)));
        unsigned char got = shm[PATTERN_AT + i];
        if (got != want) {
            printf("FAIL pattern byte %" PRIu64 ": got %u want %u\n", i, got, want);
            return 1;
        }
        shm[bar2 / 2 + i] = (unsigned char)~got;
    }
    printf("ok pattern %" PRIu64 " bytes\n", len);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    uint64_t answer = seed ^ ANSWER_XOR;
    memcpy(shm + 24, &answer, sizeof answer);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    printf("ok answer\n");

    if (argc == 4 && strcmp(argv[1], "doorbell") == 0) {
        uint32_t peer = (uint32_t)strtoul(argv[2], NULL, 0);
        uint32_t vector = (uint32_t)strtoul(argv[3], NULL, 0);
        regs[REG_DOORBELL / 4] = (peer << 16) | vector;
        printf("ok doorbell peer %" PRIu32 " vector %" PRIu32 "\n", peer, vector);
    } else if (argc != 1) {
        fail("usage: ivshmem_probe [doorbell PEER VECTOR]");
    }
    return 0;
}
