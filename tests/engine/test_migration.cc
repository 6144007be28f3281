// SPDX-License-Identifier: GPL-2.0-or-later
// vtd_engine_get_state/set_state: round trip, translation and the queue go
// on where they were, states the unit could never be in are refused with
// their reason and change nothing.
#include <cstddef>
#include <cstring>
#include <functional>
#include <iterator>
#include <random>

#include "fake_host.hpp"

using namespace vtdtest;

namespace {

VtdState get_state(FakeHost &h)
{
    VtdState st;
    std::memset(&st, 0xa5, sizeof(st));  // get_state must write every byte
    vtd_engine_get_state(h.e, &st);
    return st;
}

bool same(const VtdState &a, const VtdState &b)
{
    return std::memcmp(&a, &b, sizeof(a)) == 0;
}

void dirty(FakeHost &h, uint64_t pt)
{
    h.set_context(0x8, pt, 1, 4);
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.enable_translation();
    h.enable_qi(1);
    h.submit(FakeHost::wait_desc(false, true, false, 0), 0);
    h.w32(FEDATA, 0x31);
    h.w32(FEADDR, 0xfee00000);
    h.translate(0x8, 0x2000, VTD_PERM_WRITE);
    h.translate(0x0500, 0, VTD_PERM_READ);
    h.w64(h.iva, 0x5000 | 3);
}

}  // namespace

TEST(Migration, StateNamesTheRegisters)
{
    FakeHost src;
    uint64_t pt = src.alloc_page();
    dirty(src, pt);
    VtdState st = get_state(src);
    EXPECT_EQ(st.cap, src.mmio64(CAP));
    EXPECT_EQ(st.ecap, src.mmio64(ECAP));
    EXPECT_EQ(st.gsts, src.mmio32(GSTS));
    EXPECT_EQ(st.rtaddr, src.mmio64(RTADDR));
    EXPECT_EQ(st.root_table, src.root);
    EXPECT_EQ(st.iva, src.mmio64(src.iva));
    EXPECT_EQ(st.fedata, 0x31u);
    EXPECT_EQ(st.feaddr, 0xfee00000u);
    // FSTS's status bits as read; FRI is the next record to fill, where
    // the register shows the oldest pending one while PPF is set.
    EXPECT_EQ(st.fsts & 0x71, src.mmio32(FSTS) & 0x71);
    EXPECT_EQ(st.fsts >> 8, 2u);
    EXPECT_EQ(st.iqa, src.mmio64(IQA));
    EXPECT_EQ(st.iqh, src.mmio64(IQH));
    EXPECT_EQ(st.iqt, src.mmio64(IQT));
    EXPECT_EQ(st.ics, src.mmio32(ICS));
    EXPECT_EQ(st.iectl, src.mmio32(IECTL));
    ASSERT_EQ(st.n_fault_records, 8u);
    // Two faults were recorded: a write to an unmapped page of sid 0x8,
    // and a read through the missing root entry of bus 5.
    unsigned recorded = 0;
    for (unsigned i = 0; i < st.n_fault_records; i++) {
        EXPECT_EQ(st.fault_records[i].lo, src.mmio64(src.frcd + i * 16)) << i;
        EXPECT_EQ(st.fault_records[i].hi, src.mmio64(src.frcd + i * 16 + 8)) << i;
        recorded += (st.fault_records[i].hi >> 63) & 1;
    }
    EXPECT_EQ(recorded, 2u);
    for (unsigned i = st.n_fault_records; i < VTD_MAX_FAULT_RECORDS; i++)
        EXPECT_EQ(st.fault_records[i].lo | st.fault_records[i].hi, 0u) << i;
}

// The largest unit, VTD_MAX_FAULT_RECORDS records (as many as fit in the
// register page from FRO), fills every one of them and migrates them all:
// the state's array holds exactly that many, the last one included.
TEST(Migration, EveryRecordOfTheLargestUnit)
{
    VtdConfig c = FakeHost::default_config();
    c.fault_records = VTD_MAX_FAULT_RECORDS;
    FakeHost src(8 << 20, c);
    ASSERT_NE(src.e, nullptr);
    ASSERT_EQ(src.frcd + VTD_MAX_FAULT_RECORDS * 16, uint32_t{VTD_MMIO_SIZE});
    uint64_t pt = src.alloc_page();
    src.set_context(0x0108, pt, 3, 4);
    src.enable_translation();
    for (unsigned i = 0; i < VTD_MAX_FAULT_RECORDS; i++)
        ASSERT_EQ(src.translate(0x0108, 0x1000 * (i + 1), VTD_PERM_READ), VTD_FR_READ);
    VtdState st = get_state(src);
    ASSERT_EQ(st.n_fault_records, uint32_t{VTD_MAX_FAULT_RECORDS});
    EXPECT_EQ(std::size(st.fault_records), size_t{VTD_MAX_FAULT_RECORDS});
    EXPECT_EQ(st.fault_records[VTD_MAX_FAULT_RECORDS - 1].lo, 0x1000u * VTD_MAX_FAULT_RECORDS);

    FakeHost dst(8 << 20, c);
    dst.ram = src.ram;
    ASSERT_EQ(vtd_engine_set_state(dst.e, &st), VTD_STATE_OK);
    for (unsigned i = 0; i < VTD_MAX_FAULT_RECORDS; i++) {
        EXPECT_EQ(dst.mmio64(dst.frcd + i * 16), src.mmio64(src.frcd + i * 16)) << i;
        EXPECT_EQ(dst.mmio64(dst.frcd + i * 16 + 8), src.mmio64(src.frcd + i * 16 + 8)) << i;
    }
    EXPECT_TRUE(same(get_state(dst), st));
}

TEST(Migration, RoundTrip)
{
    FakeHost src;
    uint64_t pt = src.alloc_page();
    dirty(src, pt);
    VtdState st = get_state(src);

    FakeHost dst;
    dst.ram = src.ram;
    ASSERT_EQ(vtd_engine_set_state(dst.e, &st), VTD_STATE_OK);
    for (uint32_t off = 0; off < 0x1000; off += 4)
        EXPECT_EQ(dst.mmio32(off), src.mmio32(off)) << std::hex << off;
    EXPECT_TRUE(same(get_state(dst), st));
    VtdTranslation t{};
    EXPECT_EQ(dst.translate(0x8, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0xa000u);
    EXPECT_TRUE(vtd_engine_translation_enabled(dst.e));
    // The queue continues where it was.
    dst.queue = src.queue;
    dst.queue_qs = 1;
    dst.tail = src.tail;
    uint64_t status = dst.alloc_page();
    dst.submit(FakeHost::wait_desc(true, false, false, 3), status);
    EXPECT_EQ(dst.get32(status), 3u);
}

// The source keeps translating for a device, is stopped between two
// translations with an invalidation half done (descriptors queued past
// the tail the unit has seen), and the destination picks up from there:
// same answers for the mappings, the unmapped page faults, the queued
// invalidation runs when the guest moves the tail.
TEST(Migration, DmaInFlightKeepsTranslating)
{
    FakeHost src;
    uint64_t pt = src.domain_with_run(0x10, 3, 64, 0x400000);
    src.enable_qi(0);
    std::vector<uint64_t> phys;
    for (uint64_t p = 0; p < 64; p++) {
        VtdTranslation t{};
        ASSERT_EQ(src.translate(0x10, p * PAGE + 0x18, VTD_PERM_RW, &t), VTD_FR_NONE);
        phys.push_back(t.phys_base);
    }
    // The guest unmaps page 7 and queues its invalidation, not yet kicked.
    src.put64(src.pte_addr(pt, 4, 7 * PAGE, 1), 0);
    src.push(FakeHost::iotlb_desc(3, 3), FakeHost::iotlb_addr(7 * PAGE));
    uint64_t status = src.alloc_page();
    src.push(FakeHost::wait_desc(true, false, false, 0x77), status);
    VtdState st = get_state(src);

    FakeHost dst;
    dst.ram = src.ram;
    ASSERT_EQ(vtd_engine_set_state(dst.e, &st), VTD_STATE_OK);
    dst.queue = src.queue;
    dst.tail = src.tail;
    for (uint64_t p = 0; p < 64; p++) {
        VtdTranslation t{};
        if (p == 7) {
            // The destination's caches start empty: the unmap is visible
            // at once, as it would be on the source after an IOTLB miss.
            EXPECT_EQ(dst.translate(0x10, p * PAGE, VTD_PERM_READ, &t, false), VTD_FR_READ);
            continue;
        }
        ASSERT_EQ(dst.translate(0x10, p * PAGE + 0x18, VTD_PERM_RW, &t), VTD_FR_NONE) << p;
        EXPECT_EQ(t.phys_base, phys[p]) << p;
    }
    dst.kick();
    EXPECT_EQ(dst.get32(status), 0x77u);
    EXPECT_EQ(dst.mmio64(IQH), dst.tail << 4);
    EXPECT_EQ(json_counter(dst.stats(), "descriptors", "iotlb"), 1u) << dst.stats();
}

TEST(Migration, RefusedStatesChangeNothing)
{
    FakeHost src;
    uint64_t pt = src.alloc_page();
    dirty(src, pt);
    const VtdState good = get_state(src);

    struct Case {
        const char *what;
        std::function<void(VtdState &)> spoil;
        VtdStateError want;
    };
    const Case cases[] = {
        {"CAP", [](VtdState &s) { s.cap ^= 1u << 16; }, VTD_STATE_BAD_MODEL},
        {"ECAP", [](VtdState &s) { s.ecap ^= 1u << 6; }, VTD_STATE_BAD_MODEL},
        {"fault record count", [](VtdState &s) { s.n_fault_records = 9; }, VTD_STATE_BAD_MODEL},
        {"fault record count huge", [](VtdState &s) { s.n_fault_records = 1u << 30; },
         VTD_STATE_BAD_MODEL},
        {"GSTS.IRES", [](VtdState &s) { s.gsts |= 1u << 25; }, VTD_STATE_BAD_GLOBAL},
        {"RTADDR low bits", [](VtdState &s) { s.rtaddr |= 0x800; }, VTD_STATE_BAD_GLOBAL},
        {"root table unaligned", [](VtdState &s) { s.root_table |= 8; }, VTD_STATE_BAD_GLOBAL},
        {"root table without RTPS",
         [](VtdState &s) {
             s.gsts &= ~(1u << 30);
             s.root_table = 0x5000;
         },
         VTD_STATE_BAD_GLOBAL},
        {"CCMD.ICC busy", [](VtdState &s) { s.ccmd |= uint64_t{1} << 63; },
         VTD_STATE_BAD_REGISTER_INVAL},
        {"IVA reserved", [](VtdState &s) { s.iva |= 0x80; }, VTD_STATE_BAD_REGISTER_INVAL},
        {"IOTLB.IVT busy", [](VtdState &s) { s.iotlb |= uint64_t{1} << 63; },
         VTD_STATE_BAD_REGISTER_INVAL},
        {"FRI beyond the records", [](VtdState &s) { s.fsts |= 9u << 8; }, VTD_STATE_BAD_FAULTS},
        {"FSTS reserved", [](VtdState &s) { s.fsts |= 1u << 20; }, VTD_STATE_BAD_FAULTS},
        {"FECTL reserved", [](VtdState &s) { s.fectl |= 1; }, VTD_STATE_BAD_FAULTS},
        {"FEDATA high", [](VtdState &s) { s.fedata |= 0x10000; }, VTD_STATE_BAD_FAULTS},
        {"fault record reserved", [](VtdState &s) { s.fault_records[3].lo |= 0x10; },
         VTD_STATE_BAD_FAULTS},
        {"fault record PV", [](VtdState &s) { s.fault_records[0].hi |= uint64_t{1} << 40; },
         VTD_STATE_BAD_FAULTS},
        {"IQT reserved", [](VtdState &s) { s.iqt |= 8; }, VTD_STATE_BAD_QUEUE},
        {"IQH beyond the register", [](VtdState &s) { s.iqh = uint64_t{1} << 19; },
         VTD_STATE_BAD_QUEUE},
        {"IQA.DW", [](VtdState &s) { s.iqa |= 1u << 11; }, VTD_STATE_BAD_QUEUE},
        {"ICS reserved", [](VtdState &s) { s.ics |= 2; }, VTD_STATE_BAD_QUEUE},
        {"IEADDR unaligned", [](VtdState &s) { s.ieaddr |= 1; }, VTD_STATE_BAD_QUEUE},
        // Values each register could hold, but not together with the rest.
        {"FSTS.ICE", [](VtdState &s) { s.fsts |= 1u << 5; }, VTD_STATE_BAD_FAULTS},
        {"FSTS.ITE", [](VtdState &s) { s.fsts |= 1u << 6; }, VTD_STATE_BAD_FAULTS},
        {"FECTL.IP without IM", [](VtdState &s) { s.fectl = 1u << 30; }, VTD_STATE_BAD_FAULTS},
        {"FECTL.IP with nothing pending",
         [](VtdState &s) {
             for (VtdFaultRecord &r : s.fault_records)
                 r.hi &= ~(uint64_t{1} << 63);
         },
         VTD_STATE_BAD_FAULTS},
        {"oldest record not pending", [](VtdState &s) { s.fault_oldest = 5; },
         VTD_STATE_BAD_FAULTS},
        {"oldest record beyond the records", [](VtdState &s) { s.fault_oldest = 8; },
         VTD_STATE_BAD_FAULTS},
        {"reserved", [](VtdState &s) { s.reserved = 1; }, VTD_STATE_BAD_FAULTS},
        {"IQH with the queue off", [](VtdState &s) { s.gsts &= ~(1u << 26); }, VTD_STATE_BAD_QUEUE},
        {"IECTL.IP without IM", [](VtdState &s) { s.iectl = 1u << 30; }, VTD_STATE_BAD_QUEUE},
        {"IECTL.IP without ICS.IWC", [](VtdState &s) { s.ics = 0; }, VTD_STATE_BAD_QUEUE},
    };
    // The spoiled values only: the good state has them otherwise.
    ASSERT_EQ(good.fectl, 3u << 30) << "a fault event pending, masked";
    ASSERT_EQ(good.iectl, 3u << 30) << "an invalidation event pending, masked";
    ASSERT_EQ(good.ics, 1u);
    ASSERT_NE(good.iqh, 0u);
    ASSERT_NE(good.gsts & (1u << 26), 0u);
    ASSERT_EQ(good.fault_oldest, 0u);
    ASSERT_NE(good.fault_records[0].hi >> 63, 0u);
    for (const Case &c : cases) {
        VtdState bad = good;
        c.spoil(bad);
        FakeHost dst;
        uint64_t p = dst.alloc_page();
        dirty(dst, p);
        const VtdState before = get_state(dst);
        EXPECT_EQ(vtd_engine_set_state(dst.e, &bad), c.want) << c.what;
        EXPECT_TRUE(same(get_state(dst), before)) << c.what << ": the engine changed";
        EXPECT_STRNE(vtd_state_error_str(c.want), vtd_state_error_str(VTD_STATE_OK));
        VtdTranslation t{};
        EXPECT_EQ(dst.translate(0x8, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE) << c.what;
        EXPECT_EQ(t.phys_base, 0xa000u) << c.what;
    }
    FakeHost dst;
    EXPECT_EQ(vtd_engine_set_state(dst.e, nullptr), VTD_STATE_BAD_MODEL);
    vtd_engine_get_state(dst.e, nullptr);  // ignored
}

TEST(Migration, RandomCorruptionNeverCrashes)
{
    FakeHost src;
    uint64_t pt = src.alloc_page();
    dirty(src, pt);
    const VtdState good = get_state(src);
    std::mt19937_64 rng(42);
    FakeHost dst;
    unsigned accepted = 0, refused = 0;
    for (unsigned i = 0; i < 2000; i++) {
        VtdState st = good;
        auto *bytes = reinterpret_cast<unsigned char *>(&st);
        unsigned flips = 1 + rng() % 4;
        for (unsigned f = 0; f < flips; f++) {
            // Mostly the registers and the first records, where it matters.
            size_t at = rng() % (offsetof(VtdState, fault_records) + 10 * sizeof(VtdFaultRecord));
            bytes[at] ^= 1u << (rng() % 8);
        }
        const VtdState before = get_state(dst);
        VtdStateError r = vtd_engine_set_state(dst.e, &st);
        if (r == VTD_STATE_OK) {
            accepted++;
            EXPECT_TRUE(same(get_state(dst), st)) << "an accepted state reads back as it was";
        } else {
            refused++;
            EXPECT_TRUE(same(get_state(dst), before)) << "a refused state changed the engine";
        }
        // Whatever was loaded, the device keeps working.
        dst.translate(0x8, 0x1000, VTD_PERM_READ);
        dst.w32(IQT, 0x20);
    }
    EXPECT_GT(accepted, 0u);
    EXPECT_GT(refused, 0u);
}

// Found by tests/fuzz (engine target, fixed-seed replay): a guest that
// shrinks IQA.QS below its queue head while the queue is on leaves the
// device in a state it must still migrate.  The queue then stops with IQE
// at the next attempt to run it, on the source and on the destination.
TEST(Migration, HeadBeyondShrunkQueueLoads)
{
    FakeHost src;
    src.enable_qi(1);  // 512 entries
    for (unsigned i = 0; i < 300; i++)
        src.push(FakeHost::wait_desc(false, false, false, 0), 0);
    src.kick();
    while (vtd_engine_process_queue(src.e)) {  // more than one slice
    }
    ASSERT_EQ(src.mmio64(IQH), 300u << 4);
    src.w64(IQA, src.queue | 0);  // 256 entries: IQH is past the end
    VtdState st = get_state(src);
    FakeHost dst;
    ASSERT_EQ(vtd_engine_set_state(dst.e, &st), VTD_STATE_OK);
    EXPECT_TRUE(same(get_state(dst), st));
    dst.w32(IQT, 0);
    EXPECT_TRUE(dst.mmio32(FSTS) & 0x10) << "IQE: the head is outside the queue";
    EXPECT_EQ(dst.mmio64(IQH), 300u << 4);
}

namespace {

constexpr uint32_t IRTA = 0xb8;
constexpr uint32_t CFI = 1u << 23;

VtdConfig ir_config(bool eim)
{
    VtdConfig c = FakeHost::default_config();
    c.intremap = true;
    c.eim = eim;
    return c;
}

// A present IRTE with `vector`, DST = `dest` (x2APIC: the APIC ID; xAPIC:
// the APIC ID in bits 15:8), no SVT.
void put_irte(FakeHost &h, uint64_t table, unsigned index, uint8_t vector, uint32_t dest)
{
    h.put64(table + index * 16, 1 | uint64_t{vector} << 16 | uint64_t{dest} << 32);
    h.put64(table + index * 16 + 8, 0);
}

// Remap a remappable-format request for `handle` from sid 0x10.
VtdIrResult remap(FakeHost &h, uint32_t handle, VtdInterrupt &out)
{
    return vtd_engine_remap_interrupt(h.e, 0x10, 0xfee00000 | uint64_t{handle} << 5 | 1u << 4, 0,
                                      true, &out);
}

}  // namespace

// IRTA, the table SIRTP latched and IRTPS/IRES/CFIS travel; the
// destination remaps through the latched table, not the register written
// since, until the guest latches that one.
TEST(Migration, InterruptRemappingState)
{
    FakeHost src(8 << 20, ir_config(true));
    uint64_t table = src.alloc_page(), other = src.alloc_page();
    put_irte(src, table, 3, 0x45, 0x1234);
    put_irte(src, other, 3, 0x46, 0x100);  // xAPIC: APIC ID 1 in DST 15:8
    src.w64(IRTA, table | (1u << 11) | 7);
    src.w32(GCMD, SIRTP);
    src.w32(GCMD, IRE | CFI);
    src.w64(IRTA, other | 7);  // written, not latched
    VtdInterrupt out{};
    ASSERT_EQ(remap(src, 3, out), VTD_IR_REMAPPED);
    VtdState st = get_state(src);
    EXPECT_EQ(st.irta, other | 7);
    EXPECT_EQ(st.irta_latched, table | (1u << 11) | 7);
    EXPECT_EQ(st.gsts, src.mmio32(GSTS));
    EXPECT_EQ(st.gsts & (IRE | SIRTP | CFI), IRE | SIRTP | CFI);

    FakeHost dst(8 << 20, ir_config(true));
    dst.ram = src.ram;
    ASSERT_EQ(vtd_engine_set_state(dst.e, &st), VTD_STATE_OK);
    EXPECT_TRUE(same(get_state(dst), st));
    EXPECT_EQ(dst.mmio64(IRTA), other | 7);
    EXPECT_EQ(dst.mmio32(GSTS), src.mmio32(GSTS));
    ASSERT_EQ(remap(dst, 3, out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0x45);
    EXPECT_EQ(out.dest, 0x1234u);
    dst.w32(GCMD, IRE | CFI | SIRTP);
    ASSERT_EQ(remap(dst, 3, out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0x46);
}

TEST(Migration, InterruptRemappingRefused)
{
    FakeHost src(8 << 20, ir_config(false));
    uint64_t table = src.alloc_page();
    put_irte(src, table, 0, 0x45, 0x100);
    src.w64(IRTA, table | 3);
    src.w32(GCMD, SIRTP);
    src.w32(GCMD, IRE);
    const VtdState good = get_state(src);

    struct Case {
        const char *what;
        void (*spoil)(VtdState &);
        VtdStateError want;
    };
    const Case cases[] = {
        {"IRTA bits 10:4", [](VtdState &s) { s.irta |= 0x10; }, VTD_STATE_BAD_INTERRUPT_REMAPPING},
        {"IRTA.EIME without ECAP.EIM", [](VtdState &s) { s.irta |= 1u << 11; },
         VTD_STATE_BAD_INTERRUPT_REMAPPING},
        {"latched table unaligned", [](VtdState &s) { s.irta_latched |= 0x100; },
         VTD_STATE_BAD_INTERRUPT_REMAPPING},
        {"latched table without IRTPS", [](VtdState &s) { s.gsts &= ~SIRTP; },
         VTD_STATE_BAD_INTERRUPT_REMAPPING},
        {"GSTS bit 22", [](VtdState &s) { s.gsts |= 1u << 22; }, VTD_STATE_BAD_GLOBAL},
    };
    for (const Case &c : cases) {
        VtdState bad = good;
        c.spoil(bad);
        FakeHost dst(8 << 20, ir_config(false));
        dst.ram = src.ram;
        dst.w64(IRTA, table | 1);
        const VtdState before = get_state(dst);
        EXPECT_EQ(vtd_engine_set_state(dst.e, &bad), c.want) << c.what;
        EXPECT_TRUE(same(get_state(dst), before)) << c.what << ": the engine changed";
        EXPECT_STRNE(vtd_state_error_str(c.want), vtd_state_error_str(VTD_STATE_OK));
    }
    // An engine without interrupt remapping takes none of it.
    FakeHost plain;
    VtdState st = good;
    st.cap = get_state(plain).cap;
    st.ecap = get_state(plain).ecap;
    EXPECT_EQ(vtd_engine_set_state(plain.e, &st), VTD_STATE_BAD_GLOBAL);
    st.gsts &= ~(IRE | SIRTP);
    EXPECT_EQ(vtd_engine_set_state(plain.e, &st), VTD_STATE_BAD_INTERRUPT_REMAPPING);
    st.irta = st.irta_latched = 0;
    EXPECT_EQ(vtd_engine_set_state(plain.e, &st), VTD_STATE_OK);
}
