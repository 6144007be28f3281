// SPDX-License-Identifier: GPL-2.0-or-later
// Several threads translate while the MMIO thread remaps and invalidates.
// Invariant checked: once an invalidation has returned, no translation
// started afterwards may return the old mapping.
#include <array>
#include <atomic>
#include <cstddef>
#include <latch>
#include <map>
#include <thread>

#include "fake_host.hpp"
#include "stats.hpp"

using namespace vtdtest;

TEST(Concurrency, TranslateWhileInvalidating)
{
    VtdConfig c = FakeHost::default_config();
    c.iotlb_entries = 256;
    FakeHost h(64 << 20, c);
    uint64_t pt = h.alloc_page();
    constexpr unsigned PAGES = 64, THREADS = 3, ROUNDS = 150;
    h.set_context(0x8, pt, 1, 4);
    h.enable_translation();
    h.enable_qi();
    uint64_t status = h.alloc_page();
    // Page p maps to frame (generation << 12 | p): the generation is readable
    // from the result.
    auto frame = [](uint64_t gen, uint64_t p) { return (gen << 20) | (p << 12); };
    for (uint64_t p = 0; p < PAGES; p++)
        h.map(pt, 4, p * PAGE, frame(0, p), 3);

    std::atomic<uint64_t> published{0};  // generation whose invalidation completed
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> violations{0}, translations{0};
    // Per thread: 1 + the newest generation that was already published when
    // one of its translations began (0: none yet).
    std::array<std::atomic<uint64_t>, THREADS> reached{};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < THREADS; t++) {
        threads.emplace_back([&, t] {
            uint64_t i = t;
            while (!stop.load()) {
                uint64_t p = (i++ * 7) % PAGES;
                uint64_t floor = published.load();
                VtdTranslation r{};
                if (vtd_engine_translate(h.e, 0x8, p * PAGE, VTD_PERM_READ, true, &r) !=
                        VTD_FR_NONE ||
                    (r.phys_base >> 20) < floor)
                    violations++;
                translations++;
                reached[t].store(floor + 1);
            }
        });
    }
    for (uint64_t gen = 1; gen <= ROUNDS; gen++) {
        // Step count, not timing: every thread has translated since the
        // last invalidation completed (so it has cached or hit generation
        // gen - 1) before the mapping changes again.
        for (unsigned t = 0; t < THREADS; t++)
            while (reached[t].load() < gen)
                std::this_thread::yield();
        for (uint64_t p = 0; p < PAGES; p++)
            h.put64(h.pte_addr(pt, 4, p * PAGE, 1), frame(gen, p) | 3);
        switch (gen % 3) {
        case 0:
            h.push(FakeHost::iotlb_desc(1), 0);
            break;
        case 1:
            h.push(FakeHost::iotlb_desc(2, 1), 0);
            break;
        case 2:
            h.push(FakeHost::iotlb_desc(3, 1), FakeHost::iotlb_addr(0, 6));
            break;
        }
        h.push(FakeHost::wait_desc(true, false, false, gen), status);
        h.kick();
        if (h.get32(status) != gen) {
            ADD_FAILURE() << "wait descriptor of generation " << gen << " not done";
            break;
        }
        published.store(gen);
    }
    stop.store(true);
    for (auto &t : threads)
        t.join();
    EXPECT_EQ(violations.load(), 0u);
    EXPECT_GE(translations.load(), uint64_t{THREADS} * ROUNDS);
}

TEST(Concurrency, FaultsFromManyThreads)
{
    FakeHost h;
    h.enable_translation();
    h.w32(FECTL, 0);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; t++)
        threads.emplace_back([&] {
            for (unsigned i = 0; i < 2000; i++)
                h.translate(0x0100 | (i & 0xff), i * PAGE, VTD_PERM_READ);
        });
    for (unsigned i = 0; i < 2000; i++) {
        for (unsigned r = 0; r < 8; r++)
            h.w32(h.frcd + r * 16 + 12, 1u << 31);
        h.w32(FSTS, 1);
    }
    for (auto &t : threads)
        t.join();
    std::string s = h.stats();
    // The threads fault on the same pages: a repeat of a pending record collapses.
    EXPECT_EQ(json_counter(s, "faults", "recorded") + json_counter(s, "faults", "overflowed") +
                  json_counter(s, "faults", "collapsed"),
              8000u);
    EXPECT_EQ(json_counter(s, "by_reason", "root_entry_not_present"), 8000u);
}

// Fault registers are read without the recorder's lock: a read of FSTS
// that names a pending record (PPF, FRI) is followed by reads of that
// record that see it whole, while other threads record faults.  Nothing
// clears a record here, so this holds in every interleaving.
TEST(Concurrency, FaultRecordReadsSeeWholeRecords)
{
    FakeHost h;
    h.enable_translation();
    h.w32(FECTL, 0);
    // FRI and the record it names, read as software does.
    auto check = [&] {
        uint32_t fsts = h.mmio32(FSTS);
        if (!(fsts & 2))
            return;
        unsigned fri = (fsts >> 8) & 0xff;
        ASSERT_LT(fri, 8u);
        uint64_t hi = h.mmio64(h.frcd + fri * 16 + 8);
        uint64_t lo = h.mmio64(h.frcd + fri * 16);
        ASSERT_EQ(hi >> 63, 1u) << "F of the record FRI names";
        ASSERT_EQ((hi & 0xffff) - 0x0100 + 1, lo / PAGE) << "source-id and address of one fault";
        ASSERT_EQ((hi >> 32) & 0xff, uint64_t{VTD_FR_ROOT_ENTRY_P});
    };
    std::atomic<bool> done{false};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 3; t++)
        threads.emplace_back([&, t] {
            for (unsigned i = 0; i < 4; i++)
                h.translate(0x0100 | (t * 4 + i), (t * 4 + i + 1) * PAGE, VTD_PERM_READ);
        });
    std::thread joiner([&] {
        for (auto &t : threads)
            t.join();
        done.store(true);
    });
    while (!done.load())
        check();
    joiner.join();
    check();
    EXPECT_EQ(h.mmio32(FSTS) & 3, 3u) << "12 faults in 8 records: PPF and PFO";
    EXPECT_EQ(json_counter(h.stats(), "faults", "recorded"), 8u);
}

// More threads than statistics shards: the first threads own a shard each
// (plain adds), the rest share one (atomic adds).  No count may be lost.
// Shards are handed out once per process, in order of a thread's first
// translation, so how many of these threads own one depends on what ran
// before in the process (meson runs this test in a process of its own);
// at least THREADS - STAT_OWNED_SHARDS share the last one whatever ran.
// All threads are started before any translates, so they run together
// as far as the machine lets them.
TEST(Concurrency, CountersExactWithMoreThreadsThanShards)
{
    FakeHost h;
    h.domain_with_run(0x8, 4, 16, 0x100000);
    constexpr unsigned THREADS = 13, EACH = 5000;  // 8 owned shards and a shared one
    std::latch go(THREADS);
    std::array<unsigned, THREADS> shard{};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < THREADS; t++)
        threads.emplace_back([&, t] {
            go.arrive_and_wait();
            for (unsigned i = 0; i < EACH; i++)
                h.translate(0x8, ((i + t) % 16) * PAGE, VTD_PERM_READ);
            shard[t] = viommu::vtd::Stats::thread_shard();
        });
    for (auto &t : threads)
        t.join();
    std::map<unsigned, unsigned> users;  // shard -> threads using it
    for (unsigned s : shard)
        users[s]++;
    EXPECT_GE(users[viommu::vtd::STAT_OWNED_SHARDS], THREADS - viommu::vtd::STAT_OWNED_SHARDS);
    for (auto [s, n] : users) {
        if (s < viommu::vtd::STAT_OWNED_SHARDS) {
            EXPECT_EQ(n, 1u) << "owned shard " << s << " has more than one thread";
        }
    }
    RecordProperty("threads_owning_a_shard", int(THREADS - users[viommu::vtd::STAT_OWNED_SHARDS]));
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "translate", "requests"), THREADS * EACH);
    EXPECT_EQ(json_counter(s, "iotlb", "hits") + json_counter(s, "iotlb", "misses"),
              THREADS * EACH);
    EXPECT_EQ(json_counter(s, "context_cache", "hits") + json_counter(s, "context_cache", "misses"),
              THREADS * EACH);
    size_t d4 = s.find("{\"id\":4,");
    ASSERT_NE(d4, std::string::npos);
    EXPECT_EQ(json_counter(s.substr(d4), "", "translations"), THREADS * EACH);
}

// A reset while another thread translates must not be undone by that
// thread's next add: counts after a reset never exceed the translations
// that finished after it began, plus the one the worker may have in
// flight when the statistics are read.
TEST(Concurrency, ResetWhileTranslating)
{
    FakeHost h;
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 4, 4);
    h.map(pt, 4, 0, 0x100000, 3);
    h.enable_translation();
    std::atomic<uint64_t> done{0};
    std::atomic<bool> stop{false};
    std::thread worker([&] {
        while (!stop.load()) {
            h.translate(0x8, 0, VTD_PERM_READ);
            done.fetch_add(1);
        }
    });
    while (done.load() < 1000)
        std::this_thread::yield();
    std::string excess;  // the first round that counted too much
    for (int round = 0; round < 200 && excess.empty(); round++) {
        uint64_t before = done.load();
        vtd_engine_stats_reset(h.e);
        uint64_t upto = done.load();
        while (done.load() < upto + 50)
            std::this_thread::yield();
        std::string s = h.stats();
        uint64_t bound = done.load() - before + 1;
        uint64_t counted = json_counter(s, "translate", "requests");
        size_t d4 = s.find("{\"id\":4,");
        uint64_t in_domain =
            d4 == std::string::npos ? 0 : json_counter(s.substr(d4), "", "translations");
        if (counted > bound || in_domain > bound || d4 == std::string::npos)
            excess = "round " + std::to_string(round) + ": requests " + std::to_string(counted) +
                     ", domain translations " + std::to_string(in_domain) + ", bound " +
                     std::to_string(bound);
    }
    stop.store(true);
    worker.join();
    EXPECT_EQ(excess, "");
}
