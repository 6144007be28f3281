// SPDX-License-Identifier: GPL-2.0-or-later
// The context cache: decoded, valid context entries by source-id.
#pragma once

#include <cstdint>
#include <optional>

#include "clock_cache.hpp"
#include "epochs.hpp"
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

    // Sampled before reading the root and context tables.
    uint64_t generation() const { return cache_.generation(); }

    std::optional<Context> lookup(uint16_t sid)
    {
        auto e = cache_.lookup(sid, [this](const Entry &c) { return epochs_.current(c.tag, c.ctx.did); });
        if (!e)
            return std::nullopt;
        return e->ctx;
    }
    // The domain is known only now, so its epoch is read here, before
    // ClockCache::insert checks `gen`: an invalidation bumps the generation
    // before the epoch, so a fill that reads the new epoch sees the new
    // generation and is discarded.
    bool insert(uint16_t sid, const Context &ctx, uint64_t gen)
    {
        return cache_.insert(sid, {ctx, epochs_.tag(ctx.did)}, gen).evicted;
    }

    size_t invalidate_all()
    {
        cache_.bump_generation();
        epochs_.bump_all();
        return cache_.clear();
    }
    void invalidate_domain(uint16_t did)
    {
        cache_.bump_generation();
        epochs_.bump(did);
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
    struct Entry {
        Context ctx;
        EpochTag tag;
    };
    ClockCache<uint16_t, Entry, SidHash> cache_;
    DomainEpochs epochs_;
};

}  // namespace viommu::vtd
