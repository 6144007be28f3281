// SPDX-License-Identifier: GPL-2.0-or-later
// The simulator as a whole: determinism, accounting, configuration errors.
#include <cstddef>
#include <cstring>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <viommu/sim.h>

#include "../../guest/iova/allocator.hpp"
#include "sim_env.hpp"
#include "sim_test_util.hpp"
#include "simulator.hpp"

using namespace viommu::sim;
using viommu::sim::test::cycle_ns;

namespace {

bool SimEnv_shared(std::string_view n)
{
    return SimEnv::shared_class(n);
}

// The memcached case on fewer CPUs and a short window.
SimConfig small(std::string allocator, std::string flush, unsigned cpus = 4)
{
    SimConfig c;
    std::string err;
    EXPECT_TRUE(load_case("memcached-16cpu-xl710", "", c, &err)) << err;
    c.allocator = std::move(allocator);
    c.flush = std::move(flush);
    c.cpus = cpus;
    c.ops_per_cpu = 100;
    return c;
}

SimConfig from_args(std::initializer_list<std::pair<const char *, const char *>> args)
{
    SimConfig c;
    std::string err;
    for (auto [k, v] : args)
        EXPECT_TRUE(c.set(k, v, &err)) << err;
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
        for (std::string_view w : {"memcached-16cpu-xl710", "ovs-forward-64b",
                                   "nginx-rbtree-regression", "nvme-smmuv3-cmdq"}) {
            SimConfig c;
            std::string lerr;
            ASSERT_TRUE(load_case(std::string(w), "", c, &lerr)) << lerr;
            c.allocator = v;
            c.flush = "flush-queue";
            c.cpus = 2;
            c.sockets = 1;
            c.ops_per_cpu = 100;
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
    SimConfig c;
    std::string err;
    ASSERT_TRUE(load_case("ovs-forward-64b", "intel-iommu-4.4", c, &err)) << err;
    c.cpus = 4;
    c.ops_per_cpu = 500;
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
    EXPECT_FALSE(c.set("workload", "bogus", &err));
    EXPECT_NE(err.find("bogus"), std::string::npos);
    c = small("linux-0.1", "global-list");
    EXPECT_FALSE(simulate(c, CostModel::standard(), &err));
    EXPECT_NE(err.find("--allocator linux-0.1"), std::string::npos) << err;
    c = small("linux-4.4", "sometimes");
    EXPECT_FALSE(simulate(c, CostModel::standard(), &err));
    EXPECT_NE(err.find("--flush sometimes"), std::string::npos) << err;
    c = small("linux-4.4", "strict");
    EXPECT_FALSE(c.set("iommu", "carrier-pigeon", &err));
    EXPECT_FALSE(c.set("dma", "dac-maybe", &err));
    EXPECT_FALSE(c.set("cpus", "257", &err));
    EXPECT_NE(err.find("--cpus 257"), std::string::npos) << err;
    // inconsistent combinations: each names the parameter
    struct Bad {
        std::initializer_list<std::pair<const char *, const char *>> args;
        const char *names;
    };
    for (const Bad &b : std::initializer_list<Bad>{
             {{{"workload", "nic"}, {"iodepth", "8"}}, "--iodepth"},
             {{{"iommu", "vtd"}, {"cmdq", "spinlock"}}, "--cmdq"},
             {{{"workload", "nic"}, {"irq-cpus", "2"}}, "--irq-cpus"},
             {{{"workload", "nic"}, {"irq-affinity", "spread"}, {"irq-cpus", "0-99"}},
              "--irq-cpus"},
             {{{"workload", "forward"}, {"devices", "3"}}, "--devices"},
             {{{"cpus", "2"}, {"sockets", "4"}}, "--sockets"},
             {{{"workload", "map-bench"}, {"cpus", "4"}, {"threads", "8"}}, "--threads"},
             {{{"duration", "1ms"}, {"ops-per-cpu", "10"}}, "--duration"},
         }) {
        SimConfig p = from_args(b.args);
        EXPECT_FALSE(simulate(p, CostModel::standard(), &err)) << b.names;
        EXPECT_NE(err.find(b.names), std::string::npos) << err;
    }
}

// Each operation's non-IOMMU work is drawn from the whole ns in [w/2, 3w/2):
// its mean is w, odd or even, and 1 ns stays 1 ns (not free).
TEST(Simulator, NonIommuWorkAveragesCpuNsPerOp)
{
    for (auto [w, lo, hi] :
         {std::tuple{"1", 1.0, 1.0}, {"3", 2.95, 3.05}, {"2000", 1990., 2010.}}) {
        SimConfig c = from_args({{"workload", "map-bench"},
                                 {"cpus", "1"},
                                 {"cpu-ns-per-op", w},
                                 {"ops-per-cpu", "20000"},
                                 {"allocator", "none"}});
        auto r = simulate(c);
        ASSERT_TRUE(r);
        EXPECT_GE(r->baseline_latency_ns, lo) << w;
        EXPECT_LE(r->baseline_latency_ns, hi) << w;
    }
}

// A --duration window also ends after 2^24 operations on a CPU (its
// operations drawing short ones near the limit --duration allows): the
// result says so, exactly when that happened.  A long run reports its
// progress every 2^23 operations started.
TEST(Simulator, ADurationWindowCutAtItsOperationLimitSaysSo)
{
    unsigned cut = 0;
    for (const char *seed : {"1", "2", "3"}) {
        SimConfig c = from_args({{"workload", "map-bench"},
                                 {"cpus", "1"},
                                 {"cpu-ns-per-op", "3"},
                                 {"duration", "50331648ns"},  // 3 ns x 2^24
                                 {"allocator", "none"},
                                 {"seed", seed}});
        std::vector<std::pair<uint64_t, bool>> told;
        std::string err;
        auto r = simulate(c, CostModel::standard(), &err, nullptr,
                          [&](uint64_t n, bool iommu) { told.emplace_back(n, iommu); });
        ASSERT_TRUE(r) << err;
        EXPECT_EQ(r->window_cut, r->transactions == (uint64_t{1} << 24)) << seed;
        EXPECT_NE(r->json().find(r->window_cut ? "\"window_cut\":true" : "\"window_cut\":false"),
                  std::string::npos);
        cut += r->window_cut;
        // (the one warm-up operation counts too)
        ASSERT_EQ(told.size(), r->window_cut ? 2u : 1u) << seed;
        EXPECT_EQ(told[0], std::pair(uint64_t{1} << 23, false));
        if (r->window_cut) {
            EXPECT_EQ(told[1], std::pair(uint64_t{1} << 24, false));
        }
    }
    EXPECT_GT(cut, 0u);
    EXPECT_LT(cut, 3u);
}

TEST(Simulator, RunsUpTo256Cpus)
{
    SimConfig c = from_args({{"workload", "block"},
                             {"cpus", "256"},
                             {"ops-per-cpu", "20"},
                             {"warmup", "32"},
                             {"allocator", "viommu-lab"}});
    auto r = simulate(c);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cpus, 256u);
    EXPECT_GE(r->transactions, 256u * 20);
}

TEST(Simulator, SetupsThatAreNoCaseRunDeterministically)
{
    // 64 threads of map-bench on SMMUv3 with each command-queue variant,
    // and 12 NVMe drives at queue depth 128 on 128 CPUs
    std::vector<SimConfig> setups;
    for (const char *q : {"spinlock", "cmpxchg", "fetch-add"})
        setups.push_back(from_args({{"workload", "map-bench"},
                                    {"cpus", "64"},
                                    {"iommu", "smmuv3"},
                                    {"cmdq", q},
                                    {"flush", "strict"},
                                    {"allocator", "linux-6.7"},
                                    {"cpu-ns-per-op", "200"},
                                    {"ops-per-cpu", "50"}}));
    setups.push_back(from_args({{"workload", "block"},
                                {"cpus", "128"},
                                {"devices", "12"},
                                {"iodepth", "128"},
                                {"cpu-ns-per-op", "3000"},
                                {"device-ns-per-op", "1000"},
                                {"ops-per-cpu", "20"},
                                {"warmup", "0"},
                                {"allocator", "linux-6.7"}}));
    for (const SimConfig &c : setups) {
        std::string err;
        auto a = simulate(c, CostModel::standard(), &err);
        auto b = simulate(c, CostModel::standard(), &err);
        ASSERT_TRUE(a && b) << err;
        EXPECT_EQ(a->json(), b->json());
        EXPECT_GT(a->throughput, 0.0);
        EXPECT_EQ(a->failed_maps, 0u);
    }
    // the spinlock queue polls under its lock: slower than the lock-free one
    auto sl = simulate(setups[0]);
    auto cx = simulate(setups[1]);
    ASSERT_TRUE(sl && cx);
    EXPECT_LT(sl->throughput, cx->throughput);
    EXPECT_GT(cx->inv.submissions, 0u);
}

TEST(Simulator, DeviceServiceTimeBoundsThroughput)
{
    // one device at 1 us per I/O cannot complete more than 1 M I/Os per second
    SimConfig c = from_args({{"workload", "block"},
                             {"cpus", "8"},
                             {"iodepth", "4"},
                             {"cpu-ns-per-op", "1000"},
                             {"device-ns-per-op", "1000"},
                             {"allocator", "none"}});
    auto r = simulate(c);
    ASSERT_TRUE(r);
    EXPECT_LE(r->throughput, 1.0e6 * 1.01);
    EXPECT_GT(r->throughput, 0.9e6);
    EXPECT_GT(double(cycle_ns(*r, "device-wait")), 0.5 * double(r->cpu_time_ns));
}

TEST(Simulator, ADeviceBoundRunIsNoFasterWithAnIommuThanWithout)
{
    // the same work through one device: the IOMMU only adds CPU time, and
    // neither run serves more mappings than the device can
    for (auto [workload, cpus, ops, device] : {std::tuple{"nic", "2", "20", "5000000"},
                                               {"nic", "2", "100", "100000"},
                                               {"nic", "4", "400", "10000"},
                                               {"block", "4", "400", "10000"}}) {
        SimConfig c = from_args({{"workload", workload},
                                 {"cpus", cpus},
                                 {"ops-per-cpu", ops},
                                 {"device-ns-per-op", device}});
        auto r = simulate(c);
        ASSERT_TRUE(r);
        SCOPED_TRACE(std::string(workload) + " on " + cpus + " CPUs");
        EXPECT_LE(r->throughput, r->baseline_throughput);
        const double device_ns = double(c.device_ns_per_op);
        const double maps_per_op = double(r->maps) / double(r->transactions);
        EXPECT_LE(r->throughput * maps_per_op * device_ns, 1e9 * 1.000001);
        EXPECT_LE(r->baseline_throughput * maps_per_op * device_ns, 1e9 * 1.000001);
    }
}

// Operations that take no time without the IOMMU leave that run no rate:
// the comparison is n/a (null), never 0% or a division by zero.
TEST(Simulator, ABaselineInWhichNoTimePassesHasNoRate)
{
    auto r = simulate(from_args({{"cpus", "2"}, {"ops-per-cpu", "20"}, {"cpu-ns-per-op", "0"}}));
    ASSERT_TRUE(r);
    EXPECT_GT(r->throughput, 0);
    const std::string j = r->json();
    EXPECT_NE(j.find("\"relative_to_no_iommu\":null,\"no_iommu_ops_per_s\":null"),
              std::string::npos)
        << j;
    EXPECT_EQ(j.find("\"ops_per_s\":null"), std::string::npos) << j;
    auto none = simulate(from_args(
        {{"cpus", "2"}, {"ops-per-cpu", "20"}, {"cpu-ns-per-op", "0"}, {"allocator", "none"}}));
    ASSERT_TRUE(none);
    EXPECT_NE(none->json().find("\"ops_per_s\":null"), std::string::npos) << none->json();
    auto timed = simulate(from_args({{"cpus", "2"}, {"ops-per-cpu", "20"}}));
    ASSERT_TRUE(timed);
    EXPECT_EQ(timed->json().find(":null,\"no_iommu_ops_per_s\""), std::string::npos);
}

// The cost model's fields by name (viommu-sim --cost): every name of
// json() can be read and set, values that cannot time anything are
// refused, and a run names what differs from the standard model.
TEST(CostModel, FieldsByNameAndAWhatIfRunNamesItsOverrides)
{
    const CostModel std_cost = CostModel::standard();
    std::string j = std_cost.json(), err;
    for (std::string_view f : CostModel::names()) {
        EXPECT_NE(j.find("\"" + std::string(f) + "\":" + std::to_string(std_cost.get(f))),
                  std::string::npos)
            << f;
        CostModel c = std_cost;
        EXPECT_TRUE(c.set(f, 7, &err)) << f << ": " << err;
        EXPECT_EQ(c.get(f), 7u);
    }
    CostModel c = std_cost;
    EXPECT_FALSE(c.set("inv_poll", 0, &err));  // polls would never move the clock
    EXPECT_FALSE(c.set("handoff_lines", 0, &err));
    EXPECT_FALSE(c.set("atomic", 100'001, &err));
    EXPECT_FALSE(c.set("no_such_field", 1, &err));
    EXPECT_NE(err.find("no_such_field"), std::string::npos);
    EXPECT_EQ(c.json(), std_cost.json()) << "a refused value changes nothing";

    SimConfig cfg = small("linux-4.4", "global-list");
    auto plain = simulate(cfg, std_cost);
    ASSERT_TRUE(c.set("line_transfer", 320, &err)) << err;
    auto slow = simulate(cfg, c);
    ASSERT_TRUE(plain && slow);
    EXPECT_TRUE(plain->cost_overrides.empty());
    EXPECT_EQ(plain->json().find("cost_overrides"), std::string::npos);
    EXPECT_EQ(slow->cost_overrides, "{\"line_transfer\":320}");
    EXPECT_NE(slow->json().find("\"cost_overrides\":{\"line_transfer\":320}"), std::string::npos);
    EXPECT_LT(slow->throughput, plain->throughput);
}

// --clients-per-cpu: a closed loop.  One request per CPU and a client
// round trip of 9 us: each CPU answers at most one request per 9 us plus
// its service time, and idles the rest; a round trip of 0 keeps a request
// always waiting, the CPU-bound run exactly.
TEST(Simulator, AClosedLoopOfClientsBoundsTheRateAndIdlesTheCpus)
{
    auto setup = [](const char *clients, const char *rtt, const char *allocator) {
        SimConfig c = from_args({{"workload", "memcached"},
                                 {"cpus", "4"},
                                 {"cpu-ns-per-op", "1000"},
                                 {"ops-per-cpu", "200"},
                                 {"allocator", allocator}});
        std::string err;
        if (clients) {
            EXPECT_TRUE(c.set("clients-per-cpu", clients, &err)) << err;
            EXPECT_TRUE(c.set("client-rtt", rtt, &err)) << err;
        }
        return c;
    };
    auto loop = simulate(setup("1", "9us", "none"));
    ASSERT_TRUE(loop);
    EXPECT_LT(loop->throughput, 4 * 1e9 / 9000);
    EXPECT_GT(loop->throughput, 4 * 1e9 / (9000 + 1500 + 500));
    EXPECT_GT(double(cycle_ns(*loop, "client-wait")), 0.75 * double(loop->cpu_time_ns));
    // with the IOMMU the same loop: the service time grows, the rate
    // falls less than the CPU-bound run's, and the CPUs still idle
    auto iommu = simulate(setup("1", "9us", "linux-4.7"));
    auto bound = simulate(setup(nullptr, nullptr, "linux-4.7"));
    ASSERT_TRUE(iommu && bound);
    EXPECT_GT(iommu->relative, bound->relative);
    EXPECT_GT(cycle_ns(*iommu, "client-wait"), 0u);
    EXPECT_EQ(cycle_ns(*bound, "client-wait"), 0u);
    // a reply's client asks again at once: never idle, the same run
    auto at_once = simulate(setup("1", "0", "linux-4.7"));
    ASSERT_TRUE(at_once);
    EXPECT_EQ(at_once->transactions, bound->transactions);
    EXPECT_EQ(at_once->elapsed_ns, bound->elapsed_ns);
    EXPECT_EQ(cycle_ns(*at_once, "client-wait"), 0u);
}

// Completions handed to a CPU that waits for its clients run while it
// waits: with TX completions on one CPU and a round trip far longer than a
// transaction, nothing is left unmapped and no submitter waits for them.
TEST(Simulator, ACpuWaitingForClientsRunsTheCompletionsHandedToIt)
{
    SimConfig c = from_args({{"workload", "memcached"},
                             {"cpus", "4"},
                             {"cpu-ns-per-op", "1000"},
                             {"ops-per-cpu", "200"},
                             {"tx-window", "0"},
                             {"irq-affinity", "single"},
                             {"clients-per-cpu", "1"},
                             {"client-rtt", "50us"},
                             {"allocator", "linux-4.15"}});
    auto r = simulate(c);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->failed_maps, 0u);
    EXPECT_EQ(cycle_ns(*r, "completion-wait"), 0u);
    EXPECT_GT(double(cycle_ns(*r, "client-wait")), 0.5 * double(r->cpu_time_ns));
}

// --cpu-ns-once: a fixed stretch of non-IOMMU work per CPU (a probe's
// mdelay()s) lengthens the window by exactly that much, in both the run
// and its no-IOMMU baseline, and touches nothing on the IOMMU side.
TEST(Simulator, OnceWorkLengthensTheWindowAndNothingElse)
{
    auto setup = [](const char *once) {
        return from_args({{"workload", "block"},
                          {"cpus", "2"},
                          {"iodepth", "64"},
                          {"setup-fill", "no"},
                          {"warmup", "0"},
                          {"ops-per-cpu", "64"},
                          {"cpu-ns-per-op", "100"},
                          {"bus", "platform"},
                          {"allocator", "linux-4.7"},
                          {"cpu-ns-once", once}});
    };
    auto plain = simulate(setup("0"));
    auto delayed = simulate(setup("5ms"));
    ASSERT_TRUE(plain && delayed);
    EXPECT_EQ(delayed->elapsed_ns, plain->elapsed_ns + 5e6);
    EXPECT_EQ(delayed->cpu_time_ns, plain->cpu_time_ns + 2 * 5'000'000u);
    EXPECT_EQ(cycle_ns(*delayed, "work"), cycle_ns(*plain, "work") + 2 * 5'000'000u);
    EXPECT_EQ(delayed->nodes_per_alloc, plain->nodes_per_alloc);
    EXPECT_EQ(delayed->mean_hold_ns("iova_rbtree_lock", "alloc"),
              plain->mean_hold_ns("iova_rbtree_lock", "alloc"));
    // the baseline pays it too: the relative figure moves towards 1
    EXPECT_GT(delayed->relative, plain->relative);
    EXPECT_LT(delayed->relative, 1.0);
}

// Completions on another CPU free their ring slots only when that CPU has
// run them: one CPU taking every queue's interrupt bounds the machine, and
// its backlog stays within a slot per submitter (no unmap left behind).
TEST(Simulator, ACompletionCpuThatFallsBehindHoldsItsSubmittersUp)
{
    auto setup = [](const char *affinity) {
        return from_args({{"workload", "block"},
                          {"cpus", "8"},
                          {"iodepth", "4"},
                          {"cpu-ns-per-op", "1000"},
                          {"irq-affinity", affinity},
                          {"iommu", "vtd"},
                          {"allocator", "linux-4.15"},
                          {"flush", "strict"},
                          {"ops-per-cpu", "200"}});
    };
    auto same = simulate(setup("same"));
    auto single = simulate(setup("single"));
    ASSERT_TRUE(same && single);
    EXPECT_EQ(cycle_ns(*same, "completion-wait"), 0u);
    EXPECT_GT(cycle_ns(*single, "completion-wait"), 0u);
    EXPECT_LT(single->throughput, same->throughput);
    // strict: one invalidation per unmap; the window's unmaps keep up with its maps
    for (const auto *r : {&*same, &*single}) {
        EXPECT_EQ(r->maps, r->transactions);
        EXPECT_LE(r->maps, r->inv.submissions + 2 * 8);
        EXPECT_GE(r->maps + 2 * 8, r->inv.submissions);
    }
    // the same on another CPU than the first
    SimConfig one = setup("single");
    one.irq_cpus = "3";
    auto moved = simulate(one);
    ASSERT_TRUE(moved);
    EXPECT_GT(cycle_ns(*moved, "completion-wait"), 0u);
    EXPECT_LT(moved->throughput, same->throughput);
}

TEST(Simulator, CycleProfileAddsUpToAllCpuTime)
{
    for (SimConfig c : {small("percpu-batch", "global-list"), small("linux-5.13", "strict")}) {
        auto r = simulate(c);
        ASSERT_TRUE(r);
        Nanos sum = 0, spin = 0;
        for (const CycleShare &s : r->cycles) {
            sum += s.ns;
            if (s.what == "spin")
                spin += s.ns;
        }
        EXPECT_EQ(sum, r->cpu_time_ns);
        EXPECT_NEAR(double(spin) / double(sum), r->spin_share, 1e-9);
    }
}

TEST(Simulator, AGlobalListFlushPullsOtherCpusStructIovaLines)
{
    // 4.4's flush_unmaps() reads every entry's struct iova: the entries
    // other CPUs queued cost a line each, the flusher's own cost none
    SimConfig c1 = small("linux-4.4", "global-list", 1);
    c1.sockets = 1;
    auto one = simulate(c1);
    auto four = simulate(small("linux-4.4", "global-list", 4));
    ASSERT_TRUE(one && four);
    EXPECT_EQ(cycle_ns(*one, "flush-iova-lines"), 0u);
    Nanos lines = cycle_ns(*four, "flush-iova-lines");
    EXPECT_GT(lines, 0u);
    // the other flush policies keep their entries by value: nothing pulled
    auto fq = simulate(small("linux-4.15", "flush-queue", 4));
    ASSERT_TRUE(fq);
    EXPECT_EQ(cycle_ns(*fq, "flush-iova-lines"), 0u);
}

TEST(Simulator, RetriesAreCountedPerMap)
{
    // every map after interface up fails its 32-bit attempt and retries
    SimConfig c;
    std::string err;
    ASSERT_TRUE(load_case("cx4-64k-32bit-exhausted", "linux-6.7-sac", c, &err)) << err;
    c.cpus = 32;
    ASSERT_TRUE(c.set("warmup", "100", &err));
    ASSERT_TRUE(c.set("ops-per-cpu", "20", &err));
    auto sac = simulate(c);
    c.dma = "forcedac";
    auto force = simulate(c);
    ASSERT_TRUE(sac && force);
    EXPECT_GT(sac->allocator_retries, 0.0);
    EXPECT_LE(sac->allocator_retries, 1.0);
    EXPECT_EQ(force->allocator_retries, 0.0);
}

// A short block run through linux-4.7, set up as a C caller does.
ViommuSimConfig c_block_run()
{
    ViommuSimConfig c{};
    c.workload = "block";
    c.allocator = "linux-4.7";
    c.flush = "strict";
    c.cpus = 2;
    c.ops = 100;
    return c;
}

TEST(SimCApi, RunsAndReportsJson)
{
    ViommuSimConfig c = c_block_run();
    long n = viommu_sim_run_json(&c, nullptr, 0);
    ASSERT_GT(n, 0);
    std::string buf(static_cast<size_t>(n) + 1, '\0');
    EXPECT_EQ(viommu_sim_run_json(&c, buf.data(), buf.size()), n);
    EXPECT_NE(buf.find("\"allocator\":\"linux-4.7\""), std::string::npos);
    c.allocator = "bogus";
    EXPECT_EQ(viommu_sim_run_json(&c, nullptr, 0), -1);
    EXPECT_EQ(viommu_sim_run_json(nullptr, nullptr, 0), -1);
}

// Every C call that hands back text copies it out the same way: the length
// of all of it whatever the buffer, in a short buffer as much as fits and a
// NUL, nothing written into a buffer of no bytes.
TEST(SimCApi, TextIsCopiedOutCutToTheBuffer)
{
    const ViommuSimConfig c = c_block_run();
    long n = viommu_sim_run_json(&c, nullptr, 0);
    ASSERT_GT(n, 8);
    std::string full(static_cast<size_t>(n) + 1, '\0');
    ASSERT_EQ(viommu_sim_run_json(&c, full.data(), full.size()), n);
    full.resize(static_cast<size_t>(n));
    char small[9];
    std::memset(small, 'x', sizeof small);
    EXPECT_EQ(viommu_sim_run_json(&c, small, sizeof small), n);
    EXPECT_EQ(std::string(small), full.substr(0, 8));

    // the same setup through the parameters' run: the same JSON
    ViommuSimParams *p = viommu_sim_params_new();
    ASSERT_NE(p, nullptr);
    char err[160];
    for (auto [k, v] :
         std::initializer_list<std::pair<const char *, const char *>>{{"workload", "block"},
                                                                      {"allocator", "linux-4.7"},
                                                                      {"flush", "strict"},
                                                                      {"cpus", "2"},
                                                                      {"ops-per-cpu", "50"},
                                                                      {"seed", "0"}})
        ASSERT_EQ(viommu_sim_params_set(p, k, v, err, sizeof err), 0) << k << ": " << err;
    EXPECT_EQ(viommu_sim_run_params_json(p, nullptr, 0), n);
    std::string again(static_cast<size_t>(n) + 1, '\0');
    EXPECT_EQ(viommu_sim_run_params_json(p, again.data(), again.size()), n);
    EXPECT_EQ(again.c_str(), full);
    std::memset(small, 'x', sizeof small);
    EXPECT_EQ(viommu_sim_run_params_json(p, small, sizeof small), n);
    EXPECT_EQ(std::string(small), full.substr(0, 8));

    // an error message: cut the same way, or not written at all
    char tiny[4] = {'x', 'x', 'x', 'x'};
    EXPECT_EQ(viommu_sim_params_set(p, "iodepth", "x", err, sizeof err), -1);
    const std::string msg = err;
    ASSERT_GT(msg.size(), 3u);
    EXPECT_EQ(viommu_sim_params_set(p, "iodepth", "x", tiny, sizeof tiny), -1);
    EXPECT_EQ(std::string(tiny), msg.substr(0, 3));
    std::memset(tiny, 'x', sizeof tiny);
    EXPECT_EQ(viommu_sim_params_set(p, "iodepth", "x", tiny, 0), -1);
    EXPECT_EQ(tiny[0], 'x');
    viommu_sim_params_free(p);
}

// Allocator time per map of 4 CPUs walking one linux-4.4 tree, strictly
// unmapped, on @sockets sockets with last-level caches of kind @llc.
double tree_ns_per_map(const char *sockets, const char *llc)
{
    auto r = simulate(from_args({{"workload", "block"},
                                 {"cpus", "4"},
                                 {"sockets", sockets},
                                 {"llc", llc},
                                 {"iodepth", "64"},
                                 {"cpu-ns-per-op", "1000"},
                                 {"iommu", "vtd"},
                                 {"allocator", "linux-4.4"},
                                 {"flush", "strict"},
                                 {"ops-per-cpu", "400"}}));
    EXPECT_TRUE(r);
    return r ? double(cycle_ns(*r, "allocator")) / double(r->maps) : 0.0;
}

// docs/cost-model.rst: a tree node another CPU wrote comes from that CPU's
// cache, across the socket at line_transfer_socket.  The same 4 CPUs
// walking one tree pay more per map when they sit on two sockets.
TEST(Simulator, TreeNodesWrittenOnTheOtherSocketCostMoreToWalk)
{
    EXPECT_GT(tree_ns_per_map("2", "non-inclusive"), 1.3 * tree_ns_per_map("1", "non-inclusive"));
}

// With an inclusive last-level cache only the first reader after a write
// takes a node from the writer; the others of its socket find it in the L3.
TEST(Simulator, AnInclusiveLastLevelCacheServesTreeNodesOtherCpusRead)
{
    EXPECT_LT(tree_ns_per_map("2", "inclusive"), 0.9 * tree_ns_per_map("2", "non-inclusive"));
}

}  // namespace
