// SPDX-License-Identifier: GPL-2.0-or-later
#include "machine.hpp"

#include <algorithm>
#include <cstddef>
#include <numeric>

namespace viommu::sim {

Machine::Machine(unsigned ncpus, const CostModel &cost, unsigned sockets)
    : cost_(cost), sockets_(std::clamp(sockets, 1u, std::max(ncpus, 1u))),
      clocks_(std::max(ncpus, 1u), 0), window_start_(clocks_.size(), 0)
{
}

unsigned Machine::socket_of(unsigned cpu) const
{
    return static_cast<unsigned>(uint64_t{cpu} * sockets_ / clocks_.size());
}

Nanos Machine::transfer_from_any(unsigned to) const
{
    size_t n = clocks_.size();
    if (n < 2)
        return cost_.line_transfer;
    // other CPUs on @to's socket and on the others
    uint64_t same = 0;
    for (unsigned c = 0; c < n; c++)
        same += c != to && socket_of(c) == socket_of(to);
    uint64_t other = n - 1 - same;
    return (same * cost_.line_transfer + other * cost_.line_transfer_socket + (n - 2) / 2) /
           (n - 1);
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
            l.waiting_++;
            yielder_->wait_release(l, cpu);
            l.waiting_--;
        }
    }
    bool waited = blocked || l.free_at_ > start;
    bool remote = l.last_cpu_ >= 0 && l.last_cpu_ != static_cast<int>(cpu);
    Nanos xfer = remote ? transfer(static_cast<unsigned>(l.last_cpu_), cpu) : 0;
    // The lock word comes over in the lock function: once from the
    // releaser (queued), or behind the other spinners' re-reads (ticket).
    unsigned spinners = blocked ? l.spinners_at_release_ : waited ? 1 : 0;
    Nanos lock_xfer = xfer * handoff_half_transfers(spinlock_, spinners) / 2;
    advance_to(cpu, l.free_at_);
    clocks_[cpu] += cost_.lock_local + lock_xfer;
    auto it = l.sites_.find(site);
    if (it == l.sites_.end())
        it = l.sites_.emplace(std::string(site), SpinRecord{}).first;
    SpinRecord &r = it->second;
    r.acquisitions++;
    r.contended += waited;
    r.spin_ns += clocks_[cpu] - start;
    r.handoff_ns += lock_xfer;
    l.current_ = &r;
    l.held_ = true;
    l.holder_ = static_cast<int>(cpu);
    l.held_since_ = clocks_[cpu];
    // ... the data it protects is pulled in inside the critical section.
    if (remote && lines > 1)
        clocks_[cpu] += xfer * (lines - 1);
    return waited;
}

void Machine::release(VirtualLock &l, unsigned cpu)
{
    if (yielder_ && spinlock_ == Spinlock::ticket) {
        // Every CPU whose clock is behind the release reaches its attempt
        // first (and blocks on the lock it wants), so the spinners on the
        // lock word at the release are all known.
        yielder_->before_attempt(cpu);
        l.spinners_at_release_ = l.waiting_;
    }
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
