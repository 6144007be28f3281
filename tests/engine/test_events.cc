// SPDX-License-Identifier: GPL-2.0-or-later
// The events the engine reports through VtdHostOps.event: which paths
// report what (misses, walks and their levels, faults and what recording
// did with them, descriptors, queue errors, invalidations by granularity,
// commands), and that a translation hitting the IOTLB reports nothing.
#include <vector>

#include "fake_host.hpp"

using namespace vtdtest;

namespace {

constexpr uint16_t SID = 0x10;
constexpr uint16_t DID = 5;

// Events of `kind` among those recorded.
std::vector<VtdEvent> of(const FakeHost &h, VtdEventKind kind)
{
    std::vector<VtdEvent> r;
    for (const VtdEvent &e : h.events)
        if (e.kind == kind)
            r.push_back(e);
    return r;
}

std::vector<VtdEventKind> kinds(const FakeHost &h)
{
    std::vector<VtdEventKind> r;
    for (const VtdEvent &e : h.events)
        r.push_back(e.kind);
    return r;
}

// Start recording with an empty log.
void record(FakeHost &h)
{
    h.events.clear();
    h.record_events = true;
}

// One page walk, as reported for a translation of `addr`.
VtdEventPageWalk walk_of(FakeHost &h, uint16_t sid, uint64_t addr, unsigned access,
                         VtdFaultReason want = VTD_FR_NONE)
{
    record(h);
    EXPECT_EQ(h.translate(sid, addr, access, nullptr, false), want);
    auto walks = of(h, VTD_EVENT_PAGE_WALK);
    EXPECT_EQ(walks.size(), 1u);
    return walks.empty() ? VtdEventPageWalk{} : walks[0].u.page_walk;
}

}  // namespace

TEST(Events, TranslationHitReportsNothing)
{
    FakeHost h;
    h.domain_with_run(SID, DID, 4, 0x200000);
    record(h);
    ASSERT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    EXPECT_EQ(kinds(h), (std::vector<VtdEventKind>{VTD_EVENT_CONTEXT_MISS, VTD_EVENT_PAGE_WALK}));
    record(h);
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(h.translate(SID, 0x1000 + i * 8, VTD_PERM_RW), VTD_FR_NONE);
    EXPECT_TRUE(h.events.empty()) << h.events.size() << " events for recent translations";
    // Past the per-thread recent translations: context cache and IOTLB hits.
    vtd_engine_stats_reset(h.e);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(h.translate(SID, i * PAGE, VTD_PERM_READ), VTD_FR_NONE);
    h.events.clear();
    vtd_engine_stats_reset(h.e);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(h.translate(SID, i * PAGE, VTD_PERM_READ), VTD_FR_NONE);
    EXPECT_TRUE(h.events.empty()) << h.events.size() << " events for IOTLB hits";
    EXPECT_EQ(json_counter(h.stats(), "iotlb", "hits"), 4u) << h.stats();
}

TEST(Events, ContextMissNamesTheContext)
{
    FakeHost h;
    uint64_t pt = h.domain_with_run(SID, DID, 1, 0x200000);
    h.set_context(0x11, 0, 9, 4, 2);  // pass-through
    record(h);
    h.translate(SID, 0, VTD_PERM_READ);
    h.translate(0x11, 0, VTD_PERM_READ);
    h.translate(0x0300, 0, VTD_PERM_READ, nullptr, false);  // bus 3: no root entry
    auto misses = of(h, VTD_EVENT_CONTEXT_MISS);
    ASSERT_EQ(misses.size(), 3u);
    const auto &m = misses[0].u.context_miss;
    EXPECT_EQ(m.sid, SID);
    EXPECT_EQ(m.fault, VTD_FR_NONE);
    EXPECT_EQ(m.did, DID);
    EXPECT_EQ(m.levels, 4);
    EXPECT_EQ(m.slptptr, pt);
    EXPECT_EQ(m.tt, 0);
    EXPECT_EQ(misses[1].u.context_miss.tt, 2) << "pass-through";
    EXPECT_EQ(misses[1].u.context_miss.did, 9);
    EXPECT_EQ(misses[2].u.context_miss.sid, 0x0300);
    EXPECT_EQ(misses[2].u.context_miss.fault, VTD_FR_ROOT_ENTRY_P);
}

TEST(Events, PageWalkLevels)
{
    FakeHost h;
    uint64_t pt = h.alloc_page();
    h.set_context(SID, pt, DID, 4);
    h.map(pt, 4, 0x1000, 0x300000, 3);
    h.map(pt, 4, 0x2000, 0x301000, 1);
    h.map(pt, 4, 0x40000000, 0x600000, 3, 2);    // 2 MiB
    h.map(pt, 4, 0x80000000, 0x40000000, 3, 3);  // 1 GiB
    h.enable_translation();
    h.translate(SID, 0x5000000000, VTD_PERM_READ, nullptr, false);  // context now cached

    auto w = walk_of(h, SID, 0x1000, VTD_PERM_WRITE);
    EXPECT_EQ(w.sid, SID);
    EXPECT_EQ(w.did, DID);
    EXPECT_EQ(w.addr, 0x1000u);
    EXPECT_EQ(w.access, VTD_PERM_WRITE);
    EXPECT_EQ(w.first_level, 4);
    EXPECT_EQ(w.levels_read, 4);
    EXPECT_EQ(w.leaf_level, 1);
    EXPECT_EQ(w.phys, 0x300000u);
    EXPECT_EQ(w.perm, VTD_PERM_RW);
    EXPECT_EQ(w.fault, VTD_FR_NONE);

    // The next page's level-1 table is cached: one level read.
    w = walk_of(h, SID, 0x2000, VTD_PERM_READ);
    EXPECT_EQ(w.first_level, 1);
    EXPECT_EQ(w.levels_read, 1);
    EXPECT_EQ(w.leaf_level, 1);
    EXPECT_EQ(w.perm, VTD_PERM_READ);

    w = walk_of(h, SID, 0x40012000, VTD_PERM_READ);
    EXPECT_EQ(w.first_level, 4);
    EXPECT_EQ(w.levels_read, 3);
    EXPECT_EQ(w.leaf_level, 2);
    EXPECT_EQ(w.phys, 0x600000u);

    w = walk_of(h, SID, 0x80123000, VTD_PERM_READ);
    EXPECT_EQ(w.levels_read, 2);
    EXPECT_EQ(w.leaf_level, 3);
    EXPECT_EQ(w.phys, 0x40000000u);

    // Level 3 exists for 0x40000000's 1 GiB region only up to level 2:
    // 0x40200000 stops at its empty level-2 entry, the third entry read.
    w = walk_of(h, SID, 0x40200000, VTD_PERM_WRITE, VTD_FR_WRITE);
    EXPECT_EQ(w.first_level, 4);
    EXPECT_EQ(w.levels_read, 3);
    EXPECT_EQ(w.leaf_level, 0);
    EXPECT_EQ(w.fault, VTD_FR_WRITE);

    // A 3-level context starts at level 3.
    FakeHost h3(8 << 20, [] {
        VtdConfig c = FakeHost::default_config();
        c.aw_bits = 39;
        return c;
    }());
    uint64_t pt3 = h3.alloc_page();
    h3.set_context(SID, pt3, DID, 3);
    h3.map(pt3, 3, 0x7000, 0x9000, 3);
    h3.enable_translation();
    w = walk_of(h3, SID, 0x7000, VTD_PERM_READ);
    EXPECT_EQ(w.first_level, 3);
    EXPECT_EQ(w.levels_read, 3);
    EXPECT_EQ(w.phys, 0x9000u);
}

TEST(Events, FaultsAndWhatRecordingDid)
{
    FakeHost h;
    h.domain_with_run(SID, DID, 1, 0x200000);
    record(h);
    EXPECT_EQ(h.translate(SID, 0x5000, VTD_PERM_WRITE), VTD_FR_WRITE);
    auto faults = of(h, VTD_EVENT_FAULT);
    auto records = of(h, VTD_EVENT_FAULT_RECORD);
    ASSERT_EQ(faults.size(), 1u);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(faults[0].u.fault.sid, SID);
    EXPECT_EQ(faults[0].u.fault.addr, 0x5000u);
    EXPECT_EQ(faults[0].u.fault.reason, VTD_FR_WRITE);
    EXPECT_TRUE(faults[0].u.fault.write);
    EXPECT_EQ(faults[0].u.fault.outcome, 0) << "offered to recording";
    const auto &r = records[0].u.fault_record;
    EXPECT_EQ(r.outcome, VTD_FAULT_RECORDED);
    EXPECT_EQ(r.index, 0);
    EXPECT_EQ(r.record.lo, h.mmio64(h.frcd));
    EXPECT_EQ(r.record.hi, h.mmio64(h.frcd + 8));
    // The fault event follows the walk that found it.
    EXPECT_EQ(kinds(h).back(), VTD_EVENT_FAULT_RECORD);

    // The same fault again collapses into the pending record.
    record(h);
    h.translate(SID, 0x5000, VTD_PERM_WRITE);
    records = of(h, VTD_EVENT_FAULT_RECORD);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].u.fault_record.outcome, VTD_FAULT_COLLAPSED);
    EXPECT_EQ(records[0].u.fault_record.index, 0);

    // Not requested by the caller: reported, not offered.
    record(h);
    h.translate(SID, 0x6000, VTD_PERM_READ, nullptr, false);
    faults = of(h, VTD_EVENT_FAULT);
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0].u.fault.outcome, VTD_FAULT_NOT_REQUESTED);
    EXPECT_FALSE(faults[0].u.fault.write);
    EXPECT_TRUE(of(h, VTD_EVENT_FAULT_RECORD).empty());

    // Records 1..7 fill, the ninth distinct fault overflows.
    record(h);
    for (uint64_t p = 1; p <= 8; p++)
        h.translate(SID, 0x10000 * p, VTD_PERM_READ);
    records = of(h, VTD_EVENT_FAULT_RECORD);
    ASSERT_EQ(records.size(), 8u);
    for (unsigned i = 0; i < 7; i++) {
        EXPECT_EQ(records[i].u.fault_record.outcome, VTD_FAULT_RECORDED) << i;
        EXPECT_EQ(records[i].u.fault_record.index, i + 1) << i;
    }
    EXPECT_EQ(records[7].u.fault_record.outcome, VTD_FAULT_OVERFLOW);
    EXPECT_EQ(records[7].u.fault_record.record.lo, 0x80000u);
}

TEST(Events, FpdSuppressesRecording)
{
    FakeHost h;
    uint64_t pt = h.alloc_page();
    h.set_context(SID, pt, DID, 4, 0, true);
    h.enable_translation();
    record(h);
    EXPECT_EQ(h.translate(SID, 0x1000, VTD_PERM_READ), VTD_FR_READ);
    auto faults = of(h, VTD_EVENT_FAULT);
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0].u.fault.outcome, VTD_FAULT_SUPPRESSED);
    EXPECT_TRUE(of(h, VTD_EVENT_FAULT_RECORD).empty());
}

TEST(Events, DescriptorsAndInvalidationsByGranularity)
{
    FakeHost h;
    h.domain_with_run(SID, DID, 8, 0x200000);
    for (uint64_t p = 0; p < 8; p++)
        h.translate(SID, p * PAGE, VTD_PERM_READ);
    h.enable_qi(0);
    uint64_t status = h.alloc_page();
    record(h);
    h.push(FakeHost::cc_desc(1), 0);
    h.push(FakeHost::cc_desc(2, DID), 0);
    h.push(FakeHost::cc_desc(3, DID, SID, 1), 0);
    h.push(FakeHost::iotlb_desc(3, DID), FakeHost::iotlb_addr(4 * PAGE, 2, true));
    h.push(FakeHost::iotlb_desc(2, DID), 0);
    h.push(FakeHost::iotlb_desc(1), 0);
    h.push(4, 0);                        // interrupt entry cache, global
    h.push(4 | 1 << 4 | 7ull << 32, 0);  // index-selective, index 7
    h.push(FakeHost::wait_desc(true, false, true, 0x99), status);
    h.kick();
    ASSERT_EQ(h.get32(status), 0x99u);

    auto runs = of(h, VTD_EVENT_QUEUE_RUN);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].u.queue_run.head, 0u);
    EXPECT_EQ(runs[0].u.queue_run.tail, 9u);
    EXPECT_EQ(runs[0].u.queue_run.entries, 256u);
    EXPECT_EQ(runs[0].u.queue_run.base, h.queue);

    struct Want {
        uint8_t type, granularity;
    };
    const Want want[] = {{1, VTD_GRAN_GLOBAL},    {1, VTD_GRAN_DOMAIN},    {1, VTD_GRAN_SELECTIVE},
                         {2, VTD_GRAN_SELECTIVE}, {2, VTD_GRAN_DOMAIN},    {2, VTD_GRAN_GLOBAL},
                         {4, VTD_GRAN_GLOBAL},    {4, VTD_GRAN_SELECTIVE}, {5, VTD_GRAN_NONE}};
    auto descs = of(h, VTD_EVENT_DESCRIPTOR);
    ASSERT_EQ(descs.size(), std::size(want));
    for (size_t i = 0; i < descs.size(); i++) {
        EXPECT_EQ(descs[i].u.descriptor.index, i);
        EXPECT_EQ(descs[i].u.descriptor.type, want[i].type) << i;
        EXPECT_EQ(descs[i].u.descriptor.granularity, want[i].granularity) << i;
    }
    EXPECT_EQ(descs[3].u.descriptor.hi, FakeHost::iotlb_addr(4 * PAGE, 2, true));

    auto cc = of(h, VTD_EVENT_CONTEXT_INVALIDATION);
    ASSERT_EQ(cc.size(), 3u);
    for (unsigned i = 0; i < 3; i++) {
        EXPECT_EQ(cc[i].u.context_invalidation.source, VTD_INVAL_QUEUE);
        EXPECT_EQ(cc[i].u.context_invalidation.granularity, i + 1);
    }
    EXPECT_EQ(cc[1].u.context_invalidation.did, DID);
    EXPECT_EQ(cc[2].u.context_invalidation.sid, SID);
    EXPECT_EQ(cc[2].u.context_invalidation.sid_mask, 0x4) << "FM 1: function bit 2 ignored";

    auto io = of(h, VTD_EVENT_IOTLB_INVALIDATION);
    ASSERT_EQ(io.size(), 3u);
    EXPECT_EQ(io[1].u.iotlb_invalidation.granularity, VTD_GRAN_DOMAIN);
    EXPECT_EQ(io[1].u.iotlb_invalidation.did, DID);
    EXPECT_EQ(io[2].u.iotlb_invalidation.granularity, VTD_GRAN_GLOBAL);
    const auto &page = io[0].u.iotlb_invalidation;
    EXPECT_EQ(page.source, VTD_INVAL_QUEUE);
    EXPECT_EQ(page.granularity, VTD_GRAN_SELECTIVE);
    EXPECT_EQ(page.addr, 4 * PAGE);
    EXPECT_EQ(page.am, 2);
    EXPECT_TRUE(page.ih);
    EXPECT_EQ(page.dropped, 4u) << "pages 4..7 were cached";

    // Each descriptor is reported before what it does.
    auto k = kinds(h);
    ASSERT_GE(k.size(), 2u);
    EXPECT_EQ(k[0], VTD_EVENT_QUEUE_RUN);
    EXPECT_EQ(k[1], VTD_EVENT_DESCRIPTOR);
    EXPECT_EQ(k[2], VTD_EVENT_CONTEXT_INVALIDATION);

    auto waits = of(h, VTD_EVENT_WAIT);
    ASSERT_EQ(waits.size(), 1u);
    const auto &w = waits[0].u.wait;
    EXPECT_TRUE(w.status_write);
    EXPECT_TRUE(w.fence);
    EXPECT_FALSE(w.interrupt);
    EXPECT_FALSE(w.write_failed);
    EXPECT_EQ(w.status_data, 0x99u);
    EXPECT_EQ(w.status_addr, status);
}

TEST(Events, RegisterInvalidations)
{
    FakeHost h;
    h.domain_with_run(SID, DID, 8, 0x200000);
    record(h);
    h.w64(CCMD, (1ull << 63) | (1ull << 61));  // global
    h.w64(h.iva, 0x3000 | 0);
    h.w64(h.iotlb, (1ull << 63) | (3ull << 60) | (uint64_t{DID} << 32));  // page
    auto cc = of(h, VTD_EVENT_CONTEXT_INVALIDATION);
    ASSERT_EQ(cc.size(), 1u);
    EXPECT_EQ(cc[0].u.context_invalidation.source, VTD_INVAL_REGISTER);
    EXPECT_EQ(cc[0].u.context_invalidation.granularity, VTD_GRAN_GLOBAL);
    auto io = of(h, VTD_EVENT_IOTLB_INVALIDATION);
    ASSERT_EQ(io.size(), 1u);
    EXPECT_EQ(io[0].u.iotlb_invalidation.source, VTD_INVAL_REGISTER);
    EXPECT_EQ(io[0].u.iotlb_invalidation.granularity, VTD_GRAN_SELECTIVE);
    EXPECT_EQ(io[0].u.iotlb_invalidation.did, DID);
    EXPECT_EQ(io[0].u.iotlb_invalidation.addr, 0x3000u);
    EXPECT_TRUE(of(h, VTD_EVENT_DESCRIPTOR).empty());
}

TEST(Events, QueueErrors)
{
    {
        FakeHost h;
        h.enable_qi(0);
        record(h);
        h.push(FakeHost::wait_desc(false, false, false, 0), 0);
        h.push(7, 0);  // no such descriptor type
        h.kick();
        EXPECT_TRUE(h.mmio32(FSTS) & 0x10);
        auto errs = of(h, VTD_EVENT_QUEUE_ERROR);
        ASSERT_EQ(errs.size(), 1u);
        const auto &q = errs[0].u.queue_error;
        EXPECT_EQ(q.cause, VTD_QERR_DESCRIPTOR);
        EXPECT_EQ(q.fsts_bit, 0x10u) << "IQE";
        EXPECT_EQ(q.head, 1u);
        EXPECT_EQ(q.tail, 2u);
        EXPECT_EQ(q.lo, 7u);
        EXPECT_EQ(kinds(h).back(), VTD_EVENT_QUEUE_ERROR);
        ASSERT_EQ(of(h, VTD_EVENT_DESCRIPTOR).size(), 2u) << "both fetched";
        EXPECT_EQ(of(h, VTD_EVENT_DESCRIPTOR)[1].u.descriptor.type, 7);
    }
    {
        FakeHost h;
        h.enable_qi(0);
        record(h);
        h.w32(IQT, 0x100 << 4);  // tail beyond a 256-entry queue
        auto errs = of(h, VTD_EVENT_QUEUE_ERROR);
        ASSERT_EQ(errs.size(), 1u);
        EXPECT_EQ(errs[0].u.queue_error.cause, VTD_QERR_TAIL);
        EXPECT_EQ(errs[0].u.queue_error.tail, 0x100u);
    }
    {
        FakeHost h(2 << 20);
        h.w64(IQA, 0x10000000);  // beyond the fake's RAM
        h.w32(GCMD, QIE);
        record(h);
        h.w32(IQT, 1 << 4);
        auto errs = of(h, VTD_EVENT_QUEUE_ERROR);
        ASSERT_EQ(errs.size(), 1u);
        EXPECT_EQ(errs[0].u.queue_error.cause, VTD_QERR_UNREADABLE);
        EXPECT_TRUE(of(h, VTD_EVENT_DESCRIPTOR).empty());
    }
}

TEST(Events, GlobalCommandsAndCacheResets)
{
    FakeHost h;
    h.ensure_root();
    record(h);
    h.w64(RTADDR, h.root);
    h.w32(GCMD, SRTP);
    h.w32(GCMD, TE);
    EXPECT_EQ(kinds(h), (std::vector<VtdEventKind>{VTD_EVENT_CACHE_RESET, VTD_EVENT_GLOBAL_COMMAND,
                                                   VTD_EVENT_GLOBAL_COMMAND}));
    EXPECT_EQ(h.events[0].u.cache_reset.reason, VTD_CACHE_RESET_ROOT_TABLE);
    const auto &srtp = h.events[1].u.global_command;
    EXPECT_EQ(srtp.command, SRTP);
    EXPECT_EQ(srtp.status_before, 0u);
    EXPECT_EQ(srtp.status_after, SRTP);
    EXPECT_EQ(srtp.root_table, h.root);
    const auto &te = h.events[2].u.global_command;
    EXPECT_EQ(te.status_before, SRTP);
    EXPECT_EQ(te.status_after, SRTP | TE);

    record(h);
    vtd_engine_reset(h.e);
    ASSERT_EQ(of(h, VTD_EVENT_CACHE_RESET).size(), 1u);
    EXPECT_EQ(of(h, VTD_EVENT_CACHE_RESET)[0].u.cache_reset.reason, VTD_CACHE_RESET_RESET);
}

TEST(Events, Replay)
{
    FakeHost h;
    h.domain_with_run(SID, DID, 5, 0x200000);
    record(h);
    auto cb = [](void *, const VtdTranslation *) {};
    ASSERT_EQ(vtd_engine_walk(h.e, SID, 0, 1 << 20, cb, nullptr), 0);
    auto r = of(h, VTD_EVENT_REPLAY);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].u.replay.sid, SID);
    EXPECT_EQ(r[0].u.replay.did, DID);
    EXPECT_EQ(r[0].u.replay.leaves, 5u);
    EXPECT_EQ(r[0].u.replay.end, 1u << 20);
    EXPECT_FALSE(r[0].u.replay.truncated);
    record(h);
    EXPECT_EQ(vtd_engine_walk(h.e, 0x0700, 0, 1 << 20, cb, nullptr), VTD_FR_ROOT_ENTRY_P);
    ASSERT_EQ(of(h, VTD_EVENT_REPLAY).size(), 1u);
    EXPECT_EQ(of(h, VTD_EVENT_REPLAY)[0].u.replay.fault, VTD_FR_ROOT_ENTRY_P);
}
