// SPDX-License-Identifier: GPL-2.0-or-later
// The VT-d queue as qi_submit_sync() drives it (guest/sim/qi_sync.hpp):
// polling keeps taking q_lock, with interrupts disabled for the whole call.
#include <gtest/gtest.h>

#include <string>

#include "invq.hpp"
#include "simulator.hpp"

using namespace viommu::sim;

namespace {

TEST(QiSync, ALoneSubmissionPollsUntilTheWaitDescriptorIsWritten)
{
    CostModel c = CostModel::standard();
    Machine m(1, c);
    auto q = InvQueue::create("vtd", m);
    q->submit_and_wait(0, 1);
    // tail write at lock_local + inv_submit; the hardware fetches and runs
    // the invalidation and the wait descriptor
    Nanos done = c.lock_local + c.inv_submit + c.inv_hw_fetch + 2 * c.inv_hw_desc;
    Nanos iteration = c.lock_local + c.inv_poll;  // unlock, relax, relock; status + fault reads
    EXPECT_GE(m.now(0), done + c.inv_poll);
    EXPECT_LE(m.now(0), done + iteration + c.inv_poll);
    // one CPU never pulls the lock's line from anyone
    EXPECT_EQ(q->stats().poll_handoffs, 0u);
    // interrupts are off from the lock to the return: all of it
    EXPECT_EQ(q->stats().busy_ns, m.now(0));
    EXPECT_EQ(q->stats().owner_poll_ns, m.now(0) - c.lock_local - c.inv_submit);
}

// map-bench in strict mode on VT-d: every unmap is one qi_submit_sync().
SimResult strict_bench(unsigned threads)
{
    SimConfig cfg;
    std::string err;
    for (auto [k, v] : {std::pair<const char *, std::string>{"workload", "map-bench"},
                        {"cpus", std::to_string(threads)},
                        {"iommu", "vtd"},
                        {"flush", "strict"},
                        {"allocator", "linux-6.7"},
                        {"cpu-ns-per-op", "500"},
                        {"ops-per-cpu", "300"}})
        EXPECT_TRUE(cfg.set(k, v, &err)) << err;
    auto r = simulate(cfg, CostModel::standard(), &err);
    EXPECT_TRUE(r) << err;
    return r ? *r : SimResult{};
}

TEST(QiSync, CpusPollingTogetherPassTheQueueLockBackAndForth)
{
    SimResult one = strict_bench(1), many = strict_bench(8);
    ASSERT_GT(one.inv.submissions, 0u);
    ASSERT_GT(many.inv.submissions, 0u);
    EXPECT_EQ(one.inv.poll_handoffs, 0u);
    // with 8 CPUs waiting on one queue, polls keep finding the line with
    // another CPU: a submission or another CPU's poll took q_lock
    double per_submission = double(many.inv.poll_handoffs) / double(many.inv.submissions);
    EXPECT_GT(per_submission, 1.0);
    // and every submission waits longer than alone
    EXPECT_GT(many.inv.mean_poll_ns(true), one.inv.mean_poll_ns(true));
}

}  // namespace
