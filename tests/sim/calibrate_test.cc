// SPDX-License-Identifier: GPL-2.0-or-later
// viommu-sim --calibrate: what it measures and the provenance it records.
// The figures are wall-clock measurements of this machine: the test checks
// that they were taken and recorded, never their size.
#include <gtest/gtest.h>

#include "calibrate.hpp"

using namespace viommu::sim;

TEST(Calibrate, RecordsEveryFigureWithItsProvenance)
{
    Calibration c = calibrate(1000, 3);
    EXPECT_EQ(c.rounds, 3u);
    EXPECT_EQ(c.iterations, 1000u);
    EXPECT_GE(c.cpus_online, 1u);
    EXPECT_FALSE(c.cpu_model.empty());
    EXPECT_GT(c.atomic_ns, 0.0);
    EXPECT_GT(c.lock_local_ns, 0.0);
    EXPECT_EQ(c.line_transfer_ns.has_value(), c.cpus_online >= 2);
    EXPECT_EQ(c.lock_handoff_ns.has_value(), c.cpus_online >= 2);
    // bursts of 2, 4, ... threads, as many sizes as the CPUs allow
    EXPECT_EQ(c.bursts_per_size, 10u);
    unsigned n = 2;
    for (const Calibration::Burst &b : c.bursts) {
        EXPECT_EQ(b.threads, n);
        EXPECT_GT(b.cmpxchg_ns, 0.0);
        EXPECT_GT(b.fetch_add_ns, 0.0);
        EXPECT_GE(b.cmpxchg_attempts, 1.0);  // every update succeeds once
        n *= 2;
    }
    EXPECT_EQ(c.bursts.empty(), c.cpus_online < 2);
    EXPECT_LE(n / 2, std::max(c.cpus_online, 1u));
    std::string j = c.json();
    for (const char *k :
         {"\"provenance\"", "\"command\":\"viommu-sim --calibrate\"", "\"cpu_model\"", "\"kernel\"",
          "\"cpus_online\"", "\"load_average_1min\"", "\"pinned_to_cpus_0_1\"", "\"rounds\":3",
          "\"iterations\":1000", "\"atomic_ns\"", "\"lock_local_ns\"", "\"line_transfer_ns\"",
          "\"lock_handoff_ns\"", "\"bursts_per_size\":10", "\"bursts\":["})
        EXPECT_NE(j.find(k), std::string::npos) << k;
    if (!c.bursts.empty()) {
        EXPECT_NE(j.find("{\"threads\":2,\"cmpxchg_ns\":"), std::string::npos);
    }
}
