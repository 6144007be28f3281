// SPDX-License-Identifier: GPL-2.0-or-later
// Real and manual environments; see env.hpp.
#include "env.hpp"

#include <algorithm>
#include <chrono>

namespace viommu::iova {

const char *site_name(Site s)
{
    static constexpr const char *names[] = {
        "alloc",      "free",        "insert",      "free_batch",   "rcache_get",
        "rcache_put", "depot_get",   "depot_put",   "rcache_flush", "depot_trim",
        "unmap_add",  "unmap_flush", "flush_timer", "range_refill", "lookup",
    };
    static_assert(std::size(names) == static_cast<unsigned>(Site::count_));
    return names[static_cast<unsigned>(s)];
}

void TimerList::add(Timer &t, Nanos deadline)
{
    std::lock_guard g(lock_);
    by_deadline_.emplace(deadline, &t);
}

void TimerList::remove(Timer &t)
{
    std::lock_guard g(lock_);
    std::erase_if(by_deadline_, [&](const auto &kv) { return kv.second == &t; });
}

Timer *TimerList::take_first(Nanos now, Nanos &deadline)
{
    std::lock_guard g(lock_);
    if (by_deadline_.empty() || by_deadline_.begin()->first > now)
        return nullptr;
    auto it = by_deadline_.begin();
    Timer *t = it->second;
    deadline = it->first;
    by_deadline_.erase(it);
    return t;
}

static uint64_t next_env_serial()
{
    static std::atomic<uint64_t> serial{0};
    return ++serial;
}

RealEnv::RealEnv(unsigned ncpus) : ncpus_(ncpus ? ncpus : 1), serial_(next_env_serial()) {}

RealEnv::~RealEnv()
{
    stop_ = true;
    if (timer_thread_.joinable())
        timer_thread_.join();
}

Nanos RealEnv::now()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

unsigned RealEnv::current_cpu()
{
    // One id per (thread, env); ids are handed out in order of first use.
    thread_local uint64_t owner = 0;
    thread_local unsigned id = 0;
    if (owner != serial_) {
        owner = serial_;
        id = next_cpu_.fetch_add(1, std::memory_order_relaxed) % ncpus_;
    }
    return id;
}

bool RealEnv::arm_timer(Timer &t, Nanos deadline)
{
    if (!claim_pending(t))
        return false;
    timers_.add(t, deadline);
    return true;
}

void RealEnv::cancel_timer(Timer &t)
{
    std::lock_guard g(firing_);
    timers_.remove(t);
    set_pending(t, false);
}

void RealEnv::run_due_timers()
{
    Nanos deadline;
    std::lock_guard g(firing_);
    while (Timer *t = timers_.take_first(now(), deadline)) {
        set_pending(*t, false);
        t->fire();
    }
}

void RealEnv::start_timer_thread(Nanos period_ns)
{
    timer_thread_ = std::jthread([this, period_ns] {
        while (!stop_.load()) {
            run_due_timers();
            std::this_thread::sleep_for(std::chrono::nanoseconds(period_ns));
        }
    });
}

bool ManualEnv::arm_timer(Timer &t, Nanos deadline)
{
    if (!claim_pending(t))
        return false;
    timers_.add(t, deadline);
    return true;
}

void ManualEnv::cancel_timer(Timer &t)
{
    timers_.remove(t);
    set_pending(t, false);
}

void ManualEnv::set_now(Nanos t)
{
    // Fire in deadline order, each at its own time, so that a timer re-armed
    // by its callback fires again if still due before @t.
    Nanos deadline;
    while (Timer *tm = timers_.take_first(t, deadline)) {
        now_ = std::max(now_, deadline);
        set_pending(*tm, false);
        tm->fire();
    }
    now_ = t;
}

}  // namespace viommu::iova
