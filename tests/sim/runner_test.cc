// SPDX-License-Identifier: GPL-2.0-or-later
// The simulator as a whole: determinism, accounting, configuration errors.
#include <cstddef>
#include <gtest/gtest.h>

#include <viommu/sim.h>

#include "../../guest/iova/allocator.hpp"
#include "sim_env.hpp"
#include "simulator.hpp"

using namespace viommu::sim;

namespace {

bool SimEnv_shared(std::string_view n)
{
    return SimEnv::shared_class(n);
}

SimConfig small(std::string allocator, std::string flush, unsigned cpus = 4)
{
    SimConfig c;
    c.workload = "memcached";
    c.allocator = std::move(allocator);
    c.flush = std::move(flush);
    c.cpus = cpus;
    c.ops = 400;
    return c;
}

TEST(Simulator, SameSeedSameResult)
{
    auto a = simulate(small("linux-4.4", "global-list"));
    auto b = simulate(small("linux-4.4", "global-list"));
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->json(), b->json());
}

TEST(Simulator, TheSeedDrivesTheWorkloadMix)
{
    SimConfig c = small("linux-4.4", "global-list");
    auto a = simulate(c);
    c.seed = 2;
    auto b = simulate(c);
    ASSERT_TRUE(a && b);
    EXPECT_NE(a->json(), b->json());
    // ... but not the figures' size
    EXPECT_NEAR(a->relative, b->relative, 0.1 * a->relative);
}

TEST(Simulator, NoIommuIsTheBaselineAndCostsNothing)
{
    auto r = simulate(small("none", "strict"));
    ASSERT_TRUE(r);
    EXPECT_DOUBLE_EQ(r->relative, 1.0);
    // 4 CPUs each doing one transaction per work_ns on average
    EXPECT_NEAR(r->baseline_throughput, 4 * 1e9 / 14'692, 4 * 1e9 / 14'692 * 0.05);
}

TEST(Simulator, IommuCostsThroughputAndSpinTimeIsAccountedPerSite)
{
    auto r = simulate(small("linux-4.4", "global-list"));
    ASSERT_TRUE(r);
    EXPECT_GT(r->transactions, 0u);
    EXPECT_LT(r->relative, 1.0);
    EXPECT_GT(r->relative, 0.0);
    EXPECT_GT(r->spin_share, 0.0);
    EXPECT_LT(r->spin_share, 1.0);
    double fractions = 0;
    for (const auto &p : r->profile) {
        fractions += r->spin_fraction_of(p.lock, p.site);
        EXPECT_LE(p.contended, p.acquisitions);
    }
    EXPECT_NEAR(fractions, 1.0, 1e-9);
    EXPECT_EQ(r->failed_maps, 0u);
}

TEST(Simulator, EveryVariantRunsEveryWorkloadWithoutFailedMaps)
{
    for (std::string_view v : viommu::iova::Allocator::variants())
        for (std::string_view w : {"memcached", "forwarding", "nginx", "nvme"}) {
            SimConfig c = small(std::string(v), "flush-queue", 2);
            c.workload = w;
            c.ops = 200;
            std::string err;
            auto r = simulate(c, CostModel::standard(), &err);
            ASSERT_TRUE(r) << v << " " << w << ": " << err;
            EXPECT_EQ(r->failed_maps, 0u) << v << " " << w;
            EXPECT_GT(r->relative, 0.0) << v << " " << w;
            EXPECT_LE(r->relative, 1.0 + 1e-9) << v << " " << w;
        }
}

TEST(Simulator, EachDomainHasItsOwnTreeButKernelGlobalLocksAreShared)
{
    SimConfig c = small("linux-4.4", "global-list");
    c.workload = "forwarding";
    c.ops = 2000;
    auto r = simulate(c);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->domains, 2u);
    // one allocator per domain: an array of two statistics objects
    EXPECT_EQ(r->allocator_stats.front(), '[');
    // async_umap_flush_lock is one kernel lock: both domains' policies
    // queue on the same virtual lock; trees and flush queues are per domain
    uint64_t flush_acq = 0;
    for (const auto &p : r->profile)
        if (p.lock == "async_umap_flush_lock")
            flush_acq += p.acquisitions;
    EXPECT_GT(flush_acq, 0u);
    EXPECT_GT(r->spin_share_of("async_umap_flush_lock"), 0.0);
    EXPECT_TRUE(SimEnv_shared("async_umap_flush_lock"));
    EXPECT_TRUE(SimEnv_shared("deferred_flush"));
    EXPECT_FALSE(SimEnv_shared("iova_rbtree_lock"));
    EXPECT_FALSE(SimEnv_shared("fq_ring"));
    SimConfig one = small("linux-4.4", "global-list");
    auto m = simulate(one);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->domains, 1u);
    EXPECT_NE(m->allocator_stats.front(), '[');
}

TEST(Simulator, RejectsBadConfigurations)
{
    std::string err;
    SimConfig c = small("linux-4.4", "global-list");
    c.workload = "bogus";
    EXPECT_FALSE(simulate(c, CostModel::standard(), &err));
    EXPECT_NE(err.find("bogus"), std::string::npos);
    c = small("linux-0.1", "global-list");
    EXPECT_FALSE(simulate(c));
    c = small("linux-4.4", "sometimes");
    EXPECT_FALSE(simulate(c));
    c = small("linux-4.4", "strict");
    c.invq = "carrier-pigeon";
    EXPECT_FALSE(simulate(c));
    c = small("linux-4.4", "strict");
    c.dma = "dac-maybe";
    EXPECT_FALSE(simulate(c));
    c = small("linux-4.4", "strict", 257);
    EXPECT_FALSE(simulate(c));
}

TEST(Simulator, RunsUpTo256Cpus)
{
    SimConfig c = small("viommu-lab", "flush-queue", 256);
    c.workload = "nvme";
    c.ops = 256 * 20;
    auto r = simulate(c);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cpus, 256u);
    EXPECT_GE(r->transactions, c.ops);
}

TEST(SimCApi, RunsAndReportsJson)
{
    ViommuSimConfig c{};
    c.workload = "nvme";
    c.allocator = "linux-4.7";
    c.flush = "strict";
    c.cpus = 2;
    c.ops = 100;
    long n = viommu_sim_run_json(&c, nullptr, 0);
    ASSERT_GT(n, 0);
    std::string buf(static_cast<size_t>(n) + 1, '\0');
    EXPECT_EQ(viommu_sim_run_json(&c, buf.data(), buf.size()), n);
    EXPECT_NE(buf.find("\"allocator\":\"linux-4.7\""), std::string::npos);
    c.allocator = "bogus";
    EXPECT_EQ(viommu_sim_run_json(&c, nullptr, 0), -1);
    EXPECT_EQ(viommu_sim_run_json(nullptr, nullptr, 0), -1);
}

}  // namespace
