// SPDX-License-Identifier: GPL-2.0-or-later
// iova-bench: real-thread figures for every variant, not pass/fail.
//
//   iova-bench [throughput|workloads|policies|overhead|all] [--ops N] [--reps N]
//              [--workload NAME] [--json]
//
// throughput  alloc/free of one page, 16 outstanding per thread, at 1, 2,
//             4, ... threads, with the lock statistics
// workloads   the contention workloads of docs/iova.rst through the dma
//             layer and the 4.14 flush queue, 4 threads; --reps N: the
//             variants take turns N times, best of N; --workload: only one
// policies    viommu-lab under each unmap policy, 4 threads
// overhead    instrumentation off / counters / sampled lock timing / full, one thread
// walks       two threads on two CPUs take turns walking one rbtree of 4096
//             nodes (inserted in random order) back from rb_last(), 256 nodes
//             a walk, the tree with and without the simulator's line
//             bookkeeping (rbtree.hpp)
//
// Ratios are against linux-4.4 (or instrumentation off) measured in the
// same run.  Columns: Mops/s (wall clock), cpuns/op (worker CPU time, spin
// included: steadier on a loaded machine), tree/op and shared/op (rbtree
// and other non-per-CPU lock acquisitions), cont/op, waitns/op, nodes/op.
// Wall-clock figures depend on the machine; the per-operation lock and
// node counts do not.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <latch>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <time.h>

#include <pthread.h>
#include <sched.h>

#include "iova.hpp"
#include "rbtree.hpp"

using namespace viommu::iova;

namespace {

struct Workload {
    const char *name;
    unsigned granule_shift;
    uint64_t bytes;
    unsigned outstanding;  // mappings each thread keeps live
    bool random_order;     // completion order
    bool fill32;           // 32-bit space exhausted before the run
    bool via_dma;          // dma layer + flush policy, else the allocator
    const char *policy;
};

struct Result {
    double ns = 0;
    double cpu_ns = 0;  // CPU time of the worker threads
    uint64_t ops = 0, failed = 0;
    uint64_t tree_acq = 0, shared_acq = 0, contended = 0, wait_ns = 0, nodes = 0;
};

double thread_cpu_ns()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

void fill_32bit(Allocator &a)
{
    const Pfn dma32 = a.dma_32bit_pfn();
    while (a.alloc(1024, dma32, false).ok()) {
    }
    for (uint64_t s = 512; s; s /= 2)
        while (a.alloc(s, dma32, false).ok()) {
        }
}

void add_locks(Result &r, const std::vector<const InstrumentedLock *> &locks)
{
    for (const InstrumentedLock *l : locks) {
        // Per-CPU locks are only ever contended by flushes; count the rest
        // as shared.
        bool percpu = l->name() == "cpu_rcache" || l->name() == "lab_cpu" ||
                      l->name() == "percpu_iova" || l->name() == "fq_ring" ||
                      l->name() == "deferred_flush";
        for (const SiteLockStats &s : l->stats()) {
            if (l->name() == "iova_rbtree_lock")
                r.tree_acq += s.acquisitions;
            if (!percpu)
                r.shared_acq += s.acquisitions;
            r.contended += s.contended;
            r.wait_ns += s.wait_ns.sum;
        }
    }
}

Result run(const Workload &w, std::string_view variant, unsigned threads, uint64_t ops,
           bool stats = true, bool timing = true, const char *policy = nullptr,
           unsigned sample_shift = 0)
{
    RealEnv env(threads + 1);
    env.lock_sample_shift = sample_shift;
    env.start_timer_thread();
    Config c;
    c.granule_shift = w.granule_shift;
    c.stats = stats;
    c.lock_timing = timing;
    c.ncpus = threads + 1;
    auto a = Allocator::create(variant, env, c);
    if (w.fill32)
        fill_32bit(*a);
    CountingFlusher inv;
    auto fq = FlushPolicy::create(policy ? policy : w.policy, *a, inv);
    DmaDomain dom(*a, *fq);
    a->reset_stats();

    std::latch start(threads + 1);
    std::atomic<uint64_t> failed{0};
    std::vector<double> cpu_ns(threads);
    std::vector<std::jthread> ts;
    const uint64_t pages = dom.pages_for(w.bytes);
    for (unsigned t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            std::mt19937_64 rng(t);
            DmaDevice dev;
            std::deque<uint64_t> live;  // oldest first
            (void)env.current_cpu();
            start.arrive_and_wait();
            const double c0 = thread_cpu_ns();
            for (uint64_t i = 0; i < ops; i++) {
                if (live.size() == w.outstanding) {
                    if (w.random_order)
                        std::swap(live.front(), live[rng() % live.size()]);
                    uint64_t x = live.front();
                    live.pop_front();
                    if (w.via_dma)
                        dom.unmap(x, w.bytes);
                    else
                        a->free(x, pages);
                }
                uint64_t x;
                if (w.via_dma) {
                    MapResult m = dom.map(dev, w.bytes);
                    x = m.iova;
                    if (!m.ok()) {
                        failed++;
                        continue;
                    }
                } else {
                    AllocResult r = a->alloc(pages, a->end_pfn() - 1, true);
                    x = r.pfn;
                    if (!r.ok()) {
                        failed++;
                        continue;
                    }
                }
                live.push_back(x);
            }
            cpu_ns[t] = thread_cpu_ns() - c0;
            for (uint64_t x : live) {
                if (w.via_dma)
                    dom.unmap(x, w.bytes);
                else
                    a->free(x, pages);
            }
        });
    }
    start.arrive_and_wait();
    auto t0 = std::chrono::steady_clock::now();
    ts.clear();
    auto t1 = std::chrono::steady_clock::now();
    fq->drain();

    Result r;
    r.ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    r.ops = ops * threads;
    for (double c : cpu_ns)
        r.cpu_ns += c;
    r.failed = failed;
    add_locks(r, a->locks());
    add_locks(r, fq->locks());
    r.nodes = a->stats().total(Counter::nodes_visited);
    return r;
}

bool json_out = false;

void header(const char *title)
{
    if (json_out)
        return;
    std::printf("\n== %s\n%-13s %3s %9s %7s %9s %9s %9s %9s %9s %9s\n", title, "variant", "thr",
                "Mops/s", "ratio", "cpuns/op", "tree/op", "shared/op", "cont/op", "waitns/op",
                "nodes/op");
}

void row(const char *workload, std::string_view variant, unsigned threads, const Result &r,
         double base_mops)
{
    double mops = r.ops / r.ns * 1e3, op = static_cast<double>(r.ops);
    if (json_out) {
        std::printf("{\"workload\":\"%s\",\"variant\":\"%.*s\",\"threads\":%u,\"mops\":%.4f,"
                    "\"ratio\":%.3f,\"cpu_ns_per_op\":%.1f,\"tree_acq_per_op\":%.4f,\"shared_acq_"
                    "per_op\":%.4f,"
                    "\"contended_per_op\":%.5f,\"wait_ns_per_op\":%.2f,\"nodes_per_op\":%.3f,"
                    "\"failed\":%llu}\n",
                    workload, static_cast<int>(variant.size()), variant.data(), threads, mops,
                    mops / base_mops, r.cpu_ns / op, r.tree_acq / op, r.shared_acq / op,
                    r.contended / op, r.wait_ns / op, r.nodes / op,
                    static_cast<unsigned long long>(r.failed));
        return;
    }
    std::printf("%-13.*s %3u %9.3f %7.2f %9.1f %9.4f %9.4f %9.5f %9.1f %9.2f%s\n",
                static_cast<int>(variant.size()), variant.data(), threads, mops, mops / base_mops,
                r.cpu_ns / op, r.tree_acq / op, r.shared_acq / op, r.contended / op, r.wait_ns / op,
                r.nodes / op, r.failed ? " (failures)" : "");
}

const Workload alloc_free{"alloc-free", 12, 4096, 16, true, false, false, "strict"};

const Workload workloads[] = {
    // memcached-16cpu-xl710: many CPUs, small map/unmap, 90% GET (1 KiB values)
    {"memcached", 12, 1088, 64, true, false, true, "flush-queue"},
    // ovs-forward-64b: 64-byte packets through an RX/TX ring
    {"forward-64B", 12, 64, 512, false, false, true, "flush-queue"},
    // nginx-rbtree-regression: more in flight than the per-CPU caches hold
    {"nginx-dry", 12, 1024, 8192, false, false, true, "flush-queue"},
    // NVMe 4 KiB at queue depth 128, completions out of order
    {"nvme-qd128", 12, 4096, 128, true, false, true, "flush-queue"},
    // cx4-64k-32bit-exhausted (Nate Watterson): 64 KiB pages, 32-bit space full at ifup
    {"nic64k-32full", 16, 1500, 256, false, true, true, "flush-queue"},
};

void throughput(uint64_t ops)
{
    unsigned maxt = std::max(4u, std::thread::hardware_concurrency());
    for (unsigned t = 1; t <= maxt; t *= 2) {
        char title[64];
        std::snprintf(title, sizeof(title), "alloc-free, %u thread(s)", t);
        header(title);
        double base = 0;
        for (auto v : Allocator::variants()) {
            Result r = run(alloc_free, v, t, ops);
            if (!base)
                base = r.ops / r.ns * 1e3;
            row("alloc-free", v, t, r, base);
        }
    }
}

// With @reps > 1 the variants take turns, rep after rep, so a change in
// the machine's load hits them alike; each row is the run with the best
// wall-clock rate, with the lowest CPU time per operation of all runs.
void workloads_run(uint64_t ops, unsigned reps, std::string_view only)
{
    for (const Workload &w : workloads) {
        if (!only.empty() && only != w.name)
            continue;
        header(w.name);
        std::map<std::string_view, Result> best;
        std::map<std::string_view, double> cpu_per_op;
        for (unsigned rep = 0; rep < reps; rep++) {
            for (auto v : Allocator::variants()) {
                Result r = run(w, v, 4, ops);
                auto [it, fresh] = best.try_emplace(v, r);
                if (!fresh && r.ops / r.ns > it->second.ops / it->second.ns)
                    it->second = r;
                double c = r.cpu_ns / r.ops;
                cpu_per_op[v] = fresh ? c : std::min(cpu_per_op[v], c);
            }
        }
        double base = 0;
        for (auto v : Allocator::variants()) {
            Result r = best[v];
            r.cpu_ns = cpu_per_op[v] * r.ops;
            if (!base)
                base = r.ops / r.ns * 1e3;
            row(w.name, v, 4, r, base);
        }
    }
}

void policies(uint64_t ops)
{
    for (const Workload &w : workloads) {
        char title[96];
        std::snprintf(title, sizeof(title), "%s, viommu-lab, by unmap policy (strict = 1.00)",
                      w.name);
        header(title);
        double base = 0;
        for (auto p : FlushPolicy::policies()) {
            Result r = run(w, "viommu-lab", 4, ops, true, true, p.data());
            if (!base)
                base = r.ops / r.ns * 1e3;
            row(w.name, p, 4, r, base);
        }
    }
}

void overhead(uint64_t ops)
{
    // off: nothing; counters: per-CPU counters and histograms, no clock;
    // sampled: + lock wait/hold timed on 1 in 64 acquisitions; full: every
    // acquisition timed (what a virtual clock gets for free).
    struct Mode {
        const char *name;
        bool stats, timing;
        unsigned shift;
    } modes[] = {{"off", false, false, 0},
                 {"counters", true, false, 0},
                 {"sampled", true, true, 6},
                 {"full", true, true, 0}};
    if (!json_out)
        std::printf("\n== instrumentation overhead, alloc-free, 1 thread, CPU ns/op (best of 5)\n"
                    "%-13s %8s %8s %8s %8s %9s %9s %9s\n",
                    "variant", "off", "counters", "sampled", "full", "cnt/off", "smp/off",
                    "full/off");
    for (auto v : Allocator::variants()) {
        double best[4] = {1e30, 1e30, 1e30, 1e30};
        for (int rep = 0; rep < 5; rep++) {
            for (int k = 0; k < 4; k++) {
                Result r = run(alloc_free, v, 1, ops, modes[k].stats, modes[k].timing, nullptr,
                               modes[k].shift);
                best[k] = std::min(best[k], r.cpu_ns / r.ops);
            }
        }
        if (json_out)
            std::printf("{\"overhead\":\"%.*s\",\"off_ns\":%.2f,\"counters_ns\":%.2f,"
                        "\"sampled_ns\":%.2f,\"full_ns\":%.2f}\n",
                        static_cast<int>(v.size()), v.data(), best[0], best[1], best[2], best[3]);
        else
            std::printf("%-13.*s %8.1f %8.1f %8.1f %8.1f %9.3f %9.3f %9.3f\n",
                        static_cast<int>(v.size()), v.data(), best[0], best[1], best[2], best[3],
                        best[1] / best[0], best[2] / best[0], best[3] / best[0]);
    }
}

// Two threads, pinned to CPUs 0 and 1, take turns (a turn word, as a
// lock handoff would) walking @t back from rb_last(): ns per walk, wall
// clock, best of 5.  The kernel's walks only read the nodes, so the second
// CPU finds them clean in its cache; a walk that writes each node (the
// line bookkeeping) makes the next CPU fetch every one from the last.
double alternating_walks(RbTree &t, unsigned walks, unsigned length)
{
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        alignas(64) std::atomic<unsigned> turn{0};
        std::atomic<uint64_t> sink{0};
        auto side = [&](unsigned me) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(me, &set);
            pthread_setaffinity_np(pthread_self(), sizeof set, &set);
            uint64_t sum = 0;
            for (unsigned i = me; i < walks; i += 2) {
                while (turn.load(std::memory_order_acquire) != i)
                    ;
                t.begin_walk(me, 0);
                const IovaNode *n = t.last();
                for (unsigned k = 0; n && k < length; k++, n = t.prev(n))
                    sum += n->pfn_lo;
                turn.store(i + 1, std::memory_order_release);
            }
            sink += sum;
        };
        auto t0 = std::chrono::steady_clock::now();
        std::thread b(side, 1u);
        side(0);
        b.join();
        best = std::min(
            best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
                          .count() /
                      walks);
    }
    return best;
}

void walks(uint64_t ops)
{
    const unsigned n = 4096, length = 256;
    const unsigned count = static_cast<unsigned>(std::max<uint64_t>(ops / 10, 100));
    double ns[2];
    for (int tracked = 1; tracked >= 0; tracked--) {
        // inserted in random order, so a walk in pfn order visits nodes
        // scattered in memory, as slab objects are
        std::vector<uint64_t> pfns(n);
        for (uint64_t i = 0; i < n; i++)
            pfns[i] = 2 * i;
        std::shuffle(pfns.begin(), pfns.end(), std::mt19937_64(1));
        RbTree t(false, tracked);
        t.begin_walk(0, 0);
        for (uint64_t p : pfns)
            t.insert(t.make(p, p));
        ns[tracked] = alternating_walks(t, count, length);
    }
    if (json_out)
        std::printf("{\"walks\":%u,\"nodes\":%u,\"tracked_ns\":%.1f,\"untracked_ns\":%.1f}\n",
                    count, length, ns[1], ns[0]);
    else
        std::printf("\n== alternating walks, 2 threads on CPUs 0 and 1, %u nodes a walk, ns per "
                    "walk (best of 5)\n%-28s %10.1f\n%-28s %10.1f\n%-28s %10.3f\n",
                    length, "with line bookkeeping", ns[1], "without (real threads)", ns[0],
                    "ratio without / with", ns[0] / ns[1]);
}

}  // namespace

int main(int argc, char **argv)
{
    std::string mode = "all";
    uint64_t ops = 100'000;
    unsigned reps = 1;
    std::string only;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--ops") && i + 1 < argc)
            ops = std::strtoull(argv[++i], nullptr, 0);
        else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--workload") && i + 1 < argc)
            only = argv[++i];
        else if (!std::strcmp(argv[i], "--json"))
            json_out = true;
        else
            mode = argv[i];
    }
    if (mode == "throughput" || mode == "all")
        throughput(ops);
    if (mode == "workloads" || mode == "all")
        workloads_run(ops, reps, only);
    if (mode == "policies" || mode == "all")
        policies(ops);
    if (mode == "overhead" || mode == "all")
        overhead(ops);
    if ((mode == "walks" || mode == "all") && std::thread::hardware_concurrency() >= 2)
        walks(ops);
    return 0;
}
