// SPDX-License-Identifier: GPL-2.0-or-later
// Per-CPU counters and histograms; see stats.hpp.
#include "stats.hpp"

namespace viommu::iova {

const char *counter_name(Counter c)
{
    static constexpr const char *names[] = {
        "alloc_calls",      "alloc_failed",    "free_calls",          "rbtree_allocs",
        "rbtree_frees",     "nodes_visited",   "rcache_hit_loaded",   "rcache_hit_prev",
        "rcache_hit_depot", "rcache_miss",     "rcache_put_loaded",   "rcache_put_prev",
        "rcache_put_depot", "rcache_put_tree", "rcache_flush_all",    "depot_trims",
        "failed_32bit",     "retries",         "fast_fail_32bit",     "retry_from_last",
        "restart_walks",    "bad_size",        "bad_limit",           "bad_free",
        "unmaps",           "unmap_flushes",   "unmap_timer_flushes", "range_refills",
        "cache_flushes",    "reserves",        "bad_reserve",
    };
    static_assert(std::size(names) == static_cast<unsigned>(Counter::count_));
    return names[static_cast<unsigned>(c)];
}

Stats::Stats(unsigned ncpus, bool enabled) : enabled_(enabled), cpus_(ncpus), hists_(ncpus) {}

uint64_t Stats::total(Counter c) const
{
    uint64_t sum = 0;
    for (const auto &cpu : cpus_)
        sum += cpu.v[static_cast<unsigned>(c)].load(std::memory_order_relaxed);
    return sum;
}

OpHistograms Stats::merged_hist() const
{
    OpHistograms m;
    for (const auto &h : hists_) {
        m.nodes_per_alloc.merge(h.h.nodes_per_alloc);
        m.nodes_per_free.merge(h.h.nodes_per_free);
        m.alloc_addr.merge(h.h.alloc_addr);
    }
    return m;
}

void Stats::reset()
{
    for (auto &cpu : cpus_)
        for (auto &v : cpu.v)
            v.store(0, std::memory_order_relaxed);
    for (auto &h : hists_)
        h.h = {};
}

}  // namespace viommu::iova
