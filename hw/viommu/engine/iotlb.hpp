// SPDX-License-Identifier: GPL-2.0-or-later
// The IOTLB: leaf translations of second-level tables, tagged by domain-id
// and page-size level (1 = 4 KiB, 2 = 2 MiB, 3 = 1 GiB).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>

#include "clock_cache.hpp"
#include "epochs.hpp"

namespace viommu::vtd {

struct IotlbKey {
    uint64_t vpn;  // input address >> level_shift(level)
    uint16_t did;
    uint8_t level;
    bool operator==(const IotlbKey &) const = default;
};

struct IotlbKeyHash {
    size_t operator()(const IotlbKey &k) const
    {
        uint64_t h = k.vpn ^ (uint64_t{k.did} << 48) ^ (uint64_t{k.level} << 40);
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        return static_cast<size_t>(h);
    }
};

// A leaf mapping: the page of size 4 KiB << (9 * (level - 1)) containing
// the input address maps to `phys` (page-aligned) with `perm`.
struct Leaf {
    uint64_t phys = 0;
    uint8_t level = 1;
    uint8_t perm = 0;
};

class Iotlb {
public:
    explicit Iotlb(size_t capacity)
        : cache_(capacity), pdes_(std::max<size_t>(capacity / PDES_PER_ENTRIES, MIN_PDES)) {}

    size_t capacity() const { return cache_.capacity(); }
    size_t size() { return cache_.size(); }

    // Sampled before walking the guest's tables; insert() discards the
    // result if an invalidation happened in between.
    struct FillToken {
        uint64_t gen;
        EpochTag tag;
        uint64_t pde_gen;
    };
    FillToken prepare_fill(uint16_t did) const
    {
        return {cache_.generation(), epochs_.tag(did), pdes_.generation()};
    }

    std::optional<Leaf> lookup(uint16_t did, uint64_t addr);
    struct Entry {
        Leaf leaf;
        EpochTag tag;
        uint16_t did = 0;  // for judging staleness at eviction, without the key
    };
    using InsertResult = ClockCache<IotlbKey, Entry, IotlbKeyHash>::InsertResult;
    InsertResult insert(uint16_t did, uint64_t addr, const Leaf &leaf, const FillToken &token);

    // Paging-structure cache: for each 2 MiB region of a domain, the
    // level-1 table a walk reached and the AND of the permissions above
    // it, so a miss reads one entry instead of one per level.  Tagged and
    // invalidated like the leaves; a page-selective invalidation without
    // IH drops the regions it covers.
    struct Pde {
        uint64_t table = 0;
        uint8_t perm = 0;
    };
    std::optional<Pde> lookup_pde(uint16_t did, uint64_t addr);
    void insert_pde(uint16_t did, uint64_t addr, const Pde &pde, const FillToken &token);

    // Global and domain invalidations are O(1): they bump epochs, and the
    // stale entries go when next looked up or first at eviction.
    void invalidate_all();
    void invalidate_domain(uint16_t did);
    // Returns the number of leaf entries dropped.  `ih`: only leaves
    // changed, cached paging-structure entries stay.
    size_t invalidate_pages(uint16_t did, uint64_t addr, uint64_t pages, bool ih,
                            bool &as_domain);
    // Empty the storage too (reset, new root table): O(capacity).
    void flush();

    // Ranges needing more probes than this are invalidated as the whole
    // domain (the specification lets hardware invalidate more than asked).
    static constexpr uint64_t MAX_PAGE_PROBES = 4096;

private:
    static constexpr size_t PDES_PER_ENTRIES = 64;
    static constexpr size_t MIN_PDES = 64;

    ClockCache<IotlbKey, Entry, IotlbKeyHash> cache_;
    ClockCache<IotlbKey, Entry, IotlbKeyHash> pdes_;  // level 0 keys: addr >> 21
    DomainEpochs epochs_;
    // Page-size levels that have ever been cached, so a lookup does not probe
    // superpage sizes nobody uses.  Set before insert() and read after an
    // invalidation bumps the generation, both sequentially consistent: either
    // the invalidation sees the level or the fill sees the new generation.
    std::atomic<uint8_t> levels_cached_{0};
};

}  // namespace viommu::vtd
