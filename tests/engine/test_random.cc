// SPDX-License-Identifier: GPL-2.0-or-later
// Randomized comparison against a reference model of translation: random
// map/unmap/permission changes (each followed by the invalidation a
// correct guest issues) interleaved with random translations.
#include <map>
#include <random>

#include "fake_host.hpp"

using namespace vtdtest;

namespace {

struct Mapping {
    uint64_t phys;
    unsigned perm;  // 0 = not mapped
};

struct Model {
    // 4 KiB region [0, 256 pages) and 2 MiB region [1 GiB, 1 GiB + 16 * 2 MiB)
    static constexpr uint64_t SMALL_PAGES = 256, BIG_BASE = 1ull << 30, BIG_PAGES = 16;
    static constexpr uint64_t BIG = 2ull << 20;
    std::map<uint64_t, Mapping> small, big;

    // Expected result of translating `iova` for `access`.
    VtdFaultReason expect(uint64_t iova, unsigned access, uint64_t &phys) const
    {
        const Mapping *m = nullptr;
        uint64_t offset = 0;
        if (iova < SMALL_PAGES * PAGE) {
            auto it = small.find(iova / PAGE);
            m = it == small.end() ? nullptr : &it->second;
            offset = iova % PAGE;
        } else if (iova >= BIG_BASE && iova < BIG_BASE + BIG_PAGES * BIG) {
            auto it = big.find((iova - BIG_BASE) / BIG);
            m = it == big.end() ? nullptr : &it->second;
            offset = (iova - BIG_BASE) % BIG;
        }
        unsigned perm = m ? m->perm : 0;
        if ((access & VTD_PERM_WRITE) && !(perm & VTD_PERM_WRITE))
            return VTD_FR_WRITE;
        if ((access & VTD_PERM_READ) && !(perm & VTD_PERM_READ))
            return VTD_FR_READ;
        if (!perm)
            return VTD_FR_READ;
        phys = m->phys + offset;
        return VTD_FR_NONE;
    }
};

}  // namespace

class RandomAgainstModel : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RandomAgainstModel, MatchesReference)
{
    VtdConfig c = FakeHost::default_config();
    c.iotlb_entries = 128;  // small: exercise eviction as well
    FakeHost h(64 << 20, c);
    std::mt19937_64 rng(GetParam());
    uint64_t pt = h.alloc_page();
    h.set_context(0x18, pt, 3, 4);
    h.enable_translation();
    bool use_qi = GetParam() % 2;
    if (use_qi)
        h.enable_qi();
    Model model;
    // Pre-build the tables so both regions have their intermediate levels.
    h.map(pt, 4, 0, 0, 0);
    h.map(pt, 4, Model::BIG_BASE, 0, 0, 2);

    auto invalidate = [&](uint64_t addr, unsigned am) {
        if (use_qi) {
            h.submit(FakeHost::iotlb_desc(3, 3), FakeHost::iotlb_addr(addr, am, rng() % 2));
        } else {
            h.w64(h.iva, FakeHost::iotlb_addr(addr, am));
            h.w64(h.iotlb, (1ull << 63) | (3ull << 60) | (3ull << 32));
        }
    };

    for (unsigned step = 0; step < 20000; step++) {
        if (rng() % 4 == 0) {
            bool small = rng() % 2;
            unsigned perm = rng() % 4;
            uint64_t frame = (rng() % 1024) * (small ? PAGE : Model::BIG);
            if (small) {
                uint64_t p = rng() % Model::SMALL_PAGES;
                h.map(pt, 4, p * PAGE, frame, perm);
                model.small[p] = {frame, perm};
                invalidate(p * PAGE, 0);
            } else {
                uint64_t p = rng() % Model::BIG_PAGES;
                uint64_t iova = Model::BIG_BASE + p * Model::BIG;
                h.map(pt, 4, iova, frame, perm, 2);
                model.big[p] = {frame, perm};
                invalidate(iova, 9);
            }
        } else {
            uint64_t iova = rng() % 2 ? rng() % (Model::SMALL_PAGES * PAGE)
                                      : Model::BIG_BASE + rng() % (Model::BIG_PAGES * Model::BIG);
            unsigned access = 1 + rng() % 3;
            uint64_t want_phys = 0;
            VtdFaultReason want = model.expect(iova, access, want_phys);
            VtdTranslation t{};
            VtdFaultReason got = vtd_engine_translate(h.e, 0x18, iova, access, false, &t);
            ASSERT_EQ(got, want) << "step " << step << " iova " << std::hex << iova;
            if (got == VTD_FR_NONE) {
                ASSERT_EQ(t.phys_base + (iova & t.addr_mask), want_phys) << "step " << step;
            }
        }
    }
    EXPECT_GT(json_counter(h.stats(), "iotlb", "hits"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomAgainstModel, ::testing::Values(1, 2, 3, 4));

// Hostile register traffic: random writes to every offset, with random
// translations among them.  After each write the registers still hold only
// what the unit can hold: VER, CAP and ECAP unchanged, GSTS only status
// bits the unit has, FSTS and ICS no undefined bit, IQH a descriptor
// boundary inside the queue IQA describes.  (Tables anywhere: the fake
// host fails accesses outside guest RAM, which the engine must take as
// faults.)
TEST(Hostile, RandomRegisterWrites)
{
    FakeHost h(4 << 20);
    std::mt19937_64 rng(7);
    const uint64_t cap = h.mmio64(CAP), ecap = h.mmio64(ECAP);
    constexpr uint32_t GSTS_BITS = TE | SRTP | QIE | IRE | SIRTP | 1u << 23;  // CFIS
    for (unsigned i = 0; i < 200000; i++) {
        uint64_t off = (rng() % 0x1000) & ~3ull;
        uint64_t v = rng();
        if (rng() % 4 == 0)
            v &= 0xfff0;  // small values: plausible queue indexes
        if (rng() % 2)
            h.w32(off, v);
        else
            h.w64(off & ~7ull, v);
        if (i % 64 == 0)
            h.translate(rng() & 0xffff, rng(), 1 + rng() % 3);
        const uint64_t iqa = h.mmio64(IQA), iqh = h.mmio64(IQH);
        const uint64_t desc = iqa & (1u << 11) ? 32 : 16, queue = uint64_t{4096} << (iqa & 7);
        ASSERT_EQ(h.mmio32(GSTS) & ~GSTS_BITS, 0u) << "write " << i;
        ASSERT_EQ(h.mmio32(FSTS) >> 16, 0u) << "write " << i;
        ASSERT_EQ(h.mmio32(ICS) & ~1u, 0u) << "write " << i;
        ASSERT_TRUE(iqh % desc == 0 && iqh < queue) << "write " << i << " IQH " << iqh;
    }
    EXPECT_EQ(h.mmio32(VER), 0x10u);
    EXPECT_EQ(h.mmio64(CAP), cap);
    EXPECT_EQ(h.mmio64(ECAP), ecap);
}

// Random descriptors: invalid ones raise IQE with IQH on them, valid ones
// are consumed; the queue never runs past the tail or outside its size.
TEST(Hostile, RandomDescriptors)
{
    FakeHost h(4 << 20);
    h.enable_translation();
    h.enable_qi();
    std::mt19937_64 rng(11);
    unsigned errors = 0;
    for (unsigned i = 0; i < 20000; i++) {
        uint64_t lo = rng(), hi = rng();
        if (rng() % 2)
            lo &= 0xffff'ffff'0000'00f7ull;  // keep some descriptors plausible
        if (rng() % 2)
            hi &= 0x3f'ffff'f000ull;  // addresses inside RAM
        uint64_t head = h.mmio64(IQH) >> 4;
        h.submit(lo, hi);
        uint64_t new_head = h.mmio64(IQH) >> 4;
        ASSERT_LT(new_head, 256u);
        if (h.mmio32(FSTS) & 0x10) {
            errors++;
            ASSERT_EQ(new_head, head) << "IQH stays at the bad descriptor";
            h.put64(h.queue + head * 16, FakeHost::wait_desc(false, false, false, 0));
            h.put64(h.queue + head * 16 + 8, 0);
            h.w32(FSTS, 0x10);
        }
        ASSERT_EQ(h.mmio64(IQH) >> 4, h.tail);
    }
    EXPECT_GT(errors, 1000u);
    EXPECT_LT(errors, 20000u);
}

// Page tables full of random bytes: every translation ends in a result or
// a specified fault, and a repeated translation agrees with the first.
TEST(Hostile, RandomPageTables)
{
    FakeHost h(8 << 20);
    std::mt19937_64 rng(5);
    uint64_t base = h.alloc_page();
    for (unsigned i = 1; i < 64; i++)
        h.alloc_page();
    auto pointer = [&] { return base + (rng() % 64) * PAGE; };
    auto junk = [&] { return rng() % 8 ? 0 : rng() & rng(); };
    // Pages 0-3: context tables; 4-63: paging structures.  Entries are
    // mostly well formed, pointing anywhere in the 64 pages (cycles and
    // shared subtrees included), with occasional random bits.
    for (uint64_t a = base; a < base + 4 * PAGE; a += 16) {
        h.put64(a, pointer() | (rng() % 4) << 2 | (rng() % 2) << 1 | (rng() % 8 != 0) | junk());
        h.put64(a + 8, (rng() % 16) << 8 | (1 + rng() % 3) | junk());
    }
    for (uint64_t a = base + 4 * PAGE; a < base + 64 * PAGE; a += 8)
        h.put64(a, pointer() | rng() % 4 | (rng() % 4 ? 0 : 0x80) | junk());
    h.ensure_root();
    for (unsigned bus = 0; bus < 4; bus++) {
        h.put64(h.root + bus * 16, (base + bus * PAGE) | (rng() % 8 ? 1 : rng()));
        h.put64(h.root + bus * 16 + 8, rng() % 8 ? 0 : rng());
    }
    h.enable_translation();
    h.w32(FECTL, 0);
    for (unsigned i = 0; i < 20000; i++) {
        uint16_t sid = rng() % 0x400;
        uint64_t addr = rng() % 4 ? rng() % (1ull << 39) : rng();
        unsigned access = rng() % 4;
        VtdTranslation a{}, b{};
        VtdFaultReason first = vtd_engine_translate(h.e, sid, addr, access, rng() % 2, &a);
        VtdFaultReason second = vtd_engine_translate(h.e, sid, addr, access, false, &b);
        ASSERT_LE(first, VTD_FR_CONTEXT_ENTRY_TT);
        ASSERT_EQ(first, second);
        if (first == VTD_FR_NONE) {
            ASSERT_EQ(a.phys_base, b.phys_base);
            ASSERT_EQ(a.perm, b.perm);
            ASSERT_EQ(addr & ~a.addr_mask, a.iova_base);
        }
        if (i % 1000 == 0) {
            for (unsigned r = 0; r < 8; r++)
                h.w32(h.frcd + r * 16 + 12, 1u << 31);
            h.w32(FSTS, 1);
        }
    }
    uint64_t leaves = 0;
    auto cb = [](void *ctx, const VtdTranslation *) { ++*static_cast<uint64_t *>(ctx); };
    for (uint16_t sid = 0; sid < 0x400; sid += 7)
        vtd_engine_walk(h.e, sid, 0, ~0ull, cb, &leaves);
    std::string s = h.stats();
    EXPECT_GT(json_counter(s, "faults", "recorded"), 0u);
    // The random tables reach deep enough to exercise the walker.
    EXPECT_GT(json_counter(s, "translate", "page_walks"), 1000u);
    EXPECT_GT(json_counter(s, "by_reason", "paging_entry_reserved"), 0u);
    EXPECT_GT(json_counter(s, "by_reason", "context_entry_reserved"), 0u);
}
