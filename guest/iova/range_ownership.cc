// SPDX-License-Identifier: GPL-2.0-or-later
// viommu-lab: per-CPU range ownership (docs/iova.rst, "Our design").
//
// Small power-of-two sizes (the rcache classes) are served per CPU, per
// zone (below 4 GiB, above) and per class from, in order:
//
//   1. the CPU's loaded/prev magazines (as the rcache);
//   2. a full magazine from the class's depot, whose emptiness is checked
//      with an atomic load before its lock is taken;
//   3. the CPU's own chunk: a size-aligned block of 128 ranges taken from
//      the rbtree once, carved by bumping a pointer, no lock but the CPU's;
//   4. a new chunk: one iova_rbtree_lock hold per 128 allocations.
//
// Frees go to the freeing CPU's magazines and full magazines to an
// unbounded depot; nothing returns to the rbtree on the fast path, so the
// rbtree lock is never taken per operation.  A zone where neither a chunk
// nor the range itself could be found is flagged full, so 32-bit attempts
// on an exhausted space fail in O(1) without taking a shared lock.  When an allocation fails and
// may flush, every cache is gathered and each retired chunk whose ranges are all cached goes back
// to the tree whole; the rest is re-cached. Other sizes, and limits between 4 GiB and the top, use
// the tree directly.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <unordered_map>

#include "rcache.hpp"
#include "variants.hpp"

namespace viommu::iova {

namespace {

constexpr unsigned classes = 6, mag_size = 128, chunk_shift = 7;

class RangeOwnership final : public Allocator {
public:
    RangeOwnership(Env &env, const Config &cfg)
        : Allocator("viommu-lab", env, cfg),
          tree_(env, stats_, Walk::v5_18, cfg_.start_pfn, dma32_, cfg_.lock_timing, true),
          zones_(cfg_.end_pfn - 1 > dma32_ ? 2 : 1)
    {
        for (unsigned c = 0; c < ncpus_; c++)
            cpus_.push_back(std::make_unique<Cpu>(env, c, cfg_.lock_timing));
        for (unsigned i = 0; i < 2 * classes; i++)
            depots_.push_back(std::make_unique<Depot>(env, i, cfg_.lock_timing));
    }

    void do_flush_caches() override { reclaim(cpu()); }

    std::vector<const InstrumentedLock *> locks() const override
    {
        std::vector<const InstrumentedLock *> v{&tree_.lock()};
        for (auto &c : cpus_)
            v.push_back(&c->lock);
        for (auto &d : depots_)
            v.push_back(&d->lock);
        return v;
    }

    size_t tree_nodes() const override { return tree_.nodes(); }
    bool do_reserve(Pfn lo, Pfn hi) override { return tree_.reserve(cpu(), lo, hi); }

    void extra_json(std::string &out) const override
    {
        json_member(out, "tree_nodes", tree_.nodes());
        json_member(out, "chunks", chunks_.size());
        json_member(out, "zone32_full", zone_full_[0].load());
        out += "\"depot_size\":[";
        for (unsigned i = 0; i < depots_.size(); i++)
            out += (i ? "," : "") + std::to_string(depots_[i]->count.load());
        out += "],";
    }

protected:
    AllocResult do_alloc(uint64_t pages, Pfn limit, bool flush) override
    {
        unsigned c = cpu();
        for (;;) {
            AllocResult r = try_alloc(c, pages, limit);
            if (r.ok() || !flush)
                return r;
            flush = false;
            stats_.add(c, Counter::retries);
            stats_.add(c, Counter::rcache_flush_all);
            reclaim(c);
        }
    }

    void do_free(Pfn pfn, uint64_t pages) override
    {
        unsigned c = cpu();
        if (!Rcache::cacheable(pages, classes)) {
            free_to_tree(c, pfn);
            return;
        }
        Cpu &cpu = *cpus_[c];
        LockGuard g(cpu.lock, Site::rcache_put);
        put_locked(c, cpu, pfn, pages);
    }

    // A flush policy's batch: one CPU lock hold for all cacheable ranges.
    void do_free_batch(std::span<const Range> ranges) override
    {
        unsigned c = cpu();
        bool cacheable = false;
        for (const Range &r : ranges) {
            if (!Rcache::cacheable(r.pages, classes))
                free_to_tree(c, r.pfn);
            else
                cacheable = true;
        }
        if (!cacheable)
            return;
        Cpu &cpu = *cpus_[c];
        LockGuard g(cpu.lock, Site::rcache_put);
        for (const Range &r : ranges)
            if (Rcache::cacheable(r.pages, classes))
                put_locked(c, cpu, r.pfn, r.pages);
    }

private:
    struct Slot {
        Magazine loaded{mag_size}, prev{mag_size};
        Pfn chunk = 0, bump = 0, bump_end = 0;
        std::atomic<bool> dry{true};  // nothing to take without the depot
    };
    struct Cpu {
        Cpu(Env &env, unsigned cpu, bool timed) : lock(env, "lab_cpu", cpu, timed) {}
        InstrumentedLock lock;
        Slot slot[2][classes];
    };
    struct Depot {
        Depot(Env &env, unsigned i, bool timed) : lock(env, "lab_depot", i, timed) {}
        InstrumentedLock lock;
        std::vector<Magazine> mags;
        std::atomic<size_t> count{0};
    };
    struct Chunk {
        uint64_t carved = 0;
        bool retired = false;
        unsigned cls = 0;  // ranges of 2^cls pages
    };

    void free_to_tree(unsigned c, Pfn pfn)
    {
        unsigned z = zone_of(pfn);
        tree_.free(c, pfn);
        zone_full_[z].store(false, std::memory_order_relaxed);
        chunk_full_[z].store(false, std::memory_order_relaxed);
    }

    // With the CPU's lock held.
    void put_locked(unsigned c, Cpu &cpu, Pfn pfn, uint64_t pages)
    {
        unsigned z = zone_of(pfn);
        unsigned cls = std::bit_width(pages) - 1;
        Slot &s = cpu.slot[z][cls];
        if (!s.loaded.full()) {
            stats_.add(c, Counter::rcache_put_loaded);
        } else if (!s.prev.full()) {
            s.loaded.swap(s.prev);
            stats_.add(c, Counter::rcache_put_prev);
        } else {
            Magazine fresh(mag_size);
            Depot &d = depot(z, cls);
            LockGuard dg(d.lock, Site::depot_put);
            d.mags.push_back(std::move(s.loaded));
            d.count.store(d.mags.size(), std::memory_order_relaxed);
            s.loaded = std::move(fresh);
            stats_.add(c, Counter::rcache_put_depot);
        }
        s.loaded.push(pfn);
        s.dry.store(false, std::memory_order_relaxed);
        env_.charge(Work::mag_op, 1);
    }

    // With the CPU's lock held, after the slot changed.
    static void note_dry(Slot &s)
    {
        s.dry.store(s.loaded.empty() && s.prev.empty() && s.bump == s.bump_end,
                    std::memory_order_relaxed);
    }

    unsigned zone_of(Pfn pfn) const { return pfn > dma32_ ? 1 : 0; }
    Pfn zone_limit(unsigned z) const
    {
        return z ? cfg_.end_pfn - 1 : std::min(dma32_, cfg_.end_pfn - 1);
    }
    Depot &depot(unsigned z, unsigned cls) { return *depots_[z * classes + cls]; }

    AllocResult try_alloc(unsigned c, uint64_t pages, Pfn limit)
    {
        bool small = Rcache::cacheable(pages, classes) && limit >= zone_limit(0);
        if (small) {
            unsigned cls = std::bit_width(pages) - 1;
            Cpu &cpu = *cpus_[c];
            // A 32-bit attempt on an exhausted 32-bit space (the SAC trick,
            // "Optimise 64-bit IOVA allocations", 2017) fails before the CPU's lock when this CPU
            // has nothing cached below 4 GiB either: the flags are hints, a stale one costs a lock
            // or a retry above 4 GiB, never a range.
            if ((zones_ == 1 || limit < zone_limit(1)) &&
                zone_full_[0].load(std::memory_order_relaxed) &&
                chunk_full_[0].load(std::memory_order_relaxed) &&
                cpu.slot[0][cls].dry.load(std::memory_order_relaxed) &&
                !depot(0, cls).count.load(std::memory_order_relaxed)) {
                stats_.add(c, Counter::fast_fail_32bit);
                return {Status::no_space, 0};
            }
            LockGuard g(cpu.lock, Site::rcache_get);
            if (zones_ == 2 && limit >= zone_limit(1))
                if (auto p = take(c, 1, cls, pages))
                    return {Status::ok, *p};
            if (auto p = take(c, 0, cls, pages))
                return {Status::ok, *p};
        }
        // Other sizes, odd limits, and what is left between chunks.
        unsigned z = limit > dma32_ ? zones_ - 1 : 0;
        if (small && zone_full_[z].load(std::memory_order_relaxed) &&
            zone_full_[0].load(std::memory_order_relaxed)) {
            stats_.add(c, Counter::fast_fail_32bit);
            return {Status::no_space, 0};
        }
        AllocResult r = tree_.alloc(c, pages, limit);
        if (!r.ok() && small) {
            if (limit >= zone_limit(z))
                zone_full_[z].store(true, std::memory_order_relaxed);
            zone_full_[0].store(true, std::memory_order_relaxed);
        }
        return r;
    }

    // With the CPU's lock held.
    std::optional<Pfn> take(unsigned c, unsigned z, unsigned cls, uint64_t pages)
    {
        Slot &s = cpus_[c]->slot[z][cls];
        std::optional<Pfn> p = take_from(c, z, cls, s, pages);
        note_dry(s);
        return p;
    }

    std::optional<Pfn> take_from(unsigned c, unsigned z, unsigned cls, Slot &s, uint64_t pages)
    {
        Counter level = Counter::rcache_hit_loaded;
        if (s.loaded.empty()) {
            if (!s.prev.empty()) {
                s.loaded.swap(s.prev);
                level = Counter::rcache_hit_prev;
            } else if (depot(z, cls).count.load(std::memory_order_relaxed)) {
                Depot &d = depot(z, cls);
                LockGuard g(d.lock, Site::depot_get);
                if (!d.mags.empty()) {
                    s.loaded.swap(d.mags.back());
                    d.mags.pop_back();
                    d.count.store(d.mags.size(), std::memory_order_relaxed);
                    level = Counter::rcache_hit_depot;
                }
            }
        }
        if (!s.loaded.empty()) {
            env_.charge(Work::mag_op, 1);
            stats_.add(c, level);
            return s.loaded.pop(~Pfn{0}, false);
        }
        stats_.add(c, Counter::rcache_miss);
        if (s.bump == s.bump_end && !refill(c, z, s, pages))
            return std::nullopt;
        Pfn p = s.bump;
        s.bump += pages;
        return p;
    }

    bool refill(unsigned c, unsigned z, Slot &s, uint64_t pages)
    {
        if (chunk_full_[z].load(std::memory_order_relaxed))
            return false;
        const uint64_t chunk_pages = pages << chunk_shift;
        LockGuard g(tree_.lock(), Site::range_refill);
        retire(c, s, pages);
        AllocResult r = tree_.alloc_locked(c, chunk_pages, zone_limit(z));
        if (r.ok() && zone_of(r.pfn) != z) {
            tree_.free_locked(c, r.pfn);
            r.status = Status::no_space;
        }
        if (!r.ok()) {
            chunk_full_[z].store(true, std::memory_order_relaxed);
            return false;
        }
        chunks_[r.pfn] = {.cls = static_cast<unsigned>(std::bit_width(pages) - 1)};
        s.chunk = s.bump = r.pfn;
        s.bump_end = r.pfn + chunk_pages;
        stats_.add(c, Counter::range_refills);
        return true;
    }

    // With iova_rbtree_lock held: the slot's chunk will not be carved
    // again; its uncarved top goes back to the tree now.
    void retire(unsigned c, Slot &s, uint64_t pages)
    {
        if (s.bump_end) {
            Chunk &ch = chunks_[s.chunk];
            ch.carved = (s.bump - s.chunk) / pages;
            ch.retired = true;
            if (s.bump != s.chunk && s.bump < s.bump_end)
                tree_.shrink_locked(c, s.chunk, s.bump - 1);
        }
        s.chunk = s.bump = s.bump_end = 0;
    }

    // Every CPU's lock, then every depot's, then iova_rbtree_lock, in that
    // order, whatever is cached: the lock pattern (and so the statistics
    // and a simulator's timing) does not depend on what is found.  The work
    // between the locks is O(cached ranges + chunks); nothing is allocated
    // for an empty magazine or class.
    void reclaim(unsigned c)
    {
        std::vector<Pfn> cached[2][classes];
        for (auto &cpu : cpus_) {
            LockGuard g(cpu->lock, Site::rcache_flush);
            for (unsigned z = 0; z < 2; z++) {
                for (unsigned cls = 0; cls < classes; cls++) {
                    Slot &s = cpu->slot[z][cls];
                    // Dry (note_dry keeps it so under the CPU's lock): both
                    // magazines empty, nothing left to carve, and so
                    // nothing to do unless a carved-out chunk is to retire.
                    if (s.dry.load(std::memory_order_relaxed) && !s.bump_end)
                        continue;
                    for (Magazine *m : {&s.loaded, &s.prev}) {
                        if (m->empty())
                            continue;
                        cached[z][cls].insert(cached[z][cls].end(), m->pfns().begin(),
                                              m->pfns().end());
                        m->clear();
                    }
                    if (s.bump_end) {
                        LockGuard t(tree_.lock(), Site::rcache_flush);
                        retire(c, s, uint64_t{1} << cls);
                    }
                    note_dry(s);
                }
            }
        }
        std::vector<Magazine> spare;  // the depots' magazines, refilled below
        for (unsigned z = 0; z < 2; z++) {
            for (unsigned cls = 0; cls < classes; cls++) {
                Depot &d = depot(z, cls);
                LockGuard g(d.lock, Site::rcache_flush);
                for (auto &m : d.mags) {
                    cached[z][cls].insert(cached[z][cls].end(), m.pfns().begin(), m.pfns().end());
                    m.clear();
                    spare.push_back(std::move(m));
                }
                d.mags.clear();
                d.count.store(0, std::memory_order_relaxed);
            }
        }
        {
            LockGuard g(tree_.lock(), Site::rcache_flush);
            for (unsigned z = 0; z < 2; z++)
                for (unsigned cls = 0; cls < classes; cls++)
                    if (!cached[z][cls].empty())
                        give_back_chunks(c, cls, cached[z][cls]);
            // Retired chunks with nothing carved and nothing cached.
            std::erase_if(chunks_, [&](auto &kv) {
                if (!kv.second.retired || kv.second.carved)
                    return false;
                tree_.free_locked(c, kv.first);
                return true;
            });
            for (unsigned z = 0; z < 2; z++) {
                zone_full_[z].store(false, std::memory_order_relaxed);
                chunk_full_[z].store(false, std::memory_order_relaxed);
            }
        }
        // What is still in use stays cached, in the depots.
        for (unsigned z = 0; z < 2; z++) {
            for (unsigned cls = 0; cls < classes; cls++) {
                auto &v = cached[z][cls];
                if (v.empty())
                    continue;
                Depot &d = depot(z, cls);
                LockGuard g(d.lock, Site::rcache_flush);
                for (size_t i = 0; i < v.size(); i += mag_size) {
                    Magazine m(0);
                    if (spare.empty()) {
                        m = Magazine(mag_size);
                    } else {
                        m = std::move(spare.back());
                        spare.pop_back();
                    }
                    for (size_t j = i; j < std::min(v.size(), i + mag_size); j++)
                        m.push(v[j]);
                    d.mags.push_back(std::move(m));
                }
                d.count.store(d.mags.size(), std::memory_order_relaxed);
            }
        }
    }

    // With iova_rbtree_lock held: of @v, the cached ranges of class @cls,
    // those not carved from a chunk go back to the tree, and so does every
    // retired chunk whose carved ranges are all in @v (its ranges leave
    // @v).  What stays in @v keeps its order.
    void give_back_chunks(unsigned c, unsigned cls, std::vector<Pfn> &v)
    {
        const Pfn mask = ~((Pfn{1} << (cls + chunk_shift)) - 1);
        // A chunk of another class may start at the same aligned base:
        // only this class's chunks count.
        auto chunk_of = [&](Pfn base) {
            auto it = chunks_.find(base);
            return it != chunks_.end() && it->second.cls == cls ? it : chunks_.end();
        };
        // The chunk @p was carved from, if any.  A retired chunk's uncarved
        // top went back to the tree, which may since have handed out a
        // range there whole: that range shares the chunk's aligned base but
        // is not one of its carved ranges, and counting it as one would
        // free the chunk while a carved range is still live.
        auto carved_from = [&](Pfn p) {
            auto it = chunk_of(p & mask);
            if (it != chunks_.end() && it->second.retired &&
                ((p - it->first) >> cls) >= it->second.carved)
                return chunks_.end();
            return it;
        };
        // Chunk base -> its ranges in @v.  A fresh map: the order in which
        // chunks go back to the tree is its iteration order.
        std::unordered_map<Pfn, uint64_t> per_chunk;
        for (Pfn p : v)
            if (carved_from(p) != chunks_.end())
                per_chunk[p & mask]++;
        std::erase_if(v, [&](Pfn p) {
            auto it = carved_from(p);
            if (it == chunks_.end()) {
                tree_.free_locked(c, p);  // not from a chunk
                return true;
            }
            return it->second.retired && per_chunk[p & mask] == it->second.carved;
        });
        for (auto &[base, n] : per_chunk) {
            auto it = chunk_of(base);
            if (it != chunks_.end() && it->second.retired && n == it->second.carved) {
                tree_.free_locked(c, base);
                chunks_.erase(it);
            }
        }
    }

    IovaTree tree_;
    unsigned zones_;
    std::vector<std::unique_ptr<Cpu>> cpus_;
    std::vector<std::unique_ptr<Depot>> depots_;
    std::unordered_map<Pfn, Chunk> chunks_;             // under iova_rbtree_lock
    std::atomic<bool> chunk_full_[2] = {false, false};  // no chunk left in the zone
    std::atomic<bool> zone_full_[2] = {false, false};   // not even a single range
};

}  // namespace

std::unique_ptr<Allocator> make_range_ownership(Env &env, const Config &cfg)
{
    return std::make_unique<RangeOwnership>(env, cfg);
}

}  // namespace viommu::iova
