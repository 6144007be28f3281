// SPDX-License-Identifier: GPL-2.0-or-later
// The context cache: decoded, valid context entries by source-id, grouped
// by domain-id for domain-selective invalidation.
#pragma once

#include <cstdint>
#include <optional>

#include "clock_cache.hpp"
#include "root_context.hpp"

namespace viommu::vtd {

struct SidHash {
    size_t operator()(uint16_t sid) const { return sid * 0x9e3779b1u; }
};

class ContextCache {
public:
    explicit ContextCache(size_t capacity) : cache_(capacity) {}

    size_t capacity() const { return cache_.capacity(); }
    size_t size() { return cache_.size(); }
    uint64_t generation() const { return cache_.generation(); }

    std::optional<Context> lookup(uint16_t sid) { return cache_.lookup(sid); }
    bool insert(uint16_t sid, const Context &ctx, uint64_t gen)
    {
        return cache_.insert(sid, ctx.did, ctx, gen).evicted;
    }

    size_t invalidate_all()
    {
        cache_.bump_generation();
        return cache_.clear();
    }
    size_t invalidate_domain(uint16_t did)
    {
        cache_.bump_generation();
        return cache_.erase_group(did, [](uint16_t, const Context &) { return true; });
    }
    // Source-ids equal to `sid` outside `sid_mask` (at most 8 with CCMD.FM).
    size_t invalidate_device(uint16_t sid, uint16_t sid_mask)
    {
        cache_.bump_generation();
        size_t dropped = 0;
        uint16_t base = sid & ~sid_mask;
        for (uint32_t low = 0; low <= sid_mask; low++)
            if (!(low & ~sid_mask))
                dropped += cache_.erase(static_cast<uint16_t>(base | low));
        return dropped;
    }

private:
    ClockCache<uint16_t, Context, SidHash> cache_;
};

}  // namespace viommu::vtd
