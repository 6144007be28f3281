// SPDX-License-Identifier: GPL-2.0-or-later
// Real-thread mode: behaviour only.  It measures wall time: no test asserts a
// speed, only a lower bound the setup itself forces (a busy-wait, a client
// round trip), which holds however loaded the machine is.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "realthreads.hpp"

using namespace viommu::sim;

namespace {

TEST(RealThreads, RunsTheWorkloadAndReturnsEveryMapping)
{
    for (std::string w : {"memcached-16cpu-xl710", "nginx-rbtree-regression"}) {
        SimConfig c;
        std::string err;
        ASSERT_TRUE(load_case(w, "", c, &err)) << err;
        c.allocator = "linux-4.7";
        c.flush = "percpu-defer";
        c.cpus = 2;
        c.ops_per_cpu = 150;
        auto r = run_real_threads(c, &err);
        ASSERT_TRUE(r) << err;
        EXPECT_EQ(r->threads, 2u);
        EXPECT_EQ(r->transactions, 300u) << "every claimed transaction ran, once";
        EXPECT_EQ(r->failed_maps, 0u);
        EXPECT_EQ(r->leaked, 0u);
        ASSERT_GT(r->wall_ns, 0.0);
        EXPECT_DOUBLE_EQ(r->throughput, double(r->transactions) * 1e9 / r->wall_ns);
        bool saw_alloc_lock = false;
        for (const auto &p : r->profile)
            saw_alloc_lock |= p.acquisitions > 0;
        EXPECT_TRUE(saw_alloc_lock);
    }
}

// Two threads, 20 transactions each, no warm-up, linux-6.7, and @args:
// the run's window and its baseline's last at least @min_ns (a lower bound
// the setup guarantees, whatever the machine's load).
void expect_windows_at_least(std::initializer_list<std::pair<const char *, const char *>> args,
                             double min_ns)
{
    SimConfig c;
    std::string err;
    for (auto [k, v] : args)
        ASSERT_TRUE(c.set(k, v, &err)) << err;
    c.cpus = 2;
    c.ops_per_cpu = 20;
    c.warmup = 0;
    c.allocator = "linux-6.7";
    auto r = run_real_threads(c, &err);
    ASSERT_TRUE(r) << err;
    EXPECT_EQ(r->transactions, 40u);
    EXPECT_GE(r->wall_ns, min_ns);
    EXPECT_GE(r->baseline_wall_ns, min_ns);
}

// --cpu-ns-once is a busy-wait of that long on every thread inside the
// window.
TEST(RealThreads, OnceWorkIsSpentInsideTheWindow)
{
    expect_windows_at_least({{"workload", "block"}, {"iodepth", "4"}, {"cpu-ns-once", "20ms"}},
                            20e6);
}

// --clients-per-cpu: one request per thread, the next 1 ms after each
// reply: a thread's k-th transaction starts (k - 1) ms after its first at
// the earliest, and one of the two threads runs at least 20 of the 40.
TEST(RealThreads, AClosedLoopWaitsForItsClients)
{
    expect_windows_at_least(
        {{"workload", "memcached"}, {"clients-per-cpu", "1"}, {"client-rtt", "1ms"}}, 19e6);
}

TEST(RealThreads, RejectsBadConfigurations)
{
    SimConfig c;
    c.allocator = "none";
    EXPECT_FALSE(run_real_threads(c));
    c.allocator = "linux-4.7";
    c.workload = "bogus";
    EXPECT_FALSE(run_real_threads(c));
}

}  // namespace
