// SPDX-License-Identifier: GPL-2.0-or-later
// Property tests: every variant against the reference model.  Random
// alloc/free sequences on several virtual CPUs; after each step no two live
// ranges overlap, every range is size-aligned, inside [start_pfn, limit],
// and bad frees are refused.  Deterministic from the printed seed; set
// IOVA_SEED to replay a run.
#include <cstddef>
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <random>

#include "helpers.hpp"

namespace viommu::iova::test {
namespace {

uint64_t seed_for(std::string_view variant)
{
    const char *env = std::getenv("IOVA_SEED");
    uint64_t base = env ? std::strtoull(env, nullptr, 0) : 0x10a5eedull;
    return base ^ std::hash<std::string_view>{}(variant);
}

class Property : public ::testing::TestWithParam<std::string_view> {};

TEST_P(Property, RandomOpsAgreeWithModel)
{
    const uint64_t seed = seed_for(GetParam());
    std::printf("variant %s seed 0x%llx (IOVA_SEED base to replay)\n", GetParam().data(),
                static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);
    ManualEnv env(4);
    Config cfg;
    cfg.end_pfn = Pfn{1} << 22;  // 16 GiB: a 32-bit zone and one above
    auto a = Allocator::create(GetParam(), env, cfg);
    ASSERT_TRUE(a);
    const Pfn dma32 = a->dma_32bit_pfn(), top = cfg.end_pfn - 1;
    Model m;
    uint64_t ops = 0, allocs = 0, fails = 0, double_frees = 0;
    const uint64_t steps = 250'000;

    for (uint64_t step = 0; step < steps; step++) {
        env.set_cpu(rng() % 4);
        env.advance(rng() % 2000);
        bool do_alloc = m.empty() || (m.size() < 1500 ? rng() % 100 < 60 : rng() % 100 < 40);
        if (do_alloc) {
            uint64_t pages = rng() % 8 ? uint64_t{1} << (rng() % 6) : 1 + rng() % 300;
            unsigned lk = rng() % 10;
            Pfn limit = lk < 4 ? dma32 : lk < 9 ? top : cfg.start_pfn + rng() % top;
            AllocResult r = a->alloc(pages, limit, rng() % 2);
            ops++;
            if (!r.ok()) {
                ASSERT_EQ(r.status, Status::no_space) << "step " << step;
                fails++;
                continue;
            }
            allocs++;
            ASSERT_GE(r.pfn, cfg.start_pfn) << "step " << step;
            ASSERT_LE(r.pfn + pages - 1, limit) << "step " << step << " pages " << pages;
            ASSERT_EQ(r.pfn % std::bit_ceil(pages), 0u) << "step " << step << " pages " << pages;
            std::string err = m.add(r.pfn, pages);
            ASSERT_EQ(err, "") << "step " << step << " pfn " << r.pfn << " pages " << pages;
        } else {
            Range r = m.take(rng() % m.size());
            ASSERT_EQ(a->free(r.pfn, r.pages), Status::ok) << "step " << step;
            ops++;
            if (rng() % 64 == 0) {
                ASSERT_EQ(a->free(r.pfn, r.pages), Status::not_allocated) << "double free";
                ops++;
                double_frees++;
            }
        }
    }
    EXPECT_GT(allocs, steps / 3);
    EXPECT_EQ(counter(*a, Counter::bad_free), double_frees);

    // Freed space is reusable: with everything freed and the caches
    // flushed, the tree is empty and the largest aligned block fits.
    while (!m.empty()) {
        Range r = m.take(m.size() - 1);
        ASSERT_EQ(a->free(r.pfn, r.pages), Status::ok);
    }
    a->flush_caches();
    EXPECT_EQ(a->tree_nodes(), 0u);
    AllocResult big = a->alloc(cfg.end_pfn / 2, top, true);
    ASSERT_TRUE(big.ok());
    EXPECT_EQ(big.pfn, cfg.end_pfn / 2);
    std::printf("%s: %llu operations, %llu failed allocations\n", GetParam().data(),
                static_cast<unsigned long long>(ops), static_cast<unsigned long long>(fails));
}

// Exhaustion: a small domain filled with single pages reports no_space
// exactly when every page is live, before and after random frees.
TEST_P(Property, ExhaustionIsReportedWhenFull)
{
    const uint64_t seed = seed_for(GetParam()) + 1;
    std::printf("variant %s seed 0x%llx\n", GetParam().data(),
                static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);
    ManualEnv env(2);
    Config cfg;
    cfg.end_pfn = 4097;
    auto a = Allocator::create(GetParam(), env, cfg);
    Model m;
    // The 4.4 walk's final check (start_pfn + size + pad > limit) never
    // hands out start_pfn itself; later walks do.
    const bool walk44 =
        GetParam() == "linux-4.4" || GetParam() == "percpu-batch" || GetParam() == "linux-4.7";
    const uint64_t capacity = cfg.end_pfn - cfg.start_pfn - walk44;
    for (int round = 0; round < 3; round++) {
        for (;;) {
            env.set_cpu(rng() % 2);
            AllocResult r = a->alloc(1, cfg.end_pfn - 1, true);
            if (!r.ok()) {
                ASSERT_EQ(r.status, Status::no_space);
                break;
            }
            ASSERT_EQ(m.add(r.pfn, 1), "");
        }
        ASSERT_EQ(m.pages(), capacity) << "round " << round;
        for (size_t n = m.size() / 2; n; n--) {
            env.set_cpu(rng() % 2);
            Range r = m.take(rng() % m.size());
            ASSERT_EQ(a->free(r.pfn, r.pages), Status::ok);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, Property, ::testing::ValuesIn(Allocator::variants()),
                         [](const auto &info) {
                             std::string s(info.param);
                             std::erase_if(s, [](char c) { return !std::isalnum(c); });
                             return s;
                         });

}  // namespace
}  // namespace viommu::iova::test
