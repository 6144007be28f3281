// SPDX-License-Identifier: GPL-2.0-or-later
// Engine benchmarks: translate hit and miss paths, each invalidation kind,
// the cost of a page-selective invalidation as the IOTLB grows (1K vs
// 64K entries, both filled; the ratio is reported by
// BM_PageInvalidationScaling as the counter "ratio_64k_vs_1k"), and the
// interrupt-remapping path with an interrupt-entry-cache hit and miss
// (BM_InterruptRemapHit/Miss: ns per remap and "ratio_vs_translate_hit",
// against translate hits timed in turn with them in the same run), and the
// work of one register write on a full invalidation queue
// (BM_QueueSlices), and translate hits and capacity misses by mode, legacy
// against scalable mode's second and first stage
// (BM_TranslateHitByMode, BM_TranslateMissByMode), and requests with PASID
// in scalable mode, whose PASID-table entry comes from the PASID cache
// (BM_TranslatePasidByMode), and over more PASIDs than it holds
// (BM_TranslatePasidSpreadByMode), and a root-table latch with the
// default cache sizes (BM_RootTableLatch), and the statistics report
// (BM_StatsJson).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "pasid_entries.hpp"
#include "viommu/vtd.h"

namespace {

constexpr uint64_t PAGE = 4096;

enum Mode { LEGACY, SM_SECOND_STAGE, SM_FIRST_STAGE };

class Bench {
public:
    // `hook`: install an event hook that only counts (a host taking events
    // and dropping them, as the QEMU glue does with tracing off).
    // `mode`: LEGACY, or scalable mode with the device's RID_PASID entry
    // translating through a second-stage (SM_SECOND_STAGE) or first-stage
    // (SM_FIRST_STAGE) table.
    explicit Bench(uint32_t iotlb_entries, size_t ram = 64ull << 20, bool intremap = false,
                   bool hook = false, Mode mode = LEGACY)
        : ram_(ram), mode_(mode)
    {
        VtdConfig c;
        vtd_config_default(&c);
        c.iotlb_entries = iotlb_entries;
        c.intremap = intremap;
        if (mode != LEGACY) {
            c.scalable_mode = c.first_stage = c.second_stage = true;
            c.pasid_bits = 20;
        }
        VtdHostOps ops{};
        ops.mem_read = [](void *o, uint64_t gpa, void *buf, size_t len) {
            auto &m = static_cast<Bench *>(o)->ram_;
            if (gpa > m.size() || len > m.size() - gpa)
                return -1;
            std::memcpy(buf, m.data() + gpa, len);
            return 0;
        };
        ops.mem_write = [](void *o, uint64_t gpa, const void *buf, size_t len) {
            auto &m = static_cast<Bench *>(o)->ram_;
            if (gpa > m.size() || len > m.size() - gpa)
                return -1;
            std::memcpy(m.data() + gpa, buf, len);
            return 0;
        };
        ops.msi = [](void *, uint64_t, uint32_t) {};
        ops.prefetch = [](void *o, uint64_t gpa) {
            auto &m = static_cast<Bench *>(o)->ram_;
            if (gpa < m.size())
                __builtin_prefetch(m.data() + gpa);
        };
        if (hook)
            ops.event = [](void *o, const VtdEvent *) { static_cast<Bench *>(o)->events++; };
        ops.mem_cmpxchg64 = [](void *o, uint64_t gpa, uint64_t expected, uint64_t desired,
                               uint64_t *found) {
            auto &m = static_cast<Bench *>(o)->ram_;
            if (gpa > m.size() || 8 > m.size() - gpa)
                return -1;
            std::memcpy(found, m.data() + gpa, 8);
            if (*found == expected)
                std::memcpy(m.data() + gpa, &desired, 8);
            return 0;
        };
        e = vtd_engine_new(&c, &ops, this, nullptr, 0);
        root_ = alloc();
        pt_ = alloc();
        uint64_t ctp = alloc();
        put(root_, ctp | 1);
        if (mode == LEGACY) {
            put(ctp + 8 * 16, pt_ | 1);
            put(ctp + 8 * 16 + 8, 1 << 8 | 2);  // DID 1, 4-level
        } else {
            // Scalable-mode context entry of devfn 8 (32 bytes): PASID
            // directory, PASIDE; RID_PASID 0.  PASID entry 0: DID 1 and
            // the table at pt_ as a 4-level second or first stage (SRE:
            // supervisor requests allowed).
            uint64_t dir = alloc(), table = alloc();
            dir_ = dir;
            table0_ = table;
            put(ctp + 8 * 32, dir | 8 | 1);
            put(dir, table | 1);
            const auto entry = mode == SM_SECOND_STAGE
                                   ? vtdtest::PasidEntries::second_stage(pt_, 1)
                                   : vtdtest::PasidEntries::first_stage(pt_, 1, 1);
            for (unsigned w = 0; w < entry.size(); w++)
                put(table + w * 8, entry[w]);
        }
        vtd_engine_mmio_write(e, 0x20, root_ | (mode == LEGACY ? 0 : 1u << 10), 8);
        vtd_engine_mmio_write(e, 0x18, 1u << 30, 4);
        vtd_engine_mmio_write(e, 0x18, 1u << 31, 4);
        queue_ = alloc();
        status_ = alloc();
        vtd_engine_mmio_write(e, 0x90, queue_, 8);
        vtd_engine_mmio_write(e, 0x18, (1u << 31) | (1u << 26), 4);
    }
    ~Bench() { vtd_engine_free(e); }

    void map(uint64_t iova, uint64_t phys)
    {
        // First-stage entries as Linux writes them: P, R/W, U/S, and A
        // (D in leaves) already set.
        const uint64_t table_bits = mode_ == SM_FIRST_STAGE ? 0x27 : 3;
        const uint64_t leaf_bits = mode_ == SM_FIRST_STAGE ? 0x67 : 3;
        uint64_t table = pt_;
        for (unsigned level = 4; level > 1; level--) {
            uint64_t a = table + ((iova >> (12 + 9 * (level - 1))) & 511) * 8;
            if (!(get(a) & 3))
                put(a, alloc() | table_bits);
            table = get(a) & ~0xfffull;
        }
        put(table + ((iova >> 12) & 511) * 8, phys | leaf_bits);
    }
    void translate(uint64_t iova)
    {
        VtdTranslation t;
        benchmark::DoNotOptimize(vtd_engine_translate(e, 0x8, iova, 1, false, &t));
    }
    // Statistics counter `key` of the JSON object `section`.
    uint64_t counter(const std::string &section, const std::string &key)
    {
        char *j = vtd_engine_stats_json(e);
        std::string json = j ? j : "";
        free(j);
        size_t pos = json.find("\"" + section + "\":");
        pos = pos == std::string::npos ? pos : json.find("\"" + key + "\":", pos);
        return pos == std::string::npos ? 0 : std::stoull(json.substr(pos + key.size() + 3));
    }
    // A request with PASID (the context entry allows PASIDs).
    void translate_pasid(uint64_t iova, uint32_t pasid = 0, bool privileged = false)
    {
        VtdTranslation t;
        benchmark::DoNotOptimize(
            vtd_engine_translate_pasid(e, 0x8, pasid, privileged, iova, 1, false, &t));
    }
    // PASIDs 1 .. n-1 get PASID 0's entry (scalable mode; n <= 8192, the
    // directory's 128 entries).
    void add_pasids(uint32_t n)
    {
        for (uint32_t p = 1; p < n; p++) {
            uint64_t de = dir_ + (p >> 6) * 8;
            if (!(get(de) & 1))
                put(de, alloc() | 1);
            uint64_t pe = (get(de) & ~0xfffull) + (p & 63) * 64;
            for (unsigned w = 0; w < 8; w++)
                put(pe + w * 8, get(table0_ + w * 8));
        }
    }
    void submit(uint64_t lo, uint64_t hi)
    {
        push(lo, hi);
        kick();
    }
    // Queue a descriptor without telling the engine; kick() makes the
    // queued ones available in one tail write.
    void push(uint64_t lo, uint64_t hi)
    {
        put(queue_ + tail_ * 16, lo);
        put(queue_ + tail_ * 16 + 8, hi);
        tail_ = (tail_ + 1) % entries_;
    }
    void kick() { vtd_engine_mmio_write(e, 0x88, tail_ << 4, 4); }
    // An interrupt-remapping table of 2^(s+1) present entries (vector
    // 0x30 + index, xAPIC destination 1, no source validation), latched
    // and enabled.
    void setup_ir(unsigned s)
    {
        uint64_t entries = uint64_t{2} << s;
        uint64_t table = alloc();
        for (uint64_t i = 1; i < entries * 16 / PAGE; i++)
            alloc();
        for (uint64_t i = 0; i < entries; i++) {
            put(table + i * 16, 1 | ((0x30 + i) & 0xff) << 16 | uint64_t{1} << 40);
            put(table + i * 16 + 8, 0);
        }
        vtd_engine_mmio_write(e, 0xb8, table | s, 8);
        vtd_engine_mmio_write(e, 0x18, (1u << 31) | (1u << 26) | (1u << 24), 4);  // SIRTP
        vtd_engine_mmio_write(e, 0x18, (1u << 31) | (1u << 26) | (1u << 25), 4);  // IRE
    }
    void remap(uint32_t index)
    {
        VtdInterrupt out;
        uint64_t addr = 0xfee00010 | uint64_t{index & 0x7fff} << 5 | ((index >> 15) & 1) << 2;
        benchmark::DoNotOptimize(vtd_engine_remap_interrupt(e, 0x8, addr, 0, false, &out));
    }
    // Replace the queue by one of 2^(8 + qs) descriptors.
    void big_queue(unsigned qs)
    {
        vtd_engine_mmio_write(e, 0x18, 1u << 31, 4);  // QIE off: IQH resets
        queue_ = next_;
        next_ += PAGE << qs;
        entries_ = uint64_t{256} << qs;
        tail_ = 0;
        vtd_engine_mmio_write(e, 0x88, 0, 4);
        vtd_engine_mmio_write(e, 0x90, queue_ | qs, 8);
        vtd_engine_mmio_write(e, 0x18, (1u << 31) | (1u << 26), 4);
    }
    VtdEngine *e = nullptr;
    uint64_t events = 0;

private:
    uint64_t alloc()
    {
        uint64_t p = next_;
        next_ += PAGE;
        return p;
    }
    void put(uint64_t a, uint64_t v) { std::memcpy(ram_.data() + a, &v, 8); }
    uint64_t get(uint64_t a)
    {
        uint64_t v;
        std::memcpy(&v, ram_.data() + a, 8);
        return v;
    }
    std::vector<uint8_t> ram_;
    Mode mode_;
    uint64_t next_ = 1 << 20, root_ = 0, pt_ = 0, queue_ = 0, status_ = 0, tail_ = 0;
    uint64_t dir_ = 0, table0_ = 0;  // scalable mode: PASID directory, PASID 0's entry
    uint64_t entries_ = 256;
};

void BM_TranslateHit(benchmark::State &state)
{
    static std::unique_ptr<Bench> b;
    if (state.thread_index() == 0) {
        b = std::make_unique<Bench>(4096);
        for (uint64_t p = 0; p < 1024; p++)
            b->map(p * PAGE, 0x1000000 + p * PAGE);
        for (uint64_t p = 0; p < 1024; p++)
            b->translate(p * PAGE);
    }
    uint64_t i = state.thread_index() * 97;
    for (auto _ : state)
        b->translate((i++ % 1024) * PAGE);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TranslateHit)->Threads(1)->Threads(2);

void BM_TranslateMiss(benchmark::State &state)
{
    Bench b(4096);
    for (uint64_t p = 0; p < 1024; p++)
        b.map(p * PAGE, 0x1000000 + p * PAGE);
    uint64_t i = 0;
    for (auto _ : state) {
        b.translate((i++ % 1024) * PAGE);
        state.PauseTiming();
        b.submit(2 | 3 << 4 | 1 << 16, ((i - 1) % 1024) * PAGE);  // drop it again
        state.ResumeTiming();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TranslateMiss);

// Hits and misses by translation mode (arg "mode": 0 legacy, 1 scalable
// mode second stage, 2 scalable mode first stage), each case timing its
// three modes in turn in the same run, so their ratios compare like with
// like.  Hits: 1024 pages cycled, all in the IOTLB.  Misses: 16384 pages
// cycled through a 1024-entry IOTLB, so almost every translation walks
// (a capacity miss, needing no invalidation descriptor, whose form
// differs between the modes).
void BM_TranslateHitByMode(benchmark::State &state)
{
    Bench b(4096, 64ull << 20, false, false, static_cast<Mode>(state.range(0)));
    for (uint64_t p = 0; p < 1024; p++)
        b.map(p * PAGE, 0x1000000 + p * PAGE);
    for (uint64_t p = 0; p < 1024; p++)
        b.translate(p * PAGE);
    uint64_t i = 0;
    for (auto _ : state)
        b.translate((i++ % 1024) * PAGE);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TranslateHitByMode)->ArgName("mode")->DenseRange(0, 2);

void BM_TranslateMissByMode(benchmark::State &state)
{
    constexpr uint64_t PAGES = 16384;
    Bench b(1024, 64ull << 20, false, false, static_cast<Mode>(state.range(0)));
    for (uint64_t p = 0; p < PAGES; p++)
        b.map(p * PAGE, 0x1000000 + p * PAGE);
    uint64_t i = 0;
    for (auto _ : state)
        b.translate((i++ % PAGES) * PAGE);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TranslateMissByMode)->ArgName("mode")->DenseRange(0, 2);

// Requests with PASID (arg "mode": 1 second stage, 2 first stage), 1024
// pages cycled.  They never use the per-thread caches (keyed by
// source-id): each looks its PASID-table entry up in the PASID cache.
// Second stage: then an IOTLB hit.  First stage: a walk every time
// (requests with PASID do not fill the IOTLB).  "entries_read_per_req":
// context and PASID entries read from guest memory per request.
void BM_TranslatePasidByMode(benchmark::State &state)
{
    Bench b(4096, 64ull << 20, false, false, static_cast<Mode>(state.range(0)));
    const bool privileged = state.range(1);
    for (uint64_t p = 0; p < 1024; p++)
        b.map(p * PAGE, 0x1000000 + p * PAGE);
    for (uint64_t p = 0; p < 1024; p++)
        b.translate_pasid(p * PAGE, 0, privileged);
    const uint64_t read0 = b.counter("scalable", "context_and_pasid_entries_read");
    const uint64_t walks0 = b.counter("translate", "page_walks");
    uint64_t i = 0;
    for (auto _ : state)
        b.translate_pasid((i++ % 1024) * PAGE, 0, privileged);
    state.SetItemsProcessed(state.iterations());
    state.counters["entries_read_per_req"] =
        double(b.counter("scalable", "context_and_pasid_entries_read") - read0) /
        double(std::max<uint64_t>(i, 1));
    state.counters["walks_per_req"] =
        double(b.counter("translate", "page_walks") - walks0) / double(std::max<uint64_t>(i, 1));
}
// mode 1, 2: second-, first-stage tables; supervisor 1: privileged
// requests (first stage only: privilege means nothing to second-stage tables)
BENCHMARK(BM_TranslatePasidByMode)
    ->ArgNames({"mode", "supervisor"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({2, 1});

// Requests with PASID spread over arg "pasids" PASIDs (all with PASID
// 0's entry: the same domain and tables), one page each, in turn: with 64
// every PASID-table entry stays in the 1024-entry PASID cache, with 4096
// almost every request misses it and reads the root, context,
// PASID-directory and PASID-table entries (and fills the cache).  The
// IOTLB (16384 entries) holds every PASID's page in both cases.
void BM_TranslatePasidSpreadByMode(benchmark::State &state)
{
    const auto pasids = static_cast<uint32_t>(state.range(1));
    Bench b(16384, 64ull << 20, false, false, static_cast<Mode>(state.range(0)));
    b.map(0, 0x1000000);
    b.add_pasids(pasids);
    for (uint32_t p = 0; p < pasids; p++)
        b.translate_pasid(0, p);
    const uint64_t read0 = b.counter("scalable", "context_and_pasid_entries_read");
    uint64_t i = 0;
    for (auto _ : state)
        b.translate_pasid(0, static_cast<uint32_t>(i++ % pasids));
    state.SetItemsProcessed(state.iterations());
    state.counters["entries_read_per_req"] =
        double(b.counter("scalable", "context_and_pasid_entries_read") - read0) /
        double(std::max<uint64_t>(i, 1));
}
BENCHMARK(BM_TranslatePasidSpreadByMode)
    ->ArgNames({"mode", "pasids"})
    ->ArgsProduct({{1, 2}, {64, 4096}});

// BM_TranslateMiss's loop (a miss, then the queued page invalidation that
// drops the entry again) with and without an event hook that only counts,
// alternately in the same run: "ratio_vs_no_hook" is the time with the hook
// against the time without; "events_per_miss" counts the events of both
// the miss and its invalidation.
void BM_TranslateMissEventHook(benchmark::State &state)
{
    auto run = [](Bench &b, uint64_t n) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (uint64_t i = 0; i < n; i++) {
            b.translate((i % 1024) * PAGE);
            b.submit(2 | 3 << 4 | 1 << 16, (i % 1024) * PAGE);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        return (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    };
    Bench plain(4096), hooked(4096, 64ull << 20, false, true);
    for (Bench *b : {&plain, &hooked})
        for (uint64_t p = 0; p < 1024; p++)
            b->map(p * PAGE, 0x1000000 + p * PAGE);
    double ns_plain = 0, ns_hooked = 0;
    for (auto _ : state) {
        ns_plain += run(plain, 1024);
        ns_hooked += run(hooked, 1024);
    }
    state.counters["ratio_vs_no_hook"] = ns_plain > 0 ? ns_hooked / ns_plain : 0;
    state.counters["events_per_miss"] = double(hooked.events) / double(state.iterations() * 1024);
}
BENCHMARK(BM_TranslateMissEventHook)->Iterations(200);

// Invalidation kinds with 1024 cached entries; after each iteration the
// entries the invalidation dropped are refilled (untimed).
void BM_Invalidate(benchmark::State &state)
{
    Bench b(4096);
    for (uint64_t p = 0; p < 1024; p++)
        b.map(p * PAGE, 0x1000000 + p * PAGE);
    for (uint64_t p = 0; p < 1024; p++)
        b.translate(p * PAGE);
    const int kind = state.range(0);
    uint64_t refill = 0;
    switch (kind) {
    case 0:
    case 1:
        refill = 1024;
        break;
    case 2:
        refill = 1;
        break;
    case 3:
        refill = 512;
        break;
    }
    uint64_t i = 0;
    for (auto _ : state) {
        uint64_t page = (i++ * 5) % 512;
        switch (kind) {
        case 0:
            b.submit(2 | 1 << 4, 0);
            break;  // IOTLB global
        case 1:
            b.submit(2 | 2 << 4 | 1 << 16, 0);
            break;  // IOTLB domain
        case 2:
            b.submit(2 | 3 << 4 | 1 << 16, page * PAGE);
            break;  // one page
        case 3:
            b.submit(2 | 3 << 4 | 1 << 16, 0 | 9);
            break;  // 512 pages
        case 4:
            b.submit(1 | 1 << 4, 0);
            break;  // context global
        case 5:
            b.submit(5 | 1 << 5, 0x800000);
            break;  // wait + status
        }
        if (refill) {
            state.PauseTiming();
            uint64_t first = refill == 1 ? page : 0;
            for (uint64_t p = first; p < first + refill; p++)
                b.translate(p * PAGE);
            state.ResumeTiming();
        }
    }
    const char *names[] = {"iotlb_global",    "iotlb_domain",   "iotlb_page",
                           "iotlb_512_pages", "context_global", "wait_status_write"};
    state.SetLabel(names[kind]);
}
// Fixed iterations: the untimed refills dominate the run time.
BENCHMARK(BM_Invalidate)->ArgName("kind")->DenseRange(0, 5)->Iterations(3000);

// A root-table latch (GCMD.SRTP, the same table again), which empties the
// context, PASID and IOTLB caches, with the default cache sizes (131072
// IOTLB entries, 1024 context and PASID-cache entries), in legacy mode and
// scalable mode (arg "mode": 0 legacy, 1 scalable mode second stage).  Arg
// "refill": 0, nothing translated since the previous latch (a guest
// latching in a loop); 1, the 1024 pages refilled (untimed) after each, so
// each latch empties 1024 leaves, their paging-structure entries and one
// context (and PASID) entry.  The latch should cost what the caches hold,
// not their capacity.
void BM_RootTableLatch(benchmark::State &state)
{
    const auto mode = static_cast<Mode>(state.range(0));
    const bool refill = state.range(1);
    VtdConfig d;
    vtd_config_default(&d);
    Bench b(d.iotlb_entries, 64ull << 20, false, false, mode);
    for (uint64_t p = 0; p < 1024; p++)
        b.map(p * PAGE, 0x1000000 + p * PAGE);
    for (uint64_t p = 0; p < 1024; p++)
        b.translate(p * PAGE);
    const uint32_t gcmd = (1u << 31) | (1u << 26);  // TE, QIE: as they are
    for (auto _ : state) {
        vtd_engine_mmio_write(b.e, 0x18, gcmd | (1u << 30), 4);
        if (refill) {
            state.PauseTiming();
            for (uint64_t p = 0; p < 1024; p++)
                b.translate(p * PAGE);
            state.ResumeTiming();
        }
    }
    state.SetLabel(mode == LEGACY ? "legacy" : "scalable");
}
// Fixed iterations with refills: they dominate the run time.
BENCHMARK(BM_RootTableLatch)->ArgNames({"mode", "refill"})->Args({0, 0})->Args({1, 0});
BENCHMARK(BM_RootTableLatch)
    ->ArgNames({"mode", "refill"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Iterations(2000);

// The statistics report (vtd_engine_stats_json) of an engine that has
// translated 1024 pages for one domain and run a few invalidations: every
// counter, fault reason and section, one domain listed.
void BM_StatsJson(benchmark::State &state)
{
    Bench b(4096);
    for (uint64_t p = 0; p < 1024; p++)
        b.map(p * PAGE, 0x1000000 + p * PAGE);
    for (uint64_t p = 0; p < 1024; p++)
        b.translate(p * PAGE);
    b.translate(1ull << 40);  // a fault
    b.submit(2 | 3 << 4 | 1 << 16, 0);
    b.submit(2 | 1 << 4, 0);
    size_t bytes = 0;
    for (auto _ : state) {
        char *j = vtd_engine_stats_json(b.e);
        bytes = j ? std::strlen(j) : 0;
        free(j);
    }
    state.counters["bytes"] = double(bytes);
}
BENCHMARK(BM_StatsJson);

// Page-selective invalidation cost against IOTLB size: two engines, one
// with a full 1K-entry IOTLB and one with a full 64K-entry IOTLB, take turns
// invalidating (and refilling, untimed) single cached pages, so machine load
// affects both alike.  Time is this thread's CPU time.
double thread_ns()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct Filled {
    explicit Filled(uint32_t n) : entries(n), b(n)
    {
        for (uint64_t p = 0; p < n; p++)
            b.map(p * PAGE, 0x10000000 + p * PAGE);  // frames beyond RAM: never accessed
        for (uint64_t p = 0; p < n; p++)
            b.translate(p * PAGE);
    }
    // `spread` pages take turns: all of them (random over the whole IOTLB)
    // or a small hot set (same CPU-cache footprint for both sizes, so only
    // the algorithmic cost differs).
    double invalidate_one(uint64_t r, uint64_t spread)
    {
        uint64_t page = (r * 7919) % spread;
        double t0 = thread_ns();
        b.submit(2 | 3 << 4 | 1 << 16, page * PAGE);
        double t1 = thread_ns();
        b.translate(page * PAGE);
        return t1 - t0;
    }
    uint32_t entries;
    Bench b;
};

void BM_PageInvalidationScaling(benchmark::State &state)
{
    Filled small(1024), large(65536);
    const bool hot = state.range(0);
    double t_small = 0, t_large = 0;
    uint64_t rounds = 0;
    for (auto _ : state) {
        for (int i = 0; i < 1000; i++, rounds++) {
            t_small += small.invalidate_one(rounds, hot ? 256 : small.entries);
            t_large += large.invalidate_one(rounds, hot ? 256 : large.entries);
        }
    }
    state.SetLabel(hot ? "256 hot pages" : "pages spread over the whole IOTLB");
    state.counters["ns_1k"] = t_small / rounds;
    state.counters["ns_64k"] = t_large / rounds;
    state.counters["ratio_64k_vs_1k"] = t_large / t_small;
}
BENCHMARK(BM_PageInvalidationScaling)
    ->ArgName("hot")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);

// A 512-page range (page-selective, AM=9) in a full 64K-entry IOTLB whose
// lines the CPU caches no longer hold, as inside QEMU, where the guest's
// data and page tables pass through the same caches between two
// invalidations: each range is refilled (untimed), then 16 MiB of other
// data is read (untimed) before the next.  ns per range and per probe
// (512 page keys and the two superpage keys that cover them).
void BM_RangeInvalidationCold(benchmark::State &state)
{
    Filled f(65536);
    std::vector<uint64_t> other(2 << 20);  // 16 MiB
    double t = 0;
    uint64_t ranges = 0, sink = 0;
    for (auto _ : state) {
        for (int i = 0; i < 50; i++, ranges++) {
            const uint64_t block = (ranges * 37) % (f.entries / 512);
            double t0 = thread_ns();
            f.b.submit(2 | 3 << 4 | 1 << 16, block * 512 * PAGE | 9);
            t += thread_ns() - t0;
            for (uint64_t p = 0; p < 512; p++)
                f.b.translate((block * 512 + p) * PAGE);
            for (size_t k = 0; k < other.size(); k += 8)
                sink += other[k]++;
        }
    }
    benchmark::DoNotOptimize(sink);
    state.counters["ns_per_range"] = t / ranges;
    state.counters["ns_per_probe"] = t / ranges / 514;
}
BENCHMARK(BM_RangeInvalidationCold)->Unit(benchmark::kMillisecond);

// The same, with 32 page-selective descriptors per tail write (how a
// guest submits a batch of unmaps), pages spread over the whole IOTLB:
// ns per descriptor.
void BM_PageInvalidationBatchScaling(benchmark::State &state)
{
    constexpr unsigned BATCH = 32;
    Filled small(1024), large(65536);
    double t_small = 0, t_large = 0;
    uint64_t descs = 0, r = 0;
    auto batch = [&](Filled &f) {
        uint64_t pages[BATCH];
        for (unsigned i = 0; i < BATCH; i++) {
            pages[i] = ((r + i) * 7919) % f.entries;
            f.b.push(2 | 3 << 4 | 1 << 16, pages[i] * PAGE);
        }
        double t0 = thread_ns();
        f.b.kick();
        double t = thread_ns() - t0;
        for (uint64_t p : pages)
            f.b.translate(p * PAGE);
        return t;
    };
    for (auto _ : state) {
        for (int i = 0; i < 100; i++, r += BATCH, descs += BATCH) {
            t_small += batch(small);
            t_large += batch(large);
        }
    }
    state.counters["ns_1k"] = t_small / descs;
    state.counters["ns_64k"] = t_large / descs;
    state.counters["ratio_64k_vs_1k"] = t_large / t_small;
}
BENCHMARK(BM_PageInvalidationBatchScaling)->Unit(benchmark::kMillisecond);

// Interrupt remapping.  Batches of 1000 remaps and 1000 translate hits
// (the baseline) take turns, each timed in this thread's CPU time, so
// machine load affects both alike.  Hit: 256 indexes, all held by the IEC.
// Miss: 4096 indexes in turn through a 1024-entry, 4-way IEC, so every
// lookup misses (each set sees 16 indexes cyclically), reads the IRTE and
// evicts; "iec_misses_per_remap" shows it.
void interrupt_remap(benchmark::State &state, uint32_t spread)
{
    Bench b(4096, 64ull << 20, true);
    for (uint64_t p = 0; p < 1024; p++)
        b.map(p * PAGE, 0x1000000 + p * PAGE);
    for (uint64_t p = 0; p < 1024; p++)
        b.translate(p * PAGE);
    b.setup_ir(11);  // 4096 entries
    for (uint32_t i = 0; i < spread; i++)
        b.remap(i);
    vtd_engine_stats_reset(b.e);
    double t_ir = 0, t_xlat = 0;
    uint64_t n = 0, index = 0, page = 0;
    for (auto _ : state) {
        double t0 = thread_ns();
        for (int i = 0; i < 1000; i++)
            b.remap(index++ % spread);
        double t1 = thread_ns();
        for (int i = 0; i < 1000; i++)
            b.translate((page++ % 1024) * PAGE);
        double t2 = thread_ns();
        t_ir += t1 - t0;
        t_xlat += t2 - t1;
        n += 1000;
    }
    char *json = vtd_engine_stats_json(b.e);
    // The IEC's counters are the first "misses" of the IR section.
    const char *ir = json ? std::strstr(json, "\"interrupt_remapping\"") : nullptr;
    const char *m = ir ? std::strstr(ir, "\"misses\":") : nullptr;
    double misses = m ? std::strtod(m + 9, nullptr) : 0;
    std::free(json);
    state.SetItemsProcessed(n);
    state.counters["ns_per_remap"] = t_ir / n;
    state.counters["ns_per_translate_hit"] = t_xlat / n;
    state.counters["ratio_vs_translate_hit"] = t_ir / t_xlat;
    state.counters["iec_misses_per_remap"] = n ? misses / n : 0;
}

void BM_InterruptRemapHit(benchmark::State &state)
{
    interrupt_remap(state, 256);
}
BENCHMARK(BM_InterruptRemapHit);

void BM_InterruptRemapMiss(benchmark::State &state)
{
    interrupt_remap(state, 4096);
}
BENCHMARK(BM_InterruptRemapMiss);
// The work of one register write on the invalidation queue, worst cases:
// QS=7 filled with 32767 page-selective invalidations (AM=12, IH=1) of
// one domain, one IQT write, then vtd_engine_process_queue() until the
// queue is done (what QEMU's bottom half does), each write or call timed
// (this thread's CPU time).  Three engines take turns, one queue each per
// round: "issue" holds one cached 4 KiB leaf (each range is larger than
// the IOTLB's contents: invalidated as the domain, O(1)); "probing" has
// 16384 pages of the domain cached, refilled (untimed) before each queue,
// so its first slice probes 4096 keys per descriptor up to the slice's
// probe bound; "am0" is the baseline, the same queue with AM=0 over one
// cached leaf.  Reported: the largest and mean ms per write, writes per
// queue, and the issue queue's total time as a ratio to am0's.
struct SlicedQueue {
    SlicedQueue(unsigned am, uint64_t cached) : am(am), cached(cached), b(0, 96ull << 20)
    {
        for (uint64_t p = 0; p < std::max<uint64_t>(cached, 1); p++)
            b.map(p * PAGE, 0x10000000 + p * PAGE);
        b.big_queue(7);
    }
    // One full queue; returns its total CPU time, updates the per-write figures.
    double run()
    {
        for (uint64_t p = 0; p < std::max<uint64_t>(cached, 1); p++)
            b.translate(p * PAGE);
        for (unsigned i = 0; i < 32767; i++)
            b.push(2 | 3 << 4 | 1 << 16, ((i % 4) << 24) | (1 << 6) | am);
        double total = 0;
        bool more = true;
        for (bool first = true; more; first = false) {
            double t0 = thread_ns();
            if (first) {
                b.kick();
                more = vtd_engine_queue_pending(b.e);
            } else {
                more = vtd_engine_process_queue(b.e);
            }
            double t = thread_ns() - t0;
            total += t;
            max_ns = std::max(max_ns, t);
            writes++;
        }
        queues++;
        return total;
    }
    unsigned am;
    uint64_t cached;
    Bench b;
    double max_ns = 0;
    uint64_t writes = 0, queues = 0;
};

void BM_QueueSlices(benchmark::State &state)
{
    SlicedQueue issue(12, 0), probing(12, 16384), am0(0, 0);
    double t_issue = 0, t_probing = 0, t_am0 = 0;
    for (auto _ : state) {
        t_issue += issue.run();
        t_probing += probing.run();
        t_am0 += am0.run();
    }
    state.counters["issue_max_ms"] = issue.max_ns / 1e6;
    state.counters["issue_mean_ms"] = t_issue / issue.writes / 1e6;
    state.counters["probing_max_ms"] = probing.max_ns / 1e6;
    state.counters["probing_mean_ms"] = t_probing / probing.writes / 1e6;
    state.counters["am0_max_ms"] = am0.max_ns / 1e6;
    state.counters["writes_per_queue"] = double(issue.writes) / issue.queues;
    state.counters["ratio_issue_vs_am0"] = t_issue / t_am0;
}
// 40 rounds: the issue queue bumps its domain's epoch 32767 times a
// round, so the IOTLB's epoch sweep (every 2^20 bumps) happens in the run.
BENCHMARK(BM_QueueSlices)->Iterations(40)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
