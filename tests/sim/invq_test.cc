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
QueueRun drive(std::string_view kind, unsigned cpus, Nanos work_ns, unsigned rounds,
               unsigned cmdq_entries = 0)
{
    Machine m(cpus, CostModel::standard());
    auto q = InvQueue::create(kind, m, cmdq_entries);
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

// Every CPU submits at the same instant: a burst of reservations on the
// shared {prod | OWNED, cons} word.
InvStats burst(std::string_view kind, unsigned cpus)
{
    Machine m(cpus, CostModel::standard());
    auto q = InvQueue::create(kind, m);
    for (unsigned c = 0; c < cpus; c++)
        q->submit_and_wait(c, 1);
    return q->stats();
}

TEST(InvQueue, CmpxchgRetriesGrowWithTheCpusContendingForTheWord)
{
    // Each reservation that lands between a CPU's read of the word and its
    // cmpxchg makes the cmpxchg fail once.  In a burst of N the first
    // CPU's atomic lands before the others' reads are served (they fetch
    // the line from it), so the k-th CPU (k >= 2) retries k - 2 times:
    // (N - 1) (N - 2) / 2 in all.
    EXPECT_EQ(burst("smmu-lockfree", 1).cmpxchg_retries, 0u);
    for (unsigned n : {2u, 4u, 8u, 16u}) {
        InvStats s = burst("smmu-lockfree", n);
        EXPECT_EQ(s.reservations, n);
        EXPECT_EQ(s.cmpxchg_retries, uint64_t{n - 1} * (n - 2) / 2) << n;
    }
    // and so does the time to reserve, per reservation
    EXPECT_GT(burst("smmu-lockfree", 16).reserve_ns / 16,
              2 * burst("smmu-lockfree", 4).reserve_ns / 4);
}

TEST(InvQueue, FetchAddReservesWithOneAtomicAndNoRetry)
{
    InvStats cas = burst("smmu-lockfree", 16);
    InvStats fa = burst("smmu-fetch-add", 16);
    EXPECT_EQ(fa.cmpxchg_retries, 0u);
    EXPECT_EQ(fa.reservations, 16u);
    EXPECT_LT(fa.reserve_ns, cas.reserve_ns);
}

TEST(InvQueue, ReservationsWhileTheOwnerGathersAreNonOwners)
{
    // A burst: the first CPU finds OWNED clear and owns the batch; a
    // reservation that reaches the word's line before the owner's
    // fetch_andnot is gathered into its list and publishes nothing itself.
    for (std::string_view k : {"smmu-lockfree", "smmu-fetch-add"}) {
        InvStats s = burst(k, 8);
        ASSERT_EQ(s.per_cpu.size(), 8u);
        EXPECT_EQ(s.per_cpu[0].owners, 1u) << k;
        EXPECT_EQ(s.per_cpu[1].nonowners, 1u) << k;
        EXPECT_LT(s.owners, 8u) << k;
        EXPECT_EQ(s.owners, s.batches) << k;
        uint64_t owners = 0, nonowners = 0;
        for (const auto &pc : s.per_cpu) {
            owners += pc.owners;
            nonowners += pc.nonowners;
        }
        EXPECT_EQ(owners, s.owners) << k;
        EXPECT_EQ(owners + nonowners, 8u) << k;
        // the gathered list follows the owner's in the queue
        EXPECT_GT(s.per_cpu[1].nonowner_poll_ns, s.per_cpu[0].owner_poll_ns) << k;
    }
    // a single atomic holds the line for less time than a retrying cmpxchg
    // loop, so more of the burst reaches it before the owner's clear
    EXPECT_LE(burst("smmu-fetch-add", 8).owners, burst("smmu-lockfree", 8).owners);
}

// A Yielder that, when CPU 0 reaches its first sync point, runs one whole
// submission of CPU 1 (whose clock is smaller), as the simulator's
// scheduler does when CPU 0 suspends there.
class RunOtherFirst final : public Yielder {
public:
    explicit RunOtherFirst(InvQueue *&q) : q_(q) {}
    void before_attempt(unsigned cpu) override
    {
        if (cpu == 0 && !ran_) {
            ran_ = true;
            q_->submit_and_wait(1, 1);
        }
    }
    void wait_release(VirtualLock &, unsigned) override {}
    void released(VirtualLock &) override {}

private:
    InvQueue *&q_;
    bool ran_ = false;
};

TEST(InvQueue, ASubmissionsTimeCountsForItsOwnRole)
{
    // CPU 0 enters submit_and_wait at 10 ns and suspends at its sync
    // point; CPU 1 (clock 0) submits meanwhile and owns its batch; CPU 0's
    // reservation then lands in CPU 1's gather window: a non-owner.  Its
    // time in the call is a non-owner's, though an owner was counted
    // while it was suspended.
    for (std::string_view k : {"smmu-lockfree", "smmu-fetch-add"}) {
        Machine m(2, CostModel::standard());
        auto q = InvQueue::create(k, m);
        InvQueue *qp = q.get();
        RunOtherFirst y(qp);
        m.set_yielder(&y);
        m.advance(0, 10);
        q->submit_and_wait(0, 1);
        m.set_yielder(nullptr);
        const InvStats &s = q->stats();
        ASSERT_EQ(s.submissions, 2u) << k;
        ASSERT_EQ(s.per_cpu[1].owners, 1u) << k;
        ASSERT_EQ(s.per_cpu[0].nonowners, 1u) << k;
        // each role's mean time in the call includes its polling
        EXPECT_GE(s.mean_issue_ns(true), s.mean_poll_ns(true)) << k;
        EXPECT_GE(s.mean_issue_ns(false), s.mean_poll_ns(false)) << k;
        // the owner's time is CPU 1's call alone
        EXPECT_EQ(s.owner_busy_ns, m.now(1)) << k;
        EXPECT_EQ(s.busy_ns - s.owner_busy_ns, m.now(0) - 10) << k;
    }
}

TEST(InvQueue, LockFreePollingGrowsAndOwnersGatherMoreWithCpus)
{
    QueueRun few = drive("smmu-lockfree", 4, 4000, 400);
    QueueRun many = drive("smmu-lockfree", 32, 4000, 100);
    // reproduced: polling for the sync takes longer as CPUs are added,
    // and an owner gathers more of them (the published direction: 1 in 3,
    // then 1 in 8 with many more CPUs)
    EXPECT_GT(many.stats.mean_poll_ns(true), 2 * few.stats.mean_poll_ns(true));
    EXPECT_LT(many.stats.owner_share(), 0.8 * few.stats.owner_share());
    // NOT reproduced (docs/simulation.rst, nvme-smmuv3-cmdq): the size.
    // An owner gathers from its reservation to its fetch_andnot, which is
    // short against the spacing of arrivals, so owners stay more common
    // than published.  This fails when a model change makes CPUs gather
    // that much, so the docs get updated with it.
    EXPECT_GT(few.stats.owner_share(), 1.0 / 3 * 1.25);
    EXPECT_GT(many.stats.owner_share(), 1.0 / 8 * 1.25);
}

TEST(InvQueue, AQueueFarLargerThanTheListsInFlightNeverWaitsForSpace)
{
    // the driver's maximum (65536 commands): 32 CPUs x 100 lists of 2
    QueueRun r = drive("smmu-lockfree", 32, 4000, 100);
    EXPECT_EQ(r.stats.full_waits, 0u);
    EXPECT_EQ(r.stats.full_wait_ns, 0u);
}

TEST(InvQueue, ASmallQueueWaitsForTheLastSharedHolderToPublishCons)
{
    // 16 commands, 8 lists of TLBI + CMD_SYNC, against 32 CPUs: the cons
    // cached in the shared word only moves when the last holder of the
    // shared lock leaves, or under the exclusive lock when nobody holds it.
    QueueRun r = drive("smmu-lockfree", 32, 4000, 50, 16);
    EXPECT_GT(r.stats.full_waits, r.stats.submissions / 16);
    EXPECT_GT(r.stats.full_wait_ns, 0u);
    EXPECT_LE(r.stats.cons_refreshes, r.stats.full_waits);
    // the CPUs released together reserve together: one owner gathers them
    QueueRun big = drive("smmu-lockfree", 32, 4000, 50);
    EXPECT_LT(r.stats.owner_share(), 0.6);
    EXPECT_LT(r.stats.owner_share(), big.stats.owner_share());
}

TEST(InvQueue, OwnerShareFallsAsTheQueueShrinks)
{
    double prev = 1.0;
    for (unsigned entries : {65536u, 256u, 64u, 16u}) {
        double share = drive("smmu-lockfree", 32, 4000, 50, entries).stats.owner_share();
        EXPECT_LE(share, prev) << entries;
        prev = share;
    }
    EXPECT_LT(prev, 0.6);
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
