// SPDX-License-Identifier: GPL-2.0-or-later
#include "pasid_cache.hpp"

#include <algorithm>
#include <bit>

namespace viommu::vtd {

static constexpr uint64_t VALID = 1;
static constexpr uint64_t KEY_MASK = (uint64_t{1} << 37) - 1;  // valid, sid, pasid

static uint64_t key_word(uint16_t sid, uint32_t pasid)
{
    return VALID | uint64_t{sid} << 1 | uint64_t{pasid & 0xfffff} << 17;
}

PasidCache::PasidCache(size_t capacity)
    : sets_(std::bit_ceil(std::max<size_t>((capacity + WAYS - 1) / WAYS, 1))), table_(sets_)
{
    filled_.reserve(sets_);  // fills never allocate
}

size_t PasidCache::set_of(uint16_t sid, uint32_t pasid) const
{
    uint64_t x = key_word(sid, pasid) * 0x9e3779b97f4a7c15ull;
    return (x ^ (x >> 29)) & (sets_ - 1);
}

std::optional<PasidEntry> PasidCache::lookup(uint16_t sid, uint32_t pasid) const
{
    const uint64_t key = key_word(sid, pasid);
    const Set &set = table_[set_of(sid, pasid)];
    for (const Way &w : set.ways) {
        uint32_t seq = w.seq.load(std::memory_order_acquire);
        if (seq & 1)
            continue;  // being written: treat as a miss
        if ((w.w[0].load(std::memory_order_relaxed) & KEY_MASK) != key)
            continue;
        uint64_t v[WORDS];
        for (unsigned i = 0; i < WORDS; i++)
            v[i] = w.w[i].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (w.seq.load(std::memory_order_relaxed) != seq || (v[0] & KEY_MASK) != key)
            return std::nullopt;
        if (!current(v))
            return std::nullopt;
        PasidEntry e;
        e.did = static_cast<uint16_t>(v[0] >> 48);
        e.pgtt = (v[0] >> 37) & 7;
        e.fs_levels = (v[0] >> 40) & 15;
        e.sl_levels = (v[0] >> 44) & 15;
        e.flags = static_cast<uint32_t>(v[1]);
        e.fsptptr = v[2];
        e.slptptr = v[3];
        return e;
    }
    return std::nullopt;
}

// Whether no invalidation retired the entry of words v since its fill.
bool PasidCache::current(const uint64_t (&v)[WORDS]) const
{
    const auto did = static_cast<uint16_t>(v[0] >> 48);
    const auto sid = static_cast<uint16_t>(v[0] >> 1);
    const auto pasid = static_cast<uint32_t>((v[0] >> 17) & 0xfffff);
    return epoch(sid, pasid, did) == v[4];
}

void PasidCache::write(Way &w, const uint64_t (&v)[WORDS])
{
    uint32_t seq = w.seq.load(std::memory_order_relaxed);
    w.seq.store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (unsigned i = 0; i < WORDS; i++)
        w.w[i].store(v[i], std::memory_order_relaxed);
    w.seq.store(seq + 2, std::memory_order_release);
}

bool PasidCache::live(const Way &w) const
{
    uint64_t v[WORDS];
    for (unsigned i = 0; i < WORDS; i++)
        v[i] = w.w[i].load(std::memory_order_relaxed);
    return (v[0] & VALID) && current(v);
}

// The epochs are read before `gen` is checked: an invalidation bumps the
// generation before an epoch, so a fill that reads a new epoch also sees
// the new generation and is refused.
bool PasidCache::insert(uint16_t sid, uint32_t pasid, const PasidEntry &e, uint64_t gen,
                        bool *evicted)
{
    if (evicted)
        *evicted = false;
    const Epoch epoch_tag = epoch(sid, pasid, e.did);
    const uint64_t key = key_word(sid, pasid);
    const uint64_t v[WORDS] = {key | uint64_t{e.pgtt & 7u} << 37 |
                                   uint64_t{e.fs_levels & 15u} << 40 |
                                   uint64_t{e.sl_levels & 15u} << 44 | uint64_t{e.did} << 48,
                               e.flags, e.fsptptr, e.slptptr, epoch_tag};
    std::lock_guard guard(writer_);
    if (gen_.load() != gen)
        return false;
    const size_t index = set_of(sid, pasid);
    Set &set = table_[index];
    if (!set.filled) {
        set.filled = true;
        filled_.push_back(static_cast<uint32_t>(index));
    }
    Way *victim = nullptr;
    for (Way &w : set.ways) {
        if ((w.w[0].load(std::memory_order_relaxed) & KEY_MASK) == key) {
            victim = &w;  // the key's own way, live or stale
            break;
        }
    }
    if (!victim) {
        for (Way &w : set.ways) {
            if (!live(w)) {
                victim = &w;
                break;
            }
        }
    }
    if (!victim) {
        victim = &set.ways[set.hand];
        set.hand = (set.hand + 1) % WAYS;
        if (evicted)
            *evicted = true;
    }
    write(*victim, v);
    return true;
}

size_t PasidCache::size() const
{
    size_t n = 0;
    for (const Set &set : table_)
        for (const Way &w : set.ways)
            n += live(w);
    return n;
}

size_t PasidCache::stored() const
{
    size_t n = 0;
    for (const Set &set : table_)
        for (const Way &w : set.ways)
            n += (w.w[0].load(std::memory_order_relaxed) & VALID) != 0;
    return n;
}

void PasidCache::invalidate_all()
{
    gen_.fetch_add(1);
    epochs_.bump_all();
}

void PasidCache::invalidate_domain(uint16_t did)
{
    gen_.fetch_add(1);
    epochs_.bump(did);
}

// Without memory for the PASID's counter, the domain goes.
void PasidCache::invalidate_pasid(uint16_t did, uint32_t pasid)
{
    gen_.fetch_add(1);
    if (!pasid_epochs_.bump(pasid))
        epochs_.bump(did);
}

// Without memory for a source-id's counter, every entry goes.
void PasidCache::invalidate_source(uint16_t sid, uint16_t sid_mask)
{
    gen_.fetch_add(1);
    const uint16_t base = sid & ~sid_mask;
    for (uint32_t low = 0; low <= sid_mask; low++) {
        if ((low & ~uint32_t{sid_mask}) == 0 && !source_epochs_.bump(base | low)) {
            epochs_.bump_all();
            return;
        }
    }
}

void PasidCache::clear()
{
    gen_.fetch_add(1);
    epochs_.bump_all();
    std::lock_guard guard(writer_);
    static constexpr uint64_t zero[WORDS] = {};
    for (uint32_t index : filled_) {
        Set &set = table_[index];
        for (Way &w : set.ways)
            if (w.w[0].load(std::memory_order_relaxed) & VALID)
                write(w, zero);
        set.hand = 0;
        set.filled = false;
    }
    filled_.clear();
}

}  // namespace viommu::vtd
