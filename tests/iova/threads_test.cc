// SPDX-License-Identifier: GPL-2.0-or-later
// Real threads: every variant and flush policy under concurrent use.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "helpers.hpp"

namespace viommu::iova::test {
namespace {

class Threads : public ::testing::TestWithParam<std::string_view> {};

TEST_P(Threads, ConcurrentAllocFreeKeepsRangesDisjoint)
{
    constexpr unsigned nthreads = 4, ops = 40'000;
    RealEnv env(nthreads);
    env.start_timer_thread();
    Config c;
    c.end_pfn = Pfn{1} << 22;
    auto a = Allocator::create(GetParam(), env, c);
    std::vector<std::vector<Range>> kept(nthreads);
    std::vector<std::string> errors(nthreads);
    std::vector<std::jthread> ts;
    for (unsigned t = 0; t < nthreads; t++) {
        ts.emplace_back([&, t] {
            std::mt19937_64 rng(t + 1);
            Model m;
            for (unsigned i = 0; i < ops && errors[t].empty(); i++) {
                if (m.empty() || (m.size() < 300 && rng() % 2)) {
                    uint64_t pages = rng() % 8 ? 1u << (rng() % 6) : 40 + rng() % 40;
                    Pfn limit = rng() % 2 ? a->dma_32bit_pfn() : c.end_pfn - 1;
                    AllocResult r = a->alloc(pages, limit, true);
                    if (r.ok())
                        errors[t] = m.add(r.pfn, pages);
                    else
                        errors[t] = status_name(r.status);
                } else {
                    Range r = m.take(rng() % m.size());
                    if (a->free(r.pfn, r.pages) != Status::ok)
                        errors[t] = "free refused";
                }
            }
            while (!m.empty())
                kept[t].push_back(m.take(0));
        });
    }
    ts.clear();
    for (auto &e : errors)
        ASSERT_EQ(e, "");
    Model all;
    for (auto &v : kept)
        for (Range r : v)
            ASSERT_EQ(all.add(r.pfn, r.pages), "") << "two threads hold overlapping ranges";
    for (auto &v : kept)
        for (Range r : v)
            ASSERT_EQ(a->free(r.pfn, r.pages), Status::ok);
    a->flush_caches();
    EXPECT_EQ(a->tree_nodes(), 0u);
    EXPECT_EQ(counter(*a, Counter::bad_free), 0u);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, Threads, ::testing::ValuesIn(Allocator::variants()),
                         [](const auto &info) {
                             std::string s(info.param);
                             std::erase_if(s, [](char c) { return !std::isalnum(c); });
                             return s;
                         });

TEST(ThreadsDma, MapUnmapThroughEveryPolicy)
{
    for (auto policy : FlushPolicy::policies()) {
        // One CPU slot per thread (this one, which drains, 3 workers and
        // the timer thread), so the per-CPU counters are exact.
        RealEnv env(5);
        env.start_timer_thread();
        auto a = Allocator::create("viommu-lab", env);
        CountingFlusher inv;
        {
            auto fq = FlushPolicy::create(policy, *a, inv);
            DmaDomain dom(*a, *fq);
            std::vector<std::jthread> ts;
            std::atomic<unsigned> failures{0};
            for (unsigned t = 0; t < 3; t++) {
                ts.emplace_back([&] {
                    DmaDevice nic;
                    std::vector<uint64_t> ring;
                    for (unsigned i = 0; i < 20'000; i++) {
                        MapResult m = dom.map(nic, 2048);
                        if (!m.ok()) {
                            failures++;
                            continue;
                        }
                        ring.push_back(m.iova);
                        if (ring.size() == 64) {
                            for (auto iova : ring)
                                dom.unmap(iova, 2048);
                            ring.clear();
                        }
                    }
                    for (auto iova : ring)
                        dom.unmap(iova, 2048);
                });
            }
            ts.clear();
            EXPECT_EQ(failures.load(), 0u) << policy;
            fq->drain();
            EXPECT_EQ(fq->pending(), 0u) << policy;
        }
        EXPECT_EQ(counter(*a, Counter::free_calls), 60'000u) << policy;
        EXPECT_EQ(counter(*a, Counter::bad_free), 0u) << policy;
        a->flush_caches();
        EXPECT_EQ(a->tree_nodes(), 0u) << policy;
    }
}

}  // namespace
}  // namespace viommu::iova::test
