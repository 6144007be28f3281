// SPDX-License-Identifier: GPL-2.0-or-later
#include "realthreads.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "../iova/iova.hpp"
#include "json.hpp"
#include "workload.hpp"

namespace viommu::sim {

namespace {

using Clock = std::chrono::steady_clock;

void busy_wait(Nanos ns)
{
    auto end = Clock::now() + std::chrono::nanoseconds(ns);
    while (Clock::now() < end) {
    }
}

// One queue lock; the "hardware" is a busy-wait of the modelled time.
class SpinFlusher final : public iova::Flusher {
public:
    explicit SpinFlusher(const CostModel &c) : c_(c) {}
    void flush_range(iova::Range) override { submit(); }
    void flush_all() override { submit(); }

private:
    void submit()
    {
        {
            std::lock_guard g(lock_);
            busy_wait(c_.inv_submit);
        }
        busy_wait(2 * c_.inv_hw_desc);
    }
    const CostModel &c_;
    std::mutex lock_;
};

struct Mapping {
    uint64_t iova = 0, bytes = 0;
    bool live = false;
    int poster = -1;  // a ring completion handed over: the CPU whose slot waits for it
};

struct Mailbox {
    std::mutex lock;
    std::deque<Mapping> items;
};

struct Setup {
    iova::Allocator *alloc = nullptr;
    iova::DmaDomain *domain = nullptr;
    std::vector<iova::DmaDevice> devices;
};

// Runs @wl on @n threads; returns wall time of the measured part.
// Runs `ops` transactions over n threads; `completed` counts those whose steps all ran,
// `dropped` those of them one of whose maps failed.
// @clients > 0: a closed loop of that many requests per thread, each sent
// @rtt after the reply to the one before (--clients-per-cpu).
double run_threads(Workload &wl, unsigned n, uint64_t ops, Setup *io, std::atomic<uint64_t> &failed,
                   uint64_t &leaked, uint64_t &completed, uint64_t &dropped, unsigned clients,
                   Nanos rtt, iova::FlushPolicy *policy = nullptr)
{
    const WorkloadInfo &info = wl.info();
    std::vector<Mailbox> boxes(n);
    std::vector<std::vector<Mapping>> slots(n, std::vector<Mapping>(info.slots_per_cpu));
    std::atomic<uint64_t> started{0}, done{0}, done_dropped{0};
    std::vector<char> map_failed(n, 0);  // per CPU (its own thread): in this transaction
    std::barrier sync(n + 1);
    std::mutex wl_lock;  // the workload's per-CPU state is touched under it
    // per CPU: its ring completions still in other CPUs' mailboxes
    std::vector<std::atomic<uint64_t>> posted(n);
    std::atomic<unsigned> running{n};  // threads in a phase's loop, not parked at a barrier

    auto drain = [&](unsigned cpu) {
        std::deque<Mapping> mine;
        {
            std::lock_guard g(boxes[cpu].lock);
            mine.swap(boxes[cpu].items);
        }
        for (const Mapping &m : mine) {
            if (m.live && io)
                io->domain->unmap(m.iova, m.bytes);
            if (m.poster >= 0)
                posted[static_cast<unsigned>(m.poster)].fetch_sub(1);
        }
    };
    auto execute = [&](unsigned cpu, const Step &s) {
        switch (s.kind) {
        case VIOMMU_SIM_WORK:
            busy_wait(s.value);
            break;
        case VIOMMU_SIM_MAP: {
            Mapping &m = slots[cpu].at(s.arg);
            m = {0, s.value, true};
            if (io) {
                auto r = io->domain->map(io->devices.at(s.device), s.value);
                m.iova = r.iova;
                m.live = r.ok();
                failed += !r.ok();
                map_failed[cpu] |= !r.ok();
            }
            break;
        }
        case VIOMMU_SIM_UNMAP: {
            Mapping &m = slots[cpu].at(s.arg);
            if (m.live && io)
                io->domain->unmap(m.iova, m.bytes);
            m.live = false;
            break;
        }
        case VIOMMU_SIM_MAP_POST: {
            Mapping m{0, s.value, true};
            if (io) {
                auto r = io->domain->map(io->devices.at(s.device), s.value);
                if (!r.ok()) {
                    failed++;
                    map_failed[cpu] = 1;
                    break;
                }
                m.iova = r.iova;
            }
            Mailbox &b = boxes.at(s.arg % n);
            std::lock_guard g(b.lock);
            b.items.push_back(m);
            break;
        }
        case VIOMMU_SIM_UNMAP_POST: {
            Mapping m = slots[cpu].at(s.arg);
            slots[cpu].at(s.arg).live = false;
            if (!m.live)
                break;
            const auto to = static_cast<unsigned>(s.value % n);
            if (to != cpu) {
                m.poster = static_cast<int>(cpu);
                posted[cpu].fetch_add(1);
            }
            {
                Mailbox &b = boxes.at(to);
                std::lock_guard g(b.lock);
                b.items.push_back(m);
            }
            // the slot is free once its completion ran (guest/sim/simulator.cc);
            // a thread parked at a barrier runs none, so then nobody waits
            while (posted[cpu].load() > 1 && running.load() == n) {
                drain(cpu);
                std::this_thread::yield();
            }
            break;
        }
        case VIOMMU_SIM_UNMAP_MAILBOX:
            drain(cpu);
            break;
        default:
            break;
        }
    };
    auto steps_of = [&](unsigned cpu, bool setup) {
        std::vector<Step> v;
        std::lock_guard g(wl_lock);
        if (setup)
            wl.setup(cpu, v);
        else
            wl.next(cpu, v);
        return v;
    };

    std::vector<std::jthread> threads;
    for (unsigned cpu = 0; cpu < n; cpu++) {
        threads.emplace_back([&, cpu] {
            std::deque<Clock::time_point> arrivals(clients, Clock::now());
            // one transaction; with clients, once a request has arrived
            // (idle until then, running the completions handed over)
            auto transaction = [&] {
                if (clients) {
                    const auto arrival = arrivals.front();
                    arrivals.pop_front();
                    while (Clock::now() < arrival)
                        drain(cpu);
                }
                for (const Step &s : steps_of(cpu, false))
                    execute(cpu, s);
                if (clients)
                    arrivals.push_back(Clock::now() + std::chrono::nanoseconds(rtt));
                return std::exchange(map_failed[cpu], 0) != 0;
            };
            for (const Step &s : steps_of(cpu, true))
                execute(cpu, s);
            map_failed[cpu] = 0;  // the setup's belong to no transaction
            for (unsigned i = 0; i < info.warmup_per_cpu; i++)
                transaction();
            running.fetch_sub(1);
            sync.arrive_and_wait();  // warm-up done
            sync.arrive_and_wait();  // statistics reset: go
            running.fetch_add(1);
            busy_wait(info.once_ns);  // --cpu-ns-once
            while (started.fetch_add(1) < ops) {
                if (transaction())
                    done_dropped.fetch_add(1, std::memory_order_relaxed);
                done.fetch_add(1, std::memory_order_relaxed);
            }
            running.fetch_sub(1);
            sync.arrive_and_wait();
            // tear down what is still mapped, so leaks show
            for (Mapping &m : slots[cpu])
                if (m.live && io) {
                    io->domain->unmap(m.iova, m.bytes);
                    m.live = false;
                }
            sync.arrive_and_wait();
            execute(cpu, unmap_mailbox_step());
        });
    }
    sync.arrive_and_wait();
    // every thread is parked at the barrier: measure the window only
    if (io) {
        io->alloc->reset_stats();
        if (policy)
            for (const auto *l : policy->locks())
                const_cast<iova::InstrumentedLock *>(l)->reset_stats();
        failed = 0;
    }
    auto t0 = Clock::now();
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    auto t1 = Clock::now();
    sync.arrive_and_wait();
    threads.clear();
    completed = done.load();
    dropped = done_dropped.load();
    leaked = 0;
    for (auto &b : boxes)
        leaked += b.items.size();
    return double(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
}

}  // namespace

unsigned cpus_online()
{
    return std::max(1u, std::thread::hardware_concurrency());
}

SimConfig real_thread_config(const SimConfig &cfg)
{
    SimConfig c = cfg;
    if (!cfg.given.count("cpus"))
        c.cpus = cpus_online();
    return c;
}

std::string real_threads_refusal(const SimConfig &cfg, const std::set<std::string> &command_line)
{
    const SimConfig d;
    const std::pair<std::string, bool> run[] = {
        {"duration", cfg.duration_ns != 0},
        {"device-ns-per-op", cfg.device_ns_per_op != d.device_ns_per_op},
        {"iommu " + cfg.iommu, cfg.iommu != d.iommu},
        {"cmdq-entries", cfg.cmdq_entries != d.cmdq_entries},
        {"rcache-drain", cfg.rcache_drain_ns != d.rcache_drain_ns},
        {"dma sac-flush", cfg.dma == "sac-flush"},
    };
    for (const auto &[name, set] : run)
        if (set)
            return "--real-threads: --" + name +
                   " is not modelled there (the threads run the workload's steps through the "
                   "allocator and flush policy, and busy-wait the work): run it simulated";
    const std::pair<const char *, bool> machine[] = {
        {"sockets", cfg.sockets != d.sockets},
        {"spinlock", cfg.spinlock != d.spinlock},
        {"llc", cfg.llc != d.llc},
    };
    for (auto [name, set] : machine)
        if (set && command_line.count(name))
            return std::string("--real-threads: --") + name +
                   " does not apply (the threads run on this machine's own sockets, spinlock "
                   "and caches): run it simulated";
    return "";
}

namespace {

std::optional<RealResult> run_once(const SimConfig &cfg, std::string *error)
{
    auto fail = [&](std::string msg) -> std::optional<RealResult> {
        if (error)
            *error = std::move(msg);
        return std::nullopt;
    };
    SimConfig c = real_thread_config(cfg);
    std::string werr;
    auto wl = Workload::create(c, &werr);
    auto bwl = Workload::create(c, &werr);
    if (!wl || !bwl)
        return fail(werr);
    if (cfg.allocator == "none")
        return fail("real-thread mode needs an allocator");
    const WorkloadInfo &info = wl->info();
    unsigned n = info.cpus;
    uint64_t ops = uint64_t{info.measure_per_cpu} * n;
    CostModel cost = CostModel::standard();

    RealResult res;
    res.config = cfg;
    res.threads = n;
    res.unit = info.unit;

    std::atomic<uint64_t> failed{0};
    uint64_t leaked = 0, completed = 0, dropped = 0;
    res.baseline_wall_ns = run_threads(*bwl, n, ops, nullptr, failed, leaked, completed, dropped,
                                       cfg.clients_per_cpu, cfg.client_rtt_ns);

    iova::RealEnv env(n);
    env.lock_sample_shift = 0;  // time every acquisition: the figures are sums
    env.start_timer_thread();
    iova::Config acfg;
    acfg.granule_shift = info.granule_shift;
    acfg.ncpus = n;
    auto alloc = iova::Allocator::create(cfg.allocator, env, acfg);
    if (!alloc)
        return fail("unknown allocator '" + cfg.allocator + "'");
    SpinFlusher flusher(cost);
    auto policy = iova::FlushPolicy::create(cfg.flush, *alloc, flusher);
    if (!policy)
        return fail("unknown flush policy '" + cfg.flush + "'");
    iova::DmaDomain domain(*alloc, *policy,
                           {.forcedac = cfg.dma == "forcedac", .sac_once = cfg.dma == "sac-once"});
    Setup io{alloc.get(), &domain, {}};
    for (const DeviceSpec &d : info.devices)
        io.devices.push_back({.dma_mask = d.dma_mask, .pci = d.pci});

    res.wall_ns = run_threads(*wl, n, ops, &io, failed, leaked, completed, dropped,
                              cfg.clients_per_cpu, cfg.client_rtt_ns, policy.get());
    policy->drain();
    res.failed_maps = failed;
    res.leaked = leaked;
    res.transactions = completed;
    res.dropped = dropped;
    res.throughput = res.wall_ns > 0 ? double(completed - dropped) * 1e9 / res.wall_ns : 0;
    res.baseline_throughput =
        res.baseline_wall_ns > 0 ? double(ops) * 1e9 / res.baseline_wall_ns : 0;
    res.relative = res.baseline_throughput > 0 ? res.throughput / res.baseline_throughput : 0;

    uint64_t wait = 0;
    auto collect = [&](const std::vector<const iova::InstrumentedLock *> &locks) {
        for (const auto *l : locks) {
            const iova::LockStats snap = l->snapshot();  // a timer may hold it
            for (unsigned s = 0; s < unsigned(iova::Site::count_); s++) {
                const iova::SiteLockStats &st = snap[s];
                if (!st.acquisitions)
                    continue;
                std::string site = iova::site_name(iova::Site(s));
                auto it = std::find_if(res.profile.begin(), res.profile.end(), [&](auto &p) {
                    return p.lock == l->name() && p.site == site;
                });
                if (it == res.profile.end())
                    it = res.profile.insert(res.profile.end(), {l->name(), site});
                it->acquisitions += st.acquisitions;
                it->contended += st.contended;
                it->wait_ns += st.wait_ns.sum;
                it->hold_ns += st.hold_ns.sum;
                wait += st.wait_ns.sum;
            }
        }
    };
    collect(alloc->locks());
    collect(policy->locks());
    std::stable_sort(res.profile.begin(), res.profile.end(),
                     [](auto &a, auto &b) { return a.wait_ns > b.wait_ns; });
    res.spin_share = res.wall_ns > 0 ? double(wait) / (double(n) * res.wall_ns) : 0;
    return res;
}

}  // namespace

// Wall-clock runs share the machine with whatever else runs: take the
// fastest of a few runs of each (with and without the IOMMU), alternated.
std::optional<RealResult> run_real_threads(const SimConfig &cfg, std::string *error)
{
    constexpr int runs = 3;
    std::optional<RealResult> best;
    double best_baseline = 0;
    for (int i = 0; i < runs; i++) {
        auto r = run_once(cfg, error);
        if (!r)
            return r;
        if (!best || r->wall_ns < best->wall_ns)
            best = r;
        if (!best_baseline || r->baseline_wall_ns < best_baseline)
            best_baseline = r->baseline_wall_ns;
    }
    best->baseline_wall_ns = best_baseline;
    best->baseline_throughput = double(best->transactions) * 1e9 / best_baseline;
    best->relative = best->throughput / best->baseline_throughput;
    return best;
}

std::string RealResult::json() const
{
    using json::number, json::quoted;
    std::string o = "{\"mode\":\"real-threads\",\"workload\":" + quoted(config.workload) +
                    ",\"allocator\":" + quoted(config.allocator) +
                    ",\"flush\":" + quoted(config.flush) +
                    ",\"threads\":" + std::to_string(threads) + ",\"unit\":" + quoted(unit) +
                    ",\"transactions\":" + std::to_string(transactions) +
                    ",\"dropped\":" + std::to_string(dropped) +
                    ",\"failed_maps\":" + std::to_string(failed_maps) +
                    ",\"leaked\":" + std::to_string(leaked) + ",\"wall_ns\":" + number(wall_ns) +
                    ",\"throughput\":" + number(throughput) +
                    ",\"baseline_throughput\":" + number(baseline_throughput) +
                    ",\"relative\":" + number(relative) + ",\"spin_share\":" + number(spin_share) +
                    ",\"profile\":[";
    char buf[512];
    for (size_t i = 0; i < profile.size(); i++) {
        const auto &p = profile[i];
        std::snprintf(buf, sizeof buf,
                      "%s{\"lock\":\"%s\",\"site\":\"%s\",\"acquisitions\":%llu,\"contended\":%llu,"
                      "\"wait_ns\":%llu,\"hold_ns\":%llu}",
                      i ? "," : "", p.lock.c_str(), p.site.c_str(),
                      (unsigned long long)p.acquisitions, (unsigned long long)p.contended,
                      (unsigned long long)p.wait_ns, (unsigned long long)p.hold_ns);
        o += buf;
    }
    return o + "]}";
}

std::string RealResult::text() const
{
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s on %u threads (real): allocator %s, flush %s\n"
                  "  throughput %.0f %s/s, without IOMMU %.0f (%.1f%%); %.2f%% of thread time "
                  "waiting for locks\n",
                  config.workload.c_str(), threads, config.allocator.c_str(), config.flush.c_str(),
                  throughput, unit.c_str(), baseline_throughput, 100 * relative, 100 * spin_share);
    std::string o = buf;
    if (dropped) {
        std::snprintf(buf, sizeof buf,
                      "  DROPPED %llu of %llu %s: a map failed; the throughput counts the "
                      "others\n",
                      (unsigned long long)dropped, (unsigned long long)transactions, unit.c_str());
        o += buf;
    }
    for (const auto &p : profile) {
        std::snprintf(buf, sizeof buf,
                      "  %-28s %-14s acquired %10llu contended %8llu wait %.0f ns/acq\n",
                      p.lock.c_str(), p.site.c_str(), (unsigned long long)p.acquisitions,
                      (unsigned long long)p.contended,
                      p.acquisitions ? double(p.wait_ns) / p.acquisitions : 0);
        o += buf;
    }
    return o;
}

}  // namespace viommu::sim
