// SPDX-License-Identifier: GPL-2.0-or-later
// Invalidation-queue models (nvme-smmuv3-cmdq's owner/non-owner behaviour).
#include <gtest/gtest.h>

#include "invq.hpp"
#include "workload.hpp"

using namespace viommu::sim;

namespace {

struct QueueRun {
    InvStats stats;
    double per_cpu_rate;  // submissions per virtual second per CPU
};

// Every CPU alternates other work (uniform in [@work_ns / 2, 3 * @work_ns / 2),
// as I/O completion work varies) with one invalidation + sync.
QueueRun drive(std::string_view kind, unsigned cpus, Nanos work_ns, unsigned rounds)
{
    Machine m(cpus, CostModel::standard());
    auto q = InvQueue::create(kind, m);
    EXPECT_NE(q, nullptr);
    Rng rng(1);
    for (unsigned i = 0; i < rounds * cpus; i++) {
        unsigned cpu = m.next_cpu();
        m.advance(cpu, work_ns / 2 + rng.next() % work_ns);
        q->submit_and_wait(cpu, 1);
    }
    Nanos total = 0;
    for (unsigned c = 0; c < cpus; c++)
        total += m.now(c);
    double mean = double(total) / cpus;
    return {q->stats(), double(rounds) * 1e9 / mean};
}

TEST(InvQueue, KnowsItsKinds)
{
    Machine m(1, CostModel::standard());
    for (std::string_view k : InvQueue::kinds())
        EXPECT_NE(InvQueue::create(k, m), nullptr) << k;
    EXPECT_EQ(InvQueue::create("bogus", m), nullptr);
}

TEST(InvQueue, OneCpuWaitsForTheHardwareEveryTime)
{
    CostModel c = CostModel::standard();
    for (std::string_view k : InvQueue::kinds()) {
        Machine m(1, c);
        auto q = InvQueue::create(k, m);
        q->submit_and_wait(0, 1);
        // the invalidation and the wait/sync descriptor both pass the hardware
        EXPECT_GE(m.now(0), 2 * c.inv_hw_desc) << k;
        EXPECT_EQ(q->stats().owners, 1u) << k;
    }
}

TEST(InvQueue, ABusyEngineFetchesWhatWasPublishedMeanwhileInOneGo)
{
    // vtd: CPU 0 submits at t=0; CPUs 1 and 2 publish while the hardware
    // is still busy with CPU 0's list.  The engine fetches both with one
    // read when it is ready, so the last completion is one fetch after
    // the first list, not two.
    CostModel c = CostModel::standard();
    Machine m(3, c);
    auto q = InvQueue::create("vtd", m);
    q->submit_and_wait(0, 1);
    Nanos first = m.now(0);
    m.advance(1, 10);
    m.advance(2, 20);
    q->submit_and_wait(1, 1);
    q->submit_and_wait(2, 1);
    Nanos per_list = 2 * c.inv_hw_desc;
    // CPU 2's wait ends after one more fetch and two more lists
    EXPECT_LE(m.now(2), first + c.inv_hw_fetch + 2 * per_list + 2 * c.inv_poll);
    EXPECT_GT(m.now(2), first + 2 * per_list);
}

TEST(InvQueue, LockFreeOwnerShareFallsAsCpusAreAdded)
{
    // nvme-smmuv3-cmdq: about 1 owner in 3 submissions on mainline, 1 in 8 once
    // more CPUs take part (LPI spreading).
    QueueRun few = drive("smmu-lockfree", 4, 4000, 400);
    QueueRun many = drive("smmu-lockfree", 32, 4000, 100);
    // reproduced: the direction, owners gather more lists with more CPUs
    EXPECT_LT(many.stats.owner_share(), few.stats.owner_share() - 0.05);
    EXPECT_LT(many.stats.owner_share(), 0.75);
    // NOT reproduced: the size.  With the standard costs an owner gathers
    // for ~0.25 us against ~0.9 us of hardware time per list, so the share
    // levels off near 0.6; the published durations imply ~3 us of
    // owner-side work per list on that machine (docs/simulation.rst,
    // nvme-smmuv3-cmdq).  This fails if a model change reaches 1 in 8, so the
    // docs get updated with it.
    EXPECT_GT(many.stats.owner_share(), 1.0 / 8);
    // reproduced: polling for the sync takes longer as CPUs are added
    EXPECT_GT(many.stats.mean_poll_ns(false), 2 * few.stats.mean_poll_ns(false));
    EXPECT_GT(many.stats.mean_poll_ns(true), 2 * few.stats.mean_poll_ns(true));
}

TEST(InvQueue, SpinlockQueueIsSlowerThanTheLockFreeOne)
{
    for (unsigned cpus : {4u, 16u, 32u}) {
        QueueRun locked = drive("smmu-spinlock", cpus, 4000, 200);
        QueueRun lockfree = drive("smmu-lockfree", cpus, 4000, 200);
        EXPECT_LT(locked.per_cpu_rate, lockfree.per_cpu_rate) << cpus << " CPUs";
    }
}

TEST(InvQueue, SameInputSameResult)
{
    QueueRun a = drive("smmu-lockfree", 16, 3000, 100);
    QueueRun b = drive("smmu-lockfree", 16, 3000, 100);
    EXPECT_EQ(a.stats.json(), b.stats.json());
}

}  // namespace
