// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel's spinlock kinds (guest/sim/spinlock.hpp): what a handoff of
// a contended lock costs with a queued spinlock and with a ticket lock.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "simulator.hpp"
#include "spinlock.hpp"

using namespace viommu::sim;

namespace {

TEST(Spinlock, KnowsItsKinds)
{
    EXPECT_EQ(parse_spinlock("queued"), Spinlock::queued);
    EXPECT_EQ(parse_spinlock("ticket"), Spinlock::ticket);
    EXPECT_FALSE(parse_spinlock("mcs"));
    EXPECT_EQ(spinlock_names().size(), 2u);
}

TEST(Spinlock, QueuedHandoffMovesTheLineOnceWhateverTheWaiters)
{
    for (unsigned k : {0u, 1u, 2u, 8u, 64u})
        EXPECT_EQ(handoff_half_transfers(Spinlock::queued, k), 2u) << k;
}

TEST(Spinlock, TicketHandoffGrowsWithTheSpinners)
{
    // one waiter: the same single transfer as a queued lock
    EXPECT_EQ(handoff_half_transfers(Spinlock::ticket, 0), 2u);
    EXPECT_EQ(handoff_half_transfers(Spinlock::ticket, 1), 2u);
    // k spinners: (k + 1) / 2 transfers on average
    EXPECT_EQ(handoff_half_transfers(Spinlock::ticket, 3), 4u);
    EXPECT_EQ(handoff_half_transfers(Spinlock::ticket, 15), 16u);
    for (unsigned k = 1; k < 64; k++)
        EXPECT_LT(handoff_half_transfers(Spinlock::ticket, k),
                  handoff_half_transfers(Spinlock::ticket, k + 1));
}

// map-bench through the 4.4 allocator (every map and unmap takes the
// domain's iova_rbtree_lock): the lock-line part of a contended handoff.
double handoff_per_contended(const char *spinlock, const char *cpus)
{
    SimConfig c;
    std::string err;
    for (auto [k, v] :
         std::initializer_list<std::pair<const char *, const char *>>{{"workload", "map-bench"},
                                                                      {"cpus", cpus},
                                                                      {"allocator", "linux-4.4"},
                                                                      {"flush", "flush-queue"},
                                                                      {"cpu-ns-per-op", "200"},
                                                                      {"ops-per-cpu", "200"},
                                                                      {"spinlock", spinlock}})
        EXPECT_TRUE(c.set(k, v, &err)) << err;
    auto r = simulate(c, CostModel::standard(), &err);
    EXPECT_TRUE(r) << err;
    if (!r)
        return 0;
    uint64_t contended = 0;
    Nanos handoff = 0;
    for (const auto &p : r->profile)
        if (p.lock == "iova_rbtree_lock") {
            contended += p.contended;
            handoff += p.handoff_ns;
        }
    EXPECT_GT(contended, 100u) << spinlock << " " << cpus;
    return contended ? double(handoff) / double(contended) : 0;
}

TEST(Spinlock, InASimulationTicketHandoffsCostMoreWithMoreCpusAndQueuedOnesDoNot)
{
    const double line = double(CostModel::standard().line_transfer);
    double q4 = handoff_per_contended("queued", "4");
    double q16 = handoff_per_contended("queued", "16");
    double t4 = handoff_per_contended("ticket", "4");
    double t16 = handoff_per_contended("ticket", "16");
    // queued: one line per handoff (a handoff from the CPU itself costs none)
    EXPECT_LE(q4, line);
    EXPECT_LE(q16, line);
    EXPECT_NEAR(q16, q4, 0.1 * line);
    // ticket: more spinners, more serialized re-reads before the next holder's
    EXPECT_GT(t4, q4);
    EXPECT_GT(t16, 2 * t4);
    EXPECT_GT(t16, 3 * line);
}

TEST(Spinlock, TicketLocksAreSlowerUnderContentionAndEqualWithoutIt)
{
    SimConfig c;
    std::string err;
    for (auto [k, v] :
         std::initializer_list<std::pair<const char *, const char *>>{{"workload", "map-bench"},
                                                                      {"cpus", "1"},
                                                                      {"allocator", "linux-4.4"},
                                                                      {"ops-per-cpu", "200"}})
        ASSERT_TRUE(c.set(k, v, &err)) << err;
    auto q1 = simulate(c);
    c.spinlock = "ticket";
    auto t1 = simulate(c);
    ASSERT_TRUE(q1 && t1);
    EXPECT_EQ(q1->throughput, t1->throughput);
    c.cpus = 16;
    auto t16 = simulate(c);
    c.spinlock = "queued";
    auto q16 = simulate(c);
    ASSERT_TRUE(q16 && t16);
    EXPECT_LT(t16->throughput, q16->throughput);
}

}  // namespace
