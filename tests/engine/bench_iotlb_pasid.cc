// SPDX-License-Identifier: GPL-2.0-or-later
// Scalable-mode IOTLB invalidation cost against IOTLB size, on the IOTLB
// itself (the scalable-mode translate path fills it the same way):
//
// - BM_PasidInvalidationPageScaling: page-selective-within-PASID
//   invalidation of single cached pages, spread over a full 1K-entry and a
//   full 64K-entry IOTLB (16 PASIDs of one domain share the entries).
// - BM_PasidInvalidationPasidScaling: PASID-selective invalidation of one
//   PASID holding 64 entries, among 16 PASIDs (1K entries) or 1024 PASIDs
//   (64K entries): the same work invalidated, a 64x larger cache.
//
// The two sizes take turns, each invalidation timed in this thread's CPU
// time and the refill untimed, so machine load affects both alike; the
// counter "ratio_64k_vs_1k" is the figure.
#include <benchmark/benchmark.h>

#include <ctime>

#include "iotlb.hpp"

using namespace viommu::vtd;

namespace {

double cpu_ns()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct PasidFilled {
    PasidFilled(uint32_t n, uint32_t pasids) : entries(n), pasids(pasids), tlb(n)
    {
        for (uint64_t p = 0; p < n; p++)
            fill(p);
    }
    // Page p belongs to PASID p % pasids.
    void fill(uint64_t page)
    {
        auto s = tlb.space(1, static_cast<uint32_t>(page % pasids));
        tlb.insert(s, page * 4096, {0x10000000 + page * 4096, 1, 3}, tlb.prepare_fill(s));
    }
    uint32_t entries, pasids;
    Iotlb tlb;
};

void BM_PasidInvalidationPageScaling(benchmark::State &state)
{
    PasidFilled small(1024, 16), large(65536, 16);
    double t_small = 0, t_large = 0;
    uint64_t rounds = 0;
    auto one = [&](PasidFilled &f) {
        const uint64_t page = (rounds * 7919) % f.entries;
        bool as_pasid = false;
        double t0 = cpu_ns();
        f.tlb.invalidate_pasid_pages(1, static_cast<uint32_t>(page % f.pasids), page * 4096, 1,
                                     false, as_pasid);
        double t = cpu_ns() - t0;
        f.fill(page);
        return t;
    };
    for (auto _ : state) {
        for (int i = 0; i < 1000; i++, rounds++) {
            t_small += one(small);
            t_large += one(large);
        }
    }
    state.counters["ns_1k"] = t_small / rounds;
    state.counters["ns_64k"] = t_large / rounds;
    state.counters["ratio_64k_vs_1k"] = t_large / t_small;
}
BENCHMARK(BM_PasidInvalidationPageScaling)->Unit(benchmark::kMillisecond);

void BM_PasidInvalidationPasidScaling(benchmark::State &state)
{
    PasidFilled small(1024, 16), large(65536, 1024);
    double t_small = 0, t_large = 0;
    uint64_t rounds = 0;
    auto one = [&](PasidFilled &f) {
        const auto pasid = static_cast<uint32_t>((rounds * 7919) % f.pasids);
        double t0 = cpu_ns();
        f.tlb.invalidate_pasid(1, pasid);
        double t = cpu_ns() - t0;
        for (uint64_t p = pasid; p < f.entries; p += f.pasids)
            f.fill(p);
        return t;
    };
    for (auto _ : state) {
        for (int i = 0; i < 100; i++, rounds++) {
            t_small += one(small);
            t_large += one(large);
        }
    }
    state.counters["ns_1k"] = t_small / rounds;
    state.counters["ns_64k"] = t_large / rounds;
    state.counters["ratio_64k_vs_1k"] = t_large / t_small;
}
BENCHMARK(BM_PasidInvalidationPasidScaling)->Unit(benchmark::kMillisecond);

}  // namespace
