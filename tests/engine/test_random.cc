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

// Hostile register traffic: random writes to every offset, then the device
// still answers; no access outside guest RAM is attempted (the fake host
// would fail it, never crash).
TEST(Hostile, RandomRegisterWrites)
{
    FakeHost h(4 << 20);
    std::mt19937_64 rng(7);
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
    }
    EXPECT_EQ(h.mmio32(VER), 0x10u);
}
