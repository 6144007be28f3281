// SPDX-License-Identifier: GPL-2.0-or-later
// The IOVA range cache ("rcache", 4.7 onwards): per size class, per CPU a
// loaded and a prev magazine under a per-CPU lock, and a depot of full
// magazines under the size class's lock.
//
//   4.7    magazines of 128 pfns, depot of 32; a full magazine that finds
//          the depot full is freed to the rbtree under iova_rbtree_lock;
//          pop checks only the top pfn against the limit
//   4.15+  pop scans the magazine for a pfn below the limit
//   6.7    127-pfn magazines, unbounded depot; every push (re)arms a 100 ms
//          timer that frees one magazine while depot > ncpus
//
// Only power-of-two sizes are cached: a cached range is handed out for any
// request of its class, which is only safe when the class has one size.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "tree.hpp"

namespace viommu::iova {

struct RcacheParams {
    unsigned mag_size = 128;
    unsigned max_depot = 32;     // 0: unbounded (6.7)
    bool scan_magazine = false;  // 4.15+
    bool trim_depot = false;     // 6.7 delayed trimming
    Nanos trim_delay_ns = 100'000'000;
    unsigned classes = 6;  // orders 0..5
};

// A stack of pfns of one size class.  Its storage is allocated whole at the
// first push: a magazine never filled costs no allocation.
class Magazine {
public:
    explicit Magazine(unsigned cap) : cap_(cap) {}
    bool empty() const { return pfns_.empty(); }
    bool full() const { return pfns_.size() >= cap_; }
    void push(Pfn p)
    {
        if (pfns_.capacity() < cap_)
            pfns_.reserve(cap_);
        pfns_.push_back(p);
    }
    // Top pfn if at or below @limit; with @scan any such pfn.
    std::optional<Pfn> pop(Pfn limit, bool scan);
    std::span<const Pfn> pfns() const { return pfns_; }
    void clear() { pfns_.clear(); }
    void swap(Magazine &o) { pfns_.swap(o.pfns_); }

private:
    size_t cap_;
    std::vector<Pfn> pfns_;
};

class Rcache {
public:
    Rcache(Env &env, Stats &stats, IovaTree &tree, RcacheParams p, unsigned ncpus, bool timed);
    ~Rcache();

    static bool cacheable(uint64_t pages, unsigned classes);

    std::optional<Pfn> get(unsigned cpu, uint64_t pages, Pfn limit);
    // False if @pages is not cacheable (the caller frees to the tree).
    bool put(unsigned cpu, Pfn pfn, uint64_t pages);
    // free_cpu_cached_iovas(@cpu)
    void flush_cpu(unsigned cpu);
    // free_global_cached_iovas()
    void flush_depot();

    size_t depot_size(unsigned cls) const;
    size_t cached_pfns() const;
    void locks(std::vector<const InstrumentedLock *> &out) const;

private:
    std::optional<Pfn> highest_start(uint64_t pages, Pfn limit) const;
    struct CpuCache {
        CpuCache(Env &env, unsigned cpu, unsigned mag, bool timed)
            : lock(env, "cpu_rcache", cpu, timed), loaded(mag), prev(mag)
        {
        }
        InstrumentedLock lock;
        Magazine loaded, prev;
    };
    struct SizeClass {
        SizeClass(Env &env, unsigned cls, bool timed) : lock(env, "rcache_depot", cls, timed) {}
        InstrumentedLock lock;
        std::vector<Magazine> depot;
        std::vector<std::unique_ptr<CpuCache>> cpus;
        std::unique_ptr<Timer> trim;
    };
    void trim(unsigned cls);

    Env &env_;
    Stats &stats_;
    IovaTree &tree_;
    RcacheParams p_;
    unsigned ncpus_;
    std::vector<std::unique_ptr<SizeClass>> classes_;
};

}  // namespace viommu::iova
