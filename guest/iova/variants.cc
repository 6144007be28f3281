// SPDX-License-Identifier: GPL-2.0-or-later
// Allocator::create: the variants by name (allocator.hpp lists them), and the
// defaults a Config gets before any variant sees it.
#include "variants.hpp"
#include "allocator.hpp"

namespace viommu::iova {

namespace {
constexpr std::string_view variant_names[] = {
    "linux-4.4",  "percpu-batch", "linux-4.7", "linux-4.15", "linux-5.0",
    "linux-5.11", "linux-5.13",   "linux-6.7", "viommu-lab",
};

Config normalise(Config c, Env &env)
{
    if (!c.ncpus)
        c.ncpus = env.ncpus() ? env.ncpus() : 1;
    if (c.granule_shift < 9 || c.granule_shift > 30)
        c.granule_shift = 12;
    if (!c.start_pfn)
        c.start_pfn = 1;
    if (!c.end_pfn || c.end_pfn > (Pfn{1} << (57 - c.granule_shift)))
        c.end_pfn = Pfn{1} << (48 - c.granule_shift);
    if (c.end_pfn <= c.start_pfn)
        c.end_pfn = c.start_pfn + 1;
    return c;
}
}  // namespace

std::span<const std::string_view> Allocator::variants()
{
    return variant_names;
}

std::unique_ptr<Allocator> Allocator::create(std::string_view variant, Env &env, const Config &cfg)
{
    Config c = normalise(cfg, env);
    if (variant == "percpu-batch")
        return make_percpu_batch(env, c);
    if (variant == "viommu-lab")
        return make_range_ownership(env, c);
    return make_kernel_allocator(variant, env, c);
}

}  // namespace viommu::iova
