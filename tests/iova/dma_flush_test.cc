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
    for (int i = 0; i < 256; i++)
        f.fq->unmap(f.map_one());
    EXPECT_EQ(f.inv.alls.load(), 0u);
    EXPECT_EQ(f.fq->pending(), 256u);
    f.fq->unmap(f.map_one());  // ring full: domain flush, then free
    EXPECT_EQ(f.inv.alls.load(), 1u);
    EXPECT_EQ(f.fq->pending(), 1u);
    EXPECT_EQ(counter(*f.a, Counter::free_calls), 256u);
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
