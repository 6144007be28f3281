// SPDX-License-Identifier: GPL-2.0-or-later
// Each variant's characteristic behaviour, pinned.
#include <array>
#include <cstddef>
#include <gtest/gtest.h>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "rbtree.hpp"

namespace viommu::iova::test {
namespace {

struct Fixture {
    explicit Fixture(std::string_view v, Config cfg = {}, unsigned ncpus = 2) : env(ncpus)
    {
        a = Allocator::create(v, env, cfg);
    }
    ManualEnv env;
    std::unique_ptr<Allocator> a;
    uint64_t nodes() const { return counter(*a, Counter::nodes_visited); }
};

// n live 64-bit ranges packed at the top: 4.4 walks all of them from
// rb_last() for the next one, 4.15 starts at cached_node.
uint64_t nodes_for_64bit_alloc(std::string_view v, unsigned live)
{
    Fixture f(v);
    const Pfn top = f.a->end_pfn() - 1;
    for (unsigned i = 0; i < live; i++)
        EXPECT_TRUE(f.a->alloc(64, top, false).ok());
    uint64_t before = f.nodes();
    EXPECT_TRUE(f.a->alloc(64, top, false).ok());
    return f.nodes() - before;
}

TEST(Variants, Linux44WalksEveryNodeFor64BitRequests)
{
    EXPECT_GE(nodes_for_64bit_alloc("linux-4.4", 2000), 2000u);
    // The descent to insert the new node is O(log n) for both.
    EXPECT_LE(nodes_for_64bit_alloc("linux-4.15", 2000), 40u);
}

// 32-bit space full, then 64-bit requests (what the dma layer does after
// the SAC attempt fails): same contrast.
TEST(Variants, Linux44IsLinearWhen32BitSpaceIsFull)
{
    for (auto v : {"linux-4.4", "linux-4.15"}) {
        Fixture f(v);
        const Pfn dma32 = f.a->dma_32bit_pfn();
        while (f.a->alloc(4096, dma32, false).ok()) {
        }
        for (uint64_t s = 2048; s; s /= 2)
            (void)f.a->alloc(s, dma32, false);
        for (int i = 0; i < 1000; i++)
            ASSERT_TRUE(f.a->alloc(1 << 6, f.a->end_pfn() - 1, false).ok());
        uint64_t before = f.nodes();
        ASSERT_FALSE(f.a->alloc(1, dma32, false).ok());
        ASSERT_TRUE(f.a->alloc(1 << 6, f.a->end_pfn() - 1, false).ok());
        uint64_t visited = f.nodes() - before;
        if (std::string_view(v) == "linux-4.4")
            EXPECT_GE(visited, 1000u) << v;
        else
            EXPECT_LE(visited, 40u) << v;
    }
}

// cx4-64k-32bit-exhausted (Nate Watterson's CX4 NIC): with the 32-bit space filled top-down, the
// 32-bit cached node is the lowest node, so a failed 32-bit attempt stops after the rb_prev() climb
// from it (O(log n)) in 4.4-style code and in 4.15. Once a 32-bit range is freed to the tree (an
// rcache flush, a full depot) and reallocated, the cached node sits at that hole and every later
// failed attempt walks all nodes below it (O(n)), in both, as the kernel does until 5.0's
// max32_alloc_size.  64-page ranges bypass the rcache.
TEST(Variants, Failed32BitAttemptIsShortUntilA32BitFreeMovesTheCachedNode)
{
    for (auto v : {"linux-4.4", "linux-4.7", "linux-4.15"}) {
        Fixture f(v);
        const Pfn dma32 = f.a->dma_32bit_pfn();
        std::vector<Pfn> live;
        for (AllocResult r; (r = f.a->alloc(64, dma32, false)).ok();)
            live.push_back(r.pfn);
        ASSERT_GT(live.size(), 16000u) << v;
        uint64_t before = f.nodes();
        ASSERT_FALSE(f.a->alloc(64, dma32, false).ok());
        EXPECT_LE(f.nodes() - before, 64u) << v;
        ASSERT_EQ(f.a->free(live[10], 64), Status::ok);
        ASSERT_TRUE(f.a->alloc(64, dma32, false).ok());
        before = f.nodes();
        ASSERT_FALSE(f.a->alloc(64, dma32, false).ok());
        EXPECT_GE(f.nodes() - before, live.size() - 20) << v;
    }
}

// One CPU's virtual clock that counts tree updates and node visits apart.
struct CountingEnv final : ManualEnv {
    CountingEnv() : ManualEnv(1) {}
    void charge(Work w, uint64_t n) override { (w == Work::tree_update ? updates : visits) += n; }
    uint64_t updates = 0, visits = 0;
};

// A failed walk inserts nothing: it is charged its node visits only,
// not a tree update (alloc_iova() allocates and frees the struct iova
// outside the lock).
TEST(Variants, FailedTreeAllocationIsChargedNoTreeUpdate)
{
    for (auto v : {"linux-4.4", "linux-4.15", "linux-5.13"}) {
        CountingEnv env;
        Config c;
        c.end_pfn = 65;
        auto a = Allocator::create(v, env, c);
        while (a->alloc(64, c.end_pfn - 1, false).ok()) {
        }
        uint64_t u = env.updates;
        ASSERT_FALSE(a->alloc(64, c.end_pfn - 1, false).ok());
        EXPECT_EQ(env.updates, u) << v;
    }
}

// 4.4 free_iova() is find_iova() and __free_iova(), each in its own hold
// of iova_rbtree_lock: the lookup walks from the root and changes
// nothing; the erase is the free's one tree update.
TEST(Variants, FreeIova44IsALookupHoldThenAnEraseHold)
{
    CountingEnv env;
    auto a = Allocator::create("linux-4.4", env);
    std::vector<Pfn> pfns;
    for (int i = 0; i < 100; i++)
        pfns.push_back(a->alloc(1, a->end_pfn() - 1, false).pfn);
    const uint64_t updates = env.updates, visits = env.visits;
    for (Pfn p : pfns)
        ASSERT_EQ(a->free(p, 1), Status::ok);
    EXPECT_EQ(env.updates - updates, 100u);
    EXPECT_GE(env.visits - visits, 100u);  // at least the node itself, per lookup
    SiteLockStats s;
    EXPECT_EQ(site_stats(*a, "iova_rbtree_lock", Site::lookup, s).acquisitions, 100u);
    EXPECT_EQ(site_stats(*a, "iova_rbtree_lock", Site::free, s).acquisitions, 100u);
    EXPECT_EQ(a->tree_nodes(), 0u);
}

// free_cpu_cached_iovas() takes iova_rbtree_lock for both magazines of
// every size class, empty or not: a flush of empty caches still costs
// 2 x 6 tree lock acquisitions per CPU.
TEST(Variants, RcacheFlushTakesTheTreeLockPerMagazineEvenWhenEmpty)
{
    for (auto v : {"linux-4.7", "linux-4.15", "linux-6.7"}) {
        Config c;
        c.end_pfn = 129;  // one 64-page range fits: [64, 127]
        Fixture f(v, c, 2);
        ASSERT_TRUE(f.a->alloc(64, c.end_pfn - 1, false).ok());
        ASSERT_FALSE(f.a->alloc(64, c.end_pfn - 1, true).ok());
        EXPECT_EQ(counter(*f.a, Counter::rcache_flush_all), 1u) << v;
        SiteLockStats s;
        EXPECT_EQ(site_stats(*f.a, "iova_rbtree_lock", Site::rcache_flush, s).acquisitions,
                  2u * 6u * 2u)
            << v;
    }
}

// One CPU frees (2 + 32 + 1) magazines' worth: 4.7 finds the depot full
// and frees a magazine to the tree under iova_rbtree_lock; 6.7 keeps it.
TEST(Variants, FullDepotFreesUnderTreeLockIn47Not67)
{
    for (auto v : {"linux-4.7", "linux-6.7"}) {
        Fixture f(v, {}, 1);
        Model m;
        const unsigned n = 128 * 36;
        for (unsigned i = 0; i < n; i++) {
            AllocResult r = f.a->alloc(1, f.a->end_pfn() - 1, false);
            ASSERT_TRUE(r.ok());
            ASSERT_EQ(m.add(r.pfn, 1), "");
        }
        while (!m.empty()) {
            Range r = m.take(0);
            ASSERT_EQ(f.a->free(r.pfn, 1), Status::ok);
        }
        SiteLockStats s;
        site_stats(*f.a, "iova_rbtree_lock", Site::free_batch, s);
        if (std::string_view(v) == "linux-4.7") {
            EXPECT_GE(counter(*f.a, Counter::rcache_put_tree), 1u);
            EXPECT_GE(s.acquisitions, 1u);
        } else {
            EXPECT_EQ(counter(*f.a, Counter::rcache_put_tree), 0u);
            EXPECT_EQ(s.acquisitions, 0u);
            EXPECT_GT(counter(*f.a, Counter::rcache_put_depot), 32u);
        }
    }
}

// 6.7: the depot is trimmed one magazine per 100 ms down to ncpus.
TEST(Variants, Linux67TrimsDepotOverTime)
{
    Fixture f("linux-6.7", {}, 1);
    std::vector<Pfn> pfns;
    for (unsigned i = 0; i < 127 * 10; i++)
        pfns.push_back(f.a->alloc(1, f.a->end_pfn() - 1, false).pfn);
    for (Pfn p : pfns)
        ASSERT_EQ(f.a->free(p, 1), Status::ok);
    size_t nodes = f.a->tree_nodes();
    EXPECT_EQ(nodes, pfns.size());
    f.env.advance(99'000'000);
    EXPECT_EQ(counter(*f.a, Counter::depot_trims), 0u);
    f.env.advance(2'000'000);
    EXPECT_EQ(counter(*f.a, Counter::depot_trims), 1u);
    f.env.advance(2'000'000'000);
    // 8 magazines in the depot, trimmed to one (ncpus = 1).
    EXPECT_EQ(counter(*f.a, Counter::depot_trims), 7u);
    EXPECT_EQ(f.a->tree_nodes(), nodes - 7 * 127);
}

// Fill the 32-bit space with 64-page blocks and then 48 + 16 pages to
// leave a hole above cached32_node.
void fill_32bit_leaving_hole_above_cache(Allocator &a)
{
    const Pfn dma32 = a.dma_32bit_pfn();
    std::vector<Pfn> blocks;
    for (;;) {
        AllocResult r = a.alloc(64, dma32, false);
        if (!r.ok())
            break;
        blocks.push_back(r.pfn);
    }
    ASSERT_GT(blocks.size(), 10u);
    for (uint64_t s = 32; s; s /= 2)
        ASSERT_TRUE(a.alloc(s, dma32, false).ok());
    ASSERT_EQ(a.free(blocks[5], 64), Status::ok);
    // Size-aligned to 64, the 48 pages land low in the hole: 16 stay free
    // above the new cached32_node.
    AllocResult r = a.alloc(48, dma32, false);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.pfn, blocks[5]);
}

Config mb_pages()
{
    Config c;
    c.granule_shift = 20;  // 1 MiB pages: 4095 pfns below 4 GiB
    c.end_pfn = Pfn{1} << 16;
    return c;
}

TEST(Variants, Linux511RetriesFromLastNode)
{
    Fixture old("linux-4.15", mb_pages()), rt("linux-5.11", mb_pages());
    fill_32bit_leaving_hole_above_cache(*old.a);
    fill_32bit_leaving_hole_above_cache(*rt.a);
    EXPECT_EQ(old.a->alloc(16, old.a->dma_32bit_pfn(), false).status, Status::no_space);
    uint64_t retries = counter(*rt.a, Counter::retry_from_last);
    AllocResult r = rt.a->alloc(16, rt.a->dma_32bit_pfn(), false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(counter(*rt.a, Counter::retry_from_last), retries + 1);
    EXPECT_EQ(counter(*rt.a, Counter::restart_walks), 0u);
}

// 5.13 restarts at iova_find_limit(): with many 64-bit nodes the second
// pass of 5.11 walks down through all of them from the anchor.
TEST(Variants, Linux513RestartsAtFindLimit)
{
    uint64_t visited[2];
    int i = 0;
    for (auto v : {"linux-5.11", "linux-5.13"}) {
        Fixture f(v, mb_pages());
        for (int k = 0; k < 2000; k++)
            ASSERT_TRUE(f.a->alloc(1, f.a->end_pfn() - 1, false).ok());
        fill_32bit_leaving_hole_above_cache(*f.a);
        uint64_t before = f.nodes();
        uint64_t restarts = counter(*f.a, Counter::restart_walks);
        ASSERT_TRUE(f.a->alloc(16, f.a->dma_32bit_pfn(), false).ok());
        visited[i++] = f.nodes() - before;
        EXPECT_EQ(counter(*f.a, Counter::restart_walks) - restarts,
                  std::string_view(v) == "linux-5.13");
    }
    EXPECT_GE(visited[0], 2000u);
    EXPECT_LE(visited[1], 200u);
}

// 5.0: once a 32-bit request of some size failed, larger or equal ones
// fail without walking until a 32-bit range is freed.
TEST(Variants, Linux50FailsFastWhen32BitSpaceIsFull)
{
    Fixture f("linux-5.0", mb_pages()), old("linux-4.15", mb_pages());
    for (Fixture *x : {&f, &old}) {
        std::vector<Pfn> v;
        for (AllocResult r; (r = x->a->alloc(64, x->a->dma_32bit_pfn(), false)).ok();)
            v.push_back(r.pfn);
        x->a->alloc(32, x->a->dma_32bit_pfn(), false);  // fill the low remainder
        ASSERT_FALSE(x->a->alloc(64, x->a->dma_32bit_pfn(), false).ok());
        uint64_t before = x->nodes();
        uint64_t fast = counter(*x->a, Counter::fast_fail_32bit);
        ASSERT_FALSE(x->a->alloc(128, x->a->dma_32bit_pfn(), false).ok());
        if (x == &f) {
            EXPECT_EQ(x->nodes() - before, 0u);
            EXPECT_EQ(counter(*x->a, Counter::fast_fail_32bit), fast + 1);
        } else {
            EXPECT_GT(x->nodes() - before, 0u);
        }
        ASSERT_EQ(x->a->free(v[3], 64), Status::ok);
        EXPECT_TRUE(x->a->alloc(64, x->a->dma_32bit_pfn(), false).ok());
    }
}

// 5.0's max32_alloc_size does not look at the limit that failed: a
// request that could not fit under a low limit makes every later 32-bit
// request of that size fail fast until a 32-bit range reaches the tree.
TEST(Variants, Linux50LowLimitFailurePoisonsMax32)
{
    Fixture k("linux-5.0"), lab("viommu-lab");
    for (Fixture *f : {&k, &lab}) {
        ASSERT_EQ(f->a->alloc(64, 40, false).status, Status::no_space);
        AllocResult r = f->a->alloc(64, f->a->dma_32bit_pfn(), false);
        EXPECT_EQ(r.ok(), f == &lab);
    }
    EXPECT_EQ(counter(*k.a, Counter::fast_fail_32bit), 1u);
}

// 4.7 checks only the top pfn of a magazine against the limit; 4.15 scans.
TEST(Variants, MagazineLimitCheck)
{
    for (auto v : {"linux-4.7", "linux-4.15"}) {
        Fixture f(v, {}, 1);
        Pfn low = f.a->alloc(1, f.a->dma_32bit_pfn(), false).pfn;
        Pfn high = f.a->alloc(1, f.a->end_pfn() - 1, false).pfn;
        ASSERT_EQ(f.a->free(low, 1), Status::ok);
        ASSERT_EQ(f.a->free(high, 1), Status::ok);  // on top of the magazine
        uint64_t hits = counter(*f.a, Counter::rcache_hit_loaded);
        AllocResult r = f.a->alloc(1, f.a->dma_32bit_pfn(), false);
        ASSERT_TRUE(r.ok());
        if (std::string_view(v) == "linux-4.7") {
            EXPECT_EQ(counter(*f.a, Counter::rcache_hit_loaded), hits);
            EXPECT_NE(r.pfn, low);
        } else {
            EXPECT_EQ(counter(*f.a, Counter::rcache_hit_loaded), hits + 1);
            EXPECT_EQ(r.pfn, low);
        }
    }
}

// 5.11 also frees the depots when an allocation fails; 4.15 only the
// per-CPU magazines, so space parked in the depot stays unusable.
TEST(Variants, FailureFlushesDepotFrom511)
{
    for (auto v : {"linux-4.15", "linux-5.11"}) {
        Config c;
        c.end_pfn = 128 * 8 + 1;
        Fixture f(v, c, 1);
        std::vector<Pfn> p;
        for (AllocResult r; (r = f.a->alloc(1, c.end_pfn - 1, false)).ok();)
            p.push_back(r.pfn);
        for (Pfn x : p)
            ASSERT_EQ(f.a->free(x, 1), Status::ok);
        // 1024 pfns: loaded + prev + 6 magazines in the depot; empty the
        // per-CPU magazines so only the depot holds free space.
        for (int i = 0; i < 256; i++)
            ASSERT_TRUE(f.a->alloc(1, c.end_pfn - 1, false).ok());
        AllocResult r = f.a->alloc(2, c.end_pfn - 1, true);
        EXPECT_EQ(counter(*f.a, Counter::rcache_flush_all), 1u);
        EXPECT_EQ(r.ok(), std::string_view(v) == "linux-5.11") << v;
    }
}

// Shaohua Li's per-CPU batch (2016): one tree lock hold per 32 allocations.
TEST(Variants, PercpuBatchRefillsInBatches)
{
    Fixture f("percpu-batch", {}, 1);
    for (int i = 0; i < 320; i++)
        ASSERT_TRUE(f.a->alloc(1, f.a->end_pfn() - 1, false).ok());
    SiteLockStats s;
    EXPECT_EQ(site_stats(*f.a, "iova_rbtree_lock", Site::insert, s).acquisitions, 10u);
    EXPECT_EQ(site_stats(*f.a, "iova_rbtree_lock", Site::alloc, s).acquisitions, 0u);
}

// viommu-lab: the tree lock is taken once per chunk of 128 ranges, and a
// full 32-bit zone fails without taking any shared lock.
TEST(Variants, ViommuLabAvoidsTheTreeLock)
{
    Fixture f("viommu-lab", {}, 2);
    std::vector<Pfn> v;
    for (int i = 0; i < 1280; i++)
        v.push_back(f.a->alloc(1, f.a->end_pfn() - 1, false).pfn);
    SiteLockStats s;
    EXPECT_EQ(site_stats(*f.a, "iova_rbtree_lock", Site::range_refill, s).acquisitions, 10u);
    for (Pfn p : v)
        ASSERT_EQ(f.a->free(p, 1), Status::ok);
    uint64_t tree_locks = 0;
    for (unsigned site = 0; site < static_cast<unsigned>(Site::count_); site++)
        tree_locks += site_stats(*f.a, "iova_rbtree_lock", static_cast<Site>(site), s).acquisitions;
    EXPECT_EQ(tree_locks, 10u);
}

TEST(Variants, ViommuLabFailsFastOnFull32BitZone)
{
    Fixture f("viommu-lab", mb_pages(), 2);
    const Pfn dma32 = f.a->dma_32bit_pfn();
    while (f.a->alloc(64, dma32, false).ok()) {
    }
    for (uint64_t s = 32; s; s /= 2)
        while (f.a->alloc(s, dma32, false).ok()) {
        }
    SiteLockStats s;
    auto tree_locks = [&] {
        uint64_t n = 0;
        for (unsigned site = 0; site < static_cast<unsigned>(Site::count_); site++)
            n += site_stats(*f.a, "iova_rbtree_lock", static_cast<Site>(site), s).acquisitions;
        return n;
    };
    uint64_t before = tree_locks();
    uint64_t fast = counter(*f.a, Counter::fast_fail_32bit);
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(f.a->alloc(1, dma32, false).status, Status::no_space);
    EXPECT_EQ(tree_locks(), before);
    EXPECT_EQ(counter(*f.a, Counter::fast_fail_32bit), fast + 100);
    EXPECT_TRUE(f.a->alloc(1, f.a->end_pfn() - 1, false).ok());
}

// Found by tests/fuzz (iova target): a range the tree handed out whole,
// cached in a class-1 magazine, sat at the 256-aligned base of a retired
// class-0 chunk; the cache flush took it for one of that chunk's ranges
// and gave the whole chunk back to the tree with a range in it still live
// (and leaked the cached one).
TEST(Variants, LabFlushMatchesCachedRangesToChunksOfTheirClass)
{
    ManualEnv env(1);
    auto a = Allocator::create("viommu-lab", env);
    AllocResult pair = a->alloc(2, 0x7cff);  // below 4 GiB: from the tree
    ASSERT_TRUE(pair.ok());
    AllocResult one = a->alloc(1, Allocator::pfn_32bit(12));  // carves a chunk
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(pair.pfn & ~Pfn{0xff}, one.pfn) << "the layout this test needs";
    ASSERT_EQ(a->free(pair.pfn, 2), Status::ok);
    a->flush_caches();
    Model m;
    ASSERT_EQ(m.add(one.pfn, 1), "");
    for (int i = 0; i < 300; i++) {
        AllocResult x = a->alloc(1 + i % 2, Allocator::pfn_32bit(12));
        ASSERT_TRUE(x.ok());
        ASSERT_EQ(m.add(x.pfn, 1 + i % 2), "") << "i " << i;
    }
}

// Found by tests/fuzz (iova target, the fixed-seed replay): a retired
// chunk's uncarved top went back to the tree, which then handed out a
// range of the chunk's class there whole; cached, that range aligned down
// to the chunk's base and the cache flush counted it as the chunk's one
// carved range, gave the whole chunk back to the tree with its carved
// range still live (and leaked the cached one).
TEST(Variants, LabFlushCountsOnlyCarvedRangesOfARetiredChunk)
{
    ManualEnv env(1);
    auto a = Allocator::create("viommu-lab", env);
    AllocResult one = a->alloc(1, Allocator::pfn_32bit(12));  // carves a chunk
    ASSERT_TRUE(one.ok());
    a->flush_caches();                             // retires it, one range carved
    AllocResult top = a->alloc(1, one.pfn + 126);  // below the zone's top: from the tree
    ASSERT_TRUE(top.ok());
    ASSERT_EQ(top.pfn & ~Pfn{0x7f}, one.pfn) << "the layout this test needs";
    ASSERT_NE(top.pfn, one.pfn);
    ASSERT_EQ(a->free(top.pfn, 1), Status::ok);
    a->flush_caches();
    EXPECT_EQ(a->reserve(one.pfn, one.pfn), Status::busy);
    Model m;
    ASSERT_EQ(m.add(one.pfn, 1), "");
    for (int i = 0; i < 300; i++) {
        AllocResult x = a->alloc(1, one.pfn + 126);
        if (!x.ok())
            break;
        ASSERT_EQ(m.add(x.pfn, 1), "") << "i " << i;
    }
}

// A cached range is handed out only if it fits under the limit: 6.1's
// iova_rcache_get() pops with limit_pfn - size, so a two-page range whose
// second page lies above the limit stays in the magazine.  4.7 takes the
// top range only if it starts below the limit (top >= limit: none).
TEST(Variants, CachedRangeMustFitUnderTheLimit)
{
    for (auto v : {"linux-4.15", "linux-5.13", "linux-6.7"}) {
        Fixture f(v, {}, 1);
        AllocResult r = f.a->alloc(2, f.a->dma_32bit_pfn(), false);
        ASSERT_TRUE(r.ok());
        ASSERT_EQ(f.a->free(r.pfn, 2), Status::ok);
        AllocResult again = f.a->alloc(2, r.pfn, false);
        ASSERT_TRUE(again.ok()) << v;
        EXPECT_LE(again.pfn + 1, r.pfn) << v;
    }
    Fixture f("linux-4.7", {}, 1);
    const Pfn dma32 = f.a->dma_32bit_pfn();
    AllocResult r = f.a->alloc(1, dma32, false);
    ASSERT_EQ(r.pfn, dma32);
    ASSERT_EQ(f.a->free(r.pfn, 1), Status::ok);
    uint64_t hits = counter(*f.a, Counter::rcache_hit_loaded);
    AllocResult again = f.a->alloc(1, dma32, false);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(counter(*f.a, Counter::rcache_hit_loaded), hits);
    EXPECT_NE(again.pfn, dma32);
}

// Every failed walk sets max32_alloc_size, whatever its limit (iova.c's
// failure path): once the whole domain is full, a failed allocation
// under the full mask makes the next 32-bit request of that size fail
// fast instead of walking.
TEST(Variants, AFailedWalkAboveFourGiBLowersMax32)
{
    for (auto v : {"linux-5.0", "linux-5.13", "linux-6.7"}) {
        Config c;
        c.start_pfn = 0xfff00;
        c.end_pfn = 0x100000 + 256;  // 256 pages on each side of 4 GiB
        Fixture f(v, c, 1);
        const Pfn top = c.end_pfn - 1;
        unsigned n = 0;
        while (f.a->alloc(1, top, false).ok())
            n++;
        ASSERT_EQ(n, 512u) << v;
        const uint64_t fast = counter(*f.a, Counter::fast_fail_32bit), nodes = f.nodes();
        EXPECT_FALSE(f.a->alloc(1, f.a->dma_32bit_pfn(), false).ok());
        EXPECT_EQ(counter(*f.a, Counter::fast_fail_32bit) - fast, 1u) << v;
        EXPECT_EQ(f.nodes(), nodes) << v;
    }
}

// Until commit 5b61343b5059 ("iommu/iova: Improve 32-bit free space
// estimate", 5.18) only a free that moved cached32_node reset
// max32_alloc_size: a 32-bit range freed below that node left requests of
// the failed size failing fast with the space free.  From then on (6.7
// here) any free below 4 GiB resets it.
TEST(Variants, Max32ResetFollowsTheCached32NodeUntil518)
{
    for (auto v : {"linux-5.13", "linux-6.7"}) {
        Fixture f(v, mb_pages(), 1);
        const Pfn dma32 = f.a->dma_32bit_pfn();
        std::vector<Pfn> live;  // 64-page ranges bypass the rcache
        for (AllocResult r; (r = f.a->alloc(64, dma32, false)).ok();)
            live.push_back(r.pfn);
        ASSERT_GT(live.size(), 20u);
        // a free above the cached node moves it (and resets max32 in both)
        ASSERT_EQ(f.a->free(live[3], 64), Status::ok);
        ASSERT_TRUE(f.a->alloc(64, dma32, false).ok());  // the hole; cached32 there
        ASSERT_FALSE(f.a->alloc(64, dma32, false).ok());
        ASSERT_EQ(f.a->free(live[10], 64), Status::ok);  // below cached32
        const uint64_t fast = counter(*f.a, Counter::fast_fail_32bit);
        AllocResult r = f.a->alloc(64, dma32, false);
        const bool coupled = std::string_view(v) == "linux-5.13";
        EXPECT_EQ(r.ok(), !coupled) << v;
        EXPECT_EQ(counter(*f.a, Counter::fast_fail_32bit) - fast, coupled ? 1u : 0u) << v;
        if (!coupled)
            EXPECT_EQ(r.pfn, live[10]) << v;
    }
}

// free_global_cached_iovas() holds the depot's lock while its magazines
// go back to the tree (6.1 iova.c), so the depot lock's hold at the flush
// covers the tree holds of the depot's magazines.
TEST(Variants, DepotFlushHoldsTheDepotLock)
{
    struct ChargingEnv final : ManualEnv {
        ChargingEnv() : ManualEnv(1) {}
        void charge(Work, uint64_t n) override { advance(10 * n); }
    };
    for (auto v : {"linux-5.11", "linux-5.13", "linux-6.7"}) {
        ChargingEnv env;
        Config c;
        c.ncpus = 1;
        c.end_pfn = c.start_pfn + 128 * 10;  // the loaded, prev and 8 depot magazines
        auto a = Allocator::create(v, env, c);
        std::vector<Pfn> p;
        for (AllocResult r; (r = a->alloc(1, c.end_pfn - 1, false)).ok();)
            p.push_back(r.pfn);
        for (Pfn x : p)
            ASSERT_EQ(a->free(x, 1), Status::ok);
        a->reset_stats();
        ASSERT_TRUE(a->alloc(64, c.end_pfn - 1, true).ok()) << v;  // fails, flushes, retries
        SiteLockStats depot, tree;
        site_stats(*a, "rcache_depot", Site::rcache_flush, depot);
        site_stats(*a, "iova_rbtree_lock", Site::rcache_flush, tree);
        ASSERT_GT(tree.hold_ns.sum, 0u) << v;
        // 8 of the 10 magazines freed at the flush were the depot's
        EXPECT_GE(depot.hold_ns.sum * 10, tree.hold_ns.sum * 7) << v;
    }
}

}  // namespace
}  // namespace viommu::iova::test

using viommu::iova::IovaNode;
using viommu::iova::RbTree;

// docs/cost-model.rst: a walk is charged each node it touches once, and
// a node another CPU wrote since this one last held its line is a line
// transfer, from this socket or the other.
TEST(RbTreeCost, AWalkLoadsEachNodeOnceAndFetchesWhatAnotherCpuWrote)
{
    RbTree t;
    t.begin_walk(0, 0);
    for (uint64_t i = 0; i < 1000; i++)
        t.insert(t.make(2 * i, 2 * i));
    auto walk = [&](unsigned cpu, unsigned socket) {
        t.begin_walk(cpu, socket);
        uint64_t v = t.visits(), f = t.fetched(), fs = t.fetched_socket();
        for (const IovaNode *n = t.last(); n; n = t.prev(n)) {
        }
        return std::array<uint64_t, 3>{t.visits() - v, t.fetched() - f, t.fetched_socket() - fs};
    };
    // rb_last()'s descent and ~2 pointers per step, but each node once
    auto own = walk(0, 0);
    EXPECT_GE(own[0], 999u);
    EXPECT_LE(own[0], 1000u);
    EXPECT_EQ(own[1] + own[2], 0u);  // CPU 0 wrote them all
    auto other = walk(1, 0);
    EXPECT_EQ(other[0], own[0]);
    EXPECT_EQ(other[1], other[0]);  // every line comes from CPU 0
    EXPECT_EQ(other[2], 0u);
    auto again = walk(1, 0);
    EXPECT_EQ(again[1] + again[2], 0u);  // now held by CPU 1 too
    auto remote = walk(8, 1);
    EXPECT_EQ(remote[2], remote[0]);  // across the socket
    auto far = walk(64, 0);
    EXPECT_EQ(far[1], far[0]);  // CPU 64 is not CPU 0
    // CPU 0 inserts: the new node and the nodes the insert relinked or
    // recoloured leave CPU 1's cache, nothing else does
    t.begin_walk(0, 0);
    t.insert(t.make(1001, 1001));
    auto after = walk(1, 0);
    EXPECT_GE(after[1], 2u);
    EXPECT_LT(after[1], 2 * 11u);
    EXPECT_TRUE(t.valid());
}

TEST(RbTreeCost, AnInclusiveCacheServesALineReadSinceItsWrite)
{
    RbTree t(true);
    t.begin_walk(0, 0);
    for (uint64_t i = 0; i < 1000; i++)
        t.insert(t.make(2 * i, 2 * i));
    auto walk = [&](unsigned cpu, unsigned socket) {
        t.begin_walk(cpu, socket);
        uint64_t f = t.fetched(), fs = t.fetched_socket();
        for (const IovaNode *n = t.last(); n; n = t.prev(n)) {
        }
        return std::array<uint64_t, 2>{t.fetched() - f, t.fetched_socket() - fs};
    };
    // The first reader after CPU 0's writes takes every line from CPU 0;
    // a second CPU of that socket finds them clean in its cache.
    auto first = walk(1, 0);
    EXPECT_GE(first[0], 999u);
    auto second = walk(2, 0);
    EXPECT_EQ(second[0] + second[1], 0u);
    // The other socket has no copy: its first reader fetches each line
    // across, and its second reader finds them there.
    auto remote = walk(8, 1);
    EXPECT_EQ(remote[1], first[0]);
    auto remote2 = walk(9, 1);
    EXPECT_EQ(remote2[0] + remote2[1], 0u);
    // A write leaves the line with the writer alone: the nodes CPU 9
    // writes cost CPU 1 a transfer across, and once read they are clean
    // on both sockets.
    t.begin_walk(9, 1);
    t.insert(t.make(2001, 2001));
    auto after1 = walk(1, 0);
    EXPECT_EQ(after1[0], 0u);
    EXPECT_GE(after1[1], 2u);
    auto after2 = walk(2, 0);
    EXPECT_EQ(after2[0] + after2[1], 0u);
    auto after8 = walk(8, 1);
    EXPECT_EQ(after8[0] + after8[1], 0u);
    EXPECT_TRUE(t.valid());
}

// A tree without the line bookkeeping (real threads) counts the same
// visits per walk, fetches nothing, and its walks write to no node: the
// kernel's walks only read, so other CPUs keep their clean copies.
TEST(RbTreeCost, WithoutLineTrackingAWalkCountsTheSameAndWritesNoNode)
{
    RbTree tracked, plain(false, false);
    std::mt19937_64 rng(7);
    std::vector<IovaNode *> live[2];
    for (int i = 0; i < 4000; i++) {
        uint64_t pfn = rng() % 100000;
        bool erase = !live[0].empty() && rng() % 3 == 0;
        size_t victim = erase ? rng() % live[0].size() : 0;
        unsigned cpu = unsigned(rng() % 8);
        for (int k = 0; k < 2; k++) {
            RbTree &t = k ? plain : tracked;
            t.begin_walk(cpu, cpu / 4);
            if (erase) {
                t.erase(live[k][victim]);
                live[k].erase(live[k].begin() + std::ptrdiff_t(victim));
            } else if (!t.find(pfn)) {
                IovaNode *n = t.make(pfn, pfn);
                t.insert(n);
                live[k].push_back(n);
            }
        }
    }
    auto walk = [](const RbTree &t, unsigned cpu, uint64_t from) {
        t.begin_walk(cpu, cpu / 4);
        uint64_t v = t.visits();
        for (const IovaNode *n = t.lower_bound(from); n; n = t.prev(n)) {
        }
        return t.visits() - v;
    };
    for (unsigned cpu = 0; cpu < 8; cpu++) {
        uint64_t from = rng() % 100000;
        EXPECT_EQ(walk(plain, cpu, from), walk(tracked, cpu, from)) << "cpu " << cpu;
    }
    EXPECT_EQ(plain.visits(), tracked.visits());
    EXPECT_GT(tracked.fetched() + tracked.fetched_socket(), 0u);
    EXPECT_EQ(plain.fetched() + plain.fetched_socket(), 0u);
    for (const IovaNode *n : live[1]) {
        EXPECT_EQ(n->walk, 0u);
        EXPECT_TRUE(n->sharers.none());
        EXPECT_EQ(n->sockets, 0u);
    }
    EXPECT_TRUE(plain.valid());
}
