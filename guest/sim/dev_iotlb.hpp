// SPDX-License-Identifier: GPL-2.0-or-later
// Device-IOTLB flush walks of the 2008..4.6 intel-iommu deferred flush.
//
// flush_unmaps() (intel-iommu before 4.7, the ``global-list`` flush policy)
// issues one global IOTLB invalidation and then, for every deferred entry,
// calls iommu_flush_dev_iotlb(): it takes the kernel-global
// device_domain_lock (spin_lock_irqsave) and walks the entry's domain's
// device list looking for devices with ATS enabled, whether or not any
// device of the domain has ATS.  All of it runs inside flush_unmaps(), so
// under async_umap_flush_lock: the walks lengthen that lock's hold.
//
// Per entry: one acquire + release of device_domain_lock (its line and the
// list pulled from another CPU on the first entry after another CPU
// flushed: Machine::acquire's handoff), and per device on the list one
// dependent load of the device_domain_info node and one of its pci_dev
// (CostModel::node_visit each) on the first entry of a flush; the later
// entries of the same flush find those lines in this CPU's cache.
// docs/cost-model.rst, "How the costs are charged".
#pragma once

#include <cstddef>
#include <cstdint>

#include "machine.hpp"

namespace viommu::sim {

class DevIotlbWalk {
public:
    explicit DevIotlbWalk(Machine &m);
    // @cpu runs iommu_flush_dev_iotlb() for @entries deferred entries of
    // one domain with @devices devices on its list; advances its clock.
    void flush_entries(unsigned cpu, size_t entries, unsigned devices);

    uint64_t walks() const { return walks_; }   // iommu_flush_dev_iotlb() calls
    Nanos walk_ns() const { return walk_ns_; }  // list walking, without the lock
    void reset_stats() { walks_ = walk_ns_ = 0; }
    const VirtualLock &lock() const { return lock_; }

private:
    Machine &m_;
    VirtualLock &lock_;
    uint64_t walks_ = 0;
    Nanos walk_ns_ = 0;
};

}  // namespace viommu::sim
