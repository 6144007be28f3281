// SPDX-License-Identifier: GPL-2.0-or-later
// Virtual CPUs and spinlocks queueing in virtual time.
#include <gtest/gtest.h>

#include "machine.hpp"

using namespace viommu::sim;

namespace {

CostModel simple_costs()
{
    CostModel c;
    c.lock_local = 10;
    c.line_transfer = 100;
    c.handoff_lines = 2;
    return c;
}

TEST(Machine, RunsTheCpuWithTheSmallestClockLowestIdOnTies)
{
    Machine m(4, simple_costs());
    EXPECT_EQ(m.next_cpu(), 0u);
    m.advance(0, 50);
    m.advance(1, 20);
    m.advance(2, 20);
    m.advance(3, 70);
    EXPECT_EQ(m.next_cpu(), 1u);
    m.advance(1, 1);
    EXPECT_EQ(m.next_cpu(), 2u);
}

TEST(Machine, UncontendedLocalLockCostsOnlyTheLocalCost)
{
    Machine m(2, simple_costs());
    VirtualLock &l = m.make_lock("l");
    EXPECT_FALSE(m.acquire(l, 0, "a"));
    m.advance(0, 5);
    m.release(l, 0);
    EXPECT_EQ(m.now(0), 15u);
    EXPECT_FALSE(m.acquire(l, 0, "a"));
    m.release(l, 0);
    EXPECT_EQ(m.now(0), 25u);
    const SpinRecord &r = l.sites().at("a");
    EXPECT_EQ(r.acquisitions, 2u);
    EXPECT_EQ(r.contended, 0u);
    EXPECT_EQ(r.spin_ns, 20u);
    EXPECT_EQ(r.hold_ns, 5u);
}

TEST(Machine, WaiterSpinsUntilReleaseAndPaysTheHandoff)
{
    Machine m(2, simple_costs());
    VirtualLock &l = m.make_lock("l");
    m.acquire(l, 0, "a");  // cpu0: 0 -> 10
    m.advance(0, 1000);    // holds until 1010
    m.release(l, 0);
    m.advance(1, 500);
    EXPECT_TRUE(m.acquire(l, 1, "b"));
    // waits 510, then lock line (100) + local (10); one data line (100) inside
    EXPECT_EQ(m.now(1), 1010u + 10 + 100 + 100);
    m.release(l, 1);
    const SpinRecord &b = l.sites().at("b");
    EXPECT_EQ(b.contended, 1u);
    EXPECT_EQ(b.spin_ns, 510u + 110);
    EXPECT_EQ(b.hold_ns, 100u);
}

TEST(Machine, WaitersAreServedFifoInVirtualTime)
{
    Machine m(3, simple_costs());
    VirtualLock &l = m.make_lock("l");
    m.acquire(l, 0, "s");
    m.advance(0, 1000);
    m.release(l, 0);
    m.advance(1, 100);
    m.advance(2, 200);
    // the simulator runs cpu1 first (smaller clock): it gets the lock first
    ASSERT_EQ(m.next_cpu(), 1u);
    m.acquire(l, 1, "s");
    m.advance(1, 50);
    m.release(l, 1);
    Nanos cpu1_release = m.now(1);
    m.acquire(l, 2, "s");
    EXPECT_GE(m.now(2), cpu1_release);
    m.release(l, 2);
}

TEST(Machine, WindowCountsOnlyTimeAfterItsStart)
{
    Machine m(2, simple_costs());
    VirtualLock &l = m.make_lock("l");
    m.acquire(l, 0, "s");
    m.release(l, 0);
    m.advance(1, 300);
    m.align_clocks();
    EXPECT_EQ(m.now(0), m.now(1));
    m.start_window();
    EXPECT_EQ(l.sites().at("s").acquisitions, 0u);
    m.advance(0, 40);
    m.advance(1, 60);
    EXPECT_EQ(m.window_cpu_time(), 100u);
    EXPECT_DOUBLE_EQ(m.window_elapsed(), 50.0);
}

TEST(CostModel, StandardModelIsCompleteAndExported)
{
    CostModel c = CostModel::standard();
    for (Nanos v : {c.node_visit, c.tree_update, c.mag_op, c.lock_local, c.line_transfer,
                    c.pte_update, c.inv_submit, c.inv_hw_desc, c.inv_poll})
        EXPECT_GT(v, 0u);
    EXPECT_GE(c.handoff_lines, 1u);
    EXPECT_NE(c.json().find("\"inv_hw_desc\":" + std::to_string(c.inv_hw_desc)), std::string::npos);
}

}  // namespace

namespace {

// Sockets: CPUs numbered socket by socket; a lock passed across sockets
// costs the cross-socket transfer (hardware-costs.md section 1: 32 ns same
// socket, 114 ns across on a 2-socket Sandy Bridge-EP).
TEST(MachineSockets, CpusAreNumberedSocketBySocket)
{
    Machine m(16, CostModel::standard(), 2);
    EXPECT_EQ(m.socket_of(0), 0u);
    EXPECT_EQ(m.socket_of(7), 0u);
    EXPECT_EQ(m.socket_of(8), 1u);
    EXPECT_EQ(m.socket_of(15), 1u);
    Machine one(16, CostModel::standard());
    EXPECT_EQ(one.socket_of(15), 0u);
}

TEST(MachineSockets, AHandoffAcrossSocketsCostsTheCrossSocketTransfer)
{
    CostModel c = simple_costs();
    c.line_transfer_socket = 300;
    for (unsigned to : {1u, 2u}) {
        Machine m(4, c, 2);  // CPUs 0, 1 on socket 0; 2, 3 on socket 1
        VirtualLock &l = m.make_lock("l");
        m.acquire(l, 0, "a");
        m.release(l, 0);  // free at 10
        m.advance(to, 10);
        m.acquire(l, to, "b");
        m.release(l, to);
        Nanos xfer = to == 1 ? c.line_transfer : c.line_transfer_socket;
        // local cost + the lock line, then one data line inside
        EXPECT_EQ(m.now(to), 10 + c.lock_local + xfer + xfer) << to;
        EXPECT_EQ(l.sites().at("b").spin_ns, c.lock_local + xfer) << to;
    }
}

TEST(MachineSockets, ALineFromAnUnknownCpuCostsTheMeanOverTheOthers)
{
    CostModel c = simple_costs();
    c.line_transfer_socket = 300;
    Machine one(4, c, 1);
    EXPECT_EQ(one.transfer_from_any(0), c.line_transfer);
    Machine two(4, c, 2);
    // one other CPU on the same socket, two on the other
    EXPECT_EQ(two.transfer_from_any(0), (100u + 2 * 300u + 1) / 3);
}

}  // namespace
