// SPDX-License-Identifier: GPL-2.0-or-later
// The virtual CPUs' coroutines (guest/sim/fiber.hpp).
#include <gtest/gtest.h>

#include <vector>

#include "fiber.hpp"

using viommu::sim::Fiber;

namespace {

struct Worker {
    Fiber fiber;
    std::vector<int> *log = nullptr;
    int id = 0;
    int rounds = 0;
};

void work(void *arg)
{
    auto *w = static_cast<Worker *>(arg);
    for (int i = 0; i < w->rounds; i++) {  // i lives on the fiber's stack
        w->log->push_back(w->id * 10 + i);
        w->fiber.yield();
    }
    w->fiber.finish();
}

}  // namespace

TEST(Fiber, SwitchesBetweenFibersKeepingEachOnesStack)
{
    std::vector<int> log;
    Worker a, b;
    a.log = b.log = &log;
    a.id = 1;
    b.id = 2;
    a.rounds = b.rounds = 3;
    a.fiber.start(&work, &a, 64 * 1024);
    b.fiber.start(&work, &b, 64 * 1024);
    for (int r = 0; r < 4; r++) {  // the fourth resume finishes each
        a.fiber.resume();
        b.fiber.resume();
    }
    EXPECT_EQ(log, (std::vector<int>{10, 20, 11, 21, 12, 22}));
    a.fiber.release();
    b.fiber.release();

    // A finished fiber starts again from its entry.
    a.rounds = 1;
    a.fiber.start(&work, &a, 64 * 1024);
    a.fiber.resume();
    EXPECT_EQ(log.back(), 10);
    a.fiber.resume();
    a.fiber.release();
    EXPECT_EQ(log.size(), 7u);
}
