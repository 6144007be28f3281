// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers shared by the simulator's tests.
#pragma once

#include <string_view>

#include "simulator.hpp"

namespace viommu::sim::test {

// The CPU nanoseconds of run `r` spent on `what` (a category of its cycle
// profile: "work", "idle", "spin", ...), over every CPU.
inline Nanos cycle_ns(const SimResult &r, std::string_view what)
{
    Nanos ns = 0;
    for (const CycleShare &s : r.cycles)
        if (s.what == what)
            ns += s.ns;
    return ns;
}

}  // namespace viommu::sim::test
