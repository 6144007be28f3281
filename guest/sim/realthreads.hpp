// SPDX-License-Identifier: GPL-2.0-or-later
// Real-thread mode: the same workload steps run on OS threads (one per
// CPU, default: the machine's cores) through the same allocator variant
// and flush policy on a RealEnv, so the simulator's lock model can be
// checked against real spinning where the machine has the cores.
// Non-IOMMU work and the invalidation hardware are busy-waits of the cost
// model's durations; everything else is real.  Figures are wall-clock
// measurements: report them, never assert on them.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "simulator.hpp"

namespace viommu::sim {

struct RealLockProfile {
    std::string lock, site;
    uint64_t acquisitions = 0, contended = 0;
    uint64_t wait_ns = 0, hold_ns = 0;
};

struct RealResult {
    SimConfig config;
    unsigned threads = 0;
    std::string unit;
    uint64_t transactions = 0;
    uint64_t dropped = 0;  // ... of them one of whose maps failed
    uint64_t failed_maps = 0;
    uint64_t leaked = 0;  // mappings still live after the final drain
    double wall_ns = 0, baseline_wall_ns = 0;
    double throughput = 0, baseline_throughput = 0, relative = 0;
    double spin_share = 0;  // lock wait time / (threads * wall time)
    std::vector<RealLockProfile> profile;

    std::string json() const;
    std::string text() const;
};

std::optional<RealResult> run_real_threads(const SimConfig &cfg, std::string *error = nullptr);

// The CPUs online (at least 1), and the configuration a real-thread run of
// @cfg uses: its --cpus if given (a case file's counts as given), else that.
unsigned cpus_online();
SimConfig real_thread_config(const SimConfig &cfg);

// Why a real-thread run of @cfg cannot honour it ("" if it can): a
// parameter set away from its default that the threads do not model.
// The machine (--sockets, --spinlock, --llc) is this one: refused only if
// in @command_line, a case file's is replaced.
std::string real_threads_refusal(const SimConfig &cfg, const std::set<std::string> &command_line);

}  // namespace viommu::sim
