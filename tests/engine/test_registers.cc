// SPDX-License-Identifier: GPL-2.0-or-later
// Register file: reset values, capability bits, read-only/reserved/RW1C
// behaviour, 32- and 64-bit accesses, GCMD one-shot semantics.
#include "fake_host.hpp"

using namespace vtdtest;

TEST(Registers, ResetValuesAndCapabilities)
{
    FakeHost h;
    EXPECT_EQ(h.mmio32(VER), 0x10u);
    EXPECT_EQ(h.mmio32(GSTS), 0u);
    EXPECT_EQ(h.mmio64(RTADDR), 0u);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(h.mmio32(FECTL), 1u << 31) << "FECTL.IM is set at reset";
    EXPECT_EQ(h.mmio32(IECTL), 1u << 31);
    EXPECT_EQ(h.mmio64(IQH), 0u);
    EXPECT_EQ(h.mmio64(IQT), 0u);
    EXPECT_EQ(h.mmio64(IQA), 0u);

    uint64_t cap = h.cap, ecap = h.ecap;
    EXPECT_EQ((cap >> 8) & 0x1f, 0x6u) << "SAGAW: 39 and 48 bit";
    EXPECT_EQ(((cap >> 16) & 0x3f) + 1, 48u) << "MGAW";
    EXPECT_EQ(((cap >> 40) & 0xff) + 1, 8u) << "NFR";
    EXPECT_EQ((cap >> 34) & 0xf, 3u) << "SLLPS: 2M and 1G";
    EXPECT_TRUE(cap & (1ull << 39)) << "PSI";
    EXPECT_FALSE(cap & (1ull << 5)) << "PLMR";
    EXPECT_FALSE(cap & (1ull << 6)) << "PHMR";
    EXPECT_FALSE(cap & (1ull << 7)) << "CM";
    EXPECT_FALSE(cap & (1ull << 4)) << "RWBF";
    EXPECT_EQ(cap & 7, 6u) << "ND: 16-bit domain ids";
    EXPECT_TRUE(ecap & 2) << "QI";
    EXPECT_TRUE(ecap & (1 << 6)) << "PT";
    EXPECT_FALSE(ecap & (1 << 3)) << "IR not advertised";
    EXPECT_FALSE(ecap & (1 << 2)) << "DT";
    EXPECT_GE(h.frcd, 0x100u);
    EXPECT_LE(h.frcd + 8 * 16, 0x1000u);
    EXPECT_GE(h.iva, 0x100u);
    // The IOTLB registers and fault records do not overlap anything.
    EXPECT_TRUE(h.iotlb + 8 <= h.frcd || h.frcd + 8 * 16 <= h.iva);
}

TEST(Registers, ConfigVariants)
{
    VtdConfig c = FakeHost::default_config();
    c.aw_bits = 39;
    c.caching_mode = true;
    c.pass_through = false;
    c.device_iotlb = true;
    c.superpage_1g = false;
    c.fault_records = 16;
    FakeHost h(8 << 20, c);
    EXPECT_EQ((h.cap >> 8) & 0x1f, 0x2u);
    EXPECT_EQ(((h.cap >> 16) & 0x3f) + 1, 39u);
    EXPECT_TRUE(h.cap & (1ull << 7));
    EXPECT_EQ((h.cap >> 34) & 0xf, 1u);
    EXPECT_EQ(((h.cap >> 40) & 0xff) + 1, 16u);
    EXPECT_FALSE(h.ecap & (1 << 6));
    EXPECT_TRUE(h.ecap & (1 << 2));
}

TEST(Registers, InvalidConfigsAreRejected)
{
    VtdHostOps ops{};
    ops.mem_read = [](void *, uint64_t, void *, size_t) { return -1; };
    ops.mem_write = [](void *, uint64_t, const void *, size_t) { return -1; };
    ops.msi = [](void *, uint64_t, uint32_t) {};
    VtdConfig c = FakeHost::default_config();
    char err[80] = "";
    c.aw_bits = 40;
    EXPECT_EQ(vtd_engine_new(&c, &ops, nullptr, err, sizeof(err)), nullptr);
    EXPECT_STRNE(err, "");
    c = FakeHost::default_config();
    c.fault_records = 256;  // does not fit in the 4 KiB register window
    EXPECT_EQ(vtd_engine_new(&c, &ops, nullptr, err, sizeof(err)), nullptr);
    c = FakeHost::default_config();
    VtdHostOps missing = ops;
    missing.msi = nullptr;
    EXPECT_EQ(vtd_engine_new(&c, &missing, nullptr, err, sizeof(err)), nullptr);
    EXPECT_EQ(vtd_engine_new(nullptr, &ops, nullptr, nullptr, 0), nullptr);
    c.aw_bits = 57;
    VtdEngine *e = vtd_engine_new(&c, &ops, nullptr, err, sizeof(err));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ((vtd_engine_mmio_read(e, CAP, 8) >> 8) & 0x1f, 0xeu);
    vtd_engine_free(e);
}

TEST(Registers, ReadOnlyRegistersIgnoreWrites)
{
    FakeHost h;
    uint64_t cap = h.cap, ecap = h.ecap;
    h.w64(CAP, ~0ull);
    h.w64(ECAP, 0);
    h.w32(VER, 0x99);
    h.w32(GSTS, ~0u);
    h.w64(IQH, 0x70);
    EXPECT_EQ(h.mmio64(CAP), cap);
    EXPECT_EQ(h.mmio64(ECAP), ecap);
    EXPECT_EQ(h.mmio32(VER), 0x10u);
    EXPECT_EQ(h.mmio32(GSTS), 0u);
    EXPECT_EQ(h.mmio64(IQH), 0u);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    h.w32(FSTS, 0xffff'ff02u);  // PPF and FRI are read-only
    EXPECT_EQ(h.mmio32(FSTS), 0u);
}

TEST(Registers, ReservedBitsReadAsZero)
{
    FakeHost h;
    // address bits from the host address width (48 here) up read 0
    h.w64(RTADDR, ~0ull);
    EXPECT_EQ(h.mmio64(RTADDR), 0xfffffffff000ull);
    h.w64(IQA, ~0ull);
    EXPECT_EQ(h.mmio64(IQA), 0xfffffffff000ull | 7) << "DW (bit 11) needs scalable mode";
    h.w64(IQT, ~0ull);
    EXPECT_EQ(h.mmio64(IQT), 0x7fff0ull);
    h.w32(FEADDR, ~0u);
    EXPECT_EQ(h.mmio32(FEADDR), ~3u);
    h.w32(FEDATA, ~0u);
    EXPECT_EQ(h.mmio32(FEDATA), 0xffffu);
    h.w32(FECTL, ~0u);
    EXPECT_EQ(h.mmio32(FECTL), 1u << 31) << "IP is read-only";
    h.w32(IEADDR, ~0u);
    EXPECT_EQ(h.mmio32(IEADDR), ~3u);
    h.w64(h.iva, ~0ull);
    EXPECT_EQ(h.mmio64(h.iva), ~0xfffull | 0x7f);
    // Protected memory regions are not implemented.
    h.w32(PMEN, ~0u);
    EXPECT_EQ(h.mmio32(PMEN), 0u);
    h.w64(0x68, ~0ull);
    EXPECT_EQ(h.mmio64(0x68), 0u);
    // Unknown offsets, bad sizes and misaligned accesses.
    h.w64(0xf00, ~0ull);
    EXPECT_EQ(h.mmio64(0xf00), 0u);
    EXPECT_EQ(vtd_engine_mmio_read(h.e, VER, 2), 0u);
    EXPECT_EQ(vtd_engine_mmio_read(h.e, CAP + 4, 8), 0u);
    EXPECT_EQ(vtd_engine_mmio_read(h.e, 0x1000, 4), 0u);
    EXPECT_EQ(vtd_engine_mmio_read(h.e, 0xffc, 8), 0u);
    EXPECT_EQ(vtd_engine_mmio_read(h.e, ~0ull - 3, 4), 0u);
    EXPECT_EQ(vtd_engine_mmio_read(h.e, ~0ull - 7, 8), 0u);
    // Offsets whose low 32 bits name a real register.
    EXPECT_EQ(vtd_engine_mmio_read(h.e, (1ull << 32) + VER, 4), 0u);
    h.w64(IQA, 0);
    vtd_engine_mmio_write(h.e, (1ull << 32) + IQA, 0x5000, 4);
    EXPECT_EQ(h.mmio64(IQA), 0u);
    vtd_engine_mmio_write(h.e, RTADDR + 2, ~0ull, 4);
    vtd_engine_mmio_write(h.e, ~0ull - 3, ~0ull, 8);
    EXPECT_EQ(h.mmio64(RTADDR), 0xfffffffff000ull);
}

TEST(Registers, SixtyFourBitRegistersInHalves)
{
    FakeHost h;
    h.w32(RTADDR, 0x12345000);
    h.w32(RTADDR + 4, 0xabcd);
    EXPECT_EQ(h.mmio64(RTADDR), 0xabcd12345000ull);
    EXPECT_EQ(h.mmio32(RTADDR + 4), 0xabcdu);
    EXPECT_EQ(h.mmio32(CAP + 4), h.cap >> 32);
    EXPECT_EQ(h.mmio32(CAP), static_cast<uint32_t>(h.cap));
    h.w32(IQA + 4, 0x1);
    h.w32(IQA, 0x7000 | 2);
    EXPECT_EQ(h.mmio64(IQA), 0x100007002ull);
}

TEST(Registers, GlobalCommandEnableSequence)
{
    FakeHost h;
    h.ensure_root();
    h.w64(RTADDR, h.root);
    h.w32(GCMD, SRTP);
    EXPECT_EQ(h.mmio32(GSTS), SRTP) << "RTPS";
    EXPECT_EQ(h.mmio32(GCMD), 0u) << "GCMD is write-only";
    h.w32(GCMD, TE);
    EXPECT_EQ(h.mmio32(GSTS), TE | SRTP);
    EXPECT_TRUE(vtd_engine_translation_enabled(h.e));
    // Linux writes its shadow (TE) plus the one-shot bit: TE stays, SRTP acts again.
    h.w32(GCMD, TE | SRTP);
    EXPECT_EQ(h.mmio32(GSTS), TE | SRTP);
    // WBF completes at once; unsupported IRE/SIRTP are ignored.
    h.w32(GCMD, TE | WBF | IRE | SIRTP);
    EXPECT_EQ(h.mmio32(GSTS), TE | SRTP);
    h.w32(GCMD, 0);
    EXPECT_EQ(h.mmio32(GSTS), SRTP);
    EXPECT_FALSE(vtd_engine_translation_enabled(h.e));
    ASSERT_GE(h.ctx_invals.size(), 2u) << "TE changes re-evaluate every address space";
    EXPECT_TRUE(h.ctx_invals.back().all);
}

TEST(Registers, EveryCombinationOfEnableBits)
{
    // All 2^9 combinations of the GCMD command bits, from every state the
    // previous combination left: no crash, GSTS shows only supported bits.
    FakeHost h;
    h.ensure_root();
    h.w64(RTADDR, h.root);
    h.w64(IQA, h.alloc_page());
    for (uint32_t combo = 0; combo < 512; combo++) {
        uint32_t v = combo << 23;
        h.w32(GCMD, v);
        uint32_t gsts = h.mmio32(GSTS);
        EXPECT_EQ(gsts & ~(TE | SRTP | QIE), 0u);
        EXPECT_EQ(bool(gsts & TE), bool(v & TE));
        EXPECT_EQ(bool(gsts & QIE), bool(v & QIE));
    }
    h.w32(GCMD, 0);
    EXPECT_EQ(h.mmio32(GSTS) & (TE | QIE), 0u);
}

TEST(Registers, ResetRestoresRegistersKeepsStats)
{
    FakeHost h;
    h.enable_translation();
    h.enable_qi();
    h.w32(FECTL, 0);
    h.translate(0x10, 0x1000, VTD_PERM_READ);
    EXPECT_NE(h.mmio32(FSTS), 0u);
    vtd_engine_reset(h.e);
    EXPECT_EQ(h.mmio32(GSTS), 0u);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(h.mmio32(FECTL), 1u << 31);
    EXPECT_EQ(h.mmio64(RTADDR), 0u);
    EXPECT_EQ(h.mmio64(IQA), 0u);
    EXPECT_EQ(json_counter(h.stats(), "translate", "requests"), 1u);
    vtd_engine_stats_reset(h.e);
    EXPECT_EQ(json_counter(h.stats(), "translate", "requests"), 0u);
}

// IVA.ADDR bits at and above MGAW are ignored: a page-selective request
// with them set invalidates the page below.
namespace {
// Domain 7's page 0x1000 -> 0xa000 for source-id 0x0310, translation on.
struct OneMappedPage : ::testing::Test {
    FakeHost h;
    uint64_t pt = 0;
    void SetUp() override
    {
        pt = h.alloc_page();
        h.set_context(0x0310, pt, 7, 4);
        h.enable_translation();
        h.map(pt, 4, 0x1000, 0xa000, 3);
    }
};
}  // namespace

TEST_F(OneMappedPage, IvaBitsAboveMgawAreIgnored)
{
    VtdTranslation t{};
    ASSERT_EQ(h.translate(0x0310, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    h.put64(h.pte_addr(pt, 4, 0x1000, 1), 0xb000 | 3);
    h.w64(h.iva, (1ull << 60) | 0x1000);  // bit 60: above the 48-bit MGAW
    h.w64(h.iotlb, (1ull << 63) | (3ull << 60) | (uint64_t{7} << 32));
    EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 3u) << "IAIG: page-selective";
    ASSERT_EQ(h.translate(0x0310, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0xb000u) << "stale translation";
}

// IAIG reports the granularity the request was done at: a page range too
// large to probe page by page goes domain-wide (10b).
TEST_F(OneMappedPage, IaigReportsADomainWideRangeAsDomain)
{
    h.translate(0x0310, 0x1000, VTD_PERM_READ);
    h.w64(h.iva, 18);  // 2^18 pages
    h.w64(h.iotlb, (1ull << 63) | (3ull << 60) | (uint64_t{7} << 32));
    EXPECT_EQ(json_counter(h.stats(), "iotlb", "page_as_domain"), 1u);
    EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 2u) << "IAIG";
    h.w64(h.iva, 0x1000);
    h.w64(h.iotlb, (1ull << 63) | (3ull << 60) | (uint64_t{7} << 32));
    EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 3u) << "IAIG of a page done as a page";
}

// With RTADDR.TTM not legacy, register-based invalidations are incorrect
// requests: CAIG and IAIG report 00b, and nothing is invalidated.
TEST(RegisterInvalidation, IgnoredWhenTheRootTableIsScalable)
{
    VtdConfig c = FakeHost::default_config();
    c.scalable_mode = true;
    c.second_stage = true;
    FakeHost h(8 << 20, c);
    h.ensure_root();
    h.w64(RTADDR, h.root | (1ull << 10));
    h.w32(GCMD, SRTP);
    h.w64(CCMD, (1ull << 63) | (1ull << 61));
    EXPECT_EQ((h.mmio64(CCMD) >> 59) & 3, 0u) << "CAIG";
    h.w64(h.iotlb, (1ull << 63) | (1ull << 60));
    EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 0u) << "IAIG";
    EXPECT_EQ(json_counter(h.stats(), "register_based", "invalid"), 2u);
    h.w64(RTADDR, h.root);  // legacy again: carried out
    h.w64(CCMD, (1ull << 63) | (1ull << 61));
    EXPECT_EQ((h.mmio64(CCMD) >> 59) & 3, 1u) << "CAIG";
}
