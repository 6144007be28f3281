/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: the host services the engine calls (VtdHostOps): reads and
 * writes of guest memory, interrupt messages, time, prefetch hints.  The
 * invalidation callbacks belong to the address spaces (viommu-vtd-as.c),
 * the cache of RAM pages behind the reads to viommu-vtd-ram.c, the event
 * hook to viommu-vtd-events.c.
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "exec/address-spaces.h"
#include "exec/memory.h"
#include "viommu-vtd-internal.h"
#include "trace.h"

static int viommu_vtd_ram_rw(ViommuVtdState *s, uint64_t gpa, void *buf,
                             size_t len, bool write)
{
    uint8_t *p = buf;

    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr;

        /*
         * Reads (page-table and context entries, descriptors: the page
         * walk's hot path) copy straight from RAM, through the cache of
         * host pages (viommu-vtd-ram.c) when the page is plain RAM.
         */
        if (!write && s->ram_cache) {
            uint64_t off = gpa % VIOMMU_VTD_RAMC_PAGE;
            uint8_t *host = viommu_vtd_ram_page(gpa);

            if (host) {
                l = MIN(len, VIOMMU_VTD_RAMC_PAGE - off);
                memcpy(p, host + off, l);
                gpa += l;
                p += l;
                len -= l;
                continue;
            }
        }
        mr = address_space_translate(&address_space_memory, gpa, &xlat, &l,
                                     write, MEMTXATTRS_UNSPECIFIED);
        /* Only RAM: tables pointing at MMIO (our own registers) must fail. */
        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (write && mr->readonly) || !l) {
            trace_viommu_vtd_mem_error(gpa, len, write);
            return -1;
        }
        /*
         * Writes (wait-descriptor status) are rare and go through
         * address_space_rw() for dirty tracking and code invalidation.
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
    return viommu_vtd_ram_rw(opaque, gpa, buf, len, false);
}

static int viommu_vtd_mem_write(void *opaque, uint64_t gpa, const void *buf,
                                size_t len)
{
    return viommu_vtd_ram_rw(opaque, gpa, (void *)buf, len, true);
}

static void viommu_vtd_msi(void *opaque, uint64_t addr, uint32_t data)
{
    if (addr < VIOMMU_VTD_MSI_BASE ||
        addr >= VIOMMU_VTD_MSI_BASE + VIOMMU_VTD_MSI_SIZE) {
        trace_viommu_vtd_msi_dropped(addr, data);
        return;
    }
    trace_viommu_vtd_msi(addr, data);
    address_space_stl_le(&address_space_memory, addr, data,
                         MEMTXATTRS_UNSPECIFIED, NULL);
}

/* A hint from the engine: start loading gpa's cache line if it is RAM. */
static void viommu_vtd_prefetch(void *opaque, uint64_t gpa)
{
    ViommuVtdState *s = opaque;
    uint8_t *host;

    if (!s->ram_cache) {
        return;                 /* a lookup would cost what the read does */
    }
    RCU_READ_LOCK_GUARD();
    host = viommu_vtd_ram_page(gpa);
    if (host) {
        __builtin_prefetch(host + gpa % VIOMMU_VTD_RAMC_PAGE);
    }
}

static uint64_t viommu_vtd_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
}

const VtdHostOps viommu_vtd_host_ops = {
    .mem_read = viommu_vtd_mem_read,
    .mem_write = viommu_vtd_mem_write,
    .msi = viommu_vtd_msi,
    .invalidated = viommu_vtd_invalidated,
    .context_invalidated = viommu_vtd_context_invalidated,
    .now_ns = viommu_vtd_now_ns,
    .device_iotlb_invalidated = viommu_vtd_device_iotlb_invalidated,
    .prefetch = viommu_vtd_prefetch,
    .event = viommu_vtd_event,
};

