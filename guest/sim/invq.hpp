// SPDX-License-Identifier: GPL-2.0-or-later
// Invalidation-queue submission models, on the virtual clock.
//
//   vtd            VT-d qi_submit_sync (guest/sim/qi_sync.hpp): q_lock with
//                  interrupts off; write the descriptors, a wait
//                  descriptor and the tail, then poll the wait
//                  descriptor's status, q_lock retaken at every poll.
//   smmu-spinlock  SMMUv3 before 5.4 with polled CMD_SYNC: the queue lock
//                  is held while the CPU polls the consumer index.
//   smmu-lockfree  SMMUv3 from 5.4, arm_smmu_cmdq_issue_cmdlist() as in 5.5
//                  to 6.1 (nvme-smmuv3-cmdq): slots reserved by a cmpxchg
//                  loop on the shared {prod | OWNED, cons} word, retried
//                  whenever another CPU's reservation landed since the
//                  value was read; the CPU that finds OWNED clear is the
//                  owner.  Every CPU writes its commands, takes the
//                  shared side of cmdq->lock (an atomic increment) and
//                  marks its slots valid (an atomic on the valid bitmap).
//                  The owner waits for the previous owner's owner_prod,
//                  clears OWNED (fetch_andnot on the same word: it queues
//                  behind the reservations in flight, so the gather window
//                  grows with contention), polls the valid bitmap until
//                  every CPU it gathered has set its bits (it lets the
//                  CPUs that can reserve before its clear run first),
//                  writes the producer register once and publishes
//                  owner_prod.  Every CPU then polls its own
//                  CMD_SYNC's MSI word and drops the shared lock; the
//                  last holder out writes its cons into the shared word.
//                  Before reserving, a CPU checks for space against that
//                  cached cons; without space it refreshes cons under the
//                  exclusive lock (no shared holder) or spins until the
//                  last holder out writes it (--cmdq-entries).
//   smmu-fetch-add the same queue with the slots reserved by one fetch-add
//                  (no retry: what a single atomic would give).
//
// The hardware fetches what a tail/prod register write published
// (CostModel::inv_hw_fetch), then consumes the descriptors one after the
// other (inv_hw_desc each); a wait descriptor / CMD_SYNC completes when the
// hardware reaches it.  So lists gathered under one producer write share
// one fetch, and their syncs complete close together.  A busy engine
// fetches, when it is ready for more, everything published by then in
// one read: lists published while it worked share that fetch.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "machine.hpp"

namespace viommu::sim {

struct InvStats {
    struct PerCpu {
        uint64_t owners = 0, nonowners = 0;
        Nanos owner_poll_ns = 0, nonowner_poll_ns = 0;
    };
    uint64_t submissions = 0;
    uint64_t reservations = 0;     // smmu lock-free queues: successful reservations
    uint64_t cmpxchg_retries = 0;  // ... failed cmpxchg attempts before them
    Nanos reserve_ns = 0;          // ... time from the first read to the successful atomic
    uint64_t full_waits = 0;       // ... reservations that found no space (stale cons)
    uint64_t cons_refreshes = 0;   // ... of which refreshed cons under the exclusive lock
    Nanos full_wait_ns = 0;        // ... time in arm_smmu_cmdq_poll_until_not_full()
    std::vector<PerCpu> per_cpu;   // smmu lock-free queues, by CPU
    uint64_t descriptors = 0;      // invalidation descriptors, without waits/syncs
    uint64_t owners = 0;           // smmu-lockfree: submissions that were owners
    uint64_t batches = 0;          // producer-register writes
    Nanos owner_poll_ns = 0, nonowner_poll_ns = 0;  // waiting for the sync/wait descriptor
    Nanos owner_wait_ns = 0;                        // owner waiting for the previous owner
    Nanos valid_wait_ns = 0;     // owner polling the valid map for CPUs it gathered, past its clear
    Nanos busy_ns = 0;           // CPU time inside submit_and_wait
    Nanos owner_busy_ns = 0;     // ... of the submissions that were owners
    uint64_t poll_handoffs = 0;  // vtd: polls that took q_lock's line from another CPU

    // mean time in submit_and_wait of an owner / a non-owner submission
    double mean_issue_ns(bool owner) const;

    double owner_share() const { return submissions ? double(owners) / double(submissions) : 0; }
    double mean_poll_ns(bool owner) const;
    double retries_per_reservation() const
    {
        return reservations ? double(cmpxchg_retries) / double(reservations) : 0;
    }
    std::string json() const;
    std::string per_cpu_json() const;  // ",\"per_cpu\":[...]" or empty
};

class InvQueue {
public:
    // @cmdq_entries: the SMMUv3 command queue's size in commands (lock-free
    // queues; 0: kDefaultCmdqEntries).
    static std::unique_ptr<InvQueue> create(std::string_view kind, Machine &m,
                                            unsigned cmdq_entries = 0);
    // 1 << CMDQ_MAX_SZ_SHIFT of the 5.4+ driver with 4 KiB pages and
    // CONFIG_CMA_ALIGNMENT 8: (12 + 8) - 4 (16-byte commands) = 16; the
    // hardware's IDR1.CMDQS may be smaller (docs/cost-model.rst).
    static constexpr unsigned kDefaultCmdqEntries = 1u << 16;
    static std::span<const std::string_view> kinds();

    virtual ~InvQueue() = default;
    // @cpu submits @descs invalidation descriptors plus one wait/sync and
    // returns when the hardware has completed them; advances its clock.
    void submit_and_wait(unsigned cpu, unsigned descs);
    const InvStats &stats() const { return stats_; }
    void reset_stats()
    {
        size_t n = stats_.per_cpu.size();
        stats_ = {};
        stats_.per_cpu.resize(n);
    }
    std::string_view kind() const { return kind_; }

protected:
    InvQueue(std::string_view kind, Machine &m) : kind_(kind), m_(m) {}
    // Returns whether @cpu was the owner of its batch (it wrote the
    // tail/prod register for it).
    virtual bool submit(unsigned cpu, unsigned descs) = 0;
    // Hardware: start at max(@published, previous end), fetching first if
    // @fetch (a new tail/prod write); returns when @descs are done.
    Nanos consume(Nanos published, unsigned descs, bool fetch);
    // hardware time per descriptor of this queue's IOMMU
    Nanos desc_ns() const;
    // Poll until @done; returns the time spent polling.
    Nanos poll_until(unsigned cpu, Nanos done);
    // The submission of the queues with one submission lock: @cpu takes
    // @lock (site "submit"), writes the descriptors, the wait descriptor
    // and the tail (inv_submit), one batch that it owns; returns when the
    // hardware completes the wait descriptor.  @lock stays held.
    Nanos submit_locked(VirtualLock &lock, unsigned cpu, unsigned descs);

    std::string kind_;
    Machine &m_;
    Nanos hw_free_at_ = 0;
    Nanos last_fetch_ = 0;  // start of the hardware's last fetch
    InvStats stats_;
};

}  // namespace viommu::sim
