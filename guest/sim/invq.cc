// SPDX-License-Identifier: GPL-2.0-or-later
#include "invq.hpp"
#include "qi_sync.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>

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

namespace {
std::string per_cpu_list(const std::vector<InvStats::PerCpu> &v)
{
    if (v.empty())
        return {};
    std::string o = ",\"per_cpu\":[";
    for (size_t i = 0; i < v.size(); i++)
        o += std::string(i ? "," : "") + "{\"owners\":" + std::to_string(v[i].owners) +
             ",\"nonowners\":" + std::to_string(v[i].nonowners) +
             ",\"owner_poll_ns\":" + std::to_string(v[i].owner_poll_ns) +
             ",\"nonowner_poll_ns\":" + std::to_string(v[i].nonowner_poll_ns) + "}";
    return o + "]";
}
}  // namespace

std::string InvStats::per_cpu_json() const
{
    return per_cpu_list(per_cpu);
}

std::string InvStats::json() const
{
    return "{\"submissions\":" + std::to_string(submissions) +
           ",\"descriptors\":" + std::to_string(descriptors) +
           ",\"owners\":" + std::to_string(owners) + ",\"batches\":" + std::to_string(batches) +
           ",\"owner_poll_ns\":" + std::to_string(owner_poll_ns) +
           ",\"nonowner_poll_ns\":" + std::to_string(nonowner_poll_ns) +
           ",\"owner_wait_ns\":" + std::to_string(owner_wait_ns) +
           ",\"valid_wait_ns\":" + std::to_string(valid_wait_ns) +
           ",\"busy_ns\":" + std::to_string(busy_ns) +
           ",\"owner_busy_ns\":" + std::to_string(owner_busy_ns) +
           ",\"reservations\":" + std::to_string(reservations) +
           ",\"cmpxchg_retries\":" + std::to_string(cmpxchg_retries) +
           ",\"reserve_ns\":" + std::to_string(reserve_ns) +
           ",\"full_waits\":" + std::to_string(full_waits) +
           ",\"cons_refreshes\":" + std::to_string(cons_refreshes) +
           ",\"full_wait_ns\":" + std::to_string(full_wait_ns) +
           ",\"poll_handoffs\":" + std::to_string(poll_handoffs) + per_cpu_json() + "}";
}

void InvQueue::submit_and_wait(unsigned cpu, unsigned descs)
{
    Nanos t0 = m_.now(cpu);
    stats_.submissions++;
    stats_.descriptors += descs;
    // The submission reports its own role: other CPUs' submissions run
    // while this one is suspended at a sync point, and count theirs.
    bool owner = submit(cpu, descs);
    stats_.busy_ns += m_.now(cpu) - t0;
    if (owner)
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
    hw_free_at_ = start + (fetch ? m_.cost().inv_hw_fetch : 0) + Nanos{descs} * desc_ns();
    return hw_free_at_;
}

Nanos InvQueue::desc_ns() const
{
    return kind_ == "vtd" ? m_.cost().inv_hw_desc : m_.cost().smmu_hw_desc;
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

Nanos InvQueue::submit_locked(VirtualLock &lock, unsigned cpu, unsigned descs)
{
    m_.acquire(lock, cpu, "submit");
    m_.advance(cpu, m_.cost().inv_submit);
    stats_.batches++;
    stats_.owners++;
    return consume(m_.now(cpu), descs + 1, true);
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
    bool submit(unsigned cpu, unsigned descs) override
    {
        Nanos done = submit_locked(lock_, cpu, descs);
        if (poll_locked_) {
            stats_.owner_poll_ns += poll_until(cpu, done);
            m_.release(lock_, cpu);
        } else {
            m_.release(lock_, cpu);
            stats_.owner_poll_ns += poll_until(cpu, done);
        }
        return true;
    }

    VirtualLock &lock_;
    bool poll_locked_;
};

// One contended cache line (a word several CPUs update with atomics): the
// atomics on it take effect one after the other; each pays the transfer
// of the line from the CPU that last wrote it.
class ContendedLine {
public:
    // An atomic by @cpu ready at @t; returns when it completes.
    Nanos rmw(Machine &m, unsigned cpu, Nanos t)
    {
        Nanos start = std::max(t, free_at_);
        Nanos xfer = last_cpu_ >= 0 && last_cpu_ != static_cast<int>(cpu)
                         ? m.transfer(static_cast<unsigned>(last_cpu_), cpu)
                         : 0;
        free_at_ = start + xfer + m.cost().atomic;
        last_cpu_ = static_cast<int>(cpu);
        return free_at_;
    }
    // A plain read by @cpu at @t (shared: it does not hold the line up).
    Nanos read(const Machine &m, unsigned cpu, Nanos t) const
    {
        return t + (last_cpu_ >= 0 && last_cpu_ != static_cast<int>(cpu)
                        ? m.transfer(static_cast<unsigned>(last_cpu_), cpu)
                        : 0);
    }
    Nanos free_at() const { return free_at_; }

private:
    Nanos free_at_ = 0;
    int last_cpu_ = -1;
};

// arm_smmu_cmdq_issue_cmdlist() (drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3.c,
// 5.5-6.1).  Submissions are entered in virtual-time order of their start
// (Machine::sync_point) and computed to completion: the shared state below
// (the words' lines, the current owner's window, the last publication)
// only ever moves forward in time.
class LockFreeQueue final : public InvQueue {
public:
    LockFreeQueue(Machine &m, bool cmpxchg, unsigned entries)
        : InvQueue(cmpxchg ? "smmu-lockfree" : "smmu-fetch-add", m), cmpxchg_(cmpxchg),
          entries_(entries ? entries : kDefaultCmdqEntries)
    {
        stats_.per_cpu.resize(m.ncpus());
    }

private:
    bool submit(unsigned cpu, unsigned descs) override
    {
        const CostModel &c = m_.cost();
        m_.sync_point(cpu);
        Nanos t0 = m_.now(cpu);
        bool gathered = false;
        const unsigned n = descs + 1;
        Nanos t = wait_for_space(cpu, t0, n);
        t = reserve(cpu, t, gathered);
        const uint64_t prod = prod_;
        prod_ += n;
        stats_.reserve_ns += t - t0;
        stats_.reservations++;
        // OWNED was clear in the value our atomic replaced: we own the
        // next batch and set OWNED for everyone after us.
        bool owner = !gathered;
        // write the commands (16 bytes each: the slots' lines come from
        // whoever used them a revolution ago), then the shared side of
        // cmdq->lock and the valid bits, each an atomic on a shared line
        unsigned lines = (descs + 1 + 3) / 4;
        t += lines * m_.transfer_from_any(cpu);
        t = lock_.rmw(m_, cpu, t);
        const Nanos shared_at = t;
        t = valid_.rmw(m_, cpu, t);
        InvStats::PerCpu &pc = stats_.per_cpu.at(cpu);
        // in cmdq->lock's shared side until we know when we leave it
        const uint64_t holder = next_holder_++;
        holders_.push_back({shared_at, kNever, prod + n, holder});
        Nanos done;
        Nanos poll_from = t;
        if (owner) {
            stats_.owners++;
            stats_.batches++;
            pc.owners++;
            // a. wait for the previous owner's owner_prod: one still
            // suspended before its publication publishes first
            while (unpublished_) {
                m_.advance_to(cpu, unpublished_at_ + 1);
                m_.sync_point(cpu);
            }
            Nanos ready = t;
            t = std::max(t, published_);
            stats_.owner_wait_ns += t - ready;
            // b. stop gathering: fetch_andnot(OWNED) on the reservation
            // word.  It queues behind every reservation that reaches the
            // line before it; those are entered later (they start later)
            // and push it back (reserve()).  Booked on the line when the
            // first reservation after it arrives.
            clear_ready_ = t;
            clear_cpu_ = cpu;
            clear_pending_ = true;
            clear_at_ = std::max(t, word_.free_at()) + c.line_transfer + c.atomic;
            gathered_valid_ = 0;
            // every CPU whose reservation can land before the clear runs
            // up to it first (its valid bits set, gathered_valid_)
            unpublished_ = true;
            unpublished_at_ = t;
            m_.advance_to(cpu, t);
            m_.sync_point(cpu);
            unpublished_ = false;
            // c. poll the valid bitmap over the gathered range until the
            // last gathered CPU's bits are set, d. write the producer
            // register (an uncached MMIO write), e. owner_prod
            if (gathered_valid_ > clear_at_)
                stats_.valid_wait_ns += gathered_valid_ - clear_at_;
            published_ = publish_time();
            t = published_;
            done = consume(published_, descs + 1, true);
            poll_from = t;
        } else {
            pc.nonowners++;
            // our bits are set: the owner's valid-map poll waits for them
            gathered_valid_ = std::max(gathered_valid_, t);
            published_ = std::max(published_, publish_time());
            // let our owner publish first (it is suspended at its clear,
            // or runs after us to it); we poll our CMD_SYNC meanwhile
            if (unpublished_) {
                m_.advance_to(cpu, std::max(t, unpublished_at_ + 1));
                m_.sync_point(cpu);
            }
            // our slots follow the current owner's; the hardware reaches
            // them once it published and our valid bits are set
            done = consume(std::max(published_, t), descs + 1, false);
        }
        m_.advance_to(cpu, t);
        poll_until(cpu, done);
        const Nanos poll = m_.now(cpu) - poll_from;
        (owner ? stats_.owner_poll_ns : stats_.nonowner_poll_ns) += poll;
        (owner ? pc.owner_poll_ns : pc.nonowner_poll_ns) += poll;
        // drop the shared lock (atomic_dec; the last holder also writes
        // cons).  Charged, not queued on the line: it happens after the
        // poll, later than the reservations the other CPUs enter next.
        m_.advance(cpu, lock_.read(m_, cpu, 0) + c.atomic);
        consumed_.push_back({done, prod + n});
        // the shared holder's cons (just past its CMD_SYNC) and when it left
        for (Holder &g : holders_)
            if (g.id == holder)
                g.unlock_at = m_.now(cpu);
        return owner;
    }

    // Shared holders of cmdq->lock out by @t, in the order they dropped
    // it: the one that found itself the last holder (tryunlock failing
    // with the count at 1: no other holder in at that moment) writes its
    // cons into the shared word.  A holder's interval is known when its
    // submission is entered, and every later one starts after @t.
    void resolve(Nanos t)
    {
        for (;;) {
            auto first = holders_.end();
            for (auto it = holders_.begin(); it != holders_.end(); ++it)
                if (it->unlock_at <= t &&
                    (first == holders_.end() || it->unlock_at < first->unlock_at))
                    first = it;
            if (first == holders_.end())
                return;
            if (last_out(*first))
                cons_ = std::max(cons_, first->cons);
            holders_.erase(first);
        }
    }
    static constexpr Nanos kNever = ~Nanos{0};
    struct Holder {
        Nanos lock_at, unlock_at;  // unlock_at: kNever while its submission runs
        uint64_t cons;
        uint64_t id;
    };
    bool last_out(const Holder &h) const
    {
        for (const Holder &g : holders_)
            if (&g != &h && g.lock_at <= h.unlock_at && g.unlock_at > h.unlock_at)
                return false;
        return true;
    }
    unsigned holders_at(Nanos t) const
    {
        unsigned k = 0;
        for (const Holder &g : holders_)
            k += g.lock_at <= t && t < g.unlock_at;
        return k;
    }
    // what the hardware's cons register says at @t
    uint64_t hw_cons_at(Nanos t)
    {
        while (consumed_.size() > 1 && consumed_[1].first <= t)
            consumed_.pop_front();
        return !consumed_.empty() && consumed_.front().first <= t ? consumed_.front().second : 0;
    }

    // Step 0 of the cmpxchg loop: queue_has_space() against the cons
    // cached in the shared word.  Without space, the CPU runs
    // arm_smmu_cmdq_poll_until_not_full(): with no shared holder the
    // exclusive trylock succeeds and it reads the cons register into the
    // word; otherwise it spins on the word until the last shared holder
    // out writes its cons there.
    Nanos wait_for_space(unsigned cpu, Nanos t, unsigned n)
    {
        const CostModel &c = m_.cost();
        const Nanos t0 = t;
        resolve(t);
        bool waited = false;
        for (unsigned guard = 0; prod_ + n > cons_ + entries_ && guard < (1u << 20); guard++) {
            waited = true;
            if (!holders_at(t)) {
                // cmpxchg(lock, 0, INT_MIN), readl(cons_reg), WRITE_ONCE into the word, unlock
                t = lock_.rmw(m_, cpu, t) + c.inv_submit;
                uint64_t hw = hw_cons_at(t);
                stats_.cons_refreshes++;
                if (hw > cons_)
                    cons_ = hw;
                t = word_.rmw(m_, cpu, t);
                t = lock_.rmw(m_, cpu, t);
                if (prod_ + n > cons_ + entries_) {
                    // the hardware has not consumed enough yet: poll again
                    // once it has (queue_poll's interval)
                    Nanos next = t + c.inv_poll;
                    for (const auto &[done, end] : consumed_)
                        if (end + entries_ >= prod_ + n) {
                            next = std::max(next, done);
                            break;
                        }
                    t = next;
                }
            } else {
                // the next time a holder leaves last
                Nanos next = 0;
                for (const Holder &g : holders_)
                    if (g.unlock_at != kNever && g.unlock_at > t && last_out(g) &&
                        (!next || g.unlock_at < next))
                        next = g.unlock_at;
                t = std::max(t + c.inv_poll, next) + c.line_transfer;
            }
            // the holders still in their submissions run up to here
            m_.advance_to(cpu, t);
            m_.sync_point(cpu);
            resolve(t);
        }
        if (waited) {
            stats_.full_waits++;
            stats_.full_wait_ns += t - t0;
        }
        return t;
    }

    // Step 1: reserve slots on the {prod | OWNED, cons} word.  cmpxchg: read
    // the word, compute the new prod, cmpxchg; every reservation that lands
    // between our read and our cmpxchg makes it fail (it returns the new
    // value) and we try again.  Reservations still in flight when we read
    // the word all land before our cmpxchg (the line serves them first),
    // so each costs us one failed attempt, and each failed attempt holds
    // the line like a successful one: the line's time per reservation
    // grows with the CPUs contending for it.  fetch-add: one atomic.
    // @gathered: the atomic landed while OWNED was set (before the current
    // owner's fetch_andnot), so this CPU is not an owner.
    Nanos reserve(unsigned cpu, Nanos t, bool &gathered)
    {
        unsigned retries = 0;
        if (cmpxchg_) {
            Nanos snapshot = word_.read(m_, cpu, t);
            while (!landed_.empty() && landed_.front() <= snapshot)
                landed_.pop_front();
            retries = static_cast<unsigned>(landed_.size());
            t = snapshot;
        }
        // the owner's fetch_andnot is ahead of us on the line if it was
        // ready before our first attempt could start
        gathered = clear_pending_ && std::max(t, word_.free_at()) < clear_ready_;
        if (clear_pending_ && !gathered) {
            word_.rmw(m_, clear_cpu_, clear_ready_);
            clear_pending_ = false;
        }
        for (unsigned i = 0; i <= retries; i++)
            t = word_.rmw(m_, cpu, t);
        stats_.cmpxchg_retries += retries;
        landed_.push_back(t);
        if (gathered) {
            // the owner clears OWNED after us, publishes later
            clear_at_ = std::max(clear_at_, t) + m_.cost().line_transfer + m_.cost().atomic;
            published_ = std::max(published_, publish_time());
        }
        return t;
    }

    // the owner's valid-map poll ends when it has read the bits of
    // everything it gathered (after its clear and the last gathered CPU's
    // xor), then it writes the producer register
    Nanos publish_time() const
    {
        return valid_.read(m_, clear_cpu_, std::max(clear_at_, gathered_valid_)) +
               m_.cost().inv_submit;
    }

    bool cmpxchg_;
    ContendedLine word_;          // cmdq->q.llq: prod | OWNED, cons
    ContendedLine lock_;          // cmdq->lock (shared/exclusive)
    ContendedLine valid_;         // cmdq->valid_map
    std::deque<Nanos> landed_;    // completion times of recent reservations
    bool clear_pending_ = false;  // the current owner's fetch_andnot is not on the line yet
    Nanos clear_ready_ = 0;       // ... it is issued at this time
    Nanos clear_at_ = 0;          // ... and completes at this time (so far)
    unsigned clear_cpu_ = 0;
    Nanos published_ = 0;       // the last owner's producer-register write
    bool unpublished_ = false;  // an owner is suspended at its clear, not yet published
    Nanos unpublished_at_ = 0;  // ... its clock there
    Nanos gathered_valid_ = 0;  // the current batch's last valid-bit xor
    uint64_t next_holder_ = 0;
    unsigned entries_;             // the queue's size in commands
    uint64_t prod_ = 0;            // commands reserved so far
    uint64_t cons_ = 0;            // cons as cached in the shared word
    std::vector<Holder> holders_;  // shared holders of cmdq->lock not yet resolved
    std::deque<std::pair<Nanos, uint64_t>> consumed_;  // (done, prod after): the hardware's cons
};

constexpr std::array<std::string_view, 4> kind_names{"vtd", "smmu-spinlock", "smmu-lockfree",
                                                     "smmu-fetch-add"};

}  // namespace

std::span<const std::string_view> InvQueue::kinds()
{
    return kind_names;
}

std::unique_ptr<InvQueue> InvQueue::create(std::string_view kind, Machine &m, unsigned cmdq_entries)
{
    if (kind == "vtd")
        return make_qi_sync_queue(m);  // guest/sim/qi_sync.hpp
    if (kind == "smmu-spinlock")
        return std::make_unique<LockedQueue>(kind, m, true);
    if (kind == "smmu-lockfree")
        return std::make_unique<LockFreeQueue>(m, true, cmdq_entries);
    if (kind == "smmu-fetch-add")
        return std::make_unique<LockFreeQueue>(m, false, cmdq_entries);
    return nullptr;
}

}  // namespace viommu::sim
