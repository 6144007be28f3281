// SPDX-License-Identifier: GPL-2.0-or-later
// Address-space tags of the scalable-mode IOTLB.
//
// A scalable-mode IOTLB entry is tagged by domain-id and PASID (36 bits;
// 37 here: first-stage translations of supervisor requests live in an
// address space of their own, SPACE_SUPERVISOR beside the PASID),
// but a table entry has 16 bits for its tag, the domain-id in legacy
// mode.  In scalable mode those 16 bits name an address space instead: a
// (DID, PASID) pair, given an id on its first translation.  The ids carry
// epochs of their own (Iotlb), which makes a PASID-selective invalidation
// one counter bump, and the list of a domain's ids makes a domain's
// page-selective invalidation probe each of its PASIDs.
//
// Readers (translating threads) resolve a pair through a per-thread memo
// and validate it against the id's owner word; a memo miss takes the
// lock.  When every id is in use, a batch of them is retired (Iotlb
// sweeps their entries out) and reused: more is invalidated than asked,
// which the specification allows, and nothing is flushed wholesale.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace viommu::vtd {

// The PASID of an address space holds the 20-bit PASID and this bit: a
// first-stage leaf's permissions depend on the request's privilege, so
// supervisor requests with PASID p fill and hit the space p |
// SPACE_SUPERVISOR, which every invalidation of p covers too.
constexpr uint32_t SPACE_SUPERVISOR = 1u << 20;
constexpr uint32_t SPACE_PASID_MASK = (SPACE_SUPERVISOR << 1) - 1;
constexpr unsigned SPACE_PASID_BITS = 21;

struct IotlbSpace {
    uint16_t id = 0;
    uint16_t did = 0;
    uint32_t pasid = 0;
};

class AddressSpaces {
public:
    static constexpr size_t MAX_IDS = 65536;

    // `ids`: how many ids exist (tests use fewer to exercise reuse).
    explicit AddressSpaces(size_t ids = MAX_IDS)
        : ids_(ids == 0 || ids > MAX_IDS ? MAX_IDS : ids),
          owner_(std::make_unique<std::atomic<uint64_t>[]>(ids_)),
          nested_(std::make_unique<std::atomic<uint8_t>[]>(ids_))
    {
    }

    static uint64_t key(uint16_t did, uint32_t pasid)
    {
        return (uint64_t{did} << SPACE_PASID_BITS | (pasid & SPACE_PASID_MASK)) + 1;  // 0: no owner
    }
    size_t ids() const { return ids_; }

    // Lock-free: whether `s` still names its pair (ids are reused).
    bool owns(const IotlbSpace &s) const { return owner_[s.id].load() == key(s.did, s.pasid); }
    bool retired(uint16_t id) const { return id >= ids_ || owner_[id].load() == 0; }
    uint16_t did_of(uint16_t id) const
    {
        return id < ids_ ? static_cast<uint16_t>((owner_[id].load() - 1) >> SPACE_PASID_BITS) : 0;
    }
    bool nested(uint16_t id) const { return id < ids_ && nested_[id].load(); }
    void set_nested(uint16_t id)
    {
        if (id < ids_ && !nested_[id].load(std::memory_order_relaxed))
            nested_[id].store(1);
    }

    // The rest under the owner's lock.
    std::optional<IotlbSpace> find(uint16_t did, uint32_t pasid) const
    {
        auto it = by_key_.find(key(did, pasid));
        if (it == by_key_.end())
            return std::nullopt;
        return IotlbSpace{it->second, did, pasid & SPACE_PASID_MASK};
    }
    // Nothing if every id is in use.
    std::optional<IotlbSpace> allocate(uint16_t did, uint32_t pasid)
    {
        uint16_t id;
        if (!free_.empty()) {
            id = free_.back();
            free_.pop_back();
        } else if (next_ < ids_) {
            id = static_cast<uint16_t>(next_++);
        } else {
            return std::nullopt;
        }
        pasid &= SPACE_PASID_MASK;
        by_key_.emplace(key(did, pasid), id);
        by_domain_[did].push_back(id);
        nested_[id].store(0);
        owner_[id].store(key(did, pasid));
        return IotlbSpace{id, did, pasid};
    }
    // Retire up to `n` ids, oldest allocation position first (a hand
    // going round): they stop naming their pairs now; release() makes
    // them allocatable once their entries are gone.
    size_t retire(size_t n)
    {
        size_t done = 0;
        for (size_t step = 0; step < ids_ && done < n; step++) {
            const uint16_t id = static_cast<uint16_t>(hand_);
            hand_ = (hand_ + 1) % ids_;
            const uint64_t k = owner_[id].load();
            if (!k)
                continue;
            owner_[id].store(0);
            by_key_.erase(k);
            const auto did = static_cast<uint16_t>((k - 1) >> SPACE_PASID_BITS);
            auto &list = by_domain_[did];
            std::erase(list, id);
            if (list.empty())
                by_domain_.erase(did);
            retired_.push_back(id);
            done++;
        }
        return done;
    }
    void release()
    {
        free_.insert(free_.end(), retired_.begin(), retired_.end());
        retired_.clear();
    }
    // The ids of a domain's pairs.
    const std::vector<uint16_t> *of_domain(uint16_t did) const
    {
        auto it = by_domain_.find(did);
        return it == by_domain_.end() ? nullptr : &it->second;
    }
    size_t size() const { return by_key_.size(); }
    // O(ids handed out since the last clear): every id with an owner, or
    // retired, or free, is below next_.
    void clear()
    {
        for (size_t i = 0; i < next_; i++)
            owner_[i].store(0, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        by_key_.clear();
        by_domain_.clear();
        free_.clear();
        retired_.clear();
        next_ = hand_ = 0;
    }
    size_t bytes() const
    {
        return sizeof(*this) + ids_ * (sizeof(std::atomic<uint64_t>) + 1) +
               by_key_.size() * (sizeof(uint64_t) + sizeof(uint16_t) + 2 * sizeof(void *)) +
               (next_ + by_domain_.size()) * sizeof(uint16_t);
    }

private:
    size_t ids_;
    std::unique_ptr<std::atomic<uint64_t>[]> owner_;  // key() of the pair, 0: none
    std::unique_ptr<std::atomic<uint8_t>[]> nested_;  // has held nested translations
    std::unordered_map<uint64_t, uint16_t> by_key_;
    std::unordered_map<uint16_t, std::vector<uint16_t>> by_domain_;
    std::vector<uint16_t> free_, retired_;
    size_t next_ = 0, hand_ = 0;
};

}  // namespace viommu::vtd
