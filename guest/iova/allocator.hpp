// SPDX-License-Identifier: GPL-2.0-or-later
// The IOVA allocator interface: what the kernel calls alloc_iova_fast() /
// free_iova_fast() on an iova_domain, in page frames ("pfns") of the
// domain's granule.  Every historical variant implements it.
//
// Variants (Allocator::create by name):
//   linux-4.4     rbtree + cached32_node, one iova_rbtree_lock, no cache
//   percpu-batch  Shaohua Li's V2 (iommu list, 2016): per-CPU free lists <= 64 KiB,
//                 batched refill/release under one rbtree lock hold
//   linux-4.7     4.4 tree + per-CPU magazines, bounded depot of 32
//   linux-4.15    cached_node/cached32_node + anchor, magazine scan
//   linux-5.0     + max32_alloc_size fail-fast
//   linux-5.11    + retry from the last node, flush frees the depot
//   linux-5.13    + restart from iova_find_limit (commit 371d7955e310)
//   linux-6.7     + unbounded depot list, delayed trim; 127-pfn magazines
//   viommu-lab    per-CPU range ownership, lock-free fast path (docs/iova.rst)
//
// Threading: alloc/free may be called from any thread / virtual CPU; the
// current CPU comes from the Env.  No function throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "env.hpp"
#include "lock.hpp"
#include "stats.hpp"

namespace viommu::iova {

using Pfn = uint64_t;

enum class Status : int {
    ok = 0,
    no_space = 1,       // no free range below the limit (ENOMEM)
    bad_size = 2,       // zero, or larger than the domain
    bad_limit = 3,      // limit_pfn below start_pfn
    not_allocated = 4,  // free of a range that is not live (never, or twice)
    bad_variant = 5,
    busy = 7,  // reserve of a range that overlaps one in use
};

const char *status_name(Status s);

// A range of pages, as the unmap layer hands it back.
struct Range {
    Pfn pfn;
    uint64_t pages;
};

struct AllocResult {
    Status status = Status::no_space;
    Pfn pfn = 0;
    bool ok() const { return status == Status::ok; }
};

struct Config {
    unsigned granule_shift = 12;  // 4 KiB pages; 16 for 64 KiB
    Pfn start_pfn = 1;            // lowest allocatable pfn (pfn 0 is never used)
    Pfn end_pfn = 0;              // highest pfn + 1; 0: 2^48 bytes >> granule
    unsigned ncpus = 0;           // 0: Env::ncpus()
    bool stats = true;            // counters and histograms
    bool lock_timing = true;      // wait/hold clock reads in every lock
    bool check_frees = true;      // detect double/unknown frees (shadow set)
};

// A live-range registry used to reject bad frees before they reach
// structures (magazines) that would otherwise be corrupted by them.
class LiveSet;

class Allocator {
public:
    static constexpr Pfn pfn_32bit(unsigned shift) { return (Pfn{1} << (32 - shift)) - 1; }

    static std::unique_ptr<Allocator> create(std::string_view variant, Env &env,
                                             const Config &cfg = {});
    static std::span<const std::string_view> variants();

    virtual ~Allocator();

    // Allocate @pages (size-aligned, as the DMA API does) at or below
    // @limit_pfn.  @flush_rcache: on failure flush the per-CPU caches and
    // retry once (alloc_iova_fast's flag).
    AllocResult alloc(uint64_t pages, Pfn limit_pfn, bool flush_rcache = true);
    // Free a range returned by alloc(); @pages must be what was asked.
    Status free(Pfn pfn, uint64_t pages);
    // free() of each range, in order (a flush policy handing back what an
    // invalidation covered); a variant may take its locks once for all.
    // Returns how many were refused (counted as bad_free).
    size_t free_batch(std::span<const Range> ranges);
    // The unmap path's lookup of a range before it is queued for a
    // deferred free.  linux-4.4's kernel frees a struct iova, so the
    // 2008..4.6 intel_unmap() finds it with find_iova() (one hold of
    // iova_rbtree_lock, on the unmapping CPU) before add_unmap(); the
    // variants with a free that takes a pfn and a size (free_iova_fast()
    // from 4.7, percpu-batch, viommu-lab) look nothing up and return ok.
    // not_allocated (counted as bad_free) if the lookup finds no range
    // starting at @pfn.
    Status lookup(Pfn pfn, uint64_t pages);
    // free_batch() of ranges that lookup() found: linux-4.4 erases each
    // (__free_iova(), one hold each, no second lookup); the other variants
    // free as free_batch() does.
    size_t free_found_batch(std::span<const Range> ranges);

    // Take [lo, hi] out of the domain for good (reserve_iova(), e.g. the
    // MSI window at 0xfee00000): busy if any of it is allocated or cached,
    // bad_limit/bad_size for a range outside the domain or hi < lo.
    Status reserve(Pfn lo, Pfn hi);

    // Return every cached range to the tree (free_cpu_cached_iovas for all
    // CPUs); counted as cache_flushes.
    void flush_caches();

    std::string_view name() const { return name_; }
    const Config &config() const { return cfg_; }
    Pfn dma_32bit_pfn() const { return dma32_; }
    Pfn end_pfn() const { return cfg_.end_pfn; }
    Env &env() { return env_; }
    Stats &stats() { return stats_; }
    const Stats &stats() const { return stats_; }

    // Statistics as one JSON object (docs/iova-stats.rst).
    std::string stats_json() const;
    // The same into @out (cleared first), reusing its storage.
    void stats_json(std::string &out) const;
    void reset_stats();

    // Every lock the variant owns, for reports and the simulator.
    virtual std::vector<const InstrumentedLock *> locks() const = 0;
    // Ranges currently in the rbtree (allocated or cached), for tests.
    virtual size_t tree_nodes() const = 0;
    // Variant-specific gauges (depot sizes, ...) as JSON members "k": v.
    virtual void extra_json(std::string &out) const;

protected:
    Allocator(std::string_view name, Env &env, const Config &cfg);
    virtual AllocResult do_alloc(uint64_t pages, Pfn limit_pfn, bool flush_rcache) = 0;
    virtual void do_free(Pfn pfn, uint64_t pages) = 0;
    virtual void do_free_batch(std::span<const Range> ranges)
    {
        for (const Range &r : ranges)
            do_free(r.pfn, r.pages);
    }
    // lookup() and free_found_batch() of a variant that frees a struct
    // iova it must find first; the defaults: nothing to look up.
    virtual bool do_lookup(Pfn pfn)
    {
        (void)pfn;
        return true;
    }
    virtual void do_free_found_batch(std::span<const Range> ranges) { do_free_batch(ranges); }
    virtual void do_flush_caches() = 0;
    // Insert [lo, hi] as one node unless it overlaps one.
    virtual bool do_reserve(Pfn lo, Pfn hi) = 0;

    unsigned cpu() { return env_.current_cpu() % ncpus_; }
    // Argument and live-set check of a free; counts it.
    bool accept_free(unsigned cpu, Pfn pfn, uint64_t pages);
    // free_batch() and free_found_batch(): the accepted ranges to @found
    // or not.
    size_t free_accepted(std::span<const Range> ranges, bool found);
    unsigned ncpus() const { return ncpus_; }
    void note_alloc(unsigned cpu, Pfn pfn);

    std::string name_;
    Env &env_;
    Config cfg_;
    unsigned ncpus_;
    Pfn dma32_;
    Stats stats_;
    std::unique_ptr<LiveSet> live_;
};

}  // namespace viommu::iova
