// SPDX-License-Identifier: GPL-2.0-or-later
// Unmap/flush policies: what happens between a driver's dma_unmap and the
// IOVA going back to the allocator.
//
//   strict       invalidate and wait per unmap, then free
//   global-list  2008..4.6 intel-iommu: one async_umap_flush_lock, a list
//                flushed at 250 entries (inline) or by a 10 ms timer
//   percpu-defer 4.7 intel-iommu: per-CPU queues; a CPU reaching 250 flushes
//                every CPU's queue, taking each CPU's lock
//   flush-queue  4.14 iova flush queue: per-CPU 256-entry rings, atomic
//                flush_start/flush_finish counters, one 10 ms timer
//
// The invalidation itself is the Flusher callback: the same policy code can
// invalidate through viommu-vtd's queue, a cost model, or nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "allocator.hpp"

namespace viommu::iova {

class Flusher {
public:
    virtual ~Flusher() = default;
    // Page-selective invalidation of @r and wait for it (strict mode).
    virtual void flush_range(Range r) = 0;
    // Domain-wide invalidation and wait, covering everything unmapped so far.
    virtual void flush_all() = 0;
    // The same, told how many unmapped ranges the policy frees after it:
    // the descriptors a queue would write to invalidate them one by one
    // (one domain-wide descriptor covers them all).  Policies call this.
    virtual void flush_all(size_t ranges)
    {
        (void)ranges;
        flush_all();
    }
};

// Counts calls; the default when nothing should be invalidated.
class CountingFlusher final : public Flusher {
public:
    void flush_range(Range) override { ranges.fetch_add(1, std::memory_order_relaxed); }
    void flush_all() override { flush_all(0); }
    void flush_all(size_t n) override
    {
        alls.fetch_add(1, std::memory_order_relaxed);
        all_ranges.fetch_add(n, std::memory_order_relaxed);
    }
    std::atomic<uint64_t> ranges{0}, alls{0}, all_ranges{0};
};

struct FlushTunables {
    unsigned high_water = 250;      // global-list, percpu-defer
    unsigned ring_size = 256;       // flush-queue
    Nanos timeout_ns = 10'000'000;  // 10 ms
};

class FlushPolicy {
public:
    static std::unique_ptr<FlushPolicy> create(std::string_view policy, Allocator &a, Flusher &f,
                                               const FlushTunables &t = {});
    static std::span<const std::string_view> policies();

    virtual ~FlushPolicy() = default;
    // The device no longer uses [pfn, pfn + pages): invalidate (now or
    // later) and then give the range back to the allocator.
    virtual void unmap(Range r) = 0;
    // Flush and free everything still queued.
    virtual void drain() = 0;
    virtual std::vector<const InstrumentedLock *> locks() const = 0;
    // Entries not yet returned to the allocator.
    virtual size_t pending() const = 0;
    // Clears the statistics of the policy's locks (the allocator's own
    // statistics are Allocator::reset_stats()).
    void reset_stats();
};

}  // namespace viommu::iova
