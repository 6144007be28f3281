// SPDX-License-Identifier: GPL-2.0-or-later
// The dma-iommu layer: iommu_dma_alloc_iova() and its unmap side.
#include "dma.hpp"

#include <algorithm>
#include <bit>

namespace viommu::iova {

uint64_t DmaDomain::pages_for(uint64_t bytes) const
{
    const unsigned shift = alloc_.config().granule_shift;
    uint64_t pages = (bytes + (uint64_t{1} << shift) - 1) >> shift;
    // Sizes the rcache can hold are rounded up to a power of two so that
    // they can be cached (6 classes: below 32 pages).
    if (pages && pages < (1u << 5))
        pages = std::bit_ceil(pages);
    return pages;
}

MapResult DmaDomain::map(DmaDevice &dev, uint64_t bytes)
{
    const unsigned shift = alloc_.config().granule_shift;
    const uint64_t pages = pages_for(bytes);
    const Pfn dma_limit = std::min(dev.dma_mask >> shift, alloc_.end_pfn() - 1);
    const Pfn limit32 = Allocator::pfn_32bit(shift);
    Stats &st = alloc_.stats();
    unsigned cpu = alloc_.env().current_cpu() % alloc_.config().ncpus;

    if (!bytes)
        return {Status::bad_size, 0};
    AllocResult r{Status::no_space, 0};
    bool try_sac =
        dev.pci && dma_limit > limit32 && !opt_.forcedac && !(opt_.sac_once && dev.sac_failed);
    if (try_sac) {
        r = alloc_.alloc(pages, limit32, opt_.sac_flush);
        if (!r.ok() && r.status == Status::no_space) {
            st.add_always(cpu, Counter::failed_32bit);
            if (opt_.sac_once)
                dev.sac_failed = true;
        }
    }
    if (!r.ok()) {
        if (try_sac)
            st.add(cpu, Counter::retries);
        r = alloc_.alloc(pages, dma_limit, true);
    }
    if (!r.ok())
        return {r.status, 0};
    return {Status::ok, r.pfn << shift};
}

void DmaDomain::unmap(uint64_t iova, uint64_t bytes)
{
    const unsigned shift = alloc_.config().granule_shift;
    fq_.unmap({iova >> shift, pages_for(bytes)});
}

}  // namespace viommu::iova
