/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-dma: the DMA engine.  A bottom half walks the enabled queues
 * round-robin, one descriptor each, within a bounded budget per run (so a
 * hostile ring, huge, looping or unmapped, holds the main loop for at
 * most the budget or one descriptor of max-len bytes),
 * and executes each descriptor through the PCI DMA API: an IOMMU in front
 * of the device translates every access, and a failed translation becomes
 * the descriptor's error status.
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "hw/pci/msix.h"
#include "system/dma.h"
#include "system/runstate.h"
#include "viommu-dma-internal.h"
#include "trace.h"

void viommu_dma_update_intx(ViommuDmaState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    int level = 0;

    if (msix_enabled(pdev)) {
        return;
    }
    for (uint32_t i = 0; i < s->nqueues; i++) {
        level |= !!s->q[i].isr;
    }
    trace_viommu_dma_intx(level);
    pci_set_irq(pdev, level);
}

static void vdma_raise(ViommuDmaState *s, uint32_t qi)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    s->q[qi].isr |= 1;
    trace_viommu_dma_irq(qi, msix_enabled(pdev));
    if (msix_enabled(pdev)) {
        msix_notify(pdev, qi);
    } else {
        viommu_dma_update_intx(s);
    }
}

static bool vdma_range_ok(uint64_t addr, uint32_t len)
{
    return addr + len >= addr || addr + len == 0;
}

/*
 * An access through a MemoryRegionCache over exactly [addr, addr + len),
 * as virtio reaches its rings.  Behind an IOMMU the cache holds the IOMMU
 * region, so every access takes the memory core's cached slow path, which
 * must translate each IOMMU page of it on its own.
 */
static MemTxResult vdma_cached_rw(ViommuDmaState *s, uint64_t addr,
                                  uint8_t *buf, uint32_t len, bool write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    MemoryRegionCache cache;
    MemTxResult r = MEMTX_DECODE_ERROR;

    RCU_READ_LOCK_GUARD();
    if (address_space_cache_init(&cache, as, addr, len, write) >= len) {
        if (write) {
            r = address_space_write_cached(&cache, 0, buf, len);
            address_space_cache_invalidate(&cache, 0, len);
        } else {
            r = address_space_read_cached(&cache, 0, buf, len);
        }
    }
    address_space_cache_destroy(&cache);
    return r;
}

/*
 * A descriptor's own accesses (src, dst) carry its attributes: unspecified
 * for a request without PASID, MemTxAttrs.pid and .user for one with
 * PASID (include/viommu/viommu-dma.h).  A MemoryRegionCache takes no
 * attributes, so x-cached-copy=on applies to requests without PASID only.
 */
static MemTxResult vdma_read(ViommuDmaState *s, uint64_t addr, uint8_t *buf,
                             uint32_t len, MemTxAttrs attrs)
{
    return pci_dma_rw(PCI_DEVICE(s), addr, buf, len, DMA_DIRECTION_TO_DEVICE,
                      attrs);
}

static MemTxResult vdma_write(ViommuDmaState *s, uint64_t addr, uint8_t *buf,
                              uint32_t len, MemTxAttrs attrs)
{
    return pci_dma_rw(PCI_DEVICE(s), addr, buf, len,
                      DMA_DIRECTION_FROM_DEVICE, attrs);
}

static MemTxResult vdma_copy_read(ViommuDmaState *s, uint64_t addr,
                                  uint8_t *buf, uint32_t len, MemTxAttrs attrs)
{
    if (s->cached_copy && attrs.unspecified) {
        return vdma_cached_rw(s, addr, buf, len, false);
    }
    return vdma_read(s, addr, buf, len, attrs);
}

static MemTxResult vdma_copy_write(ViommuDmaState *s, uint64_t addr,
                                   uint8_t *buf, uint32_t len, MemTxAttrs attrs)
{
    if (s->cached_copy && attrs.unspecified) {
        return vdma_cached_rw(s, addr, buf, len, true);
    }
    return vdma_write(s, addr, buf, len, attrs);
}

/*
 * Run one operation.  Returns the completion status and stores in *result
 * the offset at which it stopped.  Chunks never cross a 4 KiB boundary of
 * either address, so a fault offset is exact to the page; except COPY with
 * x-cached-copy=on, whose chunks are 4 KiB long wherever they start, each
 * read and written through a MemoryRegionCache of its own (a fault offset
 * is then the start of the chunk).
 */
static uint32_t vdma_execute(ViommuDmaState *s, uint8_t op, uint32_t len,
                             uint64_t src, uint64_t dst, uint64_t pattern,
                             MemTxAttrs attrs, uint32_t *result)
{
    uint32_t off = 0;

    *result = 0;
    if (op == VIOMMU_DMA_OP_NOP) {
        return VIOMMU_DMA_ST_OK;
    }
    if (op > VIOMMU_DMA_OP_MAX) {
        return VIOMMU_DMA_ST_BAD_OP;
    }
    if (len == 0 || len > s->maxlen) {
        return VIOMMU_DMA_ST_BAD_LEN;
    }
    if (!vdma_range_ok(dst, len) ||
        (op != VIOMMU_DMA_OP_FILL && !vdma_range_ok(src, len))) {
        return VIOMMU_DMA_ST_BAD_ADDR;
    }

    if (op == VIOMMU_DMA_OP_FILL) {
        for (uint32_t i = 0; i < 8; i++) {
            s->buf[0][i] = pattern >> (8 * i);
        }
    }

    while (off < len) {
        uint64_t d = dst + off, sa = src + off;
        uint32_t n = MIN(len - off, VDMA_CHUNK - (d & (VDMA_CHUNK - 1)));

        if (op == VIOMMU_DMA_OP_COPY && s->cached_copy && attrs.unspecified) {
            n = MIN(len - off, VDMA_CHUNK);
        } else if (op != VIOMMU_DMA_OP_FILL) {
            n = MIN(n, VDMA_CHUNK - (sa & (VDMA_CHUNK - 1)));
        }
        *result = off;

        switch (op) {
        case VIOMMU_DMA_OP_COPY:
            if (vdma_copy_read(s, sa, s->buf[0], n, attrs) != MEMTX_OK) {
                s->faults++;
                return VIOMMU_DMA_ST_READ_FAULT;
            }
            if (vdma_copy_write(s, d, s->buf[0], n, attrs) != MEMTX_OK) {
                s->faults++;
                return VIOMMU_DMA_ST_WRITE_FAULT;
            }
            break;
        case VIOMMU_DMA_OP_FILL: {
            /* keep the pattern phase relative to the start of dst */
            for (uint32_t i = 0; i < n; i++) {
                s->buf[1][i] = s->buf[0][(off + i) % 8];
            }
            if (vdma_write(s, d, s->buf[1], n, attrs) != MEMTX_OK) {
                s->faults++;
                return VIOMMU_DMA_ST_WRITE_FAULT;
            }
            break;
        }
        case VIOMMU_DMA_OP_COMPARE:
            if (vdma_read(s, sa, s->buf[0], n, attrs) != MEMTX_OK ||
                vdma_read(s, d, s->buf[1], n, attrs) != MEMTX_OK) {
                s->faults++;
                return VIOMMU_DMA_ST_READ_FAULT;
            }
            if (memcmp(s->buf[0], s->buf[1], n)) {
                uint32_t i = 0;
                while (s->buf[0][i] == s->buf[1][i]) {
                    i++;
                }
                *result = off + i;
                return VIOMMU_DMA_ST_MISMATCH;
            }
            break;
        }
        off += n;
    }
    *result = len;
    s->bytes += len;
    return VIOMMU_DMA_ST_OK;
}

/*
 * Fetch the descriptor at q->head into desc.  Up to VDMA_PREFETCH pending
 * descriptors of the same ring page are read by one DMA (one translation);
 * if that read fails, the descriptor is read alone, so a fault is
 * reported at the exact descriptor as before.
 */
static bool vdma_fetch(ViommuDmaState *s, uint32_t qi, uint8_t *desc)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    VDMAQueue *q = &s->q[qi];
    uint64_t addr = q->ring + (uint64_t)q->head * VIOMMU_DMA_DESC_SIZE;

    if (q->head != s->pf_head[qi] || q->head >= s->pf_end[qi]) {
        uint32_t pending = (q->tail - q->head) & (q->size - 1);
        uint32_t n = MIN(MIN(pending, VDMA_PREFETCH), q->size - q->head);

        n = MIN(n, (4096 - (addr & 4095)) / VIOMMU_DMA_DESC_SIZE);
        s->pf_head[qi] = s->pf_end[qi] = 0;
        if (n <= 1 || pci_dma_read(pdev, addr, s->pf[qi],
                                   n * VIOMMU_DMA_DESC_SIZE) != MEMTX_OK) {
            return pci_dma_read(pdev, addr, desc, VIOMMU_DMA_DESC_SIZE) ==
                   MEMTX_OK;
        }
        s->pf_base[qi] = s->pf_head[qi] = q->head;
        s->pf_end[qi] = q->head + n;
    }
    memcpy(desc, s->pf[qi] + (q->head - s->pf_base[qi]) * VIOMMU_DMA_DESC_SIZE,
           VIOMMU_DMA_DESC_SIZE);
    s->pf_head[qi]++;       /* consumed: a later lap reads the ring again */
    return true;
}

void viommu_dma_prefetch_drop(ViommuDmaState *s, uint32_t qi)
{
    s->pf_head[qi] = s->pf_end[qi] = 0;
}

static uint8_t vdma_flags_valid(ViommuDmaState *s)
{
    return VIOMMU_DMA_FLAG_IRQ |
           (s->pasid ? VIOMMU_DMA_FLAG_PASID | VIOMMU_DMA_FLAG_PRIV : 0);
}

/* Process one descriptor of queue qi; returns the bytes it asked for. */
static uint32_t vdma_process_one(ViommuDmaState *s, uint32_t qi)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    VDMAQueue *q = &s->q[qi];
    uint64_t addr = q->ring + (uint64_t)q->head * VIOMMU_DMA_DESC_SIZE;
    uint8_t desc[VIOMMU_DMA_DESC_SIZE];
    uint8_t op, flags;
    uint32_t len, status, result;
    uint64_t src, dst, pattern;
    uint32_t pasid;
    uint8_t done[8];

    if (!vdma_fetch(s, qi, desc)) {
        s->faults++;
        q->status |= VIOMMU_DMA_QSTS_HALTED;
        viommu_dma_prefetch_drop(s, qi);
        trace_viommu_dma_queue_halt(qi, q->head, addr);
        return 0;
    }
    op = desc[VIOMMU_DMA_DESC_OP];
    flags = desc[VIOMMU_DMA_DESC_FLAGS];
    len = ldl_le_p(desc + VIOMMU_DMA_DESC_LEN);
    src = ldq_le_p(desc + VIOMMU_DMA_DESC_SRC);
    dst = ldq_le_p(desc + VIOMMU_DMA_DESC_DST);
    pattern = ldq_le_p(desc + VIOMMU_DMA_DESC_PATTERN);
    pasid = ldl_le_p(desc + VIOMMU_DMA_DESC_PASID);
    trace_viommu_dma_desc(qi, q->head, op, flags, len, src, dst);

    result = 0;
    if (flags & ~vdma_flags_valid(s) ||
        ((flags & VIOMMU_DMA_FLAG_PRIV) && !(flags & VIOMMU_DMA_FLAG_PASID))) {
        status = VIOMMU_DMA_ST_BAD_FLAGS;
    } else if ((flags & VIOMMU_DMA_FLAG_PASID) &&
               (pasid == 0 || pasid > VIOMMU_DMA_PASID_MAX)) {
        status = VIOMMU_DMA_ST_BAD_PASID;
    } else {
        MemTxAttrs attrs = MEMTXATTRS_UNSPECIFIED;

        if (flags & VIOMMU_DMA_FLAG_PASID) {
            attrs = (MemTxAttrs) {
                .requester_id = pci_requester_id(pdev),
                .pid = pasid,
                .user = !(flags & VIOMMU_DMA_FLAG_PRIV),
            };
        }
        status = vdma_execute(s, op, len, src, dst, pattern, attrs, &result);
    }

    stl_le_p(done, status);
    stl_le_p(done + 4, result);
    if (pci_dma_write(pdev, addr + VIOMMU_DMA_DESC_STATUS, done,
                      sizeof(done)) != MEMTX_OK) {
        s->faults++;
        q->status |= VIOMMU_DMA_QSTS_HALTED;
        viommu_dma_prefetch_drop(s, qi);
        trace_viommu_dma_queue_halt(qi, q->head, addr);
        return 0;
    }
    trace_viommu_dma_desc_done(qi, q->head, status, result);

    q->head = (q->head + 1) & (q->size - 1);
    q->done++;
    s->descs++;
    if (status != VIOMMU_DMA_ST_OK) {
        q->errs++;
        s->errors++;
    }
    if (flags & VIOMMU_DMA_FLAG_IRQ) {
        vdma_raise(s, qi);
    }
    return op == VIOMMU_DMA_OP_NOP ? 0 : MIN(len, s->maxlen);
}

/*
 * The processing thread's CPU time: unlike wall-clock time it leaves out
 * the main loop between runs and whatever else the host runs meanwhile.
 */
static uint64_t vdma_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) {
        return 0;
    }
    return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void viommu_dma_bh(void *opaque)
{
    ViommuDmaState *s = opaque;
    unsigned descs = 0;
    uint64_t bytes = 0;
    uint32_t qi = s->next_queue, idle = 0;
    uint64_t t0;

    if (!runstate_is_running()) {
        return;                 /* the VM's start kicks it again */
    }
    t0 = vdma_cpu_ns();
    /*
     * Round-robin over queues, one descriptor each, until a whole round
     * found every queue idle or the budget is spent; the next run goes on
     * at the queue where this one stopped.
     */
    while (idle < s->nqueues && descs < VDMA_BUDGET_DESCS &&
           bytes < VDMA_BUDGET_BYTES) {
        if (vdma_queue_active(&s->q[qi])) {
            bytes += vdma_process_one(s, qi);
            descs++;
            idle = 0;
        } else {
            idle++;
        }
        qi = (qi + 1) % s->nqueues;
    }
    s->next_queue = qi;
    s->bh_ns += vdma_cpu_ns() - t0;
    if (idle < s->nqueues) {
        qemu_bh_schedule(s->bh);
    }
}

/*
 * Descriptors are processed only while the VM runs: they write guest
 * memory and send interrupts, which must not happen in a stopped VM (its
 * state may be being saved) nor, after an incoming migration, before the
 * VM starts.
 */
void viommu_dma_kick(ViommuDmaState *s)
{
    if (!runstate_is_running()) {
        return;
    }
    for (uint32_t i = 0; i < s->nqueues; i++) {
        if (vdma_queue_active(&s->q[i])) {
            qemu_bh_schedule(s->bh);
            return;
        }
    }
}
