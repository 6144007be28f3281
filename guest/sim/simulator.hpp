// SPDX-License-Identifier: GPL-2.0-or-later
// One simulation run: a workload on N virtual CPUs through an allocator
// variant, a dma-iommu mode, an unmap/flush policy and an invalidation
// queue model, timed by the one cost model (docs/simulation.rst).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cost.hpp"
#include "invq.hpp"
#include "params.hpp"

namespace viommu::sim {

// Every parameter of a run (params.hpp).  dma modes:
//   sac        try 32 bits without flushing the rcache, then the full mask
//   sac-flush  pre-4.15 dma-iommu: the failed 32-bit attempt flushes every
//              CPU's rcache and retries (Nate Watterson's case)
//   sac-once   6.6: a device that failed 32 bits never tries again
//   forcedac   never try 32 bits first
// rcache_drain_ns > 0: every this many virtual ns CPU 0 returns every
// CPU's cached IOVAs to the tree (Allocator::flush_caches, what CPU
// hot-unplug or a shrinker does): a stressor that makes the rcache run dry.
using SimConfig = Params;

std::span<const std::string_view> dma_modes();

struct LockSiteProfile {
    std::string lock;
    std::string site;
    uint64_t acquisitions = 0;
    uint64_t contended = 0;
    Nanos spin_ns = 0;
    Nanos hold_ns = 0;
    Nanos handoff_ns = 0;  // lock-line transfers on handoffs (in spin_ns)
};

// Where the CPU time of the measured window went; the entries add up to
// all of it (as perf's profile adds up to 100% of the samples).
struct CycleShare {
    std::string what;        // "spin", "work", "device-wait", "allocator", ...
    std::string lock, site;  // for "spin"
    Nanos ns = 0;
};

struct SimResult {
    SimConfig config;
    unsigned cpus = 0;
    std::string unit;
    uint64_t transactions = 0;             // in the measured window
    uint64_t dropped = 0;                  // ... of them one of whose maps failed
    double elapsed_ns = 0;                 // mean CPU clock advance in the window
    double throughput = 0;                 // transactions not dropped, per second
    double baseline_throughput = 0;        // same workload without an IOMMU
    double relative = 0;                   // throughput / baseline_throughput
    double latency_ns = 0;                 // mean CPU time per operation not dropped
    double baseline_latency_ns = 0;        // ... without an IOMMU
    double spin_share = 0;                 // share of CPU time in spinlock functions
    std::vector<LockSiteProfile> profile;  // by spin time, largest first
    std::vector<CycleShare> cycles;        // every CPU nanosecond, by category
    Nanos cpu_time_ns = 0;                 // CPU time of the window, all CPUs
    uint64_t maps = 0;                     // map calls in the window
    uint64_t retried_maps = 0;             // ... that took a retry or restart path
    double allocator_retries = 0;          // retried_maps / maps
    uint64_t failed_maps = 0;
    double nodes_per_alloc = 0;  // rbtree nodes per rbtree allocation
    uint64_t rbtree_allocs = 0;
    uint64_t rcache_flushes = 0;
    unsigned domains = 1;  // IOMMU domains (one per device group)
    InvStats inv;
    std::string allocator_stats;  // the allocator's own JSON (an array if several domains)
    std::string cost_overrides;   // a JSON object of the fields not CostModel::standard()'s, or ""
    bool window_cut = false;      // a --duration window ended at 2^24 operations on some CPU
    // no time passed without the IOMMU (free operations): that run has no
    // rate, and baseline_throughput and relative are 0 but mean nothing
    bool untimed_baseline = false;

    // Share of all CPU time spent spinning on @lock (all sites if @site empty).
    double spin_share_of(std::string_view lock, std::string_view site = {}) const;
    // Share of the spinlock time that went to @lock/@site, as perf's call graph.
    double spin_fraction_of(std::string_view lock, std::string_view site = {}) const;
    // Mean hold time of @lock at @site (all sites if empty).
    double mean_hold_ns(std::string_view lock, std::string_view site = {}) const;
    std::string json() const;
};

struct WorkloadInfo;

// Sees the IOMMU operations of the run with an IOMMU (viommu-sim --record,
// trace_record.hpp): each from its start to its end on the CPU's clock.
class RunObserver {
public:
    enum Kind { map, unmap, flush, txn };
    virtual ~RunObserver() = default;
    virtual void begin(const WorkloadInfo &info) = 0;
    virtual void op(Kind k, unsigned cpu, uint8_t dev, uint64_t iova, uint64_t bytes, Nanos start,
                    Nanos end) = 0;
    // every CPU's clock was moved to @now (the phases start together)
    virtual void aligned(Nanos now) = 0;
    virtual void window_start() = 0;
};

// Told every 2^23 operations a run starts (warm-up included): how many so
// far, and whether in the run with the IOMMU (else its no-IOMMU baseline).
using Progress = std::function<void(uint64_t started, bool with_iommu)>;

// Runs a simulation; nullopt (and @error set) on a bad configuration.
std::optional<SimResult> simulate(const SimConfig &cfg,
                                  const CostModel &cost = CostModel::standard(),
                                  std::string *error = nullptr, RunObserver *observer = nullptr,
                                  const Progress &progress = {});

}  // namespace viommu::sim
