// SPDX-License-Identifier: GPL-2.0-or-later
// LiveSet: the ranges an allocator has handed out and not taken back, by
// start pfn, so that a double or unknown free is refused instead of
// corrupting a cache.  Sharded by pfn (a shard's mutex is the only lock a
// check takes); each shard is one open-addressed array with linear
// probing, so an insert allocates only when its shard grows: a check
// costs no allocation per range, which under ASan (the fuzz targets)
// was the allocator's largest cost.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace viommu::iova {

class LiveSet {
public:
    // Four shards per CPU, at most 64: a CPU's check rarely meets another's.
    explicit LiveSet(unsigned ncpus)
        : shard_bits_(std::min(
              6u, static_cast<unsigned>(std::bit_width(std::bit_ceil(std::max(ncpus, 1u)))) + 1)),
          shards_(std::make_unique<Shard[]>(size_t{1} << shard_bits_))
    {
    }

    // False if a range starting at @pfn is live already.
    bool insert(uint64_t pfn, uint64_t pages)
    {
        Shard &s = shard(pfn);
        std::lock_guard g(s.lock);
        return s.insert(pfn, pages);
    }
    // False, and nothing changes, unless a range of @pages starts at @pfn.
    bool erase(uint64_t pfn, uint64_t pages)
    {
        Shard &s = shard(pfn);
        std::lock_guard g(s.lock);
        return s.erase(pfn, pages);
    }
    size_t size() const
    {
        size_t n = 0;
        for (size_t i = 0; i < (size_t{1} << shard_bits_); i++) {
            std::lock_guard g(shards_[i].lock);
            n += shards_[i].used;
        }
        return n;
    }

private:
    struct Entry {
        uint64_t pfn;
        uint64_t pages;  // 0: an empty slot (no live range has 0 pages)
    };
    struct alignas(64) Shard {
        mutable std::mutex lock;
        std::vector<Entry> slots;  // a power of two long, or empty
        size_t used = 0;

        size_t home(uint64_t pfn) const
        {
            return ((pfn * 0xbf58476d1ce4e5b9ull) >> 32) & (slots.size() - 1);
        }
        size_t find(uint64_t pfn) const
        {
            const size_t mask = slots.size() - 1;
            size_t i = home(pfn);
            while (slots[i].pages && slots[i].pfn != pfn)
                i = (i + 1) & mask;
            return i;
        }
        bool insert(uint64_t pfn, uint64_t pages)
        {
            if ((used + 1) * 4 > slots.size() * 3)
                grow();
            size_t i = find(pfn);
            if (slots[i].pages)
                return false;
            slots[i] = {pfn, pages};
            used++;
            return true;
        }
        bool erase(uint64_t pfn, uint64_t pages)
        {
            if (!used)
                return false;
            size_t i = find(pfn);
            if (!slots[i].pages || slots[i].pages != pages)
                return false;
            // Backward-shift deletion: every entry after the hole that
            // could live in it moves up, so a probe never stops early.
            const size_t mask = slots.size() - 1;
            for (size_t j = (i + 1) & mask; slots[j].pages; j = (j + 1) & mask) {
                if (((j - home(slots[j].pfn)) & mask) >= ((j - i) & mask)) {
                    slots[i] = slots[j];
                    i = j;
                }
            }
            slots[i] = {};
            used--;
            return true;
        }
        void grow()
        {
            std::vector<Entry> old(std::max<size_t>(16, slots.size() * 2));
            old.swap(slots);
            for (const Entry &e : old)
                if (e.pages)
                    slots[find(e.pfn)] = e;
        }
    };

    Shard &shard(uint64_t pfn)
    {
        return shards_[(pfn * 0x9e3779b97f4a7c15ull) >> (64 - shard_bits_)];
    }

    unsigned shard_bits_;
    std::unique_ptr<Shard[]> shards_;
};

}  // namespace viommu::iova
