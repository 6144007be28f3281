// SPDX-License-Identifier: GPL-2.0-or-later
// The IOTLB: leaf translations of second-level tables, tagged by domain-id
// and page-size level (1 = 4 KiB, 2 = 2 MiB, 3 = 1 GiB).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "epochs.hpp"
#include "iotlb_table.hpp"
#include "registers.hpp"

namespace viommu::vtd {

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
        : cache_(capacity), pdes_(std::max<size_t>(capacity / PDES_PER_ENTRIES, MIN_PDES))
    {
    }

    size_t capacity() const { return cache_.capacity(); }
    size_t size() { return cache_.size(); }
    // Bytes of table memory (leaves and paging-structure entries).
    size_t bytes() const { return cache_.bytes() + pdes_.bytes(); }
    // Bytes of per-domain state (the domains' epochs).
    size_t domain_bytes() const { return epochs_.bytes() + pde_epochs_.bytes(); }

    // Sampled before walking the guest's tables; insert() discards the
    // result if an invalidation happened in between.
    struct FillToken {
        uint64_t gen;
        uint32_t epoch;
        uint64_t pde_gen;
        uint32_t pde_epoch;
    };
    FillToken prepare_fill(uint16_t did) const
    {
        EpochTag t = epochs_.tag(did);
        return {cache_.generation(), (t.global + t.domain) & IotlbTable::EPOCH_MASK,
                pdes_.generation(),
                (t.global + t.domain + pde_epochs_.get(did)) & IotlbTable::EPOCH_MASK};
    }

    // `found`: where the key's entry was, if it was there but stale (a
    // domain invalidated since), for insert() to overwrite in place.
    using Slot = IotlbTable::Slot;
    // Inline: the translate path's one call into the IOTLB.
    std::optional<Leaf> lookup(uint16_t did, uint64_t addr, Slot *found = nullptr)
    {
        uint8_t levels = levels_cached_.load(std::memory_order_relaxed);
        auto is_fresh = [this, did](uint32_t e) { return fresh(did, e); };
        for (unsigned level = 1; level <= MAX_LEAF_LEVEL; level++) {
            if (!(levels & (1u << level)))
                continue;
            // Only a 4 KiB key can be the one a walk refills (a stale
            // superpage entry may be refilled as a smaller page).
            auto v = cache_.lookup({addr >> level_shift(level), did, static_cast<uint8_t>(level)},
                                   is_fresh, level == 1 ? found : nullptr);
            if (v)
                return Leaf{v->frame << PAGE_SHIFT, static_cast<uint8_t>(level), v->perm};
        }
        return std::nullopt;
    }
    using InsertResult = IotlbTable::InsertResult;
    InsertResult insert(uint16_t did, uint64_t addr, const Leaf &leaf, const FillToken &token,
                        const Slot &hint = {});

    // Paging-structure cache: for each 2 MiB region of a domain, the
    // level-1 table a walk reached and the AND of the permissions above
    // it, so a miss reads one entry instead of one per level.  Tagged and
    // invalidated like the leaves, and also by a paging-structure epoch of
    // their own per domain: a page-selective invalidation without IH
    // flushes the paging-structure entries used for its range, and the
    // upper-level ones among them (a level-4 entry maps 512 GiB) lead to
    // every region of the domain, so it bumps that epoch and drops them
    // all, O(1).  Leaves outside the range stay.
    struct Pde {
        uint64_t table = 0;
        uint8_t perm = 0;
    };
    std::optional<Pde> lookup_pde(uint16_t did, uint64_t addr);
    void insert_pde(uint16_t did, uint64_t addr, const Pde &pde, const FillToken &token);

    // Global and domain invalidations are O(1): they bump epochs, and the
    // stale entries go when next filled over or first at eviction (and in
    // a sweep every SWEEP_INTERVAL bumps, see below).
    void invalidate_all();
    void invalidate_domain(uint16_t did);
    // Returns the number of leaf entries dropped.  `ih`: only leaves
    // changed, cached paging-structure entries stay.  `probes`, if given,
    // receives the number of keys probed (at most MAX_PAGE_PROBES).
    size_t invalidate_pages(uint16_t did, uint64_t addr, uint64_t pages, bool ih, bool &as_domain,
                            uint64_t *probes = nullptr);
    // Start loading what invalidate_pages() of the range's first page will
    // touch, to overlap those cache misses with other work.
    void prefetch_pages(uint16_t did, uint64_t addr) const;
    // Empty the storage too (reset, new root table): O(capacity).
    void flush();

    // Ranges needing more probes than this, or more than the IOTLB holds
    // entries (and more than MIN_PROBES), are invalidated as the whole
    // domain, O(1) (the specification lets hardware invalidate more than
    // asked): probing more keys than there are entries finds mostly
    // nothing.
    static constexpr unsigned MAX_LEAF_LEVEL = 3;
    static constexpr uint64_t MAX_PAGE_PROBES = 4096;
    static constexpr uint64_t MIN_PROBES = 64;

    // Entries carry EPOCH_BITS of their domain's epoch (global + domain
    // epoch, plus the paging-structure epoch for those entries; all only
    // grow, and every bump counts towards the sweep).  An entry that survives a sweep is current;
    // after fewer than 2^EPOCH_BITS further bumps its epoch still differs
    // from the current one if any of them concerned it, so sweeping every
    // SWEEP_INTERVAL bumps keeps epoch wrap-around from reviving it.
    static constexpr uint64_t SWEEP_INTERVAL = uint64_t{1} << (IotlbTable::EPOCH_BITS - 1);
    uint64_t sweeps() const { return sweeps_.load(); }

private:
    static constexpr size_t PDES_PER_ENTRIES = 64;
    static constexpr size_t MIN_PDES = 64;

    uint32_t epoch(uint16_t did) const
    {
        EpochTag t = epochs_.tag(did);
        return (t.global + t.domain) & IotlbTable::EPOCH_MASK;
    }
    bool fresh(uint16_t did, uint32_t e) const { return epoch(did) == e; }
    uint32_t pde_epoch(uint16_t did) const
    {
        EpochTag t = epochs_.tag(did);
        return (t.global + t.domain + pde_epochs_.get(did)) & IotlbTable::EPOCH_MASK;
    }
    bool pde_fresh(uint16_t did, uint32_t e) const { return pde_epoch(did) == e; }
    void epoch_bumped();

    IotlbTable cache_;
    IotlbTable pdes_;  // level 0 keys: addr >> 21
    DomainEpochs epochs_;
    DomainCounters pde_epochs_;       // added to a domain's epoch for its paging-structure entries
    std::atomic<uint64_t> bumps_{0};  // since the last sweep
    std::atomic<uint64_t> sweeps_{0};
    // Page-size levels that have ever been cached, so a lookup does not probe
    // superpage sizes nobody uses.  Set before insert() and read after an
    // invalidation bumps the generation, both sequentially consistent: either
    // the invalidation sees the level or the fill sees the new generation.
    std::atomic<uint8_t> levels_cached_{0};
};

}  // namespace viommu::vtd
