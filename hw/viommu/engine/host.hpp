// SPDX-License-Identifier: GPL-2.0-or-later
// The engine's view of its host: guest memory, interrupts and time, all
// reached through the VtdHostOps callbacks.  Guest memory is little-endian.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>

#include "viommu/vtd.h"

namespace viommu::vtd {

class Host {
public:
    Host(const VtdHostOps &ops, void *opaque) : ops_(ops), opaque_(opaque) {}

    std::optional<uint64_t> read_u64(uint64_t gpa) const
    {
        std::array<uint8_t, 8> b{};
        if (ops_.mem_read(opaque_, gpa, b.data(), b.size()) != 0)
            return std::nullopt;
        return le64(b.data());
    }

    // A 128-bit structure (root/context entry, descriptor) as {low, high}.
    std::optional<std::array<uint64_t, 2>> read_u128(uint64_t gpa) const
    {
        std::array<uint8_t, 16> b{};
        if (ops_.mem_read(opaque_, gpa, b.data(), b.size()) != 0)
            return std::nullopt;
        return std::array<uint64_t, 2>{le64(b.data()), le64(b.data() + 8)};
    }

    // An N-quadword structure in one read (a 256-bit descriptor: N = 4).
    template <size_t N>
    std::optional<std::array<uint64_t, N>> read_qwords(uint64_t gpa) const
    {
        std::array<uint8_t, 8 * N> b{};
        if (ops_.mem_read(opaque_, gpa, b.data(), b.size()) != 0)
            return std::nullopt;
        std::array<uint64_t, N> q{};
        for (size_t i = 0; i < N; i++)
            q[i] = le64(b.data() + 8 * i);
        return q;
    }

    bool write_u32(uint64_t gpa, uint32_t v) const
    {
        std::array<uint8_t, 4> b{};
        for (auto &byte : b) {
            byte = v & 0xff;
            v >>= 8;
        }
        return ops_.mem_write(opaque_, gpa, b.data(), b.size()) == 0;
    }

    // Atomic compare-and-swap of the 8 bytes at `gpa` (VtdHostOps
    // .mem_cmpxchg64): the value found there, or nullopt if it is not RAM.
    // The swap happened iff the value found equals `expected`.
    std::optional<uint64_t> cmpxchg_u64(uint64_t gpa, uint64_t expected, uint64_t desired) const
    {
        uint64_t found = 0;
        if (!ops_.mem_cmpxchg64 || ops_.mem_cmpxchg64(opaque_, gpa, expected, desired, &found) != 0)
            return std::nullopt;
        return found;
    }
    bool has_cmpxchg() const { return ops_.mem_cmpxchg64 != nullptr; }

    void msi(uint64_t addr, uint32_t data) const { ops_.msi(opaque_, addr, data); }

    void invalidated(bool all, uint16_t did, uint64_t iova, uint64_t size) const
    {
        unsynced_.store(true, std::memory_order_relaxed);
        if (ops_.invalidated)
            ops_.invalidated(opaque_, all, did, iova, size);
    }

    void context_invalidated(bool all, uint16_t sid, uint16_t sid_mask) const
    {
        unsynced_.store(true, std::memory_order_relaxed);
        if (ops_.context_invalidated)
            ops_.context_invalidated(opaque_, all, sid, sid_mask);
    }

    // Falls back to a context invalidation of every source-id for a host
    // without the hook.
    void pasid_cache_invalidated(uint8_t granularity, uint16_t did, uint32_t pasid) const
    {
        unsynced_.store(true, std::memory_order_relaxed);
        if (ops_.pasid_cache_invalidated)
            ops_.pasid_cache_invalidated(opaque_, granularity, did, pasid);
        else
            context_invalidated(true, 0, 0);
    }

    void device_iotlb_invalidated(uint16_t sid, uint16_t pfsid, uint8_t mip, uint64_t first,
                                  uint64_t last) const
    {
        unsynced_.store(true, std::memory_order_relaxed);
        if (ops_.device_iotlb_invalidated)
            ops_.device_iotlb_invalidated(opaque_, sid, pfsid, mip, first, last);
    }

    void interrupts_invalidated(bool global, uint16_t index, uint8_t index_mask) const
    {
        unsynced_.store(true, std::memory_order_relaxed);
        if (ops_.interrupts_invalidated)
            ops_.interrupts_invalidated(opaque_, global, index, index_mask);
    }

    // Before a wait descriptor completes: what the hooks above reported
    // takes effect in the host (VtdHostOps.sync).
    void sync() const
    {
        if (ops_.sync && unsynced_.exchange(false, std::memory_order_relaxed))
            ops_.sync(opaque_);
    }

    void prefetch(uint64_t gpa) const
    {
        if (ops_.prefetch)
            ops_.prefetch(opaque_, gpa);
    }

    // Report an event (VtdHostOps.event) built by `make`, which runs only
    // when the host takes events: with no hook this is one branch.
    template <typename Make>
    void event(Make &&make) const
    {
        if (ops_.event) [[unlikely]] {
            const VtdEvent ev = make();
            ops_.event(opaque_, &ev);
        }
    }

    bool has_clock() const { return ops_.now_ns != nullptr; }
    uint64_t now_ns() const { return ops_.now_ns ? ops_.now_ns(opaque_) : 0; }

private:
    static uint64_t le64(const uint8_t *p)
    {
        uint64_t v;
        std::memcpy(&v, p, sizeof(v));
        return std::endian::native == std::endian::little ? v : __builtin_bswap64(v);
    }

    VtdHostOps ops_;
    void *opaque_;
    mutable std::atomic<bool> unsynced_{false};  // a hook ran since sync()
};

}  // namespace viommu::vtd
