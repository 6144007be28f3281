// SPDX-License-Identifier: GPL-2.0-or-later
// Domain epochs: O(1) domain-selective and global invalidation.  A cache
// entry records the global epoch and its domain's epoch when its fill
// started; bumping either makes the entry stale, and the cache drops it on
// the next lookup or evicts it first.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

namespace viommu::vtd {

// One counter per domain-id, all starting at 0, only ever incremented.
class DomainCounters {
public:
    DomainCounters() : v_(std::make_unique<std::array<std::atomic<uint32_t>, 65536>>()) {}

    uint32_t get(uint16_t did) const { return (*v_)[did].load(std::memory_order_acquire); }
    void bump(uint16_t did) { (*v_)[did].fetch_add(1); }

private:
    std::unique_ptr<std::array<std::atomic<uint32_t>, 65536>> v_;
};

struct EpochTag {
    uint32_t global = 0;
    uint32_t domain = 0;
};

class DomainEpochs {
public:
    EpochTag tag(uint16_t did) const
    {
        return {global_.load(std::memory_order_acquire), domains_.get(did)};
    }
    bool current(const EpochTag &t, uint16_t did) const
    {
        EpochTag now = tag(did);
        return now.global == t.global && now.domain == t.domain;
    }
    void bump_all() { global_.fetch_add(1); }
    void bump(uint16_t did) { domains_.bump(did); }

private:
    std::atomic<uint32_t> global_{0};
    DomainCounters domains_;
};

}  // namespace viommu::vtd
