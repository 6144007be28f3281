// SPDX-License-Identifier: GPL-2.0-or-later
// The one cost model of the contention simulator: what each unit of work
// costs on the virtual clock.  Values and their origin: docs/cost-model.rst.
// Every case, every variant and every workload uses CostModel::standard();
// nothing in guest/sim or tests/sim overrides a field for a particular case.
// A user may (viommu-sim --cost NAME=NS, --cost-from a --calibrate file):
// a what-if run on another machine, never a case file or the report.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace viommu::sim {

using Nanos = uint64_t;

struct CostModel {
    // allocator work, reported through Env::charge()
    Nanos node_visit = 0;   // one rbtree node examined
    Nanos tree_update = 0;  // one rbtree insert or erase, with struct iova alloc/free
    Nanos mag_op = 0;       // one magazine push/pop/swap
    // locks and shared cache lines
    Nanos lock_local = 0;            // acquire + release, lock line already in this CPU's cache
    Nanos line_transfer = 0;         // one cache line fetched from another core on the same socket
    Nanos line_transfer_socket = 0;  // ... from a core on another socket
    Nanos atomic = 0;            // one atomic read-modify-write, line already in this CPU's cache
    unsigned handoff_lines = 0;  // lines a critical section pulls from the previous holder
    // IOMMU mapping and invalidation
    Nanos pte_update = 0;    // IOMMU page-table write for one map or unmap
    Nanos inv_submit = 0;    // write descriptors + tail/prod register (uncached MMIO)
    Nanos inv_hw_fetch = 0;  // hardware: fetch after a tail/prod write, before the first descriptor
    Nanos inv_hw_desc = 0;   // hardware processing of one descriptor (invalidation or wait/sync)
    Nanos inv_poll = 0;      // one poll of a completion word, between polls
    // Arm SMMUv3: hardware time per command (TLBI or CMD_SYNC) in a gathered list
    Nanos smmu_hw_desc = 0;

    static CostModel standard();
    // The fields by name, in json() order.
    static std::span<const std::string_view> names();
    // Sets field @name (whole ns; handoff_lines a count from 1 to 16, the
    // others at most 100 us, inv_poll at least 1 ns); false and @error
    // naming it otherwise.
    bool set(std::string_view name, uint64_t value, std::string *error);
    // Field @name's value (0 for a name that is not one).
    uint64_t get(std::string_view name) const;
    // Cost of taking a lock whose line (and data) were last used by another CPU.
    Nanos remote_handoff() const { return line_transfer * handoff_lines; }
    // One line moved between two cores, on the same socket or not.
    Nanos transfer(bool same_socket) const
    {
        return same_socket ? line_transfer : line_transfer_socket;
    }
    std::string json() const;
};

}  // namespace viommu::sim
