// SPDX-License-Identifier: GPL-2.0-or-later
// viommu-sim --record FILE: the trace (docs/trace-format.rst) of a
// modelled workload's run with an IOMMU, as a kernel's tracepoints would
// have written it: every map and unmap with its IOVA and the time spent
// inside it, every flush-queue timer flush, every end of a transaction.
// The clock is the simulated CPU's; where the simulator lines the CPUs'
// clocks up between its phases, the CPUs that were ahead idle (an idle
// event), so the gaps are the workload's own non-IOMMU work.
#pragma once

#include <string>
#include <vector>

#include "simulator.hpp"
#include "trace_format.hpp"
#include "workload.hpp"

namespace viommu::sim {

class TraceRecorder final : public RunObserver {
public:
    void begin(const WorkloadInfo &info) override;
    void op(Kind k, unsigned cpu, uint8_t dev, uint64_t iova, uint64_t bytes, Nanos start,
            Nanos end) override;
    void aligned(Nanos now) override;
    void window_start() override;

    // Writes the trace; false (and @error) if the file cannot be written.
    bool write(const std::string &path, std::string *error) const;
    const trace::Trace &trace() const { return trace_; }

private:
    WorkloadInfo info_;
    trace::Trace trace_;
    std::vector<Nanos> last_;  // per CPU: its clock at its last event
    std::vector<uint64_t> txns_;
};

}  // namespace viommu::sim
