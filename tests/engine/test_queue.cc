// SPDX-License-Identifier: GPL-2.0-or-later
// Queued invalidation: enabling, descriptor types, wait descriptor
// variants, wrap-around, IQE with IQH at the bad descriptor, tail errors,
// the invalidation event interrupt, and register-based invalidation.
#include "fake_host.hpp"

using namespace vtdtest;

namespace {

struct Queue : ::testing::Test {
    FakeHost h;
    uint64_t status = 0;
    void SetUp() override
    {
        status = h.alloc_page();
        h.enable_translation();
        h.enable_qi();
        h.w32(IEDATA, 0x55);
        h.w32(IEADDR, 0xfee01000);
        h.w32(FECTL, 0);
    }
    uint64_t head() { return h.mmio64(IQH) >> 4; }
};

}  // namespace

TEST_F(Queue, EnableDisable)
{
    EXPECT_EQ(h.mmio32(GSTS) & QIE, QIE);
    h.submit(FakeHost::wait_desc(true, false, false, 7), status);
    EXPECT_EQ(head(), 1u);
    h.gcmd_shadow &= ~QIE;
    h.w32(GCMD, h.gcmd_shadow);
    EXPECT_EQ(h.mmio32(GSTS) & QIE, 0u);
    EXPECT_EQ(h.mmio64(IQH), 0u) << "IQH resets when QI is disabled";
}

TEST_F(Queue, WaitStatusWrite)
{
    h.submit(FakeHost::wait_desc(true, false, false, 0xcafe), status);
    EXPECT_EQ(h.get32(status), 0xcafeu);
    EXPECT_EQ(head(), 1u);
    EXPECT_EQ(h.mmio32(ICS), 0u);
    EXPECT_TRUE(h.msis.empty());
}

TEST_F(Queue, WaitInterrupt)
{
    h.w32(IECTL, 0);
    h.submit(FakeHost::wait_desc(false, true, false, 0), 0);
    EXPECT_EQ(h.mmio32(ICS), 1u);
    ASSERT_EQ(h.msis.size(), 1u);
    EXPECT_EQ(h.msis[0].addr, 0xfee01000u);
    EXPECT_EQ(h.msis[0].data, 0x55u);
    // IWC still set: no new event.
    h.submit(FakeHost::wait_desc(false, true, false, 0), 0);
    EXPECT_EQ(h.msis.size(), 1u);
    h.w32(ICS, 1);
    EXPECT_EQ(h.mmio32(ICS), 0u);
    h.submit(FakeHost::wait_desc(false, true, false, 0), 0);
    EXPECT_EQ(h.msis.size(), 2u);
}

TEST_F(Queue, WaitInterruptMasked)
{
    EXPECT_EQ(h.mmio32(IECTL), 1u << 31);
    h.submit(FakeHost::wait_desc(false, true, false, 0), 0);
    EXPECT_EQ(h.mmio32(IECTL), 3u << 30);
    EXPECT_TRUE(h.msis.empty());
    h.w32(IECTL, 0);
    EXPECT_EQ(h.msis.size(), 1u);
    EXPECT_EQ(h.mmio32(IECTL), 0u);
    // Cleared while masked: no message on unmask.
    h.w32(IECTL, 1u << 31);
    h.w32(ICS, 1);
    h.submit(FakeHost::wait_desc(false, true, false, 0), 0);
    h.w32(ICS, 1);
    EXPECT_EQ(h.mmio32(IECTL), 1u << 31);
    h.w32(IECTL, 0);
    EXPECT_EQ(h.msis.size(), 1u);
}

// QEMU 10.0's intel-iommu aborts on this combination (GitLab issue 3028).
TEST_F(Queue, WaitStatusWriteAndInterruptTogether)
{
    h.w32(IECTL, 0);
    h.submit(FakeHost::wait_desc(true, true, false, 0x77), status);
    EXPECT_EQ(h.get32(status), 0x77u);
    EXPECT_EQ(h.mmio32(ICS), 1u);
    EXPECT_EQ(h.msis.size(), 1u);
}

TEST_F(Queue, WaitFence)
{
    h.push(FakeHost::iotlb_desc(1), 0);
    h.push(FakeHost::wait_desc(true, false, true, 1), status);
    h.push(FakeHost::wait_desc(true, false, false, 2), status + 4);
    h.kick();
    EXPECT_EQ(h.get32(status), 1u);
    EXPECT_EQ(h.get32(status + 4), 2u);
    EXPECT_EQ(json_counter(h.stats(), "waits", "fence"), 1u);
}

TEST_F(Queue, WaitStatusWriteOutsideRamIsCountedNotFatal)
{
    h.submit(FakeHost::wait_desc(true, false, false, 1), 0x7fff000000ull);
    EXPECT_EQ(head(), 1u);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(json_counter(h.stats(), "waits", "status_write_failed"), 1u);
}

TEST_F(Queue, TailWrapsAround)
{
    for (unsigned i = 0; i < 600; i++) {
        h.submit(FakeHost::wait_desc(true, false, false, i), status);
        ASSERT_EQ(h.get32(status), i);
    }
    EXPECT_EQ(head(), 600u % 256);
    // A batch crossing the end of the queue.
    for (unsigned i = 0; i < 200; i++)
        h.push(FakeHost::wait_desc(true, false, false, 1000 + i), status + 4 * (i % 16));
    h.kick();
    while (vtd_engine_process_queue(h.e)) {  // 200: more than one slice
    }
    EXPECT_EQ(head(), (600u + 200) % 256);
    EXPECT_EQ(h.get32(status + 4 * (199 % 16)), 1199u);
}

TEST(QueueSize, QueueSizeFollowsQs)
{
    FakeHost h;
    uint64_t status = h.alloc_page();
    h.enable_qi(2);  // 2^(2+8) = 1024 descriptors
    for (unsigned i = 0; i < 1030; i++)
        h.submit(FakeHost::wait_desc(true, false, false, i), status);
    EXPECT_EQ(h.get32(status), 1029u);
    EXPECT_EQ(h.mmio64(IQH) >> 4, 1030u % 1024);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
}

TEST_F(Queue, InvalidDescriptorStopsWithHeadAtIt)
{
    const struct {
        uint64_t lo, hi;
    } bad[] = {
        {0, 0},  // type 0
        {6, 0},
        {7, 0},
        {9, 0},
        {0xf, 0},                                  // scalable-mode / unknown types
        {FakeHost::cc_desc(0), 0},                 // granularity 0
        {FakeHost::cc_desc(1) | (1ull << 10), 0},  // reserved bit
        {FakeHost::cc_desc(1), 1},                 // reserved high qword
        {FakeHost::iotlb_desc(0), 0},
        {FakeHost::iotlb_desc(1) | (1ull << 40), 0},
        {FakeHost::iotlb_desc(3), 1ull << 8},  // reserved in high qword
        {FakeHost::iotlb_desc(3), 19},         // AM above MAMV
        {3, 0},                                // device-IOTLB without ECAP.DT
        {4 | (1ull << 10), 0},                 // IEC reserved
        {FakeHost::wait_desc(true, false, false, 0) | (1ull << 7), 0},  // PD without PRS
        {FakeHost::wait_desc(true, false, false, 0) | (1ull << 12), 0},
        {FakeHost::wait_desc(true, false, false, 0), 0x1002},  // status address bit 1
        {FakeHost::cc_desc(1) | (1ull << 9), 0},               // type bits 11:9 (256-bit types)
    };
    unsigned expected_head = 0;
    for (auto &d : bad) {
        SCOPED_TRACE(testing::Message() << std::hex << d.lo << " " << d.hi);
        h.push(FakeHost::wait_desc(true, false, false, 1), status);
        h.push(d.lo, d.hi);
        h.push(FakeHost::wait_desc(true, false, false, 2), status);
        h.kick();
        EXPECT_EQ(h.get32(status), 1u) << "stopped before the descriptor after the bad one";
        EXPECT_EQ(head(), (expected_head + 1) % 256);
        EXPECT_EQ(h.mmio32(FSTS) & 0x10, 0x10u) << "IQE";
        // Further tail writes do nothing until IQE is cleared.
        h.kick();
        EXPECT_EQ(head(), (expected_head + 1) % 256);
        // Software replaces the bad descriptor (as Linux does) and clears IQE:
        // processing resumes at IQH.
        uint64_t slot = h.queue + ((expected_head + 1) % 256) * 16;
        h.put64(slot, FakeHost::wait_desc(false, false, false, 0));
        h.put64(slot + 8, 0);
        h.w32(FSTS, 0x10);
        EXPECT_EQ(h.mmio32(FSTS) & 0x10, 0u);
        EXPECT_EQ(h.get32(status), 2u);
        EXPECT_EQ(head(), (expected_head + 3) % 256);
        expected_head += 3;
    }
    EXPECT_EQ(json_counter(h.stats(), "queue", "invalid_descriptors"), std::size(bad));
    EXPECT_GE(h.msis.size(), 1u) << "IQE raises a fault event";
}

TEST_F(Queue, TailBeyondQueueSize)
{
    h.w32(IQT, 256 << 4);  // QS = 0: 256 entries
    EXPECT_EQ(h.mmio32(FSTS) & 0x10, 0x10u);
    EXPECT_EQ(head(), 0u);
    h.w32(IQT, 0);
    h.w32(FSTS, 0x10);
    EXPECT_EQ(h.mmio32(FSTS) & 0x10, 0u);
    h.tail = 0;
    h.submit(FakeHost::wait_desc(true, false, false, 9), status);
    EXPECT_EQ(h.get32(status), 9u);
}

TEST_F(Queue, QueueOutsideRam)
{
    h.gcmd_shadow &= ~QIE;
    h.w32(GCMD, h.gcmd_shadow);
    h.w32(IQT, 0);
    h.w64(IQA, 0x7fff000000ull);
    h.gcmd_shadow |= QIE;
    h.w32(GCMD, h.gcmd_shadow);
    h.w32(IQT, 1 << 4);
    EXPECT_EQ(h.mmio32(FSTS) & 0x10, 0x10u);
    EXPECT_EQ(h.mmio64(IQH), 0u);
}

// IQA's base bits from the host address width up read 0: a base with
// every bit set reads back below 2^48 and its descriptors are
// fetched there (outside RAM: IQE), never from low memory, where the
// 64-bit sum base + IQH would wrap (a fuzz finding).  IQH keeps its
// place when software rewrites IQA with the queue on, as it must not.
TEST(QueueBase, ABaseAboveTheHostAddressWidthDoesNotWrapToLowMemory)
{
    FakeHost h;
    const uint64_t status = h.alloc_page();
    h.enable_qi(1);  // 512 descriptors
    for (unsigned i = 0; i < 0x100; i++)
        h.push(FakeHost::wait_desc(false, false, false, 0), 0);
    h.kick();
    while (vtd_engine_process_queue(h.e)) {  // the host's further slices
    }
    ASSERT_EQ(h.mmio64(IQH), 0x1000u);
    h.w64(IQA, ~0xfffull | 1);
    EXPECT_EQ(h.mmio64(IQA), 0xfffffffff001ull);
    // with all 64 bits, base + 0x100 * 16 would be 0 modulo 2^64
    h.put64(0, FakeHost::wait_desc(true, false, false, 0xbad));
    h.put64(8, status);
    h.w32(IQT, 0x1010);
    while (vtd_engine_process_queue(h.e)) {
    }
    EXPECT_EQ(h.get32(status), 0u) << "a descriptor was fetched from low memory";
    EXPECT_EQ(h.mmio32(FSTS) & 0x10, 0x10u) << "IQE: the queue is outside RAM";
}

TEST_F(Queue, OtherDescriptorTypesAreCounted)
{
    h.push(4, 0);  // interrupt entry cache, global
    h.push(4 | 16 | (5ull << 32), 0);
    h.push(FakeHost::cc_desc(1), 0);
    h.push(FakeHost::iotlb_desc(2, 3) | (3 << 6), 0);  // DR, DW
    h.kick();
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "descriptors", "interrupt_entry_cache"), 2u);
    EXPECT_EQ(json_counter(s, "descriptors", "context_cache"), 1u);
    EXPECT_EQ(json_counter(s, "descriptors", "iotlb"), 1u);
    EXPECT_EQ(json_counter(s, "latency_ns", "count"), 4u);
}

TEST(QueueDeviceTlb, DeviceIotlbDescriptorWhenAdvertised)
{
    VtdConfig c = FakeHost::default_config();
    c.device_iotlb = true;
    FakeHost h(8 << 20, c);
    h.enable_qi();
    h.submit(3 | (0x0100ull << 32) | (4ull << 16), 0x1000 | 1);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(h.mmio64(IQH), 1u << 4);
    EXPECT_EQ(json_counter(h.stats(), "invalidations", "device_iotlb"), 1u);
}

TEST(QueueNoClock, LatencyNeedsClock)
{
    // now_ns may be NULL: processing works, no latency samples.
    struct Ram {
        std::vector<uint8_t> m = std::vector<uint8_t>(1 << 20);
    } ram;
    VtdHostOps ops{};
    ops.mem_read = [](void *o, uint64_t gpa, void *buf, size_t len) {
        auto &m = static_cast<Ram *>(o)->m;
        if (gpa > m.size() || len > m.size() - gpa)
            return -1;
        memcpy(buf, m.data() + gpa, len);
        return 0;
    };
    ops.mem_write = [](void *o, uint64_t gpa, const void *buf, size_t len) {
        auto &m = static_cast<Ram *>(o)->m;
        if (gpa > m.size() || len > m.size() - gpa)
            return -1;
        memcpy(m.data() + gpa, buf, len);
        return 0;
    };
    ops.msi = [](void *, uint64_t, uint32_t) {};
    VtdConfig c = FakeHost::default_config();
    VtdEngine *e = vtd_engine_new(&c, &ops, &ram, nullptr, 0);
    ASSERT_NE(e, nullptr);
    uint64_t lo = FakeHost::wait_desc(true, false, false, 5), hi = 0x8000;
    memcpy(ram.m.data() + 0x4000, &lo, 8);
    memcpy(ram.m.data() + 0x4008, &hi, 8);
    vtd_engine_mmio_write(e, IQA, 0x4000, 8);
    vtd_engine_mmio_write(e, GCMD, QIE, 4);
    vtd_engine_mmio_write(e, IQT, 0x10, 4);
    EXPECT_EQ(ram.m[0x8000], 5);
    char *s = vtd_engine_stats_json(e);
    EXPECT_EQ(json_counter(s, "latency_ns", "count"), 0u);
    free(s);
    vtd_engine_free(e);
}

TEST_F(Queue, RegisterInvalidationIgnoredWhileQiEnabled)
{
    h.w64(CCMD, (1ull << 63) | (1ull << 61));
    EXPECT_EQ(h.mmio64(CCMD) >> 63, 0u) << "ICC clear";
    EXPECT_EQ((h.mmio64(CCMD) >> 59) & 3, 0u) << "CAIG 0";
    h.w64(h.iotlb, (1ull << 63) | (1ull << 60));
    EXPECT_EQ(h.mmio64(h.iotlb) >> 63, 0u);
    EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 0u);
    EXPECT_EQ(json_counter(h.stats(), "register_based", "ignored_qi_enabled"), 2u);
}

// One register write does bounded work: a full queue (QS=7, 32767
// descriptors) is processed in slices of at most
// VTD_QUEUE_SLICE_DESCRIPTORS descriptors, IQH showing progress, and the
// host continues it with vtd_engine_process_queue().  Waits complete in
// order: after every slice, exactly the waits before IQH have written
// their status.
namespace {

constexpr unsigned FULL = 32767;  // QS=7: 32768 entries, one left empty
constexpr unsigned WAIT_EVERY = 100;

// The issue's queue: PSI(AM=12, IH=1) for domain 1, with a status-write
// wait (value: its index) every WAIT_EVERY descriptors.
void fill_issue_queue(FakeHost &h, uint64_t status)
{
    for (unsigned i = 0; i < FULL; i++) {
        if (i % WAIT_EVERY == WAIT_EVERY - 1)
            h.push(FakeHost::wait_desc(true, false, false, i), status + 4 * (i / WAIT_EVERY));
        else
            h.push(FakeHost::iotlb_desc(3, 1), FakeHost::iotlb_addr(0, 12, true));
    }
}

// Waits with index below `head` have written, the others not.
void expect_waits_up_to(FakeHost &h, uint64_t status, uint64_t head)
{
    for (unsigned i = WAIT_EVERY - 1; i < FULL; i += WAIT_EVERY) {
        uint32_t v = h.get32(status + 4 * (i / WAIT_EVERY));
        if (i < head)
            ASSERT_EQ(v, i) << "wait " << i << " before IQH " << head;
        else
            ASSERT_EQ(v, 0u) << "wait " << i << " at or after IQH " << head;
    }
}

struct Slices : ::testing::Test {
    FakeHost h{16 << 20};
    uint64_t status = 0;
    void SetUp() override
    {
        status = h.alloc_page();
        uint64_t pt = h.domain_with_run(0x8, 1, 1, 0xa000);
        (void)pt;
        h.translate(0x8, 0, VTD_PERM_READ);  // one cached 4 KiB leaf
        h.enable_qi(7);
    }
    uint64_t head() { return h.mmio64(IQH) >> 4; }
};

}  // namespace

TEST_F(Slices, FullQueueCompletesInSlicesWithWaitsInOrder)
{
    fill_issue_queue(h, status);
    h.kick();
    uint64_t prev = head();
    EXPECT_GT(prev, 0u) << "the write processed a first slice";
    EXPECT_LE(prev, uint64_t{VTD_QUEUE_SLICE_DESCRIPTORS}) << "one write, one slice";
    EXPECT_TRUE(vtd_engine_queue_pending(h.e));
    expect_waits_up_to(h, status, prev);
    unsigned slices = 1;
    while (vtd_engine_process_queue(h.e)) {
        uint64_t now = head();
        ASSERT_GT(now, prev) << "IQH advances with every slice";
        ASSERT_LE(now - prev, uint64_t{VTD_QUEUE_SLICE_DESCRIPTORS});
        if (slices % 16 == 0)
            expect_waits_up_to(h, status, now);
        prev = now;
        slices++;
        ASSERT_LT(slices, FULL) << "the queue never completes";
    }
    slices++;
    EXPECT_FALSE(vtd_engine_queue_pending(h.e));
    EXPECT_EQ(head(), uint64_t{FULL});
    EXPECT_EQ(h.mmio64(IQH), h.mmio64(IQT));
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    expect_waits_up_to(h, status, FULL);
    EXPECT_GE(slices, FULL / VTD_QUEUE_SLICE_DESCRIPTORS);
    EXPECT_FALSE(vtd_engine_process_queue(h.e)) << "nothing left: a no-op";
}

// Each of these page-selective invalidations names 4096 pages while the
// IOTLB holds one entry: invalidated as the whole domain, O(1), instead
// of 4096 probes each.
TEST_F(Slices, PageRangeLargerThanTheIotlbIsInvalidatedAsTheDomain)
{
    for (unsigned i = 0; i < 10; i++)
        h.push(FakeHost::iotlb_desc(3, 1), FakeHost::iotlb_addr(0, 12, true));
    h.kick();
    EXPECT_EQ(head(), 10u);
    EXPECT_EQ(json_counter(h.stats(), "iotlb", "page_as_domain"), 10u);
}

// The probe bound: with 16384 + 1024 pages of the domain cached, an AM=12
// invalidation of 4096 of them probes 4096 keys, so a slice ends after
// VTD_QUEUE_SLICE_PROBES / 4096 of those.  Once the IOTLB holds fewer
// entries than a range has pages, the range goes as the whole domain.
TEST(SlicesProbes, SliceEndsAtTheProbeBudget)
{
    FakeHost h(32 << 20);
    h.domain_with_run(0x8, 1, 16384 + 1024, 0x1000000);
    for (uint64_t p = 0; p < 16384 + 1024; p++)
        ASSERT_EQ(h.translate(0x8, p * PAGE, VTD_PERM_READ), VTD_FR_NONE);
    h.enable_qi(1);
    for (unsigned i = 0; i < 20; i++)
        h.push(FakeHost::iotlb_desc(3, 1), FakeHost::iotlb_addr(uint64_t{i % 4} << 24, 12, true));
    h.kick();
    EXPECT_EQ(h.mmio64(IQH) >> 4, uint64_t{VTD_QUEUE_SLICE_PROBES / 4096});
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "iotlb", "page_as_domain"), 0u) << "probed, not widened";
    EXPECT_EQ(json_counter(s, "queue", "slices_deferred"), 1u);
    // Every cached page of the four ranges was dropped (an eviction while
    // filling may have taken one already).
    uint64_t dropped =
        json_counter(s.substr(s.find("\"invalidations\":")), "iotlb", "entries_dropped");
    EXPECT_LE(dropped, 16384u);
    EXPECT_GE(dropped, 16384u - json_counter(s, "iotlb", "evictions"));
    while (vtd_engine_process_queue(h.e)) {
    }
    EXPECT_EQ(h.mmio64(IQH) >> 4, 20u);
    EXPECT_EQ(json_counter(h.stats(), "iotlb", "page_as_domain"), 16u) << "few entries left";
}

// The guest sees the same final state whether a queue runs in one slice
// per write (tail written every 64 descriptors) or in many slices after
// one write: registers and queue position (the migrated state), the
// statuses written and the host's invalidation notifications.
TEST(SlicesState, SlicedQueueEndsInTheSameStateAsShortBatches)
{
    auto run = [](bool one_write, std::vector<uint8_t> &blob, std::vector<uint32_t> &statuses,
                  std::vector<Inval> &invals) {
        FakeHost h(16 << 20);
        uint64_t status = h.alloc_page();
        h.domain_with_run(0x8, 1, 1, 0xa000);
        h.translate(0x8, 0, VTD_PERM_READ);
        h.enable_qi(7);
        h.w32(IECTL, 0);
        for (unsigned i = 0; i < FULL; i++) {
            if (i % WAIT_EVERY == WAIT_EVERY - 1)
                h.push(FakeHost::wait_desc(true, i % 3 == 0, false, i),
                       status + 4 * (i / WAIT_EVERY));
            else if (i % 7 == 0)
                h.push(FakeHost::iotlb_desc(2, i % 5), 0);
            else
                h.push(FakeHost::iotlb_desc(3, 1), FakeHost::iotlb_addr(0, i % 13, i & 1));
            if (!one_write && i % 64 == 63) {
                h.kick();
                ASSERT_FALSE(vtd_engine_queue_pending(h.e)) << "64 fit in one slice";
            }
        }
        h.kick();
        while (vtd_engine_process_queue(h.e)) {
        }
        VtdState st;
        std::memset(&st, 0, sizeof(st));
        vtd_engine_get_state(h.e, &st);
        const auto *b = reinterpret_cast<const uint8_t *>(&st);
        blob.assign(b, b + sizeof(st));
        for (unsigned i = 0; i < FULL / WAIT_EVERY; i++)
            statuses.push_back(h.get32(status + 4 * i));
        invals = h.invals;
        EXPECT_EQ(h.translate(0x8, 0, VTD_PERM_READ), VTD_FR_NONE);
    };
    std::vector<uint8_t> blob_a, blob_b;
    std::vector<uint32_t> st_a, st_b;
    std::vector<Inval> inv_a, inv_b;
    run(true, blob_a, st_a, inv_a);
    run(false, blob_b, st_b, inv_b);
    EXPECT_EQ(blob_a, blob_b);
    EXPECT_EQ(st_a, st_b);
    ASSERT_EQ(inv_a.size(), inv_b.size());
    for (size_t i = 0; i < inv_a.size(); i++) {
        EXPECT_EQ(inv_a[i].all, inv_b[i].all);
        EXPECT_EQ(inv_a[i].did, inv_b[i].did);
        EXPECT_EQ(inv_a[i].iova, inv_b[i].iova);
        EXPECT_EQ(inv_a[i].size, inv_b[i].size);
    }
}

// An IOTLB descriptor's ADDR bits at and above MGAW are ignored.
TEST(QueueIotlb, AddrBitsAboveMgawAreIgnored)
{
    FakeHost h;
    uint64_t pt = h.alloc_page();
    h.set_context(0x0310, pt, 7, 4);
    h.enable_translation();
    h.enable_qi();
    h.map(pt, 4, 0x1000, 0xa000, 3);
    VtdTranslation t{};
    ASSERT_EQ(h.translate(0x0310, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    h.put64(h.pte_addr(pt, 4, 0x1000, 1), 0xb000 | 3);
    h.submit(FakeHost::iotlb_desc(3, 7), (1ull << 60) | 0x1000);
    ASSERT_EQ(h.mmio32(FSTS) & (1u << 4), 0u) << "no IQE";
    ASSERT_EQ(h.translate(0x0310, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0xb000u) << "stale translation";
}

// A wait descriptor completes only once the host's part of what came
// before it has: VtdHostOps.sync runs before its status write, once per
// batch of invalidations reported, and not for a wait with nothing before.
TEST(QueueWait, HostSyncsBeforeTheStatusWrite)
{
    FakeHost h;
    h.enable_qi();
    const uint64_t status = h.alloc_page();
    h.sync_probe = status;
    h.push(FakeHost::iotlb_desc(2, 7), 0);
    h.push(FakeHost::cc_desc(1), 0);
    h.push(FakeHost::wait_desc(true, false, false, 0x11), status);
    h.push(FakeHost::wait_desc(true, false, false, 0x22), status);
    h.kick();
    ASSERT_EQ(h.mmio32(FSTS) & (1u << 4), 0u) << "no IQE";
    ASSERT_EQ(h.syncs.size(), 1u) << "one sync, before the first wait only";
    EXPECT_EQ(h.syncs[0].hooks_before, 2u) << "after both invalidations were reported";
    EXPECT_EQ(h.syncs[0].probe, 0u) << "before the wait's status write";
    EXPECT_EQ(h.get32(status), 0x22u);
    // An interrupt entry cache invalidation reports too.
    h.submit(4, 0);  // global IEC invalidation
    h.submit(FakeHost::wait_desc(true, false, false, 0x33), status);
    ASSERT_EQ(h.syncs.size(), 2u);
    EXPECT_EQ(h.syncs[1].probe, 0x22u);
}
