// SPDX-License-Identifier: GPL-2.0-or-later
// Calibration on the machine at hand (viommu-sim --calibrate): the costs
// the cost model takes from published figures (docs/cost-model.rst),
// measured with real threads, with where and how they were measured.
// Wall-clock measurements: printed for comparison with the cited values,
// never used by CostModel::standard() and never asserted on.
#pragma once

#include <optional>
#include <string>

namespace viommu::sim {

struct Calibration {
    // where: the machine and its state when measured
    std::string cpu_model, kernel;
    unsigned cpus_online = 0;
    double load_average = 0;  // 1-minute, read before measuring
    bool pinned = false;      // the two threads ran on CPUs 0 and 1
    unsigned rounds = 0;      // samples; each figure is their median
    unsigned iterations = 0;  // operations per sample
    // what (ns)
    double atomic_ns = 0;  // one uncontended lock-prefixed RMW (fetch_add)
    // one-way hand-off of one line between two threads by compare-exchange
    // ping-pong (the method of nviennot/core-to-core-latency); nullopt with
    // fewer than two CPUs
    std::optional<double> line_transfer_ns;
    // one acquisition of a test-and-set spinlock passed between two
    // threads that both want it all the time, release to next acquisition
    std::optional<double> lock_handoff_ns;

    std::string json() const;
};

// @iterations operations per sample, @rounds samples per figure.
Calibration calibrate(unsigned iterations = 200000, unsigned rounds = 7);

}  // namespace viommu::sim
