// SPDX-License-Identifier: GPL-2.0-or-later
// The IOTLB's scalable-mode keying: entries per (DID, PASID) through
// address-space tags; PASID-selective and page-selective-within-PASID
// invalidation drop what they name and nothing else; a domain's
// invalidations cover all of its PASIDs; IH and the paging-structure
// entries; fills racing invalidations; tags reused when all are taken.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "iotlb.hpp"

using namespace viommu::vtd;

namespace {

struct PasidIotlb : ::testing::Test {
    Iotlb tlb{4096};

    void fill(uint16_t did, uint32_t pasid, uint64_t addr, uint64_t phys, bool nested = false)
    {
        auto s = tlb.space(did, pasid);
        auto token = tlb.prepare_fill(s);
        ASSERT_TRUE(tlb.insert(s, addr, {phys, 1, 3}, token, nested).inserted);
    }
    std::optional<uint64_t> phys(uint16_t did, uint32_t pasid, uint64_t addr)
    {
        auto leaf = tlb.lookup(tlb.space(did, pasid), addr);
        if (!leaf)
            return std::nullopt;
        return leaf->phys;
    }
};

}  // namespace

TEST_F(PasidIotlb, PasidsOfOneDomainAreDistinct)
{
    fill(1, 5, 0x1000, 0xa000);
    fill(1, 6, 0x1000, 0xb000);
    fill(2, 5, 0x1000, 0xc000);
    EXPECT_EQ(phys(1, 5, 0x1000), 0xa000u);
    EXPECT_EQ(phys(1, 6, 0x1000), 0xb000u);
    EXPECT_EQ(phys(2, 5, 0x1000), 0xc000u);
    EXPECT_FALSE(phys(1, 7, 0x1000));
    EXPECT_EQ(tlb.spaces(), 4u);
}

TEST_F(PasidIotlb, PasidSelective)
{
    fill(1, 5, 0x1000, 0xa000);
    fill(1, 5, 0x2000, 0xa1000);
    fill(1, 6, 0x1000, 0xb000);
    tlb.invalidate_pasid(1, 5);
    EXPECT_FALSE(phys(1, 5, 0x1000));
    EXPECT_FALSE(phys(1, 5, 0x2000));
    EXPECT_EQ(phys(1, 6, 0x1000), 0xb000u);
    tlb.invalidate_pasid(1, 99);  // never cached: nothing happens
    EXPECT_EQ(phys(1, 6, 0x1000), 0xb000u);
    EXPECT_EQ(tlb.spaces(), 2u) << "invalidating an unknown pair allocates nothing";
}

TEST_F(PasidIotlb, PageSelectiveWithinPasid)
{
    fill(1, 5, 0x1000, 0xa000);
    fill(1, 5, 0x5000, 0xa1000);
    fill(1, 6, 0x1000, 0xb000);
    bool as_pasid = true;
    uint64_t probes = 0;
    EXPECT_EQ(tlb.invalidate_pasid_pages(1, 5, 0x0, 4, true, as_pasid, &probes), 1u);
    EXPECT_FALSE(as_pasid);
    EXPECT_EQ(probes, 4u) << "4 KiB keys of the range only";
    EXPECT_FALSE(phys(1, 5, 0x1000));
    EXPECT_EQ(phys(1, 5, 0x5000), 0xa1000u);
    EXPECT_EQ(phys(1, 6, 0x1000), 0xb000u);
}

TEST_F(PasidIotlb, LargeRangeGoesAsPasid)
{
    fill(1, 5, 0x1000, 0xa000);
    fill(1, 6, 0x1000, 0xb000);
    bool as_pasid = false;
    tlb.invalidate_pasid_pages(1, 5, 0, uint64_t{1} << 20, true, as_pasid);
    EXPECT_TRUE(as_pasid);
    EXPECT_FALSE(phys(1, 5, 0x1000));
    EXPECT_EQ(phys(1, 6, 0x1000), 0xb000u);
}

TEST_F(PasidIotlb, DomainCoversItsPasids)
{
    fill(1, 5, 0x1000, 0xa000);
    fill(1, 6, 0x1000, 0xb000);
    fill(2, 5, 0x1000, 0xc000);
    tlb.invalidate_domain(1);
    EXPECT_FALSE(phys(1, 5, 0x1000));
    EXPECT_FALSE(phys(1, 6, 0x1000));
    EXPECT_EQ(phys(2, 5, 0x1000), 0xc000u);
    fill(1, 5, 0x1000, 0xa000);
    tlb.invalidate_all();
    EXPECT_FALSE(phys(1, 5, 0x1000));
    EXPECT_FALSE(phys(2, 5, 0x1000));
}

TEST_F(PasidIotlb, DomainPagesInEveryPasid)
{
    fill(1, 5, 0x1000, 0xa000);
    fill(1, 6, 0x1000, 0xb000);
    fill(1, 6, 0x3000, 0xb1000);
    fill(2, 5, 0x1000, 0xc000);
    bool as_domain = true;
    uint64_t probes = 0;
    EXPECT_EQ(tlb.invalidate_pages(1, 0x1000, 1, true, as_domain, &probes), 2u);
    EXPECT_FALSE(as_domain);
    EXPECT_EQ(probes, 2u) << "one key in each of the domain's two address spaces";
    EXPECT_FALSE(phys(1, 5, 0x1000));
    EXPECT_FALSE(phys(1, 6, 0x1000));
    EXPECT_EQ(phys(1, 6, 0x3000), 0xb1000u);
    EXPECT_EQ(phys(2, 5, 0x1000), 0xc000u);
}

TEST_F(PasidIotlb, NestedSpaceGoesWholeOnSecondStagePages)
{
    fill(1, 5, 0x1000, 0xa000);
    fill(1, 7, 0x8000, 0xd000, true);  // nested: its GPA is not known
    bool as_domain = false;
    tlb.invalidate_pages(1, 0x1000, 1, true, as_domain);
    EXPECT_FALSE(phys(1, 5, 0x1000));
    EXPECT_FALSE(phys(1, 7, 0x8000));
}

TEST_F(PasidIotlb, PagingStructureEntriesAndIh)
{
    auto s5 = tlb.space(1, 5), s6 = tlb.space(1, 6);
    tlb.insert_pde(s5, 0x200000, {0x7000, 3}, tlb.prepare_fill(s5));
    tlb.insert_pde(s6, 0x200000, {0x8000, 3}, tlb.prepare_fill(s6));
    ASSERT_TRUE(tlb.lookup_pde(s5, 0x200000));
    bool as_pasid = false;
    tlb.invalidate_pasid_pages(1, 5, 0x200000, 1, true, as_pasid);
    EXPECT_TRUE(tlb.lookup_pde(s5, 0x200000)) << "IH: leaves only";
    tlb.invalidate_pasid_pages(1, 5, 0x200000, 1, false, as_pasid);
    EXPECT_FALSE(tlb.lookup_pde(s5, 0x200000));
    EXPECT_EQ(tlb.lookup_pde(s6, 0x200000)->table, 0x8000u) << "other PASIDs keep theirs";
    tlb.invalidate_pasid(1, 6);
    EXPECT_FALSE(tlb.lookup_pde(s6, 0x200000));
}

TEST_F(PasidIotlb, FillRacingInvalidationIsRefused)
{
    auto s = tlb.space(1, 5);
    auto token = tlb.prepare_fill(s);
    tlb.invalidate_pasid(1, 5);
    EXPECT_FALSE(tlb.insert(s, 0x1000, {0xa000, 1, 3}, token).inserted);
    token = tlb.prepare_fill(s);
    bool as_pasid = false;
    tlb.invalidate_pasid_pages(1, 9, 0x1000, 1, true, as_pasid);  // another PASID: still refused
    EXPECT_FALSE(tlb.insert(s, 0x1000, {0xa000, 1, 3}, token).inserted);
    EXPECT_FALSE(phys(1, 5, 0x1000));
}

TEST_F(PasidIotlb, FlushForgetsSpaces)
{
    fill(1, 5, 0x1000, 0xa000);
    tlb.flush();
    EXPECT_EQ(tlb.spaces(), 0u);
    EXPECT_FALSE(phys(1, 5, 0x1000));
}

TEST(PasidIotlbTags, ReusedWhenAllAreTaken)
{
    Iotlb tlb(4096, 8);  // 8 tags; a batch is one
    for (uint32_t p = 0; p < 8; p++) {
        auto s = tlb.space(1, p);
        ASSERT_TRUE(
            tlb.insert(s, 0x1000, {0xa000 + (p << 12), 1, 3}, tlb.prepare_fill(s)).inserted);
    }
    EXPECT_EQ(tlb.spaces_recycled(), 0u);
    auto old = tlb.space(1, 0);
    size_t recycled = 0;
    auto fresh = tlb.space(1, 100, &recycled);
    EXPECT_EQ(recycled, 1u);
    EXPECT_EQ(tlb.spaces_recycled(), 1u);
    EXPECT_EQ(fresh.id, old.id) << "the oldest tag was reused";
    EXPECT_FALSE(tlb.lookup(fresh, 0x1000)) << "the new owner sees nothing of the old";
    EXPECT_FALSE(tlb.lookup(old, 0x1000)) << "the old owner's handle no longer hits";
    // A fill prepared under the old owner is refused.
    auto stale_token = tlb.prepare_fill(old);
    EXPECT_FALSE(tlb.insert(old, 0x2000, {0xf000, 1, 3}, stale_token).inserted);
    // The others are untouched; the retired pair comes back under a new tag, empty.
    for (uint32_t p = 1; p < 8; p++)
        EXPECT_EQ(tlb.lookup(tlb.space(1, p), 0x1000)->phys, 0xa000u + (p << 12));
    EXPECT_EQ(tlb.spaces_recycled(), 1u);
    auto back = tlb.space(1, 0);
    EXPECT_FALSE(tlb.lookup(back, 0x1000));
    EXPECT_EQ(tlb.spaces(), 8u);
}

// The legacy keys (domain-id alone) are the "no PASID" form: the legacy
// calls work as before and scalable-mode state stays unallocated.
TEST(PasidIotlbTags, LegacyNeedsNoSpaces)
{
    Iotlb tlb(1024);
    const size_t before = tlb.domain_bytes();
    auto token = tlb.prepare_fill(uint16_t{3});
    ASSERT_TRUE(tlb.insert(3, 0x1000, {0xa000, 1, 3}, token).inserted);
    EXPECT_EQ(tlb.lookup(3, 0x1000)->phys, 0xa000u);
    EXPECT_EQ(tlb.spaces(), 0u);
    EXPECT_EQ(tlb.domain_bytes(), before);
}

// Translating threads fill and look up 64 pairs through 16 tags, so tags
// are retired and reused all the time, while another thread invalidates
// PASIDs: whatever the interleaving, a hit returns its own pair's frame.
TEST(Concurrency, PasidTagsNeverMixPairs)
{
    Iotlb tlb(4096, 16);
    constexpr uint32_t PAIRS = 64, PAGES = 8;
    auto frame = [](uint32_t pasid, uint64_t page) { return (uint64_t{pasid} << 24) | page << 12; };
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> wrong{0}, hits{0};
    auto translator = [&](uint32_t seed) {
        uint64_t x = seed;
        for (int i = 0; i < 5000; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const auto pasid = static_cast<uint32_t>((x >> 33) % PAIRS);
            const uint64_t page = (x >> 50) % PAGES;
            auto s = tlb.space(1, pasid);
            if (auto leaf = tlb.lookup(s, page << 12)) {
                hits++;
                if (leaf->phys != frame(pasid, page))
                    wrong++;
            } else {
                tlb.insert(s, page << 12, {frame(pasid, page), 1, 3}, tlb.prepare_fill(s));
            }
        }
    };
    std::thread inv([&] {
        uint32_t p = 0;
        while (!stop.load()) {
            tlb.invalidate_pasid(1, p++ % PAIRS);
            bool as_pasid = false;
            tlb.invalidate_pasid_pages(1, p % PAIRS, 0, 2, p & 1, as_pasid);
        }
    });
    std::thread a(translator, 1), b(translator, 2);
    a.join();
    b.join();
    stop.store(true);
    inv.join();
    EXPECT_EQ(wrong.load(), 0u);
    EXPECT_GT(tlb.spaces_recycled(), 0u) << "tags were reused during the run";
}
