// SPDX-License-Identifier: GPL-2.0-or-later
// Queued invalidation in 256-bit descriptor mode (IQA.DW, scalable mode):
// IQA.DW only with scalable mode, IQH/IQT in 32-byte units, the queue
// size, wrap-around and slices, the PASID-based descriptors (P_IOTLB,
// PASID cache, PASID-based device-TLB) with every granularity, and the
// errors: 128-bit descriptors in a 256-bit queue and the reverse, reserved
// fields, tails, each with its IQER.IQEI.
#include <array>
#include <cstring>

#include "fake_host.hpp"

using namespace vtdtest;

namespace {

constexpr uint32_t IQER = 0xb0;
constexpr uint32_t FSTS_IQE = 1u << 4;
constexpr uint64_t IQA_DW = 1ull << 11;
// IQER.IQEI values.
constexpr uint64_t INVALID_TAIL = 1, FETCH_ERROR = 2, INVALID_TYPE = 3, RESERVED_FIELD = 4,
                   INVALID_WIDTH = 5, MISALIGNED_TAIL = 6;

VtdConfig scalable(bool device_iotlb = false)
{
    VtdConfig c = FakeHost::default_config();
    c.scalable_mode = true;
    c.second_stage = true;  // scalable mode needs a stage; the queue does not care which
    c.device_iotlb = device_iotlb;
    return c;
}

struct Wide : ::testing::Test {
    FakeHost h{8 << 20, scalable(true)};
    uint64_t status = 0;
    void SetUp() override
    {
        status = h.alloc_page();
        h.enable_translation();
        h.enable_qi(0, true);
        h.w32(FECTL, 0);
    }
    uint64_t head() { return h.mmio64(IQH) >> 5; }
    uint64_t wait(uint32_t data) { return FakeHost::wait_desc(true, false, false, data); }
    bool iqe() { return h.mmio32(FSTS) & FSTS_IQE; }
    // Queue `bad` between two status writes: IQE with IQH at it and the
    // given IQEI; then replace it with a no-op wait and clear IQE: the
    // queue continues.
    void expect_error(const std::array<uint64_t, 4> &bad, uint64_t iqei)
    {
        const uint64_t at = head();
        h.push(wait(1), status);
        h.push(bad[0], bad[1], bad[2], bad[3]);
        h.push(wait(2), status);
        h.kick();
        EXPECT_EQ(h.get32(status), 1u);
        EXPECT_TRUE(iqe());
        EXPECT_EQ(head(), (at + 1) % h.queue_entries()) << "IQH at the bad descriptor";
        EXPECT_EQ(h.mmio64(IQER), iqei);
        const uint64_t slot = h.queue + (((at + 1) % h.queue_entries()) << 5);
        for (unsigned i = 0; i < 4; i++)
            h.put64(slot + 8 * i, i == 0 ? FakeHost::wait_desc(false, false, false, 0) : 0);
        h.w32(FSTS, FSTS_IQE);
        EXPECT_FALSE(iqe());
        EXPECT_EQ(h.mmio64(IQER), 0u) << "IQER describes a pending IQE only";
        EXPECT_EQ(h.get32(status), 2u);
        EXPECT_EQ(head(), (at + 3) % h.queue_entries());
    }
};

}  // namespace

TEST(WideQueue, DwNeedsScalableMode)
{
    FakeHost legacy;
    legacy.w64(IQA, 0x10000 | IQA_DW);
    EXPECT_EQ(legacy.mmio64(IQA), 0x10000u) << "DW is reserved without scalable mode";
    FakeHost sm(8 << 20, scalable());
    sm.w64(IQA, 0x10000 | IQA_DW);
    EXPECT_EQ(sm.mmio64(IQA), 0x10000u | IQA_DW);
}

TEST_F(Wide, HeadAndTailIn32ByteUnits)
{
    EXPECT_EQ(h.queue_entries(), 128u) << "QS=0: one page of 256-bit descriptors";
    h.submit(wait(7), status);
    EXPECT_EQ(h.get32(status), 7u);
    EXPECT_EQ(h.mmio64(IQH), 0x20u);
    EXPECT_EQ(h.mmio64(IQT), 0x20u);
    EXPECT_FALSE(iqe());
    EXPECT_EQ(json_counter(h.stats(), "descriptors", "wait"), 1u);
}

TEST_F(Wide, WrapsAroundAt128Entries)
{
    for (uint32_t i = 0; i < 130; i++) {
        h.push(wait(i), status);
        if (i % 16 == 15)
            h.kick();
    }
    h.kick();
    while (vtd_engine_queue_pending(h.e))
        vtd_engine_process_queue(h.e);
    EXPECT_EQ(h.get32(status), 129u);
    EXPECT_EQ(head(), 2u);
    EXPECT_FALSE(iqe());
}

TEST_F(Wide, SlicesStillBounded)
{
    h.enable_qi(1, true);  // two pages: 256 descriptors
    ASSERT_EQ(h.queue_entries(), 256u);
    for (uint32_t i = 0; i < 200; i++)
        h.push(wait(i), status);
    h.kick();
    EXPECT_EQ(head(), uint64_t{VTD_QUEUE_SLICE_DESCRIPTORS});
    EXPECT_TRUE(vtd_engine_queue_pending(h.e));
    EXPECT_FALSE(vtd_engine_process_queue(h.e));
    EXPECT_EQ(head(), 200u);
    EXPECT_EQ(h.get32(status), 199u);
    EXPECT_EQ(json_counter(h.stats(), "queue", "slices_deferred"), 1u);
}

TEST_F(Wide, TailWithBit4Set)
{
    h.w32(IQT, 0x30);  // 1.5 descriptors
    EXPECT_TRUE(iqe());
    EXPECT_EQ(h.mmio64(IQER), MISALIGNED_TAIL);
    EXPECT_EQ(head(), 0u);
    EXPECT_EQ(json_counter(h.stats(), "queue", "tail_errors"), 1u);
}

TEST_F(Wide, TailBeyondQueue)
{
    h.w32(IQT, 128 << 5);
    EXPECT_TRUE(iqe());
    EXPECT_EQ(h.mmio64(IQER), INVALID_TAIL);
    h.w32(IQT, 0);
    h.w32(FSTS, FSTS_IQE);
    EXPECT_FALSE(iqe());
}

TEST_F(Wide, UnreadableDescriptor)
{
    // A two-page queue (256 descriptors) whose second page lies beyond RAM.
    h.gcmd_shadow &= ~QIE;
    h.w32(GCMD, h.gcmd_shadow);
    const uint64_t base = h.ram.size() - PAGE;
    for (uint64_t i = 0; i < 128; i++)
        h.put64(base + 32 * i, FakeHost::wait_desc(false, false, false, 0));
    h.w64(IQA, base | IQA_DW | 1);
    h.gcmd_shadow |= QIE;
    h.w32(GCMD, h.gcmd_shadow);
    h.w32(IQT, 129 << 5);
    while (vtd_engine_queue_pending(h.e))
        vtd_engine_process_queue(h.e);
    EXPECT_TRUE(iqe());
    EXPECT_EQ(head(), 128u) << "the first page's descriptors ran";
    EXPECT_EQ(h.mmio64(IQER), FETCH_ERROR);
}

// Linux's 128-bit descriptors written into a 256-bit queue: two share a
// slot, and the second is the first's reserved upper half.
TEST_F(Wide, LegacyDescriptorsPacked)
{
    expect_error({wait(5), status, wait(6), status}, RESERVED_FIELD);
    expect_error({FakeHost::iotlb_desc(1), 0, 0, 1ull << 63}, RESERVED_FIELD);
    EXPECT_EQ(json_counter(h.stats(), "queue", "invalid_descriptors"), 2u);
    EXPECT_EQ(json_counter(h.stats(), "queue", "width_errors"), 0u);
}

TEST(WideQueue, PasidDescriptorsIn128BitQueue)
{
    FakeHost h(8 << 20, scalable(true));
    h.enable_translation();
    h.enable_qi();
    h.w32(FECTL, 0);
    for (uint64_t lo : {FakeHost::piotlb_desc(2, 1, 5), FakeHost::pc_desc(3, 0, 0),
                        FakeHost::pdtlb_desc(0x10, 5)}) {
        SCOPED_TRACE(lo);
        h.submit(lo, 0);
        EXPECT_EQ(h.mmio32(FSTS) & FSTS_IQE, FSTS_IQE);
        EXPECT_EQ(h.mmio64(IQER), INVALID_WIDTH);
        // Replace it and go on.
        const uint64_t slot = h.queue + ((h.mmio64(IQH) >> 4) << 4);
        h.put64(slot, FakeHost::wait_desc(false, false, false, 0));
        h.w32(FSTS, FSTS_IQE);
        EXPECT_EQ(h.mmio32(FSTS) & FSTS_IQE, 0u);
    }
    EXPECT_EQ(json_counter(h.stats(), "queue", "width_errors"), 3u);
}

TEST(WideQueue, PasidDescriptorsWithoutScalableMode)
{
    FakeHost h;
    h.enable_translation();
    h.enable_qi();
    h.submit(FakeHost::piotlb_desc(2, 1, 5), 0);
    EXPECT_EQ(h.mmio32(FSTS) & FSTS_IQE, FSTS_IQE) << "an unknown type in a VT-d 1.0 unit";
    EXPECT_EQ(h.mmio64(IQER), 0u) << "IQER is reserved without scalable mode";
    EXPECT_EQ(json_counter(h.stats(), "queue", "width_errors"), 0u);
}

TEST_F(Wide, PasidIotlbPasidSelective)
{
    h.submit(FakeHost::piotlb_desc(2, 9, 0x12345), 0);
    EXPECT_FALSE(iqe());
    ASSERT_EQ(h.invals.size(), 1u);
    EXPECT_FALSE(h.invals[0].all);
    EXPECT_EQ(h.invals[0].did, 9u);
    EXPECT_EQ(h.invals[0].size, uint64_t{1} << 48) << "the whole PASID: the domain's space";
    auto s = h.stats();
    EXPECT_EQ(json_counter(s, "pasid_iotlb", "pasid"), 1u);
    EXPECT_EQ(json_counter(s, "pasid_iotlb", "page"), 0u);
    EXPECT_EQ(json_counter(s, "descriptors", "pasid_iotlb"), 1u);
}

TEST_F(Wide, PasidIotlbPageSelective)
{
    // AM = 2: four pages, the address's low bits below 16 KiB ignored.
    h.submit(FakeHost::piotlb_desc(3, 9, 7), 0x45000 | 2 | 64);
    EXPECT_FALSE(iqe());
    ASSERT_EQ(h.invals.size(), 1u);
    EXPECT_EQ(h.invals[0].iova, 0x44000u);
    EXPECT_EQ(h.invals[0].size, 4 * PAGE);
    auto s = h.stats();
    EXPECT_EQ(json_counter(s, "pasid_iotlb", "page"), 1u);
    EXPECT_EQ(json_counter(s, "pasid_iotlb", "pages"), 4u);
}

// AM above MAMV, as Linux 6.1's qi_flush_piotlb() writes it for a large
// unmap: no error, the whole PASID of the domain goes (more than asked),
// and the host hears of the domain's whole space.
TEST_F(Wide, PasidIotlbAboveMamvInvalidatesThePasid)
{
    for (uint64_t am : {19, 63}) {
        h.invals.clear();
        h.submit(FakeHost::piotlb_desc(3, 9, 7), 0x80000000 | am);
        EXPECT_FALSE(iqe()) << am;
        ASSERT_EQ(h.invals.size(), 1u);
        EXPECT_EQ(h.invals[0].did, 9u);
        EXPECT_EQ(h.invals[0].iova, 0u);
        EXPECT_EQ(h.invals[0].size, uint64_t{1} << 48);
    }
    auto s = h.stats();
    EXPECT_EQ(json_counter(s, "pasid_iotlb", "page"), 2u);
    EXPECT_EQ(json_counter(s, "pasid_iotlb", "page_as_pasid"), 2u);
    EXPECT_EQ(json_counter(s, "pasid_iotlb", "pasid"), 0u);
}

TEST_F(Wide, PasidIotlbInvalid)
{
    const uint64_t ok = FakeHost::piotlb_desc(3, 1, 1);
    expect_error({FakeHost::piotlb_desc(0, 1, 1), 0, 0, 0}, RESERVED_FIELD);  // G=00b
    expect_error({FakeHost::piotlb_desc(1, 1, 1), 0, 0, 0}, RESERVED_FIELD);  // G=01b
    expect_error({ok | (1ull << 7), 0, 0, 0}, RESERVED_FIELD);
    expect_error({ok | (1ull << 13), 0, 0, 0}, RESERVED_FIELD);
    expect_error({ok | (1ull << 60), 0, 0, 0}, RESERVED_FIELD);
    expect_error({ok, 1ull << 8, 0, 0}, RESERVED_FIELD);       // qw1 11:7
    expect_error({ok, 0, 1, 0}, RESERVED_FIELD);               // qw2
    expect_error({ok, 0, 0, 1}, RESERVED_FIELD);               // qw3
    expect_error({ok | (1ull << 10), 0, 0, 0}, INVALID_TYPE);  // type 0x26
    EXPECT_TRUE(h.invals.empty()) << "nothing invalidated by a bad descriptor";
}

TEST_F(Wide, PasidCacheGranularities)
{
    const size_t before = h.ctx_invals.size();
    h.submit(FakeHost::pc_desc(0, 3, 0), 0);     // domain-selective
    h.submit(FakeHost::pc_desc(1, 3, 0x77), 0);  // PASID-selective
    h.submit(FakeHost::pc_desc(3, 0, 0), 0);     // global
    EXPECT_FALSE(iqe());
    auto s = h.stats();
    EXPECT_EQ(json_counter(s, "pasid_cache", "domain"), 1u);
    EXPECT_EQ(json_counter(s, "pasid_cache", "pasid"), 1u);
    EXPECT_EQ(json_counter(s, "pasid_cache", "global"), 1u);
    EXPECT_EQ(json_counter(s, "descriptors", "pasid_cache"), 3u);
    EXPECT_EQ(h.ctx_invals.size(), before) << "no source-id is named";
    // The host hears what each descriptor named.
    ASSERT_EQ(h.pc_invals.size(), 3u);
    EXPECT_EQ(h.pc_invals[0].granularity, VTD_GRAN_DOMAIN);
    EXPECT_EQ(h.pc_invals[0].did, 3u);
    EXPECT_EQ(h.pc_invals[0].pasid, 0u);
    EXPECT_EQ(h.pc_invals[1].granularity, VTD_GRAN_SELECTIVE);
    EXPECT_EQ(h.pc_invals[1].did, 3u);
    EXPECT_EQ(h.pc_invals[1].pasid, 0x77u);
    EXPECT_EQ(h.pc_invals[2].granularity, VTD_GRAN_GLOBAL);
    EXPECT_EQ(h.pc_invals[2].did, 0u);
}

// A host without VtdHostOps.pasid_cache_invalidated re-evaluates every
// device after any PASID-cache invalidation.
TEST(WideFallback, PasidCacheWithoutTheHookIsAContextInvalidationOfAll)
{
    FakeHost h(8 << 20, scalable(), false);
    h.enable_translation();
    h.enable_qi(0, true);
    const size_t before = h.ctx_invals.size();
    h.submit(FakeHost::pc_desc(1, 3, 0x77), 0);
    EXPECT_FALSE(h.mmio32(FSTS) & FSTS_IQE);
    ASSERT_EQ(h.ctx_invals.size() - before, 1u);
    EXPECT_TRUE(h.ctx_invals.back().all);
    EXPECT_TRUE(h.pc_invals.empty());
}

TEST_F(Wide, PasidCacheInvalid)
{
    expect_error({FakeHost::pc_desc(2, 0, 0), 0, 0, 0}, RESERVED_FIELD);  // G=10b
    expect_error({FakeHost::pc_desc(0, 0, 0), 1, 0, 0}, RESERVED_FIELD);
    expect_error({FakeHost::pc_desc(0, 0, 0) | (1ull << 6), 0, 0, 0}, RESERVED_FIELD);
    expect_error({FakeHost::pc_desc(0, 0, 0), 0, 0, 1ull << 40}, RESERVED_FIELD);
}

TEST_F(Wide, PasidDeviceTlb)
{
    // One page; a 16 KiB range (S, lowest clear bit of ADDR at 13); every
    // PASID (G) of the whole space.
    h.submit(FakeHost::pdtlb_desc(0x0810, 5, 0x123, 3), 0x7000);
    h.submit(FakeHost::pdtlb_desc(0x0810, 5), 0x9000 | (1ull << 11) | 0x1000);
    h.submit(FakeHost::pdtlb_desc(0x0810, 0), ~0xfffull | (1ull << 11) | 1);
    EXPECT_FALSE(iqe());
    ASSERT_EQ(h.dev_invals.size(), 3u);
    EXPECT_EQ(h.dev_invals[0].sid, 0x0810u);
    EXPECT_EQ(h.dev_invals[0].pfsid, 0x123u);
    EXPECT_EQ(h.dev_invals[0].mip, 3u);
    EXPECT_EQ(h.dev_invals[0].first, 0x7000u);
    EXPECT_EQ(h.dev_invals[0].last, 0x7fffu);
    EXPECT_EQ(h.dev_invals[1].first, 0x8000u);
    EXPECT_EQ(h.dev_invals[1].last, 0xbfffu);
    EXPECT_EQ(h.dev_invals[2].first, 0u) << "S with every ADDR bit set: the whole space";
    EXPECT_EQ(h.dev_invals[2].last, ~uint64_t{0});
    auto s = h.stats();
    EXPECT_EQ(json_counter(s, "invalidations", "pasid_device_iotlb"), 3u);
    EXPECT_EQ(json_counter(s, "device_tlb", "pasid_global"), 1u);
    EXPECT_EQ(json_counter(s, "descriptors", "pasid_device_iotlb"), 3u);
}

TEST_F(Wide, PasidDeviceTlbInvalid)
{
    expect_error({FakeHost::pdtlb_desc(1, 1), 1ull << 1, 0, 0}, RESERVED_FIELD);
    expect_error({FakeHost::pdtlb_desc(1, 1), 1ull << 10, 0, 0}, RESERVED_FIELD);
    expect_error({FakeHost::pdtlb_desc(1, 1), 0, 0, 1}, RESERVED_FIELD);
    EXPECT_TRUE(h.dev_invals.empty());
}

TEST(WideQueue, PasidDeviceTlbWithoutDt)
{
    FakeHost h(8 << 20, scalable(false));
    h.enable_translation();
    h.enable_qi(0, true);
    h.push(FakeHost::pdtlb_desc(1, 1), 0);
    h.kick();
    EXPECT_EQ(h.mmio32(FSTS) & FSTS_IQE, FSTS_IQE);
    EXPECT_EQ(h.mmio64(IQER), INVALID_TYPE);
    EXPECT_TRUE(h.dev_invals.empty());
}

// The legacy-format descriptors keep their meaning in a 256-bit queue.
TEST_F(Wide, LegacyFormatsIn256BitQueue)
{
    h.submit(FakeHost::cc_desc(1), 0);
    h.submit(FakeHost::iotlb_desc(2, 4), 0);
    h.submit(FakeHost::iotlb_desc(3, 4), FakeHost::iotlb_addr(0x5000));
    h.submit(4, 0);                              // IEC, global
    h.submit(3 | uint64_t{0x10} << 32, 0x3000);  // device-TLB
    EXPECT_FALSE(iqe());
    auto s = h.stats();
    EXPECT_EQ(json_counter(s, "descriptors", "context_cache"), 1u);
    EXPECT_EQ(json_counter(s, "descriptors", "iotlb"), 2u);
    EXPECT_EQ(json_counter(s, "descriptors", "interrupt_entry_cache"), 1u);
    EXPECT_EQ(json_counter(s, "descriptors", "device_iotlb"), 1u);
    ASSERT_EQ(h.dev_invals.size(), 1u);
    EXPECT_EQ(h.dev_invals[0].sid, 0x10u);
}

TEST_F(Wide, UnknownTypes)
{
    expect_error({9, 0, 0, 0}, INVALID_TYPE);  // page-group response: no PRS
    expect_error({0, 0, 0, 0}, INVALID_TYPE);
    expect_error({1 | (7ull << 9), 0, 0, 0}, INVALID_TYPE);  // type 0x71
}

// Migration carries IQERCD: the destination reads the IQEI of a pending
// IQE, and refuses an IQEI no queue could hold.
TEST(WideQueue, IqeiMigrates)
{
    FakeHost a(8 << 20, scalable(true));
    a.enable_translation();
    a.enable_qi();
    a.w32(FECTL, 0);
    a.submit(FakeHost::piotlb_desc(2, 1, 5), 0);
    ASSERT_EQ(a.mmio64(IQER), INVALID_WIDTH);
    VtdState st{};
    vtd_engine_get_state(a.e, &st);
    EXPECT_EQ(st.iqercd, INVALID_WIDTH);

    FakeHost b(8 << 20, scalable(true));
    ASSERT_EQ(vtd_engine_set_state(b.e, &st), VTD_STATE_OK);
    EXPECT_EQ(b.mmio32(FSTS) & FSTS_IQE, FSTS_IQE);
    EXPECT_EQ(b.mmio64(IQER), INVALID_WIDTH);
    VtdState again{};
    vtd_engine_get_state(b.e, &again);
    EXPECT_EQ(std::memcmp(&st, &again, sizeof(st)), 0);

    VtdState bad = st;
    bad.iqercd = MISALIGNED_TAIL + 1;
    EXPECT_EQ(vtd_engine_set_state(b.e, &bad), VTD_STATE_BAD_QUEUE);
    bad.iqercd = 1ull << 32;  // an ITESID: ITE never occurs
    EXPECT_EQ(vtd_engine_set_state(b.e, &bad), VTD_STATE_BAD_QUEUE);
    bad = st;
    bad.fsts &= ~FSTS_IQE;
    EXPECT_EQ(vtd_engine_set_state(b.e, &bad), VTD_STATE_BAD_QUEUE) << "IQEI without IQE";
    EXPECT_EQ(b.mmio64(IQER), INVALID_WIDTH) << "a refused state changes nothing";

    // Once software replaced the descriptor and cleared IQE there is
    // nothing to carry.
    a.put64(a.queue + ((a.mmio64(IQH) >> 4) << 4), FakeHost::wait_desc(false, false, false, 0));
    a.w32(FSTS, FSTS_IQE);
    ASSERT_EQ(a.mmio32(FSTS) & FSTS_IQE, 0u);
    vtd_engine_get_state(a.e, &st);
    EXPECT_EQ(st.iqercd, 0u);
}
