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
