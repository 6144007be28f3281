// SPDX-License-Identifier: GPL-2.0-or-later
#include "iotlb.hpp"

#include "registers.hpp"

namespace viommu::vtd {

Iotlb::InsertResult Iotlb::insert(uint16_t did, uint64_t addr, const Leaf &leaf,
                                  const FillToken &token, const Slot &hint)
{
    // Read first: a locked or on every fill would bounce this line
    // between translating threads.  A set bit was published by an earlier
    // fill, so the argument in iotlb.hpp holds for this one as well.
    if (!(levels_cached_.load() & (1u << leaf.level)))
        levels_cached_.fetch_or(1u << leaf.level);
    auto is_fresh = [this](uint16_t d, uint32_t e) { return fresh(d, e); };
    return cache_.insert({addr >> level_shift(leaf.level), did, leaf.level},
                         {leaf.phys >> PAGE_SHIFT, leaf.perm, token.epoch}, token.gen, is_fresh,
                         hint);
}

static constexpr unsigned PDE_SHIFT = PAGE_SHIFT + 9;  // a level-1 table maps 2 MiB

std::optional<Iotlb::Pde> Iotlb::lookup_pde(uint16_t did, uint64_t addr)
{
    auto is_fresh = [this, did](uint32_t e) { return pde_fresh(did, e); };
    auto v = pdes_.lookup({addr >> PDE_SHIFT, did, 0}, is_fresh);
    if (!v)
        return std::nullopt;
    return Pde{v->frame << PAGE_SHIFT, v->perm};
}

void Iotlb::insert_pde(uint16_t did, uint64_t addr, const Pde &pde, const FillToken &token)
{
    auto is_fresh = [this](uint16_t d, uint32_t e) { return pde_fresh(d, e); };
    pdes_.insert({addr >> PDE_SHIFT, did, 0}, {pde.table >> PAGE_SHIFT, pde.perm, token.pde_epoch},
                 token.pde_gen, is_fresh);
}

// Called after every epoch bump (invalidations run on one thread).
void Iotlb::epoch_bumped()
{
    if (bumps_.fetch_add(1) + 1 < SWEEP_INTERVAL)
        return;
    bumps_.store(0);
    cache_.sweep([this](uint16_t d, uint32_t e) { return fresh(d, e); });
    pdes_.sweep([this](uint16_t d, uint32_t e) { return pde_fresh(d, e); });
    sweeps_.fetch_add(1);
}

void Iotlb::invalidate_all()
{
    cache_.bump_generation();
    pdes_.bump_generation();
    epochs_.bump_all();
    epoch_bumped();
}

void Iotlb::flush()
{
    cache_.bump_generation();
    pdes_.bump_generation();
    epochs_.bump_all();
    cache_.clear();
    pdes_.clear();
    bumps_.store(0);
}

void Iotlb::invalidate_domain(uint16_t did)
{
    cache_.bump_generation();
    pdes_.bump_generation();
    epochs_.bump(did);
    epoch_bumped();
}

void Iotlb::prefetch_pages(uint16_t did, uint64_t addr) const
{
    cache_.prefetch({addr >> PAGE_SHIFT, did, 1});
}

// Probes every key that could hold a page of the range: O(pages) for 4 KiB
// entries plus the covering superpage keys; beyond MAX_PAGE_PROBES the
// domain's epoch is bumped instead.  Without IH the domain's
// paging-structure entries go by their epoch (see iotlb.hpp).
size_t Iotlb::invalidate_pages(uint16_t did, uint64_t addr, uint64_t pages, bool ih,
                               bool &as_domain, uint64_t *probes_made)
{
    if (probes_made)
        *probes_made = 0;
    cache_.bump_generation();
    pdes_.bump_generation();
    as_domain = false;
    uint8_t levels = levels_cached_.load();
    if (pages == 0)
        return 0;
    if (!ih) {
        if (!pde_epochs_.bump(did))
            epochs_.bump_all();  // no memory for the domain's epoch: drop everything
        epoch_bumped();
    }
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
    if (probes > MAX_PAGE_PROBES || (probes > MIN_PROBES && probes > cache_.size())) {
        epochs_.bump(did);
        epoch_bumped();
        as_domain = true;
        return 0;
    }
    size_t dropped = 0;
    for (unsigned level = 1; level <= MAX_LEAF_LEVEL; level++) {
        if (!(levels & (1u << level)))
            continue;
        unsigned s = level_shift(level) - PAGE_SHIFT;
        for (uint64_t vpn = first >> s;; vpn++) {
            dropped += cache_.erase({vpn, did, static_cast<uint8_t>(level)}, false);
            if (vpn == last >> s)
                break;
        }
    }
    cache_.uncount(dropped);
    if (probes_made)
        *probes_made = probes;
    return dropped;
}

}  // namespace viommu::vtd
