// SPDX-License-Identifier: GPL-2.0-or-later
#include "qi_sync.hpp"

#include <algorithm>

namespace viommu::sim {

namespace {

class QiSyncQueue final : public InvQueue {
public:
    explicit QiSyncQueue(Machine &m) : InvQueue("vtd", m), lock_(m.make_lock("vtd.q_lock")) {}

private:
    bool submit(unsigned cpu, unsigned descs) override
    {
        Nanos done = submit_locked(lock_, cpu, descs);
        took(cpu, m_.now(cpu));
        m_.release(lock_, cpu);
        Nanos p0 = m_.now(cpu);
        // Each iteration reads the status word (and the fault status) under
        // q_lock; the one that starts after the hardware wrote it ends the
        // loop.
        for (;;) {
            m_.sync_point(cpu);
            Nanos start = std::max(m_.now(cpu), held_until_);
            Nanos xfer = last_cpu_ >= 0 && unsigned(last_cpu_) != cpu
                             ? m_.transfer(unsigned(last_cpu_), cpu)
                             : 0;
            stats_.poll_handoffs += xfer != 0;
            m_.advance_to(cpu, start);
            m_.advance(cpu, m_.cost().lock_local + xfer);
            bool complete = m_.now(cpu) >= done;
            m_.advance(cpu, m_.cost().inv_poll);
            took(cpu, m_.now(cpu));
            if (complete)
                break;
        }
        stats_.owner_poll_ns += m_.now(cpu) - p0;
        return true;
    }

    // @cpu holds q_lock until @until
    void took(unsigned cpu, Nanos until)
    {
        last_cpu_ = static_cast<int>(cpu);
        held_until_ = std::max(held_until_, until);
    }

    VirtualLock &lock_;
    int last_cpu_ = -1;     // the last CPU that held q_lock (submitting or polling)
    Nanos held_until_ = 0;  // ... and when its hold ends
};

}  // namespace

std::unique_ptr<InvQueue> make_qi_sync_queue(Machine &m)
{
    return std::make_unique<QiSyncQueue>(m);
}

}  // namespace viommu::sim
