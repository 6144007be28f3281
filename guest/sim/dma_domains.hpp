// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "../iova/iova.hpp"
#include "dev_iotlb.hpp"
#include "invq.hpp"
#include "machine.hpp"
#include "sim_env.hpp"
#include "simulator.hpp"
#include "workload.hpp"

namespace viommu::sim {

// Invalidations of the flush policies go to the invalidation-queue model,
// on the virtual CPU that issues them.  With @walk (the 2008..4.6
// intel-iommu flush_unmaps(), guest/sim/dev_iotlb.hpp) a domain-wide flush
// is followed by the device-IOTLB walk of every entry it covers, for a
// domain of @devices devices, and by the reads of the entries' struct
// iova: queued() records, in list order, the CPU that unmapped each entry.
class SimFlusher final : public iova::Flusher {
public:
    SimFlusher(SimEnv &env, InvQueue &q, DevIotlbWalk *walk = nullptr, unsigned devices = 0)
        : env_(env), q_(q), walk_(walk), devices_(devices)
    {
    }
    void flush_range(iova::Range) override { q_.submit_and_wait(env_.current_cpu(), 1); }
    void flush_all() override { q_.submit_and_wait(env_.current_cpu(), 1); }
    void flush_all(size_t ranges) override
    {
        flush_all();
        if (!walk_)
            return;
        unsigned cpu = env_.current_cpu();
        // the list is flushed whole, oldest first; an entry queued by the
        // unmap that triggered this flush is behind them
        size_t n = std::min(ranges, unmapped_by_.size());
        walk_->read_iovas(cpu, std::span(unmapped_by_).first(n));
        unmapped_by_.erase(unmapped_by_.begin(), unmapped_by_.begin() + std::ptrdiff_t(n));
        walk_->flush_entries(cpu, ranges, devices_);
    }
    // @cpu queues one entry on the domain's deferred list (global-list)
    void queued(unsigned cpu)
    {
        if (walk_)
            unmapped_by_.push_back(cpu);
    }

private:
    SimEnv &env_;
    InvQueue &q_;
    DevIotlbWalk *walk_;
    unsigned devices_;
    std::vector<unsigned> unmapped_by_;
};

// The guest side of a run's IOMMU: per IOMMU domain an allocator, a flush
// policy and the dma-iommu layer, and the one invalidation queue (one
// IOMMU) their flushes go through.
// Devices map into their own domain (DeviceSpec::domain) as intel-iommu
// and dma-iommu give each PCI function (not sharing a group) its own
// domain and IOVA space.
class DmaDomains {
public:
    DmaDomains(const SimConfig &cfg, const WorkloadInfo &info, Machine &m, SimEnv &env);
    bool ok() const { return ok_; }

    // Maps `bytes` for device `dev`; counts a map that took a retry or
    // restart path of the allocator.
    bool map(unsigned dev, uint64_t bytes, uint64_t &iova_out);
    void unmap(unsigned dev, uint64_t iova, uint64_t bytes)
    {
        m_.advance(env_.current_cpu(), m_.cost().pte_update);
        pte_updates++;
        unsigned d = device_domain_.at(dev);
        flushers_.at(d)->queued(env_.current_cpu());
        domains_.at(d).dma->unmap(iova, bytes);
    }

    size_t domain_count() const { return domains_.size(); }
    iova::Allocator &allocator(size_t i = 0) { return *domains_.at(i).alloc; }
    // every domain's cached IOVAs back to its tree (the drain stressor)
    void flush_caches()
    {
        for (Domain &d : domains_)
            d.alloc->flush_caches();
    }
    void reset_stats()
    {
        for (Domain &d : domains_)
            d.alloc->reset_stats();
        if (dev_iotlb_)
            dev_iotlb_->reset_stats();
        maps = retried_maps = pte_updates = 0;
    }
    uint64_t maps = 0, retried_maps = 0, pte_updates = 0;
    InvQueue &queue() { return *queue_; }
    // the 2008..4.6 device-IOTLB walks (global-list only), or nullptr
    DevIotlbWalk *dev_iotlb() { return dev_iotlb_.get(); }

private:
    struct Domain {
        std::unique_ptr<iova::Allocator> alloc;
        std::unique_ptr<iova::FlushPolicy> policy;
        std::unique_ptr<iova::DmaDomain> dma;
    };
    Machine &m_;
    SimEnv &env_;
    bool legacy_sac_flush_;
    bool ok_ = false;
    std::unique_ptr<InvQueue> queue_;
    std::unique_ptr<DevIotlbWalk> dev_iotlb_;
    std::deque<std::unique_ptr<SimFlusher>> flushers_;  // one per domain
    std::deque<Domain> domains_;
    std::vector<iova::DmaDevice> devices_;
    std::vector<unsigned> device_domain_;
};

}  // namespace viommu::sim
