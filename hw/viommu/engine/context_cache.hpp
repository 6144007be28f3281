// SPDX-License-Identifier: GPL-2.0-or-later
// The context cache: decoded, valid context entries by source-id (in
// scalable mode: the PASID-table entry of RID_PASID that requests without
// PASID use, tagged with its domain-id).
//
// Every device's translations start here, so all threads translating for
// one device look up the same entry.  Lookups therefore take no lock: the
// cache is direct-mapped (a source-id has one slot; a colliding fill evicts
// just that slot) and each slot is a seqlock of three atomic words that
// readers copy and validate.  Fills and invalidations serialize on a
// writer mutex.  clear() (reset, root-table latch) costs the slots filled
// since the last clear, not the capacity: fills list their slot (once).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "epochs.hpp"
#include "registers.hpp"
#include "root_context.hpp"

namespace viommu::vtd {

class ContextCache {
public:
    using Epoch = WideEpoch;  // never comes round (epochs.hpp)

    explicit ContextCache(size_t capacity)
        : slots_(std::max<size_t>(1, std::min<size_t>(capacity, 65536)))
    {
        filled_.reserve(slots_.size());  // fills never allocate
    }

    size_t capacity() const { return slots_.size(); }
    size_t size() const;
    // Slots holding an entry, retired or not (for tests: a cleared cache
    // has none).
    size_t stored() const;
    // Bytes of per-domain state (the domains' epochs).
    size_t domain_bytes() const { return epochs_.bytes(); }

    // Sampled before reading the root and context tables.
    uint64_t generation() const { return gen_.load(); }

    std::optional<Context> lookup(uint16_t sid) const;
    // Returns whether another source-id's entry was evicted.
    bool insert(uint16_t sid, const Context &ctx, uint64_t gen);

    // O(1): bumps the global epoch; the entries retire lazily (a lookup
    // misses them, a fill overwrites them, size() leaves them out).
    void invalidate_all();
    void invalidate_domain(uint16_t did);
    // Empties the storage (reset, root-table switch, load): O(slots filled
    // since the last clear).
    void clear();
    // Source-ids equal to `sid` outside `sid_mask` (at most 8 with CCMD.FM).
    size_t invalidate_device(uint16_t sid, uint16_t sid_mask);

private:
    // word0: SLPTPTR | levels << 4 | TT << 2 | FPD << 1 | valid
    // word1: sid | did << 16 | PASID << 32 (scalable mode: the PASID-table
    //        entry's)
    // word2: epoch tag, the global plus the domain's epoch
    // word3: scalable mode: FSPTPTR | EAFE << 8 | WPE << 7 | SRE << 6 |
    //        first-stage levels << 3 | PGTT; 0 in legacy mode
    struct Slot {
        std::atomic<uint32_t> seq{0};
        std::atomic<uint64_t> word0{0}, word1{0}, word2{0}, word3{0};
        bool listed = false;  // writer-only: in filled_
    };

    Slot &slot_of(uint16_t sid) { return slots_[(sid * 0x9e3779b1u >> 16) % slots_.size()]; }
    const Slot &slot_of(uint16_t sid) const
    {
        return slots_[(sid * 0x9e3779b1u >> 16) % slots_.size()];
    }
    void write_locked(Slot &s, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3 = 0);
    // Whether a slot holds an entry no invalidation has retired.
    bool live(const Slot &s) const;

    std::vector<Slot> slots_;
    std::vector<uint16_t> filled_;  // writer-only: slots filled since clear(), each once
    std::atomic<uint64_t> gen_{0};
    WideDomainEpochs epochs_;
    std::mutex writer_;
};

}  // namespace viommu::vtd
