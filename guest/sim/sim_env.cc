// SPDX-License-Identifier: GPL-2.0-or-later
#include "sim_env.hpp"

#include <algorithm>
#include <limits>

namespace viommu::sim {

bool SimEnv::arm_timer(iova::Timer &t, iova::Nanos deadline)
{
    if (!claim_pending(t))
        return false;
    timers_.emplace(std::pair{deadline, arm_seq_++}, Armed{&t, cpu_});
    return true;
}

void SimEnv::cancel_timer(iova::Timer &t)
{
    std::erase_if(timers_, [&](const auto &kv) { return kv.second.timer == &t; });
    set_pending(t, false);
}

Nanos SimEnv::next_timer() const
{
    return timers_.empty() ? std::numeric_limits<Nanos>::max() : timers_.begin()->first.first;
}

void SimEnv::fire_next_timer()
{
    if (timers_.empty())
        return;
    auto it = timers_.begin();
    Nanos deadline = it->first.first;
    Armed a = it->second;
    timers_.erase(it);
    unsigned saved = cpu_;
    cpu_ = a.cpu;
    m_.advance_to(cpu_, deadline);
    set_pending(*a.timer, false);
    a.timer->fire();
    cpu_ = saved;
}

// Locks that are global in the kernel, not per IOMMU domain: intel-iommu's
// async_umap_flush_lock (one static lock, 2008-4.6) and its per-CPU
// deferred-flush queues (4.7-4.13, one per CPU for all domains).  Every
// domain's flush policy has its own instance; they share one virtual lock
// per (class, instance).
bool SimEnv::shared_class(std::string_view name)
{
    return name == "async_umap_flush_lock" || name == "deferred_flush";
}

void SimEnv::fire_due_timers(unsigned cpu)
{
    for (;;) {
        auto it = std::find_if(timers_.begin(), timers_.end(), [&](const auto &kv) {
            return kv.second.cpu == cpu && kv.first.first <= m_.now(cpu);
        });
        if (it == timers_.end())
            return;
        Armed a = it->second;
        timers_.erase(it);
        unsigned saved = cpu_;
        cpu_ = cpu;
        set_pending(*a.timer, false);
        a.timer->fire();
        cpu_ = saved;
    }
}

bool SimEnv::lock_attempt(const iova::InstrumentedLock &l, iova::Site s)
{
    auto [it, fresh] = locks_.try_emplace(&l, nullptr);
    if (fresh) {
        if (shared_class(l.name())) {
            auto [g, first] = shared_.try_emplace({l.name(), l.instance()}, nullptr);
            if (first)
                g->second = &m_.make_lock(l.name());
            it->second = g->second;
        } else {
            it->second = &m_.make_lock(l.name());
        }
    }
    return m_.acquire(*it->second, cpu_, iova::site_name(s));
}

void SimEnv::lock_released(const iova::InstrumentedLock &l, iova::Site)
{
    if (auto it = locks_.find(&l); it != locks_.end())
        m_.release(*it->second, cpu_);
}

void SimEnv::charge(iova::Work w, uint64_t n)
{
    const CostModel &c = m_.cost();
    Nanos unit = 0;
    switch (w) {
    case iova::Work::node_visit:
        unit = c.node_visit;
        break;
    // a node another CPU wrote since this one read it: its line moves here
    case iova::Work::node_fetch:
    case iova::Work::node_fetch_socket:
        unit = c.transfer(w == iova::Work::node_fetch);
        break;
    case iova::Work::tree_update:
        unit = c.tree_update;
        break;
    case iova::Work::mag_op:
        unit = c.mag_op;
        break;
    // an atomic on a word other CPUs write: its line comes from another core
    case iova::Work::shared_atomic:
        unit = m_.transfer_from_any(cpu_) + c.atomic;
        break;
    // invalidations are timed by the simulator's own queue model
    case iova::Work::invalidate:
        unit = 0;
        break;
    case iova::Work::count_:
        break;
    }
    work_[static_cast<unsigned>(w)] += n;
    work_ns_[static_cast<unsigned>(w)] += unit * n;
    m_.advance(cpu_, unit * n);
}

}  // namespace viommu::sim
