// SPDX-License-Identifier: GPL-2.0-or-later
// Device-IOTLB (ECAP.DT): the capability bit, context entries with
// translation type 1, the device-TLB invalidate descriptor's fields (SID,
// PFSID, MIP, S and the size encoded in ADDR) as the host receives them,
// the per-size statistics, and every way the descriptor can be invalid
// (IQE, IQH left at the descriptor, nothing forwarded).  Also: IQER reads
// 0 (VER 1.0 has no such register) and ITE is never set.
#include "fake_host.hpp"

using namespace vtdtest;

namespace {

constexpr uint64_t DT_TYPE = 3;
constexpr uint32_t IQER = 0xb0;
constexpr uint32_t FSTS_IQE = 1u << 4, FSTS_ITE = 1u << 6;

// The descriptor's low quadword, laid out field by field (VT-d 6.5.2.5).
uint64_t dt_lo(uint16_t sid, uint16_t pfsid = 0, unsigned mip = 0)
{
    return DT_TYPE | uint64_t{pfsid & 0xfu} << 12 | uint64_t{mip & 0x1fu} << 16 |
           uint64_t{sid} << 32 | (uint64_t{pfsid} >> 4) << 52;
}

// The high quadword as Linux's qi_flush_dev_iotlb() builds it: `mask` is
// log2 of the number of 4 KiB pages, `addr` aligned to that many pages.
uint64_t dt_hi(uint64_t addr, unsigned mask = 0)
{
    if (!mask)
        return addr & ~0xfffull;
    addr |= (uint64_t{1} << (12 + mask - 1)) - 1;
    return (addr & ~0xfffull) | 1;
}

constexpr uint64_t bit_of(unsigned n)
{
    return uint64_t{1} << n;
}

VtdConfig dt_config(bool dt = true)
{
    VtdConfig c = FakeHost::default_config();
    c.device_iotlb = dt;
    return c;
}

struct DeviceTlb : ::testing::Test {
    FakeHost h{8 << 20, dt_config()};
    void SetUp() override
    {
        h.enable_translation();
        h.enable_qi();
    }
    uint64_t head() { return h.mmio64(IQH) >> 4; }
};

}  // namespace

TEST(DeviceTlbCaps, EcapDtFollowsConfig)
{
    FakeHost on(8 << 20, dt_config(true));
    FakeHost off(8 << 20, dt_config(false));
    EXPECT_EQ((on.ecap >> 2) & 1, 1u);
    EXPECT_EQ((off.ecap >> 2) & 1, 0u);
}

TEST(DeviceTlbCaps, ContextTranslationTypeOneNeedsDt)
{
    for (bool dt : {true, false}) {
        FakeHost h(8 << 20, dt_config(dt));
        uint64_t top = h.alloc_page();
        h.map(top, 4, 0x5000, 0x9000, 3);
        h.set_context(0x0100, top, 7, 4, /*tt=*/1);
        h.enable_translation();
        VtdTranslation t{};
        VtdFaultReason r = h.translate(0x0100, 0x5123, VTD_PERM_READ, &t);
        if (dt) {
            EXPECT_EQ(r, VTD_FR_NONE);
            EXPECT_EQ(t.phys_base, 0x9000u);
            EXPECT_EQ(t.domain_id, 7u);
        } else {
            EXPECT_EQ(r, VTD_FR_CONTEXT_ENTRY_INV) << "TT=1 without ECAP.DT is invalid programming";
        }
    }
}

TEST_F(DeviceTlb, SinglePage)
{
    h.submit(dt_lo(0x0208), dt_hi(0x12345000));
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(head(), 1u);
    ASSERT_EQ(h.dev_invals.size(), 1u);
    EXPECT_EQ(h.dev_invals[0].sid, 0x0208u);
    EXPECT_EQ(h.dev_invals[0].first, 0x12345000u);
    EXPECT_EQ(h.dev_invals[0].last, 0x12345fffu);
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "device_tlb", "page"), 1u);
    EXPECT_EQ(json_counter(s, "device_tlb", "range"), 0u);
    EXPECT_EQ(json_counter(s, "device_tlb", "pages"), 1u);
    EXPECT_EQ(json_counter(s, "descriptors", "device_iotlb"), 1u);
    EXPECT_EQ(json_counter(s, "invalidations", "device_iotlb"), 1u);
}

TEST_F(DeviceTlb, SinglePageIgnoresAddressBitsBelow12)
{
    // Bits 11:1 are reserved (tested below); with S clear the address is
    // ADDR[63:12] as is, even if it looks like a size encoding.
    h.submit(dt_lo(1), 0x7000);
    ASSERT_EQ(h.dev_invals.size(), 1u);
    EXPECT_EQ(h.dev_invals[0].first, 0x7000u);
    EXPECT_EQ(h.dev_invals[0].last, 0x7fffu);
}

TEST_F(DeviceTlb, SizeEncodedRangesAsLinuxBuildsThem)
{
    // 2^mask pages at an address aligned to them.
    for (unsigned mask = 1; mask <= 20; mask++) {
        uint64_t base = uint64_t{0x40000000} << 4 | (uint64_t{1} << (12 + mask)) * 3;
        base &= ~((uint64_t{1} << (12 + mask)) - 1);
        h.dev_invals.clear();
        h.submit(dt_lo(0x0300), dt_hi(base, mask));
        ASSERT_EQ(h.mmio32(FSTS), 0u) << "mask " << mask;
        ASSERT_EQ(h.dev_invals.size(), 1u) << "mask " << mask;
        EXPECT_EQ(h.dev_invals[0].first, base) << "mask " << mask;
        EXPECT_EQ(h.dev_invals[0].last, base + (uint64_t{1} << (12 + mask)) - 1) << "mask " << mask;
    }
    EXPECT_EQ(json_counter(h.stats(), "device_tlb", "range"), 20u);
    EXPECT_EQ(json_counter(h.stats(), "device_tlb", "pages"), (uint64_t{1} << 21) - 2);
}

TEST_F(DeviceTlb, SizeBitWithBit12ClearIsTwoPages)
{
    // S=1, ADDR bit 12 clear: the lowest clear bit is 12, so 8 KiB; an
    // odd page number is rounded down to the range's alignment.
    h.submit(dt_lo(5), 0xa000 | 1);
    ASSERT_EQ(h.dev_invals.size(), 1u);
    EXPECT_EQ(h.dev_invals[0].first, 0xa000u);
    EXPECT_EQ(h.dev_invals[0].last, 0xbfffu);
    // Bits below the lowest clear one are part of the size, not the base.
    h.submit(dt_lo(5), 0x7fff000ull | 1);  // ADDR[26:12] ones, bit 27 clear: 2^28 bytes
    ASSERT_EQ(h.dev_invals.size(), 2u);
    EXPECT_EQ(h.dev_invals[1].first, 0u);
    EXPECT_EQ(h.dev_invals[1].last, (uint64_t{1} << 28) - 1);
}

TEST_F(DeviceTlb, WholeAddressSpace)
{
    // Linux's "flush all": mask 52 sets ADDR[62:12], bit 63 clear.
    h.submit(dt_lo(0x0100), dt_hi(0, 52));
    // No clear bit in ADDR at all: nothing smaller can be meant.
    h.submit(dt_lo(0x0100), ~uint64_t{0} & ~0xffeull);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    ASSERT_EQ(h.dev_invals.size(), 2u);
    for (auto &d : h.dev_invals) {
        EXPECT_EQ(d.first, 0u);
        EXPECT_EQ(d.last, UINT64_MAX);
    }
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "device_tlb", "all"), 2u);
    EXPECT_EQ(json_counter(s, "device_tlb", "pages"), 0u);
}

TEST_F(DeviceTlb, SidPfsidAndMipFields)
{
    h.submit(dt_lo(0xfedc, 0xabcd, 31), dt_hi(0x1000));
    h.submit(dt_lo(0x0001, 0x0010, 0), dt_hi(0x2000));
    h.submit(dt_lo(0x8000, 0x000f, 17), dt_hi(0x3000));
    ASSERT_EQ(h.dev_invals.size(), 3u);
    EXPECT_EQ(h.dev_invals[0].sid, 0xfedcu);
    EXPECT_EQ(h.dev_invals[0].pfsid, 0xabcdu);
    EXPECT_EQ(h.dev_invals[0].mip, 31u);
    EXPECT_EQ(h.dev_invals[1].sid, 0x0001u);
    EXPECT_EQ(h.dev_invals[1].pfsid, 0x0010u) << "PFSID[15:4] lives in bits 63:52";
    EXPECT_EQ(h.dev_invals[1].mip, 0u);
    EXPECT_EQ(h.dev_invals[2].sid, 0x8000u);
    EXPECT_EQ(h.dev_invals[2].pfsid, 0x000fu) << "PFSID[3:0] lives in bits 15:12";
    EXPECT_EQ(h.dev_invals[2].mip, 17u);
}

TEST_F(DeviceTlb, DoesNotTouchTheIotlb)
{
    uint64_t top = h.alloc_page();
    h.map(top, 4, 0x5000, 0x9000, 3);
    h.set_context(0x0100, top, 7, 4, 1);
    ASSERT_EQ(h.translate(0x0100, 0x5000, VTD_PERM_READ), VTD_FR_NONE);
    h.map(top, 4, 0x5000, 0xa000, 3);  // changed without an IOTLB invalidation
    h.submit(dt_lo(0x0100), dt_hi(0x5000));
    VtdTranslation t{};
    ASSERT_EQ(h.translate(0x0100, 0x5000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0x9000u) << "the unit's own IOTLB keeps its entry";
    EXPECT_TRUE(h.invals.empty()) << "no IOTLB invalidation is reported to the host";
}

namespace {

struct BadDescriptor {
    const char *what;
    uint64_t lo, hi;
};

}  // namespace

TEST_F(DeviceTlb, ReservedBitsRaiseIqeAtTheDescriptor)
{
    const BadDescriptor bad[] = {
        {"lo bit 4 (reserved 8:4)", dt_lo(1) | bit_of(4), dt_hi(0x1000)},
        {"lo bit 8", dt_lo(1) | bit_of(8), dt_hi(0x1000)},
        {"lo bit 9 (descriptor type high, scalable mode)", dt_lo(1) | bit_of(9), dt_hi(0x1000)},
        {"lo bit 11", dt_lo(1) | bit_of(11), dt_hi(0x1000)},
        {"lo bit 21 (reserved 31:21)", dt_lo(1) | bit_of(21), dt_hi(0x1000)},
        {"lo bit 31", dt_lo(1) | bit_of(31), dt_hi(0x1000)},
        {"lo bit 48 (reserved 51:48)", dt_lo(1) | bit_of(48), dt_hi(0x1000)},
        {"lo bit 51", dt_lo(1) | bit_of(51), dt_hi(0x1000)},
        {"hi bit 1 (reserved 11:1)", dt_lo(1), dt_hi(0x1000) | bit_of(1)},
        {"hi bit 11", dt_lo(1), dt_hi(0x1000) | bit_of(11)},
        {"hi bit 5 with S", dt_lo(1), dt_hi(0x4000, 2) | bit_of(5)},
    };
    for (const auto &b : bad) {
        FakeHost g(8 << 20, dt_config());
        g.enable_translation();
        g.enable_qi();
        uint64_t status = g.alloc_page();
        g.push(dt_lo(1), dt_hi(0x1000));  // a good one first
        g.push(b.lo, b.hi);
        g.push(FakeHost::wait_desc(true, false, false, 0x77), status);
        g.kick();
        EXPECT_EQ(g.mmio32(FSTS) & FSTS_IQE, FSTS_IQE) << b.what;
        EXPECT_EQ(g.mmio64(IQH) >> 4, 1u) << b.what << ": IQH stays at the bad descriptor";
        EXPECT_EQ(g.dev_invals.size(), 1u) << b.what << ": only the good one reached the host";
        EXPECT_EQ(g.get32(status), 0u) << b.what << ": processing stopped";
        EXPECT_EQ(json_counter(g.stats(), "queue", "invalid_descriptors"), 1u) << b.what;
        EXPECT_EQ(g.mmio64(IQER), 0u) << b.what << ": IQER is reserved in VER 1.0";
        // Software fixes the descriptor and clears IQE: processing resumes there.
        g.put64(g.queue + 16, dt_lo(2));
        g.put64(g.queue + 24, dt_hi(0x2000));
        g.w32(FSTS, FSTS_IQE);
        EXPECT_EQ(g.mmio32(FSTS) & FSTS_IQE, 0u) << b.what;
        EXPECT_EQ(g.mmio64(IQH) >> 4, 3u) << b.what;
        ASSERT_EQ(g.dev_invals.size(), 2u) << b.what;
        EXPECT_EQ(g.dev_invals[1].sid, 2u) << b.what;
        EXPECT_EQ(g.get32(status), 0x77u) << b.what;
    }
}

TEST(DeviceTlbOff, DescriptorIsInvalidWithoutDt)
{
    FakeHost h(8 << 20, dt_config(false));
    h.enable_translation();
    h.enable_qi();
    h.submit(dt_lo(0x0100), dt_hi(0x1000));
    EXPECT_EQ(h.mmio32(FSTS) & FSTS_IQE, FSTS_IQE);
    EXPECT_EQ(h.mmio64(IQH), 0u);
    EXPECT_TRUE(h.dev_invals.empty());
    EXPECT_EQ(json_counter(h.stats(), "descriptors", "device_iotlb"), 0u);
}

TEST(DeviceTlbNoCallback, HostWithoutCallbackStillCompletes)
{
    // device_iotlb_invalidated is optional: the descriptor completes.
    VtdHostOps ops{};
    struct Ram {
        std::vector<uint8_t> b = std::vector<uint8_t>(1 << 20);
    } ram;
    ops.mem_read = [](void *o, uint64_t gpa, void *buf, size_t len) {
        auto *r = static_cast<Ram *>(o);
        if (gpa > r->b.size() || len > r->b.size() - gpa)
            return -1;
        std::memcpy(buf, r->b.data() + gpa, len);
        return 0;
    };
    ops.mem_write = [](void *o, uint64_t gpa, const void *buf, size_t len) {
        auto *r = static_cast<Ram *>(o);
        if (gpa > r->b.size() || len > r->b.size() - gpa)
            return -1;
        std::memcpy(r->b.data() + gpa, buf, len);
        return 0;
    };
    ops.msi = [](void *, uint64_t, uint32_t) {};
    VtdConfig c = dt_config();
    VtdEngine *e = vtd_engine_new(&c, &ops, &ram, nullptr, 0);
    ASSERT_NE(e, nullptr);
    uint64_t lo = dt_lo(1), hi = dt_hi(0x1000);
    std::memcpy(ram.b.data() + 0x10000, &lo, 8);
    std::memcpy(ram.b.data() + 0x10008, &hi, 8);
    vtd_engine_mmio_write(e, IQA, 0x10000, 8);
    vtd_engine_mmio_write(e, GCMD, QIE, 4);
    vtd_engine_mmio_write(e, IQT, 1 << 4, 4);
    EXPECT_EQ(vtd_engine_mmio_read(e, FSTS, 4), 0u);
    EXPECT_EQ(vtd_engine_mmio_read(e, IQH, 8), 1u << 4);
    vtd_engine_free(e);
}

TEST_F(DeviceTlb, NeverTimesOut)
{
    for (int i = 0; i < 300; i++)  // more than the queue holds: wraps around
        h.submit(dt_lo(static_cast<uint16_t>(i)), dt_hi(uint64_t(i) << 12, i % 8));
    EXPECT_EQ(h.mmio32(FSTS) & (FSTS_ITE | FSTS_IQE), 0u);
    EXPECT_EQ(h.dev_invals.size(), 300u);
    EXPECT_EQ(h.mmio64(IQER), 0u);
}

TEST_F(DeviceTlb, NotificationCounters)
{
    vtd_engine_count_notify(h.e, VTD_NOTIFY_UNMAP, 3);
    vtd_engine_count_notify(h.e, VTD_NOTIFY_MAP, 5);
    vtd_engine_count_notify(h.e, VTD_NOTIFY_DEVIOTLB_UNMAP, 7);
    vtd_engine_count_notify(h.e, VTD_NOTIFY_DEVIOTLB_UNMAP, 1);
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "notifications", "unmap"), 3u);
    EXPECT_EQ(json_counter(s, "notifications", "map"), 5u);
    EXPECT_EQ(json_counter(s, "notifications", "deviotlb_unmap"), 8u);
    vtd_engine_stats_reset(h.e);
    EXPECT_EQ(json_counter(h.stats(), "notifications", "deviotlb_unmap"), 0u);
}
