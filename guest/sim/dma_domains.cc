// SPDX-License-Identifier: GPL-2.0-or-later
#include "dma_domains.hpp"

#include <algorithm>

namespace viommu::sim {

DmaDomains::DmaDomains(const SimConfig &cfg, const WorkloadInfo &info, Machine &m, SimEnv &env)
    : m_(m), env_(env), legacy_sac_flush_(cfg.dma == "sac-flush")
{
    queue_ = InvQueue::create(cfg.invq(), m, cfg.cmdq_entries);
    if (!queue_)
        return;
    unsigned ndomains = 1;
    for (const DeviceSpec &d : info.devices)
        ndomains = std::max(ndomains, d.domain + 1);
    // global-list is the 2008..4.6 intel-iommu flush_unmaps(): it walks
    // each entry's device list for device IOTLBs (guest/sim/dev_iotlb.hpp).
    if (cfg.flush == "global-list")
        dev_iotlb_ = std::make_unique<DevIotlbWalk>(m);
    std::vector<unsigned> domain_devices(ndomains, 0);
    for (const DeviceSpec &d : info.devices)
        domain_devices[d.domain]++;
    iova::DmaOptions opt{.forcedac = cfg.dma == "forcedac", .sac_once = cfg.dma == "sac-once"};
    for (unsigned i = 0; i < ndomains; i++) {
        Domain &dom = domains_.emplace_back();
        iova::Config acfg;
        acfg.granule_shift = info.granule_shift;
        acfg.ncpus = info.cpus;
        acfg.check_frees = false;
        dom.alloc = iova::Allocator::create(cfg.allocator, env, acfg);
        if (!dom.alloc)
            return;
        auto &f = flushers_.emplace_back(
            std::make_unique<SimFlusher>(env, *queue_, dev_iotlb_.get(), domain_devices[i]));
        dom.policy = iova::FlushPolicy::create(cfg.flush, *dom.alloc, *f);
        if (!dom.policy)
            return;
        dom.dma = std::make_unique<iova::DmaDomain>(*dom.alloc, *dom.policy, opt);
    }
    for (const DeviceSpec &d : info.devices) {
        devices_.push_back({.dma_mask = d.dma_mask, .pci = d.pci});
        device_domain_.push_back(d.domain);
    }
    ok_ = true;
}

bool DmaDomains::map(unsigned dev, uint64_t bytes, uint64_t &iova_out)
{
    m_.advance(env_.current_cpu(), m_.cost().pte_update);
    pte_updates++;
    maps++;
    iova::DmaDevice &d = devices_.at(dev);
    Domain &dom = domains_.at(device_domain_.at(dev));
    iova::Allocator &a = *dom.alloc;
    // a retry or restart path: the allocator's own counters move
    auto retry_marks = [&a] {
        return a.stats().total(iova::Counter::retries) +
               a.stats().total(iova::Counter::retry_from_last);
    };
    uint64_t before = retry_marks();
    bool ok;
    if (legacy_sac_flush_ && d.pci && d.dma_mask > 0xffffffffull) {
        unsigned shift = a.config().granule_shift;
        uint64_t pages = dom.dma->pages_for(bytes);
        iova::AllocResult r = a.alloc(pages, iova::Allocator::pfn_32bit(shift), true);
        bool retried = !r.ok();
        if (!r.ok())
            r = a.alloc(pages, std::min(d.dma_mask >> shift, a.end_pfn() - 1), true);
        iova_out = r.pfn << shift;
        ok = r.ok();
        if (retried) {
            retried_maps++;
            return ok;
        }
    } else {
        iova::MapResult r = dom.dma->map(d, bytes);
        iova_out = r.iova;
        ok = r.ok();
    }
    if (retry_marks() != before)
        retried_maps++;
    return ok;
}

}  // namespace viommu::sim
