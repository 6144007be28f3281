// SPDX-License-Identifier: GPL-2.0-or-later
// The dma-iommu layer (SAC trick, 6.6 once-per-device, forcedac) and the
// unmap/flush policies, on a virtual clock.
#include <gtest/gtest.h>

#include "helpers.hpp"

namespace viommu::iova::test {
namespace {

constexpr uint64_t page = 4096;

// 32-bit space completely full; 4096 pages free above it.
struct FullBelow4G {
    explicit FullBelow4G(std::string_view v, unsigned ncpus = 2) : env(ncpus)
    {
        a = full_below_4g(v, env);
        fq = FlushPolicy::create("strict", *a, inv);
    }
    ManualEnv env;
    std::unique_ptr<Allocator> a;
    CountingFlusher inv;
    std::unique_ptr<FlushPolicy> fq;
};

TEST(Dma, SacFirstThenFullMask)
{
    ManualEnv env(1);
    auto a = Allocator::create("linux-5.13", env);
    CountingFlusher inv;
    auto fq = FlushPolicy::create("strict", *a, inv);
    DmaDomain dom(*a, *fq);
    DmaDevice pci{~0ull, true, false}, platform{~0ull, false, false};
    MapResult m = dom.map(pci, 1500);
    ASSERT_TRUE(m.ok());
    EXPECT_LT(m.iova, 1ull << 32);
    MapResult p = dom.map(platform, 1500);
    ASSERT_TRUE(p.ok());
    EXPECT_GE(p.iova, 1ull << 32);
    EXPECT_EQ(dom.pages_for(3 * page), 4u);  // rounded for the rcache
    EXPECT_EQ(dom.pages_for(33 * page), 33u);
}

TEST(Dma, ForcedacSkips32Bit)
{
    ManualEnv env(1);
    auto a = Allocator::create("linux-5.13", env);
    CountingFlusher inv;
    auto fq = FlushPolicy::create("strict", *a, inv);
    DmaDomain dom(*a, *fq, DmaOptions{.forcedac = true});
    DmaDevice pci;
    MapResult m = dom.map(pci, page);
    ASSERT_TRUE(m.ok());
    EXPECT_GE(m.iova, 1ull << 32);
    EXPECT_EQ(counter(*a, Counter::failed_32bit), 0u);
}

// The SAC attempt does not flush the caches; the full-mask attempt does,
// and that is what finds the page another CPU holds in its magazine.
TEST(Dma, SacRetryFlushesRcache)
{
    for (auto v : {"linux-4.7", "linux-4.15", "linux-5.13", "linux-6.7"}) {
        FullBelow4G f(v);
        // Take the 4096 pages above 4 GiB too, then park one on CPU 1.
        ASSERT_TRUE(f.a->alloc(4096, f.a->end_pfn() - 1, false).ok()) << v;
        f.env.set_cpu(1);
        // Give [2048, 4095] back and fill it again but for one page, which
        // CPU 1 then parks in its magazine.
        ASSERT_EQ(f.a->free(2048, 2048), Status::ok) << v;
        for (uint64_t s = 1024; s; s /= 2)
            ASSERT_TRUE(f.a->alloc(s, f.a->dma_32bit_pfn(), false).ok()) << v;
        Pfn parked = f.a->alloc(1, f.a->dma_32bit_pfn(), false).pfn;
        ASSERT_EQ(parked, 2048u) << v;
        ASSERT_EQ(f.a->free(parked, 1), Status::ok);
        f.env.set_cpu(0);
        DmaDomain dom(*f.a, *f.fq);
        DmaDevice nic;
        MapResult m = dom.map(nic, page);
        ASSERT_TRUE(m.ok()) << v;
        EXPECT_EQ(m.iova, parked * page) << v;
        EXPECT_EQ(counter(*f.a, Counter::failed_32bit), 1u) << v;
        EXPECT_EQ(counter(*f.a, Counter::rcache_flush_all), 1u) << v;
    }
}

// 6.6: after one failed 32-bit attempt a device goes straight to its mask.
TEST(Dma, SacOncePerDevice)
{
    for (bool once : {false, true}) {
        FullBelow4G f("linux-6.7");
        DmaDomain dom(*f.a, *f.fq, DmaOptions{.sac_once = once});
        DmaDevice nic;
        for (int i = 0; i < 10; i++)
            ASSERT_TRUE(dom.map(nic, page).ok());
        EXPECT_EQ(counter(*f.a, Counter::failed_32bit), once ? 1u : 10u);
        EXPECT_EQ(nic.sac_failed, once);
    }
}

struct PolicyFixture {
    PolicyFixture(std::string_view policy, unsigned ncpus = 2) : env(ncpus)
    {
        a = Allocator::create("linux-4.15", env);
        fq = FlushPolicy::create(policy, *a, inv);
    }
    Range map_one() { return {a->alloc(1, a->end_pfn() - 1, false).pfn, 1}; }
    ManualEnv env;
    std::unique_ptr<Allocator> a;
    CountingFlusher inv;
    std::unique_ptr<FlushPolicy> fq;
};

TEST(Flush, StrictInvalidatesEachUnmap)
{
    PolicyFixture f("strict");
    for (int i = 0; i < 10; i++)
        f.fq->unmap(f.map_one());
    EXPECT_EQ(f.inv.ranges.load(), 10u);
    EXPECT_EQ(f.fq->pending(), 0u);
    EXPECT_EQ(counter(*f.a, Counter::free_calls), 10u);
}

TEST(Flush, GlobalListHighWaterMarkAndTimer)
{
    PolicyFixture f("global-list");
    for (int i = 0; i < 250; i++)
        f.fq->unmap(f.map_one());
    EXPECT_EQ(f.inv.alls.load(), 0u);
    EXPECT_EQ(f.fq->pending(), 250u);
    f.fq->unmap(f.map_one());  // 251st: flushes the 250 inline
    EXPECT_EQ(f.inv.alls.load(), 1u);
    EXPECT_EQ(f.fq->pending(), 1u);
    EXPECT_EQ(counter(*f.a, Counter::free_calls), 250u);
    f.env.advance(9'999'999);
    EXPECT_EQ(f.inv.alls.load(), 1u);
    f.env.advance(1);  // 10 ms after the first unmap
    EXPECT_EQ(f.inv.alls.load(), 2u);
    EXPECT_EQ(f.fq->pending(), 0u);
    EXPECT_EQ(counter(*f.a, Counter::unmap_timer_flushes), 1u);
    for (const InstrumentedLock *l : f.fq->locks())
        EXPECT_EQ(l->stats()[static_cast<unsigned>(Site::unmap_add)].acquisitions, 251u);
}

// Every acquisition of iova_rbtree_lock: where, on which CPU, and
// whether async_umap_flush_lock was held then.
class TreeLockRecorder final : public ManualEnv {
public:
    using ManualEnv::ManualEnv;
    struct Hold {
        Site site;
        unsigned cpu;
        bool under_flush_lock;
    };
    void lock_acquired(const InstrumentedLock &l, Site s) override
    {
        if (l.name() == "async_umap_flush_lock")
            flush_lock_held = true;
        else if (l.name() == "iova_rbtree_lock")
            holds.push_back({s, current_cpu(), flush_lock_held});
    }
    void lock_released(const InstrumentedLock &l, Site) override
    {
        if (l.name() == "async_umap_flush_lock")
            flush_lock_held = false;
    }
    size_t count(Site s, bool under_flush_lock) const
    {
        size_t n = 0;
        for (const Hold &h : holds)
            n += h.site == s && h.under_flush_lock == under_flush_lock;
        return n;
    }
    std::vector<Hold> holds;
    bool flush_lock_held = false;
};

// 2008..4.6 intel_unmap(): find_iova() on the unmapping CPU, holding
// iova_rbtree_lock and not async_umap_flush_lock; flush_unmaps() then
// frees each entry in one hold of the tree lock (__free_iova(), no
// lookup) under async_umap_flush_lock.
TEST(Flush, GlobalListLooksUpAtUnmapOutsideTheFlushLock)
{
    TreeLockRecorder env(2);
    auto a = Allocator::create("linux-4.4", env);
    CountingFlusher inv;
    auto fq = FlushPolicy::create("global-list", *a, inv, {.high_water = 8});
    std::vector<Range> rs;
    for (int i = 0; i < 9; i++)
        rs.push_back({a->alloc(1, a->end_pfn() - 1, false).pfn, 1});
    env.holds.clear();
    for (unsigned i = 0; i < 8; i++) {
        env.set_cpu(i % 2);
        fq->unmap(rs[i]);
        ASSERT_EQ(env.holds.size(), i + 1);
        EXPECT_EQ(env.holds.back().site, Site::lookup);
        EXPECT_EQ(env.holds.back().cpu, i % 2);
        EXPECT_FALSE(env.holds.back().under_flush_lock);
    }
    EXPECT_EQ(a->tree_nodes(), 9u);  // queued, not freed
    env.set_cpu(0);
    fq->unmap(rs[8]);  // at the high-water mark: flushes the 8 inline
    EXPECT_EQ(inv.alls.load(), 1u);
    EXPECT_EQ(env.count(Site::lookup, false), 9u);
    EXPECT_EQ(env.count(Site::lookup, true), 0u);
    EXPECT_EQ(env.count(Site::free, true), 8u);
    EXPECT_EQ(env.holds.size(), 17u);
    EXPECT_EQ(a->tree_nodes(), 1u);
    fq->drain();
    EXPECT_EQ(a->tree_nodes(), 0u);
    EXPECT_EQ(counter(*a, Counter::bad_free), 0u);
    // an address that was never mapped: found by no lookup, not queued
    fq->unmap({rs[0].pfn, 1});
    EXPECT_EQ(fq->pending(), 0u);
    EXPECT_EQ(counter(*a, Counter::bad_free), 1u);
}

// A variant whose free takes a pfn and a size (free_iova_fast() from 4.7,
// the percpu-batch patch) has nothing to look up on the unmap path.
TEST(Flush, GlobalListLooksNothingUpForSizedFrees)
{
    for (auto v : {"percpu-batch", "linux-4.7", "linux-5.13"}) {
        TreeLockRecorder env(2);
        auto a = Allocator::create(v, env);
        CountingFlusher inv;
        auto fq = FlushPolicy::create("global-list", *a, inv, {.high_water = 8});
        for (int i = 0; i < 20; i++)
            fq->unmap({a->alloc(1, a->end_pfn() - 1, false).pfn, 1});
        fq->drain();
        EXPECT_EQ(env.count(Site::lookup, false) + env.count(Site::lookup, true), 0u) << v;
        EXPECT_EQ(counter(*a, Counter::free_calls), 20u) << v;
        EXPECT_EQ(counter(*a, Counter::bad_free), 0u) << v;
    }
}

TEST(Flush, PercpuDeferFlushesEveryCpuAtHighWater)
{
    PolicyFixture f("percpu-defer", 3);
    f.env.set_cpu(1);
    for (int i = 0; i < 10; i++)
        f.fq->unmap(f.map_one());
    f.env.set_cpu(0);
    for (int i = 0; i < 250; i++)
        f.fq->unmap(f.map_one());
    EXPECT_EQ(f.inv.alls.load(), 0u);
    f.fq->unmap(f.map_one());
    // CPU 0 and CPU 1 had entries: two flushes; CPU 2's queue was empty.
    EXPECT_EQ(f.inv.alls.load(), 2u);
    EXPECT_EQ(f.fq->pending(), 1u);
    f.env.advance(10'000'000);
    EXPECT_EQ(f.fq->pending(), 0u);
}

TEST(Flush, FlushQueueRingAndTimer)
{
    PolicyFixture f("flush-queue");
    // IOVA_FQ_SIZE 256 slots hold 255 entries (fq_full(): tail + 1 == head)
    for (int i = 0; i < 255; i++)
        f.fq->unmap(f.map_one());
    EXPECT_EQ(f.inv.alls.load(), 0u);
    EXPECT_EQ(f.fq->pending(), 255u);
    f.fq->unmap(f.map_one());  // ring full: domain flush, then free
    EXPECT_EQ(f.inv.alls.load(), 1u);
    EXPECT_EQ(f.fq->pending(), 1u);
    EXPECT_EQ(counter(*f.a, Counter::free_calls), 255u);
    f.env.set_cpu(1);
    f.fq->unmap(f.map_one());
    f.env.advance(10'000'000);  // timer armed once, drains both rings
    EXPECT_EQ(f.inv.alls.load(), 2u);
    EXPECT_EQ(f.fq->pending(), 0u);
    EXPECT_EQ(counter(*f.a, Counter::unmap_timer_flushes), 1u);
}

TEST(Flush, DrainReturnsEverything)
{
    for (auto p : FlushPolicy::policies()) {
        PolicyFixture f(p);
        for (int i = 0; i < 100; i++)
            f.fq->unmap(f.map_one());
        f.fq->drain();
        EXPECT_EQ(f.fq->pending(), 0u) << p;
        EXPECT_EQ(counter(*f.a, Counter::free_calls), 100u) << p;
    }
}

}  // namespace
}  // namespace viommu::iova::test
