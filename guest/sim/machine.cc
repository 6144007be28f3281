// SPDX-License-Identifier: GPL-2.0-or-later
#include "machine.hpp"

#include <algorithm>
#include <cstddef>
#include <numeric>

namespace viommu::sim {

Machine::Machine(unsigned ncpus, const CostModel &cost)
    : cost_(cost), clocks_(std::max(ncpus, 1u), 0), window_start_(clocks_.size(), 0)
{
}

unsigned Machine::next_cpu() const
{
    return static_cast<unsigned>(std::min_element(clocks_.begin(), clocks_.end()) -
                                 clocks_.begin());
}

VirtualLock &Machine::make_lock(std::string name)
{
    return locks_.emplace_back(std::move(name));
}

bool Machine::acquire(VirtualLock &l, unsigned cpu, std::string_view site, unsigned lines)
{
    bool blocked = false;
    Nanos start = clocks_[cpu];
    if (yielder_) {
        yielder_->before_attempt(cpu);
        start = clocks_[cpu];
        while (l.held_ && l.holder_ != static_cast<int>(cpu)) {
            blocked = true;
            yielder_->wait_release(l, cpu);
        }
    }
    bool waited = blocked || l.free_at_ > start;
    bool remote = l.last_cpu_ >= 0 && l.last_cpu_ != static_cast<int>(cpu);
    advance_to(cpu, l.free_at_);
    // The lock word comes over in the lock function ...
    clocks_[cpu] += cost_.lock_local + (remote ? cost_.line_transfer : 0);
    auto it = l.sites_.find(site);
    if (it == l.sites_.end())
        it = l.sites_.emplace(std::string(site), SpinRecord{}).first;
    SpinRecord &r = it->second;
    r.acquisitions++;
    r.contended += waited;
    r.spin_ns += clocks_[cpu] - start;
    l.current_ = &r;
    l.held_ = true;
    l.holder_ = static_cast<int>(cpu);
    l.held_since_ = clocks_[cpu];
    // ... the data it protects is pulled in inside the critical section.
    if (remote && lines > 1)
        clocks_[cpu] += cost_.line_transfer * (lines - 1);
    return waited;
}

void Machine::release(VirtualLock &l, unsigned cpu)
{
    l.held_ = false;
    l.holder_ = -1;
    l.free_at_ = clocks_[cpu];
    l.last_cpu_ = static_cast<int>(cpu);
    if (l.current_)
        l.current_->hold_ns += clocks_[cpu] - l.held_since_;
    l.current_ = nullptr;
    if (yielder_)
        yielder_->released(l);
}

void Machine::align_clocks()
{
    Nanos latest = *std::max_element(clocks_.begin(), clocks_.end());
    std::fill(clocks_.begin(), clocks_.end(), latest);
}

void Machine::start_window()
{
    window_start_ = clocks_;
    for (auto &l : locks_)
        for (auto &[site, r] : l.sites_)
            r = {};
}

Nanos Machine::window_cpu_time() const
{
    Nanos sum = 0;
    for (size_t i = 0; i < clocks_.size(); i++)
        sum += clocks_[i] - window_start_[i];
    return sum;
}

double Machine::window_elapsed() const
{
    return static_cast<double>(window_cpu_time()) / static_cast<double>(clocks_.size());
}

}  // namespace viommu::sim
