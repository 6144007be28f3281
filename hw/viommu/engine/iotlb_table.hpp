// SPDX-License-Identifier: GPL-2.0-or-later
// The IOTLB's storage: a compact set-associative table of 16-byte entries.
//
// - Entries are two 64-bit words: a tag (page number, domain-id, level)
//   and a value (frame number, permissions, a referenced bit, the epoch the
//   fill started under).  A 64-byte cache line is a set of 4 ways, so a
//   table of N entries takes N * 16 bytes (64K entries: 1 MiB, against
//   8 MiB for one cache line per entry), and a hit reads one line.
// - Every key has two candidate sets (two independent hashes).  Inserts go
//   to the first set while it has room, so most hits read one line; the
//   second set absorbs the overflow a hash table at this load would
//   otherwise evict (two-choice hashing keeps conflict misses rare while
//   the working set is below the capacity).
// - Lookups take no lock.  Sets are grouped in stripes (at least 32 sets
//   each, at most 1024 stripes), and a key's two candidate sets lie in the
//   same stripe.  Each stripe has a sequence count that is also its writer
//   lock: a writer makes it odd with one compare-and-swap and even again
//   with one store.  A reader loads the sets with relaxed atomic loads and
//   keeps what it read only if the sequence was even and unchanged,
//   otherwise it reads again (yielding the CPU if a writer holds on).  The
//   referenced bit is set by readers with a compare-and-swap on the exact
//   value they read, so it can never resurrect an entry a writer changed.
// - Eviction replaces one way of a full set: an empty one, else one whose
//   epoch is stale (dead anyway), else one not referenced since it was
//   last passed over (a per-set CLOCK).  Nothing is ever flushed because
//   the table is full.
// - clear() and sweep() cost the sets that were filled, not the capacity
//   (a root-table latch or a reset with the default 131072 entries would
//   otherwise walk 32768 sets): a bitmap marks each set a fill may have
//   stored into, and they visit the marked sets only.  A fill marks its
//   candidate sets under their stripe's lock before it checks the
//   generation, and clear() reads the bitmap after bumping it (all
//   sequentially consistent): either clear() sees the mark, and empties
//   the set under the same lock, or the fill sees the new generation and
//   stores nothing.  A set is unmarked only under its lock, once empty.
// - Epochs are 21 bits; the owner (Iotlb) sweeps stale entries out before
//   any epoch can wrap around to a value an old entry still carries.
// - Translations the encoding cannot hold (a page number above 2^45, a
//   frame above 2^40, i.e. a guest-physical address above 4 PiB) are
//   simply not cached: the walk is repeated, the result is the same.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace viommu::vtd {

struct TableKey {
    uint64_t vpn;  // input address >> level shift (or >> 21 for level 0)
    uint16_t did;
    uint8_t level;  // 0..3
};

struct TableValue {
    uint64_t frame;  // output address >> 12
    uint8_t perm;    // 2 bits
    uint32_t epoch;  // EPOCH_BITS bits
};

// Where a lookup found its key's entry, valid or stale: a fill that
// follows a stale hit overwrites that way without searching again.
struct IotlbSlot {
    size_t set = SIZE_MAX;
    unsigned way = 0;
};

class IotlbTable {
public:
    static constexpr unsigned WAYS = 4;
    using Slot = IotlbSlot;
    static constexpr unsigned VPN_BITS = 45;
    static constexpr unsigned FRAME_BITS = 40;
    static constexpr unsigned EPOCH_BITS = 21;
    static constexpr uint32_t EPOCH_MASK = (uint32_t{1} << EPOCH_BITS) - 1;

    // `capacity` entries, rounded up to whole sets (a power of two of them).
    explicit IotlbTable(size_t capacity)
    {
        size_t sets = std::bit_ceil(std::max<size_t>((capacity + WAYS - 1) / WAYS, 1));
        mask_ = sets - 1;
        sets_ = allocate_sets(sets);
        stripes_ = std::clamp<size_t>(sets / MIN_SETS_PER_STRIPE, 1, MAX_STRIPES);
        seq_ = std::make_unique<std::atomic<uint32_t>[]>(stripes_);
        used_ = std::make_unique<std::atomic<uint64_t>[]>(used_words());
    }

    size_t capacity() const { return (mask_ + 1) * WAYS; }
    size_t bytes() const { return (mask_ + 1) * sizeof(Set) + used_words() * sizeof(uint64_t); }

    uint64_t generation() const { return gen_.load(); }
    // Sequentially consistent, as are callers' own flags published before
    // insert() (see Iotlb::levels_cached_).
    void bump_generation() { gen_.fetch_add(1); }

    static bool encodable(const TableKey &k)
    {
        return k.vpn < (uint64_t{1} << VPN_BITS) && k.level < 4;
    }

    // `fresh(epoch)`: whether an entry of this key's domain filled under
    // `epoch` is still valid.
    template <typename Fresh>
    std::optional<TableValue> lookup(const TableKey &key, Fresh fresh, Slot *found = nullptr)
    {
        if (!encodable(key))
            return std::nullopt;
        const uint64_t tag = make_tag(key);
        const uint64_t h = mix(tag);
        size_t sets[2];
        const unsigned n = candidates(h, sets);
        std::atomic<uint32_t> &seq = seq_[stripe(sets[0])];
        Set *set = nullptr;
        uint64_t value = 0;
        int way = -1;
        for (unsigned tries = 0;; tries++) {
            uint32_t s = seq.load(std::memory_order_acquire);
            if (!(s & 1)) {
                way = -1;
                for (unsigned c = 0; c < n && way < 0; c++) {
                    set = &sets_[sets[c]];
                    way = find(*set, tag, value);
                }
                std::atomic_thread_fence(std::memory_order_acquire);
                if (seq.load(std::memory_order_relaxed) == s)
                    break;
            }
            backoff(tries);
        }
        if (way < 0)
            return std::nullopt;
        if (found)
            *found = {static_cast<size_t>(set - sets_.get()), static_cast<unsigned>(way)};
        TableValue v = unpack(value);
        if (!fresh(v.epoch))
            return std::nullopt;
        if (!(value & REF)) {
            // A hint: fails harmlessly if a writer changed the way.
            set->w[2 * way + 1].compare_exchange_strong(value, value | REF,
                                                        std::memory_order_relaxed);
        }
        return v;
    }

    // Start loading the sets a key may be in (for a write), so a later
    // insert or erase does not wait for them.
    void prefetch(const TableKey &key) const
    {
        if (!encodable(key))
            return;
        size_t sets[2];
        unsigned n = candidates(mix(make_tag(key)), sets);
        for (unsigned c = 0; c < n; c++)
            __builtin_prefetch(&sets_[sets[c]], 1);
        __builtin_prefetch(&seq_[stripe(sets[0])], 1);
    }

    struct InsertResult {
        bool inserted = false;
        bool evicted = false;       // an entry made room
        bool evicted_live = false;  // ... and it was not stale
    };

    // Inserts unless an invalidation bumped the generation since `gen` was
    // sampled.  `fresh(did, epoch)` judges victims.  `hint`: where a lookup
    // of this key found it; used only if the key is still there.
    template <typename Fresh>
    InsertResult insert(const TableKey &key, const TableValue &v, uint64_t gen, Fresh fresh,
                        const Slot &hint = {})
    {
        InsertResult r;
        if (!encodable(key) || v.frame >= (uint64_t{1} << FRAME_BITS))
            return r;
        const uint64_t tag = make_tag(key);
        const uint64_t value = pack(v);
        if (hint.set <= mask_ && hint.way < WAYS) {
            WriteGuard guard(*this, hint.set);
            mark(hint.set);
            if (gen_.load() != gen)
                return r;
            Set &set = sets_[hint.set];
            if (set.w[2 * hint.way].load(std::memory_order_relaxed) == tag) {
                store(set, hint.way, tag, value);
                r.inserted = true;
                return r;
            }
        }
        size_t sets[2];
        unsigned n = candidates(mix(tag), sets);
        WriteGuard guard(*this, sets[0]);
        for (unsigned c = 0; c < n; c++)
            mark(sets[c]);  // before the generation check (see the top of this file)
        if (gen_.load() != gen)
            return r;
        r.inserted = true;
        uint64_t old;
        for (unsigned c = 0; c < n; c++) {
            if (int way = find(sets_[sets[c]], tag, old); way >= 0) {
                store(sets_[sets[c]], way, tag, value);
                return r;
            }
        }
        // An empty way, else a dead one, else CLOCK over the candidates.
        for (unsigned c = 0; c < n; c++) {
            Set &set = sets_[sets[c]];
            for (unsigned w = 0; w < WAYS; w++) {
                if (!set.w[2 * w].load(std::memory_order_relaxed)) {
                    store(set, w, tag, value);
                    count_.fetch_add(1, std::memory_order_relaxed);
                    return r;
                }
            }
        }
        r.evicted = true;
        for (unsigned c = 0; c < n; c++) {
            Set &set = sets_[sets[c]];
            for (unsigned w = 0; w < WAYS; w++) {
                uint64_t t = set.w[2 * w].load(std::memory_order_relaxed);
                uint64_t val = set.w[2 * w + 1].load(std::memory_order_relaxed);
                if (!fresh(tag_did(t), unpack(val).epoch)) {
                    store(set, w, tag, value);
                    return r;
                }
            }
        }
        // CLOCK over the candidates' ways, from a position the key picks
        // (sets have no hand of their own): the first way not referenced
        // since it was last passed over; passing clears the bit.
        r.evicted_live = true;
        const unsigned ways = n * WAYS;
        const unsigned start = static_cast<unsigned>(mix(tag ^ value) >> 58) % ways;
        for (unsigned i = 0;; i++) {
            unsigned k = (start + i) % ways;
            Set &set = sets_[sets[k / WAYS]];
            std::atomic<uint64_t> &val = set.w[2 * (k % WAYS) + 1];
            uint64_t x = val.load(std::memory_order_relaxed);
            if (!(x & REF) || i >= ways) {
                store(set, k % WAYS, tag, value);
                return r;
            }
            val.store(x & ~REF, std::memory_order_relaxed);
        }
    }

    // Drop one key; returns whether it was present.  `counted`: false when
    // the caller erases many keys and reports them with uncount() once,
    // instead of a shared atomic update per key.
    bool erase(const TableKey &key, bool counted = true)
    {
        if (!encodable(key))
            return false;
        Probe p = locate(key);
        bool found = erase_at(p);
        if (found && counted)
            count_.fetch_sub(1, std::memory_order_relaxed);
        return found;
    }

    // erase(key(i), false) for i < n; returns how many were present.  In a
    // table larger than the CPU's private caches hold (PREFETCH_BYTES) the
    // sets of the key ERASE_AHEAD later load meanwhile: a range's keys hash
    // to unrelated sets, and one at a time each would wait for its own
    // misses.  A smaller table is probed key by key, where the prefetches
    // would only cost.
    template <typename KeyAt>
    size_t erase_each(uint64_t n, KeyAt key)
    {
        size_t dropped = 0;
        if ((mask_ + 1) * sizeof(Set) <= PREFETCH_BYTES) {
            for (uint64_t i = 0; i < n; i++)
                dropped += erase(key(i), false);
            return dropped;
        }
        std::array<Probe, ERASE_AHEAD> ahead;
        auto start = [&](uint64_t i) {
            TableKey k = key(i);
            Probe &p = ahead[i % ERASE_AHEAD];
            p = encodable(k) ? locate(k) : Probe{};
            for (unsigned c = 0; c < p.n; c++)
                __builtin_prefetch(&sets_[p.sets[c]], 1);
        };
        for (uint64_t i = 0; i < std::min<uint64_t>(n, ERASE_AHEAD); i++)
            start(i);
        for (uint64_t i = 0; i < n; i++) {
            Probe p = ahead[i % ERASE_AHEAD];
            if (i + ERASE_AHEAD < n)
                start(i + ERASE_AHEAD);
            dropped += p.n && erase_at(p);
        }
        return dropped;
    }
    static constexpr unsigned ERASE_AHEAD = 16;
    static constexpr size_t PREFETCH_BYTES = 256 * 1024;

    // Drop every entry `fresh(did, epoch)` rejects, set by set; live
    // entries stay.  Returns the number dropped.  O(sets filled), plus
    // reading the bitmap (one word per 64 sets).
    template <typename Fresh>
    size_t sweep(Fresh fresh)
    {
        return for_marked([&](size_t i) {
            return clear_set(
                i, [&](uint64_t t, uint64_t v) { return !fresh(tag_did(t), unpack(v).epoch); });
        });
    }

    // Drop everything.  O(sets filled since the last clear), plus reading
    // the bitmap.
    size_t clear()
    {
        return for_marked(
            [&](size_t i) { return clear_set(i, [](uint64_t, uint64_t) { return true; }); });
    }
    // Sets marked as possibly holding entries (for tests: a cleared table
    // has none).
    size_t marked_sets() const
    {
        size_t n = 0;
        for (size_t w = 0; w < used_words(); w++)
            n += std::popcount(used_[w].load());
        return n;
    }

    size_t size() const { return count_.load(std::memory_order_relaxed); }
    void uncount(size_t erased) { count_.fetch_sub(erased, std::memory_order_relaxed); }

private:
    static constexpr size_t MAX_STRIPES = 1024;
    static constexpr size_t MIN_SETS_PER_STRIPE = 32;
    static constexpr uint64_t REF = uint64_t{1} << (FRAME_BITS + 2);
    static constexpr unsigned EPOCH_SHIFT = FRAME_BITS + 3;
    static_assert(EPOCH_SHIFT + EPOCH_BITS == 64);
    static_assert(1 + 2 + 16 + VPN_BITS == 64);

    struct alignas(64) Set {
        std::atomic<uint64_t> w[2 * WAYS];  // tag, value per way; tag 0: empty
    };
    static_assert(sizeof(Set) == 64);

    struct FreeSets {
        void operator()(Set *p) const { std::free(p); }
    };
    using SetArray = std::unique_ptr<Set[], FreeSets>;

    // Zeroed, 2 MiB-aligned when large, so the kernel can back it with huge
    // pages (one TLB entry instead of 512 for a random lookup's line).
    static SetArray allocate_sets(size_t n)
    {
        constexpr size_t HUGE = size_t{2} << 20;
        size_t bytes = n * sizeof(Set);
        size_t align = bytes >= HUGE / 2 ? HUGE : alignof(Set);
        bytes = (bytes + align - 1) / align * align;
        void *mem = std::aligned_alloc(align, bytes);
        if (!mem)
            throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (align == HUGE)
            madvise(mem, bytes, MADV_HUGEPAGE);  // advice only: failure is fine
#endif
        Set *sets = static_cast<Set *>(mem);
        std::uninitialized_value_construct_n(sets, n);
        return SetArray(sets);
    }

    // A key's tag and candidate sets.
    struct Probe {
        uint64_t tag = 0;
        size_t sets[2] = {};
        unsigned n = 0;  // 0: not encodable, nothing to probe
    };
    Probe locate(const TableKey &key) const
    {
        Probe p;
        p.tag = make_tag(key);
        p.n = candidates(mix(p.tag), p.sets);
        return p;
    }
    // Drops p's key from its sets under their stripe's lock (uncounted).
    bool erase_at(const Probe &p)
    {
        WriteGuard guard(*this, p.sets[0]);
        uint64_t old;
        for (unsigned c = 0; c < p.n; c++) {
            Set &set = sets_[p.sets[c]];
            if (int way = find(set, p.tag, old); way >= 0) {
                set.w[2 * way].store(0, std::memory_order_relaxed);
                set.w[2 * way + 1].store(0, std::memory_order_relaxed);
                return true;
            }
        }
        return false;
    }

    static uint64_t make_tag(const TableKey &k)
    {
        return 1 | uint64_t{k.level} << 1 | uint64_t{k.did} << 3 | k.vpn << 19;
    }
    static uint16_t tag_did(uint64_t tag)
    {
        return static_cast<uint16_t>(tag >> 3);
    }

    static uint64_t pack(const TableValue &v)
    {
        return v.frame | uint64_t{v.perm & 3u} << FRAME_BITS |
               uint64_t{v.epoch & EPOCH_MASK} << EPOCH_SHIFT;
    }
    static TableValue unpack(uint64_t x)
    {
        return {x & ((uint64_t{1} << FRAME_BITS) - 1), static_cast<uint8_t>((x >> FRAME_BITS) & 3),
                static_cast<uint32_t>(x >> EPOCH_SHIFT)};
    }

    static uint64_t mix(uint64_t x)
    {
        x ^= x >> 31;
        x *= 0x9e3779b97f4a7c15ull;
        x ^= x >> 29;
        x *= 0xbf58476d1ce4e5b9ull;
        return x ^ (x >> 32);
    }
    // Two sets of one stripe: the stripe bits come from the first hash.
    unsigned candidates(uint64_t h, size_t sets[2]) const
    {
        sets[0] = h & mask_;
        sets[1] = (((h >> 32) & mask_) & ~(stripes_ - 1)) | (sets[0] & (stripes_ - 1));
        return sets[1] == sets[0] ? 1 : 2;
    }
    static void backoff(unsigned tries)
    {
        if (tries >= 64)
            std::this_thread::yield();  // the writer may have been preempted
    }
    size_t stripe(size_t set) const
    {
        return set & (stripes_ - 1);
    }

    // The way holding `tag` (its value in `value`), or -1.
    static int find(const Set &set, uint64_t tag, uint64_t &value)
    {
        for (unsigned w = 0; w < WAYS; w++) {
            if (set.w[2 * w].load(std::memory_order_relaxed) == tag) {
                value = set.w[2 * w + 1].load(std::memory_order_relaxed);
                return static_cast<int>(w);
            }
        }
        return -1;
    }
    static void store(Set &set, unsigned way, uint64_t tag, uint64_t value)
    {
        set.w[2 * way].store(tag, std::memory_order_relaxed);
        set.w[2 * way + 1].store(value, std::memory_order_relaxed);
    }

    // Drops what `drop(tag, value)` picks from set i; unmarks the set if
    // it is left empty.
    template <typename Drop>
    size_t clear_set(size_t i, Drop drop)
    {
        WriteGuard guard(*this, i);
        size_t dropped = 0;
        bool empty = true;
        Set &set = sets_[i];
        for (unsigned w = 0; w < WAYS; w++) {
            uint64_t t = set.w[2 * w].load(std::memory_order_relaxed);
            if (t && drop(t, set.w[2 * w + 1].load(std::memory_order_relaxed))) {
                set.w[2 * w].store(0, std::memory_order_relaxed);
                set.w[2 * w + 1].store(0, std::memory_order_relaxed);
                dropped++;
            } else if (t) {
                empty = false;
            }
        }
        if (empty)
            used_[i / 64].fetch_and(~(uint64_t{1} << (i % 64)));
        count_.fetch_sub(dropped, std::memory_order_relaxed);
        return dropped;
    }

    size_t used_words() const
    {
        return (mask_ + 64) / 64;
    }
    // Under set i's stripe lock.  Read first: the word is shared by 64 sets
    // and their fills.
    void mark(size_t i)
    {
        std::atomic<uint64_t> &w = used_[i / 64];
        const uint64_t b = uint64_t{1} << (i % 64);
        if (!(w.load() & b))
            w.fetch_or(b);
    }
    // Calls `visit(set)` for each marked set; sums what it returns.
    template <typename Visit>
    size_t for_marked(Visit visit)
    {
        size_t n = 0;
        for (size_t w = 0; w < used_words(); w++)
            for (uint64_t bits = used_[w].load(); bits; bits &= bits - 1)
                n += visit(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
        return n;
    }

    // Holds the writer lock of a set's stripe: its sequence is odd meanwhile.
    class WriteGuard {
    public:
        WriteGuard(IotlbTable &t, size_t set) : seq_(t.seq_[t.stripe(set)])
        {
            for (unsigned tries = 0;; tries++) {
                uint32_t s = seq_.load(std::memory_order_relaxed);
                if (!(s & 1) && seq_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                                           std::memory_order_relaxed))
                    break;
                backoff(tries);
            }
            std::atomic_thread_fence(std::memory_order_release);
        }
        ~WriteGuard()
        {
            seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        }
        WriteGuard(const WriteGuard &) = delete;
        WriteGuard &operator=(const WriteGuard &) = delete;

    private:
        std::atomic<uint32_t> &seq_;
    };

    SetArray sets_;
    size_t mask_ = 0;
    size_t stripes_ = 1;
    std::unique_ptr<std::atomic<uint32_t>[]> seq_;   // per stripe; odd: a writer holds it
    std::unique_ptr<std::atomic<uint64_t>[]> used_;  // a bit per set that may hold entries
    std::atomic<size_t> count_{0};
    std::atomic<uint64_t> gen_{0};
};

}  // namespace viommu::vtd
