// SPDX-License-Identifier: GPL-2.0-or-later
// Shared by the iova tests: a reference model of live ranges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "iova.hpp"

namespace viommu::iova::test {

// A `variant` allocator whose 32-bit space is completely full, with 4096
// pages free above it.
inline std::unique_ptr<Allocator> full_below_4g(std::string_view variant, Env &env)
{
    Config c;
    c.end_pfn = (Pfn{1} << 20) + 4096;
    auto a = Allocator::create(variant, env, c);
    const Pfn dma32 = a->dma_32bit_pfn();
    while (a->alloc(4096, dma32, false).ok()) {
    }
    for (uint64_t s = 2048; s; s /= 2)
        (void)a->alloc(s, dma32, false);
    return a;
}

// Live ranges; the allocator under test must agree with it.
class Model {
public:
    // Empty string if [pfn, pfn + pages) overlaps nothing live.
    std::string add(Pfn pfn, uint64_t pages)
    {
        auto next = live_.lower_bound(pfn);
        if (next != live_.end() && next->first < pfn + pages)
            return "overlaps the range at " + std::to_string(next->first);
        if (next != live_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second > pfn)
                return "overlaps the range at " + std::to_string(prev->first);
        }
        live_.emplace(pfn, pages);
        order_.push_back({pfn, pages});
        return {};
    }
    bool empty() const { return order_.empty(); }
    size_t size() const { return order_.size(); }
    uint64_t pages() const
    {
        uint64_t n = 0;
        for (auto &[p, s] : live_)
            n += s;
        return n;
    }
    // Removes and returns the i-th live range (any order).
    Range take(size_t i)
    {
        Range r = order_[i];
        order_[i] = order_.back();
        order_.pop_back();
        live_.erase(r.pfn);
        return r;
    }

private:
    std::map<Pfn, uint64_t> live_;
    std::vector<Range> order_;
};

inline uint64_t counter(const Allocator &a, Counter c)
{
    return a.stats().total(c);
}

inline const SiteLockStats &site_stats(const Allocator &a, std::string_view lock, Site s,
                                       SiteLockStats &sum)
{
    sum = {};
    for (const InstrumentedLock *l : a.locks())
        if (l->name() == lock)
            l->add_to(sum, s);
    return sum;
}

}  // namespace viommu::iova::test
