/*
 * Runs in a guest (crates/cli/tests/e2e_vm.rs): receives the host's
 * interrupts of an ivshmem-doorbell device in user space, with no driver of
 * its own. The device is bound to vfio-pci (the guest has a virtual IOMMU);
 * every MSI-X vector gets an eventfd through VFIO_DEVICE_SET_IRQS.
 *
 *   vfio_wake BDF GROUP PINGS
 *
 * 1. Prints "msix vectors N", then "waiting for an interrupt", and waits
 *    (30 s at most) until one vector's eventfd fires: "ok interrupt vector V".
 *    Any other vector firing as well is a failure.
 * 2. PINGS times: writes the Doorbell register (BAR0 offset 12, through the
 *    VFIO device's BAR0 region) with peer 0, vector 0, and waits for
 *    vector 0 to fire.
 *    Prints "roundtrip_us MEAN" (microseconds per ping and answer).
 *
 * Prints "FAIL ..." and exits 1 at the first failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/vfio.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_VECTORS 16
#define PCI_COMMAND 0x04
#define PCI_COMMAND_MASTER 0x4
#define REG_DOORBELL 12u

static void fail(const char *what) {
    printf("FAIL %s (%s)\n", what, strerror(errno));
    fflush(stdout);
    exit(1);
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* Waits for any of the n eventfds; returns the one that fired, -1 on timeout. */
static int wait_vector(const int *efd, unsigned n, int timeout_ms) {
    struct pollfd p[MAX_VECTORS];
    for (unsigned i = 0; i < n; i++) p[i] = (struct pollfd){.fd = efd[i], .events = POLLIN};
    int r = poll(p, n, timeout_ms);
    if (r < 0) fail("poll");
    if (r == 0) return -1;
    int fired = -1;
    for (unsigned i = 0; i < n; i++) {
        if (p[i].revents & POLLIN) {
            uint64_t count;
            if (read(efd[i], &count, sizeof count) != sizeof count) fail("read eventfd");
            if (fired >= 0) fail("more than one vector fired");
            fired = (int)i;
        }
    }
    return fired;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 4) fail("usage: vfio_wake BDF GROUP PINGS");
    const char *bdf = argv[1];
    int pings = atoi(argv[3]);
    char path[256];

    int container = open("/dev/vfio/vfio", O_RDWR);
    if (container < 0) fail("open /dev/vfio/vfio");
    if (ioctl(container, VFIO_GET_API_VERSION) != VFIO_API_VERSION) fail("VFIO API version");
    if (!ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1_IOMMU)) fail("no type1 IOMMU");
    snprintf(path, sizeof path, "/dev/vfio/%s", argv[2]);
    int group = open(path, O_RDWR);
    if (group < 0) fail("open the VFIO group");
    struct vfio_group_status status = {.argsz = sizeof status};
    if (ioctl(group, VFIO_GROUP_GET_STATUS, &status) < 0) fail("VFIO_GROUP_GET_STATUS");
    if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) fail("group not viable");
    if (ioctl(group, VFIO_GROUP_SET_CONTAINER, &container) < 0) fail("VFIO_GROUP_SET_CONTAINER");
    if (ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1_IOMMU) < 0) fail("VFIO_SET_IOMMU");
    int device = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);
    if (device < 0) fail("VFIO_GROUP_GET_DEVICE_FD");

    struct vfio_irq_info irq = {.argsz = sizeof irq, .index = VFIO_PCI_MSIX_IRQ_INDEX};
    if (ioctl(device, VFIO_DEVICE_GET_IRQ_INFO, &irq) < 0) fail("VFIO_DEVICE_GET_IRQ_INFO");
    unsigned n = irq.count;
    printf("msix vectors %u\n", n);
    if (n == 0 || n > MAX_VECTORS) fail("MSI-X vector count");

    /* An MSI-X message is a memory write by the device: without Bus
     * Master Enable, QEMU drops it. vfio-pci leaves that bit to its user. */
    struct vfio_region_info config = {.argsz = sizeof config,
                                      .index = VFIO_PCI_CONFIG_REGION_INDEX};
    if (ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &config) < 0) fail("config region info");
    uint16_t command;
    if (pread(device, &command, sizeof command, (off_t)(config.offset + PCI_COMMAND)) !=
        sizeof command)
        fail("read the command register");
    command |= PCI_COMMAND_MASTER;
    if (pwrite(device, &command, sizeof command, (off_t)(config.offset + PCI_COMMAND)) !=
        sizeof command)
        fail("set Bus Master Enable");

    int efd[MAX_VECTORS];
    _Alignas(struct vfio_irq_set) char buf[sizeof(struct vfio_irq_set) + MAX_VECTORS * sizeof(int32_t)];
    struct vfio_irq_set *set = (struct vfio_irq_set *)buf;
    *set = (struct vfio_irq_set){
        .argsz = (uint32_t)(sizeof *set + n * sizeof(int32_t)),
        .flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
        .index = VFIO_PCI_MSIX_IRQ_INDEX,
        .start = 0,
        .count = n,
    };
    for (unsigned i = 0; i < n; i++) {
        efd[i] = eventfd(0, EFD_CLOEXEC);
        if (efd[i] < 0) fail("eventfd");
        memcpy(set->data + i * sizeof(int32_t), &efd[i], sizeof(int32_t));
    }
    if (ioctl(device, VFIO_DEVICE_SET_IRQS, set) < 0) fail("VFIO_DEVICE_SET_IRQS");

    printf("waiting for an interrupt\n");
    int v = wait_vector(efd, n, 30000);
    if (v < 0) fail("no interrupt within 30 s");
    printf("ok interrupt vector %d\n", v);

    struct vfio_region_info bar0 = {.argsz = sizeof bar0, .index = VFIO_PCI_BAR0_REGION_INDEX};
    if (ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &bar0) < 0) fail("BAR0 region info");
    const uint32_t ring = 0; /* peer 0, vector 0 */

    double start = now_us();
    for (int i = 0; i < pings; i++) {
        if (pwrite(device, &ring, sizeof ring, (off_t)(bar0.offset + REG_DOORBELL)) != sizeof ring)
            fail("write the Doorbell register");
        int got = wait_vector(efd, n, 10000);
        if (got != 0) fail("no answer on vector 0");
    }
    if (pings > 0) printf("roundtrip_us %.1f\n", (now_us() - start) / pings);
    return 0;
}
