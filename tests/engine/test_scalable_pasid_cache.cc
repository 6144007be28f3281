// SPDX-License-Identifier: GPL-2.0-or-later
// The PASID cache on the scalable-mode translate path: a PASID-table
// entry is used from the cache until its invalidation (the specification
// lets the unit cache present entries: software must invalidate after a
// change), and never after it: PASID-cache invalidations of each
// granularity, the P_IOTLB + PASID-cache sequence Linux sends when it
// replaces RID_PASID's entry, device-selective context-cache invalidation
// (only that device's entries go), PASIDE, SRTP, and faulting entries
// (never cached).
#include "scalable_tables.hpp"

using namespace vtdtest;

namespace {

constexpr uint16_t SID = 0x0310, SID2 = 0x0318;
constexpr uint16_t DID = 9, DID2 = 12, DID3 = 14;
constexpr uint32_t PASID = 7;

// First-stage tables: A maps 0x1000 -> 0x5000, B maps 0x1000 -> 0x6000.
struct PasidCached : ::testing::Test {
    FakeHost h{8 << 20, scalable_config()};
    ScalableTables t{h};
    uint64_t dir = 0, dir2 = 0, fs_a = 0, fs_b = 0;
    void SetUp() override
    {
        fs_a = h.alloc_page();
        fs_b = h.alloc_page();
        t.map_fs(fs_a, 0x1000, 0x5000, FS_RW | FS_US | FS_A | FS_D);
        t.map_fs(fs_b, 0x1000, 0x6000, FS_RW | FS_US | FS_A | FS_D);
        dir = t.set_context(SID);
        dir2 = t.set_context(SID2);
        // The devices are in different domains: the IOTLB keys by (DID,
        // PASID), so only the PASID cache tells their entries apart.
        t.set_pasid(dir, 0, ScalableTables::first_stage(fs_a, DID));
        t.set_pasid(dir, PASID, ScalableTables::first_stage(fs_a, DID));
        t.set_pasid(dir2, 0, ScalableTables::first_stage(fs_a, DID2));
        t.set_pasid(dir2, PASID, ScalableTables::first_stage(fs_a, DID2));
        t.enable();
        h.enable_qi(0, true);
    }
    // The physical page of 0x1000 for a request with PASID (0 on a fault).
    uint64_t with_pasid(uint16_t sid = SID, uint32_t pasid = PASID, VtdFaultReason *r = nullptr)
    {
        VtdTranslation out{};
        VtdFaultReason f =
            vtd_engine_translate_pasid(h.e, sid, pasid, false, 0x1000, VTD_PERM_READ, true, &out);
        if (r)
            *r = f;
        return f == VTD_FR_NONE ? out.phys_base : 0;
    }
    uint64_t without_pasid(uint16_t sid = SID)
    {
        VtdTranslation out{};
        return h.translate(sid, 0x1000, VTD_PERM_READ, &out) == VTD_FR_NONE ? out.phys_base : 0;
    }
    // An invalidation descriptor, then a global IOTLB invalidation (what
    // software sends after the PASID cache): whatever the next request
    // sees comes from the PASID cache or the tables.
    void invalidate(uint64_t desc)
    {
        h.submit(desc, 0);
        h.submit(FakeHost::iotlb_desc(1), 0);
    }
    uint64_t counter(const char *section, const char *name)
    {
        return json_counter(h.stats(), section, name);
    }
    // Point (sid's directory, pasid) at table B with `did`, then send the
    // P_IOTLB of the old entry's (DID, PASID) as Linux does: the IOTLB
    // holds nothing of it, only the PASID cache can still hold the old
    // entry (until the PASID-cache invalidation the test sends).
    void change(uint64_t d, uint32_t pasid, uint16_t did = 0)
    {
        const uint16_t old_did = d == dir2 ? DID2 : DID;
        t.set_pasid(d, pasid, ScalableTables::first_stage(fs_b, did ? did : old_did));
        h.submit(FakeHost::piotlb_desc(2, old_did, pasid), 0);
    }
};

}  // namespace

TEST_F(PasidCached, RequestWithPasidHitsWithoutReadingTheTables)
{
    ASSERT_EQ(with_pasid(), 0x5000u);
    EXPECT_EQ(counter("pasid_cache", "misses"), 1u);
    EXPECT_EQ(counter("pasid_cache", "inserts"), 1u);
    const uint64_t read = counter("scalable", "context_and_pasid_entries_read");
    EXPECT_EQ(read, 4u);  // root, context, directory and PASID-table entries
    ASSERT_EQ(with_pasid(), 0x5000u);
    EXPECT_EQ(counter("pasid_cache", "hits"), 1u);
    EXPECT_EQ(counter("scalable", "context_and_pasid_entries_read"), read);
}

TEST_F(PasidCached, ChangedEntryUsedUntilPasidSelectiveInvalidation)
{
    ASSERT_EQ(with_pasid(), 0x5000u);
    change(dir, PASID);
    EXPECT_EQ(with_pasid(), 0x5000u) << "the cached entry stands until invalidated";
    invalidate(FakeHost::pc_desc(1, DID, PASID));
    EXPECT_EQ(with_pasid(), 0x6000u);
    EXPECT_EQ(counter("pasid_cache", "misses"), 2u);
}

TEST_F(PasidCached, ChangedEntryUsedUntilDomainSelectiveInvalidation)
{
    ASSERT_EQ(with_pasid(), 0x5000u);
    change(dir, PASID, DID3);
    invalidate(FakeHost::pc_desc(0, DID3, 0));  // the new domain: not the cached entry's
    EXPECT_EQ(with_pasid(), 0x5000u);
    invalidate(FakeHost::pc_desc(0, DID, 0));  // the cached entry's domain
    VtdTranslation out{};
    ASSERT_EQ(vtd_engine_translate_pasid(h.e, SID, PASID, false, 0x1000, VTD_PERM_READ, true, &out),
              VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x6000u);
    EXPECT_EQ(out.domain_id, DID3);
}

TEST_F(PasidCached, ChangedEntryUsedUntilGlobalInvalidation)
{
    ASSERT_EQ(with_pasid(), 0x5000u);
    ASSERT_EQ(with_pasid(SID2), 0x5000u);
    change(dir, PASID);
    change(dir2, PASID);
    EXPECT_EQ(with_pasid(), 0x5000u);
    invalidate(FakeHost::pc_desc(3, 0, 0));
    EXPECT_EQ(with_pasid(), 0x6000u);
    EXPECT_EQ(with_pasid(SID2), 0x6000u);
}

// What Linux sends when it replaces a device's RID_PASID entry (tear-down
// and set-up: PASID-cache PASID-selective and P_IOTLB with the old
// domain-id); no context-cache invalidation.  Requests without PASID must
// see the new entry, though the context cache held the old one.
TEST_F(PasidCached, RidPasidEntryReplacedWithoutContextInvalidation)
{
    ASSERT_EQ(without_pasid(), 0x5000u);
    change(dir, 0, DID3);
    EXPECT_EQ(without_pasid(), 0x5000u) << "cached until invalidated";
    invalidate(FakeHost::pc_desc(1, DID, 0));
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x6000u);
    EXPECT_EQ(out.domain_id, DID3);
    // The other device's RID_PASID entry was not changed: still right.
    EXPECT_EQ(without_pasid(SID2), 0x5000u);
}

// A context-cache miss of a request without PASID reads the context entry
// for RID_PASID, and takes the PASID-table entry from the PASID cache.
TEST_F(PasidCached, ContextMissTakesRidPasidEntryFromThePasidCache)
{
    ASSERT_EQ(with_pasid(SID, 0), 0x5000u);  // fills (SID, 0)
    const uint64_t read = counter("translate", "context_entries_read");
    ASSERT_EQ(without_pasid(), 0x5000u);
    EXPECT_EQ(counter("pasid_cache", "hits"), 1u);
    EXPECT_EQ(counter("translate", "context_entries_read") - read, 2u)
        << "root and context entries";
}

// Device-selective context-cache invalidation: the device's PASID-cache
// entries go (they were found through its context entry), another
// device's stay.
TEST_F(PasidCached, DeviceSelectiveContextInvalidationRetiresOnlyThatDevice)
{
    ASSERT_EQ(with_pasid(SID), 0x5000u);
    ASSERT_EQ(with_pasid(SID2), 0x5000u);
    change(dir, PASID);
    change(dir2, PASID);
    invalidate(FakeHost::cc_desc(3, DID, SID));
    EXPECT_EQ(with_pasid(SID), 0x6000u);
    EXPECT_EQ(with_pasid(SID2), 0x5000u) << "not invalidated: still cached";
    // A new context entry without PASIDE, once invalidated, blocks
    // requests with PASID even though their entry is cached.
    t.set_context(SID2, dir2, 0, 0, false);
    EXPECT_EQ(with_pasid(SID2), 0x5000u);
    invalidate(FakeHost::cc_desc(3, 0, SID2));
    VtdFaultReason r = VTD_FR_NONE;
    EXPECT_EQ(with_pasid(SID2, PASID, &r), 0u);
    EXPECT_EQ(r, VTD_FR_SM_CONTEXT_PASIDE);
}

// A scalable-mode context entry names no domain, so a domain-selective
// context-cache invalidation drops every cached context entry, whatever
// the domain-id of the RID_PASID entry it was cached with.
TEST_F(PasidCached, DomainSelectiveContextInvalidationDropsEveryContext)
{
    t.set_pasid(dir, 1, ScalableTables::first_stage(fs_b, DID3));
    ASSERT_EQ(without_pasid(), 0x5000u);
    ASSERT_EQ(without_pasid(SID2), 0x5000u);
    t.set_context(SID, dir, 0, 1);  // RID_PASID 0 -> 1
    invalidate(FakeHost::cc_desc(2, DID3));
    VtdTranslation out{};
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ, &out), VTD_FR_NONE);
    EXPECT_EQ(out.phys_base, 0x6000u);
    EXPECT_EQ(out.domain_id, DID3);
    EXPECT_EQ(counter("context_cache", "misses"), 3u) << "SID2's entry went too";
    EXPECT_EQ(without_pasid(SID2), 0x5000u);
    EXPECT_EQ(counter("context_cache", "misses"), 4u);
}

// The function mask covers the source-ids of a device's functions.
TEST_F(PasidCached, ContextInvalidationWithFunctionMask)
{
    ASSERT_EQ(with_pasid(SID), 0x5000u);
    ASSERT_EQ(with_pasid(SID2), 0x5000u);
    change(dir, PASID);
    change(dir2, PASID);
    invalidate(FakeHost::cc_desc(3, 0, SID, 3));  // FM 3: SID..SID | 7 (0x310-0x317)
    EXPECT_EQ(with_pasid(SID), 0x6000u);
    EXPECT_EQ(with_pasid(SID2), 0x5000u);  // 0x318: outside the mask
}

TEST_F(PasidCached, NewRootTableRetiresEveryEntry)
{
    ASSERT_EQ(with_pasid(), 0x5000u);
    change(dir, PASID);
    h.w32(GCMD, h.gcmd_shadow | SRTP);
    EXPECT_EQ(with_pasid(), 0x6000u);
}

TEST_F(PasidCached, FaultingEntriesAreNotCached)
{
    t.set_pasid(dir, 9, {});
    VtdFaultReason r = VTD_FR_NONE;
    EXPECT_EQ(with_pasid(SID, 9, &r), 0u);
    EXPECT_EQ(r, VTD_FR_SM_PASID_ENTRY_P);
    change(dir, 9);
    EXPECT_EQ(with_pasid(SID, 9), 0x6000u) << "a not-present entry is read again";
    EXPECT_EQ(counter("pasid_cache", "inserts"), 1u);
}
