// SPDX-License-Identifier: GPL-2.0-or-later
// Alloc and free on different CPUs, as when completions run on the CPU
// that takes the queue's interrupt: IOVAs move from the completing CPU's
// magazines through the depot to the submitting CPU's, and each kernel's
// depot fills or overflows to the tree as its limits say
// (shared/reference/iova-allocator-history.md, section 2 and 4).
#include <gtest/gtest.h>

#include <vector>

#include "helpers.hpp"

using namespace viommu::iova;
using namespace viommu::iova::test;

namespace {

uint64_t on(const Allocator &a, unsigned cpu, Counter c)
{
    return a.stats().on_cpu(cpu, c);
}

uint64_t hits(const Allocator &a, unsigned cpu)
{
    return on(a, cpu, Counter::rcache_hit_loaded) + on(a, cpu, Counter::rcache_hit_prev) +
           on(a, cpu, Counter::rcache_hit_depot);
}

uint64_t puts(const Allocator &a, unsigned cpu)
{
    return on(a, cpu, Counter::rcache_put_loaded) + on(a, cpu, Counter::rcache_put_prev) +
           on(a, cpu, Counter::rcache_put_depot) + on(a, cpu, Counter::rcache_put_tree);
}

// CPU 0 maps @n one-page IOVAs, CPU @completer unmaps them all; @rounds times.
void rounds(Allocator &a, ManualEnv &env, unsigned completer, unsigned n, unsigned rounds)
{
    for (unsigned r = 0; r < rounds; r++) {
        std::vector<Pfn> live;
        env.set_cpu(0);
        for (unsigned i = 0; i < n; i++) {
            AllocResult got = a.alloc(1, a.dma_32bit_pfn(), true);
            ASSERT_TRUE(got.ok());
            live.push_back(got.pfn);
        }
        env.set_cpu(completer);
        for (Pfn p : live)
            ASSERT_EQ(a.free(p, 1), Status::ok);
    }
}

TEST(CrossCpu, ACompletionCpuDrainsOneCacheAndFillsAnother)
{
    for (const char *v : {"linux-4.7", "linux-5.13", "linux-6.7"}) {
        ManualEnv env(2);
        auto a = Allocator::create(v, env, Config{});
        rounds(*a, env, 1, 1024, 4);
        // every free lands in CPU 1's cache, CPU 0 never puts anything
        EXPECT_EQ(puts(*a, 0), 0u) << v;
        EXPECT_EQ(puts(*a, 1), 4u * 1024) << v;
        // CPU 0 never finds its own magazines refilled: after the first
        // round its hits come from the depot's full magazines (CPU 1's)
        EXPECT_GT(on(*a, 0, Counter::rcache_hit_depot), 0u) << v;
        EXPECT_GT(hits(*a, 0), 0u) << v;
        EXPECT_EQ(hits(*a, 1), 0u) << v;
    }
}

TEST(CrossCpu, TheSameCpuKeepsItsOwnIovasWithoutTheDepot)
{
    for (const char *v : {"linux-4.7", "linux-5.13", "linux-6.7"}) {
        ManualEnv env(2);
        auto a = Allocator::create(v, env, Config{});
        rounds(*a, env, 0, 100, 4);
        EXPECT_EQ(puts(*a, 1), 0u) << v;
        EXPECT_EQ(on(*a, 0, Counter::rcache_hit_depot), 0u) << v;
        // 4.7 never hands out the range at the limit itself (its top-only
        // check refuses top >= limit): the first one, 0xfffff, misses once
        EXPECT_EQ(hits(*a, 0), 3u * 100 - (std::string_view(v) == "linux-4.7")) << v;
    }
}

TEST(CrossCpu, ABoundedDepotOverflowsToTheTreeAnUnboundedOneDoesNot)
{
    // CPU 1 frees 64 magazines' worth at once: 4.7 and 5.13 keep 32 full
    // magazines in the depot (MAX_GLOBAL_MAGS) and free the rest to the
    // rbtree under its lock; 6.7's depot is an unbounded list.
    for (const char *v : {"linux-4.7", "linux-5.13", "linux-6.7"}) {
        ManualEnv env(2);
        auto a = Allocator::create(v, env, Config{});
        rounds(*a, env, 1, 64 * 128, 1);
        bool bounded = std::string_view(v) != "linux-6.7";
        if (bounded)
            EXPECT_GT(on(*a, 1, Counter::rcache_put_tree), 0u) << v;
        else
            EXPECT_EQ(on(*a, 1, Counter::rcache_put_tree), 0u) << v;
        EXPECT_GT(on(*a, 1, Counter::rcache_put_depot), 0u) << v;
    }
}

}  // namespace
