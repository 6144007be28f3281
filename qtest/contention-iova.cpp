// SPDX-License-Identifier: GPL-2.0-or-later
/* The C interface of contention-iova.h over guest/iova's C++ interface. */
#include "contention-iova.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string_view>

#include "iova.hpp"

using namespace viommu::iova;

namespace {

class CallbackFlusher final : public Flusher {
public:
    CallbackFlusher(const CtIovaOps &ops, void *opaque, unsigned shift)
        : ops_(ops), opaque_(opaque), shift_(shift) {}
    void flush_range(Range r) override
    {
        ops_.flush_range(opaque_, r.pfn << shift_, r.pages << shift_);
    }
    void flush_all() override { ops_.flush_all(opaque_); }

private:
    CtIovaOps ops_;
    void *opaque_;
    unsigned shift_;
};

constexpr unsigned max_devices = 8;

} // namespace

struct CtIova {
    explicit CtIova(unsigned ncpus) : env(ncpus) {}
    ManualEnv env;
    std::unique_ptr<CallbackFlusher> flusher;
    std::unique_ptr<Allocator> alloc;
    std::unique_ptr<FlushPolicy> policy;
    std::unique_ptr<DmaDomain> dma;
    std::array<DmaDevice, max_devices> devices{};
    bool sac_flush = false;
};

extern "C" {

CtIova *ct_iova_new(const CtIovaConfig *cfg, const CtIovaOps *ops, void *opaque)
{
    if (!cfg || !ops || !ops->flush_range || !ops->flush_all || !cfg->variant ||
        !cfg->flush_policy || !cfg->ncpus)
        return nullptr;
    std::string_view dma = cfg->dma ? cfg->dma : "sac";
    if (dma != "sac" && dma != "sac-flush" && dma != "sac-once" && dma != "forcedac")
        return nullptr;
    try {
        auto h = std::make_unique<CtIova>(cfg->ncpus);
        Config c;
        c.granule_shift = cfg->granule_shift ? cfg->granule_shift : 12;
        c.start_pfn = cfg->start_pfn ? cfg->start_pfn : 1;
        c.end_pfn = cfg->end_pfn;
        c.ncpus = cfg->ncpus;
        c.stats = true;
        c.check_frees = true;
        h->alloc = Allocator::create(cfg->variant, h->env, c);
        if (!h->alloc)
            return nullptr;
        h->flusher = std::make_unique<CallbackFlusher>(*ops, opaque, c.granule_shift);
        h->policy = FlushPolicy::create(cfg->flush_policy, *h->alloc, *h->flusher);
        if (!h->policy)
            return nullptr;
        h->dma = std::make_unique<DmaDomain>(
            *h->alloc, *h->policy,
            DmaOptions{.forcedac = dma == "forcedac", .sac_once = dma == "sac-once"});
        h->sac_flush = dma == "sac-flush";
        return h.release();
    } catch (...) {
        return nullptr;
    }
}

void ct_iova_free(CtIova *h)
{
    std::unique_ptr<CtIova> owned(h);
    if (!owned)
        return;
    owned->dma.reset();
    owned->policy.reset();
    owned->alloc.reset();
}

bool ct_iova_reserve(CtIova *h, uint64_t iova, uint64_t bytes)
{
    const unsigned shift = h->alloc->config().granule_shift;
    const std::uint64_t pages = bytes >> shift;

    if (!pages || (iova & ((std::uint64_t{1} << shift) - 1)))
        return false;
    AllocResult r = h->alloc->alloc(pages, ((iova + bytes) >> shift) - 1, false);
    if (r.ok() && r.pfn != iova >> shift) {
        h->alloc->free(r.pfn, pages);
        return false;
    }
    return r.ok();
}

void ct_iova_set_cpu(CtIova *h, unsigned cpu) { h->env.set_cpu(cpu); }

void ct_iova_advance(CtIova *h, uint64_t ns) { h->env.advance(ns); }

uint64_t ct_iova_extent(CtIova *h, uint64_t bytes)
{
    return h->dma->pages_for(bytes) << h->alloc->config().granule_shift;
}

int ct_iova_map(CtIova *h, unsigned dev, uint64_t dma_mask, uint64_t bytes, uint64_t *iova)
{
    if (dev >= max_devices || !iova)
        return static_cast<int>(Status::bad_size);
    DmaDevice &d = h->devices[dev];
    d.dma_mask = dma_mask;
    d.pci = true;
    const unsigned shift = h->alloc->config().granule_shift;
    if (h->sac_flush && dma_mask > 0xffffffffull) {
        /* The dma layer before 4.15's SAC rework: the 32-bit attempt
         * itself flushes every CPU's cache when it fails (as the
         * simulator's "sac-flush" mode does). */
        const std::uint64_t pages = h->dma->pages_for(bytes);
        const unsigned cpu = h->env.current_cpu() % h->alloc->config().ncpus;
        AllocResult r = h->alloc->alloc(pages, Allocator::pfn_32bit(shift), true);
        if (!r.ok()) {
            h->alloc->stats().add_always(cpu, Counter::failed_32bit);
            h->alloc->stats().add(cpu, Counter::retries);
            r = h->alloc->alloc(pages, std::min(dma_mask >> shift, h->alloc->end_pfn() - 1),
                                true);
        }
        *iova = r.pfn << shift;
        return static_cast<int>(r.status);
    }
    MapResult m = h->dma->map(d, bytes);
    *iova = m.iova;
    return static_cast<int>(m.status);
}

void ct_iova_unmap(CtIova *h, uint64_t iova, uint64_t bytes) { h->dma->unmap(iova, bytes); }

void ct_iova_drain(CtIova *h) { h->policy->drain(); }

uint64_t ct_iova_pending(CtIova *h) { return h->policy->pending(); }

uint64_t ct_iova_counter(CtIova *h, const char *name)
{
    if (!h || !name)
        return 0;
    for (unsigned i = 0; i < static_cast<unsigned>(Counter::count_); i++)
        if (!std::strcmp(counter_name(static_cast<Counter>(i)), name))
            return h->alloc->stats().total(static_cast<Counter>(i));
    return 0;
}

} // extern "C"
