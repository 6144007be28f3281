// SPDX-License-Identifier: GPL-2.0-or-later
#include "iotlb.hpp"

#include "registers.hpp"

namespace viommu::vtd {

static constexpr unsigned MAX_LEAF_LEVEL = 3;

std::optional<Leaf> Iotlb::lookup(uint16_t did, uint64_t addr)
{
    uint8_t levels = levels_cached_.load(std::memory_order_relaxed);
    for (unsigned level = 1; level <= MAX_LEAF_LEVEL; level++) {
        if (!(levels & (1u << level)))
            continue;
        if (auto leaf = cache_.lookup({addr >> level_shift(level), did, static_cast<uint8_t>(level)}))
            return leaf;
    }
    return std::nullopt;
}

Iotlb::InsertResult Iotlb::insert(uint16_t did, uint64_t addr, const Leaf &leaf, uint64_t gen)
{
    levels_cached_.fetch_or(1u << leaf.level);
    return cache_.insert({addr >> level_shift(leaf.level), did, leaf.level}, did, leaf, gen);
}

size_t Iotlb::invalidate_all()
{
    cache_.bump_generation();
    return cache_.clear();
}

size_t Iotlb::invalidate_domain(uint16_t did)
{
    cache_.bump_generation();
    return cache_.erase_group(did, [](const IotlbKey &, const Leaf &) { return true; });
}

// Cost O(min(keys that could hold the range, entries of the domain)): either
// probe every key overlapping the range or scan the domain's entries.
size_t Iotlb::invalidate_pages(uint16_t did, uint64_t addr, uint64_t pages)
{
    cache_.bump_generation();
    uint8_t levels = levels_cached_.load();
    if (pages == 0)
        return 0;
    uint64_t first = addr >> PAGE_SHIFT;
    uint64_t last = first + pages - 1;
    if (last < first || last > (UINT64_MAX >> PAGE_SHIFT))
        last = UINT64_MAX >> PAGE_SHIFT;

    uint64_t probes = 0;
    for (unsigned level = 1; level <= MAX_LEAF_LEVEL; level++) {
        if (levels & (1u << level)) {
            unsigned s = level_shift(level) - PAGE_SHIFT;
            probes += (last >> s) - (first >> s) + 1;
        }
    }
    constexpr uint64_t PROBE_WITHOUT_COUNTING = 16;
    if (probes > PROBE_WITHOUT_COUNTING && probes > cache_.group_size(did)) {
        return cache_.erase_group(did, [first, last](const IotlbKey &k, const Leaf &) {
            unsigned s = level_shift(k.level) - PAGE_SHIFT;
            uint64_t lo = k.vpn << s, hi = lo + ((uint64_t{1} << s) - 1);
            return lo <= last && hi >= first;
        });
    }
    size_t dropped = 0;
    for (unsigned level = 1; level <= MAX_LEAF_LEVEL; level++) {
        if (!(levels & (1u << level)))
            continue;
        unsigned s = level_shift(level) - PAGE_SHIFT;
        for (uint64_t vpn = first >> s;; vpn++) {
            dropped += cache_.erase({vpn, did, static_cast<uint8_t>(level)});
            if (vpn == last >> s)
                break;
        }
    }
    return dropped;
}

}  // namespace viommu::vtd
