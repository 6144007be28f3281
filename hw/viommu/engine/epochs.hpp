// SPDX-License-Identifier: GPL-2.0-or-later
// Domain epochs: O(1) domain-selective and global invalidation.  A cache
// entry records the global epoch and its domain's epoch when its fill
// started; bumping either makes the entry stale, and the cache drops it on
// the next lookup or evicts it first.
//
// Counters of 32 bits come round after 2^32 bumps, which a guest can
// drive in minutes: the IOTLB, which keeps 21 bits of sums of them, sweeps
// stale entries out before that (iotlb.hpp).  The context and PASID caches
// keep one 64-bit sum of 64-bit counters instead (WideDomainEpochs): every
// bump adds one to the sum, which takes centuries to come round, so an
// entry once stale stays stale.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

namespace viommu::vtd {

// One counter of type T per index of BITS bits (a domain-id, a PASID, an
// IOTLB address-space tag), all starting at 0, only ever incremented.
// Storage comes in chunks of 2^CHUNK_BITS indexes (256 32-bit counters:
// 1 KiB), allocated with the first bump in a chunk, so a guest pays for the
// indexes it names (all 65536 domain-ids: 256 KiB of 32-bit counters); an
// index without a chunk reads 0.
template <unsigned BITS, unsigned CHUNK_BITS = 8, typename T = uint32_t>
class ChunkedCounters {
public:
    static constexpr uint32_t INDEXES = uint32_t{1} << BITS;

    T get(uint32_t i) const
    {
        i &= INDEXES - 1;
        const Chunk *c = chunks_[i / CHUNK].load(std::memory_order_acquire);
        return c ? (*c)[i % CHUNK].load(std::memory_order_acquire) : 0;
    }
    // False, with nothing changed, if the chunk could not be allocated.
    bool bump(uint32_t did)
    {
        did &= INDEXES - 1;
        Chunk *c = chunks_[did / CHUNK].load(std::memory_order_acquire);
        if (!c && !(c = allocate(did / CHUNK)))
            return false;
        (*c)[did % CHUNK].fetch_add(1);
        return true;
    }
    // Host memory held, this object included.
    size_t bytes() const
    {
        return sizeof(*this) + allocated_.load(std::memory_order_relaxed) * sizeof(Chunk);
    }

private:
    static constexpr unsigned CHUNK = 1u << CHUNK_BITS;
    using Chunk = std::array<std::atomic<T>, CHUNK>;

    Chunk *allocate(unsigned i)
    {
        std::lock_guard guard(lock_);
        if (!owner_[i]) {
            try {
                owner_[i] = std::make_unique<Chunk>();
            } catch (const std::bad_alloc &) {
                return nullptr;
            }
            allocated_.fetch_add(1, std::memory_order_relaxed);
            chunks_[i].store(owner_[i].get(), std::memory_order_release);
        }
        return owner_[i].get();
    }

    std::array<std::atomic<Chunk *>, INDEXES / CHUNK> chunks_{};
    std::array<std::unique_ptr<Chunk>, INDEXES / CHUNK> owner_;
    std::mutex lock_;
    std::atomic<size_t> allocated_{0};
};

using DomainCounters = ChunkedCounters<16>;
template <unsigned BITS, unsigned CHUNK_BITS = 8>
using WideCounters = ChunkedCounters<BITS, CHUNK_BITS, uint64_t>;

template <typename T>
struct BasicEpochTag {
    T global = 0;
    T domain = 0;
};

template <typename T>
class BasicDomainEpochs {
public:
    BasicEpochTag<T> tag(uint16_t did) const
    {
        return {global_.load(std::memory_order_acquire), domains_.get(did)};
    }
    // The global epoch plus the domain's: grows with every bump of either.
    T sum(uint16_t did) const
    {
        return global_.load(std::memory_order_acquire) + domains_.get(did);
    }
    void bump_all() { global_.fetch_add(1); }
    // Without memory for the domain's counter, every domain's entries go:
    // invalidating more than asked is always allowed.
    void bump(uint16_t did)
    {
        if (!domains_.bump(did))
            bump_all();
    }
    size_t bytes() const { return domains_.bytes(); }

private:
    std::atomic<T> global_{0};
    ChunkedCounters<16, 8, T> domains_;
};

using EpochTag = BasicEpochTag<uint32_t>;
using DomainEpochs = BasicDomainEpochs<uint32_t>;
// The context and PASID caches' (see above).
using WideEpoch = uint64_t;
using WideDomainEpochs = BasicDomainEpochs<WideEpoch>;

}  // namespace viommu::vtd
