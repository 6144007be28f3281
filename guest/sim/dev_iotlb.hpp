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
//
// The same loop reads each entry's struct iova (iova->pfn_lo and pfn_hi,
// for the invalidation mask and __free_iova()): the deferred list holds a
// pointer to it.  Its line was last touched by the CPU that unmapped it
// (intel_unmap() found it with find_iova(); where completions run on the
// mapping CPU, that CPU also wrote it when it allocated the IOVA), so an
// entry another CPU queued costs one line transfer from that CPU
// (Machine::transfer: same socket or not); the flushing CPU's own entries
// find it local.  read_iovas() charges that.
// docs/cost-model.rst, "How the costs are charged".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "machine.hpp"

namespace viommu::sim {

class DevIotlbWalk {
public:
    explicit DevIotlbWalk(Machine &m);
    // @cpu runs iommu_flush_dev_iotlb() for @entries deferred entries of
    // one domain with @devices devices on its list; advances its clock.
    void flush_entries(unsigned cpu, size_t entries, unsigned devices);
    // @cpu reads the struct iova of deferred entries unmapped by the CPUs
    // @unmapped_by (one per entry); advances its clock.
    void read_iovas(unsigned cpu, std::span<const unsigned> unmapped_by);

    uint64_t walks() const { return walks_; }             // iommu_flush_dev_iotlb() calls
    Nanos walk_ns() const { return walk_ns_; }            // list walking, without the lock
    uint64_t iova_lines() const { return iova_lines_; }   // struct iova lines from another CPU
    Nanos iova_line_ns() const { return iova_line_ns_; }  // ... and their transfers
    void reset_stats() { walks_ = walk_ns_ = iova_lines_ = iova_line_ns_ = 0; }
    const VirtualLock &lock() const { return lock_; }

private:
    Machine &m_;
    VirtualLock &lock_;
    uint64_t walks_ = 0;
    Nanos walk_ns_ = 0;
    uint64_t iova_lines_ = 0;
    Nanos iova_line_ns_ = 0;
};

}  // namespace viommu::sim
