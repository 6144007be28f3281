// SPDX-License-Identifier: GPL-2.0-or-later
#include "interrupt_entry_cache.hpp"

namespace viommu::vtd {

InterruptEntryCache::InterruptEntryCache(uint32_t entries)
    : nsets_(entries > WAYS ? (entries + WAYS - 1) / WAYS : 1),
      sets_(std::make_unique<Set[]>(nsets_))
{
}

std::optional<Irte> InterruptEntryCache::lookup(uint16_t index)
{
    Set &s = set_of(index);
    std::lock_guard guard(s.lock);
    for (Way &w : s.ways) {
        if (w.valid && w.index == index) {
            w.stamp = ++s.clock;
            return w.e;
        }
    }
    return std::nullopt;
}

InterruptEntryCache::Insert InterruptEntryCache::insert(uint16_t index, const Irte &e,
                                                        FillToken token)
{
    Set &s = set_of(index);
    std::lock_guard guard(s.lock);
    filled_.store(true, std::memory_order_seq_cst);
    if (gen_.load(std::memory_order_seq_cst) != token)
        return {};  // an invalidation started after the entry was read
    // The entry itself (a concurrent filler got here first), else a free
    // way, else the least recently used one (ages relative to the clock,
    // so a wrapped clock still orders them).
    Way *victim = nullptr;
    for (Way &w : s.ways)
        if (w.valid && w.index == index)
            victim = &w;
    for (Way &w : s.ways)
        if (!victim && !w.valid)
            victim = &w;
    if (!victim) {
        victim = &s.ways[0];
        for (Way &w : s.ways)
            if (s.clock - w.stamp > s.clock - victim->stamp)
                victim = &w;
    }
    Insert r;
    r.inserted = true;
    if (victim->valid && victim->index != index)
        r.evicted = true;
    else if (!victim->valid)
        size_.fetch_add(1, std::memory_order_relaxed);
    *victim = {e, ++s.clock, index, true};
    return r;
}

size_t InterruptEntryCache::drop_if(Set &s, uint32_t first, uint32_t last)
{
    size_t n = 0;
    std::lock_guard guard(s.lock);
    for (Way &w : s.ways) {
        if (w.valid && w.index >= first && w.index <= last) {
            w.valid = false;
            n++;
        }
    }
    size_.fetch_sub(n, std::memory_order_relaxed);
    return n;
}

size_t InterruptEntryCache::invalidate_all()
{
    std::lock_guard serialized(full_invalidation_);
    gen_.fetch_add(1, std::memory_order_seq_cst);
    if (!filled_.exchange(false, std::memory_order_seq_cst))
        return 0;
    size_t n = 0;
    for (uint32_t i = 0; i < nsets_; i++)
        n += drop_if(sets_[i], 0, UINT16_MAX);
    return n;
}

size_t InterruptEntryCache::invalidate_range(uint32_t first, uint32_t count)
{
    if (first > UINT16_MAX || count == 0)
        return 0;
    uint32_t last = count - 1 > UINT16_MAX - first ? UINT16_MAX : first + count - 1;
    gen_.fetch_add(1, std::memory_order_seq_cst);
    size_t n = 0;
    if (last - first + 1 >= nsets_) {
        for (uint32_t i = 0; i < nsets_; i++)
            n += drop_if(sets_[i], first, last);
    } else {
        for (uint32_t index = first; index <= last; index++)
            n += drop_if(set_of(index), index, index);
    }
    return n;
}

}  // namespace viommu::vtd
