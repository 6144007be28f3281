// SPDX-License-Identifier: GPL-2.0-or-later
/* The C API (include/viommu/iova.h) over the C++ library.  Nothing here
 * throws: allocation failure of the handle itself is reported as BAD_ARG. */
#include "viommu/iova.h"

#include <cstring>

#include "iova.hpp"

using namespace viommu::iova;

struct ViommuIova {
    explicit ViommuIova(unsigned ncpus) : env(ncpus) {}
    RealEnv env;
    CountingFlusher flusher;
    std::unique_ptr<Allocator> alloc;
    std::unique_ptr<FlushPolicy> policy;
    std::unique_ptr<DmaDomain> dma;
};

namespace {
ViommuIovaStatus to_c(Status s) { return static_cast<ViommuIovaStatus>(s); }
}

extern "C" {

size_t viommu_iova_variant_count(void) { return Allocator::variants().size(); }

const char *viommu_iova_variant_name(size_t i)
{
    auto v = Allocator::variants();
    return i < v.size() ? v[i].data() : nullptr;
}

const char *viommu_iova_status_name(ViommuIovaStatus s)
{
    if (s == VIOMMU_IOVA_BAD_ARG)
        return "bad_arg";
    return status_name(static_cast<Status>(s));
}

ViommuIovaStatus viommu_iova_new(const ViommuIovaConfig *cfg, ViommuIova **out)
{
    if (!out)
        return VIOMMU_IOVA_BAD_ARG;
    *out = nullptr;
    ViommuIovaConfig def{};
    if (!cfg)
        cfg = &def;
    std::unique_ptr<ViommuIova> h;
    Config c;
    c.granule_shift = cfg->granule_shift ? cfg->granule_shift : 12;
    c.start_pfn = cfg->start_pfn ? cfg->start_pfn : 1;
    c.stats = cfg->stats;
    c.lock_timing = cfg->stats;
    try {
        h = std::make_unique<ViommuIova>(cfg->ncpus ? cfg->ncpus : 1);
        h->alloc = Allocator::create(cfg->variant ? cfg->variant : "viommu-lab", h->env, c);
        if (!h->alloc)
            return VIOMMU_IOVA_BAD_VARIANT;
        h->policy = FlushPolicy::create(cfg->flush_policy ? cfg->flush_policy : "strict",
                                        *h->alloc, h->flusher);
        if (!h->policy)
            return VIOMMU_IOVA_BAD_ARG;
        h->dma = std::make_unique<DmaDomain>(*h->alloc, *h->policy,
                                             DmaOptions{cfg->forcedac, cfg->sac_once});
    } catch (...) {
        return VIOMMU_IOVA_BAD_ARG;
    }
    *out = h.release();
    return VIOMMU_IOVA_OK;
}

void viommu_iova_destroy(ViommuIova *h)
{
    std::unique_ptr<ViommuIova> owned(h);
    if (!owned)
        return;
    /* The policy gives its queued ranges back before the allocator goes. */
    owned->dma.reset();
    owned->policy.reset();
    owned->alloc.reset();
}

ViommuIovaStatus viommu_iova_alloc(ViommuIova *h, uint64_t pages, uint64_t limit_pfn,
                                   bool flush_rcache, uint64_t *pfn)
{
    if (!h || !pfn)
        return VIOMMU_IOVA_BAD_ARG;
    AllocResult r = h->alloc->alloc(pages, limit_pfn, flush_rcache);
    *pfn = r.pfn;
    return to_c(r.status);
}

ViommuIovaStatus viommu_iova_release(ViommuIova *h, uint64_t pfn, uint64_t pages)
{
    if (!h)
        return VIOMMU_IOVA_BAD_ARG;
    return to_c(h->alloc->free(pfn, pages));
}

ViommuIovaStatus viommu_iova_map(ViommuIova *h, uint64_t dma_mask, uint64_t bytes, uint64_t *iova)
{
    if (!h || !iova)
        return VIOMMU_IOVA_BAD_ARG;
    DmaDevice dev{dma_mask, true, false};
    MapResult m = h->dma->map(dev, bytes);
    *iova = m.iova;
    return to_c(m.status);
}

ViommuIovaStatus viommu_iova_unmap(ViommuIova *h, uint64_t iova, uint64_t bytes)
{
    if (!h || !bytes)
        return VIOMMU_IOVA_BAD_ARG;
    h->dma->unmap(iova, bytes);
    return VIOMMU_IOVA_OK;
}

void viommu_iova_drain(ViommuIova *h)
{
    if (h)
        h->policy->drain();
}

size_t viommu_iova_stats_json(ViommuIova *h, char *buf, size_t len)
{
    if (!h)
        return 0;
    std::string s;
    try {
        s = h->alloc->stats_json();
    } catch (...) {
        return 0;
    }
    if (buf && len) {
        size_t n = std::min(len - 1, s.size());
        std::memcpy(buf, s.data(), n);
        buf[n] = '\0';
    }
    return s.size();
}

uint64_t viommu_iova_counter(ViommuIova *h, const char *name)
{
    if (!h || !name)
        return 0;
    for (unsigned i = 0; i < static_cast<unsigned>(Counter::count_); i++)
        if (!std::strcmp(counter_name(static_cast<Counter>(i)), name))
            return h->alloc->stats().total(static_cast<Counter>(i));
    return 0;
}

} // extern "C"
