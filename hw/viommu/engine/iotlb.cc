// SPDX-License-Identifier: GPL-2.0-or-later
#include "iotlb.hpp"

#include <array>

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
    cache_.sweep([this](uint16_t d, uint32_t e) { return fresh_any(d, e); });
    pdes_.sweep([this](uint16_t d, uint32_t e) { return pde_fresh_any(d, e); });
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
    std::lock_guard guard(spaces_lock_);
    if (AddressSpaces *sp = spaces_.load())
        sp->clear();
    scalable_.store(false);
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

uint64_t Iotlb::probes_for(uint64_t first, uint64_t last, uint8_t levels)
{
    uint64_t probes = 0;
    for (unsigned level = 1; level <= MAX_LEAF_LEVEL; level++) {
        if (levels & (1u << level)) {
            unsigned s = level_shift(level) - PAGE_SHIFT;
            probes += (last >> s) - (first >> s) + 1;
        }
    }
    return probes;
}

// Erases every key of `tag` (a domain-id or an address-space tag) that
// could hold a page of [first, last] (page numbers).
size_t Iotlb::probe_pages(uint16_t tag, uint64_t first, uint64_t last, uint8_t levels)
{
    size_t dropped = 0;
    for (unsigned level = 1; level <= MAX_LEAF_LEVEL; level++) {
        if (!(levels & (1u << level)))
            continue;
        unsigned s = level_shift(level) - PAGE_SHIFT;
        const uint64_t lo = first >> s;
        dropped += cache_.erase_each((last >> s) - lo + 1, [&](uint64_t i) {
            return TableKey{lo + i, tag, static_cast<uint8_t>(level)};
        });
    }
    cache_.uncount(dropped);
    return dropped;
}

static void page_range(uint64_t addr, uint64_t pages, uint64_t &first, uint64_t &last)
{
    first = addr >> PAGE_SHIFT;
    last = first + pages - 1;
    if (last < first || last > (UINT64_MAX >> PAGE_SHIFT))
        last = UINT64_MAX >> PAGE_SHIFT;
}

// Probes every key that could hold a page of the range: O(pages) for 4 KiB
// entries plus the covering superpage keys; beyond MAX_PAGE_PROBES the
// domain's epoch is bumped instead.  Without IH the domain's
// paging-structure entries go by their epoch (see iotlb.hpp).  In scalable
// mode the range is probed in each address space of the domain, and a
// space that has held nested translations goes whole.
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
    uint64_t first, last;
    page_range(addr, pages, first, last);
    const uint64_t per_tag = probes_for(first, last, levels);

    if (!scalable_.load()) {
        if (per_tag > MAX_PAGE_PROBES || (per_tag > MIN_PROBES && per_tag > cache_.size())) {
            epochs_.bump(did);
            epoch_bumped();
            as_domain = true;
            return 0;
        }
        size_t dropped = probe_pages(did, first, last, levels);
        if (probes_made)
            *probes_made = per_tag;
        return dropped;
    }

    std::lock_guard guard(spaces_lock_);
    AddressSpaces *sp = spaces_.load();
    const std::vector<uint16_t> *ids = sp ? sp->of_domain(did) : nullptr;
    if (!ids)
        return 0;  // nothing of the domain is cached
    const uint64_t probes = per_tag * ids->size();
    if (probes > MAX_PAGE_PROBES || (probes > MIN_PROBES && probes > cache_.size())) {
        epochs_.bump(did);
        epoch_bumped();
        as_domain = true;
        return 0;
    }
    size_t dropped = 0;
    for (uint16_t id : *ids) {
        if (sp->nested(id))
            bump_space(id, did);
        else
            dropped += probe_pages(id, first, last, levels);
    }
    if (probes_made)
        *probes_made = probes;
    return dropped;
}

// --- scalable mode ---

uint64_t Iotlb::next_serial()
{
    static std::atomic<uint64_t> serial{1};
    return serial.fetch_add(1);
}

namespace {
// The address spaces this thread resolved last, validated against the
// tag's owner before use (tags are reused).
struct SpaceMemo {
    uint64_t serial = 0;  // Iotlb::serial_; 0: empty
    IotlbSpace space;
};
constexpr unsigned SPACE_MEMOS = 8;
constinit thread_local std::array<SpaceMemo, SPACE_MEMOS> space_memo{};

SpaceMemo &memo_slot(uint16_t did, uint32_t pasid)
{
    return space_memo[(pasid * 0x9e3779b1u ^ did) % SPACE_MEMOS];
}
}  // namespace

Iotlb::Space Iotlb::space(uint16_t did, uint32_t pasid, size_t *recycled)
{
    pasid &= SPACE_PASID_MASK;
    if (recycled)
        *recycled = 0;
    SpaceMemo &m = memo_slot(did, pasid);
    if (m.serial == serial_ && m.space.did == did && m.space.pasid == pasid && owns(m.space))
        return m.space;
    std::lock_guard guard(spaces_lock_);
    AddressSpaces *sp = spaces_.load();
    if (!sp) {
        spaces_owner_ = std::make_unique<AddressSpaces>(space_ids_);
        sp = spaces_owner_.get();
        spaces_.store(sp);
    }
    scalable_.store(true);
    std::optional<Space> s = sp->find(did, pasid);
    if (!s && !(s = sp->allocate(did, pasid))) {
        const uint64_t before = recycled_.load();
        recycle_locked();
        if (recycled)
            *recycled = recycled_.load() - before;
        s = sp->allocate(did, pasid);
    }
    m = {serial_, *s};
    return *s;
}

std::optional<Iotlb::Space> Iotlb::find_space(uint16_t did, uint32_t pasid)
{
    std::lock_guard guard(spaces_lock_);
    AddressSpaces *sp = spaces_.load();
    return sp ? sp->find(did, pasid) : std::nullopt;
}

size_t Iotlb::spaces()
{
    std::lock_guard guard(spaces_lock_);
    AddressSpaces *sp = spaces_.load();
    return sp ? sp->size() : 0;
}

// Every tag is in use: retire a batch (an eighth of them, at least one),
// sweep their entries out, and make them allocatable.  O(capacity), once
// per batch of new pairs.  Retiring first, then bumping the generations,
// refuses the fills of threads that still hold a retired tag (see
// prepare_fill).
void Iotlb::recycle_locked()
{
    AddressSpaces *sp = spaces_.load();
    const size_t n = sp->retire(std::max<size_t>(sp->ids() / 8, 1));
    cache_.bump_generation();
    pdes_.bump_generation();
    cache_.sweep([this](uint16_t d, uint32_t e) { return space_epoch(d) == e; });
    pdes_.sweep([this](uint16_t d, uint32_t e) { return space_pde_epoch(d) == e; });
    sp->release();
    recycled_.fetch_add(n);
}

Iotlb::InsertResult Iotlb::insert(const Space &s, uint64_t addr, const Leaf &leaf,
                                  const FillToken &token, bool nested, const Slot &hint)
{
    if (!(levels_cached_.load() & (1u << leaf.level)))
        levels_cached_.fetch_or(1u << leaf.level);
    if (nested) {
        // Published before the entry: an invalidation that misses the flag
        // bumped the generation after this fill's token was taken.
        if (AddressSpaces *sp = spaces_.load())
            sp->set_nested(s.id);
    }
    auto is_fresh = [this](uint16_t d, uint32_t e) { return space_epoch(d) == e; };
    return cache_.insert({addr >> level_shift(leaf.level), s.id, leaf.level},
                         {leaf.phys >> PAGE_SHIFT, leaf.perm, token.epoch}, token.gen, is_fresh,
                         hint);
}

std::optional<Iotlb::Pde> Iotlb::lookup_pde(const Space &s, uint64_t addr)
{
    const uint16_t id = s.id;
    auto is_fresh = [this, id](uint32_t e) { return space_pde_epoch(id) == e; };
    auto v = pdes_.lookup({addr >> PDE_SHIFT, id, 0}, is_fresh);
    if (!v || !owns(s))
        return std::nullopt;
    return Pde{v->frame << PAGE_SHIFT, v->perm};
}

void Iotlb::insert_pde(const Space &s, uint64_t addr, const Pde &pde, const FillToken &token)
{
    auto is_fresh = [this](uint16_t d, uint32_t e) { return space_pde_epoch(d) == e; };
    pdes_.insert({addr >> PDE_SHIFT, s.id, 0}, {pde.table >> PAGE_SHIFT, pde.perm, token.pde_epoch},
                 token.pde_gen, is_fresh);
}

// Without memory for the tag's counter, the whole domain goes.
void Iotlb::bump_space(uint16_t id, uint16_t did)
{
    if (!space_epochs_.bump(id))
        epochs_.bump(did);
    epoch_bumped();
}

// The spaces of (did, pasid) that hold entries: its user-level
// translations and its supervisor ones (SPACE_SUPERVISOR).  Under
// spaces_lock_.
unsigned Iotlb::pasid_spaces(uint16_t did, uint32_t pasid, std::array<Space, 2> &out)
{
    AddressSpaces *sp = spaces_.load();
    unsigned n = 0;
    pasid &= SPACE_SUPERVISOR - 1;
    for (uint32_t p : {pasid, pasid | SPACE_SUPERVISOR})
        if (auto s = sp ? sp->find(did, p) : std::nullopt)
            out[n++] = *s;
    return n;
}

void Iotlb::invalidate_pasid(uint16_t did, uint32_t pasid)
{
    cache_.bump_generation();
    pdes_.bump_generation();
    std::lock_guard guard(spaces_lock_);
    std::array<Space, 2> found;
    const unsigned n = pasid_spaces(did, pasid, found);
    for (unsigned i = 0; i < n; i++)
        bump_space(found[i].id, did);
}

size_t Iotlb::invalidate_pasid_pages(uint16_t did, uint32_t pasid, uint64_t addr, uint64_t pages,
                                     bool ih, bool &as_pasid, uint64_t *probes_made)
{
    if (probes_made)
        *probes_made = 0;
    as_pasid = false;
    cache_.bump_generation();
    pdes_.bump_generation();
    std::lock_guard guard(spaces_lock_);
    std::array<Space, 2> found;
    const unsigned n = pasid_spaces(did, pasid, found);
    if (n == 0 || pages == 0)
        return 0;  // nothing of the pair is cached
    if (!ih) {
        for (unsigned i = 0; i < n; i++)
            if (!space_pde_epochs_.bump(found[i].id))
                epochs_.bump(did);
        epoch_bumped();
    }
    const uint8_t levels = levels_cached_.load();
    uint64_t first, last;
    page_range(addr, pages, first, last);
    const uint64_t probes = probes_for(first, last, levels) * n;
    if (probes > MAX_PAGE_PROBES || (probes > MIN_PROBES && probes > cache_.size())) {
        for (unsigned i = 0; i < n; i++)
            bump_space(found[i].id, did);
        as_pasid = true;
        return 0;
    }
    if (probes_made)
        *probes_made = probes;
    size_t dropped = 0;
    for (unsigned i = 0; i < n; i++)
        dropped += probe_pages(found[i].id, first, last, levels);
    return dropped;
}

}  // namespace viommu::vtd
