// SPDX-License-Identifier: GPL-2.0-or-later
// One test per reported case, all with CostModel::standard() and the
// case files' parameters (cases/*.json).  Each asserts the direction and rough
// size of the published effect where the model reproduces it; where it
// does not, the test asserts what the model does show and says why
// (docs/simulation.rst, "Reproduction status").  Published figures:
// cases/published.json.
#include <algorithm>
#include <map>
#include <string>

#include <utility>

#include <gtest/gtest.h>

#include "sim_test_util.hpp"
#include "simulator.hpp"

using namespace viommu::sim;
using viommu::sim::test::cycle_ns;

namespace {

// A case file (cases/NAME.json) with the allocator and flush policy of
// one run and optional overrides; every other parameter is the file's.
struct Case {
    std::string file, allocator, flush, invq = {}, dma = {};
    std::string spinlock = {};  // empty: the file's
    unsigned cpus = 0;
    uint64_t ops = 0;  // measured operations in all
    int warmup = -1;
    Nanos drain_ns = 0;
    std::string config = {};  // a configuration of the file; empty: its parameters alone
};

SimResult run_uncached(const Case &c);

// Deterministic runs: several tests look at the same case, run it once.
SimResult run(const Case &c)
{
    static std::map<std::string, SimResult> done;
    std::string key = c.file + '/' + c.allocator + '/' + c.flush + '/' + c.invq + '/' + c.dma +
                      '/' + std::to_string(c.cpus) + '/' + std::to_string(c.ops) + '/' +
                      std::to_string(c.warmup) + '/' + std::to_string(c.drain_ns) + '/' +
                      c.spinlock + '/' + c.config;
    auto it = done.find(key);
    if (it == done.end())
        it = done.emplace(key, run_uncached(c)).first;
    return it->second;
}

SimResult run_uncached(const Case &c)
{
    SimConfig cfg;
    std::string err;
    EXPECT_TRUE(load_case(c.file, c.config, cfg, &err)) << err;
    auto set = [&](const char *k, const std::string &v) {
        EXPECT_TRUE(cfg.set(k, v, &err)) << err;
    };
    set("allocator", c.allocator);
    set("flush", c.flush);
    if (c.invq == "vtd") {
        set("iommu", "vtd");
    } else if (!c.invq.empty()) {
        set("iommu", "smmuv3");
        set("cmdq", c.invq == "smmu-spinlock"    ? "spinlock"
                    : c.invq == "smmu-fetch-add" ? "fetch-add"
                                                 : "cmpxchg");
    }
    if (!c.dma.empty())
        set("dma", c.dma);
    if (!c.spinlock.empty())
        set("spinlock", c.spinlock);
    if (c.cpus)
        set("cpus", std::to_string(c.cpus));
    if (c.ops)
        set("ops-per-cpu", std::to_string(c.ops / cfg.cpus));
    if (c.warmup >= 0)
        set("warmup", std::to_string(c.warmup));
    if (c.drain_ns)
        set("rcache-drain", std::to_string(c.drain_ns));
    auto r = simulate(cfg, CostModel::standard(), &err);
    EXPECT_TRUE(r) << err;
    EXPECT_EQ(r ? r->failed_maps : 1, 0u);
    return r ? *r : SimResult{};
}

double share(const SimResult &r, std::string_view lock, std::string_view site = {})
{
    return r.spin_fraction_of(lock, site);
}

// memcached-16cpu-xl710: 16 memcached instances on 16 CPUs.
TEST(Memcached16CpuXl710, PercpuBatchIsThrottledByTheGlobalFlushLock)
{
    SimResult r = run({"memcached-16cpu-xl710", "percpu-batch", "global-list"});
    // published 313,161 / 1,088,996 = 29%: reproduced (~29%)
    EXPECT_GT(r.relative, 0.2876 * 0.75);
    EXPECT_LT(r.relative, 0.2876 * 1.25);
    // perf's split of _raw_spin_lock_irqsave: 67.84% intel_unmap
    // (async_umap_flush_lock), 17.54% alloc_iova, 12.85% free_iova_array.
    // Reproduced: the order; the sizes in
    // NotReproducedPercpuBatchSpinShareAndSplit.
    double flush_lock = share(r, "async_umap_flush_lock");
    double alloc = share(r, "iova_rbtree_lock", "insert");
    double free_array = share(r, "iova_rbtree_lock", "free_batch");
    EXPECT_GT(free_array, 0.01);
    EXPECT_GT(flush_lock, alloc);
    EXPECT_GT(alloc, free_array);
}

TEST(Memcached16CpuXl710, NotReproducedPercpuBatchSpinShareAndSplit)
{
    SimResult r = run({"memcached-16cpu-xl710", "percpu-batch", "global-list"});
    // Published: 21.87% of cycles in spinlocks at 29% throughput; the
    // model runs at ~29% and spends ~63% of its CPU time spinning.  A CPU-bound server cannot lose
    // 71% of its throughput with only 22% of its cycles spinning unless the rest of the loss is
    // other work or idle time; memaslap's defaults (1 thread, 16 connections, all to one server) do
    // not say how many requests each instance had outstanding, nor the round trip.  So the
    // published run lost much of its time to costs outside the spinlock profile, to idle time, or
    // spun in other contexts (the line is for the memcached command only),
    // none of which this model separates.  What the 4.x driver does outside its spinlocks is
    // modelled (page-table writes, the qi_submit_sync() wait with
    // interrupts off, flush_unmaps()'s device-IOTLB walks) and is small
    // against that loss.  Of the spin time, async_umap_flush_lock takes
    // ~85% (published 67.84%, just outside 25%), alloc_iova ~12% (17.54%)
    // and free_iova_array ~2.5% (12.85%): the tree lock is the less
    // contended.  Asserted: what the model shows, so a change that moves
    // it shows up.
    EXPECT_GT(r.spin_share, 0.2187 * 2);
    double flush_lock = share(r, "async_umap_flush_lock");
    EXPECT_GT(flush_lock, 0.6784 * 1.2);
    EXPECT_LT(flush_lock, 0.6784 * 1.4);
    EXPECT_LT(share(r, "iova_rbtree_lock", "insert"), 0.1754 * 0.8);
    EXPECT_GT(share(r, "iova_rbtree_lock", "insert"), 0.1754 / 2);
    EXPECT_LT(share(r, "iova_rbtree_lock", "free_batch"), 0.1285 * 0.75);
    EXPECT_GT(share(r, "iova_rbtree_lock", "free_batch"), 0.025 / 2);
}

TEST(Memcached16CpuXl710, MagazinesWithPercpuDeferredFlushAlmostRemoveTheCost)
{
    SimResult mags = run({"memcached-16cpu-xl710", "linux-4.7", "percpu-defer"});
    SimResult batch = run({"memcached-16cpu-xl710", "percpu-batch", "global-list"});
    SimResult stock = run({"memcached-16cpu-xl710", "linux-4.4", "global-list"});
    // published 1,067,586 / 1,088,996 = 98%: reproduced (~93%)
    EXPECT_GT(mags.relative, 0.98 * 0.75);
    EXPECT_LE(mags.relative, 1.0);
    EXPECT_GT(mags.relative, 3 * batch.relative);
    EXPECT_LT(stock.relative, 0.5);
}

TEST(Memcached16CpuXl710, NotReproducedMagazinesSpinShare)
{
    // Published 0.75% of cycles in spinlocks; the model spends ~3.6%: the
    // per-CPU deferred-flush locks, taken by the CPU that flushes every
    // CPU's queue when its own reaches 250 entries, each queue's flush a
    // qi_submit_sync() whose polls pass q_lock between CPUs flushing at
    // the same time.  Asserted: small, but
    // above the published figure by more than 25%.
    SimResult mags = run({"memcached-16cpu-xl710", "linux-4.7", "percpu-defer"});
    EXPECT_LT(mags.spin_share, 0.10);
    EXPECT_GT(mags.spin_share, 0.0075 * 1.25);
    EXPECT_GT(share(mags, "deferred_flush"), 0.5);
}

// ovs-forward-64b: 64-byte forwarding between two NIC ports, 16 CPUs.  Each X540 port
// is its own PCI function with its own domain (own IOVA tree and lock);
// async_umap_flush_lock is global.
TEST(OvsForward64b, GlobalFlushLockCollapsesSmallPacketForwarding)
{
    SimResult r = run({"ovs-forward-64b", "linux-4.4", "global-list"});
    EXPECT_EQ(r.domains, 2u);
    // published ~0.5 of ~10 Mpps = 5% and ~80% of CPU time spinning.
    // Reproduced: about 5.5% (ratio ~1.09) with about 88% of CPU time
    // spinning (ratio ~1.10).
    EXPECT_GT(r.relative, 0.05 * 0.75);
    EXPECT_LT(r.relative, 0.05 * 1.25);
    EXPECT_GT(r.spin_share, 0.80 * 0.75);
    EXPECT_LT(r.spin_share, std::min(1.0, 0.80 * 1.25));
}

TEST(OvsForward64b, SmallFramesLeaveTheirRxBuffersMapped)
{
    // ixgbe copies a 64-byte frame out of its RX buffer and reuses the
    // buffer in place: after the RX rings' set-up, the receiving port's
    // domain sees no map and no unmap, and every unmap is a TX completion.
    SimResult r = run({"ovs-forward-64b", "linux-4.4", "global-list"});
    uint64_t lookups = 0, add_unmaps = 0;
    for (const auto &p : r.profile) {
        if (p.lock == "iova_rbtree_lock" && p.site == "lookup")
            lookups += p.acquisitions;
        if (p.lock == "async_umap_flush_lock" && p.site == "unmap_add")
            add_unmaps += p.acquisitions;
    }
    EXPECT_EQ(lookups, add_unmaps);
    EXPECT_EQ(r.maps, r.transactions);
}

TEST(OvsForward64b, NotReproducedAddUnmapShareOfTheSpin)
{
    // perf: 62.66% of the spinlock time in add_unmap, the report's
    // "highest contention".  Reproduced in kind, not in size: add_unmap is
    // the most contended call site (about 46%), ahead of the allocation
    // walk (~31%) and the lookup (~19%) under the TX port's
    // iova_rbtree_lock, but more than 25% below the published share.  The
    // flush that add_unmap runs every 250 entries frees under the tree
    // lock while the other CPUs' polls still allocate for the frames they
    // receive, so those frees wait too (~4%), and the flush lock's holds
    // grow with them.
    SimResult r = run({"ovs-forward-64b", "linux-4.4", "global-list"});
    double add_unmap = share(r, "async_umap_flush_lock", "unmap_add");
    double alloc = share(r, "iova_rbtree_lock", "alloc");
    double lookup = share(r, "iova_rbtree_lock", "lookup");
    EXPECT_LT(add_unmap, 0.6266 * 0.75);
    EXPECT_GT(add_unmap, 0.6266 / 2);
    EXPECT_GT(add_unmap, alloc);
    EXPECT_GT(alloc, lookup);
    EXPECT_GT(share(r, "iova_rbtree_lock", "free"), 0.02);
    EXPECT_GT(share(r, "async_umap_flush_lock") + share(r, "iova_rbtree_lock"), 0.95);
}

TEST(OvsForward64b, PerCpuDesignsRemoveTheCollapse)
{
    SimResult stock = run({"ovs-forward-64b", "linux-4.4", "global-list"});
    SimResult mags = run({"ovs-forward-64b", "linux-4.7", "percpu-defer"});
    SimResult fq = run({"ovs-forward-64b", "linux-4.15", "flush-queue"});
    EXPECT_GT(mags.relative, 5 * stock.relative);
    EXPECT_GT(fq.relative, 5 * stock.relative);
    EXPECT_GT(fq.relative, mags.relative);
    EXPECT_LT(share(fq, "async_umap_flush_lock"), 1e-9);
}

// hns-dsaf-probe and cx4-64k-32bit-exhausted: 64-bit allocations with the
// 32-bit space full.
TEST(HnsDsafProbe, WalkLengthAndLockHoldFallWithTheCachedNode)
{
    SimResult before = run({"hns-dsaf-probe", "linux-4.7", "strict"});
    SimResult after = run({"hns-dsaf-probe", "linux-4.15", "strict"});
    // O(n) walks from rb_last() vs O(1) from cached_node
    EXPECT_GT(before.nodes_per_alloc, 1000.0);
    EXPECT_LT(after.nodes_per_alloc, 100.0);
    EXPECT_GT(before.mean_hold_ns("iova_rbtree_lock", "alloc"),
              20 * after.mean_hold_ns("iova_rbtree_lock", "alloc"));
    // hns_dsaf probe: ~35 s -> ~1 s (the 1 s mostly unrelated delays);
    // the driver's 65,536 buffers and its 690 ms of delays take 32.9 s
    // before the series (docs/simulation.rst)
    EXPECT_GT(after.throughput, 35 * before.throughput);
    EXPECT_GT(before.elapsed_ns, 32.9e9 / 2);
    EXPECT_LT(before.elapsed_ns, 32.9e9 * 2);
}

TEST(HnsDsafProbe, NotReproducedProbeWithTheSeriesIsItsDelaysAndItsMappings)
{
    // Published: "a mere ~1s, mostly of unrelated mdelay()s".  The case
    // counts the 4.14 driver's busy-waits on the probe path, 690 ms
    // (cpu-ns-once); with them the 65,536 mappings, ~46 ms with the
    // series, make ~0.74 s: 26% short of the ~1 s, whose rest the report
    // does not itemise (docs/simulation.rst).
    SimResult after = run({"hns-dsaf-probe", "linux-4.15", "strict"});
    EXPECT_GT(after.elapsed_ns, 0.690e9 + 0.02e9);
    EXPECT_LT(after.elapsed_ns, 0.75e9);
    EXPECT_GT(double(cycle_ns(after, "work")), 0.9 * after.elapsed_ns);
}

TEST(HnsDsafProbe, NotReproducedShareOfProbeTimeUnderTheLock)
{
    // Published: ~76% of the 35 s probe under the lock in alloc_iova().
    // The model's probe does nothing but map (100 ns of driver work per
    // mapping, an assumption) and wait out the driver's 690 ms of
    // mdelay(), so ~98% of it is under the lock: the other 24% (8 s of
    // unrelated probe work) is not modelled.
    SimResult before = run({"hns-dsaf-probe", "linux-4.7", "strict"});
    double held = 0;
    for (const auto &p : before.profile)
        if (p.lock == "iova_rbtree_lock" && p.site == "alloc")
            held += double(p.hold_ns);
    double share_held = held / (before.elapsed_ns * before.cpus);
    EXPECT_GT(share_held, 0.76 * 1.25);
    EXPECT_LE(share_held, 1.0);
}

Case nic(std::string allocator, std::string dma)
{
    // The workload's own warm-up and window for every variant.  (A short
    // window for the flushing cases used to end before any unmapped IOVA
    // had left the flush queue: 4.15's flushes were then empty and its
    // failed 32-bit walks O(log n), while 4.7's window, ~1000x longer,
    // saw timers, frees and O(n) walks: two regimes compared.)
    // The reporter's 2017 arm64 kernels had ticket spinlocks (the file's
    // setting); a later generation run here has queued ones (arm64 from 4.19).
    bool reported = allocator == "linux-4.7" || allocator == "linux-4.15";
    return {"cx4-64k-32bit-exhausted", std::move(allocator), "flush-queue", "vtd", std::move(dma),
            reported ? "" : "queued"};
}

TEST(Cx4_64kThirtyTwoBitExhausted, RcacheFlushOnEveryFailed32BitAttemptIsPathological)
{
    // published: < 10% of passthrough, about 2x better with the series
    SimResult old_code = run(nic("linux-4.7", "sac-flush"));
    SimResult series = run(nic("linux-4.15", "sac-flush"));
    EXPECT_LT(old_code.relative, 0.10);
    EXPECT_LT(series.relative, 0.10);
    EXPECT_GT(series.rcache_flushes, 0u);
    EXPECT_GT(old_code.rcache_flushes, 0u);
}

TEST(Cx4_64kThirtyTwoBitExhausted, TheSeriesGainsButStaysBoundByTheFlush)
{
    // Published: the series made this case ~2x faster, still < 10%.  The
    // model gives 2.85x (docs/simulation.rst): both are bound by the flush
    // itself, which takes iova_rbtree_lock for each of the 2 x 6
    // magazines of each of the 32 CPUs, empty or not (384 acquisitions
    // per failed map), while every other CPU queues on the same lock; the
    // series shortens the walks (131 nodes per allocation against 177),
    // whose nodes other CPUs wrote cost a line transfer each.  Asserted:
    // both below the bound, the gain within 2x of the model's, the
    // flush's tree lock acquisitions the main spinning.
    SimResult old_code = run(nic("linux-4.7", "sac-flush"));
    SimResult series = run(nic("linux-4.15", "sac-flush"));
    EXPECT_LT(series.relative, 0.10);
    EXPECT_GT(series.relative, 2.85 / 2 * old_code.relative);
    EXPECT_LT(series.relative, 2.85 * 2 * old_code.relative);
    for (const SimResult *r : {&old_code, &series})
        EXPECT_GT(share(*r, "iova_rbtree_lock", "rcache_flush"), 0.5);
}

TEST(Cx4_64kThirtyTwoBitExhausted, NotReproducedASteadyStateWithTheRcacheFlush)
{
    // The reporter measured a sustained rate.  The model has none with the
    // flush: each flush returns 32-bit IOVAs to the tree and moves
    // cached32_node up, later failed attempts walk further and more maps
    // fail their 32-bit attempt, so twice the window gives about half the
    // throughput and more flushes per map (docs/simulation.rst, "Not
    // settled"; make report marks these figures "moves").
    Case c = nic("linux-4.15", "sac-flush");
    SimResult once = run(c);
    c.ops = 2 * once.transactions;
    SimResult twice = run(c);
    EXPECT_EQ(twice.transactions, c.ops);
    EXPECT_LT(twice.relative, 0.8 * once.relative);
    EXPECT_GT(double(twice.rcache_flushes) / double(twice.maps),
              1.5 * double(once.rcache_flushes) / double(once.maps));
}

TEST(Cx4_64kThirtyTwoBitExhausted, NotFlushingOnThe32BitAttemptRestoresThroughput)
{
    // published: 100% of passthrough when the 32-bit attempt does not
    // flush, "similar results" with no 32-bit attempt at all
    SimResult once = run(nic("linux-6.7", "sac-once"));
    SimResult forcedac = run(nic("linux-6.7", "forcedac"));
    SimResult flushing = run(nic("linux-6.7", "sac-flush"));
    // reproduced with 6.6's once-per-device rule and with forcedac (~83%
    // each: the rest is the modelled per-map cost against a 2 us packet)
    for (const SimResult *r : {&once, &forcedac}) {
        EXPECT_GT(r->relative, 0.75);
        EXPECT_EQ(r->rcache_flushes, 0u);
        EXPECT_GT(r->relative, 5 * flushing.relative);
    }
}

TEST(Cx4_64kThirtyTwoBitExhausted, NotReproducedFullThroughputWhenThe32BitAttemptIsRetriedEveryMap)
{
    // Published: ~100% with the 32-bit attempt kept on every map but its
    // flush removed.  The model gives ~46% with 5.0+: max32_alloc_size
    // fails the attempt fast, but under iova_rbtree_lock, which 32 CPUs
    // then queue on.  Asserted: it avoids the flush's pathology but stays
    // well below the once-per-device rule, the tree lock dominating.
    SimResult once = run(nic("linux-6.7", "sac-once"));
    SimResult retry = run(nic("linux-5.0", "sac"));
    // Nate's own experiment, the series without the flush (100%), and
    // the old code without it (95%): ~23% and ~2% in the model (ticket
    // spinlocks, as the reporter's arm64 kernels had).  The
    // failed 32-bit walk is short in both (no 32-bit IOVA returns to the
    // tree without the flush, so cached32_node stays at the lowest node);
    // what costs is the rate: about one map in six takes
    // iova_rbtree_lock for that attempt, and in 4.7 the rcache misses of
    // the full-mask attempt walk every node above 4 GiB from rb_last().
    SimResult series = run(nic("linux-4.15", "sac"));
    SimResult old_code = run(nic("linux-4.7", "sac"));
    EXPECT_LT(series.relative, 0.75);
    EXPECT_LT(old_code.relative, 0.95 * 0.75);
    EXPECT_LT(series.nodes_per_alloc, 64.0);
    EXPECT_GT(old_code.nodes_per_alloc, 10 * series.nodes_per_alloc);
    EXPECT_GT(retry.relative, 5 * run(nic("linux-5.0", "sac-flush")).relative);
    EXPECT_LT(retry.relative, once.relative);
    EXPECT_LT(retry.relative, 0.75);
    EXPECT_GT(share(retry, "iova_rbtree_lock", "alloc"), 0.5);
}

// nginx-rbtree-regression: nginx with 16 workers.
TEST(NginxRbtreeRegression, NotReproducedRcacheServesSteadyStateSoThe513RestartNeverRuns)
{
    // NOT reproduced as reported: with the documented workload the
    // magazines and depot absorb the cross-CPU TX completions and almost
    // no allocation reaches the tree, in 5.11, 5.13 and 6.7 alike.  The
    // reporter later called it "a running out of rcache case".
    for (std::string v : {"linux-5.11", "linux-5.13", "linux-6.7"}) {
        SimResult r = run({"nginx-rbtree-regression", v, "flush-queue"});
        double maps = 2.0 * double(r.transactions) + double(r.transactions);
        EXPECT_LT(double(r.rbtree_allocs), 0.01 * maps) << v;
        EXPECT_GT(r.relative, 0.9) << v;
    }
}

TEST(NginxRbtreeRegression, NotReproducedRegressionEvenWhenTheRcacheRunsDry)
{
    // Stressor: every CPU's cache returned to the tree each virtual ms.
    Case c{"nginx-rbtree-regression", "linux-5.13", "flush-queue"};
    c.drain_ns = 1'000'000;
    SimResult r513 = run(c);
    c.allocator = "linux-5.11";
    SimResult r511 = run(c);
    c.allocator = "linux-6.7";
    SimResult r67 = run(c);
    c.allocator = "viommu-lab";
    SimResult lab = run(c);
    // the flame graph: queued_spin_lock_slowpath under
    // __alloc_and_insert_iova_range
    EXPECT_GT(r513.spin_share_of("iova_rbtree_lock", "alloc"), 0.05);
    EXPECT_LT(r513.relative, 0.8);
    // the 5.13 restart is no worse than 5.11 here: the 32-bit space is
    // far from full, so neither restart path is taken (not the bisected
    // regression)
    EXPECT_NEAR(r513.relative, r511.relative, 0.02);
    // 6.7's depot changes act on the put side (a full depot no longer
    // frees a magazine under the tree lock); a dry rcache is a get-side
    // problem, so they change little here (~63% vs ~64%: reported as the
    // model finds it), far from viommu-lab, and no magazine is freed to
    // the tree by either.
    EXPECT_NEAR(r67.relative, r513.relative, 0.05);
    EXPECT_LT(r67.relative, 0.8 * lab.relative);
    EXPECT_EQ(r513.spin_share_of("iova_rbtree_lock", "free_batch"), 0.0);
    EXPECT_EQ(r67.spin_share_of("iova_rbtree_lock", "free_batch"), 0.0);
    EXPECT_GT(lab.relative, 0.9);
}

// nvme-smmuv3-cmdq: NVMe 4 KiB at QD128 on 32 CPUs and three drives, strict
// invalidation through SMMUv3.  Its two runs, mainline (each queue's
// interrupt on the first CPU of its mask: a third of the CPUs complete,
// and use the command queue) and LPI spreading (every CPU), simulated once
// for all its tests.
static const std::pair<SimResult, SimResult> &nvme_runs()
{
    static const std::pair<SimResult, SimResult> runs = [] {
        Case c{"nvme-smmuv3-cmdq", "linux-5.13", "strict", "smmu-lockfree"};
        c.config = "mainline";
        SimResult mainline = run(c);
        c.config = "lpi-spreading";
        return std::pair{std::move(mainline), run(c)};
    }();
    return runs;
}

TEST(NvmeSmmuv3Cmdq, LpiSpreadingRelievesTheOverloadedCpus)
{
    // "the performance increase comes from just alleviating pressure on
    // those overloaded cpus": in mainline the CPUs that take the
    // interrupts run every completion, and the others wait for them to
    // free their queues' slots
    const auto &[mainline, lpi] = nvme_runs();
    const double wait = double(cycle_ns(mainline, "completion-wait"));
    EXPECT_GT(wait, 0.2 * double(mainline.cpu_time_ns));
    EXPECT_EQ(cycle_ns(lpi, "completion-wait"), 0u);
    // "still giving circa 25% NVMe throughput increase", though more CPUs
    // on the queue make each list slower
    EXPECT_GT(lpi.throughput, 1.05 * mainline.throughput);
    EXPECT_GT(lpi.inv.mean_issue_ns(false), 1.5 * mainline.inv.mean_issue_ns(false));
}

TEST(NvmeSmmuv3Cmdq, OwnersGatherMoreAndSyncsWaitLongerWithMoreCpusOnTheQueue)
{
    const auto &[few, many] = nvme_runs();
    // published: owner 1 in 3 (mainline), 1 in 8 with many more CPUs: the
    // direction is reproduced (~0.87 and ~0.70), not the size
    // (NotReproducedOwnerShareSize)
    EXPECT_LT(many.inv.owner_share(), 0.9 * few.inv.owner_share());
    // the 5.x cmpxchg loop retries more with more CPUs on the word
    EXPECT_GT(many.inv.retries_per_reservation(), few.inv.retries_per_reservation());
    EXPECT_GT(many.inv.mean_poll_ns(false), 1.8 * few.inv.mean_poll_ns(false));
    EXPECT_GT(many.inv.mean_poll_ns(true), 1.8 * few.inv.mean_poll_ns(true));
    // mainline: a non-owner polls longer than an owner (published 3 and 2)
    EXPECT_GT(few.inv.mean_poll_ns(false), few.inv.mean_poll_ns(true));
}

TEST(NvmeSmmuv3Cmdq, OwnersPublishOnlyOnceWhatTheyGatheredIsValid)
{
    // Step 4c of arm_smmu_cmdq_issue_cmdlist(): the owner polls the valid
    // map over its whole range, so a CPU gathered just before the owner's
    // fetch_andnot, whose valid bits land after it, holds the owner's
    // producer-register write back.  Under the scheduler the owner runs
    // up to its clear and lets those CPUs set their bits first.
    const auto &[few, many] = nvme_runs();
    for (const SimResult *r : {&few, &many}) {
        ASSERT_GT(r->inv.submissions, r->inv.owners);
        EXPECT_GT(r->inv.valid_wait_ns, 0u);
        // every role's time in the call includes its polling
        EXPECT_GE(r->inv.mean_issue_ns(true), r->inv.mean_poll_ns(true));
        EXPECT_GE(r->inv.mean_issue_ns(false), r->inv.mean_poll_ns(false));
    }
}

TEST(NvmeSmmuv3Cmdq, NotReproducedOwnerShareSize)
{
    // Published: an owner 1 in 3 (mainline) and 1 in 8 (LPI spreading,
    // many more CPUs); a non-owner polling 4x as long as an owner (12 vs
    // 3), owners 4 and 22 units in the call before polling.  The model's
    // owners gather from their reservation to their fetch_andnot, short
    // against the spacing of arrivals, and the SMMU takes at most 0.32 us
    // a list (the same reporter's map harness, smmuv3-map-bench), so a
    // gathered list waits little behind the others.  John's durations
    // point at ~2-3 us a list in the NVMe run, which nothing in the cost
    // model gives (docs/simulation.rst).
    const auto &[few, many] = nvme_runs();
    EXPECT_GT(few.inv.owner_share(), 1.0 / 3 * 1.25);
    EXPECT_GT(many.inv.owner_share(), 1.0 / 8 * 1.25);
    EXPECT_LT(many.inv.mean_poll_ns(false), 4 * 0.75 * many.inv.mean_poll_ns(true));
    EXPECT_LT(few.inv.mean_issue_ns(true), 6000 * 0.75);
    EXPECT_LT(many.inv.mean_issue_ns(true), 25000 * 0.75);
}

TEST(NvmeSmmuv3Cmdq, SpinlockProtectedQueueIsSlower)
{
    for (const char *config : {"mainline", "lpi-spreading"}) {
        Case c{"nvme-smmuv3-cmdq", "linux-5.13", "strict", "smmu-lockfree"};
        c.config = config;
        SimResult lockfree = run(c);
        c.invq = "smmu-spinlock";
        SimResult locked = run(c);
        EXPECT_LT(locked.throughput, lockfree.throughput) << config;
    }
}

// smmuv3-map-bench: John Garry's map+unmap harness on his SMMUv3, strict,
// the cmpxchg reservation against his atomic add (not a seed: it checks
// the SMMU's time per list, docs/simulation.rst).
SimResult map_bench(const char *invq, unsigned cpus)
{
    Case c{"smmuv3-map-bench", "linux-5.13", "strict", invq};
    c.cpus = cpus;
    c.ops = cpus * 400;
    return run(c);
}

double per_cpu(const SimResult &r, unsigned cpus)
{
    return r.throughput / cpus;
}

TEST(Smmuv3MapBench, TheSmmuSustainsTheAtomicAddRatesUpTo32Cpus)
{
    // published per CPU, after the series: 302K, 193K, 80K (8, 16, 32
    // CPUs; v2) and 93,287 and 44,789 (32, 64; v1); reproduced within
    // 25%: the cost model's 0.32 us a list is taken from the 16-CPU rate,
    // the others follow from it
    const std::pair<unsigned, double> published[] = {
        {8, 302e3}, {16, 193e3}, {32, 80e3}, {32, 93287}, {64, 44789}};
    for (auto [cpus, rate] : published) {
        double r = per_cpu(map_bench("smmu-fetch-add", cpus), cpus);
        EXPECT_GT(r, rate * 0.75) << cpus;
        EXPECT_LT(r, rate * 1.25) << cpus;
    }
    // before the series at 8 CPUs: 282K, reproduced
    double before8 = per_cpu(map_bench("smmu-lockfree", 8), 8);
    EXPECT_GT(before8, 282e3 * 0.75);
    EXPECT_LT(before8, 282e3 * 1.25);
}

TEST(Smmuv3MapBench, NotReproducedTheCmpxchgCollapse)
{
    // Published: before the series 115K, 36K, 11K per CPU at 16, 32, 64
    // CPUs (2.2x, 2.2x, 2.7x below the atomic add) and "for 64 CPUs
    // contending the cmdq, success rate is ~ 1 in 12".  The model's queue
    // is bounded by the SMMU's rate, so CPUs come back to it spaced and
    // rarely meet on the word: its cmpxchg loop barely retries and both
    // reservations give the same rate.  What is missing is the cost of an
    // atomic on a line that tens of CPUs hammer at once on that machine
    // (no published figure: hardware-costs.md, section 1).
    for (unsigned cpus : {16u, 32u, 64u}) {
        SimResult before = map_bench("smmu-lockfree", cpus);
        SimResult after = map_bench("smmu-fetch-add", cpus);
        EXPECT_GT(before.throughput, 0.9 * after.throughput) << cpus;
    }
    SimResult r64 = map_bench("smmu-lockfree", 64);
    EXPECT_GT(r64.inv.retries_per_reservation(), 0.0);
    EXPECT_LT(r64.inv.retries_per_reservation(), 11.0 * 0.75);
}

TEST(NvmeSmmuv3Cmdq, NotReproducedTheAtomicAddsNvmeGain)
{
    // John Garry's cmdq series (both versions): ~24% more NVMe throughput
    // with 3 SSDs.  The model's LPI spreading run is bounded by the SMMU
    // with either reservation (~1.00; the report counts that within 25% of
    // 1.24, a gain that small being within the tolerance of none).
    Case c{"nvme-smmuv3-cmdq", "linux-5.13", "strict", "smmu-fetch-add"};
    c.config = "lpi-spreading";
    const SimResult &cmpxchg = nvme_runs().second;
    EXPECT_NEAR(run(c).throughput / cmpxchg.throughput, 1.0, 0.05);
}

// Each reproduced point value that docs/simulation.rst states, within a
// factor of 2 of what it states (the direction of each case is asserted
// by the tests above).  A model change that moves one of them further
// fails here, so the docs get updated with it.  The runs are the ones the
// tests above already made (same Case, same cache).
// The figures the cases match are steady states: twice the measured window
// moves them by less than 10% (make report's "2x window" column).
TEST(Steady, MatchedThroughputsHoldWithTwiceTheWindow)
{
    for (Case c : {Case{"memcached-16cpu-xl710", "percpu-batch", "global-list"},
                   Case{"memcached-16cpu-xl710", "linux-4.7", "percpu-defer"},
                   Case{"ovs-forward-64b", "linux-4.4", "global-list"}}) {
        SimResult once = run(c);
        c.ops = 2 * once.transactions;
        SimResult twice = run(c);
        EXPECT_EQ(twice.transactions, c.ops) << c.file;
        EXPECT_NEAR(twice.relative / once.relative, 1.0, 0.10)
            << c.file << " " << c.allocator << ": " << once.relative << " then " << twice.relative;
    }
}

TEST(Documented, ReproducedValuesStayWithinAFactorOfTwoOfTheDocs)
{
    SimResult batch = run({"memcached-16cpu-xl710", "percpu-batch", "global-list"});
    SimResult mags = run({"memcached-16cpu-xl710", "linux-4.7", "percpu-defer"});
    SimResult ovs = run({"ovs-forward-64b", "linux-4.4", "global-list"});
    const auto &[few, many] = nvme_runs();
    struct Figure {
        const char *what;
        double reproduced, documented;
    };
    const Figure figures[] = {
        {"memcached percpu-batch throughput", batch.relative, 0.294},
        {"memcached percpu-batch spin share", batch.spin_share, 0.631},
        {"memcached async_umap_flush_lock share of spin",
         batch.spin_fraction_of("async_umap_flush_lock"), 0.85},
        {"memcached alloc share of spin", batch.spin_fraction_of("iova_rbtree_lock", "insert"),
         0.117},
        {"memcached free_iova_array share of spin",
         batch.spin_fraction_of("iova_rbtree_lock", "free_batch"), 0.025},
        {"memcached magazines throughput", mags.relative, 0.93},
        {"memcached magazines spin share", mags.spin_share, 0.036},
        {"ovs throughput", ovs.relative, 0.055},
        {"ovs spin share", ovs.spin_share, 0.88},
        {"ovs add_unmap share of spin", ovs.spin_fraction_of("async_umap_flush_lock", "unmap_add"),
         0.455},
        {"nvme mainline owner share", few.inv.owner_share(), 0.87},
        {"nvme lpi owner share", many.inv.owner_share(), 0.70},
        {"nvme mainline owner issue us", few.inv.mean_issue_ns(true) / 1000, 3.4},
        {"nvme mainline non-owner issue us", few.inv.mean_issue_ns(false) / 1000, 3.5},
        {"nvme mainline owner poll us", few.inv.mean_poll_ns(true) / 1000, 3.0},
        {"nvme mainline non-owner poll us", few.inv.mean_poll_ns(false) / 1000, 3.3},
        {"nvme lpi owner issue us", many.inv.mean_issue_ns(true) / 1000, 7.0},
        {"nvme lpi non-owner issue us", many.inv.mean_issue_ns(false) / 1000, 7.1},
        {"nvme lpi owner poll us", many.inv.mean_poll_ns(true) / 1000, 6.5},
        {"nvme lpi non-owner poll us", many.inv.mean_poll_ns(false) / 1000, 6.9},
        {"nvme lpi / mainline throughput", many.throughput / few.throughput, 1.13},
    };
    for (const Figure &f : figures) {
        EXPECT_GT(f.reproduced, f.documented / 2) << f.what;
        EXPECT_LT(f.reproduced, f.documented * 2) << f.what;
    }
}

// The viommu-lab variant on every workload above.
TEST(ViommuLab, AtLeastAsGoodAsEveryKernelVariantOnEveryWorkload)
{
    struct W {
        Case lab;
        std::vector<Case> kernel;
        double floor;
    };
    std::vector<W> all = {
        {{"memcached-16cpu-xl710", "viommu-lab", "flush-queue"},
         {{"memcached-16cpu-xl710", "linux-4.7", "percpu-defer"},
          {"memcached-16cpu-xl710", "linux-6.7", "flush-queue"}},
         0.9},
        {{"ovs-forward-64b", "viommu-lab", "flush-queue"},
         {{"ovs-forward-64b", "linux-4.7", "percpu-defer"},
          {"ovs-forward-64b", "linux-6.7", "flush-queue"}},
         0.7},
        {{"nginx-rbtree-regression", "viommu-lab", "flush-queue"},
         {{"nginx-rbtree-regression", "linux-6.7", "flush-queue"}},
         0.9},
        {nic("viommu-lab", "sac"), {nic("linux-6.7", "sac-once"), nic("linux-6.7", "sac")}, 0.75},
        {{"hns-dsaf-probe", "viommu-lab", "strict"},
         {{"hns-dsaf-probe", "linux-6.7", "strict"}},
         0.0},
    };
    for (const W &w : all) {
        SimResult lab = run(w.lab);
        EXPECT_GT(lab.relative, w.floor) << w.lab.file;
        for (const Case &k : w.kernel)
            EXPECT_GE(lab.relative, 0.98 * run(k).relative) << w.lab.file << " vs " << k.allocator;
    }
    // strict NVMe is bound by the invalidation queue, whatever allocates
    Case lab{"nvme-smmuv3-cmdq", "viommu-lab", "strict", "smmu-lockfree"};
    Case k{"nvme-smmuv3-cmdq", "linux-6.7", "strict", "smmu-lockfree"};
    EXPECT_NEAR(run(lab).relative, run(k).relative, 0.05);
}

}  // namespace
