// SPDX-License-Identifier: GPL-2.0-or-later
#include "context_cache.hpp"

namespace viommu::vtd {

static constexpr uint64_t VALID = 1, FPD = 2;

std::optional<Context> ContextCache::lookup(uint16_t sid) const
{
    const Slot &s = slot_of(sid);
    uint32_t seq = s.seq.load(std::memory_order_acquire);
    if (seq & 1)
        return std::nullopt;  // being written: treat as a miss
    uint64_t w0 = s.word0.load(std::memory_order_relaxed);
    uint64_t w1 = s.word1.load(std::memory_order_relaxed);
    uint64_t w2 = s.word2.load(std::memory_order_relaxed);
    uint64_t w3 = s.word3.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) != seq)
        return std::nullopt;
    if (!(w0 & VALID) || (w1 & 0xffff) != sid)
        return std::nullopt;
    Context c;
    c.did = static_cast<uint16_t>(w1 >> 16);
    if (epochs_.sum(c.did) != w2)
        return std::nullopt;
    c.slptptr = w0 & entry::ADDR;
    c.levels = field(w0, 7, 4);
    c.tt = static_cast<TranslationType>(field(w0, 3, 2));
    c.fpd = w0 & FPD;
    c.pasid = static_cast<uint32_t>(w1 >> 32);
    c.pgtt = static_cast<Pgtt>(w3 & 7);
    c.fs_levels = field(w3, 5, 3);
    c.sre = w3 & bit(6);
    c.wpe = w3 & bit(7);
    c.eafe = w3 & bit(8);
    c.fsptptr = w3 & entry::ADDR;
    return c;
}

void ContextCache::write_locked(Slot &s, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3)
{
    uint32_t seq = s.seq.load(std::memory_order_relaxed);
    s.seq.store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.word0.store(w0, std::memory_order_relaxed);
    s.word1.store(w1, std::memory_order_relaxed);
    s.word2.store(w2, std::memory_order_relaxed);
    s.word3.store(w3, std::memory_order_relaxed);
    s.seq.store(seq + 2, std::memory_order_release);
}

// The domain is known only now, so its epoch is read here, before `gen` is
// checked: an invalidation bumps the generation before the epoch, so a fill
// that reads the new epoch also sees the new generation and is discarded.
bool ContextCache::insert(uint16_t sid, const Context &ctx, uint64_t gen)
{
    const Epoch epoch = epochs_.sum(ctx.did);
    std::lock_guard guard(writer_);
    if (gen_.load() != gen)
        return false;
    Slot &s = slot_of(sid);
    if (!s.listed) {
        s.listed = true;
        filled_.push_back(static_cast<uint16_t>(&s - slots_.data()));
    }
    bool evicted = live(s) && (s.word1.load(std::memory_order_relaxed) & 0xffff) != sid;
    write_locked(s,
                 (ctx.slptptr & entry::ADDR) | uint64_t{ctx.levels} << 4 |
                     uint64_t{static_cast<uint8_t>(ctx.tt)} << 2 | (ctx.fpd ? FPD : 0) | VALID,
                 sid | uint64_t{ctx.did} << 16 | uint64_t{ctx.pasid} << 32, epoch,
                 (ctx.fsptptr & entry::ADDR) | uint64_t{ctx.eafe} << 8 | uint64_t{ctx.wpe} << 7 |
                     uint64_t{ctx.sre} << 6 | uint64_t{ctx.fs_levels} << 3 |
                     static_cast<uint8_t>(ctx.pgtt));
    return evicted;
}

bool ContextCache::live(const Slot &s) const
{
    if (!(s.word0.load(std::memory_order_relaxed) & VALID))
        return false;
    uint64_t w2 = s.word2.load(std::memory_order_relaxed);
    auto did = static_cast<uint16_t>(s.word1.load(std::memory_order_relaxed) >> 16);
    return epochs_.sum(did) == w2;
}

size_t ContextCache::size() const
{
    size_t n = 0;
    for (auto &s : slots_)
        n += live(s);
    return n;
}

size_t ContextCache::stored() const
{
    size_t n = 0;
    for (auto &s : slots_)
        n += (s.word0.load(std::memory_order_relaxed) & VALID) != 0;
    return n;
}

void ContextCache::invalidate_all()
{
    gen_.fetch_add(1);
    epochs_.bump_all();
}

void ContextCache::clear()
{
    gen_.fetch_add(1);
    epochs_.bump_all();
    std::lock_guard guard(writer_);
    for (uint16_t i : filled_) {
        Slot &s = slots_[i];
        if (s.word0.load(std::memory_order_relaxed) & VALID)
            write_locked(s, 0, 0, 0);
        s.listed = false;
    }
    filled_.clear();
}

void ContextCache::invalidate_domain(uint16_t did)
{
    gen_.fetch_add(1);
    epochs_.bump(did);
}

size_t ContextCache::invalidate_device(uint16_t sid, uint16_t sid_mask)
{
    gen_.fetch_add(1);
    std::lock_guard guard(writer_);
    size_t dropped = 0;
    uint16_t base = sid & ~sid_mask;
    for (uint32_t low = 0; low <= sid_mask; low++) {
        if (low & ~sid_mask)
            continue;
        uint16_t s_id = static_cast<uint16_t>(base | low);
        Slot &s = slot_of(s_id);
        if ((s.word0.load(std::memory_order_relaxed) & VALID) &&
            (s.word1.load(std::memory_order_relaxed) & 0xffff) == s_id) {
            write_locked(s, 0, 0, 0);
            dropped++;
        }
    }
    return dropped;
}

}  // namespace viommu::vtd
