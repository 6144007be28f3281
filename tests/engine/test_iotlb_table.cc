// SPDX-License-Identifier: GPL-2.0-or-later
// The IOTLB's compact set-associative storage, tested directly: it never
// returns a translation an invalidation removed (page, domain, global, and
// after the 21-bit epochs wrap around), eviction removes one entry at a
// time, fills that raced an invalidation are discarded, and lock-free
// readers never see a torn entry.
#include <cstddef>
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "iotlb.hpp"

using namespace viommu::vtd;

namespace {

constexpr uint64_t PAGE = 4096;

// The model: what each (domain, page) maps to now.  Every invalidation in
// the tests changes the mapping of what it covers, so a stale hit shows as
// a wrong frame.
struct Model {
    std::map<std::pair<uint16_t, uint64_t>, uint64_t> phys;
    uint64_t next = 0x100000;
    uint64_t get(uint16_t did, uint64_t page)
    {
        auto [it, fresh] = phys.try_emplace({did, page}, 0);
        if (fresh)
            it->second = (next += PAGE);
        return it->second;
    }
    void remap(uint16_t did, uint64_t page) { phys[{did, page}] = (next += PAGE); }
};

TEST(IotlbTable, RandomOperationsNeverReturnStaleTranslations)
{
    Iotlb tlb(64);  // small: eviction all the time
    Model m;
    std::mt19937_64 rng(7);
    uint64_t hits = 0, lookups = 0;
    for (int op = 0; op < 200000; op++) {
        uint16_t did = 1 + rng() % 3;
        uint64_t page = rng() % 40;
        switch (rng() % 16) {
        case 0: {  // page-selective, 1..4 pages
            uint64_t n = 1 + rng() % 4;
            bool as_domain = false;
            tlb.invalidate_pages(did, page * PAGE, n, rng() & 1, as_domain);
            ASSERT_FALSE(as_domain);
            for (uint64_t p = page; p < page + n; p++)
                m.remap(did, p);
            break;
        }
        case 1:
            if (rng() % 8 == 0) {
                tlb.invalidate_domain(did);
                for (auto &[k, v] : m.phys)
                    if (k.first == did)
                        v = (m.next += PAGE);
            }
            break;
        case 2:
            if (rng() % 64 == 0) {
                tlb.invalidate_all();
                for (auto &[k, v] : m.phys)
                    v = (m.next += PAGE);
            }
            break;
        default: {
            lookups++;
            uint64_t want = m.get(did, page);
            Iotlb::Slot stale;
            if (auto leaf = tlb.lookup(did, page * PAGE, &stale)) {
                hits++;
                ASSERT_EQ(leaf->phys, want) << "stale translation, op " << op;
                ASSERT_EQ(leaf->level, 1);
            } else {
                // Half the fills go where the lookup found the stale entry.
                auto token = tlb.prepare_fill(did);
                tlb.insert(did, page * PAGE, {want, 1, 3}, token, op & 1 ? stale : Iotlb::Slot{});
            }
        }
        }
    }
    EXPECT_GT(hits, lookups / 10) << "the table caches something";
}

TEST(IotlbTable, FillRacingAnInvalidationIsDiscarded)
{
    Iotlb tlb(1024);
    auto token = tlb.prepare_fill(1);
    bool as_domain = false;
    tlb.invalidate_pages(1, 0x5000, 1, false, as_domain);
    EXPECT_FALSE(tlb.insert(1, 0x5000, {0xa000, 1, 3}, token).inserted);
    EXPECT_FALSE(tlb.lookup(1, 0x5000));
    token = tlb.prepare_fill(1);
    EXPECT_TRUE(tlb.insert(1, 0x5000, {0xa000, 1, 3}, token).inserted);
    ASSERT_TRUE(tlb.lookup(1, 0x5000));
    EXPECT_EQ(tlb.lookup(1, 0x5000)->phys, 0xa000u);
}

// A fill after a stale hit overwrites the stale entry where the lookup
// found it; a hint whose way meanwhile holds another key is ignored.
TEST(IotlbTable, FillOverwritesTheStaleEntryItsLookupFound)
{
    Iotlb tlb(1024);
    tlb.insert(1, 0x5000, {0xa000, 1, 3}, tlb.prepare_fill(1));
    size_t entries = tlb.size();
    tlb.invalidate_domain(1);
    Iotlb::Slot stale;
    EXPECT_FALSE(tlb.lookup(1, 0x5000, &stale));
    ASSERT_NE(stale.set, SIZE_MAX) << "the stale entry was found";
    EXPECT_TRUE(tlb.insert(1, 0x5000, {0xb000, 1, 3}, tlb.prepare_fill(1), stale).inserted);
    EXPECT_EQ(tlb.size(), entries) << "overwritten in place";
    ASSERT_TRUE(tlb.lookup(1, 0x5000));
    EXPECT_EQ(tlb.lookup(1, 0x5000)->phys, 0xb000u);

    // The same slot given for another key: that key is inserted by the
    // normal path and the entry in the slot stays.
    EXPECT_TRUE(tlb.insert(1, 0x9000, {0xc000, 1, 3}, tlb.prepare_fill(1), stale).inserted);
    ASSERT_TRUE(tlb.lookup(1, 0x5000));
    EXPECT_EQ(tlb.lookup(1, 0x5000)->phys, 0xb000u);
    ASSERT_TRUE(tlb.lookup(1, 0x9000));
    EXPECT_EQ(tlb.lookup(1, 0x9000)->phys, 0xc000u);

    // A fill that raced an invalidation is discarded on the hinted path too.
    tlb.invalidate_domain(1);
    stale = {};
    EXPECT_FALSE(tlb.lookup(1, 0x5000, &stale));
    auto token = tlb.prepare_fill(1);
    bool as_domain = false;
    tlb.invalidate_pages(1, 0x5000, 1, false, as_domain);
    EXPECT_FALSE(tlb.insert(1, 0x5000, {0xd000, 1, 3}, token, stale).inserted);
    EXPECT_FALSE(tlb.lookup(1, 0x5000));
}

TEST(IotlbTable, EvictionReplacesOneEntryAtATime)
{
    Iotlb tlb(1024);
    const size_t cap = tlb.capacity();
    ASSERT_GE(cap, 1024u);
    size_t evictions = 0, before = 0;
    for (uint64_t p = 0; p < 4 * cap; p++) {
        auto token = tlb.prepare_fill(1);
        auto r = tlb.insert(1, p * PAGE, {0x100000 + p * PAGE, 1, 3}, token);
        ASSERT_TRUE(r.inserted);
        evictions += r.evicted;
        size_t now = tlb.size();
        ASSERT_GE(now, before) << "an insert emptied more than the slot it took";
        ASSERT_LE(now, cap);
        before = now;
    }
    // Every way is in use, and every eviction made room for exactly one entry.
    EXPECT_EQ(tlb.size(), cap);
    EXPECT_EQ(evictions, 4 * cap - cap);
    // Recently inserted pages are mostly still there.
    unsigned recent_hits = 0;
    for (uint64_t p = 4 * cap - 128; p < 4 * cap; p++)
        recent_hits += tlb.lookup(1, p * PAGE).has_value();
    EXPECT_GT(recent_hits, 64u);
}

TEST(IotlbTable, WorkingSetBelowCapacityStaysResident)
{
    // Two-choice hashing: half the capacity fits without conflict misses.
    Iotlb tlb(4096);
    const uint64_t pages = tlb.capacity() / 2;
    for (uint64_t p = 0; p < pages; p++) {
        auto token = tlb.prepare_fill(1);
        tlb.insert(1, p * PAGE, {p * PAGE, 1, 3}, token);
    }
    uint64_t missing = 0;
    for (uint64_t p = 0; p < pages; p++)
        missing += !tlb.lookup(1, p * PAGE);
    EXPECT_LE(missing, pages / 100);
}

// A page-selective range drops exactly its pages' entries, of its domain
// only, in a table small enough to probe key by key and in one large
// enough that each key's sets are prefetched ahead of its erase (a 2 MiB
// table of 64K entries, the device's default size).
TEST(IotlbTable, RangeInvalidationDropsExactlyItsPages)
{
    for (size_t entries : {size_t{4096}, size_t{65536}}) {
        Iotlb tlb(entries);
        const uint64_t pages = entries / 4;
        for (uint16_t did : {1, 2})
            for (uint64_t p = 0; p < pages; p++) {
                auto token = tlb.prepare_fill(did);
                tlb.insert(did, p * PAGE, {p * PAGE, 1, 3}, token);
            }
        const uint64_t first = pages / 4, n = 600;  // crosses a 2 MiB boundary
        std::array<uint64_t, 2> cached{};
        uint64_t in_range = 0;
        for (uint16_t did : {1, 2})
            for (uint64_t p = 0; p < pages; p++) {
                bool hit = tlb.lookup(did, p * PAGE).has_value();
                cached[did - 1] += hit;
                in_range += hit && did == 1 && p >= first && p < first + n;
            }
        EXPECT_GE(in_range, n * 9 / 10) << entries;  // the range was cached
        bool as_domain = false;
        size_t dropped = tlb.invalidate_pages(1, first * PAGE, n, true, as_domain);
        ASSERT_FALSE(as_domain) << entries;
        std::array<uint64_t, 2> left{};
        for (uint16_t did : {1, 2})
            for (uint64_t p = 0; p < pages; p++) {
                bool hit = tlb.lookup(did, p * PAGE).has_value();
                left[did - 1] += hit;
                if (did == 1 && p >= first && p < first + n) {
                    EXPECT_FALSE(hit) << entries << " page " << p;
                }
            }
        EXPECT_EQ(dropped, in_range) << entries;
        EXPECT_EQ(cached[0] - left[0], in_range) << entries;
        EXPECT_EQ(left[1], cached[1]) << entries;  // the other domain untouched
    }
}

TEST(IotlbTable, EpochWrapAroundNeverRevivesAnEntry)
{
    Iotlb tlb(256);
    auto token = tlb.prepare_fill(1);
    ASSERT_TRUE(tlb.insert(1, 0x1000, {0xa000, 1, 3}, token).inserted);
    token = tlb.prepare_fill(2);
    ASSERT_TRUE(tlb.insert(2, 0x1000, {0xb000, 1, 3}, token).inserted);
    // Exactly one full turn of the entries' epoch field for domain 1.
    for (uint64_t i = 0; i < (uint64_t{1} << IotlbTable::EPOCH_BITS); i++)
        tlb.invalidate_domain(1);
    EXPECT_FALSE(tlb.lookup(1, 0x1000)) << "a stale entry came back after the epoch wrapped";
    EXPECT_GE(tlb.sweeps(), 2u);
    // Sweeps drop only stale entries: domain 2 was never invalidated.
    ASSERT_TRUE(tlb.lookup(2, 0x1000));
    EXPECT_EQ(tlb.lookup(2, 0x1000)->phys, 0xb000u);
    // Global invalidations count too.
    for (uint64_t i = 0; i < (uint64_t{1} << IotlbTable::EPOCH_BITS); i++)
        tlb.invalidate_all();
    EXPECT_FALSE(tlb.lookup(2, 0x1000));
}

TEST(IotlbTable, UnencodableTranslationsAreNotCached)
{
    Iotlb tlb(256);
    auto token = tlb.prepare_fill(1);
    // An output address above 4 PiB does not fit the entry: not cached,
    // never mangled.
    EXPECT_FALSE(tlb.insert(1, 0x1000, {uint64_t{1} << 56, 1, 3}, token).inserted);
    EXPECT_FALSE(tlb.lookup(1, 0x1000));
    token = tlb.prepare_fill(1);
    EXPECT_TRUE(tlb.insert(1, 0x2000, {(uint64_t{1} << 52) - PAGE, 1, 3}, token).inserted);
    ASSERT_TRUE(tlb.lookup(1, 0x2000));
    EXPECT_EQ(tlb.lookup(1, 0x2000)->phys, (uint64_t{1} << 52) - PAGE);
}

TEST(IotlbTable, SuperpagesAndPagingStructureEntries)
{
    Iotlb tlb(256);
    auto token = tlb.prepare_fill(3);
    tlb.insert(3, 0x40200000, {0x80000000, 2, 1}, token);
    tlb.insert_pde(3, 0x1000, {0x7000, 3}, token);
    auto leaf = tlb.lookup(3, 0x403ff000);
    ASSERT_TRUE(leaf);
    EXPECT_EQ(leaf->level, 2);
    EXPECT_EQ(leaf->phys, 0x80000000u);
    EXPECT_EQ(leaf->perm, 1);
    ASSERT_TRUE(tlb.lookup_pde(3, 0x1ff000));
    EXPECT_EQ(tlb.lookup_pde(3, 0x1ff000)->table, 0x7000u);
    bool as_domain = false;
    // IH: leaves only; the paging-structure entry stays.
    tlb.invalidate_pages(3, 0x40300000, 1, true, as_domain);
    EXPECT_FALSE(tlb.lookup(3, 0x403ff000)) << "covering superpage dropped";
    EXPECT_TRUE(tlb.lookup_pde(3, 0x1000));
    tlb.invalidate_pages(3, 0x0, 1, false, as_domain);
    EXPECT_FALSE(tlb.lookup_pde(3, 0x1000));
}

// Lock-free readers against a writer that keeps replacing entries: every
// value a reader gets belongs to the key it asked for (frames encode the
// key and a version), so a torn read would show.  The interleaving is
// forced by step counts, not left to the scheduler: after each ROUND
// writer operations the writer waits until each reader has had a hit in a
// lookup begun after the round ended (half of each reader's lookups ask for
// the page the writer is writing or wrote last, present while it waits), so
// the readers run between every two rounds of writes and each counts at
// least ROUNDS hits however the threads are scheduled.
TEST(IotlbTable, ConcurrentReadersNeverSeeTornEntries)
{
    constexpr unsigned READERS = 2;
    constexpr uint64_t OPS = 300000, ROUND = 10000, ROUNDS = OPS / ROUND;
    static_assert(ROUND % 5 == 0, "each round ends with an insert (see v % 5 below)");
    Iotlb tlb(64);
    std::atomic<bool> done{false};
    std::atomic<uint64_t> hot{0};  // the page the writer writes now or wrote last
    std::atomic<uint64_t> bad{0};
    std::atomic<uint64_t> rounds_done{0};
    // Per reader: hits, and the value of rounds_done before its latest hit.
    std::array<std::atomic<uint64_t>, READERS> hits{}, hit_after{};
    auto frame_of = [](uint64_t page, uint64_t version) {
        return ((page << 20) | (version & 0xfffff)) * PAGE;
    };
    std::vector<std::thread> readers;
    for (unsigned t = 0; t < READERS; t++) {
        readers.emplace_back([&, t] {
            std::mt19937_64 rng(t);
            for (uint64_t i = 0; !done.load(); i++) {
                uint64_t round = rounds_done.load();
                uint64_t page = i % 2 ? hot.load(std::memory_order_relaxed) : rng() % 256;
                if (auto leaf = tlb.lookup(1, page * PAGE)) {
                    if ((leaf->phys / PAGE) >> 20 != page || leaf->perm != 3 || leaf->level != 1)
                        bad.fetch_add(1);
                    hits[t].fetch_add(1);
                    hit_after[t].store(round);
                }
            }
        });
    }
    std::mt19937_64 rng(99);
    std::string writer_error;
    for (uint64_t v = 0; v < OPS && writer_error.empty(); v++) {
        uint64_t page = rng() % 256;
        hot.store(page, std::memory_order_relaxed);
        if (v % 5 == 0) {
            bool as_domain = false;
            tlb.invalidate_pages(1, page * PAGE, 1, false, as_domain);
        } else {
            auto token = tlb.prepare_fill(1);
            tlb.insert(1, page * PAGE, {frame_of(page, v), 1, 3}, token);
        }
        if ((v + 1) % ROUND)
            continue;
        // The round's last operation inserted `hot`: no other writer, so
        // it stays present until this thread writes again.
        if (!tlb.lookup(1, page * PAGE)) {
            writer_error = "the writer's own insert is missing at v " + std::to_string(v);
            break;
        }
        uint64_t round = (v + 1) / ROUND;
        rounds_done.store(round);
        for (unsigned t = 0; t < READERS; t++)
            while (hit_after[t].load() < round)
                std::this_thread::yield();
    }
    done = true;
    for (auto &r : readers)
        r.join();
    EXPECT_EQ(writer_error, "");
    EXPECT_EQ(bad.load(), 0u);
    for (unsigned t = 0; t < READERS; t++)
        EXPECT_GE(hits[t].load(), ROUNDS) << "reader " << t;
}

}  // namespace

// clear() racing fills (fills on two threads, clears on this one): once a
// clear that followed a generation bump has returned, no fill whose token
// predates the bump is in the table, whatever the interleaving (the fill
// either marked its sets before the clear read the bitmap, and the clear
// emptied them, or saw the new generation and stored nothing).  Fills
// store their token's generation as the frame.
TEST(IotlbTable, ConcurrentClearLeavesNoEarlierFill)
{
    constexpr unsigned FILLERS = 2;
    constexpr uint64_t CLEARS = 20000, KEYS = 512;
    IotlbTable t(4096);
    std::atomic<bool> done{false};
    std::vector<std::thread> fillers;
    for (unsigned f = 0; f < FILLERS; f++) {
        fillers.emplace_back([&, f] {
            auto any = [](uint16_t, uint32_t) { return true; };
            for (uint64_t i = f; !done.load(); i += FILLERS) {
                const uint64_t gen = t.generation();
                t.insert({i % KEYS, 1, 1}, {gen, 1, 0}, gen, any);
            }
        });
    }
    uint64_t stale = 0;
    for (uint64_t c = 0; c < CLEARS; c++) {
        t.bump_generation();
        const uint64_t since = t.generation();
        t.clear();
        for (uint64_t k = 0; k < KEYS; k += 7) {
            auto v = t.lookup({k, 1, 1}, [](uint32_t) { return true; });
            stale += v && v->frame < since;
        }
    }
    done.store(true);
    for (auto &th : fillers)
        th.join();
    EXPECT_EQ(stale, 0u) << "a fill from before a clear survived it";
}
