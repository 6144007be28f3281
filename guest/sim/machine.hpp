// SPDX-License-Identifier: GPL-2.0-or-later
// Virtual CPUs and spinlocks on a virtual clock.
//
// Each virtual CPU has its own clock.  A VirtualLock remembers when (in
// virtual time) its last holder released it and which CPU that was: a CPU
// that wants it earlier spins until then (FIFO, as a queued spinlock hands
// over in arrival order), and a CPU that is not the last holder pays for
// pulling the lock's line and the data it protects from the previous
// holder (CostModel::handoff_lines).
//
// With a Yielder (the simulator's coroutine scheduler), every attempt
// first lets CPUs with smaller clocks run, and blocks while the lock is
// held by a suspended CPU, so attempts take effect in virtual-time order
// of the attempts themselves (docs/simulation.rst).  Without one (unit
// tests driving a Machine directly), callers order operations themselves.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cost.hpp"
#include "spinlock.hpp"

namespace viommu::sim {

struct SpinRecord {
    uint64_t acquisitions = 0;
    uint64_t contended = 0;  // had to wait for another holder
    Nanos spin_ns = 0;       // in the lock function: wait + line fetch + local cost
    Nanos hold_ns = 0;
    Nanos handoff_ns = 0;  // ... of which the lock line's transfers from a previous holder
};

class VirtualLock {
public:
    explicit VirtualLock(std::string name) : name_(std::move(name)) {}
    const std::string &name() const { return name_; }
    // Per call site, in first-use order of the site name.
    const std::map<std::string, SpinRecord, std::less<>> &sites() const { return sites_; }
    bool held() const { return held_; }

private:
    friend class Machine;
    std::string name_;
    Nanos free_at_ = 0;
    int last_cpu_ = -1;
    bool held_ = false;
    int holder_ = -1;
    Nanos held_since_ = 0;
    SpinRecord *current_ = nullptr;
    unsigned waiting_ = 0;              // CPUs blocked in an attempt while it is held
    unsigned spinners_at_release_ = 0;  // ... counted at the last release (ticket locks)
    std::map<std::string, SpinRecord, std::less<>> sites_;
};

class VirtualLock;

// A scheduler that suspends virtual CPUs at lock attempts so that every
// attempt happens in virtual-time order (guest/sim/simulator.cc).
class Yielder {
public:
    virtual ~Yielder() = default;
    // @cpu is about to attempt a lock: let every CPU with a smaller clock run first.
    virtual void before_attempt(unsigned cpu) = 0;
    // @l is held by a suspended CPU: block @cpu until it is released.
    virtual void wait_release(VirtualLock &l, unsigned cpu) = 0;
    // @l was released: wake its first waiter.
    virtual void released(VirtualLock &l) = 0;
};

class Machine {
public:
    // @sockets: the CPUs are numbered socket by socket (CPU c is on socket
    // c * sockets / ncpus), as the kernel numbers the cores of a
    // multi-socket machine without SMT.
    Machine(unsigned ncpus, const CostModel &cost, unsigned sockets = 1);

    unsigned ncpus() const { return static_cast<unsigned>(clocks_.size()); }
    unsigned sockets() const { return sockets_; }
    unsigned socket_of(unsigned cpu) const;
    // One cache line moved from @from's cache to @to's.
    Nanos transfer(unsigned from, unsigned to) const
    {
        return cost_.transfer(socket_of(from) == socket_of(to));
    }
    // A line last written by some other CPU, not a known one: the mean over
    // the other CPUs of the machine.
    Nanos transfer_from_any(unsigned to) const;
    const CostModel &cost() const { return cost_; }
    // The kernel's spinlock implementation (spinlock.hpp); queued by default.
    void set_spinlock(Spinlock k) { spinlock_ = k; }
    Spinlock spinlock() const { return spinlock_; }
    // Each socket's last-level cache is inclusive of its cores' caches.
    void set_inclusive_llc(bool v) { inclusive_llc_ = v; }
    bool inclusive_llc() const { return inclusive_llc_; }
    Nanos now(unsigned cpu) const { return clocks_[cpu]; }
    void advance(unsigned cpu, Nanos d) { clocks_[cpu] += d; }
    void advance_to(unsigned cpu, Nanos t)
    {
        if (t > clocks_[cpu])
            clocks_[cpu] = t;
    }
    // The CPU to run next: smallest clock, lowest id on ties.
    unsigned next_cpu() const;

    // nullptr: no suspension, attempts ordered by their step's start.
    void set_yielder(Yielder *y) { yielder_ = y; }
    // Let every CPU with a smaller clock run first (a model that keeps its
    // own shared state enters it in virtual-time order).
    void sync_point(unsigned cpu)
    {
        if (yielder_)
            yielder_->before_attempt(cpu);
    }
    // Locks live as long as the Machine; the reference stays valid.
    VirtualLock &make_lock(std::string name);
    // Returns true if @cpu had to wait for another holder.
    bool acquire(VirtualLock &l, unsigned cpu, std::string_view site)
    {
        return acquire(l, cpu, site, cost_.handoff_lines);
    }
    // The same with @lines cache lines fetched from a previous holder on
    // another CPU (1: an atomic on a single shared word).
    bool acquire(VirtualLock &l, unsigned cpu, std::string_view site, unsigned lines);
    // One atomic read-modify-write of a contended word, as a one-line lock.
    bool atomic_rmw(VirtualLock &l, unsigned cpu, std::string_view site)
    {
        bool waited = acquire(l, cpu, site, 1);
        release(l, cpu);
        return waited;
    }
    void release(VirtualLock &l, unsigned cpu);

    // Every CPU waits until the latest one catches up (a barrier).
    void align_clocks();
    // Start of the measured window: clears lock records, remembers clocks.
    void start_window();
    // CPU time in the window, summed over CPUs.
    Nanos window_cpu_time() const;
    // Mean clock advance since start_window().
    double window_elapsed() const;
    const std::deque<VirtualLock> &locks() const { return locks_; }

private:
    CostModel cost_;
    unsigned sockets_ = 1;
    Spinlock spinlock_ = Spinlock::queued;
    bool inclusive_llc_ = false;
    std::vector<Nanos> clocks_;
    std::vector<Nanos> window_start_;
    std::deque<VirtualLock> locks_;
    Yielder *yielder_ = nullptr;
};

// RAII holder of a VirtualLock for the sim's own models.
class VirtualLockGuard {
public:
    VirtualLockGuard(Machine &m, VirtualLock &l, unsigned cpu, std::string_view site)
        : m_(m), l_(l), cpu_(cpu)
    {
        m_.acquire(l_, cpu_, site);
    }
    ~VirtualLockGuard() { m_.release(l_, cpu_); }
    VirtualLockGuard(const VirtualLockGuard &) = delete;
    VirtualLockGuard &operator=(const VirtualLockGuard &) = delete;

private:
    Machine &m_;
    VirtualLock &l_;
    unsigned cpu_;
};

}  // namespace viommu::sim
