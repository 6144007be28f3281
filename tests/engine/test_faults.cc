// SPDX-License-Identifier: GPL-2.0-or-later
// Primary fault logging: record contents, FRI, PPF, PFO overflow and
// clearing, the fault event interrupt (FECTL.IM/IP), FPD.
#include <random>

#include "fake_host.hpp"

using namespace vtdtest;

namespace {

struct Faults : ::testing::Test {
    FakeHost h;
    uint64_t pt = 0;
    void SetUp() override
    {
        pt = h.alloc_page();
        h.set_context(0x0108, pt, 3, 4);
        h.enable_translation();
        h.w32(FEDATA, 0x41);
        h.w32(FEADDR, 0xfee00000);
        h.w32(FEUADDR, 0);
    }
    uint64_t frcd_lo(unsigned i) { return h.mmio64(h.frcd + i * 16); }
    uint64_t frcd_hi(unsigned i) { return h.mmio64(h.frcd + i * 16 + 8); }
    void clear_record(unsigned i) { h.w32(h.frcd + i * 16 + 12, 1u << 31); }
};

}  // namespace

TEST_F(Faults, RecordContents)
{
    h.w32(FECTL, 0);
    EXPECT_EQ(h.translate(0x0108, 0x123456789, VTD_PERM_WRITE), VTD_FR_WRITE);
    uint32_t fsts = h.mmio32(FSTS);
    EXPECT_EQ(fsts & 3, 2u) << "PPF set, PFO clear";
    EXPECT_EQ((fsts >> 8) & 0xff, 0u) << "FRI names the pending record";
    EXPECT_EQ(frcd_lo(0), 0x123456000u);
    uint64_t hi = frcd_hi(0);
    EXPECT_EQ(hi & 0xffff, 0x0108u) << "source id";
    EXPECT_EQ((hi >> 32) & 0xff, uint64_t{VTD_FR_WRITE});
    EXPECT_EQ((hi >> 62) & 1, 0u) << "T = 0: write";
    EXPECT_EQ(hi >> 63, 1u) << "F";
    ASSERT_EQ(h.msis.size(), 1u);
    EXPECT_EQ(h.msis[0].addr, 0xfee00000u);
    EXPECT_EQ(h.msis[0].data, 0x41u);

    EXPECT_EQ(h.translate(0x0108, 0x5000, VTD_PERM_READ), VTD_FR_READ);
    EXPECT_EQ((frcd_hi(1) >> 62) & 1, 1u) << "T = 1: read";
    EXPECT_EQ(h.msis.size(), 1u) << "PPF already pending: no new event";

    // Linux clears records with a 32-bit write of F to the top dword.
    clear_record(0);
    EXPECT_EQ(h.mmio32(FSTS) & 2, 2u);
    clear_record(1);
    EXPECT_EQ(h.mmio32(FSTS) & 3, 0u);
    EXPECT_EQ(frcd_hi(0) >> 63, 0u);
    // Records are read-only apart from F.
    h.w64(h.frcd, 0);
    EXPECT_EQ(frcd_lo(0), 0x123456000u);
    // A new fault after everything was serviced raises a new event.
    h.translate(0x0108, 0x6000, VTD_PERM_READ);
    EXPECT_EQ(h.msis.size(), 2u);
    EXPECT_EQ((h.mmio32(FSTS) >> 8) & 0xff, 2u);
}

TEST_F(Faults, MaskedEventIsPendingUntilUnmasked)
{
    EXPECT_EQ(h.mmio32(FECTL), 1u << 31);
    h.translate(0x0108, 0x1000, VTD_PERM_READ);
    EXPECT_TRUE(h.msis.empty());
    EXPECT_EQ(h.mmio32(FECTL), 3u << 30) << "IM and IP";
    h.w32(FECTL, 0);
    ASSERT_EQ(h.msis.size(), 1u);
    EXPECT_EQ(h.mmio32(FECTL), 0u);
    // Masked again, serviced while masked: IP clears with the status.
    h.w32(FECTL, 1u << 31);
    clear_record(0);
    h.translate(0x0108, 0x1000, VTD_PERM_READ);
    EXPECT_EQ(h.mmio32(FECTL), 3u << 30);
    clear_record(1);
    EXPECT_EQ(h.mmio32(FECTL), 1u << 31);
    h.w32(FECTL, 0);
    EXPECT_EQ(h.msis.size(), 1u);
}

TEST_F(Faults, OverflowSetsPfoAndDropsFaults)
{
    h.w32(FECTL, 0);
    for (unsigned i = 0; i < 8; i++)
        h.translate(0x0108, 0x1000 * (i + 1), VTD_PERM_READ);
    EXPECT_EQ(h.mmio32(FSTS) & 3, 2u);
    EXPECT_EQ((h.mmio32(FSTS) >> 8) & 0xff, 0u) << "FRI wrapped";
    h.translate(0x0108, 0x99000, VTD_PERM_READ);
    EXPECT_EQ(h.mmio32(FSTS) & 3, 3u) << "PFO";
    EXPECT_EQ(frcd_lo(0), 0x1000u) << "the full record was not overwritten";
    // With PFO set further faults are dropped even if a record is free.
    clear_record(0);
    h.translate(0x0108, 0x98000, VTD_PERM_READ);
    EXPECT_EQ(frcd_hi(0) >> 63, 0u);
    EXPECT_EQ(h.msis.size(), 1u);
    h.w32(FSTS, 1);  // clear PFO (RW1C)
    EXPECT_EQ(h.mmio32(FSTS) & 1, 0u);
    h.translate(0x0108, 0x97000, VTD_PERM_READ);
    EXPECT_EQ(frcd_lo(0), 0x97000u);
    EXPECT_EQ(json_counter(h.stats(), "faults", "overflowed"), 2u);
    EXPECT_EQ(json_counter(h.stats(), "faults", "recorded"), 9u);
}

TEST_F(Faults, RepeatsOfAPendingFaultCollapse)
{
    h.w32(FECTL, 0);
    // One refused 8-byte DMA reaches translate once per 4-byte step.
    for (uint64_t off : {0x0ull, 0x4ull, 0x0ull, 0xff8ull})
        EXPECT_EQ(h.translate(0x0108, 0x5000 + off, VTD_PERM_READ), VTD_FR_READ);
    EXPECT_EQ(frcd_hi(0) >> 63, 1u);
    EXPECT_EQ(frcd_hi(1) >> 63, 0u) << "repeats of a pending fault take no record";
    EXPECT_EQ(json_counter(h.stats(), "faults", "collapsed"), 3u);
    // Another page, request type or source-id is another fault.
    h.translate(0x0108, 0x6000, VTD_PERM_READ);
    h.translate(0x0108, 0x5000, VTD_PERM_WRITE);
    h.translate(0x0109, 0x5000, VTD_PERM_READ);
    EXPECT_EQ(json_counter(h.stats(), "faults", "recorded"), 4u);
    EXPECT_EQ(frcd_hi(3) >> 63, 1u);
    // Once software clears the record, the same fault is recorded again.
    clear_record(0);
    h.translate(0x0108, 0x5000, VTD_PERM_READ);
    EXPECT_EQ(frcd_lo(4), 0x5000u);
    EXPECT_EQ(json_counter(h.stats(), "faults", "recorded"), 5u);
    EXPECT_EQ(json_counter(h.stats(), "faults", "collapsed"), 3u);
}

TEST_F(Faults, FriNamesTheOldestPendingRecord)
{
    h.w32(FECTL, 0);
    auto fri = [&] { return (h.mmio32(FSTS) >> 8) & 0xff; };
    h.translate(0x0108, 0x1000, VTD_PERM_READ);
    EXPECT_EQ(fri(), 0u) << "Linux reads the first record at FRI";
    h.translate(0x0108, 0x2000, VTD_PERM_READ);
    EXPECT_EQ(fri(), 0u);
    clear_record(0);
    EXPECT_EQ(fri(), 1u);
    clear_record(1);
    EXPECT_EQ(h.mmio32(FSTS) & 2, 0u) << "PPF clear once no record is pending";
    // The next fault goes to the next free record, and FRI follows it.
    h.translate(0x0108, 0x3000, VTD_PERM_READ);
    EXPECT_EQ(fri(), 2u);
    EXPECT_EQ(frcd_lo(2), 0x3000u);
}

TEST_F(Faults, FaultProcessingDisable)
{
    h.w32(FECTL, 0);
    uint64_t pt2 = h.alloc_page();
    h.set_context(0x0109, pt2, 4, 4, 0, true);
    EXPECT_EQ(h.translate(0x0109, 0x1000, VTD_PERM_READ), VTD_FR_READ);
    EXPECT_EQ(h.translate(0x0109, 1ull << 50, VTD_PERM_READ), VTD_FR_ADDR_BEYOND_MGAW);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_TRUE(h.msis.empty());
    EXPECT_EQ(json_counter(h.stats(), "faults", "suppressed_fpd"), 2u);
    // FPD is evaluated whatever P says: a not-present entry with FPD set
    // suppresses its 0x2 ...
    h.put64(h.context_addr(0x010b), 2);  // P = 0, FPD = 1
    EXPECT_EQ(h.translate(0x010b, 0x1000, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_P);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(json_counter(h.stats(), "faults", "suppressed_fpd"), 3u);
    // ... while one without it records it, as it does every fault found
    // before the context entry (its root entry's, its tables' reads).
    EXPECT_EQ(h.translate(0x010a, 0x1000, VTD_PERM_READ), VTD_FR_CONTEXT_ENTRY_P);
    EXPECT_EQ(h.mmio32(FSTS) & 2, 2u);
    EXPECT_EQ((frcd_hi(0) >> 32) & 0xff, uint64_t{VTD_FR_CONTEXT_ENTRY_P});
}

TEST_F(Faults, RecordFaultFalseOnlyReports)
{
    VtdTranslation t{};
    EXPECT_EQ(vtd_engine_translate(h.e, 0x0108, 0x1000, VTD_PERM_READ, false, &t), VTD_FR_READ);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(json_counter(h.stats(), "faults", "not_recorded"), 1u);
    EXPECT_EQ(json_counter(h.stats(), "by_reason", "read"), 1u);
}

TEST_F(Faults, EventAddressUsesUpperHalf)
{
    h.w32(FEUADDR, 0x12);
    h.w32(FECTL, 0);
    h.translate(0x0108, 0x1000, VTD_PERM_READ);
    ASSERT_EQ(h.msis.size(), 1u);
    EXPECT_EQ(h.msis[0].addr, 0x12fee00000ull);
}

// The fault recording registers follow FRO (0x200) in the 4 KiB register
// page, so 224 records fit (CAP.NFR could say 256): the largest
// fault_records is 224, and every one of them is a working register up to
// the page's last 16 bytes.  225 is refused with a message naming the range.
TEST(FaultRecordLimit, AsManyRecordsAsFitInTheRegisterPage)
{
    VtdConfig c = FakeHost::default_config();
    c.fault_records = 224;
    FakeHost h(8 << 20, c);
    ASSERT_NE(h.e, nullptr);
    EXPECT_EQ(((h.cap >> 40) & 0xff) + 1, 224u) << "CAP.NFR";
    EXPECT_EQ(h.frcd + 224 * 16, uint32_t{VTD_MMIO_SIZE}) << "the last record ends the page";
    EXPECT_TRUE(h.iva + 16 <= h.frcd) << "IVA and IOTLB sit below the records";
    uint64_t pt = h.alloc_page();
    h.set_context(0x0108, pt, 3, 4);
    h.enable_translation();
    for (unsigned i = 0; i < 224; i++)
        EXPECT_EQ(h.translate(0x0108, 0x1000 * (i + 1), VTD_PERM_READ), VTD_FR_READ);
    EXPECT_EQ(h.mmio64(h.frcd + 223 * 16), 0x1000u * 224) << "the last record holds the 224th";
    EXPECT_EQ(h.mmio64(h.frcd + 223 * 16 + 8) >> 63, 1u) << "F";
    EXPECT_EQ(h.mmio32(FSTS) & 1, 0u) << "no overflow with 224 faults";
    h.translate(0x0108, 0x1000 * 225, VTD_PERM_READ);
    EXPECT_EQ(h.mmio32(FSTS) & 1, 1u) << "the 225th overflows";

    VtdHostOps ops{};
    ops.mem_read = [](void *, uint64_t, void *, size_t) { return -1; };
    ops.mem_write = [](void *, uint64_t, const void *, size_t) { return -1; };
    ops.msi = [](void *, uint64_t, uint32_t) {};
    char err[128] = "";
    // Each reason starts with the VtdConfig field's name: viommu-vtd's glue
    // turns it into the property's (viommu_vtd_property_names()).
    c.fault_records = 225;
    EXPECT_EQ(vtd_engine_new(&c, &ops, nullptr, err, sizeof(err)), nullptr);
    EXPECT_STREQ(err, "fault_records must be 1..224 (0: default 8): the records must fit in "
                      "the 4 KiB register page from FRO 0x200");
    c.fault_records = 0;
    c.iotlb_entries = (1u << 24) + 1;
    EXPECT_EQ(vtd_engine_new(&c, &ops, nullptr, err, sizeof(err)), nullptr);
    EXPECT_STREQ(err, "iotlb_entries must be at most 16777216 (0: default 131072)");
    c.iotlb_entries = 0;
    c.context_entries = 65537;
    EXPECT_EQ(vtd_engine_new(&c, &ops, nullptr, err, sizeof(err)), nullptr);
    EXPECT_STREQ(err, "context_entries must be at most 65536 (one per source-id; 0: default 1024)");
}

// FSTS and the fault records after long random sequences of faults (some
// repeats of a pending one), clears of records (32- and 64-bit writes, with
// and without F), clears of PFO, masking and unmasking of the fault event,
// translation turned off and on (the record index restarts at 0) and a save
// and load of the state, against the registers recomputed at each step from
// a model of the records: FRI the pending record filled first (the next free
// one with none), PPF any F set, PFO once a fault found the next record full,
// FECTL.IP and the messages from "no status pending before".
// With 1, 3, 8 and 224 records.
TEST(FaultRecordModel, RegistersMatchARecomputation)
{
    for (unsigned n : {1u, 3u, 8u, 224u}) {
        SCOPED_TRACE(n);
        VtdConfig c = FakeHost::default_config();
        c.fault_records = static_cast<uint16_t>(n);
        FakeHost h(8 << 20, c);
        ASSERT_NE(h.e, nullptr);
        uint64_t pt = h.alloc_page();
        h.set_context(0x0108, pt, 3, 4);
        h.set_context(0x0109, pt, 3, 4);
        h.enable_translation();
        h.w32(FEDATA, 0x41);
        h.w32(FEADDR, 0xfee00000);

        std::vector<std::array<uint64_t, 2>> rec(n, {0, 0});
        std::vector<uint64_t> age(n, 0);
        uint64_t clock = 0;
        unsigned next = 0, collapsed = 0, overflows = 0, wraps = 0, index_resets = 0;
        bool pfo = false, im = true, ip = false;
        size_t msis = 0;
        auto full = [&](unsigned i) { return (rec[i][1] >> 63) != 0; };
        auto pending = [&] {
            bool any = false;
            for (unsigned i = 0; i < n; i++)
                any = any || full(i);
            return pfo || any;
        };
        auto raise = [&](bool was_pending) {
            if (was_pending)
                return;
            if (im)
                ip = true;
            else
                msis++;
        };
        auto cleared = [&] {
            if (!pending())
                ip = false;
        };
        auto oldest = [&] {
            unsigned o = n;
            for (unsigned i = 0; i < n; i++)
                if (full(i) && (o == n || age[i] < age[o]))
                    o = i;
            return o;
        };
        auto fsts = [&] {
            unsigned o = oldest();
            return o < n ? uint32_t{pfo} | 2u | o << 8 : uint32_t{pfo} | next << 8;
        };

        std::mt19937 rng(n);
        auto pick = [&](unsigned bound) { return static_cast<unsigned>(rng() % bound); };
        const unsigned steps = n > 8 ? 20000 : 2000;
        for (unsigned step = 0; step < steps; step++) {
            SCOPED_TRACE(step);
            unsigned op = pick(16);
            if (op < 8) {  // a fault
                uint16_t sid = pick(2) ? 0x0109 : 0x0108;
                bool write = pick(2);
                uint64_t page = 0x1000ull * (1 + pick(n + 2));
                VtdFaultReason r =
                    h.translate(sid, page + 8 * pick(512), write ? VTD_PERM_WRITE : VTD_PERM_READ);
                ASSERT_EQ(r, write ? VTD_FR_WRITE : VTD_FR_READ);
                uint64_t info = 1ull << 63 | uint64_t{!write} << 62 | uint64_t{r} << 32 | sid;
                bool was = pending(), repeat = false;
                for (unsigned i = 0; i < n; i++)
                    repeat = repeat || (rec[i][0] == page && rec[i][1] == info);
                if (repeat) {
                    collapsed++;
                } else if (pfo || full(next)) {
                    if (!pfo) {
                        pfo = true;
                        overflows++;
                        raise(was);
                    }
                } else {
                    rec[next] = {page, info};
                    age[next] = clock++;
                    next = (next + 1) % n;
                    wraps += next == 0;
                    raise(was);
                }
            } else if (op < 11) {  // F of a record: the top dword, F maybe set
                unsigned i = pick(n);
                uint32_t v = static_cast<uint32_t>(rng()) | (pick(4) ? 1u << 31 : 0);
                h.w32(h.frcd + i * 16 + 12, v);
                if (v >> 31)
                    rec[i][1] &= ~(1ull << 63);
                cleared();
            } else if (op < 12) {  // the same with a 64-bit write of the high half
                unsigned i = pick(n);
                uint64_t v = uint64_t{rng()} << 32 | rng();
                h.w64(h.frcd + i * 16 + 8, v);
                if (v >> 63)
                    rec[i][1] &= ~(1ull << 63);
                cleared();
            } else if (op < 13) {  // FSTS: W1C of PFO (and of clear IQE, ICE, ITE)
                uint32_t v = static_cast<uint32_t>(rng());
                h.w32(FSTS, v);
                if (v & 1)
                    pfo = false;
                cleared();
            } else if (op < 15) {  // FECTL.IM
                bool mask = pick(2);
                h.w32(FECTL, mask ? 1u << 31 : 0);
                if (im && !mask && ip) {
                    msis++;
                    ip = false;
                }
                im = mask;
            } else if (pick(2 * n) == 0) {  // TES and IRES clear: the index restarts at 0
                h.gcmd_shadow &= ~TE;
                h.w32(GCMD, h.gcmd_shadow);
                h.enable_translation();
                next = 0;
                index_resets++;
            } else {  // the state out and back in
                VtdState st;
                vtd_engine_get_state(h.e, &st);
                ASSERT_EQ(vtd_engine_set_state(h.e, &st), VTD_STATE_OK);
            }

            ASSERT_EQ(h.mmio32(FSTS), fsts());
            ASSERT_EQ(h.mmio64(FSTS - 4) >> 32, fsts()) << "FSTS as a quadword's high half";
            ASSERT_EQ(h.mmio32(FECTL), uint32_t{im} << 31 | uint32_t{ip} << 30);
            ASSERT_EQ(h.msis.size(), msis);
            for (unsigned i = 0; i < n; i++) {
                for (unsigned q = 0; q < 2; q++) {
                    uint64_t off = h.frcd + i * 16 + q * 8;
                    ASSERT_EQ(h.mmio64(off), rec[i][q]) << "record " << i << " quadword " << q;
                    ASSERT_EQ(h.mmio32(off), static_cast<uint32_t>(rec[i][q]));
                    ASSERT_EQ(h.mmio32(off + 4), rec[i][q] >> 32);
                }
            }
        }
        EXPECT_EQ(json_counter(h.stats(), "faults", "collapsed"), collapsed);
        EXPECT_GT(collapsed, 0u) << "the sequence had repeats of pending faults";
        EXPECT_GT(overflows, 1u) << "and overflows";
        EXPECT_GT(wraps, 1u) << "and FRI wrapped";
        EXPECT_GT(index_resets, 1u) << "and the index restarted";
    }
}

// The recording index resets to 0 when TES and IRES are both clear.
TEST_F(Faults, RecordIndexResetsWhenRemappingGoesOff)
{
    h.w32(FECTL, 0);
    EXPECT_EQ(h.translate(0x0108, 0x1000, VTD_PERM_READ), VTD_FR_READ);
    clear_record(0);
    h.translate(0x0108, 0x2000, VTD_PERM_READ);
    clear_record(1);
    EXPECT_EQ((h.mmio32(FSTS) >> 8) & 0xff, 2u) << "the next free record";
    h.gcmd_shadow &= ~TE;
    h.w32(GCMD, h.gcmd_shadow);
    EXPECT_EQ((h.mmio32(FSTS) >> 8) & 0xff, 0u);
    h.enable_translation();
    EXPECT_EQ(h.translate(0x0108, 0x3000, VTD_PERM_READ), VTD_FR_READ);
    EXPECT_EQ(frcd_lo(0), 0x3000u) << "recorded in record 0 again";
}

// After the index restarts at 0 with records pending on both sides of it,
// FRI still names the pending records in the order they were filled, also
// after the state moved to another engine.
TEST_F(Faults, RecordsKeepTheirOrderAcrossAnIndexRestart)
{
    h.w32(FECTL, 0);
    auto fri = [](FakeHost &x) { return (x.mmio32(FSTS) >> 8) & 0xff; };
    for (unsigned i = 0; i < 8; i++)  // records 0..7; the index wraps to 0
        ASSERT_EQ(h.translate(0x0108, 0x1000 * (i + 1), VTD_PERM_READ), VTD_FR_READ);
    for (unsigned i = 0; i < 6; i++)
        clear_record(i);
    for (unsigned i = 0; i < 5; i++)  // records 0..4; the index is at 5
        ASSERT_EQ(h.translate(0x0108, 0x10000 * (i + 1), VTD_PERM_READ), VTD_FR_READ);
    clear_record(0);
    clear_record(1);
    // Pending, oldest first: 6, 7, 2, 3, 4.  The index restarts at 0.
    h.gcmd_shadow &= ~TE;
    h.w32(GCMD, h.gcmd_shadow);
    h.enable_translation();
    ASSERT_EQ(h.translate(0x0108, 0x90000, VTD_PERM_READ), VTD_FR_READ);
    EXPECT_EQ(frcd_lo(0), 0x90000u) << "the newest record";
    EXPECT_EQ(fri(h), 6u);

    VtdState st;
    vtd_engine_get_state(h.e, &st);
    EXPECT_EQ(st.fault_oldest, 6u);
    EXPECT_EQ((st.fsts >> 8) & 0xff, 1u) << "the next record to fill";
    FakeHost dst;
    dst.ram = h.ram;
    ASSERT_EQ(vtd_engine_set_state(dst.e, &st), VTD_STATE_OK);
    EXPECT_EQ(dst.mmio32(FSTS), h.mmio32(FSTS));

    for (FakeHost *x : {&h, &dst}) {
        std::vector<unsigned> order;
        while (x->mmio32(FSTS) & 2) {
            unsigned i = fri(*x);
            order.push_back(i);
            x->w32(x->frcd + i * 16 + 12, 1u << 31);
        }
        EXPECT_EQ(order, (std::vector<unsigned>{6, 7, 2, 3, 4, 0}));
    }
}
