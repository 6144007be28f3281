// SPDX-License-Identifier: GPL-2.0-or-later
// A bounded, sharded cache with CLOCK (second-chance) replacement, the
// storage behind the IOTLB and the context cache.
//
// - Each shard has its own lock, slots, hash index and CLOCK hand, so
//   lookups from different threads only meet when they hit the same shard.
// - When a shard is full one entry is evicted; the cache is never flushed
//   because it is full.
// - A lookup can declare an entry stale (the users tag entries with domain
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
#include <unordered_map>
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
            n += s->slots.size();
        return n;
    }

    uint64_t generation() const { return gen_.load(); }
    // Sequentially consistent, as are callers' own flags published before
    // insert() (see Iotlb::levels_cached_).
    void bump_generation() { gen_.fetch_add(1); }

    template <typename Valid>
    std::optional<Value> lookup(const Key &key, Valid valid)
    {
        Shard &s = shard_of(key);
        std::lock_guard guard(s.lock);
        auto it = s.index.find(key);
        if (it == s.index.end())
            return std::nullopt;
        Slot &slot = s.slots[it->second];
        if (!valid(slot.value)) {
            s.release(it->second);
            s.index.erase(it);
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
        Shard &s = shard_of(key);
        std::lock_guard guard(s.lock);
        InsertResult r;
        if (gen_.load() != gen)
            return r;
        if (auto it = s.index.find(key); it != s.index.end()) {
            s.slots[it->second].value = value;
            r.inserted = true;
            return r;
        }
        uint32_t idx;
        if (!s.free.empty()) {
            idx = s.free.back();
            s.free.pop_back();
        } else {
            idx = s.victim();
            s.index.erase(s.slots[idx].key);
            r.evicted = true;
        }
        Slot &slot = s.slots[idx];
        slot.key = key;
        slot.value = value;
        slot.referenced = false;
        slot.used = true;
        s.index.emplace(key, idx);
        r.inserted = true;
        return r;
    }

    // Drop one key; returns whether it was present.
    bool erase(const Key &key)
    {
        Shard &s = shard_of(key);
        std::lock_guard guard(s.lock);
        auto it = s.index.find(key);
        if (it == s.index.end())
            return false;
        s.release(it->second);
        s.index.erase(it);
        return true;
    }

    size_t clear()
    {
        size_t dropped = 0;
        for (auto &sp : shards_) {
            Shard &s = *sp;
            std::lock_guard guard(s.lock);
            dropped += s.index.size();
            s.clear();
        }
        return dropped;
    }

    size_t size()
    {
        size_t n = 0;
        for (auto &sp : shards_) {
            std::lock_guard guard(sp->lock);
            n += sp->index.size();
        }
        return n;
    }

private:
    static constexpr size_t MAX_SHARDS = 64;
    static constexpr size_t MIN_PER_SHARD = 8;

    struct Slot {
        Key key{};
        Value value{};
        bool used = false;
        bool referenced = false;
    };

    struct alignas(64) Shard {
        explicit Shard(size_t n) : slots(n) { reset(); }

        std::mutex lock;
        std::vector<Slot> slots;
        std::vector<uint32_t> free;
        std::unordered_map<Key, uint32_t, Hash> index;
        uint32_t hand = 0;

        void reset()
        {
            index.clear();
            free.clear();
            for (uint32_t i = slots.size(); i-- > 0;) {
                slots[i].used = false;
                free.push_back(i);
            }
            hand = 0;
        }

        // O(entries), not O(capacity): only used slots go back to `free`.
        void clear()
        {
            for (auto &[key, idx] : index) {
                slots[idx].used = false;
                slots[idx].referenced = false;
                free.push_back(idx);
            }
            index.clear();
        }

        uint32_t victim()
        {
            for (;;) {
                Slot &slot = slots[hand];
                uint32_t idx = hand;
                hand = (hand + 1) % slots.size();
                if (!slot.referenced)
                    return idx;
                slot.referenced = false;
            }
        }

        void release(uint32_t idx)
        {
            slots[idx].used = false;
            slots[idx].referenced = false;
            free.push_back(idx);
        }
    };

    Shard &shard_of(const Key &key)
    {
        // Use the high bits of a mixed hash: the index uses the low ones.
        uint64_t h = static_cast<uint64_t>(Hash{}(key)) * 0x9e3779b97f4a7c15ull;
        return *shards_[(h >> 40) & (shards_.size() - 1)];
    }

    std::vector<std::unique_ptr<Shard>> shards_;
    std::atomic<uint64_t> gen_{0};
};

}  // namespace viommu::vtd
