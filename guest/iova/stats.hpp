// SPDX-License-Identifier: GPL-2.0-or-later
// Counters and histograms the allocator keeps about itself, and their JSON
// export (schema: docs/iova-stats.rst).
//
// Operation counters live in per-CPU slots that only the owning CPU writes
// (relaxed load + store, like this_cpu_inc), so keeping them on costs no
// shared cache line.  With more OS threads than CPU slots two threads may
// share a slot and lose an increment; counters are statistics, never used
// for decisions.  Readers sum the slots.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

namespace viommu::iova {

// log2 buckets: bucket 0 holds 0, bucket i holds [2^(i-1), 2^i).
template <unsigned N>
struct Log2Histogram {
    std::array<uint64_t, N> buckets{};
    uint64_t count = 0, sum = 0, max = 0;

    static unsigned bucket_of(uint64_t v)
    {
        unsigned b = static_cast<unsigned>(std::bit_width(v));
        return b < N ? b : N - 1;
    }
    // Relaxed atomic adds: in real-thread mode two threads can share a CPU id
    // (ids wrap around when the timer thread takes one too), so a per-CPU
    // histogram is not always written by one thread.  Readers merge after the
    // writers are done.
    void add(uint64_t v)
    {
        constexpr auto relaxed = std::memory_order_relaxed;
        std::atomic_ref(buckets[bucket_of(v)]).fetch_add(1, relaxed);
        std::atomic_ref(count).fetch_add(1, relaxed);
        std::atomic_ref(sum).fetch_add(v, relaxed);
        std::atomic_ref<uint64_t> m(max);
        uint64_t cur = m.load(relaxed);
        while (v > cur && !m.compare_exchange_weak(cur, v, relaxed)) {
        }
    }
    // The same for a writer that excludes every other (a lock's holder).
    void add_exclusive(uint64_t v)
    {
        buckets[bucket_of(v)]++;
        count++;
        sum += v;
        max = v > max ? v : max;
    }
    void merge(const Log2Histogram &o)
    {
        for (unsigned i = 0; i < N; i++)
            buckets[i] += o.buckets[i];
        count += o.count;
        sum += o.sum;
        max = o.max > max ? o.max : max;
    }
};

using TimeHistogram = Log2Histogram<40>;   // nanoseconds
using AddrHistogram = Log2Histogram<65>;   // IOVA byte address
using NodesHistogram = Log2Histogram<32>;  // rbtree nodes per operation

enum class Counter : uint8_t {
    alloc_calls,
    alloc_failed,
    free_calls,
    rbtree_allocs,  // allocations that reached the rbtree
    rbtree_frees,
    nodes_visited,  // rbtree nodes examined, all operations
    rcache_hit_loaded,
    rcache_hit_prev,
    rcache_hit_depot,
    rcache_miss,
    rcache_put_loaded,
    rcache_put_prev,
    rcache_put_depot,
    rcache_put_tree,   // full magazine freed to the rbtree
    rcache_flush_all,  // whole-cache flushes (every CPU)
    depot_trims,
    failed_32bit,     // 32-bit (SAC) attempts that failed
    retries,          // second attempts after a failure
    fast_fail_32bit,  // 5.0+ max32_alloc_size fail-fast
    retry_from_last,  // 5.11 second pass
    restart_walks,    // 5.13 restart from iova_find_limit
    bad_size,         // zero/oversized size
    bad_limit,        // limit below start_pfn
    bad_free,         // free of a range never allocated / freed twice
    unmaps,
    unmap_flushes,  // IOTLB flush callbacks issued by the unmap layer
    unmap_timer_flushes,
    range_refills,  // percpu-batch batches, viommu-lab chunks
    cache_flushes,  // explicit flush_caches() calls
    reserves,       // ranges reserved (reserve_iova)
    bad_reserve,    // reserve of a range in use
    count_
};

const char *counter_name(Counter c);

// One CPU's slot, cache-line aligned.
struct alignas(64) CpuCounters {
    std::array<std::atomic<uint64_t>, static_cast<unsigned>(Counter::count_)> v{};

    void add(Counter c, uint64_t n = 1)
    {
        auto &x = v[static_cast<unsigned>(c)];
        x.store(x.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
};

// Per-operation distributions, guarded by the caller's lock.
struct OpHistograms {
    NodesHistogram nodes_per_alloc;
    NodesHistogram nodes_per_free;
    AddrHistogram alloc_addr;
};

class Stats {
public:
    Stats(unsigned ncpus, bool enabled);

    bool enabled() const { return enabled_; }
    void add(unsigned cpu, Counter c, uint64_t n = 1)
    {
        if (enabled_)
            cpus_[cpu].add(c, n);
    }
    uint64_t total(Counter c) const;
    // @c as counted on @cpu alone
    uint64_t on_cpu(unsigned cpu, Counter c) const
    {
        return cpus_.at(cpu).v[static_cast<unsigned>(c)].load(std::memory_order_relaxed);
    }
    // Counters that must be exact (bad input) are counted even when off.
    void add_always(unsigned cpu, Counter c) { cpus_[cpu].add(c, 1); }

    // Per-CPU histograms: written only by that CPU.
    OpHistograms &hist(unsigned cpu) { return hists_[cpu].h; }
    OpHistograms merged_hist() const;

    void reset();

private:
    bool enabled_;
    std::vector<CpuCounters> cpus_;
    struct alignas(64) PaddedHist {
        OpHistograms h;
    };
    std::vector<PaddedHist> hists_;
};

}  // namespace viommu::iova
