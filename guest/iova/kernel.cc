// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel generations linux-4.4 ... linux-6.7: an IovaTree with the
// generation's walk plus, from 4.7, the rcache.  alloc_iova_fast():
// rcache, then the tree; on failure (if allowed) flush every CPU's
// magazines (from 5.11 the depots too) and retry once.
#include <cstddef>
#include <optional>

#include "rcache.hpp"
#include "variants.hpp"

namespace viommu::iova {

namespace {

struct Generation {
    std::string_view name;
    Walk walk;
    bool rcache;
    RcacheParams rp;
    bool flush_depot_on_fail;
};

const Generation generations[] = {
    {"linux-4.4", Walk::v4_4, false, {}, false},
    {"linux-4.7", Walk::v4_4, true, {128, 32, false, false}, false},
    {"linux-4.15", Walk::v4_15, true, {128, 32, true, false}, false},
    {"linux-5.0", Walk::v5_0, true, {128, 32, true, false}, false},
    {"linux-5.11", Walk::v5_11, true, {128, 32, true, false}, true},
    {"linux-5.13", Walk::v5_13, true, {128, 32, true, false}, true},
    {"linux-6.7", Walk::v5_18, true, {127, 0, true, true}, true},
};

class KernelAllocator final : public Allocator {
public:
    KernelAllocator(const Generation &g, Env &env, const Config &cfg)
        : Allocator(g.name, env, cfg), gen_(g),
          tree_(env, stats_, g.walk, cfg_.start_pfn, dma32_, cfg_.lock_timing)
    {
        if (g.rcache)
            rcache_.emplace(env, stats_, tree_, g.rp, ncpus_, cfg_.lock_timing);
    }

    void do_flush_caches() override
    {
        if (!rcache_)
            return;
        for (unsigned c = 0; c < ncpus_; c++)
            rcache_->flush_cpu(c);
        rcache_->flush_depot();
    }

    std::vector<const InstrumentedLock *> locks() const override
    {
        std::vector<const InstrumentedLock *> v{&tree_.lock()};
        if (rcache_)
            rcache_->locks(v);
        return v;
    }

    size_t tree_nodes() const override { return tree_.nodes(); }
    bool do_reserve(Pfn lo, Pfn hi) override { return tree_.reserve(cpu(), lo, hi); }

    void extra_json(std::string &out) const override
    {
        json_member(out, "tree_nodes", tree_.nodes());
        if (gen_.walk >= Walk::v5_0)
            json_member(out, "max32_alloc_size", tree_.max32_alloc_size());
        if (!rcache_)
            return;
        json_member(out, "rcache_cached_pfns", rcache_->cached_pfns());
        out += "\"depot_size\":[";
        for (unsigned c = 0; c < gen_.rp.classes; c++)
            out += (c ? "," : "") + std::to_string(rcache_->depot_size(c));
        out += "],";
    }

protected:
    AllocResult do_alloc(uint64_t pages, Pfn limit, bool flush_rcache) override
    {
        unsigned c = cpu();
        if (rcache_) {
            if (auto p = rcache_->get(c, pages, limit))
                return {Status::ok, *p};
        }
        for (;;) {
            AllocResult r = tree_.alloc(c, pages, limit);
            if (r.ok() || !rcache_ || !flush_rcache)
                return r;
            flush_rcache = false;
            stats_.add(c, Counter::retries);
            stats_.add(c, Counter::rcache_flush_all);
            for (unsigned i = 0; i < ncpus_; i++)
                rcache_->flush_cpu(i);
            if (gen_.flush_depot_on_fail)
                rcache_->flush_depot();
        }
    }

    void do_free(Pfn pfn, uint64_t pages) override
    {
        unsigned c = cpu();
        if (rcache_ && rcache_->put(c, pfn, pages))
            return;
        tree_.free(c, pfn);
    }

    // Before 4.7 (no rcache) the kernel's free takes the struct iova,
    // which the driver finds first: find_iova(), then __free_iova().
    bool do_lookup(Pfn pfn) override { return rcache_ || tree_.lookup(cpu(), pfn); }
    void do_free_found_batch(std::span<const Range> ranges) override
    {
        if (rcache_) {
            do_free_batch(ranges);
            return;
        }
        unsigned c = cpu();
        for (const Range &r : ranges)
            tree_.erase_found(c, r.pfn);
    }

private:
    const Generation &gen_;
    IovaTree tree_;
    std::optional<Rcache> rcache_;
};

}  // namespace

std::unique_ptr<Allocator> make_kernel_allocator(std::string_view name, Env &env, const Config &cfg)
{
    for (const auto &g : generations)
        if (g.name == name)
            return std::make_unique<KernelAllocator>(g, env, cfg);
    return nullptr;
}

}  // namespace viommu::iova
