// SPDX-License-Identifier: GPL-2.0-or-later
// LiveSet against a std::map doing the same: inserts, refused duplicates,
// erases of the wrong size, and erases that leave probe chains behind
// (backward-shift deletion), over the growth of every shard.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "live_set.hpp"

namespace viommu::iova {
namespace {

void check_against_map(unsigned ncpus, uint64_t span, unsigned ops, uint64_t seed)
{
    LiveSet set(ncpus);
    std::map<uint64_t, uint64_t> ref;
    std::mt19937_64 rng(seed);
    for (unsigned i = 0; i < ops; i++) {
        uint64_t pfn = rng() % span;
        uint64_t pages = 1 + rng() % 3;
        if (rng() % 3) {
            bool fresh = !ref.count(pfn);
            ASSERT_EQ(set.insert(pfn, pages), fresh) << i;
            if (fresh)
                ref[pfn] = pages;
        } else {
            auto it = ref.find(pfn);
            bool match = it != ref.end() && it->second == pages;
            ASSERT_EQ(set.erase(pfn, pages), match) << i;
            if (match)
                ref.erase(it);
        }
        ASSERT_EQ(set.size(), ref.size()) << i;
    }
    // Everything left is found once, with its own size only.
    for (auto [pfn, pages] : ref) {
        EXPECT_FALSE(set.erase(pfn, pages + 1));
        EXPECT_TRUE(set.erase(pfn, pages));
        EXPECT_FALSE(set.erase(pfn, pages));
    }
    EXPECT_EQ(set.size(), 0u);
}

TEST(LiveSet, MatchesAMapThroughGrowthAndDeletion)
{
    // A span a few times the live count: many pfns meet again, probe
    // chains are long and deletions move entries.
    for (unsigned ncpus : {1u, 3u, 64u})
        for (uint64_t seed = 1; seed <= 3; seed++)
            check_against_map(ncpus, 3000, 20000, seed);
}

TEST(LiveSet, AlignedPfnsSpreadOverShardsAndSlots)
{
    // Size-aligned allocations: pfns that are all multiples of a large
    // power of two must not land in one shard or one probe chain.
    LiveSet set(4);
    for (uint64_t i = 1; i <= 4096; i++)
        ASSERT_TRUE(set.insert(i << 20, 1u << 20));
    EXPECT_EQ(set.size(), 4096u);
    for (uint64_t i = 1; i <= 4096; i++)
        ASSERT_TRUE(set.erase(i << 20, 1u << 20));
    EXPECT_EQ(set.size(), 0u);
}

TEST(LiveSet, NoRangeIsLiveInAnEmptySet)
{
    LiveSet set(1);
    EXPECT_FALSE(set.erase(0, 1));
    EXPECT_FALSE(set.erase(~0ull, 1));
    EXPECT_TRUE(set.insert(~0ull, 1));
    EXPECT_FALSE(set.insert(~0ull, 2));
    EXPECT_TRUE(set.erase(~0ull, 1));
}

}  // namespace
}  // namespace viommu::iova
