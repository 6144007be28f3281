// SPDX-License-Identifier: GPL-2.0-or-later
// The dma-iommu layer above the allocator: byte sizes to granule pages
// (rounded to a power of two below the rcache limit, as iommu_dma_alloc_iova
// does), the PCI "SAC" trick (try below 4 GiB without flushing the caches,
// then the full mask with the flush), the 6.6 "only try 32-bit once per
// device" behaviour, and iommu.forcedac.
#pragma once

#include <cstdint>

#include "allocator.hpp"
#include "flush.hpp"

namespace viommu::iova {

struct DmaOptions {
    bool forcedac = false;   // never try the 32-bit space first
    bool sac_once = false;   // 6.6: a device that failed 32-bit never retries it
    bool sac_flush = false;  // before 4.15's SAC rework ("Optimise 64-bit IOVA allocations", 2017):
                             // the 32-bit attempt may flush the caches too
};

struct DmaDevice {
    uint64_t dma_mask = ~uint64_t{0};
    bool pci = true;
    bool sac_failed = false;  // set by the 6.6 behaviour
};

struct MapResult {
    Status status = Status::no_space;
    uint64_t iova = 0;  // bytes
    bool ok() const { return status == Status::ok; }
};

class DmaDomain {
public:
    DmaDomain(Allocator &a, FlushPolicy &fq, DmaOptions o = {}) : alloc_(a), fq_(fq), opt_(o) {}

    // Allocate IOVA space for a @bytes long mapping (the page-table write is
    // the caller's business).
    MapResult map(DmaDevice &dev, uint64_t bytes);
    // Tear down a mapping made by map() with the same @bytes.
    void unmap(uint64_t iova, uint64_t bytes);

    uint64_t pages_for(uint64_t bytes) const;
    Allocator &allocator() { return alloc_; }
    FlushPolicy &flush_policy() { return fq_; }

private:
    Allocator &alloc_;
    FlushPolicy &fq_;
    DmaOptions opt_;
};

}  // namespace viommu::iova
