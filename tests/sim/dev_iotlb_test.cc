// SPDX-License-Identifier: GPL-2.0-or-later
// The 2008..4.6 intel-iommu device-IOTLB walks of flush_unmaps()
// (guest/sim/dev_iotlb.hpp).
#include <gtest/gtest.h>

#include "dev_iotlb.hpp"
#include "dma_domains.hpp"
#include "invq.hpp"
#include "sim_env.hpp"

using namespace viommu::sim;

namespace {

const SpinRecord &site(const VirtualLock &l)
{
    static const SpinRecord none;
    auto it = l.sites().find("flush_dev_iotlb");
    return it == l.sites().end() ? none : it->second;
}

TEST(DevIotlbWalk, EveryEntryTakesTheGlobalLockOnce)
{
    CostModel c = CostModel::standard();
    Machine m(2, c);
    DevIotlbWalk w(m);
    w.flush_entries(0, 250, 1);
    EXPECT_EQ(w.walks(), 250u);
    EXPECT_EQ(site(w.lock()).acquisitions, 250u);
    EXPECT_EQ(site(w.lock()).contended, 0u);
    // 250 local acquire + release, and the list of one device walked once
    EXPECT_EQ(m.now(0), 250 * c.lock_local + 2 * c.node_visit);
    EXPECT_EQ(w.walk_ns(), 2 * c.node_visit);
    EXPECT_EQ(m.now(1), 0u);
}

TEST(DevIotlbWalk, NoEntriesCostNothing)
{
    Machine m(1, CostModel::standard());
    DevIotlbWalk w(m);
    w.flush_entries(0, 0, 3);
    EXPECT_EQ(m.now(0), 0u);
    EXPECT_EQ(w.walks(), 0u);
}

TEST(DevIotlbWalk, TheWalkGrowsWithTheDomainsDevices)
{
    CostModel c = CostModel::standard();
    Machine one(1, c), four(1, c);
    DevIotlbWalk w1(one), w4(four);
    w1.flush_entries(0, 10, 1);
    w4.flush_entries(0, 10, 4);
    EXPECT_EQ(four.now(0) - one.now(0), 3 * 2 * c.node_visit);
}

TEST(DevIotlbWalk, AFlushAfterAnotherCpusFlushPullsTheLockFromIt)
{
    CostModel c = CostModel::standard();
    Machine m(2, c);  // one socket
    DevIotlbWalk w(m);
    w.flush_entries(0, 5, 1);
    Nanos t0 = m.now(0);
    m.advance_to(1, t0);
    w.flush_entries(1, 5, 1);
    // the first acquisition moves the lock line and the list from CPU 0,
    // the next four find them local
    EXPECT_EQ(m.now(1) - t0,
              5 * c.lock_local + c.handoff_lines * c.line_transfer + 2 * c.node_visit);
}

TEST(DevIotlbWalk, ReadingAnotherCpusStructIovaPullsItsLine)
{
    CostModel c = CostModel::standard();
    Machine m(4, c, 2);  // CPUs 0-1 on socket 0, 2-3 on socket 1
    DevIotlbWalk w(m);
    // CPU 0 flushes entries unmapped by itself, its socket neighbour and
    // a CPU on the other socket: its own entry's line is local
    const unsigned by[] = {0, 1, 2, 0, 3};
    w.read_iovas(0, by);
    EXPECT_EQ(w.iova_lines(), 3u);
    EXPECT_EQ(m.now(0), c.line_transfer + 2 * c.line_transfer_socket);
    EXPECT_EQ(w.iova_line_ns(), m.now(0));
    EXPECT_EQ(m.now(1) + m.now(2) + m.now(3), 0u);
}

TEST(DevIotlbWalk, OwnEntriesCostNoTransfer)
{
    Machine m(2, CostModel::standard());
    DevIotlbWalk w(m);
    const unsigned by[] = {1, 1, 1};
    w.read_iovas(1, by);
    EXPECT_EQ(w.iova_lines(), 0u);
    EXPECT_EQ(m.now(1), 0u);
}

TEST(DevIotlbWalk, AFlushReadsTheEntriesQueuedBeforeTheUnmapThatTriggeredIt)
{
    // global-list: CPU 1 queues three entries; CPU 0's unmap finds the list
    // full and flushes it before queueing its own entry, which stays for
    // the next flush
    CostModel c = CostModel::standard();
    Machine m(2, c);
    SimEnv env(m);
    auto q = InvQueue::create("vtd", m);
    ASSERT_TRUE(q);
    DevIotlbWalk w(m);
    SimFlusher f(env, *q, &w, 1);
    env.set_cpu(1);
    for (int i = 0; i < 3; i++)
        f.queued(1);
    env.set_cpu(0);
    f.queued(0);
    f.flush_all(3);
    EXPECT_EQ(w.iova_lines(), 3u);
    EXPECT_EQ(w.iova_line_ns(), 3 * c.line_transfer);
    EXPECT_EQ(w.walks(), 3u);
    f.flush_all(1);  // CPU 0's own entry: local
    EXPECT_EQ(w.iova_lines(), 3u);
    EXPECT_EQ(w.walks(), 4u);
}

TEST(DevIotlbWalk, ResetClearsTheCounts)
{
    Machine m(2, CostModel::standard());
    DevIotlbWalk w(m);
    w.flush_entries(0, 3, 1);
    const unsigned by[] = {1};
    w.read_iovas(0, by);
    w.reset_stats();
    EXPECT_EQ(w.walks(), 0u);
    EXPECT_EQ(w.walk_ns(), 0u);
    EXPECT_EQ(w.iova_lines(), 0u);
    EXPECT_EQ(w.iova_line_ns(), 0u);
}

}  // namespace
