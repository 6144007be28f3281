// SPDX-License-Identifier: GPL-2.0-or-later
// Domain epochs: O(1) domain-selective and global invalidation.  A cache
// entry records the global epoch and its domain's epoch when its fill
// started; bumping either makes the entry stale, and the cache drops it on
// the next lookup or evicts it first.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

namespace viommu::vtd {

// One counter per index of BITS bits (a domain-id, a PASID, an IOTLB
// address-space tag), all starting at 0, only ever incremented.  Storage
// comes in chunks of 2^CHUNK_BITS indexes (256: 1 KiB), allocated with the
// first bump in a chunk, so a guest pays for the indexes it names (all
// 65536 domain-ids: 256 KiB); an index without a chunk reads 0.
template <unsigned BITS, unsigned CHUNK_BITS = 8>
class ChunkedCounters {
public:
    static constexpr uint32_t INDEXES = uint32_t{1} << BITS;

    uint32_t get(uint32_t i) const
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
    using Chunk = std::array<std::atomic<uint32_t>, CHUNK>;

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
    // Without memory for the domain's counter, every domain's entries go:
    // invalidating more than asked is always allowed.
    void bump(uint16_t did)
    {
        if (!domains_.bump(did))
            bump_all();
    }
    size_t bytes() const { return domains_.bytes(); }

private:
    std::atomic<uint32_t> global_{0};
    DomainCounters domains_;
};

}  // namespace viommu::vtd
