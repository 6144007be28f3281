// SPDX-License-Identifier: GPL-2.0-or-later
// Emptying the caches wholesale (reset, root-table latch) costs what they
// hold, not their capacity, and still empties them: the IOTLB's table
// visits only the sets it marked as filled, the context cache only the
// slots filled since the last clear, the address-space tags only those
// handed out.  Each test fills, clears and checks that nothing filled
// before the clear is returned or kept (stale entries left in the storage
// would come back once the epochs wrapped, or, in the IOTLB, be read as
// the other mode's entries after a legacy/scalable switch).
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <set>

#include "context_cache.hpp"
#include "iotlb.hpp"

using namespace viommu::vtd;

namespace {

constexpr uint64_t PAGE = 4096;

// An IotlbTable whose epochs never change: only clear() can drop entries.
struct Table {
    IotlbTable t;
    explicit Table(size_t n) : t(n) {}
    bool insert(uint16_t did, uint64_t vpn, uint64_t frame)
    {
        auto any = [](uint16_t, uint32_t) { return true; };
        return t.insert({vpn, did, 1}, {frame, 1, 0}, t.generation(), any).inserted;
    }
    std::optional<uint64_t> lookup(uint16_t did, uint64_t vpn)
    {
        auto v = t.lookup({vpn, did, 1}, [](uint32_t) { return true; });
        return v ? std::optional<uint64_t>(v->frame) : std::nullopt;
    }
};

}  // namespace

TEST(CacheClear, IotlbTableClearEmptiesEveryFilledSet)
{
    Table tb(131072);  // the default IOTLB size: 32768 sets
    EXPECT_EQ(tb.t.marked_sets(), 0u);
    EXPECT_EQ(tb.t.clear(), 0u) << "nothing filled: nothing to drop";
    std::mt19937_64 rng(3);
    for (unsigned round = 0; round < 4; round++) {
        const unsigned n = round == 0 ? 1 : round * 700;
        std::set<std::pair<uint16_t, uint64_t>> keys;
        for (unsigned i = 0; i < n; i++) {
            uint16_t did = rng() % 8;
            uint64_t vpn = rng() % (1u << 20);
            if (tb.insert(did, vpn, 0x1000 + round * 10000 + i))
                keys.insert({did, vpn});
        }
        ASSERT_GT(tb.t.size(), 0u);
        EXPECT_GE(tb.t.marked_sets(), 1u);
        EXPECT_LE(tb.t.marked_sets(), 2 * size_t{n}) << "a fill marks its two candidate sets";
        EXPECT_EQ(tb.t.clear(), keys.size()) << "every entry dropped, once";
        EXPECT_EQ(tb.t.size(), 0u);
        EXPECT_EQ(tb.t.marked_sets(), 0u) << "emptied sets are unmarked";
        for (auto [did, vpn] : keys)
            EXPECT_FALSE(tb.lookup(did, vpn)) << "round " << round << " did " << did;
    }
    // A fill racing the clear (its generation sampled before) is refused.
    const uint64_t gen = tb.t.generation();
    tb.t.bump_generation();
    tb.t.clear();
    auto any = [](uint16_t, uint32_t) { return true; };
    EXPECT_FALSE(tb.t.insert({5, 1, 1}, {9, 1, 0}, gen, any).inserted);
    EXPECT_FALSE(tb.lookup(1, 5));
}

// Sweeps visit the marked sets: they drop the stale entries among them and
// keep the live ones, and a set left empty is unmarked.
TEST(CacheClear, IotlbTableSweepVisitsEveryFilledSet)
{
    IotlbTable t(4096);
    auto any = [](uint16_t, uint32_t) { return true; };
    for (uint64_t vpn = 0; vpn < 2000; vpn++)
        ASSERT_TRUE(
            t.insert({vpn, static_cast<uint16_t>(vpn % 2), 1}, {vpn + 1, 1, 0}, t.generation(), any)
                .inserted);
    const size_t stored = t.size();
    // Domain 1's entries are stale.
    size_t dropped = t.sweep([](uint16_t did, uint32_t) { return did != 1; });
    EXPECT_EQ(t.size(), stored - dropped);
    for (uint64_t vpn = 0; vpn < 2000; vpn++) {
        auto v = t.lookup({vpn, static_cast<uint16_t>(vpn % 2), 1}, [](uint32_t) { return true; });
        if (vpn % 2) {
            EXPECT_FALSE(v) << vpn;
        } else if (v) {
            EXPECT_EQ(v->frame, vpn + 1);
        }
    }
    t.sweep([](uint16_t, uint32_t) { return false; });
    EXPECT_EQ(t.size(), 0u);
    EXPECT_EQ(t.marked_sets(), 0u);
}

// A flush between legacy and scalable mode: the tags of the two modes
// share the table (a domain-id and an address-space id are both 16 bits),
// so a legacy entry left in the storage could be read as a scalable one.
TEST(CacheClear, IotlbFlushEmptiesLeavesPdesAndTags)
{
    VtdConfig d;
    vtd_config_default(&d);
    Iotlb tlb(d.iotlb_entries);
    for (uint64_t p = 0; p < 512; p++)
        ASSERT_TRUE(
            tlb.insert(0, p * PAGE, {0xa00000 + p * PAGE, 1, 3}, tlb.prepare_fill(0)).inserted);
    tlb.insert_pde(0, 0, {0x7000, 3}, tlb.prepare_fill(0));
    ASSERT_TRUE(tlb.lookup_pde(0, 0));
    tlb.flush();
    EXPECT_EQ(tlb.size(), 0u);
    // Scalable mode now: (DID 9, PASID 0) gets tag 0, legacy DID 0's tag.
    auto s = tlb.space(9, 0);
    ASSERT_EQ(s.id, 0u);
    for (uint64_t p = 0; p < 512; p++)
        EXPECT_FALSE(tlb.lookup(s, p * PAGE)) << p;
    EXPECT_FALSE(tlb.lookup_pde(s, 0));
    ASSERT_TRUE(tlb.insert(s, 0x3000, {0xb000, 1, 3}, tlb.prepare_fill(s)).inserted);
    EXPECT_EQ(tlb.lookup(s, 0x3000)->phys, 0xb000u);
    // Tags handed out before a flush name nothing after it; allocation
    // starts again from the first tag.
    auto t1 = tlb.space(9, 1);
    tlb.flush();
    EXPECT_EQ(tlb.spaces(), 0u);
    EXPECT_FALSE(tlb.lookup(s, 0x3000));
    EXPECT_FALSE(tlb.find_space(9, 1));
    auto again = tlb.space(3, 3);
    EXPECT_EQ(again.id, 0u);
    EXPECT_FALSE(tlb.lookup(again, 0x3000)) << "the old tag 0's entry is gone";
    (void)t1;
}

// The same with tags retired and reused before the flush.
TEST(CacheClear, IotlbFlushAfterTagReuse)
{
    Iotlb tlb(4096, 8);
    for (uint32_t p = 0; p < 20; p++) {
        auto s = tlb.space(1, p);
        ASSERT_TRUE(
            tlb.insert(s, 0x1000, {0xa000 + (p << 12), 1, 3}, tlb.prepare_fill(s)).inserted);
    }
    EXPECT_GT(tlb.spaces_recycled(), 0u);
    tlb.flush();
    EXPECT_EQ(tlb.size(), 0u);
    EXPECT_EQ(tlb.spaces(), 0u);
    for (uint32_t p = 0; p < 8; p++) {
        auto s = tlb.space(2, 100 + p);
        EXPECT_FALSE(tlb.lookup(s, 0x1000)) << p;
    }
}

TEST(CacheClear, ContextCacheClearEmptiesEverySlotFilledSinceTheLast)
{
    ContextCache c(1024);
    c.clear();
    EXPECT_EQ(c.stored(), 0u);
    for (unsigned round = 0; round < 3; round++) {
        for (uint16_t sid = 0; sid < 700; sid++) {
            Context ctx;
            ctx.did = sid % 5;
            ctx.slptptr = 0x1000u * (round * 1000 + sid + 1);
            ctx.levels = 4;
            ctx.tt = TranslationType::Untranslated;
            c.insert(sid, ctx, c.generation());
        }
        EXPECT_GT(c.stored(), 300u);
        unsigned hits = 0;
        for (uint16_t sid = 0; sid < 700; sid++) {
            if (auto ctx = c.lookup(sid)) {
                hits++;
                EXPECT_EQ(ctx->slptptr, 0x1000u * (round * 1000 + sid + 1)) << "a stale entry";
            }
        }
        EXPECT_EQ(hits, c.stored()) << "round " << round << ": every stored entry is found";
        c.clear();
        EXPECT_EQ(c.stored(), 0u) << "round " << round;
        EXPECT_EQ(c.size(), 0u);
        for (uint16_t sid = 0; sid < 700; sid++)
            EXPECT_FALSE(c.lookup(sid)) << sid;
    }
    // A device-selective invalidation empties its slot; the next clear
    // still finds the slots filled since.
    Context ctx;
    ctx.levels = 4;
    c.insert(3, ctx, c.generation());
    c.invalidate_device(3, 0);
    c.insert(4, ctx, c.generation());
    EXPECT_EQ(c.stored(), 1u);
    c.clear();
    EXPECT_EQ(c.stored(), 0u);
}

// A context-cache entry keeps the sum of the global and its domain's
// epoch, 64-bit: as in the PASID cache (PasidCache.StaleEntriesStayStale)
// no number of invalidations brings a stale entry back, where 32-bit
// epochs came round after 2^32 invalidations of its domain.
TEST(ContextCacheEpochs, StaleEntriesStayStale)
{
    static_assert(std::numeric_limits<ContextCache::Epoch>::digits >= 64);
    ContextCache c(64);
    Context ctx;
    ctx.levels = 4;
    ctx.did = 3;
    ASSERT_FALSE(c.insert(0x10, ctx, c.generation()));
    ctx.did = 4;
    ASSERT_FALSE(c.insert(0x11, ctx, c.generation()));
    c.invalidate_domain(3);
    for (unsigned i = 0; i < 4096; i++) {
        c.invalidate_domain(3);
        c.invalidate_domain(5);
        ASSERT_FALSE(c.lookup(0x10)) << i;
    }
    ASSERT_TRUE(c.lookup(0x11));
    EXPECT_EQ(c.lookup(0x11)->did, 4u) << "its epochs did not move";
    c.invalidate_all();
    EXPECT_FALSE(c.lookup(0x11));
}
