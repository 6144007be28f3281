// SPDX-License-Identifier: GPL-2.0-or-later
// A bounded, sharded cache with CLOCK (second-chance) replacement: the
// IOTLB's storage.
//
// - Each shard has its own writer lock, an open-addressing (linear
//   probing) table holding the entries inline, and a CLOCK hand.
// - Lookups take no lock: every shard is a seqlock.  Writers (insert,
//   erase, clear, dropping a stale entry) hold the shard's lock and bump
//   its sequence around each change; a reader probes the table with
//   relaxed atomic loads and keeps what it found only if the sequence was
//   even and unchanged, otherwise it takes the lock and looks again.  So a
//   hit is a handful of plain loads: no atomic read-modify-write, no lock.
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
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
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
        // Optimistic, lock-free read; retried under the lock if a writer
        // was active or the entry is stale (the locked path drops it).
        uint64_t seq = s.seq.load(std::memory_order_acquire);
        if (!(seq & 1)) {
            Value v;
            size_t i = s.find_optimistic(key, h, v);
            std::atomic_thread_fence(std::memory_order_acquire);
            if (s.seq.load(std::memory_order_relaxed) == seq) {
                if (i == NONE)
                    return std::nullopt;
                if (valid(v)) {
                    // A hint only: a racing writer may move or drop it.
                    if (!s.table[i].referenced.load(std::memory_order_relaxed))
                        s.table[i].referenced.store(true, std::memory_order_relaxed);
                    return v;
                }
            }
        }
        std::lock_guard guard(s.lock);
        size_t i = s.find(key, h);
        if (i == NONE)
            return std::nullopt;
        Slot &slot = s.table[i];
        Value v = slot.value();
        if (!valid(v)) {
            WriteSection w(s);
            s.remove_at(i);
            return std::nullopt;
        }
        slot.referenced.store(true, std::memory_order_relaxed);
        return v;
    }

    struct InsertResult {
        bool inserted = false;
        bool evicted = false;        // an entry made room
        bool evicted_live = false;   // ... and `valid` still held for it
    };

    // When the shard is full, CLOCK evicts an entry `valid` rejects first
    // (it is dead anyway), else one not referenced since the hand passed.
    template <typename Valid>
    InsertResult insert(const Key &key, const Value &value, uint64_t gen, Valid valid)
    {
        uint64_t h = mix(key);
        Shard &s = shard_of(h);
        std::lock_guard guard(s.lock);
        InsertResult r;
        if (gen_.load() != gen)
            return r;
        r.inserted = true;
        WriteSection w(s);
        if (size_t i = s.find(key, h); i != NONE) {
            s.table[i].set_value(value);
            return r;
        }
        if (s.count == s.limit) {
            bool live = false;
            s.remove_at(s.victim(valid, live));
            r.evicted = true;
            r.evicted_live = live;
        }
        size_t i = h & s.mask;
        while (s.table[i].used.load(std::memory_order_relaxed))
            i = (i + 1) & s.mask;
        s.table[i].set(key, value, h);
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
        WriteSection w(s);
        s.remove_at(i);
        return true;
    }

    size_t clear()
    {
        size_t dropped = 0;
        for (auto &sp : shards_) {
            std::lock_guard guard(sp->lock);
            WriteSection w(*sp);
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

    static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_copyable_v<Value>,
                  "keys and values are copied word by word");
    static constexpr size_t KEY_WORDS = (sizeof(Key) + 7) / 8;
    static constexpr size_t VALUE_WORDS = (sizeof(Value) + 7) / 8;

    template <typename T, size_t N>
    static void store_words(std::array<std::atomic<uint64_t>, N> &w, const T &v)
    {
        uint64_t buf[N] = {};
        std::memcpy(buf, &v, sizeof(T));
        for (size_t i = 0; i < N; i++)
            w[i].store(buf[i], std::memory_order_relaxed);
    }
    template <typename T, size_t N>
    static T load_words(const std::array<std::atomic<uint64_t>, N> &w)
    {
        uint64_t buf[N];
        for (size_t i = 0; i < N; i++)
            buf[i] = w[i].load(std::memory_order_relaxed);
        T v;
        std::memcpy(&v, buf, sizeof(T));
        return v;
    }

    // Every field is a relaxed atomic: lock-free readers may race with the
    // writer, and the shard's sequence tells them whether what they read
    // is consistent.  One cache line each (for the IOTLB's key and entry):
    // a hit touches one line of the table.
    struct alignas(64) Slot {
        std::atomic<uint64_t> hash{0};
        std::array<std::atomic<uint64_t>, KEY_WORDS> key_w{};
        std::array<std::atomic<uint64_t>, VALUE_WORDS> value_w{};
        std::atomic<bool> used{false};
        std::atomic<bool> referenced{false};

        Key key() const { return load_words<Key>(key_w); }
        Value value() const { return load_words<Value>(value_w); }
        void set_value(const Value &v) { store_words(value_w, v); }
        void set(const Key &k, const Value &v, uint64_t h)
        {
            hash.store(h, std::memory_order_relaxed);
            store_words(key_w, k);
            store_words(value_w, v);
            referenced.store(false, std::memory_order_relaxed);
            used.store(true, std::memory_order_relaxed);
        }
        void copy_from(const Slot &o)
        {
            hash.store(o.hash.load(std::memory_order_relaxed), std::memory_order_relaxed);
            for (size_t i = 0; i < KEY_WORDS; i++)
                key_w[i].store(o.key_w[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
            for (size_t i = 0; i < VALUE_WORDS; i++)
                value_w[i].store(o.value_w[i].load(std::memory_order_relaxed),
                                 std::memory_order_relaxed);
            used.store(o.used.load(std::memory_order_relaxed), std::memory_order_relaxed);
            referenced.store(o.referenced.load(std::memory_order_relaxed),
                             std::memory_order_relaxed);
        }
    };

    struct alignas(64) Shard {
        explicit Shard(size_t entries) : limit(entries)
        {
            size_t n = 2;
            while (n < 2 * entries)
                n *= 2;
            table = std::make_unique<Slot[]>(n);
            mask = n - 1;
        }

        std::atomic<uint64_t> seq{0};  // odd while a writer changes the table
        std::mutex lock;
        std::unique_ptr<Slot[]> table;  // at most half full: probe runs stay short
        size_t mask = 0;
        size_t limit = 0;
        size_t count = 0;
        size_t hand = 0;

        // Under the lock.
        size_t find(const Key &key, uint64_t h) const
        {
            for (size_t i = h & mask;; i = (i + 1) & mask) {
                const Slot &slot = table[i];
                if (!slot.used.load(std::memory_order_relaxed))
                    return NONE;
                if (slot.hash.load(std::memory_order_relaxed) == h && slot.key() == key)
                    return i;
            }
        }

        // Without the lock: the result means something only if the
        // sequence did not move.  Bounded, since a racing writer can make
        // the table look fuller than it ever is.
        size_t find_optimistic(const Key &key, uint64_t h, Value &v) const
        {
            size_t i = h & mask;
            for (size_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
                const Slot &slot = table[i];
                if (!slot.used.load(std::memory_order_relaxed))
                    return NONE;
                if (slot.hash.load(std::memory_order_relaxed) == h && slot.key() == key) {
                    v = slot.value();
                    return i;
                }
            }
            return NONE;
        }

        // Backward-shift deletion keeps every probe run unbroken.
        void remove_at(size_t i)
        {
            for (size_t j = i;;) {
                j = (j + 1) & mask;
                if (!table[j].used.load(std::memory_order_relaxed))
                    break;
                size_t home = table[j].hash.load(std::memory_order_relaxed) & mask;
                bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
                if (stays)
                    continue;
                table[i].copy_from(table[j]);
                i = j;
            }
            table[i].used.store(false, std::memory_order_relaxed);
            table[i].referenced.store(false, std::memory_order_relaxed);
            count--;
        }

        // An occupied slot that is dead (`valid` rejects it) or was not
        // referenced since the hand last passed (count > 0 whenever this
        // is called).  `live` tells which.
        template <typename Valid>
        size_t victim(Valid &valid, bool &live)
        {
            for (;;) {
                size_t i = hand;
                hand = (hand + 1) & mask;
                Slot &slot = table[i];
                if (!slot.used.load(std::memory_order_relaxed))
                    continue;
                if (!valid(slot.value())) {
                    live = false;
                    return i;
                }
                if (!slot.referenced.load(std::memory_order_relaxed)) {
                    live = true;
                    return i;
                }
                slot.referenced.store(false, std::memory_order_relaxed);
            }
        }

        void clear()
        {
            for (size_t i = 0; i <= mask; i++) {
                table[i].used.store(false, std::memory_order_relaxed);
                table[i].referenced.store(false, std::memory_order_relaxed);
            }
            count = 0;
        }
    };

    // Brackets a change to a shard's table (the shard's lock is held).
    class WriteSection {
    public:
        explicit WriteSection(Shard &s) : s_(s)
        {
            s_.seq.store(s_.seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);
        }
        ~WriteSection()
        {
            s_.seq.store(s_.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        }
        WriteSection(const WriteSection &) = delete;
        WriteSection &operator=(const WriteSection &) = delete;

    private:
        Shard &s_;
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
