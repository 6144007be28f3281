// SPDX-License-Identifier: GPL-2.0-or-later
#include "invq.hpp"

#include <algorithm>
#include <array>

namespace viommu::sim {

double InvStats::mean_poll_ns(bool owner) const
{
    uint64_t n = owner ? owners : submissions - owners;
    Nanos t = owner ? owner_poll_ns : nonowner_poll_ns;
    return n ? double(t) / double(n) : 0;
}

double InvStats::mean_issue_ns(bool owner) const
{
    uint64_t n = owner ? owners : submissions - owners;
    Nanos t = owner ? owner_busy_ns : busy_ns - owner_busy_ns;
    return n ? double(t) / double(n) : 0;
}

std::string InvStats::json() const
{
    return "{\"submissions\":" + std::to_string(submissions) +
           ",\"descriptors\":" + std::to_string(descriptors) +
           ",\"owners\":" + std::to_string(owners) + ",\"batches\":" + std::to_string(batches) +
           ",\"owner_poll_ns\":" + std::to_string(owner_poll_ns) +
           ",\"nonowner_poll_ns\":" + std::to_string(nonowner_poll_ns) +
           ",\"owner_wait_ns\":" + std::to_string(owner_wait_ns) +
           ",\"busy_ns\":" + std::to_string(busy_ns) +
           ",\"owner_busy_ns\":" + std::to_string(owner_busy_ns) + "}";
}

void InvQueue::submit_and_wait(unsigned cpu, unsigned descs)
{
    Nanos t0 = m_.now(cpu);
    stats_.submissions++;
    stats_.descriptors += descs;
    uint64_t owners = stats_.owners;
    submit(cpu, descs);
    stats_.busy_ns += m_.now(cpu) - t0;
    if (stats_.owners != owners)
        stats_.owner_busy_ns += m_.now(cpu) - t0;
}

Nanos InvQueue::consume(Nanos published, unsigned descs, bool fetch)
{
    // A busy engine reads everything published by the time it is ready
    // for more in one fetch: a list published before the last fetch began
    // rides on it.
    if (fetch && published <= last_fetch_)
        fetch = false;
    Nanos start = std::max(published, hw_free_at_);
    if (fetch)
        last_fetch_ = start;
    hw_free_at_ =
        start + (fetch ? m_.cost().inv_hw_fetch : 0) + Nanos{descs} * m_.cost().inv_hw_desc;
    return hw_free_at_;
}

Nanos InvQueue::poll_until(unsigned cpu, Nanos done)
{
    Nanos t0 = m_.now(cpu);
    Nanos poll = m_.cost().inv_poll;
    if (done > t0) {
        // the CPU notices completion at its next poll
        Nanos polls = (done - t0 + poll - 1) / poll;
        m_.advance(cpu, polls * poll);
    }
    return m_.now(cpu) - t0;
}

namespace {

// One lock around submission; @poll_locked: the CPU polls with it held.
class LockedQueue final : public InvQueue {
public:
    LockedQueue(std::string_view kind, Machine &m, bool poll_locked)
        : InvQueue(kind, m), lock_(m.make_lock(std::string(kind) + ".q_lock")),
          poll_locked_(poll_locked)
    {
    }

private:
    void submit(unsigned cpu, unsigned descs) override
    {
        m_.acquire(lock_, cpu, "submit");
        m_.advance(cpu, m_.cost().inv_submit);
        Nanos done = consume(m_.now(cpu), descs + 1, true);
        stats_.batches++;
        stats_.owners++;
        if (poll_locked_) {
            stats_.owner_poll_ns += poll_until(cpu, done);
            m_.release(lock_, cpu);
        } else {
            m_.release(lock_, cpu);
            stats_.owner_poll_ns += poll_until(cpu, done);
        }
    }

    VirtualLock &lock_;
    bool poll_locked_;
};

class LockFreeQueue final : public InvQueue {
public:
    LockFreeQueue(Machine &m)
        : InvQueue("smmu-lockfree", m), prod_(m.make_lock("smmu-lockfree.prod"))
    {
    }

private:
    void submit(unsigned cpu, unsigned descs) override
    {
        const CostModel &c = m_.cost();
        // cmpxchg on the shared {prod, cons, OWNED} word: a one-line
        // critical section in the cost model
        m_.atomic_rmw(prod_, cpu, "reserve");
        bool owner = m_.now(cpu) >= open_until_;
        // write the commands to the reserved slots, set their valid bits
        m_.advance(cpu, c.inv_submit / 2 + c.line_transfer);
        if (owner) {
            stats_.owners++;
            stats_.batches++;
            Nanos ready = m_.now(cpu);
            // wait for the previous owner to publish, then clear OWNED
            // (another atomic on the producer word): everything reserved
            // before that is ours to publish
            m_.advance_to(cpu, published_);
            stats_.owner_wait_ns += m_.now(cpu) - ready;
            open_until_ = m_.now(cpu) + c.line_transfer + c.lock_local;
            // (not queued on prod_: reservations simulated after this
            // operation may precede it in virtual time)
            m_.advance(cpu, 2 * c.line_transfer + c.lock_local + c.inv_submit / 2);
            published_ = m_.now(cpu);
            Nanos done = consume(published_, descs + 1, true);
            stats_.owner_poll_ns += poll_until(cpu, done);
        } else {
            // published by the current owner; our commands follow its list
            Nanos done = consume(std::max(published_, m_.now(cpu)), descs + 1, false);
            stats_.nonowner_poll_ns += poll_until(cpu, done);
        }
    }

    VirtualLock &prod_;
    Nanos open_until_ = 0;  // the current owner stops gathering at this time
    Nanos published_ = 0;   // the last owner's producer-register write
};

constexpr std::array<std::string_view, 3> kind_names{"vtd", "smmu-spinlock", "smmu-lockfree"};

}  // namespace

std::span<const std::string_view> InvQueue::kinds()
{
    return kind_names;
}

std::unique_ptr<InvQueue> InvQueue::create(std::string_view kind, Machine &m)
{
    if (kind == "vtd")
        return std::make_unique<LockedQueue>(kind, m, false);
    if (kind == "smmu-spinlock")
        return std::make_unique<LockedQueue>(kind, m, true);
    if (kind == "smmu-lockfree")
        return std::make_unique<LockFreeQueue>(m);
    return nullptr;
}

}  // namespace viommu::sim
