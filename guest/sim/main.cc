// SPDX-License-Identifier: GPL-2.0-or-later
// viommu-sim: run one contention simulation (or a sweep of CPU counts) and
// print the result as text or JSON.  --help lists the options.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "../iova/allocator.hpp"
#include "../iova/flush.hpp"
#include "realthreads.hpp"
#include "simulator.hpp"
#include "workload.hpp"

using namespace viommu::sim;

namespace {

void usage(FILE *f)
{
    std::fprintf(f, "usage: viommu-sim [--workload W] [--allocator A] [--flush F] [--invq Q]\n"
                    "                  [--dma D] [--cpus N[,N...]] [--seed S] [--ops N] [--json]\n"
                    "                  [--rcache-drain-us N] [--warmup N]\n"
                    "                  [--real-threads] [--cost-model] [--list]\n");
}

void list()
{
    auto show = [](const char *what, auto names) {
        std::printf("%s:", what);
        for (std::string_view n : names)
            std::printf(" %.*s", int(n.size()), n.data());
        std::printf("\n");
    };
    show("workloads", Workload::names());
    show("allocators", viommu::iova::Allocator::variants());
    std::printf("  (and \"none\": no IOMMU)\n");
    show("flush policies", viommu::iova::FlushPolicy::policies());
    show("invalidation queues", InvQueue::kinds());
    show("dma modes", dma_modes());
}

void print_text(const SimResult &r)
{
    const SimConfig &c = r.config;
    std::printf("%s on %u CPUs: allocator %s, flush %s, invq %s, dma %s, seed %llu\n",
                c.workload.c_str(), r.cpus, c.allocator.c_str(), c.flush.c_str(), c.invq.c_str(),
                c.dma.c_str(), (unsigned long long)c.seed);
    std::printf("  throughput %.0f %s/s, without IOMMU %.0f (%.1f%%)\n", r.throughput,
                r.unit.c_str(), r.baseline_throughput, 100 * r.relative);
    std::printf("  %.2f%% of CPU time in spinlocks; rbtree allocs %llu (%.1f nodes each), "
                "rcache flushes %llu, failed maps %llu\n",
                100 * r.spin_share, (unsigned long long)r.rbtree_allocs, r.nodes_per_alloc,
                (unsigned long long)r.rcache_flushes, (unsigned long long)r.failed_maps);
    std::printf("  %-28s %-14s %8s %8s %10s %10s\n", "lock", "site", "%spin", "%cycles", "acquired",
                "hold ns");
    for (const auto &p : r.profile) {
        if (p.spin_ns == 0)
            continue;
        std::printf("  %-28s %-14s %7.2f%% %7.2f%% %10llu %10.0f\n", p.lock.c_str(), p.site.c_str(),
                    100 * r.spin_fraction_of(p.lock, p.site), 100 * r.spin_share_of(p.lock, p.site),
                    (unsigned long long)p.acquisitions,
                    p.acquisitions ? double(p.hold_ns) / p.acquisitions : 0);
    }
    if (r.inv.submissions)
        std::printf("  invq: %llu submissions, owner share %.3f, mean poll %.0f ns (owner) %.0f ns "
                    "(non-owner)\n",
                    (unsigned long long)r.inv.submissions, r.inv.owner_share(),
                    r.inv.mean_poll_ns(true), r.inv.mean_poll_ns(false));
}

std::vector<unsigned> parse_cpus(const char *s)
{
    std::vector<unsigned> v;
    for (const char *p = s; *p;) {
        char *end;
        unsigned long n = std::strtoul(p, &end, 10);
        if (end == p)
            return {};
        v.push_back(static_cast<unsigned>(n));
        p = *end == ',' ? end + 1 : end;
    }
    return v;
}

}  // namespace

int main(int argc, char **argv)
{
    SimConfig cfg;
    std::vector<unsigned> cpus{0};
    bool json = false, real = false;
    for (int i = 1; i < argc; i++) {
        std::string_view a = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "viommu-sim: %s needs a value\n", argv[i]);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--workload")
            cfg.workload = value();
        else if (a == "--allocator")
            cfg.allocator = value();
        else if (a == "--flush")
            cfg.flush = value();
        else if (a == "--invq")
            cfg.invq = value();
        else if (a == "--dma")
            cfg.dma = value();
        else if (a == "--cpus")
            cpus = parse_cpus(value());
        else if (a == "--seed")
            cfg.seed = std::strtoull(value(), nullptr, 0);
        else if (a == "--ops")
            cfg.ops = std::strtoull(value(), nullptr, 0);
        else if (a == "--rcache-drain-us")
            cfg.rcache_drain_ns = 1000 * std::strtoull(value(), nullptr, 0);
        else if (a == "--warmup")
            cfg.warmup_per_cpu = std::atoi(value());
        else if (a == "--json")
            json = true;
        else if (a == "--real-threads")
            real = true;
        else if (a == "--cost-model") {
            std::printf("%s\n", CostModel::standard().json().c_str());
            return 0;
        } else if (a == "--list") {
            list();
            return 0;
        } else if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (cpus.empty()) {
        std::fprintf(stderr, "viommu-sim: bad --cpus list\n");
        return 2;
    }
    if (json && cpus.size() > 1)
        std::printf("[");
    for (size_t i = 0; i < cpus.size(); i++) {
        cfg.cpus = cpus[i];
        std::string err, out;
        if (real) {
            auto r = run_real_threads(cfg, &err);
            if (!r) {
                std::fprintf(stderr, "viommu-sim: %s\n", err.c_str());
                return 2;
            }
            out = json ? r->json() : r->text();
        } else {
            auto r = simulate(cfg, CostModel::standard(), &err);
            if (!r) {
                std::fprintf(stderr, "viommu-sim: %s\n", err.c_str());
                return 2;
            }
            if (json) {
                out = r->json();
            } else {
                print_text(*r);
                continue;
            }
        }
        std::printf("%s%s%s", json && i ? "," : "", out.c_str(),
                    json && cpus.size() > 1 ? "" : "\n");
    }
    if (json && cpus.size() > 1)
        std::printf("]\n");
    return 0;
}
