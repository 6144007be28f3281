// SPDX-License-Identifier: GPL-2.0-or-later
// The C API (include/viommu/iova.h) over the C++ library.  Nothing here
// throws: allocation failure of the handle itself is reported as BAD_ARG.
#include "viommu/iova.h"

#include <array>
#include <cstddef>
#include <cstring>
#include <string>

#include "iova.hpp"

using namespace viommu::iova;

namespace {

ViommuIovaStatus to_c(Status s)
{
    return static_cast<ViommuIovaStatus>(s);
}

// The caller's callbacks, in bytes; counts when there are none.
class CallbackFlusher final : public Flusher {
public:
    CallbackFlusher(const ViommuIovaFlushOps *ops, void *opaque, unsigned shift)
        : ops_(ops ? *ops : ViommuIovaFlushOps{}), opaque_(opaque), shift_(shift)
    {
    }
    void flush_range(Range r) override
    {
        if (ops_.flush_range)
            ops_.flush_range(opaque_, r.pfn << shift_, r.pages << shift_);
        else
            counted_.flush_range(r);
    }
    void flush_all() override { flush_all(0); }
    void flush_all(size_t ranges) override
    {
        if (ops_.flush_all)
            ops_.flush_all(opaque_, ranges);
        else
            counted_.flush_all(ranges);
    }

private:
    ViommuIovaFlushOps ops_;
    void *opaque_;
    unsigned shift_;
    CountingFlusher counted_;
};

constexpr unsigned max_devices = 64;

}  // namespace

struct ViommuIova {
    std::unique_ptr<Env> env;
    ManualEnv *manual = nullptr;  // env, when the clock is virtual
    std::unique_ptr<CallbackFlusher> flusher;
    std::unique_ptr<Allocator> alloc;
    std::unique_ptr<FlushPolicy> policy;
    std::unique_ptr<DmaDomain> dma;
    std::array<DmaDevice, max_devices> devices{};
};

extern "C" {

size_t viommu_iova_variant_count(void)
{
    return Allocator::variants().size();
}

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
    if (cfg->flush_ops && (!cfg->flush_ops->flush_range || !cfg->flush_ops->flush_all))
        return VIOMMU_IOVA_BAD_ARG;
    std::unique_ptr<ViommuIova> h;
    Config c;
    c.granule_shift = cfg->granule_shift ? cfg->granule_shift : 12;
    c.start_pfn = cfg->start_pfn ? cfg->start_pfn : 1;
    c.end_pfn = cfg->end_pfn;
    c.stats = cfg->stats;
    c.lock_timing = cfg->stats;
    const unsigned ncpus = cfg->ncpus ? cfg->ncpus : 1;
    c.ncpus = ncpus;
    try {
        h = std::make_unique<ViommuIova>();
        if (cfg->manual_clock) {
            auto m = std::make_unique<ManualEnv>(ncpus);
            h->manual = m.get();
            h->env = std::move(m);
        } else {
            h->env = std::make_unique<RealEnv>(ncpus);
        }
        h->alloc = Allocator::create(cfg->variant ? cfg->variant : "viommu-lab", *h->env, c);
        if (!h->alloc)
            return VIOMMU_IOVA_BAD_VARIANT;
        h->flusher = std::make_unique<CallbackFlusher>(cfg->flush_ops, cfg->flush_opaque,
                                                       h->alloc->config().granule_shift);
        h->policy = FlushPolicy::create(cfg->flush_policy ? cfg->flush_policy : "strict", *h->alloc,
                                        *h->flusher);
        if (!h->policy)
            return VIOMMU_IOVA_BAD_ARG;
        h->dma = std::make_unique<DmaDomain>(*h->alloc, *h->policy,
                                             DmaOptions{.forcedac = cfg->forcedac,
                                                        .sac_once = cfg->sac_once,
                                                        .sac_flush = cfg->sac_flush});
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
    // The policy gives its queued ranges back before the allocator goes.
    owned->dma.reset();
    owned->policy.reset();
    owned->alloc.reset();
}

ViommuIovaStatus viommu_iova_set_cpu(ViommuIova *h, unsigned cpu)
{
    if (!h || !h->manual || cpu >= h->manual->ncpus())
        return VIOMMU_IOVA_BAD_ARG;
    h->manual->set_cpu(cpu);
    return VIOMMU_IOVA_OK;
}

ViommuIovaStatus viommu_iova_set_time(ViommuIova *h, uint64_t ns)
{
    if (!h || !h->manual || ns < h->manual->now())
        return VIOMMU_IOVA_BAD_ARG;
    h->manual->set_now(ns);
    return VIOMMU_IOVA_OK;
}

ViommuIovaStatus viommu_iova_advance(ViommuIova *h, uint64_t ns)
{
    if (!h || !h->manual || ns > UINT64_MAX - h->manual->now())
        return VIOMMU_IOVA_BAD_ARG;
    h->manual->advance(ns);
    return VIOMMU_IOVA_OK;
}

uint64_t viommu_iova_now(ViommuIova *h)
{
    return h ? h->env->now() : 0;
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

ViommuIovaStatus viommu_iova_reserve(ViommuIova *h, uint64_t pfn_lo, uint64_t pfn_hi)
{
    if (!h)
        return VIOMMU_IOVA_BAD_ARG;
    return to_c(h->alloc->reserve(pfn_lo, pfn_hi));
}

void viommu_iova_flush_caches(ViommuIova *h)
{
    if (h)
        h->alloc->flush_caches();
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

ViommuIovaStatus viommu_iova_map_dev(ViommuIova *h, unsigned dev, uint64_t dma_mask, uint64_t bytes,
                                     uint64_t *iova)
{
    if (!h || !iova || dev >= max_devices)
        return VIOMMU_IOVA_BAD_ARG;
    DmaDevice &d = h->devices[dev];
    d.dma_mask = dma_mask;
    MapResult m = h->dma->map(d, bytes);
    *iova = m.iova;
    return to_c(m.status);
}

uint64_t viommu_iova_map_extent(ViommuIova *h, uint64_t bytes)
{
    return h ? h->dma->pages_for(bytes) << h->alloc->config().granule_shift : 0;
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

uint64_t viommu_iova_pending(ViommuIova *h)
{
    return h ? h->policy->pending() : 0;
}

void viommu_iova_reset_stats(ViommuIova *h)
{
    if (!h)
        return;
    h->alloc->reset_stats();
    h->policy->reset_stats();
}

size_t viommu_iova_stats_json(ViommuIova *h, char *buf, size_t len)
{
    if (!h)
        return 0;
    // Reused from call to call: the text is a few KiB.
    thread_local std::string s;
    try {
        h->alloc->stats_json(s);
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
    // Callers ask for the same counter over and over (bad_free around
    // each release): try the one found last first.
    constexpr unsigned n = static_cast<unsigned>(Counter::count_);
    thread_local unsigned last = 0;
    for (unsigned k = 0; k < n; k++) {
        unsigned i = (last + k) % n;
        if (!std::strcmp(counter_name(static_cast<Counter>(i)), name)) {
            last = i;
            return h->alloc->stats().total(static_cast<Counter>(i));
        }
    }
    return 0;
}

}  // extern "C"
