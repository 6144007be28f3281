// SPDX-License-Identifier: GPL-2.0-or-later
// Workload models: the per-CPU stream of DMA map/unmap steps and non-IOMMU
// work of a setup described by Params (docs/workloads.rst).  The setups of
// the reported cases are case files (cases/*.json), not code.
//
// A workload keeps per-CPU state only (ring positions, a per-CPU random
// generator), so the steps of one CPU depend only on that CPU's calls and
// the seed, never on how CPUs interleave.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <viommu/sim.h>

#include "cost.hpp"
#include "params.hpp"

namespace viommu::sim {

using Step = ViommuSimStep;

// One (device, domain) pair: what a Step's device index names.
struct DeviceSpec {
    std::string name;
    uint64_t dma_mask;
    bool pci;
    unsigned domain = 0;    // IOMMU domain (own IOVA space) the mappings go to
    unsigned physical = 0;  // the device itself (its service time is shared)
};

struct WorkloadInfo {
    std::string name;
    std::string unit;   // what one transaction is: "transactions", "packets", ...
    unsigned cpus = 1;  // simulated CPUs
    unsigned granule_shift = 12;
    unsigned slots_per_cpu = 0;
    unsigned largest_ring = 0;       // slots of the largest per-CPU ring
    unsigned warmup_per_cpu = 0;     // transactions run before the measured window
    unsigned measure_per_cpu = 400;  // default measured transactions per CPU
    Nanos work_ns = 0;               // non-IOMMU CPU time per transaction
    Nanos once_ns = 0;               // ... and once per CPU at the window's start
    Nanos device_ns = 0;             // a device's service time per mapping (0: none)
    unsigned physical_devices = 1;
    std::vector<DeviceSpec> devices;
    // Non-empty (one count per CPU): each CPU runs exactly its own count in
    // the measured window, instead of all CPUs sharing measure_per_cpu * cpus
    // (a replayed trace: one pass of each CPU's recorded stream).
    std::vector<unsigned> measure_each;
};

class Workload {
public:
    // nullptr (and @error naming the parameter) if @p is inconsistent.
    static std::unique_ptr<Workload> create(const Params &p, std::string *error = nullptr);
    // The workload kind @name with every other parameter at its default.
    static std::unique_ptr<Workload> create(std::string_view name, unsigned ncpus, uint64_t seed);
    static std::span<const std::string_view> names();

    virtual ~Workload() = default;
    const WorkloadInfo &info() const { return info_; }
    // Steps before the measured run (rings filled at interface up).
    virtual void setup(unsigned cpu, std::vector<Step> &out) = 0;
    // Steps of @cpu's next transaction (appended to @out).
    virtual void next(unsigned cpu, std::vector<Step> &out) = 0;

protected:
    explicit Workload(WorkloadInfo info) : info_(std::move(info)) {}
    WorkloadInfo info_;
};

// splitmix64: small, fast, and the same on every machine.
class Rng {
public:
    explicit Rng(uint64_t seed) : s_(seed) {}
    uint64_t next()
    {
        uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // true with probability @percent / 100
    bool chance(unsigned percent) { return next() % 100 < percent; }

private:
    uint64_t s_;
};

inline Step work_step(Nanos ns)
{
    return {VIOMMU_SIM_WORK, 0, 0, ns};
}
inline Step map_step(uint32_t slot, uint64_t bytes, uint8_t dev = 0)
{
    return {VIOMMU_SIM_MAP, dev, slot, bytes};
}
inline Step unmap_step(uint32_t slot)
{
    return {VIOMMU_SIM_UNMAP, 0, slot, 0};
}
inline Step map_post_step(uint32_t cpu, uint64_t bytes, uint8_t dev = 0)
{
    return {VIOMMU_SIM_MAP_POST, dev, cpu, bytes};
}
inline Step unmap_mailbox_step(uint64_t max = 0)
{
    return {VIOMMU_SIM_UNMAP_MAILBOX, 0, 0, max};
}
inline Step unmap_post_step(uint32_t slot, uint32_t cpu)
{
    return {VIOMMU_SIM_UNMAP_POST, 0, slot, cpu};
}

}  // namespace viommu::sim
