/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: a per-thread cache of the host addresses of the guest RAM
 * pages the engine reads (page tables, context tables, queue pages).
 *
 * Why not the memory API alone.  Every page walk reads one entry per
 * level, and the engine reads context and root entries, queue
 * descriptors and, on IOTLB misses, table entries: small reads at
 * addresses the guest chooses anew each time.  address_space_read() and
 * dma_memory_read() look each one up in the flat view (dispatch, section,
 * RAM block) before copying 8 bytes; a MemoryRegionCache saves that only
 * for a range set up in advance and kept (virtio's rings), which page
 * tables scattered over guest memory are not: one per read would cost the
 * same lookup.  Reads through the memory API would also reach MMIO, where
 * a table pointing at our own registers would re-enter the engine; the
 * callers allow plain RAM only.
 *
 * What it saves, measured with the translated-DMA benchmark against the
 * same device without it (x-ram-cache=off: every read takes the
 * address_space_translate() path, as writes do), is in
 * docs/performance.rst ("RAM-page cache").
 *
 * Invalidation rule.  An entry is valid while viommu_vtd_ram_gen is the
 * value it was filled under.  A memory listener bumps the generation at
 * the beginning and at the end of every memory transaction, so no entry
 * filled before a RAM layout change is used after it (the generation is
 * sampled before the lookup: a change meanwhile makes the new entry
 * stale).  A RAM block removed from the layout is freed only after an RCU
 * grace period, and every use of a cached pointer happens inside the RCU
 * critical section that checked the generation.  Only reads use it;
 * writes go through address_space_rw() for dirty tracking.
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/rcu.h"
#include "exec/address-spaces.h"
#include "exec/memory.h"
#include "viommu-vtd-internal.h"

#define VIOMMU_VTD_RAMC_SIZE 256

typedef struct ViommuVtdRamc {
    uint64_t gen;
    uint64_t page;
    uint8_t *host;
} ViommuVtdRamc;

static __thread ViommuVtdRamc viommu_vtd_ramc[VIOMMU_VTD_RAMC_SIZE];
static uint64_t viommu_vtd_ram_gen = 1;

static void viommu_vtd_ram_changed(MemoryListener *listener)
{
    qatomic_inc(&viommu_vtd_ram_gen);
}

static MemoryListener viommu_vtd_ram_listener = {
    .name = "viommu-vtd-ram",
    .begin = viommu_vtd_ram_changed,
    .commit = viommu_vtd_ram_changed,
};

uint8_t *viommu_vtd_ram_page(uint64_t gpa)
{
    uint64_t page = gpa / VIOMMU_VTD_RAMC_PAGE;
    ViommuVtdRamc *c = &viommu_vtd_ramc[page % VIOMMU_VTD_RAMC_SIZE];
    uint64_t gen = qatomic_load_acquire(&viommu_vtd_ram_gen);
    hwaddr xlat, l = VIOMMU_VTD_RAMC_PAGE;
    MemoryRegion *mr;

    if (c->gen == gen && c->page == page) {
        return c->host;
    }
    mr = address_space_translate(&address_space_memory,
                                 page * VIOMMU_VTD_RAMC_PAGE, &xlat, &l,
                                 false, MEMTXATTRS_UNSPECIFIED);
    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        l < VIOMMU_VTD_RAMC_PAGE) {
        return NULL;
    }
    c->host = qemu_map_ram_ptr(mr->ram_block, xlat);
    c->page = page;
    c->gen = gen;
    return c->host;
}

/*
 * One listener for the cache of all instances (never removed: the IOMMU
 * cannot be unplugged).
 */
void viommu_vtd_ram_init(void)
{
    if (!viommu_vtd_ram_listener.address_space) {
        memory_listener_register(&viommu_vtd_ram_listener,
                                 &address_space_memory);
    }
}
