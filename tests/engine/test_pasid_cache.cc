// SPDX-License-Identifier: GPL-2.0-or-later
// The PASID cache: entries by (source-id, PASID), the three invalidation
// granularities, fills racing invalidations, and replacement when full
// (one way, never the whole cache).
#include <gtest/gtest.h>

#include <limits>

#include "pasid_cache.hpp"

using namespace viommu::vtd;

namespace {

PasidEntry entry(uint16_t did, uint64_t fs = 0x5000)
{
    PasidEntry e;
    e.did = did;
    e.pgtt = 1;
    e.fs_levels = 4;
    e.sl_levels = 4;
    e.flags = 0x15;
    e.fsptptr = fs;
    e.slptptr = 0x6000;
    return e;
}

}  // namespace

TEST(PasidCache, KeepsWhatWasInserted)
{
    PasidCache c(64);
    ASSERT_TRUE(c.insert(0x10, 5, entry(1), c.generation()));
    ASSERT_TRUE(c.insert(0x10, 6, entry(2, 0x7000), c.generation()));
    ASSERT_TRUE(c.insert(0x11, 5, entry(1, 0x8000), c.generation()));
    EXPECT_EQ(c.lookup(0x10, 5), entry(1));
    EXPECT_EQ(c.lookup(0x10, 6), entry(2, 0x7000));
    EXPECT_EQ(c.lookup(0x11, 5), entry(1, 0x8000));
    EXPECT_FALSE(c.lookup(0x12, 5));
    EXPECT_EQ(c.size(), 3u);
    // Refilling a key replaces its entry.
    ASSERT_TRUE(c.insert(0x10, 5, entry(1, 0x9000), c.generation()));
    EXPECT_EQ(c.lookup(0x10, 5)->fsptptr, 0x9000u);
    EXPECT_EQ(c.size(), 3u);
}

TEST(PasidCache, Granularities)
{
    PasidCache c(64);
    auto fill = [&] {
        c.insert(0x10, 5, entry(1), c.generation());
        c.insert(0x10, 6, entry(1), c.generation());
        c.insert(0x10, 7, entry(2), c.generation());
    };
    fill();
    c.invalidate_pasid(1, 5);
    EXPECT_FALSE(c.lookup(0x10, 5));
    EXPECT_TRUE(c.lookup(0x10, 6));
    EXPECT_TRUE(c.lookup(0x10, 7));
    fill();
    c.invalidate_domain(1);
    EXPECT_FALSE(c.lookup(0x10, 5));
    EXPECT_FALSE(c.lookup(0x10, 6));
    EXPECT_TRUE(c.lookup(0x10, 7));
    fill();
    c.invalidate_all();
    EXPECT_FALSE(c.lookup(0x10, 5));
    EXPECT_FALSE(c.lookup(0x10, 7));
    EXPECT_EQ(c.size(), 0u);
    fill();
    c.clear();
    EXPECT_EQ(c.size(), 0u);
}

TEST(PasidCache, FillRacingInvalidationIsRefused)
{
    PasidCache c(64);
    uint64_t gen = c.generation();
    c.invalidate_pasid(3, 9);
    EXPECT_FALSE(c.insert(0x10, 5, entry(1), gen));
    EXPECT_FALSE(c.lookup(0x10, 5));
}

TEST(PasidCache, FullReplacesOneWayAtATime)
{
    PasidCache c(64);
    ASSERT_EQ(c.capacity(), 64u);
    size_t evictions = 0;
    for (uint32_t p = 0; p < 1000; p++) {
        bool evicted = false;
        ASSERT_TRUE(c.insert(0x10, p, entry(1), c.generation(), &evicted));
        evictions += evicted;
        EXPECT_TRUE(c.lookup(0x10, p)) << "the newest fill is always there";
    }
    EXPECT_EQ(evictions, 1000u - c.size());
    EXPECT_GE(c.size(), 56u) << "nearly every way stays live: nothing is flushed wholesale";
    EXPECT_LE(c.size(), 64u);
    // A stale way is reused before a live one.
    c.invalidate_all();
    bool evicted = true;
    ASSERT_TRUE(c.insert(0x10, 5000, entry(1), c.generation(), &evicted));
    EXPECT_FALSE(evicted);
}

// clear() empties the storage, not only the epochs (an entry a clear left
// behind would come back once the 32-bit epochs wrapped), and costs only
// the sets filled since the last one: entries filled after a clear are
// emptied by the next, entries refilled with other values read back as
// refilled, and a clear of an empty cache, or twice in a row, is harmless.
TEST(PasidCache, ClearEmptiesEverySetFilledSinceTheLast)
{
    PasidCache c(PasidCache::DEFAULT_ENTRIES);
    EXPECT_EQ(c.stored(), 0u);
    c.clear();
    for (unsigned round = 0; round < 3; round++) {
        for (uint32_t p = 0; p < 300; p++)
            ASSERT_TRUE(c.insert(0x10 + (p & 7), p, entry(1, 0x1000 * (round * 300 + p + 1)),
                                 c.generation()));
        EXPECT_GT(c.stored(), 200u) << round;
        unsigned hits = 0;
        for (uint32_t p = 0; p < 300; p++) {
            auto e = c.lookup(0x10 + (p & 7), p);
            if (e) {
                hits++;
                EXPECT_EQ(e->fsptptr, 0x1000u * (round * 300 + p + 1)) << "a stale entry";
            }
        }
        EXPECT_EQ(hits, c.stored()) << "round " << round << ": every stored entry is found";
        c.clear();
        EXPECT_EQ(c.stored(), 0u) << "round " << round << ": a way kept its entry";
        EXPECT_EQ(c.size(), 0u);
        for (uint32_t p = 0; p < 300; p++)
            EXPECT_FALSE(c.lookup(0x10 + (p & 7), p)) << p;
        c.clear();
        EXPECT_EQ(c.stored(), 0u);
    }
    // One fill after a clear: the next clear empties it.
    ASSERT_TRUE(c.insert(0x20, 1, entry(3), c.generation()));
    EXPECT_EQ(c.stored(), 1u);
    c.clear();
    EXPECT_EQ(c.stored(), 0u);
    EXPECT_FALSE(c.lookup(0x20, 1));
}

// An entry is current while the sum of its epochs (global, domain, PASID,
// source-id) is the one it was filled under, and every invalidation adds
// one to a sum.  Epochs of 32 bits came round after 2^32 invalidations of
// the entry's PASID, a few minutes of a guest's time, and the stale entry
// was current again; 64-bit ones take 2^64 (centuries at one invalidation
// a nanosecond).  The context cache keeps such sums too
// (ContextCacheEpochs.StaleEntriesStayStale).
TEST(PasidCache, StaleEntriesStayStale)
{
    static_assert(std::numeric_limits<PasidCache::Epoch>::digits >= 64);
    PasidCache c(64);
    ASSERT_TRUE(c.insert(0x10, 7, entry(3), c.generation()));
    ASSERT_TRUE(c.insert(0x11, 8, entry(4), c.generation()));
    c.invalidate_pasid(3, 7);
    // Granularities other than the one that retired the entry move other
    // epochs of its sum: none of them brings it back.
    for (unsigned i = 0; i < 4096; i++) {
        c.invalidate_pasid(3, 7);
        c.invalidate_domain(3);
        c.invalidate_source(0x10, 0);
        c.invalidate_pasid(4, 9);
        ASSERT_FALSE(c.lookup(0x10, 7)) << i;
    }
    EXPECT_EQ(c.lookup(0x11, 8), entry(4)) << "its epochs did not move";
    c.invalidate_all();
    EXPECT_FALSE(c.lookup(0x11, 8));
}
