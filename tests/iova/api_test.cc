// SPDX-License-Identifier: GPL-2.0-or-later
// Interface additions for the simulator and the contention qtests:
// reserve_iova, the sac-flush dma mode, counted flush_caches(), the flush
// count passed to Flusher::flush_all, FlushPolicy::reset_stats and the
// Work unit for shared atomics.
#include <gtest/gtest.h>

#include "helpers.hpp"

namespace viommu::iova::test {
namespace {

constexpr uint64_t page = 4096;

// The MSI window, 0xfee00000-0xfeefffff, in 64 KiB pages.
constexpr unsigned shift64k = 16;
constexpr Pfn msi_lo = 0xfee00000ull >> shift64k, msi_hi = 0xfeefffffull >> shift64k;

// A reserved window is never handed out, even when every other page of
// the domain is, and reserving or freeing it again is refused.
TEST(Reserve, WindowIsNeverAllocated)
{
    for (auto v : Allocator::variants()) {
        ManualEnv env(2);
        Config c;
        c.granule_shift = shift64k;
        c.end_pfn = Pfn{1} << 16;  // just the 32-bit space
        auto a = Allocator::create(v, env, c);
        ASSERT_EQ(a->reserve(msi_lo, msi_hi), Status::ok) << v;
        EXPECT_EQ(counter(*a, Counter::reserves), 1u) << v;

        Model m;
        uint64_t got = 0;
        for (;;) {
            env.set_cpu(got % 2);
            AllocResult r = a->alloc(1, a->end_pfn() - 1, true);
            if (!r.ok())
                break;
            ASSERT_EQ(m.add(r.pfn, 1), "") << v;
            ASSERT_TRUE(r.pfn < msi_lo || r.pfn > msi_hi) << v << " handed out " << r.pfn;
            got++;
        }
        // pfns 1 .. 0xffff, less the 16 reserved; the 4.4 walk never
        // hands out start_pfn itself (docs/iova.rst)
        const bool skips_start = v == "linux-4.4" || v == "percpu-batch" || v == "linux-4.7";
        EXPECT_EQ(got, (Pfn{1} << 16) - 1 - (msi_hi - msi_lo + 1) - skips_start) << v;
        EXPECT_EQ(a->free(msi_lo, msi_hi - msi_lo + 1), Status::not_allocated) << v;
        EXPECT_EQ(a->reserve(msi_lo, msi_lo), Status::busy) << v;
        EXPECT_EQ(a->reserve(msi_hi, msi_hi + 1), Status::busy) << v;
        EXPECT_EQ(counter(*a, Counter::bad_reserve), 2u) << v;
    }
}

TEST(Reserve, BadRangesAreRefusedAndCounted)
{
    ManualEnv env(1);
    Config c;
    c.start_pfn = 16;
    c.end_pfn = 1024;
    auto a = Allocator::create("linux-5.13", env, c);
    AllocResult r = a->alloc(8, 511, false);
    ASSERT_EQ(r.pfn, 504u);
    EXPECT_EQ(a->reserve(r.pfn + 7, r.pfn + 9), Status::busy);  // overlaps its end
    EXPECT_EQ(a->reserve(r.pfn - 2, r.pfn), Status::busy);      // overlaps its start
    EXPECT_EQ(a->reserve(100, 99), Status::bad_size);
    EXPECT_EQ(a->reserve(8, 20), Status::bad_limit);       // below start_pfn
    EXPECT_EQ(a->reserve(1000, 1024), Status::bad_limit);  // past the end
    EXPECT_EQ(counter(*a, Counter::bad_reserve), 2u);
    EXPECT_EQ(counter(*a, Counter::bad_size), 1u);
    EXPECT_EQ(counter(*a, Counter::bad_limit), 2u);
    EXPECT_EQ(counter(*a, Counter::reserves), 0u);
    EXPECT_EQ(a->tree_nodes(), 1u);
    EXPECT_EQ(a->reserve(r.pfn + 8, r.pfn + 8), Status::ok);  // adjacent is fine
    EXPECT_EQ(a->tree_nodes(), 2u);
}

// 32-bit space full; 4096 pages free above it; CPU 1 parks one page below
// 4 GiB in its cache (as in dma_flush_test's SacRetryFlushesRcache).
struct ParkedBelow4G {
    explicit ParkedBelow4G(std::string_view v) : env(2)
    {
        a = full_below_4g(v, env);
        const Pfn dma32 = a->dma_32bit_pfn();
        (void)a->alloc(4096, a->end_pfn() - 1, false);
        env.set_cpu(1);
        (void)a->free(2048, 2048);
        for (uint64_t s = 1024; s; s /= 2)
            (void)a->alloc(s, dma32, false);
        parked = a->alloc(1, dma32, false).pfn;
        (void)a->free(parked, 1);
        env.set_cpu(0);
        fq = FlushPolicy::create("strict", *a, inv);
    }
    ManualEnv env;
    std::unique_ptr<Allocator> a;
    CountingFlusher inv;
    std::unique_ptr<FlushPolicy> fq;
    Pfn parked = 0;
};

// sac-flush (before 4.15): the failed 32-bit attempt flushes the caches
// itself and finds the parked page; plain SAC fails it, counts it, and
// only the full-mask attempt flushes.
TEST(Dma, SacFlushFlushesOnThe32BitAttempt)
{
    for (auto v : {"linux-4.7", "linux-4.15", "linux-5.13", "linux-6.7"}) {
        for (bool sac_flush : {false, true}) {
            ParkedBelow4G f(v);
            ASSERT_EQ(f.parked, 2048u) << v;
            DmaDomain dom(*f.a, *f.fq, DmaOptions{.sac_flush = sac_flush});
            DmaDevice nic;
            MapResult m = dom.map(nic, page);
            ASSERT_TRUE(m.ok()) << v;
            EXPECT_EQ(m.iova, f.parked * page) << v;
            EXPECT_EQ(counter(*f.a, Counter::failed_32bit), sac_flush ? 0u : 1u) << v;
            // the allocator's flush-and-retry, and without sac-flush the
            // dma layer's full-mask attempt before it
            EXPECT_EQ(counter(*f.a, Counter::retries), sac_flush ? 1u : 2u) << v;
            EXPECT_EQ(counter(*f.a, Counter::rcache_flush_all), 1u) << v;
        }
    }
}

// Explicit flush_caches() calls are counted apart from the flushes an
// allocation failure makes (rcache_flush_all).
TEST(FlushCaches, ExplicitCallsAreCounted)
{
    for (auto v : Allocator::variants()) {
        ManualEnv env(2);
        auto a = Allocator::create(v, env);
        AllocResult r = a->alloc(1, a->end_pfn() - 1, false);
        ASSERT_TRUE(r.ok()) << v;
        ASSERT_EQ(a->free(r.pfn, 1), Status::ok) << v;
        a->flush_caches();
        env.set_cpu(1);
        a->flush_caches();
        EXPECT_EQ(counter(*a, Counter::cache_flushes), 2u) << v;
        EXPECT_EQ(counter(*a, Counter::rcache_flush_all), 0u) << v;
    }
}

struct Policy {
    explicit Policy(std::string_view policy, const FlushTunables &t = {}) : env(2)
    {
        a = Allocator::create("linux-4.15", env);
        fq = FlushPolicy::create(policy, *a, inv, t);
    }
    void unmap_n(unsigned n)
    {
        for (unsigned i = 0; i < n; i++)
            fq->unmap({a->alloc(1, a->end_pfn() - 1, false).pfn, 1});
    }
    ManualEnv env;
    std::unique_ptr<Allocator> a;
    CountingFlusher inv;
    std::unique_ptr<FlushPolicy> fq;
};

// flush_all() is told how many ranges the policy frees after it.
TEST(FlushAll, CountsTheRangesItCovers)
{
    {
        Policy p("global-list", {.high_water = 10});
        p.unmap_n(11);  // the 11th flushes the first 10
        EXPECT_EQ(p.inv.alls.load(), 1u);
        EXPECT_EQ(p.inv.all_ranges.load(), 10u);
        p.fq->drain();
        EXPECT_EQ(p.inv.alls.load(), 2u);
        EXPECT_EQ(p.inv.all_ranges.load(), 11u);
    }
    {
        Policy p("percpu-defer", {.high_water = 10});
        p.unmap_n(3);
        p.env.set_cpu(1);
        p.unmap_n(2);
        p.fq->drain();  // one flush per non-empty queue
        EXPECT_EQ(p.inv.alls.load(), 2u);
        EXPECT_EQ(p.inv.all_ranges.load(), 5u);
    }
    {
        Policy p("flush-queue", {.ring_size = 8});  // 7 entries a ring
        p.unmap_n(7);
        p.env.set_cpu(1);
        p.unmap_n(3);
        EXPECT_EQ(p.fq->pending(), 10u);
        p.env.set_cpu(0);
        p.unmap_n(1);  // CPU 0's ring is full: flush all 10
        EXPECT_EQ(p.inv.alls.load(), 1u);
        EXPECT_EQ(p.inv.all_ranges.load(), 10u);
        EXPECT_EQ(p.fq->pending(), 4u);  // CPU 1's 3 wait for its next unmap
    }
}

TEST(FlushPolicy, ResetStatsClearsItsLocks)
{
    for (auto name : FlushPolicy::policies()) {
        Policy p(name);
        p.unmap_n(5);
        p.fq->drain();
        auto acquisitions = [&] {
            uint64_t n = 0;
            for (const InstrumentedLock *l : p.fq->locks())
                for (const SiteLockStats &s : l->stats())
                    n += s.acquisitions;
            return n;
        };
        if (name == "strict") {
            EXPECT_TRUE(p.fq->locks().empty());
            continue;
        }
        EXPECT_GE(acquisitions(), 5u) << name;
        p.fq->reset_stats();
        EXPECT_EQ(acquisitions(), 0u) << name;
        EXPECT_EQ(counter(*p.a, Counter::unmaps), 5u) << name;  // the allocator's stay
    }
}

// Records what the allocator and the policies charge.
class ChargingEnv final : public ManualEnv {
public:
    using ManualEnv::ManualEnv;
    void charge(Work w, uint64_t n) override { work[static_cast<unsigned>(w)] += n; }
    uint64_t of(Work w) const { return work[static_cast<unsigned>(w)]; }
    uint64_t work[static_cast<unsigned>(Work::count_)] = {};
};

// The flush queue's flush_start/flush_finish increments are atomics on
// words every CPU writes: two per domain flush, reported as such.
TEST(Work, SharedAtomicsOfTheFlushQueue)
{
    for (auto name : FlushPolicy::policies()) {
        ChargingEnv env(2);
        auto a = Allocator::create("linux-6.7", env);
        CountingFlusher inv;
        auto fq = FlushPolicy::create(name, *a, inv, {.high_water = 4, .ring_size = 4});
        for (unsigned i = 0; i < 20; i++) {
            env.set_cpu(i % 2);
            fq->unmap({a->alloc(1, a->end_pfn() - 1, false).pfn, 1});
        }
        fq->drain();
        const uint64_t flushes = counter(*a, Counter::unmap_flushes);
        ASSERT_GT(flushes, 1u) << name;
        EXPECT_EQ(env.of(Work::invalidate), flushes) << name;
        EXPECT_EQ(env.of(Work::shared_atomic), name == "flush-queue" ? 2 * flushes : 0u) << name;
    }
}

uint64_t acquired(const Allocator &a, std::string_view lock, Site site)
{
    uint64_t n = 0;
    for (const InstrumentedLock *l : a.locks())
        if (l->name() == lock)
            n += l->stats()[static_cast<unsigned>(site)].acquisitions;
    return n;
}

// free_batch() is free() of each range: bad ones are refused and counted,
// the good ones around them freed.
TEST(FreeBatch, RefusesBadRangesAndFreesTheRest)
{
    for (auto v : Allocator::variants()) {
        ManualEnv env(1);
        auto a = Allocator::create(v, env);
        const Pfn top = a->end_pfn() - 1;
        Pfn p[3];
        for (Pfn &x : p)
            x = a->alloc(2, top, false).pfn;
        const Range batch[] = {{p[0], 2}, {p[0] + 1, 2}, {p[1], 2},
                               {p[0], 2}, {p[2], 1},     {p[2], 2}};
        EXPECT_EQ(a->free_batch(batch), 3u) << v;
        EXPECT_EQ(counter(*a, Counter::bad_free), 3u) << v;
        EXPECT_EQ(counter(*a, Counter::free_calls), 6u) << v;
        for (Pfn x : p)
            EXPECT_EQ(a->free(x, 2), Status::not_allocated) << v;  // all three were freed
        EXPECT_EQ(a->free_batch({}), 0u) << v;
    }
}

// viommu-lab takes its CPU lock once for a flush policy's whole batch.
TEST(FreeBatch, ViommuLabTakesTheCpuLockOnce)
{
    ManualEnv env(2);
    auto a = Allocator::create("viommu-lab", env);
    std::vector<Range> rs;
    for (int i = 0; i < 300; i++)
        rs.push_back({a->alloc(1 << (i % 3), a->end_pfn() - 1, false).pfn, 1u << (i % 3)});
    rs.push_back({a->alloc(64, a->end_pfn() - 1, false).pfn, 64});  // not cacheable
    const uint64_t before = acquired(*a, "lab_cpu", Site::rcache_put);
    EXPECT_EQ(a->free_batch(rs), 0u);
    EXPECT_EQ(acquired(*a, "lab_cpu", Site::rcache_put), before + 1);
    EXPECT_EQ(counter(*a, Counter::rbtree_frees), 1u);
    a->flush_caches();
    EXPECT_EQ(a->tree_nodes(), 0u);  // everything went back whole
}

// viommu-lab: once the 32-bit space is exhausted and this CPU caches
// nothing below 4 GiB, a 32-bit (SAC) attempt fails without any lock; a
// range freed below 4 GiB on this CPU is found again through its lock.
TEST(ViommuLab, Sac32BitFailureTakesNoLock)
{
    ManualEnv env(2);
    Config c;
    c.granule_shift = shift64k;
    c.end_pfn = (Pfn{1} << 16) + 4096;
    auto a = Allocator::create("viommu-lab", env, c);
    const Pfn dma32 = a->dma_32bit_pfn();
    Pfn last = 0;
    for (AllocResult r; (r = a->alloc(1, dma32, false)).ok();)
        last = r.pfn;
    auto locks = [&] {
        uint64_t n = 0;
        for (const InstrumentedLock *l : a->locks())
            for (const SiteLockStats &s : l->stats())
                n += s.acquisitions;
        return n;
    };
    const uint64_t before = locks(), fast = counter(*a, Counter::fast_fail_32bit);
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(a->alloc(1, dma32, false).status, Status::no_space);
    EXPECT_EQ(locks(), before);
    EXPECT_EQ(counter(*a, Counter::fast_fail_32bit), fast + 100);
    ASSERT_EQ(a->free(last, 1), Status::ok);
    env.set_cpu(1);  // cached on CPU 0 only
    EXPECT_EQ(a->alloc(1, dma32, false).status, Status::no_space);
    env.set_cpu(0);
    AllocResult again = a->alloc(1, dma32, false);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.pfn, last);
    EXPECT_TRUE(a->alloc(1, a->end_pfn() - 1, false).ok());
}

}  // namespace
}  // namespace viommu::iova::test
