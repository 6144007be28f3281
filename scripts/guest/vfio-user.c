/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vfio-user: a user-space driver for a DMA engine through VFIO, run in the
 * viommu-lab guest (scripts/guest/init, scenario vfio).  It does what DPDK
 * or SPDK do in a VM behind a vIOMMU: choose its own IOVAs, map them with
 * VFIO_IOMMU_MAP_DMA into the device's unmanaged domain, let the device
 * DMA, take its interrupt through an eventfd and unmap.
 *
 *   vfio-user BDF [--wait FILE]
 *
 * The device is QEMU's edu (1234:11e8) or viommu-lab's viommu-dma
 * (1234:11e9, include/viommu/viommu-dma.h), told apart by BAR0's identity
 * register.  --wait FILE: once the pages are mapped and the interrupt is set
 * up, print "waiting for FILE" and wait (up to 10 minutes) until FILE exists
 * before the first DMA, so that the host can migrate the guest in between
 * (tests/glue/guest-migrate.sh; edu has no migration state, viommu-dma has).
 *
 * Prints one line per check, "ok NAME - detail" or "fail NAME - detail",
 * and "data KEY=VALUE" lines; init turns them into VIOMMU-CHECK and
 * VIOMMU-DATA lines.  Exit status 0 when every check passed.
 *
 * Both devices are driven as one that loads a page into a buffer of its own
 * and stores it back somewhere else.  edu (hw/misc/edu.c in QEMU) copies up
 * to 4 KiB between its own buffer at 0x40000 and a bus address: BAR0 0x80
 * source, 0x88 destination, 0x90 length, 0x98 command (bit 0 run, bit 1
 * towards RAM, bit 2 interrupt when done); 0x24 interrupt status, 0x64
 * acknowledge; MSI.  The host gives it dma_mask=0xffffffffffffffff so that
 * no IOVA is clamped; it cannot tell whether a transfer faulted.
 * viommu-dma's "buffer" is a page of ours at IOVA_BUF; each load or store
 * is one COPY descriptor on queue 0, whose completion status says whether
 * an access faulted; MSI-X vector 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/vfio.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "viommu/viommu-dma.h"

#define PAGE 4096u
#define EDU_BUF 0x40000u
#define EDU_IDENT 0x010000edu
#define EDU_DMA_IRQ_STATUS 0x100u
#define EDU_CMD_RUN 0x1u
#define EDU_CMD_TO_RAM 0x2u
#define EDU_CMD_IRQ 0x4u

/*
 * IOVAs chosen as a user-space driver would: one below 4 GiB (mapped
 * read-only) and one above; another is the top page of the usable range.
 * viommu-dma's ring and buffer pages sit below 4 GiB too.
 */
#define IOVA_RO 0x10000000ull
#define IOVA_REMAP 0x123456000ull
#define IOVA_RING 0x20000000ull
#define IOVA_BUF 0x30000000ull
#define MSI_WINDOW 0xfee00000ull
#define VDMA_RING_SIZE 64u

enum dev_kind { DEV_EDU, DEV_VDMA };

/* How a transfer ended: edu only tells DONE from TIMEOUT. */
enum xfer { XFER_DONE, XFER_FAULT, XFER_TIMEOUT, XFER_ERROR };

static int failures;
static volatile uint8_t *bar0;
static enum dev_kind kind;
static uint64_t dev_buf;                /* the device's buffer, as it addresses it */
static volatile uint8_t *vdma_ring;     /* viommu-dma: our ring page (IOVA_RING) */
static uint32_t vdma_tail;

static const char *xfer_str(enum xfer x)
{
    static const char *const names[] = { "done", "faulted", "timed out",
                                         "failed" };

    return names[x];
}

static void result(bool ok, const char *name, const char *fmt, ...)
{
    va_list ap;

    printf("%s %s - ", ok ? "ok" : "fail", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    if (!ok) {
        failures++;
    }
}

static void data(const char *key, const char *fmt, ...)
{
    va_list ap;

    printf("data %s=", key);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* A 32-bit register of BAR0 (both devices' identity; all of viommu-dma's). */
static uint32_t bar0_read32(unsigned int off)
{
    return *(volatile uint32_t *)(bar0 + off);
}

static void bar0_write32(unsigned int off, uint32_t val)
{
    *(volatile uint32_t *)(bar0 + off) = val;
}

/* edu's registers from 0x80 on are 64 bits wide, those below 32. */
static uint64_t edu_read(unsigned int off)
{
    if (off >= 0x80) {
        return *(volatile uint64_t *)(bar0 + off);
    }
    return bar0_read32(off);
}

static void edu_write(unsigned int off, uint64_t val)
{
    if (off >= 0x80) {
        *(volatile uint64_t *)(bar0 + off) = val;
    } else {
        bar0_write32(off, (uint32_t)val);
    }
}

/*
 * One edu transfer of len bytes; false if it did not finish within 60 s
 * (edu runs a transfer 100 ms of virtual time after the command).
 */
static bool edu_dma(uint64_t src, uint64_t dst, uint32_t len, uint32_t cmd)
{
    edu_write(0x80, src);
    edu_write(0x88, dst);
    edu_write(0x90, len);
    edu_write(0x98, cmd | EDU_CMD_RUN);
    for (int i = 0; i < 6000; i++) {
        if (!(edu_read(0x98) & EDU_CMD_RUN)) {
            return true;
        }
        usleep(10000);
    }
    return false;
}

/*
 * One COPY descriptor of len bytes on queue 0; its completion status, or
 * TIMEOUT if it has none within 60 s (a bound for a loaded host).
 */
static enum xfer vdma_copy(uint64_t src, uint64_t dst, uint32_t len, bool irq)
{
    volatile uint8_t *d = vdma_ring + (vdma_tail % VDMA_RING_SIZE) *
                          VIOMMU_DMA_DESC_SIZE;
    volatile uint32_t *status = (volatile uint32_t *)(d + VIOMMU_DMA_DESC_STATUS);

    memset((void *)d, 0, VIOMMU_DMA_DESC_SIZE);
    d[VIOMMU_DMA_DESC_OP] = VIOMMU_DMA_OP_COPY;
    d[VIOMMU_DMA_DESC_FLAGS] = irq ? VIOMMU_DMA_FLAG_IRQ : 0;
    *(volatile uint32_t *)(d + VIOMMU_DMA_DESC_LEN) = len;
    *(volatile uint64_t *)(d + VIOMMU_DMA_DESC_SRC) = src;
    *(volatile uint64_t *)(d + VIOMMU_DMA_DESC_DST) = dst;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    vdma_tail = (vdma_tail + 1) % VDMA_RING_SIZE;
    bar0_write32(VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_TAIL, vdma_tail);
    for (int i = 0; i < 6000; i++) {
        uint32_t st = *status;

        if (st == VIOMMU_DMA_ST_OK) {
            return XFER_DONE;
        }
        if (st == VIOMMU_DMA_ST_READ_FAULT || st == VIOMMU_DMA_ST_WRITE_FAULT) {
            return XFER_FAULT;
        }
        if (st != VIOMMU_DMA_ST_PENDING) {
            return XFER_ERROR;
        }
        usleep(10000);
    }
    return XFER_TIMEOUT;
}

/* A page from @src into the device's buffer (or back out to @dst). */
static enum xfer dev_load(uint64_t src)
{
    if (kind == DEV_VDMA) {
        return vdma_copy(src, dev_buf, PAGE, false);
    }
    return edu_dma(src, dev_buf, PAGE, 0) ? XFER_DONE : XFER_TIMEOUT;
}

static enum xfer dev_store(uint64_t dst, bool irq)
{
    if (kind == DEV_VDMA) {
        return vdma_copy(dev_buf, dst, PAGE, irq);
    }
    return edu_dma(dev_buf, dst, PAGE,
                   EDU_CMD_TO_RAM | (irq ? EDU_CMD_IRQ : 0)) ?
           XFER_DONE : XFER_TIMEOUT;
}

/* What a store to a page the device must not write ends in. */
static enum xfer blocked_store(void)
{
    return kind == DEV_VDMA ? XFER_FAULT : XFER_DONE;
}

/* Acknowledges the device's interrupt; true if it said it had raised one. */
static bool dev_irq_ack(uint32_t *irq_status)
{
    if (kind == DEV_VDMA) {
        *irq_status = bar0_read32(VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_ISR);
        bar0_write32(VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_ISR, *irq_status);
        return *irq_status & 1;
    }
    *irq_status = (uint32_t)edu_read(0x24);
    edu_write(0x64, *irq_status);
    return *irq_status & EDU_DMA_IRQ_STATUS;
}

static int dma_map(int container, void *vaddr, uint64_t iova, uint32_t flags)
{
    struct vfio_iommu_type1_dma_map map = {
        .argsz = sizeof(map),
        .flags = flags,
        .vaddr = (uintptr_t)vaddr,
        .iova = iova,
        .size = PAGE,
    };

    return ioctl(container, VFIO_IOMMU_MAP_DMA, &map) ? -errno : 0;
}

static struct vfio_iommu_type1_info *iommu_info(int container)
{
    uint32_t argsz = sizeof(struct vfio_iommu_type1_info);

    for (int pass = 0; pass < 2; pass++) {
        struct vfio_iommu_type1_info *info = calloc(1, argsz);

        if (!info) {
            return NULL;
        }
        info->argsz = argsz;
        if (ioctl(container, VFIO_IOMMU_GET_INFO, info)) {
            free(info);
            return NULL;
        }
        if (info->argsz <= argsz) {
            return info;
        }
        /* The capabilities did not fit: ask again with the size given. */
        argsz = info->argsz;
        free(info);
    }
    return NULL;
}

/*
 * The usable IOVA ranges (VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE: the
 * domain's aperture less its reserved regions), written to desc.  Returns
 * the highest page in them (0 if none) and whether MSI_WINDOW is outside
 * them.
 */
static uint64_t iova_top(int container, bool *msi_excluded, char *desc,
                         size_t desc_len)
{
    struct vfio_iommu_type1_info *info = iommu_info(container);
    uint64_t top = 0;
    size_t used = 0;

    *msi_excluded = true;
    desc[0] = 0;
    if (!info || !(info->flags & VFIO_IOMMU_INFO_CAPS)) {
        free(info);
        return 0;
    }
    for (uint32_t off = info->cap_offset;
         off && off + sizeof(struct vfio_info_cap_header) <= info->argsz;) {
        struct vfio_info_cap_header *hdr = (void *)((char *)info + off);
        struct vfio_iommu_type1_info_cap_iova_range *cap = (void *)hdr;
        char *end = (char *)info + info->argsz;

        for (uint32_t i = 0;
             hdr->id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE &&
             i < cap->nr_iovas && (char *)&cap->iova_ranges[i + 1] <= end;
             i++) {
            uint64_t lo = cap->iova_ranges[i].start;
            uint64_t hi = cap->iova_ranges[i].end;
            uint64_t page = (hi - (PAGE - 1)) & ~(uint64_t)(PAGE - 1);

            if (lo <= MSI_WINDOW && MSI_WINDOW <= hi) {
                *msi_excluded = false;
            }
            if (hi - lo >= PAGE - 1 && page >= lo && page > top) {
                top = page;
            }
            if (used < desc_len) {
                used += snprintf(desc + used, desc_len - used,
                                 "%s0x%" PRIx64 "-0x%" PRIx64,
                                 i ? " " : "", lo, hi);
            }
        }
        off = hdr->next;
    }
    free(info);
    return top;
}

/* A type1v2 container holding the device's group; -1 on failure. */
static int open_container(const char *bdf, int *group)
{
    char path[320], link[256];
    struct vfio_group_status status = { .argsz = sizeof(status) };
    int container, api, type1v2;
    const char *name;
    ssize_t n;

    container = open("/dev/vfio/vfio", O_RDWR);
    if (container < 0) {
        result(false, "vfio_container", "open /dev/vfio/vfio: %s",
               strerror(errno));
        return -1;
    }
    api = ioctl(container, VFIO_GET_API_VERSION);
    type1v2 = ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU);
    result(api == VFIO_API_VERSION && type1v2 > 0, "vfio_container",
           "API version %d (want %d), type1v2 IOMMU %s", api,
           VFIO_API_VERSION, type1v2 > 0 ? "supported" : "not supported");
    if (api != VFIO_API_VERSION || type1v2 <= 0) {
        return -1;
    }

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group",
             bdf);
    n = readlink(path, link, sizeof(link) - 1);
    if (n <= 0) {
        result(false, "vfio_group", "%s: %s", path,
               n < 0 ? strerror(errno) : "empty link");
        return -1;
    }
    link[n] = 0;
    name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
    snprintf(path, sizeof(path), "/dev/vfio/%s", name);
    *group = open(path, O_RDWR);
    if (*group < 0 || ioctl(*group, VFIO_GROUP_GET_STATUS, &status) ||
        !(status.flags & VFIO_GROUP_FLAGS_VIABLE) ||
        ioctl(*group, VFIO_GROUP_SET_CONTAINER, &container) ||
        ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
        result(false, "vfio_group", "%s: %s (group flags 0x%x)", path,
               strerror(errno), status.flags);
        return -1;
    }
    result(true, "vfio_group", "%s viable, in a type1v2 container", path);
    return container;
}

/*
 * The device's fd with BAR0 mapped at bar0 and memory decoding and bus
 * mastering on (through VFIO's config-space region); -1 on failure.
 */
static int open_device(int group, const char *bdf)
{
    struct vfio_region_info bar = {
        .argsz = sizeof(bar), .index = VFIO_PCI_BAR0_REGION_INDEX,
    };
    struct vfio_region_info cfg = {
        .argsz = sizeof(cfg), .index = VFIO_PCI_CONFIG_REGION_INDEX,
    };
    uint16_t command = 0;
    uint32_t ident;
    bool cmd_ok, known;
    void *map;
    int device;

    device = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);
    if (device < 0 || ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &bar) ||
        ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &cfg) ||
        !(bar.flags & VFIO_REGION_INFO_FLAG_MMAP)) {
        result(false, "vfio_device", "%s: %s (BAR0 flags 0x%x)", bdf,
               strerror(errno), bar.flags);
        return -1;
    }
    map = mmap(NULL, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, device,
               bar.offset);
    if (map == MAP_FAILED) {
        result(false, "vfio_device", "mmap of BAR0 (%llu bytes): %s",
               (unsigned long long)bar.size, strerror(errno));
        return -1;
    }
    bar0 = map;
    cmd_ok = pread(device, &command, 2, cfg.offset + 4) == 2;
    command |= 0x6;
    cmd_ok = cmd_ok && pwrite(device, &command, 2, cfg.offset + 4) == 2;
    ident = bar0_read32(0x00);
    kind = ident == VIOMMU_DMA_ID_MAGIC ? DEV_VDMA : DEV_EDU;
    dev_buf = kind == DEV_VDMA ? IOVA_BUF : EDU_BUF;
    known = ident == EDU_IDENT || (ident == VIOMMU_DMA_ID_MAGIC &&
                                   bar0_read32(VIOMMU_DMA_REG_MAXLEN) >= PAGE);
    result(cmd_ok && known, "vfio_device",
           "device fd for %s, BAR0 mmapped (%llu bytes), command 0x%x, "
           "ident 0x%08x (%s)", bdf, (unsigned long long)bar.size, command,
           ident, ident == EDU_IDENT ? "edu" :
           ident == VIOMMU_DMA_ID_MAGIC ? "viommu-dma" : "neither edu nor viommu-dma");
    return cmd_ok && known ? device : -1;
}

/*
 * Vector 0 (edu: MSI, viommu-dma: MSI-X) into a new eventfd; -1 (and a
 * failed check) if refused.
 */
static int enable_irq(int device)
{
    const uint32_t index = kind == DEV_VDMA ? VFIO_PCI_MSIX_IRQ_INDEX :
                                              VFIO_PCI_MSI_IRQ_INDEX;
    struct vfio_irq_info irq = { .argsz = sizeof(irq), .index = index };
    char buf[sizeof(struct vfio_irq_set) + sizeof(int)];
    struct vfio_irq_set *set = (struct vfio_irq_set *)buf;
    int efd = eventfd(0, EFD_NONBLOCK);

    set->argsz = sizeof(buf);
    set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    set->index = index;
    set->start = 0;
    set->count = 1;
    memcpy(set->data, &efd, sizeof(int));
    if (efd < 0 || ioctl(device, VFIO_DEVICE_GET_IRQ_INFO, &irq) ||
        irq.count < 1 || ioctl(device, VFIO_DEVICE_SET_IRQS, set)) {
        result(false, "vfio_msi", "%s through VFIO_DEVICE_SET_IRQS: %s "
               "(%u vectors)", kind == DEV_VDMA ? "MSI-X" : "MSI",
               strerror(errno), irq.count);
        return -1;
    }
    return efd;
}

/* viommu-dma: queue 0 on our ring page at IOVA_RING, enabled. */
static bool vdma_setup(uint8_t *ring)
{
    const unsigned int q = VIOMMU_DMA_Q_BASE(0);
    uint32_t st;

    vdma_ring = ring;
    vdma_tail = 0;
    bar0_write32(VIOMMU_DMA_REG_CTRL, VIOMMU_DMA_CTRL_RESET);
    bar0_write32(q + VIOMMU_DMA_Q_RING_LO, (uint32_t)IOVA_RING);
    bar0_write32(q + VIOMMU_DMA_Q_RING_HI, (uint32_t)(IOVA_RING >> 32));
    bar0_write32(q + VIOMMU_DMA_Q_RING_SIZE, VDMA_RING_SIZE);
    bar0_write32(q + VIOMMU_DMA_Q_CTRL, VIOMMU_DMA_QCTRL_ENABLE);
    st = bar0_read32(q + VIOMMU_DMA_Q_STATUS);
    result(!(st & (VIOMMU_DMA_QSTS_BADRING | VIOMMU_DMA_QSTS_HALTED)),
           "vfio_queue", "viommu-dma queue 0: %u descriptors at IOVA 0x%llx, "
           "status 0x%x", VDMA_RING_SIZE, IOVA_RING, st);
    return !(st & (VIOMMU_DMA_QSTS_BADRING | VIOMMU_DMA_QSTS_HALTED));
}

static bool wait_eventfd(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    uint64_t count;

    if (poll(&p, 1, ms) != 1) {
        return false;
    }
    return read(fd, &count, sizeof(count)) == sizeof(count) && count > 0;
}

/* Polls for @path every 100 ms, up to @seconds. */
static bool wait_for_file(const char *path, unsigned int seconds)
{
    printf("waiting for %s\n", path);
    fflush(stdout);
    for (unsigned int i = 0; i < seconds * 10; i++) {
        if (access(path, F_OK) == 0) {
            return true;
        }
        usleep(100000);
    }
    return false;
}

static bool page_is(const uint8_t *page, uint8_t byte)
{
    for (unsigned int i = 0; i < PAGE; i++) {
        if (page[i] != byte) {
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    static uint8_t expect[PAGE];
    struct vfio_iommu_type1_dma_unmap unmap = { .argsz = sizeof(unmap) };
    uint8_t *mem, *src, *dst, *remap, *ring, *buf;
    int container, group = -1, device, efd, err_ro, err_hi, err_re;
    bool msi_excluded, same, kept, unmapped;
    enum xfer in, out, x;
    char ranges[512];
    uint64_t iova_hi;
    uint32_t irq_status;

    const char *wait_file = NULL;

    if (argc == 4 && !strcmp(argv[2], "--wait")) {
        wait_file = argv[3];
    } else if (argc != 2) {
        fprintf(stderr, "usage: vfio-user BDF [--wait FILE] (e.g. 0000:00:03.0)\n");
        return 2;
    }
    container = open_container(argv[1], &group);
    if (container < 0) {
        return 1;
    }
    iova_hi = iova_top(container, &msi_excluded, ranges, sizeof(ranges));
    data("vfio_iova_ranges", "%s", ranges);
    data("vfio_iova_high", "0x%" PRIx64, iova_hi);
    data("vfio_iova_ro", "0x%llx", IOVA_RO);
    data("vfio_iova_remap", "0x%llx", IOVA_REMAP);
    result(iova_hi > 0xffffffffull && msi_excluded, "vfio_iova_ranges",
           "usable IOVAs %s: the interrupt window 0x%llx %s, top page "
           "0x%" PRIx64, ranges, MSI_WINDOW,
           msi_excluded ? "excluded" : "NOT excluded", iova_hi);
    device = open_device(group, argv[1]);
    if (iova_hi <= 0xffffffffull || device < 0) {
        return 1;
    }

    mem = mmap(NULL, 5 * PAGE, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        result(false, "vfio_map", "mmap: %s", strerror(errno));
        return 1;
    }
    src = mem;
    dst = mem + PAGE;
    remap = mem + 2 * PAGE;
    ring = mem + 3 * PAGE;
    buf = mem + 4 * PAGE;
    memset(ring, 0, 2 * PAGE);
    srandom((unsigned int)getpid());
    for (unsigned int i = 0; i < PAGE; i++) {
        src[i] = (uint8_t)random();
    }
    memcpy(expect, src, PAGE);
    memset(dst, 0x5a, PAGE);
    memset(remap, 0x5a, PAGE);
    err_ro = dma_map(container, src, IOVA_RO, VFIO_DMA_MAP_FLAG_READ);
    err_hi = dma_map(container, dst, iova_hi,
                     VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE);
    result(!err_ro && !err_hi, "vfio_map",
           "IOVA 0x%llx read-only: %s; IOVA 0x%" PRIx64 " read-write: %s",
           IOVA_RO, err_ro ? strerror(-err_ro) : "mapped", iova_hi,
           err_hi ? strerror(-err_hi) : "mapped");
    if (err_ro || err_hi) {
        return 1;
    }
    if (kind == DEV_VDMA) {
        int err_ring = dma_map(container, ring, IOVA_RING,
                               VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE);
        int err_buf = dma_map(container, buf, IOVA_BUF,
                              VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE);

        result(!err_ring && !err_buf, "vfio_map_ring",
               "viommu-dma's ring at IOVA 0x%llx: %s; its buffer at IOVA "
               "0x%llx: %s", IOVA_RING, err_ring ? strerror(-err_ring) : "mapped",
               IOVA_BUF, err_buf ? strerror(-err_buf) : "mapped");
        if (err_ring || err_buf || !vdma_setup(ring)) {
            return 1;
        }
    }
    efd = enable_irq(device);
    if (wait_file) {
        bool came = wait_for_file(wait_file, 600);

        result(came, "vfio_wait", "%s %s", wait_file,
               came ? "appeared" : "did not appear within 600 s");
        if (!came) {
            return 1;
        }
    }

    /* Read the read-only page into the device, write it back at the top page. */
    in = dev_load(IOVA_RO);
    out = in == XFER_DONE ? dev_store(iova_hi, efd >= 0) : XFER_ERROR;
    same = out == XFER_DONE && !memcmp(src, dst, PAGE);
    result(same, "vfio_dma_roundtrip", "the device read 4 KiB at IOVA 0x%llx "
           "(%s) and wrote it at IOVA 0x%" PRIx64 " (%s): %s", IOVA_RO,
           xfer_str(in), iova_hi, xfer_str(out),
           same ? "the pages are equal" : "the pages differ");
    if (efd >= 0) {
        bool fired = out == XFER_DONE && wait_eventfd(efd, 60000);
        bool raised = dev_irq_ack(&irq_status);

        result(fired && raised, "vfio_msi",
               "the device's DMA-done interrupt %s the eventfd (interrupt "
               "status 0x%x)", fired ? "reached" : "did not reach", irq_status);
    }

    /*
     * Load the device's buffer with another pattern (read from the
     * read-write page), then aim it at the read-only IOVA: the write must
     * fault and leave the page as it was.
     */
    memset(dst, 0xa5, PAGE);
    in = dev_load(iova_hi);
    x = in == XFER_DONE ? dev_store(IOVA_RO, false) : XFER_ERROR;
    kept = !memcmp(src, expect, PAGE);
    result(in == XFER_DONE && x == blocked_store() && kept,
           "vfio_readonly_blocked", "the device's write of another page to "
           "read-only IOVA 0x%llx %s the page (load %s, store %s)", IOVA_RO,
           kept ? "left" : "changed", xfer_str(in), xfer_str(x));

    /*
     * Once VFIO_IOMMU_UNMAP_DMA has returned the device must not reach the
     * page, though it is still this process's memory.
     */
    unmap.iova = iova_hi;
    unmap.size = PAGE;
    unmapped = !ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap) &&
               unmap.size == PAGE;
    result(unmapped, "vfio_unmap", "VFIO_IOMMU_UNMAP_DMA of IOVA 0x%"
           PRIx64 ": %llu bytes unmapped", iova_hi,
           (unsigned long long)unmap.size);
    memset(dst, 0x5a, PAGE);
    x = dev_store(iova_hi, false);
    kept = page_is(dst, 0x5a);
    result(x == blocked_store() && kept, "vfio_no_dma_after_unmap",
           "the device's write to IOVA 0x%" PRIx64 " after its unmap %s the "
           "page (%s)", iova_hi, kept ? "left" : "changed", xfer_str(x));

    err_re = dma_map(container, remap, IOVA_REMAP,
                     VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE);
    x = err_re ? XFER_ERROR : dev_store(IOVA_REMAP, false);
    kept = page_is(remap, 0xa5);
    result(x == XFER_DONE && kept, "vfio_remap",
           "a page mapped afterwards at IOVA 0x%llx (%s) %s the device's "
           "write (%s)", IOVA_REMAP, err_re ? strerror(-err_re) : "mapped",
           kept ? "received" : "did not receive", xfer_str(x));
    return failures ? 1 : 0;
}
