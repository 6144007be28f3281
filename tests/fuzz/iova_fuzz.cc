// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: the guest IOVA allocator's C API (include/viommu/iova.h).
//
// The input picks a variant, a flush policy and a domain (granule, start,
// end, CPUs), then runs allocator-level alloc/release/reserve/cache flushes
// and dma-level map/unmap with timers, CPU switches and drains, against a
// shadow model.  Oracles (docs/fuzzing.rst): every status is one the API
// documents for the call; an allocation lies inside [start_pfn, min(limit,
// end_pfn - 1)], is aligned to its size rounded up to a power of two and
// overlaps nothing live, reserved, or unmapped but not yet flushed; a map
// fits the device's DMA mask and covers the bytes asked for; a release of
// anything but a live range (double free included) is refused with
// NOT_ALLOCATED and counted in bad_free; a reserve over a live range is
// BUSY; after a drain everything live can be released.
#include <bit>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <map>
#include <memory_resource>
#include <vector>

#include "fuzz_input.hpp"
#include "viommu/iova.h"

namespace {

constexpr unsigned MAX_OPS = 2048;
// Live ranges at most: some variants' allocations walk every range below
// the limit (the behaviour they model), so an input that kept 2000 ranges
// live would spend seconds there.  Exhaustion is still reached through
// small domains (end_pfn), and every path with a few dozen ranges.
constexpr size_t MAX_LIVE = 384;

struct Range {
    uint64_t pages;
    bool dma;        // mapped through viommu_iova_map_dev()
    uint64_t bytes;  // dma: the length mapped
};

// The shadow's nodes come from one arena per input, reused: a node
// allocation per range would cost more under ASan than the allocator
// calls the shadow checks (the harness is not what is being fuzzed).
struct Arena {
    alignas(std::max_align_t) static inline std::byte buf[256 << 10];
    std::pmr::monotonic_buffer_resource res{buf, sizeof(buf)};
};

struct Shadow {
    explicit Shadow(std::pmr::memory_resource *r) : live(r), reserved(r), pending(r) {}
    std::pmr::map<uint64_t, Range> live;         // pfn -> range
    std::pmr::map<uint64_t, uint64_t> reserved;  // pfn_lo -> pfn_hi (inclusive)
    std::pmr::map<uint64_t, uint64_t> pending;   // unmapped, not yet flushed: pfn -> pages

    // Reserved ranges may overlap one another (lo -> inclusive hi); they
    // are few.
    bool reserved_overlap(uint64_t lo, uint64_t hi) const
    {
        for (auto [a, b] : reserved)
            if (a <= hi && lo <= b)
                return true;
        return false;
    }
    // Pending ranges, like live ones, are disjoint: only the last one
    // starting at or below @hi can reach @lo.
    template <class Map, class Pages>
    static bool disjoint_overlap(const Map &m, uint64_t lo, uint64_t hi, Pages pages)
    {
        auto it = m.upper_bound(hi);
        if (it == m.begin())
            return false;
        --it;
        return it->first + pages(it->second) - 1 >= lo;
    }
    bool live_overlap(uint64_t lo, uint64_t hi) const
    {
        return disjoint_overlap(live, lo, hi, [](const Range &r) { return r.pages; });
    }
    // An allocation must not overlap anything in use.  Pending ranges are
    // matched loosely (by the whole pending set) since flush_range names
    // them by IOVA.
    bool in_use(uint64_t lo, uint64_t hi) const
    {
        return live_overlap(lo, hi) || reserved_overlap(lo, hi) ||
               disjoint_overlap(pending, lo, hi, [](uint64_t pages) { return pages; });
    }
};

struct Ctx {
    Arena arena;
    Shadow s{&arena.res};
    unsigned shift = 12;
    unsigned flushes = 0;
};

void flush_range(void *opaque, uint64_t iova, uint64_t bytes)
{
    auto *c = static_cast<Ctx *>(opaque);
    c->flushes++;
    uint64_t lo = iova >> c->shift, hi = (iova + bytes - 1) >> c->shift;
    for (auto it = c->s.pending.lower_bound(lo); it != c->s.pending.end() && it->first <= hi;) {
        if (it->first + it->second - 1 <= hi)
            it = c->s.pending.erase(it);
        else
            ++it;
    }
}

void flush_all(void *opaque, uint64_t)
{
    auto *c = static_cast<Ctx *>(opaque);
    c->flushes++;
    c->s.pending.clear();
}

// A 64-bit value shifted right by an input amount: every magnitude.
uint64_t shifted(fuzz::Input &in)
{
    uint64_t v = in.u64();
    return v >> (in.u8() % 64);
}

bool status_in(ViommuIovaStatus s, std::initializer_list<ViommuIovaStatus> ok)
{
    for (auto x : ok)
        if (s == x)
            return true;
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz::Input in(data, size);
    static const char *const policies[] = {"strict", "global-list", "percpu-defer", "flush-queue"};
    Ctx ctx;
    ViommuIovaFlushOps fops{flush_range, flush_all};
    ViommuIovaConfig cfg{};
    uint8_t b0 = in.u8(), b1 = in.u8(), b2 = in.u8();
    cfg.variant = viommu_iova_variant_name(b0 % viommu_iova_variant_count());
    cfg.flush_policy = policies[(b0 >> 4) % 4];
    cfg.granule_shift = (b1 & 1) ? 9 + (b1 >> 1) % 8 : 0;
    cfg.ncpus = 1 + (b1 >> 5) % 4;
    cfg.start_pfn = (b2 & 1) ? in.u8() : 0;
    switch ((b2 >> 1) & 3) {
    case 0:
        cfg.end_pfn = 0;
        break;
    case 1:
        cfg.end_pfn = 1 + in.u16();
        break;
    case 2:
        cfg.end_pfn = uint64_t{1} << (20 + in.u8() % 20);
        break;
    case 3:
        cfg.end_pfn = in.u64();
        break;
    }
    cfg.forcedac = b2 & 8;
    cfg.sac_once = b2 & 16;
    cfg.sac_flush = b2 & 32;
    cfg.stats = b2 & 64;
    cfg.manual_clock = true;  // deterministic: the input moves time
    cfg.flush_ops = &fops;
    cfg.flush_opaque = &ctx;

    ViommuIova *h = nullptr;
    ViommuIovaStatus st = viommu_iova_new(&cfg, &h);
    FUZZ_CHECK(st == VIOMMU_IOVA_OK && h, st);
    ctx.shift = cfg.granule_shift ? cfg.granule_shift : 12;

    // The domain as allocation results reveal it: [lo_seen, hi_seen].
    const uint64_t start = cfg.start_pfn ? cfg.start_pfn : 1;
    Shadow &s = ctx.s;
    std::pmr::vector<uint64_t> freed(&ctx.arena.res);  // released ranges' pfns, for double frees
    std::pmr::map<uint64_t, uint64_t> freed_pages(&ctx.arena.res);

    auto pick_live = [&](uint16_t k) -> std::pmr::map<uint64_t, Range>::iterator {
        if (s.live.empty())
            return s.live.end();
        return std::next(s.live.begin(), k % s.live.size());
    };
    auto check_new = [&](uint64_t pfn, uint64_t pages, uint64_t limit) {
        FUZZ_CHECK(pfn >= start, pfn, start);
        FUZZ_CHECK(pages - 1 <= limit && pfn <= limit - (pages - 1), pfn, limit);
        uint64_t align = pages > (uint64_t{1} << 63) ? 0 : std::bit_ceil(pages);
        FUZZ_CHECK(align && pfn % align == 0, pfn, pages);
        FUZZ_CHECK(!s.in_use(pfn, pfn + pages - 1), pfn, pages);
    };

    unsigned jsons = 0;
    for (unsigned op = 0; op < MAX_OPS && !in.empty(); op++) {
        switch (in.u8() % 12) {
        case 0:
        case 1:
        case 2: {  // alloc
            uint8_t how = in.u8();
            uint64_t pages = (how & 1) ? shifted(in) : 1 + in.u8() % 40;
            uint64_t limit = (how & 2) ? in.u64() : (how & 4) ? in.u32() : ~0ull;
            uint64_t pfn = 0;
            if (s.live.size() >= MAX_LIVE)
                break;
            st = viommu_iova_alloc(h, pages, limit, how & 8, &pfn);
            FUZZ_CHECK(status_in(st, {VIOMMU_IOVA_OK, VIOMMU_IOVA_NO_SPACE, VIOMMU_IOVA_BAD_SIZE,
                                      VIOMMU_IOVA_BAD_LIMIT}),
                       st);
            if (!pages)
                FUZZ_CHECK(st == VIOMMU_IOVA_BAD_SIZE, st);
            else if (st == VIOMMU_IOVA_BAD_LIMIT)
                FUZZ_CHECK(limit < start, limit);
            if (st == VIOMMU_IOVA_OK) {
                check_new(pfn, pages, limit);
                s.live[pfn] = {pages, false, 0};
            }
            break;
        }
        case 3:
        case 4: {  // release: a live range, a freed one again, or junk
            uint8_t how = in.u8();
            uint64_t pfn, pages;
            auto it = pick_live(in.u16());
            if ((how & 3) == 0 && it != s.live.end() && !it->second.dma) {
                pfn = it->first;
                pages = it->second.pages;
            } else if ((how & 3) == 1 && !freed.empty()) {
                pfn = freed[in.u16() % freed.size()];
                pages = freed_pages[pfn];
            } else if ((how & 3) == 2 && it != s.live.end()) {
                pfn = it->first + (how >> 7);
                pages = it->second.pages + ((how >> 2) & 3) - 1;
            } else {
                pfn = shifted(in);
                pages = in.u8();
            }
            auto l = s.live.find(pfn);
            bool expect_ok = l != s.live.end() && l->second.pages == pages;
            // Unmapped but not yet flushed: still allocated as far as the
            // allocator knows, so it would accept the free, and the flush
            // policy's own free later would hit whoever got the range
            // next.  No allocator can tell; the harness does not do it.
            auto p = s.pending.find(pfn);
            if (p != s.pending.end() && p->second == pages)
                break;
            uint64_t bad_before = viommu_iova_counter(h, "bad_free");
            st = viommu_iova_release(h, pfn, pages);
            uint64_t bad_after = viommu_iova_counter(h, "bad_free");
            if (expect_ok) {
                FUZZ_CHECK(st == VIOMMU_IOVA_OK, st, pfn);
                FUZZ_CHECK(bad_after == bad_before, bad_before, bad_after);
                s.live.erase(l);
                freed.push_back(pfn);
                freed_pages[pfn] = pages;
            } else {
                FUZZ_CHECK(st == VIOMMU_IOVA_NOT_ALLOCATED, st, pfn);
                FUZZ_CHECK(bad_after == bad_before + 1, bad_before, bad_after);
            }
            break;
        }
        case 5: {  // reserve
            uint8_t how = in.u8();
            uint64_t lo, hi;
            auto it = pick_live(in.u16());
            if ((how & 1) && it != s.live.end()) {
                lo = it->first + (how >> 4);
                hi = lo + in.u8();
            } else {
                lo = shifted(in);
                hi = lo + (in.u16() >> (how % 16)) - ((how & 2) ? 2 : 0);
            }
            st = viommu_iova_reserve(h, lo, hi);
            FUZZ_CHECK(status_in(st, {VIOMMU_IOVA_OK, VIOMMU_IOVA_BUSY, VIOMMU_IOVA_BAD_SIZE,
                                      VIOMMU_IOVA_BAD_LIMIT}),
                       st);
            if (hi < lo)
                FUZZ_CHECK(st == VIOMMU_IOVA_BAD_SIZE, st);
            if (st == VIOMMU_IOVA_OK) {
                FUZZ_CHECK(!s.live_overlap(lo, hi), lo, hi);
                FUZZ_CHECK(lo >= start, lo);
                s.reserved[lo] = std::max(hi, s.reserved.count(lo) ? s.reserved[lo] : hi);
            } else if (st == VIOMMU_IOVA_BAD_SIZE) {
                FUZZ_CHECK(hi < lo, lo, hi);
            }
            break;
        }
        case 6:
            viommu_iova_flush_caches(h);
            break;
        case 7:
        case 8: {  // map for a device
            uint8_t how = in.u8();
            unsigned dev = how % 70;  // 64 and up are refused
            uint64_t mask = (how & 64) ? in.u64() : (uint64_t{1} << (24 + in.u8() % 40)) - 1;
            uint64_t bytes = (how & 128) ? shifted(in) : 1 + in.u16();
            uint64_t iova = 0;
            if (s.live.size() >= MAX_LIVE)
                break;
            st = viommu_iova_map_dev(h, dev, mask, bytes, &iova);
            if (dev >= 64) {
                FUZZ_CHECK(st == VIOMMU_IOVA_BAD_ARG, st);
                break;
            }
            FUZZ_CHECK(status_in(st, {VIOMMU_IOVA_OK, VIOMMU_IOVA_NO_SPACE, VIOMMU_IOVA_BAD_SIZE,
                                      VIOMMU_IOVA_BAD_LIMIT}),
                       st);
            if (st != VIOMMU_IOVA_OK)
                break;
            uint64_t extent = viommu_iova_map_extent(h, bytes);
            FUZZ_CHECK(extent >= bytes && extent % (uint64_t{1} << ctx.shift) == 0, extent, bytes);
            FUZZ_CHECK(iova % (uint64_t{1} << ctx.shift) == 0, iova);
            // dma-iommu limits by pfn: with a mask that is not 2^n - 1 (the
            // DMA API allows no other) the last granule may pass it.
            uint64_t page_mask = mask | ((uint64_t{1} << ctx.shift) - 1);
            FUZZ_CHECK(iova <= page_mask && extent - 1 <= page_mask - iova, iova, mask);
            uint64_t pfn = iova >> ctx.shift, pages = extent >> ctx.shift;
            check_new(pfn, pages, ~0ull);
            s.live[pfn] = {pages, true, bytes};
            break;
        }
        case 9: {  // unmap a mapping (its IOVA goes pending until a flush)
            auto it = pick_live(in.u16());
            if (it == s.live.end() || !it->second.dma)
                break;
            uint64_t pfn = it->first, pages = it->second.pages, bytes = it->second.bytes;
            s.live.erase(it);
            s.pending[pfn] = pages;
            unsigned before = ctx.flushes;
            st = viommu_iova_unmap(h, pfn << ctx.shift, bytes);
            FUZZ_CHECK(st == VIOMMU_IOVA_OK, st);
            if (!std::strcmp(cfg.flush_policy, "strict"))
                FUZZ_CHECK(ctx.flushes > before && !s.pending.count(pfn), pfn);
            break;
        }
        case 10: {  // time and CPUs
            uint8_t how = in.u8();
            if (how & 1) {
                st = viommu_iova_set_cpu(h, how >> 1);
                FUZZ_CHECK((st == VIOMMU_IOVA_OK) == ((how >> 1) < cfg.ncpus), st, how);
            } else {
                uint64_t ns = uint64_t{in.u16()} << (how >> 3);
                uint64_t now = viommu_iova_now(h);
                st = viommu_iova_advance(h, ns);
                FUZZ_CHECK(st == VIOMMU_IOVA_OK && viommu_iova_now(h) == now + ns, st);
            }
            break;
        }
        case 11: {
            uint8_t how = in.u8();
            if (how & 1) {
                viommu_iova_drain(h);
                FUZZ_CHECK(viommu_iova_pending(h) == 0 && s.pending.empty(), s.pending.size());
            } else if (!(how & 0x1e) && jsons++ < 2) {
                // The statistics merge every CPU's histograms: the costliest
                // call here by far, so one in sixteen of these, twice at most.
                char buf[64];
                size_t n = viommu_iova_stats_json(h, buf, sizeof(buf));
                FUZZ_CHECK(n > 0 && buf[0] == '{', n);
            }
            break;
        }
        }
    }
    // Everything pending flushes, then everything live goes back.
    viommu_iova_drain(h);
    FUZZ_CHECK(s.pending.empty(), s.pending.size());
    for (auto &[pfn, r] : s.live) {
        if (r.dma)
            st = viommu_iova_unmap(h, pfn << ctx.shift, r.bytes);
        else
            st = viommu_iova_release(h, pfn, r.pages);
        FUZZ_CHECK(st == VIOMMU_IOVA_OK, st, pfn);
    }
    viommu_iova_drain(h);
    viommu_iova_destroy(h);
    return 0;
}
