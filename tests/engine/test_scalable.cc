// SPDX-License-Identifier: GPL-2.0-or-later
// Scalable mode: capabilities and configuration, scalable-mode root and
// context entries, the PASID directory and PASID-table entries with every
// PGTT, first-stage walks (pages, permissions, accessed/dirty flags),
// nested translation, requests with PASID, and every scalable-mode fault
// reason the model can raise.
#include <cstring>
#include <string>
#include <vector>

#include "scalable_tables.hpp"

using namespace vtdtest;

namespace {

constexpr uint16_t SID = 0x0310;
constexpr uint16_t DID = 9;
constexpr uint64_t ECAP_NEST = 1ull << 26, ECAP_SRS = 1ull << 31, ECAP_PASID = 1ull << 40,
                   ECAP_SMTS = 1ull << 43, ECAP_SLTS = 1ull << 46, ECAP_FLTS = 1ull << 47;
constexpr uint64_t CAP_FS1GP = 1ull << 56, CAP_FS5LP = 1ull << 60;

std::string refusal(VtdConfig c, bool with_cmpxchg = true)
{
    VtdHostOps ops{};
    ops.mem_read = [](void *, uint64_t, void *, size_t) { return -1; };
    ops.mem_write = [](void *, uint64_t, const void *, size_t) { return -1; };
    ops.msi = [](void *, uint64_t, uint32_t) {};
    if (with_cmpxchg)
        ops.mem_cmpxchg64 = [](void *, uint64_t, uint64_t, uint64_t, uint64_t *) { return -1; };
    char err[160] = "";
    VtdEngine *e = vtd_engine_new(&c, &ops, nullptr, err, sizeof(err));
    if (e) {
        vtd_engine_free(e);
        return "";
    }
    return err;
}

// A unit in scalable mode with one device whose RID_PASID (0) entry is set
// by the test.
struct Scalable : ::testing::Test {
    FakeHost h{8 << 20, scalable_config()};
    ScalableTables t{h};
    uint64_t dir = 0;
    uint64_t fs = 0;  // first-stage top table
    void SetUp() override
    {
        dir = t.set_context(SID);
        fs = h.alloc_page();
        t.set_pasid(dir, 0, ScalableTables::first_stage(fs, DID));
        t.enable();
    }
    VtdFaultReason pasid_translate(uint32_t pasid, bool priv, uint64_t addr, unsigned access,
                                   VtdTranslation *out = nullptr)
    {
        VtdTranslation tmp{};
        return vtd_engine_translate_pasid(h.e, SID, pasid, priv, addr, access, true,
                                          out ? out : &tmp);
    }
    // The fault record `i` (hi word).
    uint64_t record_hi(unsigned i) { return h.mmio64(h.frcd + i * 16 + 8); }
};

// A unit of AW 57 whose device's RID_PASID entry points to 5-level
// first-stage tables (FSPM 1) at `fs`.
struct FiveLevelFirstStage {
    static VtdConfig config()
    {
        VtdConfig c = scalable_config();
        c.aw_bits = 57;
        return c;
    }
    FakeHost h{8 << 20, config()};
    ScalableTables t{h};
    uint64_t fs = 0;
    FiveLevelFirstStage()
    {
        uint64_t dir = t.set_context(SID);
        fs = h.alloc_page();
        t.set_pasid(dir, 0, ScalableTables::first_stage(fs, DID, 1 << 2));  // FSPM: 5-level
        t.enable();
    }
};

}  // namespace

// --- configuration and capabilities ---

TEST(ScalableConfig, LegacyIsTheDefault)
{
    FakeHost h;
    EXPECT_EQ(h.ecap & (ECAP_SMTS | ECAP_FLTS | ECAP_SLTS | ECAP_NEST | ECAP_PASID), 0u);
    EXPECT_EQ(h.cap & CAP_FS1GP, 0u);
    // RTADDR.TTM is not writable without ECAP.SMTS.
    h.w64(RTADDR, 0x5000 | 3u << 10);
    EXPECT_EQ(h.mmio64(RTADDR), 0x5000u);
}

TEST(ScalableConfig, CapabilitiesFollowTheConfiguration)
{
    FakeHost h{8 << 20, scalable_config()};
    EXPECT_TRUE(h.ecap & ECAP_SMTS);
    EXPECT_TRUE(h.ecap & ECAP_FLTS);
    EXPECT_TRUE(h.ecap & ECAP_SLTS);
    EXPECT_TRUE(h.ecap & ECAP_NEST);
    EXPECT_TRUE(h.ecap & ECAP_PASID);
    EXPECT_TRUE(h.ecap & ECAP_SRS);
    EXPECT_EQ((h.ecap >> 35) & 31, 19u);  // PSS: 20 bits
    EXPECT_TRUE(h.cap & CAP_FS1GP);
    EXPECT_FALSE(h.cap & CAP_FS5LP);  // 48-bit: no 5-level first stage
    // TTM bit 10 is writable, bit 11 (reserved encodings) is not.
    h.w64(RTADDR, 0x5000 | 3u << 10);
    EXPECT_EQ(h.mmio64(RTADDR), 0x5000u | 1u << 10);

    VtdConfig c = scalable_config();
    c.first_stage = false;
    c.fs1gp = false;
    c.pasid_bits = 0;
    FakeHost ss{8 << 20, c};
    EXPECT_TRUE(ss.ecap & ECAP_SLTS);
    EXPECT_FALSE(ss.ecap & (ECAP_FLTS | ECAP_NEST | ECAP_PASID | ECAP_SRS));

    c = scalable_config();
    c.aw_bits = 57;
    FakeHost wide{8 << 20, c};
    EXPECT_TRUE(wide.cap & CAP_FS5LP);
}

TEST(ScalableConfig, InvalidCombinationsAreRefused)
{
    VtdConfig c = FakeHost::default_config();
    c.first_stage = true;
    EXPECT_NE(refusal(c).find("need scalable_mode"), std::string::npos);
    c = FakeHost::default_config();
    c.pasid_bits = 8;
    EXPECT_NE(refusal(c).find("need scalable_mode"), std::string::npos);
    c = scalable_config();
    c.first_stage = c.second_stage = false;
    c.fs1gp = false;
    EXPECT_NE(refusal(c).find("first_stage or second_stage"), std::string::npos);
    c = scalable_config();
    c.first_stage = false;
    EXPECT_NE(refusal(c).find("fs1gp"), std::string::npos);
    c = scalable_config();
    c.pasid_bits = 21;
    EXPECT_NE(refusal(c).find("pasid_bits"), std::string::npos);
    EXPECT_NE(refusal(scalable_config(), false).find("mem_cmpxchg64"), std::string::npos);
    EXPECT_EQ(refusal(scalable_config()), "");
}

// --- first-stage walks ---

TEST_F(Scalable, FirstStageWalkSetsAccessedAndDirty)
{
    t.map_fs(fs, 0x7f12345000, 0xabc000, FS_RW | FS_US);
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x7f12345678, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0xabc000u);
    EXPECT_EQ(out.addr_mask, 0xfffu);
    EXPECT_EQ(out.domain_id, DID);
    // A read of a clean page: A set at every level, D not, and the
    // translation grants no write yet (the write walks again to set D).
    for (unsigned level = 4; level >= 1; level--)
        EXPECT_TRUE(h.get64(t.fs_pte(fs, 0x7f12345000, level)) & FS_A) << level;
    const uint64_t leaf = t.fs_pte(fs, 0x7f12345000, 1);
    EXPECT_FALSE(h.get64(leaf) & FS_D);
    EXPECT_EQ(out.perm, VTD_PERM_READ);
    ASSERT_EQ(h.translate(SID, 0x7f12345678, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_TRUE(h.get64(leaf) & FS_D);
    EXPECT_EQ(out.perm, VTD_PERM_RW);
    EXPECT_FALSE(h.get64(leaf) & FS_EA);
    const std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "first_stage", "accessed_set"), 4u);
    EXPECT_EQ(json_counter(s, "first_stage", "dirty_set"), 1u);
    EXPECT_EQ(json_counter(s, "first_stage", "walks"), 2u);
    EXPECT_EQ(json_counter(s, "pgtt", "first_stage"), 2u);
    EXPECT_EQ(json_counter(s, "scalable", "requests_without_pasid"), 2u);
    // Now both hit (the IOTLB holds the dirty leaf).
    ASSERT_EQ(h.translate(SID, 0x7f12345000, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(json_counter(h.stats(), "first_stage", "walks"), 2u);
    EXPECT_EQ(json_counter(h.stats(), "pgtt", "first_stage"), 3u);
}

TEST_F(Scalable, FirstStageLargePages)
{
    t.map_fs(fs, 0x40000000, 0x200000, FS_RW | FS_US | FS_A | FS_D, 2);
    t.map_fs(fs, 0x80000000, 0x40000000, FS_RW | FS_US | FS_A | FS_D, 3);
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x40012345, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.iova_base, 0x40000000u);
    EXPECT_EQ(out.phys_base, 0x200000u);
    EXPECT_EQ(out.addr_mask, 0x1fffffu);
    ASSERT_EQ(h.translate(SID, 0x80012345, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x40000000u);
    EXPECT_EQ(out.addr_mask, 0x3fffffffu);
    // Low address bits of a large page are reserved (bit 12 is PAT).
    h.put64(t.fs_pte(fs, 0x40000000, 2), 0x200000 | 0x2000 | FS_P | FS_PS | FS_US);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x40000000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_RSVD);
}

TEST(ScalableConfigWalk, OneGigabytePagesNeedFs1gp)
{
    VtdConfig c = scalable_config();
    c.fs1gp = false;
    FakeHost h{8 << 20, c};
    ScalableTables t{h};
    uint64_t dir = t.set_context(SID);
    uint64_t fs = h.alloc_page();
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs, DID));
    t.enable();
    t.map_fs(fs, 0x80000000, 0x40000000, FS_RW | FS_US, 3);
    EXPECT_EQ(h.translate(SID, 0x80000000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_RSVD);
}

TEST_F(Scalable, FirstStagePermissions)
{
    t.map_fs(fs, 0x1000, 0x5000, FS_US);          // read-only
    t.map_fs(fs, 0x2000, 0x6000, FS_RW);          // supervisor page
    t.map_fs(fs, 0x3000, 0x7000, FS_RW | FS_US);  // read-write
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_WRITE), VTD_FR_SM_WRITE);
    // A denied write leaves the leaf clean.
    EXPECT_FALSE(h.get64(t.fs_pte(fs, 0x1000, 1)) & FS_D);
    // Requests without PASID are user requests.
    EXPECT_EQ(h.translate(SID, 0x2000, VTD_PERM_READ), VTD_FR_SM_FS_USER);
    EXPECT_EQ(h.translate(SID, 0x3000, VTD_PERM_WRITE), VTD_FR_NONE);
    // XD never denies a read or write (there are no execute requests).
    h.put64(t.fs_pte(fs, 0x3000, 1), h.get64(t.fs_pte(fs, 0x3000, 1)) | 1ull << 63);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x3000, VTD_PERM_RW), VTD_FR_NONE);
}

TEST_F(Scalable, SupervisorRequestsNeedSreAndHonourWpe)
{
    const uint32_t PASID = 77;
    uint64_t fs2 = h.alloc_page();
    t.map_fs(fs2, 0x1000, 0x5000, FS_US);  // read-only user page
    t.map_fs(fs2, 0x2000, 0x6000, FS_RW);  // supervisor page
    t.set_pasid(dir, PASID, ScalableTables::first_stage(fs2, DID + 1));
    // SRE clear: a supervisor request faults, a user one does not.
    EXPECT_EQ(pasid_translate(PASID, true, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_SRE);
    EXPECT_EQ(pasid_translate(PASID, false, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    EXPECT_EQ(pasid_translate(PASID, false, 0x2000, VTD_PERM_READ), VTD_FR_SM_FS_USER);
    // SRE set, WPE clear: supervisor requests reach supervisor pages and
    // write read-only ones (CR0.WP clear).  (A changed entry needs its
    // invalidation: the PASID cache holds the old one until then.)
    t.set_pasid(dir, PASID, ScalableTables::first_stage(fs2, DID + 1, 1));
    t.invalidate_all();
    EXPECT_EQ(pasid_translate(PASID, true, 0x2000, VTD_PERM_WRITE), VTD_FR_NONE);
    EXPECT_EQ(pasid_translate(PASID, true, 0x1000, VTD_PERM_WRITE), VTD_FR_NONE);
    // WPE set: they do not.
    t.set_pasid(dir, PASID, ScalableTables::first_stage(fs2, DID + 1, 1 | 1 << 4));
    t.invalidate_all();
    EXPECT_EQ(pasid_translate(PASID, true, 0x1000, VTD_PERM_WRITE), VTD_FR_SM_WRITE);
    EXPECT_EQ(pasid_translate(PASID, true, 0x2000, VTD_PERM_WRITE), VTD_FR_NONE);
}

TEST_F(Scalable, ExtendedAccessedFlagWithEafe)
{
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs, DID, 1 << 7));
    t.invalidate_all();
    t.map_fs(fs, 0x1000, 0x5000, FS_RW | FS_US);
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    EXPECT_EQ(h.get64(t.fs_pte(fs, 0x1000, 1)) & (FS_A | FS_EA), FS_A | FS_EA);
}

TEST_F(Scalable, FirstStageFaults)
{
    t.map_fs(fs, 0x1000, 0x5000, FS_RW | FS_US);
    EXPECT_EQ(h.translate(SID, 0x200000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    // Not canonical: bits 63:47 differ.
    EXPECT_EQ(h.translate(SID, 1ull << 47, VTD_PERM_READ), VTD_FR_SM_FS_NON_CANONICAL);
    EXPECT_EQ(h.translate(SID, 0xffff800000000000ull, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    // PS in a PML4 entry is reserved, and so are address bits above HAW.
    const uint64_t pml4e = t.fs_pte(fs, 0x1000, 4);
    const uint64_t good = h.get64(pml4e);
    h.put64(pml4e, good | FS_PS);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_RSVD);
    h.put64(pml4e, good | 1ull << 50);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_RSVD);
    // A lower table outside RAM.
    h.put64(pml4e, (good & 0xfff) | 0x40000000);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_INV);
    // FSPTPTR outside RAM.
    t.set_pasid(dir, 0, ScalableTables::first_stage(0x40000000, DID));
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_TOP_INV);
}

TEST_F(Scalable, LoopingFirstStageTableTerminates)
{
    // The PML4 entry points to the PML4 itself: every level reads the same
    // entry, which lacks U/S, so the walk ends at level 1 with a fault.
    h.put64(fs, fs | FS_P | FS_RW);
    EXPECT_EQ(h.translate(SID, 0x0, VTD_PERM_READ), VTD_FR_SM_FS_USER);
    EXPECT_EQ(json_counter(h.stats(), "first_stage", "entries_read"), 4u);
}

TEST_F(Scalable, AccessedUpdateRacesWithTheGuest)
{
    t.map_fs(fs, 0x1000, 0x5000, FS_RW | FS_US);
    const uint64_t leaf = t.fs_pte(fs, 0x1000, 1);
    // The guest clears P just before the unit's swap: the swap fails, the
    // entry is evaluated again and is not present.
    bool once = true;
    h.before_cmpxchg = [&](uint64_t gpa) {
        if (gpa == leaf && once) {
            once = false;
            h.put64(leaf, 0);
        }
    };
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    EXPECT_EQ(h.get64(leaf), 0u);  // nothing written over the guest's value
    EXPECT_EQ(json_counter(h.stats(), "first_stage", "ad_update_retries"), 1u);
    // A guest that changes the entry before every swap: bounded retries.
    uint64_t flip = 0;
    h.before_cmpxchg = [&](uint64_t gpa) {
        if (gpa == leaf)
            h.put64(leaf, 0x5000 | FS_P | FS_RW | FS_US | ((++flip & 1) ? 1u << 9 : 0));
    };
    h.put64(leaf, 0x5000 | FS_P | FS_RW | FS_US);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_INV);
    EXPECT_EQ(flip, 16u);
}

TEST(ScalableConfigWalk, FiveLevelFirstStageWithAw57)
{
    FiveLevelFirstStage u;
    const uint64_t iova = 0x00f0000012345000ull;
    u.t.map_fs(u.fs, iova, 0x9000, FS_RW | FS_US | FS_A | FS_D, 1, 5);
    VtdTranslation out{};
    ASSERT_EQ(u.h.translate(SID, iova, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x9000u);
    EXPECT_EQ(u.h.translate(SID, 1ull << 56, VTD_PERM_READ), VTD_FR_SM_FS_NON_CANONICAL);
}

TEST_F(Scalable, FiveLevelFirstStageNeedsFs5lp)
{
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs, DID, 1 << 2));
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_INV);
}

// --- second stage, nested, pass-through ---

TEST_F(Scalable, SecondStagePgtt)
{
    uint64_t ss = h.alloc_page();
    t.set_pasid(dir, 0, ScalableTables::second_stage(ss, DID));
    t.invalidate_all();
    h.map(ss, 4, 0x1000, 0x5000, 1);  // read-only
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x5000u);
    EXPECT_EQ(out.domain_id, DID);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_WRITE), VTD_FR_SM_WRITE);
    EXPECT_EQ(h.translate(SID, 0x200000, VTD_PERM_READ), VTD_FR_SM_SS_ENTRY_P);
    EXPECT_EQ(h.translate(SID, 1ull << 48, VTD_PERM_READ), VTD_FR_SM_ADDR_BEYOND_AW);
    // SNP in a leaf: accepted without ECAP.SC in scalable mode (Linux 5.13
    // to 5.18 set it in every leaf); in a non-leaf entry still reserved.
    h.map(ss, 4, 0x3000, 0x7000 | 1ull << 11, 3);
    ASSERT_EQ(h.translate(SID, 0x3000, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x7000u);
    EXPECT_EQ(out.perm, VTD_PERM_RW);
    const uint64_t pde = h.pte_addr(ss, 4, 0x3000, 2);
    h.put64(pde, h.get64(pde) | 1ull << 11);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x3000, VTD_PERM_READ), VTD_FR_SM_SS_ENTRY_RSVD);
    h.put64(pde, h.get64(pde) & ~(1ull << 11));
    t.invalidate_all();
    EXPECT_EQ(json_counter(h.stats(), "pgtt", "second_stage"), 6u);
    // SSPTPTR outside RAM.
    t.set_pasid(dir, 0, ScalableTables::second_stage(0x40000000, DID));
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_SS_TOP_INV);
    // AW the unit does not offer (5-level at 48 bits).
    t.set_pasid(dir, 0, ScalableTables::second_stage(ss, DID, 5));
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_INV);
}

TEST_F(Scalable, NestedTranslation)
{
    // Guest-physical layout: the first-stage tables at GPA 0x10000.. and
    // the page at GPA 0x80000; the second stage maps GPA 0..1 MiB to host
    // 0x400000.. (2 MiB page at 0 -> 0x400000).
    uint64_t ss = h.alloc_page();
    h.map(ss, 4, 0, 0x400000, 3, 2);
    // First-stage tables live in host memory at 0x400000 + GPA.
    const uint64_t fs_gpa = 0x10000;
    auto host_of = [](uint64_t gpa) { return 0x400000 + gpa; };
    std::memset(h.ram.data() + host_of(fs_gpa), 0, 4 * 4096);
    h.put64(host_of(fs_gpa), (fs_gpa + 0x1000) | FS_P | FS_RW | FS_US);
    h.put64(host_of(fs_gpa + 0x1000), (fs_gpa + 0x2000) | FS_P | FS_RW | FS_US);
    h.put64(host_of(fs_gpa + 0x2000), (fs_gpa + 0x3000) | FS_P | FS_RW | FS_US);
    h.put64(host_of(fs_gpa + 0x3000) + 5 * 8, 0x80000 | FS_P | FS_RW | FS_US);
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs_gpa, DID, 0, PGTT_NESTED, ss, 4));
    t.invalidate_all();
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x5123, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x480000u);
    EXPECT_EQ(out.addr_mask, 0xfffu);  // min(4 KiB first stage, 2 MiB second)
    // A/D flags were set through the second stage, in host memory.
    EXPECT_TRUE(h.get64(host_of(fs_gpa + 0x3000) + 5 * 8) & FS_D);
    const std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "first_stage", "nested_second_stage_walks"), 5u);
    EXPECT_EQ(json_counter(s, "pgtt", "nested"), 1u);

    // Output the second stage does not map.
    h.put64(host_of(fs_gpa + 0x3000) + 6 * 8, 0x300000 | FS_P | FS_RW | FS_US);
    EXPECT_EQ(h.translate(SID, 0x6000, VTD_PERM_READ), VTD_FR_SM_SS_ENTRY_P);
    // A lower first-stage table the second stage does not map.
    h.put64(host_of(fs_gpa + 0x2000) + 8, 0x300000 | FS_P | FS_RW | FS_US);
    EXPECT_EQ(h.translate(SID, 0x200000, VTD_PERM_READ), VTD_FR_SM_NESTED_FS_READ);
    // A first-stage table beyond a 3-level second stage's 39 bits.
    uint64_t ss3 = h.alloc_page();
    h.map(ss3, 3, 0, 0x400000, 3, 2);
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs_gpa, DID, 0, PGTT_NESTED, ss3, 3));
    t.invalidate_all();
    h.put64(host_of(fs_gpa + 0x2000) + 16, (1ull << 40) | FS_P | FS_RW | FS_US);
    EXPECT_EQ(h.translate(SID, 0x400000, VTD_PERM_READ), VTD_FR_SM_NESTED_FS_BEYOND_AW);
    // The second stage maps the tables read-only: the A/D update faults.
    uint64_t ss_ro = h.alloc_page();
    h.map(ss_ro, 4, 0, 0x400000, 1, 2);
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs_gpa, DID, 0, PGTT_NESTED, ss_ro, 4));
    t.invalidate_all();
    h.put64(host_of(fs_gpa + 0x3000) + 7 * 8, 0x80000 | FS_P | FS_RW | FS_US);
    EXPECT_EQ(h.translate(SID, 0x7000, VTD_PERM_READ), VTD_FR_SM_NESTED_FS_WRITE);
    // FSPTPTR the second stage does not map.
    t.set_pasid(dir, 0, ScalableTables::first_stage(0x300000, DID, 0, PGTT_NESTED, ss, 4));
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x5000, VTD_PERM_READ), VTD_FR_SM_NESTED_FS_TOP_READ);
}

// Nested: the second stage checks the output after the first-stage walk,
// which has set the leaf's D for the write it permitted; the write the
// second stage then denies faults 85h and leaves D set.
TEST_F(Scalable, NestedWriteTheSecondStageDeniesLeavesDirtySet)
{
    uint64_t ss = h.alloc_page();
    for (uint64_t gpa = 0; gpa < h.ram.size(); gpa += 0x200000)
        h.map(ss, 4, gpa, gpa, 3, 2);     // the tables: identity, read-write
    h.map(ss, 4, 0x1000000, 0x90000, 1);  // the page: read-only
    uint64_t fs2 = h.alloc_page();
    t.map_fs(fs2, 0x5000, 0x1000000, FS_RW | FS_US | FS_A);
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs2, DID, 0, PGTT_NESTED, ss, 4));
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x5000, VTD_PERM_WRITE), VTD_FR_SM_WRITE);
    EXPECT_TRUE(h.get64(t.fs_pte(fs2, 0x5000, 1)) & FS_D);
    EXPECT_EQ(h.translate(SID, 0x5000, VTD_PERM_READ), VTD_FR_NONE);
}

TEST_F(Scalable, PassThroughPgtt)
{
    t.set_pasid(dir, 0, ScalableTables::pass_through(DID));
    t.invalidate_all();
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x12345678, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x12345000u);
    EXPECT_TRUE(vtd_engine_is_pass_through(h.e, SID));
    EXPECT_EQ(json_counter(h.stats(), "pgtt", "pass_through"), 1u);
}

TEST(ScalableConfigWalk, LegacyTablesStillWorkOnAScalableUnit)
{
    FakeHost l{8 << 20, scalable_config()};
    uint64_t pt = l.alloc_page();
    l.set_context(SID, pt, DID, 4);
    l.map(pt, 4, 0x1000, 0x5000, 3);
    l.enable_translation();  // TTM = legacy
    EXPECT_EQ(l.translate(SID, 0x1000, VTD_PERM_WRITE), VTD_FR_NONE);
    VtdTranslation out{};
    EXPECT_EQ(vtd_engine_translate_pasid(l.e, SID, 5, false, 0x1000, VTD_PERM_READ, true, &out),
              VTD_FR_SM_TTM0_PASID);
}

// RTADDR.TTM must not change while translation is enabled: an SRTP with
// TES set latches the new table but not a new mode; with TES clear the
// mode changes.
TEST(ScalableConfigWalk, TtmDoesNotChangeWhileTranslationIsEnabled)
{
    FakeHost h{8 << 20, scalable_config()};
    ScalableTables t{h};
    uint64_t dir = t.set_context(SID);
    uint64_t fs = h.alloc_page();
    t.map_fs(fs, 0x1000, 0x9000, FS_RW | FS_US);
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs, DID));
    t.enable();
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_NONE);

    // Legacy mode asked for while TES is set: still scalable mode.
    h.w64(RTADDR, t.root);
    h.w32(GCMD, h.gcmd_shadow | SRTP);
    EXPECT_TRUE(h.mmio32(GSTS) & SRTP) << "RTPS: the pointer is latched";
    EXPECT_EQ(h.mmio64(RTADDR), t.root) << "the register holds what was written";
    VtdState st{};
    vtd_engine_get_state(h.e, &st);
    EXPECT_EQ(st.root_table, t.root | 1u << 10);
    VtdTranslation out{};
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x9000u);
    EXPECT_EQ(vtd_engine_translate_pasid(h.e, SID, 5, false, 0x1000, VTD_PERM_READ, true, &out),
              VTD_FR_SM_PASID_ENTRY_P)
        << "a request with PASID is not refused as in legacy mode";

    // The same switch with TES clear takes effect.
    h.gcmd_shadow &= ~TE;
    h.w32(GCMD, h.gcmd_shadow);
    h.w32(GCMD, h.gcmd_shadow | SRTP);
    vtd_engine_get_state(h.e, &st);
    EXPECT_EQ(st.root_table, t.root);
    h.gcmd_shadow |= TE;
    h.w32(GCMD, h.gcmd_shadow);
    EXPECT_EQ(vtd_engine_translate_pasid(h.e, SID, 5, false, 0x1000, VTD_PERM_READ, true, &out),
              VTD_FR_SM_TTM0_PASID);

    // And back to scalable mode while TES is set: stays legacy.
    h.w64(RTADDR, t.root | 1u << 10);
    h.w32(GCMD, h.gcmd_shadow | SRTP);
    vtd_engine_get_state(h.e, &st);
    EXPECT_EQ(st.root_table, t.root);
}

// --- RID_PASID and requests with PASID ---

TEST_F(Scalable, RequestsWithoutPasidUseRidPasid)
{
    uint64_t fs5 = h.alloc_page();
    t.map_fs(fs5, 0x1000, 0x9000, FS_RW | FS_US);
    t.set_pasid(dir, 5, ScalableTables::first_stage(fs5, DID + 5));
    t.set_context(SID, dir, 0, 5);
    t.invalidate_all();
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x9000u);
    EXPECT_EQ(out.domain_id, DID + 5);
}

TEST(ScalableConfigWalk, RidPasidBeyondThePasidWidth)
{
    VtdConfig c = scalable_config();
    c.pasid_bits = 4;
    FakeHost h{8 << 20, c};
    ScalableTables t{h};
    t.set_context(SID, 0, 0, 16);
    t.enable();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_RID_PASID_INV);
}

TEST_F(Scalable, RequestsWithPasid)
{
    const uint32_t PASID = 0x4321;  // directory entry 0x10c: needs PDTS >= 2
    uint64_t dir2 = t.set_context(SID, 0, 2);
    t.set_pasid(dir2, 0, ScalableTables::first_stage(fs, DID));
    uint64_t fs2 = h.alloc_page();
    t.map_fs(fs2, 0x1000, 0xa000, FS_RW | FS_US);
    t.set_pasid(dir2, PASID, ScalableTables::first_stage(fs2, 40));
    t.invalidate_all();
    VtdTranslation out{};
    ASSERT_EQ(pasid_translate(PASID, false, 0x1000, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0xa000u);
    EXPECT_EQ(out.domain_id, 40);
    // Without PASID the same address is RID_PASID's (nothing mapped).
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    EXPECT_EQ(json_counter(h.stats(), "scalable", "requests_with_pasid"), 1u);
    // A fault of a request with PASID records it: PP (bit 95), PV (123:104).
    EXPECT_EQ(pasid_translate(PASID, false, 0x2000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    uint64_t hi = record_hi(1);
    EXPECT_TRUE(hi & (1ull << 31));
    EXPECT_EQ((hi >> 40) & 0xfffff, PASID);
    EXPECT_EQ((hi >> 32) & 0xff, VTD_FR_SM_FS_ENTRY_P);
    EXPECT_FALSE(record_hi(0) & (1ull << 31));  // the request without PASID
    // Beyond the directory (PDTS 2: 512 entries, PASIDs below 2^15).
    EXPECT_EQ(pasid_translate(1u << 15, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_BEYOND_PDTS);
    EXPECT_EQ(pasid_translate(1u << 20, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_BEYOND_PDTS);
    // PASIDE clear: requests with PASID are blocked.
    t.set_context(SID, dir2, 2, 0, false);
    t.invalidate_all();
    EXPECT_EQ(pasid_translate(PASID, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_CONTEXT_PASIDE);
}

// The fault record of a request with PASID says whether the request asked
// for supervisor privilege: PRIV (bit 93), meaningful with PP (bit 95).
TEST_F(Scalable, FaultRecordsOfSupervisorRequestsSetPriv)
{
    constexpr uint64_t PP = 1ull << 31, PRIV = 1ull << 29;
    uint64_t fs2 = h.alloc_page();
    uint64_t ss = h.alloc_page();
    t.set_pasid(dir, 5, ScalableTables::first_stage(fs2, DID + 1, 1));        // SRE
    t.set_pasid(dir, 6, ScalableTables::first_stage(fs2, DID + 1));           // SRE clear
    t.set_pasid(dir, 7, ScalableTables::second_stage(ss, DID + 2, 4, true));  // SRE
    EXPECT_EQ(pasid_translate(5, true, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    EXPECT_EQ(pasid_translate(5, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    EXPECT_EQ(pasid_translate(6, true, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_SRE);
    EXPECT_EQ(pasid_translate(7, true, 0x1000, VTD_PERM_READ), VTD_FR_SM_SS_ENTRY_P);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    EXPECT_EQ(json_counter(h.stats(), "faults", "recorded"), 5u);
    EXPECT_EQ(record_hi(0) & (PP | PRIV), PP | PRIV) << "supervisor";
    EXPECT_EQ(record_hi(1) & (PP | PRIV), PP) << "user: a record of its own";
    EXPECT_EQ(record_hi(2) & (PP | PRIV), PP | PRIV) << "SRE clear";
    EXPECT_EQ((record_hi(2) >> 32) & 0xff, uint64_t{VTD_FR_SM_PASID_ENTRY_SRE});
    EXPECT_EQ(record_hi(3) & (PP | PRIV), PP | PRIV) << "second stage";
    EXPECT_EQ(record_hi(4) & (PP | PRIV), 0u) << "without PASID";
}

// User-level requests with PASID through first-stage tables fill and hit
// the IOTLB under (DID, PASID) until a P_IOTLB of that PASID; supervisor
// requests too, under an address space of their own (a leaf's permissions
// depend on the privilege: SupervisorRequestsHaveEntriesOfTheirOwn).
TEST_F(Scalable, FirstStageRequestsWithPasidUseTheIotlb)
{
    const uint32_t PASID = 21;
    uint64_t fs2 = h.alloc_page();
    t.map_fs(fs2, 0x1000, 0x5000, FS_RW | FS_US | FS_A | FS_D);
    t.set_pasid(dir, PASID, ScalableTables::first_stage(fs2, DID + 2, 1));  // SRE
    h.enable_qi(0, true);
    auto walks = [&] { return json_counter(h.stats(), "translate", "page_walks"); };
    VtdTranslation out{};
    ASSERT_EQ(pasid_translate(PASID, false, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(walks(), 1u);
    ASSERT_EQ(pasid_translate(PASID, false, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(walks(), 1u) << "an IOTLB hit";
    ASSERT_EQ(pasid_translate(PASID, true, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(walks(), 2u) << "a supervisor request fills entries of its own";
    ASSERT_EQ(pasid_translate(PASID, true, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(walks(), 2u) << "and hits them";
    // A changed leaf is not seen until the P_IOTLB of the PASID, which
    // drops the supervisor entries too.
    h.put64(t.fs_pte(fs2, 0x1000, 1), 0x6000 | FS_P | FS_RW | FS_US | FS_A | FS_D);
    for (bool sup : {false, true}) {
        ASSERT_EQ(pasid_translate(PASID, sup, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
        EXPECT_EQ(out.phys_base, 0x5000u);
    }
    h.submit(FakeHost::piotlb_desc(2, DID + 2, PASID + 1), 0);  // another PASID
    for (bool sup : {false, true}) {
        ASSERT_EQ(pasid_translate(PASID, sup, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
        EXPECT_EQ(out.phys_base, 0x5000u);
    }
    h.submit(FakeHost::piotlb_desc(2, DID + 2, PASID), 0);
    for (bool sup : {false, true}) {
        ASSERT_EQ(pasid_translate(PASID, sup, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
        EXPECT_EQ(out.phys_base, 0x6000u) << "supervisor " << sup;
    }
    // The same for a page-selective P_IOTLB.
    h.put64(t.fs_pte(fs2, 0x1000, 1), 0x7000 | FS_P | FS_RW | FS_US | FS_A | FS_D);
    h.submit(FakeHost::piotlb_desc(3, DID + 2, PASID), 0x1000);
    for (bool sup : {false, true}) {
        ASSERT_EQ(pasid_translate(PASID, sup, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
        EXPECT_EQ(out.phys_base, 0x7000u) << "supervisor " << sup;
    }
    // Requests without PASID (RID_PASID 0, another address space) are not
    // served from PASID 21's entries.
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
}

// A page-selective P_IOTLB with AM above MAMV (Linux 6.1 unmapping 2 GiB
// or more in one sync) drops the PASID's translations, supervisor ones
// included; another PASID's stay.
TEST_F(Scalable, PasidIotlbAboveMamvDropsThePasid)
{
    const uint32_t PASID = 23;
    uint64_t fs2 = h.alloc_page();
    t.map_fs(fs2, 0x1000, 0x5000, FS_RW | FS_US | FS_A | FS_D);
    t.set_pasid(dir, PASID, ScalableTables::first_stage(fs2, DID + 2, 1));
    t.set_pasid(dir, PASID + 1, ScalableTables::first_stage(fs2, DID + 2, 1));
    h.enable_qi(0, true);
    for (uint32_t p : {PASID, PASID + 1})
        for (bool sup : {false, true})
            ASSERT_EQ(pasid_translate(p, sup, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    h.put64(t.fs_pte(fs2, 0x1000, 1), 0);
    h.submit(FakeHost::piotlb_desc(3, DID + 2, PASID), 19);  // 2^19 pages from 0
    EXPECT_FALSE(h.mmio32(FSTS) & (1u << 4)) << "IQE";
    for (bool sup : {false, true}) {
        EXPECT_EQ(pasid_translate(PASID, sup, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
        EXPECT_EQ(pasid_translate(PASID + 1, sup, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    }
    EXPECT_EQ(json_counter(h.stats(), "pasid_iotlb", "page_as_pasid"), 1u);
}

// P_IOTLB descriptors count for their domain in the statistics, as the
// legacy IOTLB descriptors do: PASID-selective as domain_invalidations,
// page-selective as page_invalidations; another domain's count nothing.
TEST_F(Scalable, PasidIotlbInvalidationsCountForTheirDomain)
{
    const uint32_t PASID = 22;
    uint64_t fs2 = h.alloc_page();
    t.map_fs(fs2, 0x1000, 0x5000, FS_RW | FS_US | FS_A | FS_D);
    t.set_pasid(dir, PASID, ScalableTables::first_stage(fs2, DID + 2, 1));
    h.enable_qi(0, true);
    ASSERT_EQ(pasid_translate(PASID, false, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    h.submit(FakeHost::piotlb_desc(3, DID + 2, PASID), 0x1000);
    h.submit(FakeHost::piotlb_desc(3, DID + 2, PASID), 0x2000);
    h.submit(FakeHost::piotlb_desc(2, DID + 2, PASID), 0);
    h.submit(FakeHost::piotlb_desc(3, DID + 3, PASID), 0x1000);
    const std::string s = h.stats();
    const size_t d = s.find("{\"id\":" + std::to_string(DID + 2) + ",");
    ASSERT_NE(d, std::string::npos);
    EXPECT_EQ(json_counter(s.substr(d), "", "page_invalidations"), 2u);
    EXPECT_EQ(json_counter(s.substr(d), "", "domain_invalidations"), 1u);
    EXPECT_EQ(s.find("{\"id\":" + std::to_string(DID + 3) + ","), std::string::npos)
        << "a domain never translated in is not listed";
}

// A supervisor request and a user-level one to the same page get their own
// answers from the IOTLB: with WPE clear, supervisor requests write a
// read-only page and reach a supervisor page, user-level ones do neither,
// in whatever order the two kinds fill and hit.
TEST_F(Scalable, SupervisorRequestsHaveEntriesOfTheirOwn)
{
    const uint32_t PASID = 33;
    uint64_t fs2 = h.alloc_page();
    t.map_fs(fs2, 0x1000, 0x5000, FS_US | FS_A | FS_D);                     // read-only user page
    t.map_fs(fs2, 0x2000, 0x6000, FS_RW | FS_A | FS_D);                     // supervisor page
    t.set_pasid(dir, PASID, ScalableTables::first_stage(fs2, DID + 3, 1));  // SRE, WPE clear
    h.enable_qi(0, true);
    auto walks = [&] { return json_counter(h.stats(), "translate", "page_walks"); };
    VtdTranslation out{};
    for (int round = 0; round < 2; round++) {
        const uint64_t before = walks();
        EXPECT_EQ(pasid_translate(PASID, false, 0x1000, VTD_PERM_WRITE), VTD_FR_SM_WRITE);
        ASSERT_EQ(pasid_translate(PASID, true, 0x1000, VTD_PERM_WRITE, &out), VTD_FR_NONE);
        EXPECT_EQ(out.perm, VTD_PERM_RW);
        ASSERT_EQ(pasid_translate(PASID, false, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
        EXPECT_EQ(out.perm, VTD_PERM_READ) << "the user-level entry, not the supervisor one";
        EXPECT_EQ(pasid_translate(PASID, false, 0x2000, VTD_PERM_READ), VTD_FR_SM_FS_USER);
        ASSERT_EQ(pasid_translate(PASID, true, 0x2000, VTD_PERM_READ, &out), VTD_FR_NONE);
        EXPECT_EQ(out.phys_base, 0x6000u);
        EXPECT_EQ(pasid_translate(PASID, false, 0x2000, VTD_PERM_READ), VTD_FR_SM_FS_USER)
            << "a cached supervisor leaf does not answer a user-level request";
        if (round == 1) {
            EXPECT_EQ(walks(), before + 3) << "only the three user-level requests that fault walk";
        }
    }
}

TEST_F(Scalable, RequestsWithPasidThroughSecondStageAndPassThrough)
{
    uint64_t ss = h.alloc_page();
    h.map(ss, 4, 0x1000, 0x5000, 3);
    t.set_pasid(dir, 3, ScalableTables::second_stage(ss, 30));
    t.set_pasid(dir, 4, ScalableTables::pass_through(31));
    VtdTranslation out{};
    ASSERT_EQ(pasid_translate(3, false, 0x1000, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x5000u);
    EXPECT_EQ(pasid_translate(3, false, 0x2000, VTD_PERM_WRITE), VTD_FR_SM_SS_ENTRY_P);
    ASSERT_EQ(pasid_translate(4, false, 0x123000, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x123000u);
    // Supervisor requests need SRE in every PGTT (Linux sets it in these
    // entries, and clears it in RID2PASID's to block them).
    EXPECT_EQ(pasid_translate(3, true, 0x1000, VTD_PERM_WRITE), VTD_FR_SM_PASID_ENTRY_SRE);
    EXPECT_EQ(pasid_translate(4, true, 0x123000, VTD_PERM_WRITE), VTD_FR_SM_PASID_ENTRY_SRE);
    t.set_pasid(dir, 5, ScalableTables::second_stage(ss, 32, 4, true));
    t.set_pasid(dir, 6, ScalableTables::pass_through(33, true));
    ASSERT_EQ(pasid_translate(5, true, 0x1000, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x5000u);
    ASSERT_EQ(pasid_translate(6, true, 0x123000, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x123000u);
}

// No first-stage or nested translation, and no request with PASID passed
// through, may produce an address in the interrupt range (87h), whether
// the leaf comes from a walk or from the IOTLB; the rest of a large leaf
// over the range translates a page at a time.
TEST_F(Scalable, OutputInTheInterruptRangeIsBlocked)
{
    const uint32_t PASID = 12;
    t.map_fs(fs, 0x1000, 0xfee00000ull, FS_RW | FS_US | FS_A | FS_D);
    t.map_fs(fs, 0x40000000, 0xfee00000ull, FS_RW | FS_US | FS_A | FS_D, 2);
    t.set_pasid(dir, PASID, ScalableTables::first_stage(fs, DID, 1));  // SRE
    for (int pass = 0; pass < 2; pass++) {
        const char *what = pass ? "an IOTLB hit" : "a walk";
        EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_INTERRUPT_ADDR) << what;
        EXPECT_EQ(pasid_translate(PASID, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_INTERRUPT_ADDR)
            << what;
        EXPECT_EQ(pasid_translate(PASID, true, 0x1000, VTD_PERM_WRITE), VTD_FR_SM_INTERRUPT_ADDR)
            << what;
    }
    EXPECT_EQ((record_hi(0) >> 32) & 0xff, uint64_t{VTD_FR_SM_INTERRUPT_ADDR});
    // The 2 MiB leaf: its upper half first, so that the lower half hits.
    VtdTranslation out{};
    for (int pass = 0; pass < 2; pass++) {
        ASSERT_EQ(h.translate(SID, 0x40100010, VTD_PERM_READ, &out), VTD_FR_NONE);
        EXPECT_EQ(out.iova_base, 0x40100000u);
        EXPECT_EQ(out.phys_base, 0xfef00000u);
        EXPECT_EQ(out.addr_mask, 0xfffu) << "not the whole leaf, which covers the range";
        ASSERT_EQ(pasid_translate(PASID, false, 0x40100010, VTD_PERM_READ, &out), VTD_FR_NONE);
        EXPECT_EQ(out.addr_mask, 0xfffu);
    }
    EXPECT_EQ(h.translate(SID, 0x40000000, VTD_PERM_READ), VTD_FR_SM_INTERRUPT_ADDR);
    EXPECT_EQ(pasid_translate(PASID, false, 0x400ff000, VTD_PERM_READ), VTD_FR_SM_INTERRUPT_ADDR);

    // Nested: the first stage's output, translated by the second, lands
    // there (GPA 16 MiB -> host 0xfee00000).
    uint64_t ss = h.alloc_page();
    for (uint64_t gpa = 0; gpa < h.ram.size(); gpa += 0x200000)
        h.map(ss, 4, gpa, gpa, 3, 2);  // RAM, where the tables are: identity
    h.map(ss, 4, 0x1000000, 0xfee00000ull, 3);
    uint64_t fs2 = h.alloc_page();
    t.map_fs(fs2, 0x5000, 0x1000000, FS_RW | FS_US | FS_A | FS_D);
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs2, DID, 0, PGTT_NESTED, ss, 4));
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x5000, VTD_PERM_READ), VTD_FR_SM_INTERRUPT_ADDR);
    EXPECT_EQ(h.translate(SID, 0x5000, VTD_PERM_READ), VTD_FR_SM_INTERRUPT_ADDR) << "the IOTLB too";

    // PGTT pass-through, request with PASID: the address is the output.
    t.set_pasid(dir, PASID + 1, ScalableTables::pass_through(DID + 1));
    EXPECT_EQ(pasid_translate(PASID + 1, false, 0xfee01000, VTD_PERM_WRITE),
              VTD_FR_SM_INTERRUPT_ADDR);
    ASSERT_EQ(pasid_translate(PASID + 1, false, 0xfef00000, VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0xfef00000u);
}

// --- entry formats: presence, access errors and reserved bits ---

TEST_F(Scalable, RootAndContextEntryFaults)
{
    // Root entry outside RAM: a root table at the end of RAM.
    const uint16_t far = 0xff00;
    EXPECT_EQ(h.translate(far, 0x1000, VTD_PERM_READ), VTD_FR_SM_ROOT_ENTRY_P);
    // Upper half not present for devfn >= 128 while the lower one is.
    EXPECT_EQ(h.translate(SID | 0x80, 0x1000, VTD_PERM_READ), VTD_FR_SM_ROOT_ENTRY_P);
    const uint64_t re = t.root + (SID >> 8) * 16;
    const uint64_t lo = h.get64(re);
    h.put64(re, lo | 0x10);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_ROOT_ENTRY_RSVD);
    h.put64(re, 0x40000000 | 1);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_CONTEXT_ENTRY_INV_ACCESS);
    h.put64(re, lo);

    const uint64_t ce = t.context_entry(SID);
    const uint64_t ce_lo = h.get64(ce);
    struct Case {
        unsigned word;
        uint64_t bits;
        VtdFaultReason r;
    } cases[] = {
        {0, 1ull << 5, VTD_FR_SM_CONTEXT_ENTRY_RSVD},   // bits 8:5
        {0, 1ull << 4, VTD_FR_SM_CONTEXT_ENTRY_RSVD},   // PRE: no page requests
        {0, 1ull << 2, VTD_FR_SM_CONTEXT_ENTRY_RSVD},   // DTE: no device-TLB
        {0, 1ull << 50, VTD_FR_SM_CONTEXT_ENTRY_RSVD},  // above HAW
        {1, 1ull << 20, VTD_FR_SM_CONTEXT_ENTRY_RSVD},  // RID_PRIV
        {2, 1, VTD_FR_SM_CONTEXT_ENTRY_RSVD},           // bits 255:128
        {3, 1ull << 63, VTD_FR_SM_CONTEXT_ENTRY_RSVD},
    };
    for (const Case &c : cases) {
        const uint64_t a = ce + c.word * 8;
        const uint64_t v = h.get64(a);
        h.put64(a, v | c.bits);
        t.invalidate_all();
        EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), c.r) << c.word << " " << c.bits;
        h.put64(a, v);
    }
    h.put64(ce, ce_lo & ~1ull);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_CONTEXT_ENTRY_P);
    h.put64(ce, ce_lo);
    // The root table itself outside RAM.
    h.w64(RTADDR, 0x17ff000 | 1u << 10);
    h.w32(GCMD, h.gcmd_shadow | SRTP);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_ROOT_ENTRY_INV);
}

TEST_F(Scalable, PasidDirectoryAndTableFaults)
{
    t.map_fs(fs, 0x1000, 0x5000, FS_RW | FS_US);
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    const uint64_t de = dir;
    const uint64_t de_v = h.get64(de);
    auto expect = [&](VtdFaultReason r, const char *what) {
        t.invalidate_all();
        EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), r) << what;
    };
    h.put64(de, de_v & ~1ull);
    expect(VTD_FR_SM_PASID_DIR_P, "directory entry not present");
    h.put64(de, de_v | 1u << 4);
    expect(VTD_FR_SM_PASID_DIR_RSVD, "directory entry bits 11:2");
    h.put64(de, 0x40000000 | 1);
    expect(VTD_FR_SM_PASID_ENTRY_INV_ACCESS, "PASID table outside RAM");
    h.put64(de, de_v);

    auto w = ScalableTables::first_stage(fs, DID);
    auto with = [&](unsigned word, uint64_t v, VtdFaultReason r, const char *what) {
        auto x = w;
        x[word] = v;
        t.set_pasid(dir, 0, x);
        expect(r, what);
    };
    with(0, 0, VTD_FR_SM_PASID_ENTRY_P, "not present");
    with(0, w[0] | 1u << 10, VTD_FR_SM_PASID_ENTRY_RSVD, "word 0 bits 11:10");
    with(1, w[1] | 1u << 16, VTD_FR_SM_PASID_ENTRY_RSVD, "word 1 bits 22:16");
    with(1, w[1] | 1u << 25, VTD_FR_SM_PASID_ENTRY_RSVD, "word 1 bits 63:25");
    // PGSNP: accepted without ECAP.SC (Linux 5.13 to 5.18 set it).
    with(1, w[1] | 1u << 24, VTD_FR_NONE, "PGSNP without ECAP.SC");
    with(2, w[2] | 1u << 1, VTD_FR_SM_PASID_ENTRY_RSVD, "ERE without ECAP.ERS");
    with(2, w[2] | 1ull << 50, VTD_FR_SM_PASID_ENTRY_RSVD, "FSPTPTR above HAW");
    with(3, 1, VTD_FR_SM_PASID_ENTRY_RSVD, "word 3");
    with(7, 1ull << 63, VTD_FR_SM_PASID_ENTRY_RSVD, "word 7");
    with(0, 1, VTD_FR_SM_PASID_ENTRY_INV, "PGTT 000b");
    with(0, 1 | 5u << 6, VTD_FR_SM_PASID_ENTRY_INV, "PGTT 101b");
    with(2, w[2] | 2u << 2, VTD_FR_SM_PASID_ENTRY_INV, "FSPM 10b");
    auto ss = ScalableTables::second_stage(fs, DID);
    ss[0] |= 1u << 9;  // SSADE without second-stage A/D support
    t.set_pasid(dir, 0, ss);
    expect(VTD_FR_SM_PASID_ENTRY_RSVD, "SSADE");
    // PWSNP is accepted (ECAP.SMPWC).
    with(1, w[1] | 1u << 23, VTD_FR_NONE, "PWSNP");
    with(2, w[2] | 1u << 6, VTD_FR_SM_PASID_ENTRY_RSVD, "word 2 bit 6");
}

// The RID_PASID entry exactly as Linux 6.1 writes it for a DMA domain with
// first-stage tables (intel_pasid_setup_first_level()): AW in word 0 (a
// second-stage field, ignored with PGTT first-stage), PWSNP (ECAP.SMPWC),
// and bit 133 (NXE in the VT-d 3.0 revision); leaves with XD, as 6.1 maps.
TEST_F(Scalable, LinuxFirstStageEntryIsAccepted)
{
    constexpr uint64_t XD = 1ull << 63;
    t.map_fs(fs, 0x1000, 0x5000, FS_RW | FS_US | FS_A | FS_D | XD);
    auto w = ScalableTables::first_stage(fs, DID, 1u << 5);
    w[0] |= 2u << 2;   // AW: agaw 2 (4-level, 48 bits)
    w[1] |= 1u << 23;  // PWSNP
    t.set_pasid(dir, 0, w);
    t.invalidate_all();
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x1234, VTD_PERM_READ | VTD_PERM_WRITE, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x5000u);
}

TEST(ScalableConfigWalk, PgttTheUnitDoesNotOffer)
{
    VtdConfig c = scalable_config();
    c.first_stage = false;
    c.fs1gp = false;
    c.pass_through = false;
    FakeHost h{8 << 20, c};
    ScalableTables t{h};
    uint64_t dir = t.set_context(SID);
    t.set_pasid(dir, 0, ScalableTables::first_stage(h.alloc_page(), DID));
    t.set_pasid(dir, 1, ScalableTables::pass_through(DID));
    t.set_context(0x0311, dir, 0, 1);
    t.enable();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_INV);
    EXPECT_EQ(h.translate(0x0311, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_INV);
}

TEST_F(Scalable, FpdInEveryScalableEntrySuppressesRecording)
{
    auto recorded = [&] { return json_counter(h.stats(), "faults", "recorded"); };
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    EXPECT_EQ(recorded(), 1u);
    // PASID-table entry FPD.
    auto w = ScalableTables::first_stage(fs, DID);
    w[0] |= 2;
    t.set_pasid(dir, 0, w);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    EXPECT_EQ(recorded(), 1u);
    // Directory entry FPD.
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs, DID));
    h.put64(dir, h.get64(dir) | 2);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_FS_ENTRY_P);
    EXPECT_EQ(recorded(), 1u);
    // Context entry FPD, also for a fault of the PASID entry itself.
    h.put64(dir, h.get64(dir) & ~2ull);
    t.set_context(SID, dir, 0, 0, true, true);
    t.set_pasid(dir, 0, {});
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_P);
    EXPECT_EQ(recorded(), 1u);
    EXPECT_EQ(json_counter(h.stats(), "faults", "suppressed_fpd"), 3u);
    EXPECT_EQ(json_counter(h.stats(), "by_reason", "sm_first_stage_entry_not_present"), 3u);
}

// FPD is evaluated whatever P says, in each scalable-mode entry: Linux
// 6.1's intel_pasid_tear_down_entry() with fault_ignore leaves FPD alone
// in a PASID-table entry so that DMA still in flight is not reported.
TEST_F(Scalable, FpdInNotPresentEntriesSuppressesRecording)
{
    auto recorded = [&] { return json_counter(h.stats(), "faults", "recorded"); };
    const uint16_t OTHER = SID + 1;  // its context entry is not present
    const uint64_t ce = t.context_entry(OTHER);
    std::array<uint64_t, 8> fpd_only{};
    fpd_only[0] = 2;
    t.set_pasid(dir, 7, fpd_only);
    h.put64(dir + 2 * 8, 2);  // directory entry of PASIDs 128..191
    h.put64(ce, 2);
    EXPECT_EQ(pasid_translate(7, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_P);
    EXPECT_EQ(pasid_translate(130, true, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_DIR_P);
    EXPECT_EQ(h.translate(OTHER, 0x1000, VTD_PERM_READ), VTD_FR_SM_CONTEXT_ENTRY_P);
    t.set_pasid(dir, 0, fpd_only);  // RID_PASID's
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_P);
    EXPECT_EQ(recorded(), 0u);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(json_counter(h.stats(), "faults", "suppressed_fpd"), 4u);
    // Without FPD the same entries' faults are recorded.
    t.set_pasid(dir, 7, {});
    h.put64(dir + 2 * 8, 0);
    h.put64(ce, 0);
    EXPECT_EQ(pasid_translate(7, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_ENTRY_P);
    EXPECT_EQ(pasid_translate(130, true, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_DIR_P);
    EXPECT_EQ(h.translate(OTHER, 0x1000, VTD_PERM_READ), VTD_FR_SM_CONTEXT_ENTRY_P);
    EXPECT_EQ(recorded(), 3u);
    EXPECT_EQ((record_hi(2) >> 32) & 0xff, uint64_t{VTD_FR_SM_CONTEXT_ENTRY_P});
}

// --- caches ---

TEST_F(Scalable, ContextCacheHoldsThePasidEntryUntilInvalidated)
{
    t.map_fs(fs, 0x1000, 0x5000, FS_RW | FS_US | FS_A | FS_D);
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    // A new PASID entry is not seen until the caches are invalidated.
    uint64_t fs2 = h.alloc_page();
    t.map_fs(fs2, 0x1000, 0x6000, FS_RW | FS_US | FS_A | FS_D);
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs2, DID + 1));
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x5000u);
    t.invalidate_all();
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x6000u);
    EXPECT_EQ(out.domain_id, DID + 1);
    EXPECT_EQ(json_counter(h.stats(), "context_cache", "misses"), 2u);
}

// --- migration ---

TEST(ScalableMigration, TtmAndPasidFaultRecordsRoundTrip)
{
    FakeHost a{8 << 20, scalable_config()};
    ScalableTables t{a};
    t.set_context(SID);
    t.enable();
    VtdTranslation out{};
    EXPECT_EQ(vtd_engine_translate_pasid(a.e, SID, 9, true, 0x1000, VTD_PERM_READ, true, &out),
              VTD_FR_SM_PASID_DIR_P);
    VtdState st{};
    vtd_engine_get_state(a.e, &st);
    EXPECT_EQ((st.fault_records[0].hi >> 29) & 5, 5u) << "PP and PRIV";
    EXPECT_EQ(st.rtaddr & (3u << 10), 1u << 10);
    EXPECT_EQ(st.root_table, t.root | 1u << 10);
    FakeHost b{8 << 20, scalable_config()};
    ASSERT_EQ(vtd_engine_set_state(b.e, &st), VTD_STATE_OK);
    VtdState again{};
    vtd_engine_get_state(b.e, &again);
    EXPECT_EQ(std::memcmp(&st, &again, sizeof(st)), 0);
    // A legacy-only unit holds no TTM, and no PASID in its records.
    VtdState legacy = st;
    FakeHost c;
    legacy.cap = c.cap;
    legacy.ecap = c.ecap;
    EXPECT_EQ(vtd_engine_set_state(c.e, &legacy), VTD_STATE_BAD_GLOBAL);
    legacy.rtaddr &= ~(1ull << 10);
    legacy.root_table &= ~(1ull << 10);
    EXPECT_EQ(vtd_engine_set_state(c.e, &legacy), VTD_STATE_BAD_FAULTS);
}

// --- replay (vtd_engine_walk) ---

namespace {

struct Replayed {
    uint64_t iova, phys, mask;
    uint8_t perm;
    uint16_t did;
    bool operator==(const Replayed &) const = default;
};

std::vector<Replayed> replay(FakeHost &h, uint64_t start, uint64_t end, int *ret = nullptr)
{
    std::vector<Replayed> out;
    auto cb = [](void *ctx, const VtdTranslation *t) {
        static_cast<std::vector<Replayed> *>(ctx)->push_back(
            {t->iova_base, t->phys_base, t->addr_mask, t->perm, t->domain_id});
    };
    const int r = vtd_engine_walk(h.e, SID, start, end, cb, &out);
    if (ret)
        *ret = r;
    return out;
}

}  // namespace

// A second-stage RID_PASID entry replays its leaves.
TEST_F(Scalable, ReplayWalksSecondStageTables)
{
    uint64_t ss = h.alloc_page();
    h.map(ss, 4, 0x1000, 0x5000, 3);
    h.map(ss, 4, 0x2000, 0x6000, 1);
    t.set_pasid(dir, 0, ScalableTables::second_stage(ss, DID));
    t.invalidate_all();
    int ret = -1;
    const auto got = replay(h, 0, 1 << 20, &ret);
    EXPECT_EQ(ret, 0);
    const std::vector<Replayed> want = {{0x1000, 0x5000, 0xfff, VTD_PERM_RW, DID},
                                        {0x2000, 0x6000, 0xfff, VTD_PERM_READ, DID}};
    EXPECT_EQ(got, want);
}

// First-stage RID_PASID: the leaves a request without PASID (a user
// request) can use, 4 KiB, 2 MiB and 1 GiB, with the permissions it gets:
// W only where R/W is set at every level and the leaf is dirty.  Nothing
// is written: no A or D flag appears.
TEST_F(Scalable, ReplayWalksFirstStageTables)
{
    t.map_fs(fs, 0x1000, 0x11000, FS_RW | FS_US | FS_A | FS_D);  // RW
    t.map_fs(fs, 0x2000, 0x12000, FS_US);                        // read-only
    t.map_fs(fs, 0x3000, 0x13000, FS_RW | FS_US);                // clean: R
    t.map_fs(fs, 0x4000, 0x14000, FS_RW);                        // supervisor only
    t.map_fs(fs, 0x5000, 0x15000, FS_RW | FS_US | FS_D);
    h.put64(t.fs_pte(fs, 0x5000, 1), 0x15000 | FS_RW | FS_US);  // not present
    t.map_fs(fs, 0x40000000, 0x200000, FS_RW | FS_US | FS_D, 2);
    t.map_fs(fs, 0x80000000, 0x40000000, FS_RW | FS_US | FS_D, 3);
    // A table that a read-only entry above makes read-only.
    t.map_fs(fs, 0x7f0000200000, 0x16000, FS_RW | FS_US | FS_D);
    h.put64(t.fs_pte(fs, 0x7f0000200000, 2), h.get64(t.fs_pte(fs, 0x7f0000200000, 2)) & ~FS_RW);
    // An upper-half (sign-extended) address.
    t.map_fs(fs, 0xffff800000003000, 0x17000, FS_US);
    std::vector<uint8_t> before = h.ram;

    int ret = -1;
    auto got = replay(h, 0, uint64_t{1} << 48, &ret);
    EXPECT_EQ(ret, 0);
    const std::vector<Replayed> want = {
        {0x1000, 0x11000, 0xfff, VTD_PERM_RW, DID},
        {0x2000, 0x12000, 0xfff, VTD_PERM_READ, DID},
        {0x3000, 0x13000, 0xfff, VTD_PERM_READ, DID},
        {0x40000000, 0x200000, 0x1fffff, VTD_PERM_RW, DID},
        {0x80000000, 0x40000000, 0x3fffffff, VTD_PERM_RW, DID},
        {0x7f0000200000, 0x16000, 0xfff, VTD_PERM_READ, DID},
    };
    EXPECT_EQ(got, want);
    EXPECT_TRUE(h.ram == before) << "replay sets no accessed or dirty flag";
    // What replay reports is what a translation without PASID gets.
    for (const Replayed &r : want) {
        VtdTranslation out{};
        ASSERT_EQ(h.translate(SID, r.iova, VTD_PERM_NONE, &out, false), VTD_FR_NONE) << r.iova;
        EXPECT_EQ(out.phys_base, r.phys);
        EXPECT_EQ(out.addr_mask, r.mask);
        EXPECT_EQ(out.perm, r.perm);
    }
    EXPECT_EQ(h.translate(SID, 0x4000, VTD_PERM_READ), VTD_FR_SM_FS_USER);
    // The range is honoured, upper half included.
    got = replay(h, 0x2000, 0x40000000);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].iova, 0x2000u);
    EXPECT_EQ(got[1].iova, 0x3000u);
    got = replay(h, 0xffff800000000000, UINT64_MAX);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], (Replayed{0xffff800000003000, 0x17000, 0xfff, VTD_PERM_READ, DID}));
}

// 5-level first-stage tables (FSPM, AW 57): a leaf above 48 bits, and the
// upper half from PML5 entries 256-511.
TEST(ScalableConfigWalk, ReplayFiveLevelFirstStage)
{
    FiveLevelFirstStage u;
    u.t.map_fs(u.fs, 0x00f0000012345000ull, 0x9000, FS_RW | FS_US | FS_D, 1, 5);
    u.t.map_fs(u.fs, 0xff00000000001000ull, 0xa000, FS_US, 1, 5);
    auto got = replay(u.h, 0, UINT64_MAX);
    const std::vector<Replayed> want = {{0x00f0000012345000ull, 0x9000, 0xfff, VTD_PERM_RW, DID},
                                        {0xff00000000001000ull, 0xa000, 0xfff, VTD_PERM_READ, DID}};
    EXPECT_EQ(got, want);
}

// Hostile first-stage tables end the walk cleanly: reserved bits and
// tables beyond guest memory skip what they would map, FSPTPTR beyond
// guest memory is the context's fault (73h), and a table whose every entry
// points to itself (2^36 leaves) is cut off by the entry budget.
TEST_F(Scalable, ReplayFirstStageHostileTables)
{
    t.map_fs(fs, 0x1000, 0x11000, FS_RW | FS_US | FS_D);
    t.map_fs(fs, 0x40000000, 0x200000, FS_RW | FS_US | FS_D, 2);
    t.map_fs(fs, 0x40200000, 0x400000, FS_RW | FS_US | FS_D, 2);
    // Low address bits of a 2 MiB page (reserved) and PS in a PML4E
    // (reserved at that level).
    h.put64(t.fs_pte(fs, 0x40200000, 2), 0x400000 | 0x3000 | FS_P | FS_PS | FS_US);
    h.put64(fs + 8, h.alloc_page() | FS_P | FS_US | FS_PS);
    // A page table beyond the 8 MiB of guest memory.
    t.map_fs(fs, 0x600000, 0x12000, FS_US);
    h.put64(t.fs_pte(fs, 0x600000, 2), 0x40000000 | FS_P | FS_RW | FS_US);
    int ret = -1;
    auto got = replay(h, 0, uint64_t{1} << 48, &ret);
    EXPECT_EQ(ret, 0);
    const std::vector<Replayed> want = {{0x1000, 0x11000, 0xfff, VTD_PERM_RW, DID},
                                        {0x40000000, 0x200000, 0x1fffff, VTD_PERM_RW, DID}};
    EXPECT_EQ(got, want);

    // FSPTPTR beyond guest memory.
    t.set_pasid(dir, 0, ScalableTables::first_stage(0x40000000, DID));
    t.invalidate_all();
    got = replay(h, 0, uint64_t{1} << 48, &ret);
    EXPECT_EQ(ret, VTD_FR_SM_FS_TOP_INV);
    EXPECT_TRUE(got.empty());

    // Every entry of the top table points to that table: each level reads
    // it again, and level 1 reads its entries as 4 KiB leaves.
    const uint64_t loop = h.alloc_page();
    for (unsigned i = 0; i < 512; i++)
        h.put64(loop + i * 8, loop | FS_P | FS_RW | FS_US);
    t.set_pasid(dir, 0, ScalableTables::first_stage(loop, DID));
    t.invalidate_all();
    h.record_events = true;
    uint64_t leaves = 0;
    auto count = [](void *ctx, const VtdTranslation *) { ++*static_cast<uint64_t *>(ctx); };
    EXPECT_EQ(vtd_engine_walk(h.e, SID, 0, uint64_t{1} << 47, count, &leaves), VTD_WALK_TRUNCATED);
    EXPECT_GT(leaves, 0u);
    EXPECT_LT(leaves, uint64_t{1} << 24) << "the entry budget bounds the walk";
    ASSERT_FALSE(h.events.empty());
    EXPECT_EQ(h.events.back().kind, VTD_EVENT_REPLAY);
    EXPECT_TRUE(h.events.back().u.replay.truncated);
    EXPECT_EQ(h.events.back().u.replay.leaves, leaves);
    EXPECT_EQ(json_counter(h.stats(), "replay", "truncated"), 1u);
}

// Nested: first-stage leaves translated by the second stage.  The
// first-stage tables live at GPA 0x10000.. (host 0x400000 + GPA through a
// 2 MiB second-stage page); a 4 KiB first-stage leaf's output lands in that
// 2 MiB page, and a 2 MiB first-stage leaf whose output the second stage
// maps with two 4 KiB pages replays as those two pieces.
TEST_F(Scalable, ReplayNestedTranslatesTheOutput)
{
    uint64_t ss = h.alloc_page();
    h.map(ss, 4, 0, 0x400000, 3, 2);
    h.map(ss, 4, 0x200000, 0x600000, 3);
    h.map(ss, 4, 0x201000, 0x700000, 1);
    const uint64_t fs_gpa = 0x10000;
    auto host_of = [](uint64_t gpa) { return 0x400000 + gpa; };
    std::memset(h.ram.data() + host_of(fs_gpa), 0, 4 * 4096);
    const uint64_t table = FS_P | FS_RW | FS_US | FS_A;
    h.put64(host_of(fs_gpa), (fs_gpa + 0x1000) | table);
    h.put64(host_of(fs_gpa + 0x1000), (fs_gpa + 0x2000) | table);
    h.put64(host_of(fs_gpa + 0x2000), (fs_gpa + 0x3000) | table);
    h.put64(host_of(fs_gpa + 0x3000) + 5 * 8, 0x80000 | table | FS_D);
    // iova 0x400000: a 2 MiB leaf to GPA 0x200000.
    h.put64(host_of(fs_gpa + 0x2000) + 2 * 8, 0x200000 | table | FS_PS | FS_D);
    t.set_pasid(dir, 0, ScalableTables::first_stage(fs_gpa, DID, 0, PGTT_NESTED, ss, 4));
    t.invalidate_all();
    int ret = -1;
    auto got = replay(h, 0, uint64_t{1} << 48, &ret);
    EXPECT_EQ(ret, 0);
    const std::vector<Replayed> want = {{0x5000, 0x480000, 0xfff, VTD_PERM_RW, DID},
                                        {0x400000, 0x600000, 0xfff, VTD_PERM_RW, DID},
                                        {0x401000, 0x700000, 0xfff, VTD_PERM_READ, DID}};
    EXPECT_EQ(got, want);
    for (const Replayed &r : want) {
        VtdTranslation out{};
        ASSERT_EQ(h.translate(SID, r.iova, VTD_PERM_NONE, &out, false), VTD_FR_NONE) << r.iova;
        EXPECT_EQ(out.phys_base, r.phys);
        EXPECT_EQ(out.perm, r.perm);
    }
    // FSPTPTR the second stage does not map: the context's fault (75h).
    t.set_pasid(dir, 0, ScalableTables::first_stage(0x300000, DID, 0, PGTT_NESTED, ss, 4));
    t.invalidate_all();
    got = replay(h, 0, uint64_t{1} << 48, &ret);
    EXPECT_EQ(ret, VTD_FR_SM_NESTED_FS_TOP_READ);
    EXPECT_TRUE(got.empty());
}

// vtd_engine_device_context(): RID_PASID's domain and PASID, its
// pass-through, and whether a fault is the PASID entry's.
TEST_F(Scalable, DeviceContextNamesRidPasidsEntry)
{
    VtdDeviceContext c{};
    ASSERT_TRUE(vtd_engine_device_context(h.e, SID, &c));
    EXPECT_EQ(c.fault, VTD_FR_NONE);
    EXPECT_TRUE(c.scalable);
    EXPECT_FALSE(c.pass_through);
    EXPECT_EQ(c.did, DID);
    EXPECT_EQ(c.pasid, 0u);

    const uint64_t dir2 = t.set_context(SID, 0, 0, 7);  // RID_PASID 7
    t.set_pasid(dir2, 7, ScalableTables::pass_through(DID + 1));
    t.invalidate_all();
    ASSERT_TRUE(vtd_engine_device_context(h.e, SID, &c));
    EXPECT_EQ(c.fault, VTD_FR_NONE);
    EXPECT_TRUE(c.pass_through);
    EXPECT_EQ(c.did, DID + 1);
    EXPECT_EQ(c.pasid, 7u);

    t.set_pasid(dir2, 7, {});
    t.invalidate_all();
    ASSERT_TRUE(vtd_engine_device_context(h.e, SID, &c));
    EXPECT_EQ(c.fault, VTD_FR_SM_PASID_ENTRY_P);
    EXPECT_TRUE(c.pasid_entry_fault);

    ASSERT_TRUE(vtd_engine_device_context(h.e, SID + 1, &c));  // no context entry
    EXPECT_EQ(c.fault, VTD_FR_SM_CONTEXT_ENTRY_P);
    EXPECT_FALSE(c.pasid_entry_fault);
    EXPECT_EQ(h.mmio32(FSTS) & 2, 0u) << "no fault recorded (FSTS.PPF clear)";

    h.w32(GCMD, h.gcmd_shadow & ~TE);
    EXPECT_FALSE(vtd_engine_device_context(h.e, SID, &c));
}

// Table pointers outside guest RAM (the host's mem_read fails for MMIO and
// unbacked addresses alike): the PASID directory (50h, for requests with
// and without PASID, recorded with the PASID), and a second-stage table
// below the top one (78h).
TEST_F(Scalable, TablePointersOutsideRam)
{
    t.set_context(SID, 0x40000000);
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_DIR_INV);
    EXPECT_EQ(pasid_translate(3, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_DIR_INV);
    uint64_t pasid_record = 0;
    for (unsigned i = 0; i <= ((h.cap >> 40) & 0xff); i++)  // CAP.NFR + 1 records
        if (((record_hi(i) >> 32) & 0xff) == VTD_FR_SM_PASID_DIR_INV && (record_hi(i) & 1u << 31))
            pasid_record = record_hi(i);
    EXPECT_EQ((pasid_record >> 40) & 0xfffff, 3u) << "recorded with its PASID";

    t.set_context(SID, dir);
    uint64_t ss = h.alloc_page();
    h.put64(ss, 0x40000000 | 3);  // the level-4 entry of IOVA 0 points outside RAM
    t.set_pasid(dir, 0, ScalableTables::second_stage(ss, DID));
    t.invalidate_all();
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_SM_SS_ENTRY_INV);
}

// A PASID beyond the directory (PDTS 0: 128 entries, PASIDs below 8192)
// faults 46h, the record naming the PASID; the last PASID inside does not.
TEST_F(Scalable, PasidBeyondPdtsIsRecordedWithThePasid)
{
    EXPECT_EQ(pasid_translate(8191, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_DIR_P);
    EXPECT_EQ(pasid_translate(8192, false, 0x1000, VTD_PERM_READ), VTD_FR_SM_PASID_BEYOND_PDTS);
    const uint64_t hi = record_hi(1);
    EXPECT_EQ((hi >> 32) & 0xff, VTD_FR_SM_PASID_BEYOND_PDTS);
    EXPECT_TRUE(hi & (1ull << 31));
    EXPECT_EQ((hi >> 40) & 0xfffff, 8192u);
}

// Statistics of requests with PASID: a (DID, PASID) tag reassigned once
// all 65536 are in use is counted; a P_IOTLB range counts at most the
// pages of an address space however large its AM; a PASID wider than the
// unit's is no request that reached the context entry.
TEST(ScalableStats, PasidSpacesRecycledAreCounted)
{
    FakeHost h{64 << 20, scalable_config()};
    ScalableTables t{h};
    const uint16_t sid = 8, did = 3;
    uint64_t dir = t.set_context(sid, 0, 4);  // 2048 directory entries
    uint64_t ss = h.alloc_page();
    h.map(ss, 4, 0x1000, 0x5000, 3);
    const uint32_t n = 65536 + 64 * 8;
    uint64_t table = h.alloc_page();  // one PASID table behind every directory entry
    for (uint32_t d = 0; d < n / 64; d++)
        h.put64(dir + d * 8, table | 1);
    for (uint32_t p = 0; p < 64; p++)
        t.set_pasid(dir, p, ScalableTables::second_stage(ss, did));
    t.enable();
    VtdTranslation out{};
    for (uint32_t p = 1; p < n; p++)
        ASSERT_EQ(vtd_engine_translate_pasid(h.e, sid, p, false, 0x1000, VTD_PERM_READ, true, &out),
                  VTD_FR_NONE)
            << p;
    const std::string j = h.stats();
    EXPECT_GE(json_counter(j, "iotlb", "pasid_spaces_recycled"), n - 1 - 65536) << j;
}

TEST(ScalableStats, PasidIotlbPagesAreBoundedByTheAddressSpace)
{
    FakeHost h{8 << 20, scalable_config()};
    ScalableTables t{h};
    t.set_context(8);
    t.enable();
    h.enable_qi(0, true);
    for (int i = 0; i < 2; i++)
        h.push(FakeHost::piotlb_desc(3, 1, 1), 63);  // AM 63 at address 0
    h.kick();
    const std::string j = h.stats();
    EXPECT_EQ(json_counter(j, "pasid_iotlb", "page"), 2u);
    EXPECT_EQ(json_counter(j, "pasid_iotlb", "pages"), 2 * (uint64_t{1} << (48 - 12)));
}

TEST(ScalableStats, APasidWiderThanTheUnitsIsNoRequestWithPasid)
{
    VtdConfig c = scalable_config();
    c.pasid_bits = 8;
    FakeHost h{8 << 20, c};
    ScalableTables t{h};
    t.set_context(8);
    t.enable();
    VtdTranslation out{};
    EXPECT_EQ(vtd_engine_translate_pasid(h.e, 8, 0x1000, false, 0x1000, VTD_PERM_READ, true, &out),
              VTD_FR_SM_PASID_BEYOND_PDTS);
    EXPECT_EQ(json_counter(h.stats(), "scalable", "requests_with_pasid"), 0u);
}
