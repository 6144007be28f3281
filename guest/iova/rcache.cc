// SPDX-License-Identifier: GPL-2.0-or-later
// Per-CPU magazines and the depot; see rcache.hpp.
#include "rcache.hpp"

#include <bit>
#include <cstddef>

namespace viommu::iova {

std::optional<Pfn> Magazine::pop(Pfn limit, bool scan)
{
    if (pfns_.empty())
        return std::nullopt;
    size_t i = pfns_.size() - 1;
    while (pfns_[i] > limit) {
        if (!scan || i == 0)
            return std::nullopt;
        i--;
    }
    Pfn p = pfns_[i];
    pfns_[i] = pfns_.back();
    pfns_.pop_back();
    return p;
}

Rcache::Rcache(Env &env, Stats &stats, IovaTree &tree, RcacheParams p, unsigned ncpus, bool timed)
    : env_(env), stats_(stats), tree_(tree), p_(p), ncpus_(ncpus)
{
    for (unsigned c = 0; c < p_.classes; c++) {
        auto sc = std::make_unique<SizeClass>(env, c, timed);
        for (unsigned cpu = 0; cpu < ncpus; cpu++)
            sc->cpus.push_back(std::make_unique<CpuCache>(env, cpu, p_.mag_size, timed));
        if (p_.trim_depot)
            sc->trim = std::make_unique<Timer>([this, c] { trim(c); });
        classes_.push_back(std::move(sc));
    }
}

Rcache::~Rcache()
{
    for (auto &sc : classes_)
        if (sc->trim)
            env_.cancel_timer(*sc->trim);
}

bool Rcache::cacheable(uint64_t pages, unsigned classes)
{
    return std::has_single_bit(pages) && std::bit_width(pages) <= classes;
}

std::optional<Pfn> Rcache::get(unsigned cpu, uint64_t pages, Pfn limit)
{
    if (!cacheable(pages, p_.classes))
        return std::nullopt;
    SizeClass &sc = *classes_[std::bit_width(pages) - 1];
    CpuCache &cc = *sc.cpus[cpu];
    Counter level = Counter::rcache_hit_loaded;
    std::optional<Pfn> pfn;

    LockGuard g(cc.lock, Site::rcache_get);
    if (!cc.loaded.empty()) {
        level = Counter::rcache_hit_loaded;
    } else if (!cc.prev.empty()) {
        cc.loaded.swap(cc.prev);
        level = Counter::rcache_hit_prev;
    } else {
        LockGuard d(sc.lock, Site::depot_get);
        if (sc.depot.empty()) {
            stats_.add(cpu, Counter::rcache_miss);
            return std::nullopt;
        }
        cc.loaded.swap(sc.depot.back());
        sc.depot.pop_back();
        level = Counter::rcache_hit_depot;
    }
    env_.charge(Work::mag_op, 1);
    if (std::optional<Pfn> start = highest_start(pages, limit))
        pfn = cc.loaded.pop(*start, p_.scan_magazine);
    stats_.add(cpu, pfn ? level : Counter::rcache_miss);
    return pfn;
}

// The highest pfn a cached range of @pages may start at under @limit, none
// if none can: 6.1's iova_rcache_get() pops with limit_pfn - size (the whole
// range fits), which comes here with the magazine scan; 4.7 compares the
// start alone and refuses the top at the limit itself (top >= limit).
std::optional<Pfn> Rcache::highest_start(uint64_t pages, Pfn limit) const
{
    if (!p_.scan_magazine)
        return limit ? std::optional<Pfn>(limit - 1) : std::nullopt;
    return limit + 1 >= pages ? std::optional<Pfn>(limit + 1 - pages) : std::nullopt;
}

bool Rcache::put(unsigned cpu, Pfn pfn, uint64_t pages)
{
    if (!cacheable(pages, p_.classes))
        return false;
    unsigned cls = std::bit_width(pages) - 1;
    SizeClass &sc = *classes_[cls];
    CpuCache &cc = *sc.cpus[cpu];
    std::optional<Magazine> to_free;
    bool arm = false;
    {
        LockGuard g(cc.lock, Site::rcache_put);
        if (!cc.loaded.full()) {
            stats_.add(cpu, Counter::rcache_put_loaded);
        } else if (!cc.prev.full()) {
            cc.loaded.swap(cc.prev);
            stats_.add(cpu, Counter::rcache_put_prev);
        } else {
            Magazine fresh(p_.mag_size);
            LockGuard d(sc.lock, Site::depot_put);
            if (!p_.max_depot || sc.depot.size() < p_.max_depot) {
                sc.depot.push_back(std::move(cc.loaded));
                stats_.add(cpu, Counter::rcache_put_depot);
                arm = p_.trim_depot;
            } else {
                to_free.emplace(std::move(cc.loaded));
                stats_.add(cpu, Counter::rcache_put_tree);
            }
            cc.loaded = std::move(fresh);
        }
        cc.loaded.push(pfn);
        env_.charge(Work::mag_op, 1);
    }
    if (to_free)
        tree_.free_batch(cpu, to_free->pfns(), Site::free_batch);
    if (arm)
        env_.arm_timer(*sc.trim, env_.now() + p_.trim_delay_ns);
    return true;
}

void Rcache::flush_cpu(unsigned cpu)
{
    for (auto &sc : classes_) {
        CpuCache &cc = *sc->cpus[cpu];
        LockGuard g(cc.lock, Site::rcache_flush);
        // free_cpu_cached_iovas() takes iova_rbtree_lock for each of the
        // two magazines, empty or not.
        tree_.free_batch(cpu, cc.loaded.pfns(), Site::rcache_flush, true);
        tree_.free_batch(cpu, cc.prev.pfns(), Site::rcache_flush, true);
        cc.loaded.clear();
        cc.prev.clear();
    }
}

// free_global_cached_iovas(): the depot lock is held while its magazines
// go back to the tree (6.1), so a CPU reaching the depot waits for all of it.
void Rcache::flush_depot()
{
    for (auto &sc : classes_) {
        LockGuard g(sc->lock, Site::rcache_flush);
        for (auto &m : sc->depot)
            tree_.free_batch(env_.current_cpu() % ncpus_, m.pfns(), Site::rcache_flush);
        sc->depot.clear();
    }
}

void Rcache::trim(unsigned cls)
{
    SizeClass &sc = *classes_[cls];
    std::optional<Magazine> mag;
    unsigned cpu = env_.current_cpu() % ncpus_;
    {
        LockGuard g(sc.lock, Site::depot_trim);
        if (sc.depot.size() > ncpus_) {
            mag.emplace(std::move(sc.depot.back()));
            sc.depot.pop_back();
        }
    }
    if (!mag)
        return;
    stats_.add(cpu, Counter::depot_trims);
    tree_.free_batch(cpu, mag->pfns(), Site::depot_trim);
    env_.arm_timer(*sc.trim, env_.now() + p_.trim_delay_ns);
}

size_t Rcache::depot_size(unsigned cls) const
{
    return classes_[cls]->depot.size();
}

size_t Rcache::cached_pfns() const
{
    size_t n = 0;
    for (auto &sc : classes_) {
        for (auto &m : sc->depot)
            n += m.pfns().size();
        for (auto &cc : sc->cpus)
            n += cc->loaded.pfns().size() + cc->prev.pfns().size();
    }
    return n;
}

void Rcache::locks(std::vector<const InstrumentedLock *> &out) const
{
    for (auto &sc : classes_) {
        out.push_back(&sc->lock);
        for (auto &cc : sc->cpus)
            out.push_back(&cc->lock);
    }
}

}  // namespace viommu::iova
