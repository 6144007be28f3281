// SPDX-License-Identifier: GPL-2.0-or-later
// DMA remapping: root/context decoding, 3/4/5-level walks, superpages,
// permissions, pass-through and every fault reason.
#include "fake_host.hpp"

using namespace vtdtest;

namespace {

constexpr uint16_t SID = 0x0310;  // 03:02.0
constexpr uint16_t DID = 7;

struct Translate : ::testing::Test {
    FakeHost h;
    uint64_t pt = 0;
    void SetUp() override
    {
        pt = h.alloc_page();
        h.set_context(SID, pt, DID, 4);
        h.enable_translation();
    }
};

}  // namespace

TEST_F(Translate, DisabledTranslationIsIdentity)
{
    vtd_engine_reset(h.e);
    VtdTranslation t{};
    EXPECT_EQ(h.translate(SID, 0x123456789, VTD_PERM_WRITE, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0x123456000u);
    EXPECT_EQ(t.iova_base, 0x123456000u);
    EXPECT_EQ(t.perm, VTD_PERM_RW);
}

TEST_F(Translate, FourLevelWalk)
{
    h.map(pt, 4, 0x7f12345000, 0xabc000, 3);
    VtdTranslation t{};
    ASSERT_EQ(h.translate(SID, 0x7f12345678, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.iova_base, 0x7f12345000u);
    EXPECT_EQ(t.phys_base, 0xabc000u);
    EXPECT_EQ(t.addr_mask, 0xfffu);
    EXPECT_EQ(t.perm, VTD_PERM_RW);
    EXPECT_EQ(t.domain_id, DID);
    // The neighbour page is not mapped.
    EXPECT_EQ(h.translate(SID, 0x7f12346000, VTD_PERM_READ, &t), VTD_FR_READ);
}

TEST_F(Translate, ThreeLevelWalk)
{
    uint64_t pt3 = h.alloc_page();
    h.set_context(SID + 1, pt3, DID + 1, 3);
    h.map(pt3, 3, 0x40201000, 0x5000, 1);
    VtdTranslation t{};
    ASSERT_EQ(h.translate(SID + 1, 0x40201abc, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0x5000u);
    EXPECT_EQ(t.perm, VTD_PERM_READ);
    EXPECT_EQ(h.translate(SID + 1, 0x40201abc, VTD_PERM_WRITE, &t), VTD_FR_WRITE);
    // Beyond the 39-bit AGAW of a 3-level context.
    EXPECT_EQ(h.translate(SID + 1, 1ull << 39, VTD_PERM_READ, &t), VTD_FR_ADDR_BEYOND_MGAW);
}

TEST(TranslateConfig, FiveLevelWalk)
{
    VtdConfig c = FakeHost::default_config();
    c.aw_bits = 57;
    FakeHost h(8 << 20, c);
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 1, 5);
    h.enable_translation();
    uint64_t iova = (1ull << 56) | 0x1234000;
    h.map(pt, 5, iova, 0x9000, 3);
    VtdTranslation t{};
    ASSERT_EQ(h.translate(0x8, iova + 5, VTD_PERM_WRITE, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0x9000u);
    EXPECT_EQ(h.translate(0x8, 1ull << 57, VTD_PERM_READ, &t), VTD_FR_ADDR_BEYOND_MGAW);
}

// Bits 61:52 and 63 of a second-level entry are ignored: they are never
// part of a table pointer or an output address, at any address width
// (found by the engine fuzzer with a 57-bit MGAW, where the output address
// kept bits 56:52).
TEST(TranslateConfig, IgnoredEntryBitsAreNotAddress)
{
    for (unsigned aw : {48u, 57u}) {
        VtdConfig c = FakeHost::default_config();
        c.aw_bits = aw;
        FakeHost h(8 << 20, c);
        const unsigned levels = aw == 57 ? 5 : 4;
        uint64_t pt = h.alloc_page();
        h.set_context(0x8, pt, 1, levels);
        h.enable_translation();
        const uint64_t iova = 0x40201000;
        h.map(pt, levels, iova, 0x9000, 3);
        const uint64_t ignored = (1ull << 52) | (1ull << 56) | (1ull << 61) | (1ull << 63);
        for (unsigned level = levels; level >= 1; level--) {
            uint64_t a = h.pte_addr(pt, levels, iova, level);
            h.put64(a, h.get64(a) | ignored);
        }
        VtdTranslation t{};
        ASSERT_EQ(h.translate(0x8, iova, VTD_PERM_WRITE, &t), VTD_FR_NONE) << "aw " << aw;
        EXPECT_EQ(t.phys_base, 0x9000u) << "aw " << aw;
        // The replay walk reads the same entries.
        std::vector<uint64_t> phys;
        vtd_engine_walk(
            h.e, 0x8, 0, 1ull << 40,
            [](void *p, const VtdTranslation *l) {
                static_cast<std::vector<uint64_t> *>(p)->push_back(l->phys_base);
            },
            &phys);
        EXPECT_EQ(phys, std::vector<uint64_t>{0x9000}) << "aw " << aw;
    }
}

TEST(TranslateConfig, ContextLevelsMustBeInSagaw)
{
    VtdConfig c = FakeHost::default_config();
    c.aw_bits = 39;
    FakeHost h(8 << 20, c);
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 1, 4);  // 4-level not supported with SAGAW = 39-bit only
    h.enable_translation();
    EXPECT_EQ(h.translate(0x8, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_INV);
}

TEST_F(Translate, Superpages)
{
    h.map(pt, 4, 0x40000000, 0x80000000, 3, 3);  // 1 GiB
    h.map(pt, 4, 0x200000, 0x600000, 1, 2);      // 2 MiB read-only
    VtdTranslation t{};
    ASSERT_EQ(h.translate(SID, 0x4abcdef0, VTD_PERM_WRITE, &t), VTD_FR_NONE);
    EXPECT_EQ(t.iova_base, 0x40000000u);
    EXPECT_EQ(t.phys_base, 0x80000000u);
    EXPECT_EQ(t.addr_mask, (1u << 30) - 1);
    ASSERT_EQ(h.translate(SID, 0x3fffff, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.iova_base, 0x200000u);
    EXPECT_EQ(t.phys_base, 0x600000u);
    EXPECT_EQ(t.addr_mask, (1u << 21) - 1);
    EXPECT_EQ(t.perm, VTD_PERM_READ);
    EXPECT_EQ(h.translate(SID, 0x3fffff, VTD_PERM_WRITE, &t), VTD_FR_WRITE);
    // Second lookup of a superpage is an IOTLB hit.
    std::string s = h.stats();
    uint64_t walks = json_counter(s, "translate", "page_walks");
    ASSERT_EQ(h.translate(SID, 0x4fffffff, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(json_counter(h.stats(), "translate", "page_walks"), walks);
}

TEST(TranslateConfig, OneGigPageNeedsSllps)
{
    VtdConfig c = FakeHost::default_config();
    c.superpage_1g = false;
    FakeHost h(8 << 20, c);
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 1, 4);
    h.enable_translation();
    h.map(pt, 4, 0x40000000, 0x80000000, 3, 3);
    EXPECT_EQ(h.translate(0x8, 0x40000000, VTD_PERM_READ), VTD_FR_PAGING_ENTRY_RSVD);
}

// ECAP.SC: SNP in a leaf is accepted (and changes nothing: every DMA
// snoops); in a non-leaf entry it stays reserved.  Without SC it is
// reserved everywhere (Translate.FaultReasons).
TEST(TranslateConfig, SnoopControlAcceptsSnpInLeaves)
{
    VtdConfig c = FakeHost::default_config();
    c.snoop_control = true;
    FakeHost h(8 << 20, c);
    EXPECT_TRUE(h.mmio64(0x10) & 1ull << 7) << "ECAP.SC";
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 1, 4);
    h.enable_translation();
    h.map(pt, 4, 0x1000, 0x5000 | 1ull << 11, 3);
    h.map(pt, 4, 0x400000, 0x600000 | 1ull << 11, 3, 2);  // 2 MiB leaf
    VtdTranslation t{};
    ASSERT_EQ(h.translate(0x8, 0x1000, VTD_PERM_WRITE, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0x5000u);
    ASSERT_EQ(h.translate(0x8, 0x400000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0x600000u);
    // A non-leaf entry with SNP (a region not translated before).
    h.map(pt, 4, 0x40001000, 0x7000, 3);
    uint64_t l2 = h.pte_addr(pt, 4, 0x40001000, 2);
    h.put64(l2, h.get64(l2) | 1ull << 11);
    EXPECT_EQ(h.translate(0x8, 0x40001000, VTD_PERM_READ), VTD_FR_PAGING_ENTRY_RSVD);

    FakeHost plain(8 << 20, FakeHost::default_config());
    EXPECT_FALSE(plain.mmio64(0x10) & 1ull << 7) << "no ECAP.SC by default";
}

TEST_F(Translate, PermissionsAreAndedAcrossLevels)
{
    h.map(pt, 4, 0x1000, 0x2000, 3);
    // Make the level-2 entry read-only: the 4 KiB leaf says RW.
    uint64_t l2 = h.pte_addr(pt, 4, 0x1000, 2);
    h.put64(l2, (h.get64(l2) & ~3ull) | 1);
    VtdTranslation t{};
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.perm, VTD_PERM_READ);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_WRITE, &t), VTD_FR_WRITE);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_RW, &t), VTD_FR_WRITE);
    // Under the read-only level-2 entry a write-only leaf grants nothing.
    h.map(pt, 4, 0x5000, 0x6000, 2);
    EXPECT_EQ(h.translate(SID, 0x5000, VTD_PERM_NONE, &t), VTD_FR_READ);
    h.map(pt, 4, 0x40005000, 0x6000, 2);  // write-only leaf, RW above
    EXPECT_EQ(h.translate(SID, 0x40005000, VTD_PERM_READ, &t), VTD_FR_READ);
    EXPECT_EQ(h.translate(SID, 0x40005000, VTD_PERM_NONE, &t), VTD_FR_NONE)
        << "replay asks for any";
    EXPECT_EQ(t.perm, VTD_PERM_WRITE);
}

TEST_F(Translate, PassThrough)
{
    h.set_context(SID + 2, 0, 9, 4, 2);
    VtdTranslation t{};
    ASSERT_EQ(h.translate(SID + 2, 0xfeedf00d, VTD_PERM_RW, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0xfeedf000u);
    EXPECT_TRUE(vtd_engine_is_pass_through(h.e, SID + 2));
    EXPECT_FALSE(vtd_engine_is_pass_through(h.e, SID));
    // SLPTPTR is ignored, AW is not: it must name a supported width ...
    h.set_context(SID + 3, 0, 9, 2, 2);  // AW 000b: 30 bits, not in SAGAW
    EXPECT_EQ(h.translate(SID + 3, 0x1000, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_INV);
    EXPECT_FALSE(vtd_engine_is_pass_through(h.e, SID + 3));
    // ... and requests above 2^AW fault.
    EXPECT_EQ(h.translate(SID + 2, 1ull << 48, VTD_PERM_READ), VTD_FR_ADDR_BEYOND_MGAW);
    EXPECT_EQ(h.translate(SID + 2, (1ull << 48) - 1, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, (1ull << 48) - 0x1000);
}

TEST(TranslateConfig, PassThroughNeedsEcapPt)
{
    VtdConfig c = FakeHost::default_config();
    c.pass_through = false;
    FakeHost h(8 << 20, c);
    h.set_context(0x8, 0, 1, 4, 2);
    h.enable_translation();
    EXPECT_EQ(h.translate(0x8, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_INV);
    EXPECT_FALSE(vtd_engine_is_pass_through(h.e, 0x8));
}

TEST_F(Translate, DeviceTlbTranslationTypeNeedsEcapDt)
{
    h.set_context(SID, pt, DID, 4, 1);
    EXPECT_EQ(h.translate(SID, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_INV);
    h.set_context(SID + 3, pt, DID, 4, 3);  // reserved TT
    EXPECT_EQ(h.translate(SID + 3, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_INV);

    VtdConfig c = FakeHost::default_config();
    c.device_iotlb = true;
    FakeHost dt(8 << 20, c);
    uint64_t p = dt.alloc_page();
    dt.set_context(0x8, p, 1, 4, 1);
    dt.map(p, 4, 0x3000, 0x4000, 3);
    dt.enable_translation();
    VtdTranslation t{};
    EXPECT_EQ(dt.translate(0x8, 0x3000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0x4000u);
}

// Every fault reason the legacy-mode translation path can produce.
TEST_F(Translate, FaultReasons)
{
    // 0x1: root entry not present (bus 5 has none).
    EXPECT_EQ(h.translate(0x0500, 0, VTD_PERM_READ), VTD_FR_ROOT_ENTRY_P);
    // 0x2: context entry not present.
    EXPECT_EQ(h.translate(SID + 4, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_P);
    // 0x3: AW not supported (AW = 4 -> 6 levels).
    h.set_context(SID + 5, pt, DID, 6);
    EXPECT_EQ(h.translate(SID + 5, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_INV);
    // 0x4: beyond the 48-bit AGAW.
    EXPECT_EQ(h.translate(SID, 1ull << 48, VTD_PERM_READ), VTD_FR_ADDR_BEYOND_MGAW);
    // 0x5 / 0x6: not present second-level entries.
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_WRITE), VTD_FR_WRITE);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_READ);
    // 0x3 too: the table SLPTPTR names is outside RAM ...
    h.set_context(SID + 6, 0x7fff000000ull, DID + 6, 4);
    EXPECT_EQ(h.translate(SID + 6, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_INV);
    // ... 0x7: a table an entry's ADDR names is.
    uint64_t p2 = h.alloc_page();
    h.set_context(SID + 7, p2, DID + 7, 4);
    h.put64(p2, 0x7fff000000ull | 3);  // level-4 entry points outside RAM
    EXPECT_EQ(h.translate(SID + 7, 0, VTD_PERM_READ), VTD_FR_PAGING_ENTRY_INV);
    // 0xa: reserved bit in a present root entry.
    h.set_context(0x0600, pt, DID, 4);
    h.put64(h.root + 6 * 16, h.get64(h.root + 6 * 16) | 0x10);
    EXPECT_EQ(h.translate(0x0600, 0, VTD_PERM_READ), VTD_FR_ROOT_ENTRY_RSVD);
    h.put64(h.root + 6 * 16, h.get64(h.root + 6 * 16) & ~0x10ull);
    h.put64(h.root + 6 * 16 + 8, 1);  // upper half reserved in legacy mode
    EXPECT_EQ(h.translate(0x0600, 0, VTD_PERM_READ), VTD_FR_ROOT_ENTRY_RSVD);
    // 0x9: context table outside RAM.
    h.put64(h.root + 7 * 16, 0x7fff000000ull | 1);
    EXPECT_EQ(h.translate(0x0700, 0, VTD_PERM_READ), VTD_FR_CONTEXT_TABLE_INV);
    // 0xb: reserved bits in a present context entry (low and high).
    h.set_context(SID + 8, pt, DID, 4, 0, false, 0x10);
    EXPECT_EQ(h.translate(SID + 8, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_RSVD);
    h.set_context(SID + 9, pt, DID, 4, 0, false, 0, 1ull << 40);
    EXPECT_EQ(h.translate(SID + 9, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_RSVD);
    h.set_context(SID + 10, pt | (1ull << 50), DID, 4);  // pointer beyond HAW
    EXPECT_EQ(h.translate(SID + 10, 0, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_RSVD);
    // 0xc: reserved bits in second-level entries.
    h.map(pt, 4, 0x10000, 0x20000, 3);
    uint64_t leaf = h.pte_addr(pt, 4, 0x10000, 1);
    h.put64(leaf, h.get64(leaf) | (1ull << 11));  // SNP without ECAP.SC
    EXPECT_EQ(h.translate(SID, 0x10000, VTD_PERM_READ), VTD_FR_PAGING_ENTRY_RSVD);
    h.map(pt, 4, 0x11000, 0x20000 | (1ull << 49), 3);  // address beyond HAW
    EXPECT_EQ(h.translate(SID, 0x11000, VTD_PERM_READ), VTD_FR_PAGING_ENTRY_RSVD);
    h.map(pt, 4, 0x600000, 0x801000, 3, 2);  // 2 MiB leaf with low address bits
    EXPECT_EQ(h.translate(SID, 0x600000, VTD_PERM_READ), VTD_FR_PAGING_ENTRY_RSVD);
    uint64_t l4 = h.pte_addr(pt, 4, 0x10000, 4);
    uint64_t l4v = h.get64(l4);
    h.put64(l4, l4v | 0x80);  // PS in a PML4-level entry
    EXPECT_EQ(h.translate(SID, 0x12000, VTD_PERM_READ), VTD_FR_PAGING_ENTRY_RSVD);
    h.put64(l4, l4v);
    // Ignored bits (52-61, 63) are not reserved.
    h.map(pt, 4, 0x13000, 0x20000 | (0x3ffull << 52) | (1ull << 63), 3);
    VtdTranslation t{};
    EXPECT_EQ(h.translate(SID, 0x13000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0x20000u);
}

TEST(TranslateRoot, RootTableOutsideRam)
{
    FakeHost h;
    h.w64(RTADDR, 0x7fff000000ull);
    h.w32(GCMD, SRTP);
    h.w32(GCMD, TE);
    EXPECT_EQ(h.translate(0x10, 0, VTD_PERM_READ), VTD_FR_ROOT_TABLE_INV);
}

TEST_F(Translate, SrtpSwitchesRootTable)
{
    h.map(pt, 4, 0x1000, 0x2000, 3);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    // RTADDR alone does not take effect: SRTP latches it.
    uint64_t other = h.alloc_page();
    h.w64(RTADDR, other);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    h.w32(GCMD, TE | SRTP);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_ROOT_ENTRY_P);
}

TEST_F(Translate, WalkReplaysPresentLeaves)
{
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.map(pt, 4, 0x3000, 0xb000, 1);
    h.map(pt, 4, 0x400000, 0xc00000, 2, 2);
    h.map(pt, 4, 0x8000000, 0xd000, 3);  // outside the walked range
    std::vector<VtdTranslation> seen;
    auto cb = [](void *ctx, const VtdTranslation *t) {
        static_cast<std::vector<VtdTranslation> *>(ctx)->push_back(*t);
    };
    ASSERT_EQ(vtd_engine_walk(h.e, SID, 0, 0x1000000, cb, &seen), 0);
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[0].iova_base, 0x1000u);
    EXPECT_EQ(seen[0].phys_base, 0xa000u);
    EXPECT_EQ(seen[1].iova_base, 0x3000u);
    EXPECT_EQ(seen[1].perm, VTD_PERM_READ);
    EXPECT_EQ(seen[2].iova_base, 0x400000u);
    EXPECT_EQ(seen[2].addr_mask, 0x1fffffu);
    EXPECT_EQ(seen[2].perm, VTD_PERM_WRITE);
    EXPECT_EQ(vtd_engine_walk(h.e, 0x0500, 0, ~0ull, cb, &seen), VTD_FR_ROOT_ENTRY_P);
    // A walk neither fills the IOTLB nor records faults.
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(json_counter(h.stats(), "iotlb", "inserts"), 0u);
}

TEST_F(Translate, WalkOfSelfReferencingTablesTerminates)
{
    // Every level-4, -3 and -2 entry points back at the top table: a cycle.
    for (unsigned i = 0; i < 512; i++)
        h.put64(pt + i * 8, pt | 3);
    uint64_t leaves = 0;
    auto cb = [](void *ctx, const VtdTranslation *) { ++*static_cast<uint64_t *>(ctx); };
    EXPECT_EQ(vtd_engine_walk(h.e, SID, 0, ~0ull, cb, &leaves), VTD_WALK_TRUNCATED);
    EXPECT_GT(leaves, 0u);
    EXPECT_EQ(json_counter(h.stats(), "replay", "truncated"), 1u);
}

// After an IOTLB miss the next translation asks the host to prefetch the
// level-1 entry its walk will read (found through the cached
// paging-structure entry).  The hint must name exactly that entry, and
// the translation must not depend on it.
TEST(TranslatePrefetch, MissRunPrefetchesTheEntryTheWalkReads)
{
    FakeHost h;
    uint64_t pt = h.domain_with_run(0x8, 4, 8, 0x200000);
    h.enable_qi();
    for (uint64_t p = 0; p < 8; p++) {
        VtdTranslation t{};
        ASSERT_EQ(h.translate(0x8, p * PAGE, VTD_PERM_READ, &t), VTD_FR_NONE);
        EXPECT_EQ(t.phys_base, 0x200000 + p * PAGE);
    }
    h.submit(FakeHost::iotlb_desc(2, 4), 0);  // domain 4: every page misses again
    h.prefetches.clear();
    for (uint64_t p = 0; p < 8; p++) {
        VtdTranslation t{};
        ASSERT_EQ(h.translate(0x8, p * PAGE, VTD_PERM_READ, &t), VTD_FR_NONE);
        EXPECT_EQ(t.phys_base, 0x200000 + p * PAGE);
    }
    // The first lookup after the hits misses without a hint; every later
    // one follows a miss.
    ASSERT_GE(h.prefetches.size(), 7u);
    std::vector<uint64_t> expect;
    for (uint64_t p = 8 - h.prefetches.size(); p < 8; p++)
        expect.push_back(h.pte_addr(pt, 4, p * PAGE, 1));
    EXPECT_EQ(h.prefetches, expect);
    // Hits do not prefetch.
    h.prefetches.clear();
    for (uint64_t p = 0; p < 8; p++)
        h.translate(0x8, ((p * 3) % 8) * PAGE, VTD_PERM_READ);
    EXPECT_LE(h.prefetches.size(), 1u) << "only a lookup right after a miss may hint";
}

// No translation may produce an address in the interrupt range: such a
// request is blocked (0xe), as it would reach the APICs unremapped.  The
// rest of a large leaf over the range still translates, a page at a time.
TEST_F(Translate, OutputInTheInterruptRangeIsBlocked)
{
    h.w32(FECTL, 0);
    h.map(pt, 4, 0x1000, 0xfee00000ull, 3);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_WRITE), VTD_FR_INTERRUPT_ADDR);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_INTERRUPT_ADDR) << "the IOTLB too";
    EXPECT_EQ((h.mmio64(h.frcd + 8) >> 32) & 0xff, uint64_t{VTD_FR_INTERRUPT_ADDR});
    // A 2 MiB leaf at 0xfee00000 covers 0xfef00000-0xfeffffff too.
    h.map(pt, 4, 0x40000000, 0xfee00000ull, 3, 2);
    VtdTranslation t{};
    EXPECT_EQ(h.translate(SID, 0x400ff000, VTD_PERM_READ), VTD_FR_INTERRUPT_ADDR);
    ASSERT_EQ(h.translate(SID, 0x40100010, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.iova_base, 0x40100000u);
    EXPECT_EQ(t.phys_base, 0xfef00000u);
    EXPECT_EQ(t.addr_mask, 0xfffu) << "not the whole leaf, which covers the range";
    ASSERT_EQ(h.translate(SID, 0x40100010, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.addr_mask, 0xfffu) << "nor from the recent-translation cache";
    EXPECT_EQ(h.translate(SID, 0x40000000, VTD_PERM_READ), VTD_FR_INTERRUPT_ADDR);
}
