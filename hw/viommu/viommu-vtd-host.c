/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: the host services the engine calls (VtdHostOps): reads and
 * writes of guest memory, interrupt messages, time.  The invalidation
 * callbacks belong to the address spaces (viommu-vtd-as.c), the event hook
 * to viommu-vtd-events.c.
 *
 * Guest memory goes through the memory API: address_space_translate() per
 * access, then a copy for reads and address_space_rw() for writes.  Not
 * address_space_read()/dma_memory_read() alone, because those would also
 * reach MMIO, and a table aimed at our own registers would re-enter the
 * engine: only plain RAM is accepted.  A private per-thread cache of RAM
 * pages in front of the reads (and the engine's prefetch hint through it)
 * made no measurable difference to translated-DMA throughput or device
 * CPU time, IOTLB-miss-heavy rows included, so there is none (figures and
 * command in docs/performance.rst, "Guest-memory reads").
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "exec/address-spaces.h"
#include "exec/memory.h"
#include "viommu-vtd-internal.h"
#include "trace.h"

static int viommu_vtd_ram_rw(uint64_t gpa, void *buf, size_t len, bool write)
{
    uint8_t *p = buf;

    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr;

        mr = address_space_translate(&address_space_memory, gpa, &xlat, &l,
                                     write, MEMTXATTRS_UNSPECIFIED);
        /* Only RAM: tables pointing at MMIO (our own registers) must fail. */
        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (write && mr->readonly) || !l) {
            trace_viommu_vtd_mem_error(gpa, len, write);
            return -1;
        }
        /*
         * Reads (page-table and context entries, descriptors: the page
         * walk's hot path) copy straight from RAM.  Writes (wait-descriptor
         * status) are rare and go through address_space_rw() for dirty
         * tracking and code invalidation.
         */
        if (!write) {
            memcpy(p, qemu_map_ram_ptr(mr->ram_block, xlat), l);
        } else if (address_space_rw(&address_space_memory, gpa,
                                    MEMTXATTRS_UNSPECIFIED, p, l,
                                    true) != MEMTX_OK) {
            trace_viommu_vtd_mem_error(gpa, len, write);
            return -1;
        }
        gpa += l;
        p += l;
        len -= l;
    }
    return 0;
}

static int viommu_vtd_mem_read(void *opaque, uint64_t gpa, void *buf,
                               size_t len)
{
    return viommu_vtd_ram_rw(gpa, buf, len, false);
}

static int viommu_vtd_mem_write(void *opaque, uint64_t gpa, const void *buf,
                                size_t len)
{
    return viommu_vtd_ram_rw(gpa, (void *)buf, len, true);
}

/*
 * The accessed and dirty flags of first-stage entries: a locked cmpxchg on
 * the guest's RAM, as a CPU's page walker does it, so that a guest CPU
 * updating the same entry sees one or the other.  RAM only (not MMIO, not
 * ROM); the entry is 8-byte aligned, so it never crosses a page.
 */
static int viommu_vtd_mem_cmpxchg64(void *opaque, uint64_t gpa,
                                    uint64_t expected, uint64_t desired,
                                    uint64_t *found)
{
    hwaddr xlat, l = sizeof(uint64_t), plen = sizeof(uint64_t);
    MemoryRegion *mr;
    uint64_t *p, old;

    if (gpa & (sizeof(uint64_t) - 1)) {
        trace_viommu_vtd_mem_error(gpa, sizeof(uint64_t), true);
        return -1;
    }
    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(&address_space_memory, gpa, &xlat, &l, true,
                                 MEMTXATTRS_UNSPECIFIED);
    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        mr->readonly || l < sizeof(uint64_t)) {
        trace_viommu_vtd_mem_error(gpa, sizeof(uint64_t), true);
        return -1;
    }
    /* Mapped rather than qemu_map_ram_ptr(): the unmap marks the page dirty. */
    p = address_space_map(&address_space_memory, gpa, &plen, true,
                          MEMTXATTRS_UNSPECIFIED);
    if (!p || plen < sizeof(uint64_t)) {
        if (p) {
            address_space_unmap(&address_space_memory, p, plen, true, 0);
        }
        trace_viommu_vtd_mem_error(gpa, sizeof(uint64_t), true);
        return -1;
    }
    old = qatomic_cmpxchg(p, cpu_to_le64(expected),
                                   cpu_to_le64(desired));
    *found = le64_to_cpu(old);
    address_space_unmap(&address_space_memory, p, plen, true,
                        *found == expected ? sizeof(uint64_t) : 0);
    trace_viommu_vtd_mem_cmpxchg(gpa, expected, desired, *found);
    return 0;
}

/*
 * The unit's own fault and invalidation-completion events: never
 * remapped.  The upper address register (FEUADDR, IEUADDR) holds an
 * x2APIC destination's bits 31:8, so only the low half must be in the
 * interrupt window.
 */
static void viommu_vtd_msi(void *opaque, uint64_t addr, uint32_t data)
{
    uint32_t low = addr;

    if (low < VIOMMU_VTD_MSI_BASE ||
        low >= VIOMMU_VTD_MSI_BASE + VIOMMU_VTD_MSI_SIZE) {
        trace_viommu_vtd_msi_dropped(addr, data);
        return;
    }
    trace_viommu_vtd_msi(addr, data);
    viommu_vtd_apic_send(addr, data);
}

static uint64_t viommu_vtd_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
}

/*
 * Before a wait descriptor completes: the notifications, address-space
 * switches and interrupt routes the invalidations ahead of it call for
 * happen now, inside the slice, so that a guest that sees the wait
 * complete never finds vhost, VFIO or KVM still using the old answers.
 */
static void viommu_vtd_sync(void *opaque)
{
    viommu_vtd_process_pending(opaque);
}

const VtdHostOps viommu_vtd_host_ops = {
    .mem_read = viommu_vtd_mem_read,
    .mem_write = viommu_vtd_mem_write,
    .mem_cmpxchg64 = viommu_vtd_mem_cmpxchg64,
    .msi = viommu_vtd_msi,
    .invalidated = viommu_vtd_invalidated,
    .context_invalidated = viommu_vtd_context_invalidated,
    .now_ns = viommu_vtd_now_ns,
    .device_iotlb_invalidated = viommu_vtd_device_iotlb_invalidated,
    .pasid_cache_invalidated = viommu_vtd_pasid_cache_invalidated,
    .interrupts_invalidated = viommu_vtd_interrupts_invalidated,
    .event = viommu_vtd_event,
    .sync = viommu_vtd_sync,
};

