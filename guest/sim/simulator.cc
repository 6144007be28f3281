// SPDX-License-Identifier: GPL-2.0-or-later
#include "simulator.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>

#include <cstdint>
#include <cstdlib>

#include "../iova/iova.hpp"
#include "dma_domains.hpp"
#include "fiber.hpp"
#include "json.hpp"
#include "machine.hpp"
#include "sim_env.hpp"
#include "workload.hpp"

namespace viommu::sim {

namespace {

constexpr uint64_t kProgressOps = 1u << 23;

constexpr std::array<std::string_view, 4> dma_mode_names{"sac", "sac-flush", "sac-once",
                                                         "forcedac"};

// The machine's kernel spinlock and cache kind, as @cfg gives them (both
// validated by Params).
void set_machine(Machine &m, const SimConfig &cfg)
{
    m.set_spinlock(*parse_spinlock(cfg.spinlock));
    m.set_inclusive_llc(cfg.llc == "inclusive");
}

struct Mapping {
    uint64_t iova = 0;
    uint64_t bytes = 0;
    uint8_t device = 0;
    bool live = false;
    Nanos ready = 0;  // the device is done with it (--device-ns-per-op)
    int poster = -1;  // a ring completion handed to another CPU: whose ring slot it holds
};

// Runs the workload's steps on the virtual CPUs.  Each CPU is a coroutine
// (fiber.hpp) that the scheduler resumes when its clock is the smallest; it
// suspends itself after every step and before every lock attempt if
// another CPU's clock is smaller, and blocks while a lock it wants is held
// by a suspended CPU.  So lock attempts happen in virtual-time order of
// the attempts themselves, not of the steps that contain them.  Only one
// coroutine runs at a time and the choice is by (clock, CPU id): the run
// stays deterministic.
class Run final : public Yielder {
public:
    Run(const SimConfig &cfg, Workload &wl, Machine &m, SimEnv &env, DmaDomains *iommu)
        : wl_(wl), m_(m), env_(env), iommu_(iommu), n_(wl.info().cpus),
          slots_(n_, std::vector<Mapping>(wl.info().slots_per_cpu)), mailbox_(n_), pending_(n_),
          posted_(n_, 0), tag_wait_(n_, false), done_(n_, 0), dropped_(n_, 0),
          failed_txn_(n_, false), drain_ns_(cfg.rcache_drain_ns), next_drain_(cfg.rcache_drain_ns),
          co_(n_), device_free_(wl.info().physical_devices, 0),
          device_booked_(wl.info().physical_devices, 0), setup_booked_(n_),
          clients_(cfg.clients_per_cpu), client_rtt_(cfg.client_rtt_ns),
          arrivals_(n_, std::deque<Nanos>(cfg.clients_per_cpu, 0)), answering_(n_, false),
          idle_until_(n_, 0)
    {
        m_.set_yielder(this);
    }
    ~Run() override { m_.set_yielder(nullptr); }

    // Runs every CPU until @more(cpu) says stop and its pending steps are done.
    template <typename More>
    void phase(More &&more)
    {
        more_ = std::forward<More>(more);
        for (unsigned c = 0; c < n_; c++) {
            Coro &co = co_[c];
            co.blocked = co.finished = false;
            co.run = this;
            co.cpu = c;
            tag_wait_[c] = false;
            co.fiber.start(&Run::entry, &co, stack_size);
        }
        for (;;) {
            unsigned next = n_;
            bool any_blocked = false;
            for (unsigned c = 0; c < n_; c++) {
                if (co_[c].finished)
                    continue;
                if (co_[c].blocked) {
                    any_blocked = true;
                    continue;
                }
                if (next == n_ || m_.now(c) < m_.now(next))
                    next = c;
            }
            if (next == n_) {
                if (any_blocked)
                    std::abort();  // a lock cycle: cannot happen with ordered locks
                break;
            }
            current_ = next;
            env_.set_cpu(next);
            co_[next].fiber.resume();
        }
        for (Coro &co : co_)
            co.fiber.release();
        waiters_.clear();
    }

    void setup()
    {
        for (unsigned c = 0; c < n_; c++) {
            wl_.setup(c, steps_);
            pending_[c].assign(steps_.begin(), steps_.end());
            steps_.clear();
        }
        setting_up_ = true;
        phase([](unsigned) { return false; });
        setting_up_ = false;
        serve_setup_in_turn();
    }

    // Yielder
    void before_attempt(unsigned cpu) override { yield_if_behind(cpu); }
    void wait_release(VirtualLock &l, unsigned cpu) override
    {
        waiters_[&l].push_back(cpu);
        co_[cpu].blocked = true;
        suspend(cpu);
    }
    void released(VirtualLock &l) override
    {
        auto it = waiters_.find(&l);
        if (it == waiters_.end() || it->second.empty())
            return;
        co_[it->second.front()].blocked = false;
        it->second.pop_front();
    }

    uint64_t done(unsigned cpu) const { return done_[cpu]; }
    uint64_t total_done() const
    {
        uint64_t s = 0;
        for (auto d : done_)
            s += d;
        return s;
    }
    // Transactions one of whose maps failed: done, but dropped (the packet
    // or I/O never went out), so no part of the throughput.
    uint64_t total_dropped() const
    {
        uint64_t s = 0;
        for (auto d : dropped_)
            s += d;
        return s;
    }
    // Between phases, when no CPU is inside a transaction (a failed map of
    // the setup belongs to none).
    void reset_done()
    {
        std::fill(done_.begin(), done_.end(), 0);
        std::fill(dropped_.begin(), dropped_.end(), 0);
        std::fill(failed_txn_.begin(), failed_txn_.end(), false);
    }
    void reset_counts()
    {
        failed_maps = work_ns = idle_ns = completion_wait_ns = client_wait_ns = 0;
        std::fill(device_booked_.begin(), device_booked_.end(), 0);
    }
    // The service booked on the busiest device since reset_counts(): the
    // least time in which it can have served those mappings.
    Nanos device_busy_ns() const
    {
        uint64_t most = 0;
        for (uint64_t b : device_booked_)
            most = std::max(most, b);
        return most * wl_.info().device_ns;
    }
    uint64_t failed_maps = 0;
    RunObserver *observer = nullptr;         // --record
    std::function<void(uint64_t)> progress;  // every kProgressOps operations started
    Nanos work_ns = 0;                       // non-IOMMU work executed
    Nanos idle_ns = 0;                       // waiting for a device to finish with a mapping
    Nanos completion_wait_ns = 0;  // waiting for another CPU to run this CPU's completions
    Nanos client_wait_ns = 0;      // --clients-per-cpu: no request waiting

private:
    static constexpr size_t stack_size = 512 * 1024;
    struct Coro {
        Fiber fiber;
        Run *run = nullptr;
        unsigned cpu = 0;
        bool blocked = false, finished = false;
    };

    static void entry(void *arg)
    {
        auto *co = static_cast<Coro *>(arg);
        co->run->cpu_main(co->cpu);
    }

    void cpu_main(unsigned cpu)
    {
        for (;;) {
            fire_timers(cpu);
            if (pending_[cpu].empty()) {
                if (!more_(cpu)) {
                    // done: what is left in its mailbox runs in the next
                    // phase, and no CPU waits for it meanwhile
                    for (Mapping &mp : mailbox_[cpu])
                        release_slot(mp, cpu);
                    break;
                }
                if (++started_ % kProgressOps == 0 && progress)
                    progress(started_);
                await_request(cpu);
                wl_.next(cpu, steps_);
                pending_[cpu].assign(steps_.begin(), steps_.end());
                steps_.clear();
            }
            if (drain_ns_ && iommu_ && cpu == 0 && m_.now(0) >= next_drain_) {
                next_drain_ = m_.now(0) + drain_ns_;
                iommu_->flush_caches();
            }
            Step s = pending_[cpu].front();
            pending_[cpu].pop_front();
            execute(cpu, s);
            if (pending_[cpu].empty()) {
                done_[cpu]++;
                if (failed_txn_[cpu]) {
                    dropped_[cpu]++;
                    failed_txn_[cpu] = false;
                }
                if (answering_[cpu]) {  // replied: that client's next request
                    arrivals_[cpu].push_back(m_.now(cpu) + client_rtt_);
                    answering_[cpu] = false;
                }
                if (observer)
                    observer->op(RunObserver::txn, cpu, 0, 0, 0, m_.now(cpu), m_.now(cpu));
            }
            yield_if_behind(cpu);
        }
        co_[cpu].finished = true;
        co_[cpu].fiber.finish();
    }

    // The timers due on @cpu (a flush queue's, the depot trim) run now.
    void fire_timers(unsigned cpu)
    {
        Nanos t0 = m_.now(cpu);
        env_.fire_due_timers(cpu);
        if (observer && m_.now(cpu) > t0)
            observer->op(RunObserver::flush, cpu, 0, 0, 0, t0, m_.now(cpu));
    }

    // --clients-per-cpu: the transaction @cpu starts answers its clients'
    // oldest request; none has arrived yet, it idles until one does,
    // taking the completions handed to it meanwhile (its interrupts) and
    // running its due timers.  Only a running CPU can hand it one: it
    // moves straight to the earliest time another CPU runs (its clock, or
    // for another idle one the request it waits for), at least kIdleSlice
    // on (two CPUs at the same time), at most to its own request.
    static constexpr Nanos kIdleSlice = 1000;
    void await_request(unsigned cpu)
    {
        if (!clients_)
            return;
        const Nanos arrival = arrivals_[cpu].front();
        arrivals_[cpu].pop_front();
        answering_[cpu] = true;
        while (m_.now(cpu) < arrival) {
            if (!mailbox_[cpu].empty()) {
                drain_mailbox(cpu);
                continue;
            }
            const Nanos t = m_.now(cpu);
            Nanos next = arrival;
            for (unsigned c = 0; c < n_; c++)
                if (c != cpu && !co_[c].finished && !co_[c].blocked)
                    next = std::min(next, idle_until_[c] ? idle_until_[c] : m_.now(c));
            next = std::min(arrival, std::max(next, t + kIdleSlice));
            idle_until_[cpu] = arrival;
            client_wait_ns += next - t;
            m_.advance_to(cpu, next);
            fire_timers(cpu);
            yield_if_behind(cpu);
            idle_until_[cpu] = 0;
        }
    }

    // Suspend @cpu if another runnable CPU has a smaller (clock, id).
    void yield_if_behind(unsigned cpu)
    {
        Nanos t = m_.now(cpu);
        for (unsigned c = 0; c < n_; c++) {
            if (c == cpu || co_[c].finished || co_[c].blocked)
                continue;
            Nanos u = m_.now(c);
            if (u < t || (u == t && c < cpu)) {
                suspend(cpu);
                return;
            }
        }
    }
    void suspend(unsigned cpu)
    {
        co_[cpu].fiber.yield();
        env_.set_cpu(cpu);
    }

    // The device serves the mappings handed to it one after the other,
    // each for --device-ns-per-op.
    // @mp: the ring slot the booking completes, to be served in turn at
    // setup; none for a mapping posted to another CPU's mailbox (a copy).
    Nanos book_device(unsigned cpu, uint8_t dev, Mapping *mp = nullptr)
    {
        const WorkloadInfo &info = wl_.info();
        if (!info.device_ns)
            return 0;
        const unsigned phys = info.devices.at(dev).physical;
        if (setting_up_ && mp)
            setup_booked_[cpu].push_back({phys, m_.now(cpu), mp});
        device_booked_[phys]++;
        Nanos &free_at = device_free_[phys];
        free_at = std::max(free_at, m_.now(cpu)) + info.device_ns;
        return free_at;
    }
    // The rings filled at setup are served a mapping of each CPU in turn,
    // as a device arbitrates between its queues, not in the order the
    // setup happened to book them: without an IOMMU a map takes no time,
    // and CPU 0 would book its whole ring before CPU 1 books any, leaving
    // CPU 1 idle for the device's first pass over CPU 0's ring, and every
    // pass after it.
    void serve_setup_in_turn()
    {
        std::fill(device_free_.begin(), device_free_.end(), 0);
        for (size_t i = 0, left = 1; left; i++) {
            left = 0;
            for (unsigned c = 0; c < n_; c++) {
                if (i >= setup_booked_[c].size())
                    continue;
                left++;
                const SetupBooking &b = setup_booked_[c][i];
                Nanos &free_at = device_free_[b.device];
                free_at = std::max(free_at, b.at) + wl_.info().device_ns;
                b.mapping->ready = free_at;
            }
        }
        for (auto &v : setup_booked_)
            v.clear();
    }
    // Completing a mapping the device is not done with: wait, idle.
    void wait_ready(unsigned cpu, const Mapping &mp)
    {
        if (mp.ready > m_.now(cpu)) {
            idle_ns += mp.ready - m_.now(cpu);
            m_.advance_to(cpu, mp.ready);
        }
    }
    void unmap_now(unsigned cpu, Mapping &mp)
    {
        wait_ready(cpu, mp);
        Nanos t0 = m_.now(cpu);
        if (mp.live && iommu_)
            iommu_->unmap(mp.device, mp.iova, mp.bytes);
        if (mp.live && observer)
            observer->op(RunObserver::unmap, cpu, mp.device, mp.iova, mp.bytes, t0, m_.now(cpu));
        mp.live = false;
        release_slot(mp, cpu);
    }
    // @mp's completion has run (or will not hold its poster up): its ring slot is free.
    void release_slot(Mapping &mp, unsigned by)
    {
        if (mp.poster < 0)
            return;
        const auto poster = static_cast<unsigned>(mp.poster);
        posted_[poster]--;
        mp.poster = -1;
        wake(poster, by);
    }

    // Unmaps up to @max (0: all) of the completions handed to @cpu, oldest first.
    void drain_mailbox(unsigned cpu, uint64_t max = 0)
    {
        auto &box = mailbox_[cpu];
        uint64_t n = max ? std::min<uint64_t>(max, box.size()) : box.size();
        for (uint64_t i = 0; i < n && !box.empty(); i++) {
            Mapping mp = box.front();
            box.pop_front();
            unmap_now(cpu, mp);
        }
    }

    // A ring slot is free again only once its completion has run (blk-mq's
    // tag, a NIC's TX descriptor).  A ring hands over its oldest slot's
    // completion when it comes round to it; the device finished that
    // request earlier, so the completion CPU has until the submitter's
    // next hand-over to run it.  A submitter that finds the previous one
    // still waiting there waits, idle, taking the completions handed to
    // it meanwhile, as an idle CPU takes its interrupts.
    void wait_for_slots(unsigned cpu)
    {
        while (posted_[cpu] > 1) {
            drain_mailbox(cpu);
            if (posted_[cpu] <= 1)
                break;
            const Nanos t = m_.now(cpu);
            tag_wait_[cpu] = true;
            co_[cpu].blocked = true;
            suspend(cpu);
            completion_wait_ns += m_.now(cpu) - t;
        }
    }
    // @cpu, waiting for its slots, runs again at @by's clock: one of its
    // completions ran, or a completion was handed to it.
    void wake(unsigned cpu, unsigned by)
    {
        if (!tag_wait_[cpu])
            return;
        tag_wait_[cpu] = false;
        co_[cpu].blocked = false;
        m_.advance_to(cpu, m_.now(by));
    }

    void execute(unsigned cpu, const Step &s)
    {
        switch (s.kind) {
        case VIOMMU_SIM_WORK:
            m_.advance(cpu, s.value);
            work_ns += s.value;
            break;
        case VIOMMU_SIM_MAP: {
            Mapping &mp = slots_[cpu].at(s.arg);
            mp = {0, s.value, s.device, true, 0};
            Nanos t0 = m_.now(cpu);
            if (iommu_ && !iommu_->map(s.device, s.value, mp.iova)) {
                mp.live = false;
                failed_maps++;
                failed_txn_[cpu] = true;
            }
            if (mp.live && observer)
                observer->op(RunObserver::map, cpu, s.device, mp.iova, s.value, t0, m_.now(cpu));
            mp.ready = book_device(cpu, s.device, &mp);
            break;
        }
        case VIOMMU_SIM_UNMAP:
            unmap_now(cpu, slots_[cpu].at(s.arg));
            break;
        case VIOMMU_SIM_UNMAP_POST: {
            Mapping &mp = slots_[cpu].at(s.arg);
            const unsigned to = static_cast<unsigned>(s.value % n_);
            if (mp.live || mp.ready) {
                Mapping handed = mp;
                if (to != cpu && !co_[to].finished) {
                    handed.poster = static_cast<int>(cpu);
                    posted_[cpu]++;
                }
                mailbox_[to].push_back(handed);
                wake(to, cpu);
            }
            mp = {};
            wait_for_slots(cpu);
            break;
        }
        case VIOMMU_SIM_MAP_POST: {
            Mapping mp{0, s.value, s.device, true, 0};
            Nanos t0 = m_.now(cpu);
            if (iommu_ && !iommu_->map(s.device, s.value, mp.iova)) {
                failed_maps++;
                failed_txn_[cpu] = true;
                break;
            }
            if (observer)
                observer->op(RunObserver::map, cpu, s.device, mp.iova, s.value, t0, m_.now(cpu));
            mp.ready = book_device(cpu, s.device);
            mailbox_.at(s.arg % n_).push_back(mp);
            break;
        }
        case VIOMMU_SIM_UNMAP_MAILBOX:
            drain_mailbox(cpu, s.value);
            break;
        default:
            break;
        }
    }

    Workload &wl_;
    Machine &m_;
    SimEnv &env_;
    DmaDomains *iommu_;
    unsigned n_;
    std::vector<std::vector<Mapping>> slots_;
    std::vector<std::deque<Mapping>> mailbox_;
    std::vector<std::deque<Step>> pending_;
    std::vector<uint64_t> posted_;  // per CPU: its completions in other CPUs' mailboxes
    std::vector<bool> tag_wait_;    // ... blocked in wait_for_slots()
    std::vector<uint64_t> done_;
    std::vector<uint64_t> dropped_;
    std::vector<bool> failed_txn_;  // per CPU: a map of its transaction failed
    std::vector<Step> steps_;
    Nanos drain_ns_, next_drain_;
    std::vector<Coro> co_;
    unsigned current_ = 0;
    std::function<bool(unsigned)> more_;
    uint64_t started_ = 0;  // operations started in every phase so far
    std::map<const VirtualLock *, std::deque<unsigned>> waiters_;
    std::vector<Nanos> device_free_;
    std::vector<uint64_t> device_booked_;  // per device: mappings booked since reset_counts()
    struct SetupBooking {
        unsigned device;
        Nanos at;
        Mapping *mapping;
    };
    std::vector<std::vector<SetupBooking>> setup_booked_;  // per CPU, in its order
    bool setting_up_ = false;
    unsigned clients_;
    Nanos client_rtt_;
    std::vector<std::deque<Nanos>> arrivals_;  // per CPU: when its clients' requests arrive
    std::vector<bool> answering_;              // ... its transaction answers one of them
    std::vector<Nanos> idle_until_;            // ... it idles until this request (0: not idle)
};

struct Measured {
    uint64_t transactions;
    uint64_t dropped;  // ... of them: a map failed
    double elapsed_ns;
    Nanos idle_ns = 0;  // CPUs done with their own count, waiting for the last one
    bool cut = false;   // a --duration window ended at kMaxOpsPerCpu on some CPU
};

// setup, warm-up, then the measured window of @ops transactions (or, with
// @each, each CPU's own count of them; or, with @duration, every transaction
// a CPU starts before it has run that long), which every CPU starts with
// @once of non-IOMMU work.
Measured drive(Run &run, Machine &m, unsigned warmup, uint64_t ops,
               const std::vector<unsigned> &each, Nanos duration, Nanos once,
               const std::function<void()> &window_start)
{
    run.setup();
    run.reset_done();
    m.align_clocks();
    if (run.observer)
        run.observer->aligned(m.now(0));
    run.phase([&](unsigned cpu) { return run.done(cpu) < warmup; });
    run.reset_done();
    m.align_clocks();
    if (run.observer)
        run.observer->aligned(m.now(0));
    m.start_window();
    window_start();
    for (unsigned c = 0; once && c < m.ncpus(); c++) {
        m.advance(c, once);
        run.work_ns += once;
    }
    uint64_t started = 0;
    Nanos t0 = m.now(0);
    std::vector<uint64_t> started_each(each.size(), 0);
    bool cut = false;
    if (duration) {  // at most --ops-per-cpu's limit: a window of free operations ends too
        std::vector<uint64_t> started_per_cpu(m.ncpus(), 0);
        run.phase([&](unsigned cpu) {
            if (m.now(cpu) - t0 >= duration)
                return false;
            if (started_per_cpu[cpu]++ < kMaxOpsPerCpu)
                return true;
            cut = true;
            return false;
        });
    } else if (!each.empty()) {
        run.phase([&](unsigned cpu) {
            return cpu < each.size() && started_each[cpu] < each[cpu] ? (started_each[cpu]++, true)
                                                                      : false;
        });
    } else {
        run.phase([&](unsigned) { return started < ops ? (started++, true) : false; });
    }
    Nanos idle = 0;
    if (!each.empty() && !duration) {
        // Each CPU ran its own count: the window lasts until the last one is
        // done (a recording's span ends with its last CPU), so the others
        // wait.  The mean clock would let a CPU with less to do shorten it.
        Nanos busy = m.window_cpu_time();
        m.align_clocks();
        idle = m.window_cpu_time() - busy;
        if (run.observer)
            run.observer->aligned(m.now(0));
    }
    // a device-bound window lasts at least as long as its device needs to
    // serve what the window booked (the CPUs' clocks need not show it: the
    // device serves a mapping long after the map)
    return {run.total_done(), run.total_dropped(),
            std::max(m.window_elapsed(), double(run.device_busy_ns())), idle, cut};
}

bool known(std::span<const std::string_view> names, std::string_view n)
{
    return std::find(names.begin(), names.end(), n) != names.end();
}

}  // namespace

std::span<const std::string_view> dma_modes()
{
    return dma_mode_names;
}

std::optional<SimResult> simulate(const SimConfig &cfg, const CostModel &cost, std::string *error,
                                  RunObserver *observer, const Progress &progress)
{
    auto fail = [&](std::string msg) -> std::optional<SimResult> {
        if (error)
            *error = std::move(msg);
        return std::nullopt;
    };
    if (!known(dma_modes(), cfg.dma))
        return fail("--dma " + cfg.dma + ": unknown dma mode");
    if (cfg.allocator != "none" && !known(iova::Allocator::variants(), cfg.allocator))
        return fail("--allocator " + cfg.allocator + ": unknown allocator (--list)");
    if (cfg.allocator != "none" && !known(iova::FlushPolicy::policies(), cfg.flush))
        return fail("--flush " + cfg.flush + ": unknown flush policy (--list)");

    SimResult res;
    res.config = cfg;
    const CostModel cited = CostModel::standard();
    for (std::string_view f : CostModel::names())  // what a what-if run changed
        if (cost.get(f) != cited.get(f))
            res.cost_overrides += (res.cost_overrides.empty() ? "{\"" : ",\"") + std::string(f) +
                                  "\":" + std::to_string(cost.get(f));
    if (!res.cost_overrides.empty())
        res.cost_overrides += "}";
    std::string werr;
    auto make_wl = [&] { return Workload::create(cfg, &werr); };
    auto wl = make_wl();
    if (!wl)
        return fail(werr);
    const WorkloadInfo &info = wl->info();
    res.cpus = info.cpus;
    res.unit = info.unit;
    uint64_t ops = uint64_t{info.measure_per_cpu} * info.cpus;
    unsigned warmup = info.warmup_per_cpu;
    Nanos duration = cfg.duration_ns;

    // the same workload without an IOMMU
    {
        auto bwl = make_wl();
        Machine m(info.cpus, cost, cfg.sockets);
        set_machine(m, cfg);
        SimEnv env(m);
        Run run(cfg, *bwl, m, env, nullptr);
        if (progress)
            run.progress = [&](uint64_t n) { progress(n, false); };
        Measured b = drive(run, m, warmup, ops, info.measure_each, duration, info.once_ns,
                           [&] { run.reset_counts(); });
        res.baseline_throughput =
            b.elapsed_ns > 0 ? double(b.transactions) * 1e9 / b.elapsed_ns : 0;
        res.baseline_latency_ns =
            b.transactions ? b.elapsed_ns * info.cpus / double(b.transactions) : 0;
        res.window_cut = b.cut;
        res.untimed_baseline = b.elapsed_ns <= 0;
        if (cfg.allocator == "none") {
            res.transactions = b.transactions;
            res.elapsed_ns = b.elapsed_ns;
            res.throughput = res.baseline_throughput;
            res.latency_ns = res.baseline_latency_ns;
            res.relative = 1.0;
            res.cpu_time_ns = m.window_cpu_time();
            Nanos rest = res.cpu_time_ns;
            for (auto [what, ns] : {std::pair{"work", run.work_ns},
                                    {"device-wait", run.idle_ns},
                                    {"client-wait", run.client_wait_ns},
                                    {"idle", b.idle_ns}}) {
                ns = std::min(ns, rest);
                rest -= ns;
                res.cycles.push_back({what, "", "", ns});
            }
            res.cycles.push_back({"other", "", "", rest});
            return res;
        }
    }

    Machine m(info.cpus, cost, cfg.sockets);
    set_machine(m, cfg);
    SimEnv env(m);
    DmaDomains iommu(cfg, info, m, env);
    if (!iommu.ok())
        return fail("could not create allocator/flush policy/queue");
    Run run(cfg, *wl, m, env, &iommu);
    run.observer = observer;
    if (progress)
        run.progress = [&](uint64_t n) { progress(n, true); };
    if (observer)
        observer->begin(info);
    Measured r = drive(run, m, warmup, ops, info.measure_each, duration, info.once_ns, [&] {
        if (observer)
            observer->window_start();
        iommu.reset_stats();
        iommu.queue().reset_stats();
        env.reset_work();
        run.reset_counts();
    });
    res.transactions = r.transactions;
    res.dropped = r.dropped;
    res.elapsed_ns = r.elapsed_ns;
    res.window_cut = res.window_cut || r.cut;
    const uint64_t delivered = r.transactions - r.dropped;
    res.throughput = r.elapsed_ns > 0 ? double(delivered) * 1e9 / r.elapsed_ns : 0;
    res.relative = res.baseline_throughput > 0 ? res.throughput / res.baseline_throughput : 0;
    res.latency_ns = delivered ? r.elapsed_ns * info.cpus / double(delivered) : 0;
    res.failed_maps = run.failed_maps;
    res.maps = iommu.maps;
    res.retried_maps = iommu.retried_maps;
    res.allocator_retries = res.maps ? double(res.retried_maps) / double(res.maps) : 0;

    Nanos spin = 0;
    for (const VirtualLock &l : m.locks()) {
        for (const auto &[site, rec] : l.sites()) {
            if (!rec.acquisitions)
                continue;
            // A named copy: clang before 16 cannot capture a structured binding.
            const auto &site_name = site;
            auto it = std::find_if(res.profile.begin(), res.profile.end(), [&](const auto &p) {
                return p.lock == l.name() && p.site == site_name;
            });
            if (it == res.profile.end())
                it = res.profile.insert(res.profile.end(), {l.name(), site});
            it->acquisitions += rec.acquisitions;
            it->contended += rec.contended;
            it->spin_ns += rec.spin_ns;
            it->hold_ns += rec.hold_ns;
            it->handoff_ns += rec.handoff_ns;
            spin += rec.spin_ns;
        }
    }
    std::stable_sort(res.profile.begin(), res.profile.end(),
                     [](const auto &a, const auto &b) { return a.spin_ns > b.spin_ns; });
    Nanos cpu_time = m.window_cpu_time();
    res.cpu_time_ns = cpu_time;
    res.spin_share = cpu_time ? double(spin) / double(cpu_time) : 0;

    // allocator figures summed over the domains
    uint64_t nodes = 0, walks = 0;
    for (size_t i = 0; i < iommu.domain_count(); i++) {
        iova::Allocator &a = iommu.allocator(i);
        res.rbtree_allocs += a.stats().total(iova::Counter::rbtree_allocs);
        res.rcache_flushes += a.stats().total(iova::Counter::rcache_flush_all);
        auto h = a.stats().merged_hist().nodes_per_alloc;
        nodes += h.sum;
        walks += h.count;
        res.allocator_stats += std::string(i ? "," : "") + a.stats_json();
    }
    if (iommu.domain_count() > 1)
        res.allocator_stats = "[" + res.allocator_stats + "]";
    res.domains = unsigned(iommu.domain_count());
    res.nodes_per_alloc = walks ? double(nodes) / double(walks) : 0;
    res.inv = iommu.queue().stats();

    // The cycle profile: every CPU nanosecond of the window in one entry.
    // Spinning per lock and site, polling for invalidation completion,
    // non-IOMMU work, waiting for a device, the allocator's own work and
    // page-table writes (from their counts and the cost model), and the
    // rest: invalidation submission, lines pulled inside critical
    // sections, the owner's wait in the lock-free queue.
    Nanos rest = cpu_time;
    auto take = [&](std::string what, std::string lock, std::string site, Nanos ns) {
        ns = std::min(ns, rest);
        rest -= ns;
        res.cycles.push_back({std::move(what), std::move(lock), std::move(site), ns});
    };
    for (const auto &p : res.profile)
        if (p.spin_ns)
            take("spin", p.lock, p.site, p.spin_ns);
    take("invalidation-wait", "", "", res.inv.owner_poll_ns + res.inv.nonowner_poll_ns);
    take("work", "", "", run.work_ns);
    take("device-wait", "", "", run.idle_ns);
    take("completion-wait", "", "", run.completion_wait_ns);
    take("client-wait", "", "", run.client_wait_ns);
    take("idle", "", "", r.idle_ns);
    Nanos alloc_work = 0;
    for (unsigned w = 0; w < static_cast<unsigned>(iova::Work::count_); w++)
        alloc_work += env.work_ns(static_cast<iova::Work>(w));
    take("allocator", "", "", alloc_work);
    take("page-tables", "", "", iommu.pte_updates * cost.pte_update);
    if (const DevIotlbWalk *w = iommu.dev_iotlb()) {
        take("dev-iotlb-walk", "", "", w->walk_ns());
        take("flush-iova-lines", "", "", w->iova_line_ns());
    }
    res.cycles.push_back({"other", "", "", rest});
    return res;
}

double SimResult::spin_share_of(std::string_view lock, std::string_view site) const
{
    Nanos s = 0;
    for (const auto &p : profile)
        if (p.lock == lock && (site.empty() || p.site == site))
            s += p.spin_ns;
    double cpu_time = elapsed_ns * cpus;
    return cpu_time > 0 ? double(s) / cpu_time : 0;
}

double SimResult::spin_fraction_of(std::string_view lock, std::string_view site) const
{
    Nanos s = 0, all = 0;
    for (const auto &p : profile) {
        all += p.spin_ns;
        if ((lock.empty() || p.lock == lock) && (site.empty() || p.site == site))
            s += p.spin_ns;
    }
    return all ? double(s) / double(all) : 0;
}

double SimResult::mean_hold_ns(std::string_view lock, std::string_view site) const
{
    Nanos h = 0;
    uint64_t n = 0;
    for (const auto &p : profile)
        if (p.lock == lock && (site.empty() || p.site == site)) {
            h += p.hold_ns;
            n += p.acquisitions;
        }
    return n ? double(h) / double(n) : 0;
}

using json::quoted;

std::string SimResult::json() const
{
    bool iommu = config.allocator != "none";
    bool cmdq = iommu && config.iommu == "smmuv3" && inv.submissions;
    auto opt = [](bool have, double v) { return have ? json::number(v) : std::string("null"); };
    const bool timed = !untimed_baseline, rated = iommu || timed;
    std::string o = "{\"config\":" + config.json();
    if (!cost_overrides.empty())
        o += ",\"cost_overrides\":" + cost_overrides;
    if (config.duration_ns)
        o += std::string(",\"window_cut\":") + (window_cut ? "true" : "false");
    o += ",\"ops_per_s\":" + opt(rated, throughput) +
         ",\"relative_to_no_iommu\":" + opt(timed, relative) +
         ",\"no_iommu_ops_per_s\":" + opt(timed, baseline_throughput) +
         ",\"op_latency_ns\":" + opt(transactions > dropped || !iommu, latency_ns) +
         ",\"no_iommu_op_latency_ns\":" + json::number(baseline_latency_ns) +
         ",\"spin_share\":" + opt(iommu, spin_share) +
         ",\"allocator_retries\":" + opt(iommu && maps, allocator_retries) +
         ",\"cmdq_owner_share\":" + opt(cmdq, inv.owner_share()) + ",\"cmdq_poll_ns\":" +
         opt(cmdq, double(inv.owner_poll_ns + inv.nonowner_poll_ns) / double(inv.submissions)) +
         ",\"cmdq_owner_poll_ns\":" + opt(cmdq && inv.owners, inv.mean_poll_ns(true)) +
         ",\"cmdq_nonowner_poll_ns\":" +
         opt(cmdq && inv.submissions > inv.owners, inv.mean_poll_ns(false)) +
         ",\"cmdq_owner_issue_ns\":" + opt(cmdq && inv.owners, inv.mean_issue_ns(true)) +
         ",\"cmdq_nonowner_issue_ns\":" +
         opt(cmdq && inv.submissions > inv.owners, inv.mean_issue_ns(false)) +
         ",\"maps\":" + std::to_string(maps) + ",\"retried_maps\":" + std::to_string(retried_maps) +
         ",\"cpu_time_ns\":" + std::to_string(cpu_time_ns) + ",\"cycles\":[";
    for (size_t i = 0; i < cycles.size(); i++) {
        const CycleShare &c = cycles[i];
        o += std::string(i ? "," : "") + "{\"what\":" + quoted(c.what);
        if (!c.lock.empty())
            o += ",\"lock\":" + quoted(c.lock) + ",\"site\":" + quoted(c.site);
        o += ",\"ns\":" + std::to_string(c.ns) +
             ",\"share\":" + json::number(cpu_time_ns ? double(c.ns) / double(cpu_time_ns) : 0) +
             "}";
    }
    o += "]";
    o += ",\"unit\":" + quoted(unit) + ",\"transactions\":" + std::to_string(transactions) +
         ",\"dropped\":" + std::to_string(dropped) + ",\"elapsed_ns\":" + json::number(elapsed_ns) +
         ",\"throughput\":" + opt(rated, throughput) +
         ",\"baseline_throughput\":" + opt(timed, baseline_throughput) +
         ",\"relative\":" + opt(timed, relative) +
         ",\"failed_maps\":" + std::to_string(failed_maps) +
         ",\"nodes_per_alloc\":" + json::number(nodes_per_alloc) +
         ",\"rbtree_allocs\":" + std::to_string(rbtree_allocs) +
         ",\"rcache_flushes\":" + std::to_string(rcache_flushes) +
         ",\"domains\":" + std::to_string(domains) + ",\"profile\":[";
    bool first = true;
    for (const auto &p : profile) {
        if (!first)
            o += ',';
        first = false;
        o += "{\"lock\":" + quoted(p.lock) + ",\"site\":" + quoted(p.site) +
             ",\"acquisitions\":" + std::to_string(p.acquisitions) +
             ",\"contended\":" + std::to_string(p.contended) +
             ",\"spin_ns\":" + std::to_string(p.spin_ns) +
             ",\"hold_ns\":" + std::to_string(p.hold_ns) +
             ",\"handoff_ns\":" + std::to_string(p.handoff_ns) +
             ",\"spin_share\":" + json::number(spin_share_of(p.lock, p.site)) +
             ",\"spin_fraction\":" + json::number(spin_fraction_of(p.lock, p.site)) + "}";
    }
    o += "],\"invq\":" + inv.json();
    o += ",\"allocator_stats\":" +
         (allocator_stats.empty() ? std::string("null") : allocator_stats) + "}";
    return o;
}

}  // namespace viommu::sim
