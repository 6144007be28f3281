// SPDX-License-Identifier: GPL-2.0-or-later
// --workload trace: a recorded DMA stream (docs/trace-format.rst) replayed
// as a workload, on --cpus CPUs, through whatever allocator variant and
// flush policy the run names (docs/trace-format.rst, "Replay").
#pragma once

#include <memory>
#include <string>

#include "params.hpp"
#include "trace_format.hpp"
#include "workload.hpp"

namespace viommu::sim {

// nullptr (and @error naming the file and record) if the trace cannot be
// replayed.  Reads p.trace.
std::unique_ptr<Workload> create_trace_workload(const Params &p, std::string *error);
// The same from a trace already read (@name for the messages).
std::unique_ptr<Workload> create_trace_workload(const Params &p, const trace::Trace &t,
                                                const std::string &name, std::string *error);

}  // namespace viommu::sim
