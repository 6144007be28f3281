// SPDX-License-Identifier: GPL-2.0-or-later
// IOTLB and context cache: a cached translation is used until the guest
// invalidates it (stale before, never after) at each granularity, by
// registers and by queued invalidation; bounded capacity with eviction;
// notification callbacks.
#include "fake_host.hpp"

using namespace vtdtest;

namespace {

constexpr uint16_t SID = 0x0020, SID2 = 0x0028;
constexpr uint16_t DID = 5, DID2 = 6;

// Parameterised on the invalidation interface: queued or register-based.
struct Staleness : ::testing::TestWithParam<bool> {
    FakeHost h;
    uint64_t pt = 0, pt2 = 0, status = 0;
    bool qi() const { return GetParam(); }

    void SetUp() override
    {
        pt = h.alloc_page();
        pt2 = h.alloc_page();
        status = h.alloc_page();
        h.set_context(SID, pt, DID, 4);
        h.set_context(SID2, pt2, DID2, 4);
        h.enable_translation();
        if (qi())
            h.enable_qi();
    }
    uint64_t phys(uint16_t sid, uint64_t iova)
    {
        VtdTranslation t{};
        if (h.translate(sid, iova, VTD_PERM_READ, &t) != VTD_FR_NONE)
            return ~0ull;
        return t.phys_base + (iova & t.addr_mask);
    }
    void wait() { h.submit(FakeHost::wait_desc(true, false, false, 1), status); }
    void iotlb_global()
    {
        if (qi()) {
            h.submit(FakeHost::iotlb_desc(1), 0);
            wait();
        } else {
            h.w64(h.iotlb, (1ull << 63) | (1ull << 60));
            EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 1u) << "IAIG";
        }
    }
    void iotlb_domain(uint16_t did)
    {
        if (qi()) {
            h.submit(FakeHost::iotlb_desc(2, did), 0);
        } else {
            h.w64(h.iotlb, (1ull << 63) | (2ull << 60) | (uint64_t{did} << 32));
            EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 2u);
        }
    }
    void iotlb_page(uint16_t did, uint64_t addr, unsigned am, bool ih = false)
    {
        if (qi()) {
            h.submit(FakeHost::iotlb_desc(3, did), FakeHost::iotlb_addr(addr, am, ih));
        } else {
            h.w64(h.iva, FakeHost::iotlb_addr(addr, am, ih));
            h.w64(h.iotlb, (1ull << 63) | (3ull << 60) | (uint64_t{did} << 32));
            EXPECT_EQ(h.mmio64(h.iotlb) >> 63, 0u) << "IVT clears when done";
            // page-selective, or domain-wide for a range too large to probe
            EXPECT_GE((h.mmio64(h.iotlb) >> 57) & 3, 2u);
        }
    }
    void context(unsigned g, uint16_t did = 0, uint16_t sid = 0, unsigned fm = 0)
    {
        if (qi()) {
            h.submit(FakeHost::cc_desc(g, did, sid, fm), 0);
        } else {
            h.w64(CCMD, (1ull << 63) | (uint64_t{g} << 61) | (uint64_t{fm} << 32) |
                            (uint64_t{sid} << 16) | did);
            EXPECT_EQ(h.mmio64(CCMD) >> 63, 0u);
            EXPECT_EQ((h.mmio64(CCMD) >> 59) & 3, g) << "CAIG";
        }
    }
    // Change the mapping of `iova` in place, as a guest that forgot (or has
    // not yet done) the invalidation would.
    void remap(uint64_t top, uint64_t iova, uint64_t new_phys)
    {
        h.put64(h.pte_addr(top, 4, iova, 1), new_phys | 3);
    }
};

}  // namespace

TEST_P(Staleness, GlobalInvalidation)
{
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.map(pt2, 4, 0x1000, 0xb000, 3);
    EXPECT_EQ(phys(SID, 0x1000), 0xa000u);
    EXPECT_EQ(phys(SID2, 0x1000), 0xb000u);
    remap(pt, 0x1000, 0xc000);
    remap(pt2, 0x1000, 0xd000);
    EXPECT_EQ(phys(SID, 0x1000), 0xa000u) << "stale entry used before invalidation";
    EXPECT_EQ(phys(SID2, 0x1000), 0xb000u);
    iotlb_global();
    EXPECT_EQ(phys(SID, 0x1000), 0xc000u) << "never after";
    EXPECT_EQ(phys(SID2, 0x1000), 0xd000u);
    ASSERT_FALSE(h.invals.empty());
    EXPECT_TRUE(h.invals.back().all);
}

TEST_P(Staleness, DomainInvalidation)
{
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.map(pt2, 4, 0x1000, 0xb000, 3);
    phys(SID, 0x1000);
    phys(SID2, 0x1000);
    remap(pt, 0x1000, 0xc000);
    remap(pt2, 0x1000, 0xd000);
    iotlb_domain(DID);
    EXPECT_EQ(phys(SID, 0x1000), 0xc000u);
    EXPECT_EQ(phys(SID2, 0x1000), 0xb000u) << "other domains keep their entries";
    ASSERT_FALSE(h.invals.empty());
    EXPECT_FALSE(h.invals.back().all);
    EXPECT_EQ(h.invals.back().did, DID);
}

TEST_P(Staleness, PageInvalidation)
{
    for (uint64_t p = 0; p < 8; p++)
        h.map(pt, 4, 0x10000 + p * PAGE, 0xa0000 + p * PAGE, 3);
    for (uint64_t p = 0; p < 8; p++)
        phys(SID, 0x10000 + p * PAGE);
    for (uint64_t p = 0; p < 8; p++)
        remap(pt, 0x10000 + p * PAGE, 0xc0000 + p * PAGE);
    iotlb_page(DID, 0x13000, 0);
    for (uint64_t p = 0; p < 8; p++)
        EXPECT_EQ(phys(SID, 0x10000 + p * PAGE), (p == 3 ? 0xc0000u : 0xa0000u) + p * PAGE) << p;
    // AM = 2: four pages at 0x14000 (aligned to 16 KiB), IH set.
    iotlb_page(DID, 0x14000, 2, true);
    for (uint64_t p = 0; p < 8; p++)
        EXPECT_EQ(phys(SID, 0x10000 + p * PAGE),
                  (p == 3 || p >= 4 ? 0xc0000u : 0xa0000u) + p * PAGE)
            << p;
    ASSERT_FALSE(h.invals.empty());
    EXPECT_EQ(h.invals.back().iova, 0x14000u);
    EXPECT_EQ(h.invals.back().size, 4 * PAGE);
    // Page invalidation of another domain leaves ours alone.
    remap(pt, 0x10000, 0xe0000);
    iotlb_page(DID2, 0x10000, 3);
    EXPECT_EQ(phys(SID, 0x10000), 0xa0000u);
}

TEST_P(Staleness, PageInvalidationHitsCoveringSuperpage)
{
    h.map(pt, 4, 0x200000, 0x400000, 3, 2);
    EXPECT_EQ(phys(SID, 0x234000), 0x434000u);
    h.put64(h.pte_addr(pt, 4, 0x200000, 2), 0x800000 | 3 | 0x80);
    EXPECT_EQ(phys(SID, 0x234000), 0x434000u);
    iotlb_page(DID, 0x3ff000, 0);  // any page inside the 2 MiB entry
    EXPECT_EQ(phys(SID, 0x234000), 0x834000u);
}

TEST_P(Staleness, LargeAddressMaskInvalidatesWholeRange)
{
    for (uint64_t p = 0; p < 64; p++)
        h.map(pt, 4, 0x40000000 + p * PAGE * 37, 0x100000 + p * PAGE, 3);
    for (uint64_t p = 0; p < 64; p++)
        phys(SID, 0x40000000 + p * PAGE * 37);
    for (uint64_t p = 0; p < 64; p++)
        remap(pt, 0x40000000 + p * PAGE * 37, 0x200000 + p * PAGE);
    iotlb_page(DID, 0x40000000, 18);  // 1 GiB
    for (uint64_t p = 0; p < 64; p++)
        EXPECT_EQ(phys(SID, 0x40000000 + p * PAGE * 37), 0x200000 + p * PAGE);
}

TEST_P(Staleness, ContextCacheInvalidation)
{
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.map(pt2, 4, 0x1000, 0xb000, 3);
    EXPECT_EQ(phys(SID, 0x1000), 0xa000u);
    // Move SID to pt2 under DID2.
    h.set_context(SID, pt2, DID2, 4);
    EXPECT_EQ(phys(SID, 0x1000), 0xa000u) << "cached context still used";
    context(3, DID, SID, 0);  // device-selective
    EXPECT_EQ(phys(SID, 0x1000), 0xb000u);
    ASSERT_FALSE(h.ctx_invals.empty());
    EXPECT_FALSE(h.ctx_invals.back().all);
    EXPECT_EQ(h.ctx_invals.back().sid, SID);
    // Domain-selective and global.
    h.set_context(SID, pt, DID, 4);
    context(2, DID);  // SID is cached under DID2: untouched
    EXPECT_EQ(phys(SID, 0x1000), 0xb000u);
    context(2, DID2);
    EXPECT_EQ(phys(SID, 0x1000), 0xa000u);
    h.set_context(SID, 0, 0, 4, 0);
    h.put64(h.context_addr(SID), 0);  // not present
    context(1);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_P);
    EXPECT_TRUE(h.ctx_invals.back().all);
}

TEST_P(Staleness, ContextFunctionMask)
{
    // FM = 2 ignores the low two bits of the function number... of SID's
    // function bits 2:1: SIDs 0x20, 0x22, 0x24, 0x26 share 0x20 & ~6.
    uint64_t pt3 = h.alloc_page();
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.map(pt3, 4, 0x1000, 0xf000, 3);
    for (uint16_t s : {0x20, 0x22, 0x26, 0x21})
        h.set_context(s, pt, DID, 4);
    for (uint16_t s : {0x20, 0x22, 0x26, 0x21})
        EXPECT_EQ(phys(s, 0x1000), 0xa000u);
    for (uint16_t s : {0x20, 0x22, 0x26, 0x21})
        h.set_context(s, pt3, 9, 4);
    context(3, DID, 0x24, 2);
    EXPECT_EQ(phys(0x20, 0x1000), 0xf000u);
    EXPECT_EQ(phys(0x22, 0x1000), 0xf000u);
    EXPECT_EQ(phys(0x26, 0x1000), 0xf000u);
    EXPECT_EQ(phys(0x21, 0x1000), 0xa000u) << "function bit 0 is not masked by FM=2";
    EXPECT_EQ(h.ctx_invals.back().mask, 6u);
}

// The paging-structure cache keeps each 2 MiB region's level-1 table: a
// new table behind an unchanged address is seen after a page-selective
// invalidation without IH or a domain invalidation, not after one with IH
// (only leaves changed, says the guest).
TEST_P(Staleness, PagingStructureCache)
{
    h.map(pt, 4, 0x10000, 0xa0000, 3);
    h.map(pt, 4, 0x11000, 0xa1000, 3);
    EXPECT_EQ(phys(SID, 0x10000), 0xa0000u);
    EXPECT_EQ(phys(SID, 0x11000), 0xa1000u);
    EXPECT_EQ(json_counter(h.stats(), "translate", "paging_entries_read"), 5u)
        << "the second walk starts at the cached level-1 table";
    auto swap_table = [&](uint64_t phys) {
        uint64_t l1 = h.alloc_page();
        h.put64(l1 + 0x10 * 8, 0xc0000 | 3);
        h.put64(l1 + 0x11 * 8, phys | 3);
        h.put64(h.pte_addr(pt, 4, 0x10000, 2), l1 | 3);
    };
    swap_table(0xc1000);
    iotlb_page(DID, 0x11000, 0, true);  // IH: the old level-1 table is kept
    EXPECT_EQ(phys(SID, 0x11000), 0xa1000u);
    iotlb_page(DID, 0x11000, 0);
    EXPECT_EQ(phys(SID, 0x11000), 0xc1000u);
    EXPECT_EQ(phys(SID, 0x10000), 0xa0000u) << "leaf still cached";
    swap_table(0xd1000);
    iotlb_domain(DID);
    EXPECT_EQ(phys(SID, 0x11000), 0xd1000u);
    EXPECT_EQ(phys(SID, 0x10000), 0xc0000u);
}

// A page-selective invalidation without IH flushes the paging-structure
// entries used for its range, and the upper-level ones among them cover
// other 2 MiB regions too: A = 0, B1 = 0x200000 and B2 = 0x201000 share
// one level-3 entry.  A and B1 are translated (B1's region caches its
// level-1 table), B2 never; the guest points the level-3 entry at a new
// level-2 table that maps B2 elsewhere and invalidates A only.  B2 must
// come from the new tables: it was never cached, so nothing may answer
// from the old subtree.
TEST_P(Staleness, PageInvalidationWithoutIhDropsOtherRegionsTables)
{
    constexpr uint64_t A = 0x0, B1 = 0x200000, B2 = 0x201000;
    h.map(pt, 4, A, 0x500000, 3);
    h.map(pt, 4, B1, 0x501000, 3);
    h.map(pt, 4, B2, 0x502000, 3);
    EXPECT_EQ(phys(SID, A), 0x500000u);
    EXPECT_EQ(phys(SID, B1), 0x501000u);

    uint64_t l2 = h.alloc_page(), l1 = h.alloc_page();
    h.put64(l2 + ((B2 >> 21) & 511) * 8, l1 | 3);
    h.put64(l1 + ((B2 >> 12) & 511) * 8, 0x600000 | 3);
    h.put64(h.pte_addr(pt, 4, A, 3), l2 | 3);  // the level-3 entry A, B1, B2 share
    iotlb_page(DID, A, 0, false);
    if (qi())
        wait();

    EXPECT_EQ(phys(SID, B2), 0x600000u) << "answered from the old level-1 table";
    EXPECT_EQ(h.translate(SID, A, VTD_PERM_READ), VTD_FR_READ) << "A is unmapped now";
}

TEST_P(Staleness, NotPresentIsNotCached)
{
    // Caching mode or not, a fault is not cached: mapping then invalidating
    // the page makes it visible, and with CM the guest does exactly that.
    EXPECT_EQ(h.translate(SID, 0x5000, VTD_PERM_READ), VTD_FR_READ);
    h.map(pt, 4, 0x5000, 0xa000, 3);
    EXPECT_EQ(phys(SID, 0x5000), 0xa000u);
}

INSTANTIATE_TEST_SUITE_P(Interface, Staleness, ::testing::Values(false, true),
                         [](const auto &info) { return info.param ? "Queued" : "Register"; });

TEST(RegisterInvalidation, InvalidGranularityReportsZero)
{
    FakeHost h;
    h.w64(CCMD, 1ull << 63);  // CIRG = 0
    EXPECT_EQ(h.mmio64(CCMD) >> 59, 0u);
    h.w64(h.iotlb, 1ull << 63);  // IIRG = 0
    EXPECT_EQ(h.mmio64(h.iotlb) >> 57, 0u);
    h.w64(h.iva, 19);  // AM above MAMV
    h.w64(h.iotlb, (1ull << 63) | (3ull << 60));
    EXPECT_EQ(h.mmio64(h.iotlb) >> 63, 0u);
    EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 0u) << "IAIG 0";
    EXPECT_EQ(json_counter(h.stats(), "register_based", "invalid"), 3u);
}

TEST(RegisterInvalidation, CommandInTwoHalves)
{
    FakeHost h;
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 2, 4);
    h.enable_translation();
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.translate(0x8, 0x1000, VTD_PERM_READ);
    h.put64(h.pte_addr(pt, 4, 0x1000, 1), 0xb000 | 3);
    // Low dword (DID) first, then the high dword with IVT/IIRG.
    uint64_t cmd = (1ull << 63) | (2ull << 60) | (2ull << 32);
    h.w32(h.iotlb, static_cast<uint32_t>(cmd));
    h.w32(h.iotlb + 4, cmd >> 32);
    VtdTranslation t{};
    ASSERT_EQ(h.translate(0x8, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0xb000u);
}

TEST(Capacity, BoundedIotlbEvictsIndividually)
{
    VtdConfig c = FakeHost::default_config();
    c.iotlb_entries = 64;
    c.context_entries = 16;
    FakeHost h(64 << 20, c);
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 1, 4);
    h.enable_translation();
    h.map_run(pt, 1000, 0x100000);
    for (uint64_t p = 0; p < 1000; p++)
        ASSERT_EQ(h.translate(0x8, p * PAGE, VTD_PERM_READ), VTD_FR_NONE);
    std::string s = h.stats();
    uint64_t entries = json_counter(s, "iotlb", "entries");
    EXPECT_LE(entries, 64u);
    EXPECT_GE(entries, 32u) << "not flushed wholesale";
    EXPECT_EQ(json_counter(s, "iotlb", "evictions"), 1000u - entries);
    // A hot page survives a stream of cold ones (CLOCK gives it a second chance).
    uint64_t hits_before = json_counter(s, "iotlb", "hits");
    for (uint64_t p = 0; p < 200; p++) {
        h.translate(0x8, 999 * PAGE, VTD_PERM_READ);
        h.translate(0x8, (p % 500) * PAGE, VTD_PERM_READ);
    }
    EXPECT_GT(json_counter(h.stats(), "iotlb", "hits") - hits_before, 150u);
    // Context cache bounded too.
    for (uint16_t sid = 0; sid < 100; sid++)
        h.set_context(0x100 + sid, pt, 1, 4);
    for (uint16_t sid = 0; sid < 100; sid++)
        ASSERT_EQ(h.translate(0x100 + sid, 0, VTD_PERM_READ), VTD_FR_NONE);
    s = h.stats();
    EXPECT_LE(json_counter(s, "context_cache", "entries"), 16u);
    EXPECT_GT(json_counter(s, "context_cache", "evictions"), 0u);
}

TEST(CachingMode, MapAndUnmapPagesAreClassified)
{
    VtdConfig c = FakeHost::default_config();
    c.caching_mode = true;
    FakeHost h(8 << 20, c);
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 1, 4);
    h.enable_translation();
    h.enable_qi();
    EXPECT_TRUE(h.cap & (1ull << 7));
    h.translate(0x8, 0x9000, VTD_PERM_READ);  // fault: learns the domain's tables
    // Map four pages, invalidate (as a CM guest does on map).
    for (uint64_t p = 0; p < 4; p++)
        h.map(pt, 4, 0x10000 + p * PAGE, 0x20000 + p * PAGE, 3);
    h.submit(FakeHost::iotlb_desc(3, 1), FakeHost::iotlb_addr(0x10000, 2));
    EXPECT_EQ(h.translate(0x8, 0x11000, VTD_PERM_READ), VTD_FR_NONE);
    // Unmap them, invalidate.
    for (uint64_t p = 0; p < 4; p++)
        h.put64(h.pte_addr(pt, 4, 0x10000 + p * PAGE, 1), 0);
    h.submit(FakeHost::iotlb_desc(3, 1), FakeHost::iotlb_addr(0x10000, 2));
    EXPECT_EQ(h.translate(0x8, 0x11000, VTD_PERM_READ), VTD_FR_READ);
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "pages", "mapped"), 4u);
    EXPECT_EQ(json_counter(s, "pages", "unmapped"), 4u);
    EXPECT_EQ(h.invals.size(), 2u);
}

// AM and ADDR only matter for page-selective requests: a global or domain
// request with any AM works (and, under UBSan, shifts nothing out of range).
TEST(RegisterInvalidation, AddressMaskIgnoredOutsidePageSelective)
{
    FakeHost h;
    h.w64(h.iva, 0x3f);
    h.w64(h.iotlb, (1ull << 63) | (1ull << 60));
    EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 1u);
    h.w64(h.iotlb, (1ull << 63) | (2ull << 60));
    EXPECT_EQ((h.mmio64(h.iotlb) >> 57) & 3, 2u);
    h.enable_qi();
    h.submit(FakeHost::iotlb_desc(1), 0x3f);
    h.submit(FakeHost::iotlb_desc(2, 1), 0xfffff000 | 0x3f);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(h.mmio64(IQH) >> 4, 2u);
}

// The per-thread recent-translation cache in front of the context cache and
// the IOTLB must never hold what they no longer hold.
namespace {

struct Recent : ::testing::Test {
    static VtdConfig config()
    {
        VtdConfig c = FakeHost::default_config();
        c.iotlb_entries = 16;
        return c;
    }
    Recent() : h(64 << 20, config())
    {
        pt = h.alloc_page();
        h.set_context(0x8, pt, 1, 4);
        h.enable_translation();
    }
    uint64_t phys(uint64_t iova)
    {
        VtdTranslation t{};
        EXPECT_EQ(h.translate(0x8, iova, VTD_PERM_READ, &t), VTD_FR_NONE);
        return t.phys_base;
    }
    FakeHost h;
    uint64_t pt = 0;
};

}  // namespace

TEST_F(Recent, RepeatedTranslationCountsAsIotlbHit)
{
    h.map(pt, 4, 0x10000, 0xa0000, 3);
    EXPECT_EQ(phys(0x10000), 0xa0000u);
    for (int i = 0; i < 10; i++)
        EXPECT_EQ(phys(0x10000), 0xa0000u);
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "iotlb", "hits"), 10u);
    EXPECT_EQ(json_counter(s, "iotlb", "misses"), 1u);
    EXPECT_EQ(json_counter(s, "translate", "requests"), 11u);
    EXPECT_EQ(json_counter(s, "translate", "page_walks"), 1u);
}

TEST_F(Recent, EvictionFromIotlbDropsRecentTranslation)
{
    // Pages 64 apart: with the current indexing none of them shares page
    // 0's slot in the recent cache, so only the eviction can drop it there.
    for (uint64_t p = 0; p < 48; p++)
        h.map(pt, 4, p * 64 * PAGE, 0x100000 + p * PAGE, 3);
    EXPECT_EQ(phys(0), 0x100000u);
    // Change the mapping without invalidating: the IOTLB keeps the old one
    // until page 0 is evicted by a stream of other pages.
    h.map(pt, 4, 0, 0x900000, 3);
    EXPECT_EQ(phys(0), 0x100000u);
    for (uint64_t p = 1; p < 48; p++)
        phys(p * 64 * PAGE);
    EXPECT_GT(json_counter(h.stats(), "iotlb", "evictions"), 0u);
    EXPECT_EQ(phys(0), 0x900000u) << "served from the recent cache after eviction";
}

TEST_F(Recent, EnginesDoNotShareRecentTranslations)
{
    FakeHost other(64 << 20, config());
    uint64_t opt = other.alloc_page();
    other.set_context(0x8, opt, 1, 4);
    other.enable_translation();
    h.map(pt, 4, 0x10000, 0xa0000, 3);
    other.map(opt, 4, 0x10000, 0xb0000, 3);
    for (int i = 0; i < 3; i++) {
        VtdTranslation t{};
        EXPECT_EQ(phys(0x10000), 0xa0000u);
        ASSERT_EQ(other.translate(0x8, 0x10000, VTD_PERM_READ, &t), VTD_FR_NONE);
        EXPECT_EQ(t.phys_base, 0xb0000u);
    }
}

TEST_F(Recent, PermissionIsCheckedOnEveryTranslation)
{
    h.map(pt, 4, 0x10000, 0xa0000, 1);  // read-only
    EXPECT_EQ(phys(0x10000), 0xa0000u);
    EXPECT_EQ(h.translate(0x8, 0x10000, VTD_PERM_WRITE), VTD_FR_WRITE);
    EXPECT_EQ(phys(0x10000), 0xa0000u);
}

// A global context-cache invalidation retires every cached context in O(1)
// (an epoch): the next translation reads the context entry again, the
// entries gauge counts only contexts cached since, refills over retired
// slots are not evictions, and only device-selective invalidations count
// entries dropped.
TEST(ContextCacheGlobal, RetiresEveryContextLazily)
{
    FakeHost h;
    uint64_t pt = h.alloc_page(), pt2 = h.alloc_page();
    for (uint16_t sid = 0x8; sid < 0x8 + 16; sid++)
        h.set_context(sid, pt, 1, 4);
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.map(pt2, 4, 0x1000, 0xb000, 3);
    h.enable_translation();
    h.enable_qi();
    VtdTranslation t{};
    for (uint16_t sid = 0x8; sid < 0x8 + 16; sid++)
        ASSERT_EQ(h.translate(sid, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(json_counter(h.stats(), "context_cache", "entries"), 16u);
    uint64_t evictions = json_counter(h.stats(), "context_cache", "evictions");

    h.set_context(0x8, pt2, 2, 4);  // a new domain and tables for 0x8
    h.submit(FakeHost::cc_desc(1), 0);
    h.submit(FakeHost::iotlb_desc(1), 0);
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "context_cache", "entries"), 0u);
    EXPECT_EQ(json_counter(s.substr(s.find("\"invalidations\":")), "context", "entries_dropped"),
              0u);
    ASSERT_EQ(h.translate(0x8, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0xb000u) << "the changed context entry was read again";
    EXPECT_EQ(t.domain_id, 2u);
    ASSERT_EQ(h.translate(0x9, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    s = h.stats();
    EXPECT_EQ(json_counter(s, "context_cache", "entries"), 2u);
    EXPECT_EQ(json_counter(s, "context_cache", "evictions"), evictions);

    h.submit(FakeHost::cc_desc(3, 0, 0x9), 0);  // device-selective: 0x9
    s = h.stats();
    EXPECT_EQ(json_counter(s.substr(s.find("\"invalidations\":")), "context", "entries_dropped"),
              1u);
    EXPECT_EQ(json_counter(s, "context_cache", "entries"), 1u);
}
