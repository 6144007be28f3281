// SPDX-License-Identifier: GPL-2.0-or-later
// The engine's side of the scalable-mode invalidation descriptors
// (PASID-based IOTLB, PASID cache, PASID-based device-TLB); the queue
// decodes them (invalidation_queue.cc).
#include <algorithm>

#include "engine.hpp"

namespace viommu::vtd {

uint64_t Engine::invalidate_pasid_iotlb(const PasidIotlbInvalidation &req)
{
    uint64_t probes = 0;
    uint64_t addr = 0, size = uint64_t{1} << f_.aw_bits;
    // Counted for the domain as the legacy descriptors are: a whole
    // address space of it, or pages.
    DomainStats *ds = stats_.find_domain(req.did);
    if (!req.page_selective) {
        stats_.add(Counter::PasidIotlbPasid);
        if (ds)
            ds->inv_domain.fetch_add(1, std::memory_order_relaxed);
        iotlb_.invalidate_pasid(req.did, req.pasid);
    } else {
        const uint64_t pages = uint64_t{1} << req.am;
        stats_.add(Counter::PasidIotlbPage);
        // at most the pages of an address space: AM goes to 63
        stats_.add(Counter::PasidIotlbPages,
                   std::min(pages, uint64_t{1} << (f_.aw_bits - PAGE_SHIFT)));
        if (ds)
            ds->inv_page.fetch_add(1, std::memory_order_relaxed);
        // Linux (6.1) does not bound AM by MAMV in P_IOTLB descriptors
        // (qi_flush_piotlb()): a larger range takes the whole PASID, and
        // the host is told of the domain's whole space, as for G=10b.
        bool as_pasid = req.am > f_.mamv;
        size_t dropped = 0;
        if (as_pasid) {
            iotlb_.invalidate_pasid(req.did, req.pasid);
        } else {
            iotlb_.prefetch_pages(req.did, req.addr);
            dropped = iotlb_.invalidate_pasid_pages(req.did, req.pasid, req.addr, pages, req.ih,
                                                    as_pasid, &probes);
            addr = req.addr;
            size = pages << PAGE_SHIFT;
        }
        if (as_pasid)
            stats_.add(Counter::PasidIotlbPageAsPasid);
        stats_.add(Counter::PasidIotlbEntriesDropped, dropped);
    }
    translations_changed();
    // The host's notifiers know domains, not PASIDs: the range of the
    // domain is what may have changed.
    host_.invalidated(false, req.did, addr, size);
    return probes;
}

// The context cache holds, for requests without PASID, the RID_PASID
// entry decoded with its context entry, tagged with the PASID entry's
// domain-id: those entries go with the PASID-cache entries they hold,
// O(1) for each granularity (PASID-selective retires the domain's: more
// than asked).
void Engine::invalidate_pasid_cache(const PasidCacheInvalidation &req)
{
    VtdGranularity granularity = VTD_GRAN_GLOBAL;
    switch (req.granularity) {
    case PasidCacheGranularity::Domain:
        stats_.add(Counter::PasidCacheDomain);
        pasids_.invalidate_domain(req.did);
        contexts_.invalidate_domain(req.did);
        granularity = VTD_GRAN_DOMAIN;
        break;
    case PasidCacheGranularity::Pasid:
        stats_.add(Counter::PasidCachePasid);
        pasids_.invalidate_pasid(req.did, req.pasid);
        contexts_.invalidate_domain(req.did);
        granularity = VTD_GRAN_SELECTIVE;
        break;
    case PasidCacheGranularity::Global:
        stats_.add(Counter::PasidCacheGlobal);
        pasids_.invalidate_all();
        contexts_.invalidate_all();
        break;
    }
    translations_changed();
    // A PASID-table entry decides a device's mode (PGTT pass-through or
    // translated).  Which devices use the domain is known only for cached
    // entries, so the host is told what the descriptor names (domain,
    // PASID) and matches it against the RID_PASID entries it resolved
    // (device_context()).
    const bool global = granularity == VTD_GRAN_GLOBAL;
    host_.pasid_cache_invalidated(granularity, global ? 0 : req.did,
                                  granularity == VTD_GRAN_SELECTIVE ? req.pasid : 0);
}

void Engine::invalidate_pasid_device_tlb(const PasidDeviceTlbInvalidation &req)
{
    // The host's device-TLBs (vhost's IOTLB) are not PASID-tagged: the
    // range goes for every PASID, more than asked.
    host_.device_iotlb_invalidated(req.sid, req.pfsid, req.mip, req.first, req.last);
}

}  // namespace viommu::vtd
