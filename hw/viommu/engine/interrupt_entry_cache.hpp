// SPDX-License-Identifier: GPL-2.0-or-later
// The interrupt entry cache (IEC): interrupt-remapping table entries by
// interrupt_index, set-associative, each set behind its own lock (interrupt
// requests arrive from any thread while the MMIO thread invalidates).
// A full set evicts its least recently used way; nothing else is dropped
// for want of room.
//
// Invalidation against concurrent fills: a filler samples the generation
// (prepare_fill) before it reads the IRTE from guest memory and inserts
// only if no invalidation started since; an invalidation bumps the
// generation before it clears the sets, so an entry read before it is
// either cleared by it or refused.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

namespace viommu::vtd {

struct Irte {
    uint64_t lo = 0, hi = 0;
};

class InterruptEntryCache {
public:
    static constexpr unsigned WAYS = 4;

    // Capacity rounded up to whole sets (at least one).
    explicit InterruptEntryCache(uint32_t entries);

    using FillToken = uint64_t;
    FillToken prepare_fill() const { return gen_.load(std::memory_order_seq_cst); }

    std::optional<Irte> lookup(uint16_t index);
    struct Insert {
        bool inserted = false;
        bool evicted = false;  // a valid entry of another index made room
    };
    Insert insert(uint16_t index, const Irte &e, FillToken token);

    // Both return the number of entries dropped.
    size_t invalidate_all();
    // Indexes [first, first + count), count >= 1, clipped at 65536.
    size_t invalidate_range(uint32_t first, uint32_t count);

    size_t capacity() const { return size_t{nsets_} * WAYS; }
    size_t size() const { return size_.load(std::memory_order_relaxed); }

private:
    struct Way {
        Irte e;
        uint32_t stamp = 0;
        uint16_t index = 0;
        bool valid = false;
    };
    struct alignas(64) Set {
        std::mutex lock;
        uint32_t clock = 0;
        std::array<Way, WAYS> ways;
    };
    Set &set_of(uint32_t index) { return sets_[index % nsets_]; }
    size_t drop_if(Set &s, uint32_t first, uint32_t last);

    const uint32_t nsets_;
    std::unique_ptr<Set[]> sets_;
    std::atomic<uint64_t> gen_{0};
    std::atomic<size_t> size_{0};
    // Set by every insert before it checks its token; cleared by the
    // invalidate_all() that then scans the sets.  Clear: no entry was
    // inserted since the last full scan, so a reset or global invalidation
    // of an empty cache (the common case) locks no set.  Both sides are
    // sequentially consistent: an insert either sees the new generation
    // (and gives up) or is seen here (and its set is scanned).  Full
    // invalidations are serialized, so that one that finds the flag clear
    // never returns while another's scan is still dropping entries.
    std::atomic<bool> filled_{false};
    std::mutex full_invalidation_;
};

}  // namespace viommu::vtd
