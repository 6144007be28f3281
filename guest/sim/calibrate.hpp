// SPDX-License-Identifier: GPL-2.0-or-later
// Calibration on the machine at hand (viommu-sim --calibrate): the costs
// the cost model takes from published figures (docs/cost-model.rst),
// measured with real threads, with where and how they were measured.
// Wall-clock measurements: printed for comparison with the cited values,
// never used by CostModel::standard() and never asserted on.
#pragma once

#include <optional>
#include <string>
#include <vector>

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
    // one uncontended acquire (compare-exchange) and release (a
    // store-release) of a spinlock whose line this CPU holds, between a
    // save and a restore of the flags on x86-64 (pushf, popf: an irqsave
    // lock's, less the cli user space may not run)
    double lock_local_ns = 0;
    // one-way hand-off of one line between two threads by compare-exchange
    // ping-pong (the method of nviennot/core-to-core-latency); nullopt with
    // fewer than two CPUs
    std::optional<double> line_transfer_ns;
    // one acquisition of a test-and-set spinlock passed between two
    // threads that both want it all the time, release to next acquisition
    std::optional<double> lock_handoff_ns;
    // A burst: n threads (pinned to CPUs 0..n-1), released together, each
    // update one line once, for n = 2, 4, 8, ... up to the CPUs online (at
    // most 64).  Per burst, the time from the first thread's start to the
    // last one's end, over n: what the line takes per update when n CPUs
    // want it at once (a line that serves its requesters one by one, each
    // a transfer, keeps it flat in n); and for a compare-exchange loop
    // retried with the value its failed attempt returned (as
    // arm_smmu_cmdq_issue_cmdlist() reserves its slots), the attempts per
    // update.  How both grow with n is what no published figure gives
    // (docs/cost-model.rst).  Times: medians over the bursts; attempts:
    // their mean.
    struct Burst {
        unsigned threads = 0;
        double cmpxchg_ns = 0;        // burst span / n, compare-exchange loop
        double cmpxchg_attempts = 0;  // attempts per update (1: none failed)
        double fetch_add_ns = 0;      // burst span / n, one fetch_add each
    };
    std::vector<Burst> bursts;
    unsigned bursts_per_size = 0;

    std::string json() const;
};

// @iterations operations per sample, @rounds samples per figure; each
// burst size runs @iterations / 100 bursts of each kind.
Calibration calibrate(unsigned iterations = 200000, unsigned rounds = 7);

}  // namespace viommu::sim
