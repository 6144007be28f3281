// SPDX-License-Identifier: GPL-2.0-or-later
// SimEnv: the allocator's Env on the simulator's virtual CPUs.
//
// now() is the current virtual CPU's clock; InstrumentedLock attempts
// queue on a VirtualLock per lock instance; charge() advances the current
// CPU's clock by the cost model; timers go on a deadline-ordered list the
// simulator fires on the CPU that armed them.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "../iova/env.hpp"
#include "../iova/lock.hpp"
#include "machine.hpp"

namespace viommu::sim {

class SimEnv final : public iova::Env {
public:
    explicit SimEnv(Machine &m) : m_(m) {}

    iova::Nanos now() override { return m_.now(cpu_); }
    unsigned current_cpu() override { return cpu_; }
    unsigned ncpus() const override { return m_.ncpus(); }
    bool arm_timer(iova::Timer &t, iova::Nanos deadline) override;
    void cancel_timer(iova::Timer &t) override;

    bool lock_attempt(const iova::InstrumentedLock &l, iova::Site s) override;
    void lock_released(const iova::InstrumentedLock &l, iova::Site s) override;
    void charge(iova::Work w, uint64_t n) override;
    unsigned socket_of(unsigned cpu) const override { return m_.socket_of(cpu); }
    bool inclusive_llc() const override { return m_.inclusive_llc(); }

    void set_cpu(unsigned cpu) { cpu_ = cpu; }
    // Earliest pending timer deadline, or UINT64_MAX.
    Nanos next_timer() const;
    // Fire the earliest timer on the CPU that armed it, not before its deadline.
    void fire_next_timer();
    // Fire every timer @cpu armed whose deadline its clock has passed.
    void fire_due_timers(unsigned cpu);

    uint64_t work_units(iova::Work w) const { return work_[static_cast<unsigned>(w)]; }
    // CPU time charged for @w
    Nanos work_ns(iova::Work w) const { return work_ns_[static_cast<unsigned>(w)]; }
    void reset_work()
    {
        work_ = {};
        work_ns_ = {};
    }
    // A kernel-global lock class: one virtual lock per (class, instance)
    // whatever domain's policy takes it.
    static bool shared_class(std::string_view name);

private:
    struct Armed {
        iova::Timer *timer;
        unsigned cpu;
    };
    Machine &m_;
    unsigned cpu_ = 0;
    std::unordered_map<const iova::InstrumentedLock *, VirtualLock *> locks_;
    std::map<std::pair<std::string, unsigned>, VirtualLock *> shared_;
    std::multimap<std::pair<Nanos, uint64_t>, Armed> timers_;  // (deadline, arm order)
    uint64_t arm_seq_ = 0;
    std::array<uint64_t, static_cast<unsigned>(iova::Work::count_)> work_{};
    std::array<Nanos, static_cast<unsigned>(iova::Work::count_)> work_ns_{};
};

}  // namespace viommu::sim
