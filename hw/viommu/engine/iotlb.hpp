// SPDX-License-Identifier: GPL-2.0-or-later
// The IOTLB: leaf translations, tagged by domain-id and page-size level
// (1 = 4 KiB, 2 = 2 MiB, 3 = 1 GiB); in scalable mode by domain-id, PASID
// and level, through address-space tags (iotlb_spaces.hpp).
//
// Legacy mode uses the calls that take a domain-id; scalable mode those
// that take an IotlbSpace, which space(did, pasid) gives.  Both kinds of
// entry live in the same table, one kind at a time: switching the root
// table's mode goes through flush().  Legacy requests have no PASID (the
// "no PASID" key is the domain-id alone), so the legacy hit path is the
// one it was before scalable mode existed.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "epochs.hpp"
#include "iotlb_spaces.hpp"
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
    // `space_ids`: address-space tags for scalable mode (0: all 65536).
    explicit Iotlb(size_t capacity, size_t space_ids = 0)
        : cache_(capacity), pdes_(std::max<size_t>(capacity / PDES_PER_ENTRIES, MIN_PDES)),
          space_ids_(space_ids)
    {
    }

    size_t capacity() const { return cache_.capacity(); }
    size_t size() { return cache_.size(); }
    // Bytes of table memory (leaves and paging-structure entries).
    size_t bytes() const { return cache_.bytes() + pdes_.bytes(); }
    // Bytes of per-domain state (the domains' epochs).
    size_t domain_bytes() const
    {
        const AddressSpaces *sp = spaces_.load();
        return epochs_.bytes() + pde_epochs_.bytes() + space_epochs_.bytes() +
               space_pde_epochs_.bytes() + (sp ? sp->bytes() : 0);
    }

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

    // --- scalable mode ---
    using Space = IotlbSpace;
    // The address space of (did, pasid), given a tag on first use (which
    // may retire others: `recycled` counts them).  Any thread.
    Space space(uint16_t did, uint32_t pasid, size_t *recycled = nullptr);
    // As above, without allocating: nothing if the pair has no entries.
    std::optional<Space> find_space(uint16_t did, uint32_t pasid);
    FillToken prepare_fill(const Space &s) const
    {
        FillToken t{cache_.generation(), 0, pdes_.generation(), 0};
        // The generation first: a retirement changes the owner, then the
        // generation, so a token that sees the old owner has the old
        // generation and its insert is refused.
        if (!owns(s))
            t.gen = t.pde_gen = ~uint64_t{0};
        t.epoch = space_epoch(s.id);
        t.pde_epoch = space_pde_epoch(s.id);
        return t;
    }
    std::optional<Leaf> lookup(const Space &s, uint64_t addr, Slot *found = nullptr)
    {
        uint8_t levels = levels_cached_.load(std::memory_order_relaxed);
        const uint16_t id = s.id;
        auto is_fresh = [this, id](uint32_t e) { return space_epoch(id) == e; };
        for (unsigned level = 1; level <= MAX_LEAF_LEVEL; level++) {
            if (!(levels & (1u << level)))
                continue;
            auto v = cache_.lookup({addr >> level_shift(level), id, static_cast<uint8_t>(level)},
                                   is_fresh, level == 1 ? found : nullptr);
            if (v) {
                if (!owns(s))  // the tag was reused meanwhile
                    return std::nullopt;
                return Leaf{v->frame << PAGE_SHIFT, static_cast<uint8_t>(level), v->perm};
            }
        }
        return std::nullopt;
    }
    // `nested`: the leaf combines a first and a second stage; a
    // page-selective IOTLB (second-stage) invalidation of its domain then
    // drops all of its space's entries (their second-stage addresses are
    // not known).
    InsertResult insert(const Space &s, uint64_t addr, const Leaf &leaf, const FillToken &token,
                        bool nested = false, const Slot &hint = {});
    std::optional<Pde> lookup_pde(const Space &s, uint64_t addr);
    void insert_pde(const Space &s, uint64_t addr, const Pde &pde, const FillToken &token);
    // P_IOTLB: O(1) for a whole PASID, O(pages) within one (as
    // invalidate_pages; `as_pasid`: the range was too large to probe and
    // the whole PASID went).  Without IH the PASID's paging-structure
    // entries go too.  Both cover the PASID's supervisor translations
    // (SPACE_SUPERVISOR) with its user-level ones.
    void invalidate_pasid(uint16_t did, uint32_t pasid);
    size_t invalidate_pasid_pages(uint16_t did, uint32_t pasid, uint64_t addr, uint64_t pages,
                                  bool ih, bool &as_pasid, uint64_t *probes = nullptr);
    // Address spaces in use, and tags reassigned so far.
    size_t spaces();
    uint64_t spaces_recycled() const { return recycled_.load(); }

    // Global and domain invalidations are O(1): they bump epochs, and the
    // stale entries go when next filled over or first at eviction (and in
    // a sweep every SWEEP_INTERVAL bumps, see below).  In scalable mode a
    // domain's invalidations cover all of its PASIDs: a page-selective one
    // probes the range in each of the domain's address spaces.
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

    // Scalable mode: an address space's entries carry global + its
    // domain's + its own epoch; a retired tag's entries are never fresh.
    static constexpr uint32_t NEVER = IotlbTable::EPOCH_MASK + 1;
    bool owns(const Space &s) const
    {
        const AddressSpaces *sp = spaces_.load();
        return sp && sp->owns(s);
    }
    uint32_t space_epoch(uint16_t id) const
    {
        const AddressSpaces *sp = spaces_.load();
        if (!sp || sp->retired(id))
            return NEVER;
        EpochTag t = epochs_.tag(sp->did_of(id));
        return (t.global + t.domain + space_epochs_.get(id)) & IotlbTable::EPOCH_MASK;
    }
    uint32_t space_pde_epoch(uint16_t id) const
    {
        const AddressSpaces *sp = spaces_.load();
        if (!sp || sp->retired(id))
            return NEVER;
        const uint16_t did = sp->did_of(id);
        EpochTag t = epochs_.tag(did);
        return (t.global + t.domain + space_epochs_.get(id) + pde_epochs_.get(did) +
                space_pde_epochs_.get(id)) &
               IotlbTable::EPOCH_MASK;
    }
    // Judges any entry, of whichever mode the table holds.
    bool fresh_any(uint16_t tag, uint32_t e) const
    {
        return scalable_.load(std::memory_order_relaxed) ? space_epoch(tag) == e : fresh(tag, e);
    }
    bool pde_fresh_any(uint16_t tag, uint32_t e) const
    {
        return scalable_.load(std::memory_order_relaxed) ? space_pde_epoch(tag) == e
                                                         : pde_fresh(tag, e);
    }
    void bump_space(uint16_t id, uint16_t did);
    unsigned pasid_spaces(uint16_t did, uint32_t pasid, std::array<Space, 2> &out);
    size_t probe_pages(uint16_t tag, uint64_t first, uint64_t last, uint8_t levels);
    static uint64_t probes_for(uint64_t first, uint64_t last, uint8_t levels);
    void recycle_locked();

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

    // Scalable mode (allocated with the first address space).
    size_t space_ids_;
    std::mutex spaces_lock_;  // allocation, retirement, the domain lists
    std::unique_ptr<AddressSpaces> spaces_owner_;
    std::atomic<AddressSpaces *> spaces_{nullptr};
    std::atomic<bool> scalable_{false};     // the table holds address-space tags
    ChunkedCounters<16> space_epochs_;      // per address-space tag
    ChunkedCounters<16> space_pde_epochs_;  // ... for its paging-structure entries
    std::atomic<uint64_t> recycled_{0};
    const uint64_t serial_ = next_serial();  // this IOTLB, for the per-thread memo
    static uint64_t next_serial();
};

}  // namespace viommu::vtd
