// SPDX-License-Identifier: GPL-2.0-or-later
// A bounded, sharded cache with CLOCK (second-chance) replacement: the
// IOTLB's storage.
//
// - Each shard has its own lock, an open-addressing (linear probing) table
//   holding the entries inline, and a CLOCK hand, so a lookup is one lock
//   and usually one cache line, and lookups from different threads only
//   meet when they hit the same shard.
// - A shard holds at most its share of the capacity, in a table twice that
//   size; when full, one entry is evicted: the cache is never flushed
//   because it is full.
// - A lookup can declare an entry stale (the IOTLB tags entries with domain
//   epochs, see epochs.hpp); a stale entry is dropped on sight and, never
//   being referenced, is the first one CLOCK evicts.
// - Fills race with invalidations: a filler samples generation() before it
//   reads the guest's tables and passes that value to insert(); every
//   invalidation bumps the generation first, so a fill that started before
//   an invalidation never lands after it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace viommu::vtd {

template <typename Key, typename Value, typename Hash>
class ClockCache {
public:
    explicit ClockCache(size_t capacity)
    {
        capacity = std::max<size_t>(capacity, 1);
        size_t shards = 1;
        while (shards < MAX_SHARDS && shards * 2 * MIN_PER_SHARD <= capacity)
            shards *= 2;
        shards_.reserve(shards);
        for (size_t i = 0; i < shards; i++)
            shards_.push_back(std::make_unique<Shard>(capacity / shards + (i < capacity % shards)));
    }

    size_t capacity() const
    {
        size_t n = 0;
        for (auto &s : shards_)
            n += s->limit;
        return n;
    }

    uint64_t generation() const { return gen_.load(); }
    // Sequentially consistent, as are callers' own flags published before
    // insert() (see Iotlb::levels_cached_).
    void bump_generation() { gen_.fetch_add(1); }

    template <typename Valid>
    std::optional<Value> lookup(const Key &key, Valid valid)
    {
        uint64_t h = mix(key);
        Shard &s = shard_of(h);
        std::lock_guard guard(s.lock);
        size_t i = s.find(key, h);
        if (i == NONE)
            return std::nullopt;
        Slot &slot = s.table[i];
        if (!valid(slot.value)) {
            s.remove_at(i);
            return std::nullopt;
        }
        slot.referenced = true;
        return slot.value;
    }

    struct InsertResult {
        bool inserted = false;
        bool evicted = false;
    };

    InsertResult insert(const Key &key, const Value &value, uint64_t gen)
    {
        uint64_t h = mix(key);
        Shard &s = shard_of(h);
        std::lock_guard guard(s.lock);
        InsertResult r;
        if (gen_.load() != gen)
            return r;
        r.inserted = true;
        if (size_t i = s.find(key, h); i != NONE) {
            s.table[i].value = value;
            return r;
        }
        if (s.count == s.limit) {
            s.remove_at(s.victim());
            r.evicted = true;
        }
        size_t i = h & s.mask;
        while (s.table[i].used)
            i = (i + 1) & s.mask;
        s.table[i] = {key, value, h, true, false};
        s.count++;
        return r;
    }

    // Drop one key; returns whether it was present.
    bool erase(const Key &key)
    {
        uint64_t h = mix(key);
        Shard &s = shard_of(h);
        std::lock_guard guard(s.lock);
        size_t i = s.find(key, h);
        if (i == NONE)
            return false;
        s.remove_at(i);
        return true;
    }

    size_t clear()
    {
        size_t dropped = 0;
        for (auto &sp : shards_) {
            std::lock_guard guard(sp->lock);
            dropped += sp->count;
            sp->clear();
        }
        return dropped;
    }

    size_t size()
    {
        size_t n = 0;
        for (auto &sp : shards_) {
            std::lock_guard guard(sp->lock);
            n += sp->count;
        }
        return n;
    }

private:
    static constexpr size_t MAX_SHARDS = 64;
    static constexpr size_t MIN_PER_SHARD = 8;
    static constexpr size_t NONE = SIZE_MAX;

    struct Slot {
        Key key{};
        Value value{};
        uint64_t hash = 0;
        bool used = false;
        bool referenced = false;
    };

    struct alignas(64) Shard {
        explicit Shard(size_t entries) : limit(entries)
        {
            size_t n = 2;
            while (n < 2 * entries)
                n *= 2;
            table.resize(n);
            mask = n - 1;
        }

        std::mutex lock;
        std::vector<Slot> table;  // at most half full: probe runs stay short
        size_t mask = 0;
        size_t limit = 0;
        size_t count = 0;
        size_t hand = 0;

        size_t find(const Key &key, uint64_t h) const
        {
            for (size_t i = h & mask;; i = (i + 1) & mask) {
                const Slot &slot = table[i];
                if (!slot.used)
                    return NONE;
                if (slot.hash == h && slot.key == key)
                    return i;
            }
        }

        // Backward-shift deletion keeps every probe run unbroken.
        void remove_at(size_t i)
        {
            for (size_t j = i;;) {
                j = (j + 1) & mask;
                if (!table[j].used)
                    break;
                size_t home = table[j].hash & mask;
                bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
                if (stays)
                    continue;
                table[i] = table[j];
                i = j;
            }
            table[i].used = false;
            table[i].referenced = false;
            count--;
        }

        // An occupied slot that was not referenced since the hand last
        // passed (count > 0 whenever this is called).
        size_t victim()
        {
            for (;;) {
                size_t i = hand;
                hand = (hand + 1) & mask;
                Slot &slot = table[i];
                if (!slot.used)
                    continue;
                if (!slot.referenced)
                    return i;
                slot.referenced = false;
            }
        }

        void clear()
        {
            for (auto &slot : table)
                slot.used = slot.referenced = false;
            count = 0;
        }
    };

    static uint64_t mix(const Key &key)
    {
        uint64_t h = static_cast<uint64_t>(Hash{}(key)) * 0x9e3779b97f4a7c15ull;
        return h ^ (h >> 29);
    }
    // The high bits pick the shard; the low bits the table index.
    Shard &shard_of(uint64_t h) { return *shards_[(h >> 48) & (shards_.size() - 1)]; }

    std::vector<std::unique_ptr<Shard>> shards_;
    std::atomic<uint64_t> gen_{0};
};

}  // namespace viommu::vtd
