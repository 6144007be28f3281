// SPDX-License-Identifier: GPL-2.0-or-later
// The PASID cache: decoded PASID-table entries (scalable mode), by
// source-id and PASID, tagged with the entry's domain-id.
//
// The translate path looks an entry up for every request that misses the
// faster caches, so lookups take no lock: the cache is 4-way
// set-associative and each way is a seqlock of atomic words that readers
// copy and validate; fills and invalidations serialize on a writer mutex.
// Invalidation is O(1) at every granularity of the PASID-cache Invalidate
// Descriptor: entries record the sum of the global, their domain's and
// their PASID's epoch when their fill started, and a bump of any makes
// them stale (the sum of 64-bit epochs never comes round, epochs.hpp; a
// PASID-selective invalidation bumps the PASID's epoch, which also retires
// that PASID's entries of other domains: more than asked, as the
// specification allows).  The sum includes their source-id's epoch: a
// device-selective context-cache invalidation retires the device's
// entries (they were found through its context entry) in O(1) per
// source-id.  A fill replaces a stale way first, else the
// set's oldest fill (round-robin per set); nothing is flushed because the
// cache is full.  clear() (reset, root-table latch) costs the sets filled
// since the last clear, not the capacity: fills record their set in a
// list (once per set), and clear() empties only those.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "epochs.hpp"

namespace viommu::vtd {

// What the translate path needs of a PASID-table entry.  The decoder
// (PASID-table parsing) fills it; the cache keeps it as it is.
struct PasidEntry {
    uint16_t did = 0;
    uint8_t pgtt = 0;  // PGTT: 1 first-stage, 2 second-stage, 3 nested, 4 pass-through
    uint8_t fs_levels = 0, sl_levels = 0;
    uint32_t flags = 0;  // decoded single-bit fields (SRE, WPE, EAFE, FPD, ...), decoder-defined
    uint64_t fsptptr = 0, slptptr = 0;
    bool operator==(const PasidEntry &) const = default;
};

class PasidCache {
public:
    using Epoch = WideEpoch;
    static constexpr unsigned WAYS = 4;
    static constexpr size_t DEFAULT_ENTRIES = 1024;
    // `capacity` entries, rounded up to whole sets (a power of two of them).
    explicit PasidCache(size_t capacity);

    size_t capacity() const { return sets_ * WAYS; }
    size_t size() const;
    // Ways holding an entry, stale or not (for tests: a cleared cache has
    // none).
    size_t stored() const;
    size_t domain_bytes() const
    {
        return epochs_.bytes() + pasid_epochs_.bytes() + source_epochs_.bytes();
    }

    // Sampled before reading the PASID directory and table.
    uint64_t generation() const { return gen_.load(); }

    std::optional<PasidEntry> lookup(uint16_t sid, uint32_t pasid) const;
    // Refused (false, nothing stored) if an invalidation ran since `gen`.
    // `evicted`: a live entry of another key made room.
    bool insert(uint16_t sid, uint32_t pasid, const PasidEntry &e, uint64_t gen,
                bool *evicted = nullptr);

    void invalidate_all();
    void invalidate_domain(uint16_t did);
    void invalidate_pasid(uint16_t did, uint32_t pasid);
    // The entries of source-ids equal to `sid` outside `sid_mask` (a
    // device-selective context-cache invalidation: at most 8 source-ids).
    void invalidate_source(uint16_t sid, uint16_t sid_mask);
    // Empties the storage (reset, root-table switch): O(sets filled since
    // the last clear), O(1) for a cache nothing was filled into.
    void clear();

private:
    // w0: valid | sid << 1 | pasid << 17 | pgtt << 37 | fs_levels << 40 | sl_levels << 44
    //     | did << 48
    // w1: flags     w2: fsptptr     w3: slptptr
    // w4: epoch tag, the sum of the global, domain, PASID and source-id epochs
    static constexpr unsigned WORDS = 5;
    struct Way {
        std::atomic<uint32_t> seq{0};
        std::atomic<uint64_t> w[WORDS]{};
    };
    struct alignas(64) Set {
        Way ways[WAYS];
        unsigned hand = 0;    // writer-only: the next way to replace
        bool filled = false;  // writer-only: listed in filled_
    };

    size_t set_of(uint16_t sid, uint32_t pasid) const;
    bool live(const Way &w) const;
    static void write(Way &w, const uint64_t (&v)[WORDS]);
    bool current(const uint64_t (&v)[WORDS]) const;
    Epoch epoch(uint16_t sid, uint32_t pasid, uint16_t did) const
    {
        return epochs_.sum(did) + pasid_epochs_.get(pasid) + source_epochs_.get(sid);
    }

    size_t sets_;
    std::vector<Set> table_;
    std::vector<uint32_t> filled_;  // writer-only: sets filled since clear(), each once
    std::atomic<uint64_t> gen_{0};
    WideDomainEpochs epochs_;
    WideCounters<20, 12> pasid_epochs_;  // 4 KiB up front, 32 KiB per 4096 PASIDs named
    WideCounters<16> source_epochs_;     // 2 KiB up front, 2 KiB per 256 source-ids named
    std::mutex writer_;
};

}  // namespace viommu::vtd
