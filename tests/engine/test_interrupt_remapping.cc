// SPDX-License-Identifier: GPL-2.0-or-later
// Interrupt remapping: ECAP.IR/EIM, IRTA_REG, the GCMD/GSTS rules (SIRTP
// latches, IRE, CFI), every IRTE field, source-id validation, every
// interrupt-remapping fault reason and its recording (FPD), the interrupt
// entry cache and its invalidations, and the statistics.
#include <array>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "fake_host.hpp"

using namespace vtdtest;

namespace {

constexpr uint32_t IRTA = 0xb8;
constexpr uint32_t CFI = 1u << 23;  // GCMD.CFI / GSTS.CFIS
constexpr uint32_t IRES = IRE, IRTPS = SIRTP, CFIS = CFI;
constexpr uint64_t EIME = 1u << 11;

VtdConfig ir_config(bool intremap = true, bool eim = false)
{
    VtdConfig c = FakeHost::default_config();
    c.intremap = intremap;
    c.eim = eim;
    return c;
}

// An IRTE in remapped format.
struct Entry {
    uint8_t vector = 0x30;
    uint32_t dest = 1;  // APIC ID: placed in DST[15:8] (xAPIC) or DST[31:0] (x2APIC)
    unsigned dlm = 0;
    bool tm = false, dm = false, rh = false, fpd = false, present = true;
    bool x2apic = false;
    uint16_t sid = 0;
    unsigned sq = 0, svt = 0;
    uint64_t lo() const
    {
        uint64_t dst = x2apic ? uint64_t{dest} : uint64_t{dest & 0xff} << 8;
        return (present ? 1 : 0) | (fpd ? 2 : 0) | (dm ? 4 : 0) | (rh ? 8 : 0) | (tm ? 16 : 0) |
               uint64_t{dlm} << 5 | uint64_t{vector} << 16 | dst << 32;
    }
    uint64_t hi() const { return sid | uint64_t{sq} << 16 | uint64_t{svt} << 18; }
};

// The address of a remappable-format request for `handle`.
uint64_t remappable(uint32_t handle, bool shv = false)
{
    return 0xfee00000 | uint64_t{handle & 0x7fff} << 5 | 1u << 4 | (shv ? 8 : 0) |
           ((handle >> 15) & 1) << 2;
}

// A compatibility-format request: xAPIC destination 2, vector 0x41.
constexpr uint64_t COMPAT_ADDR = 0xfee02000;
constexpr uint32_t COMPAT_DATA = 0x41;

uint64_t iec_global()
{
    return 4;
}
uint64_t iec_index(uint16_t index, unsigned im)
{
    return 4 | 16 | uint64_t{im} << 27 | uint64_t{index} << 32;
}

struct Ir : ::testing::Test {
    explicit Ir(VtdConfig c = ir_config()) : h(8 << 20, c) {}
    FakeHost h;
    uint64_t table = 0;
    static constexpr uint16_t SID = 0x0310;  // 03:02.0

    // What Linux does: IRTA, SIRTP (wait for IRTPS), global IEC flush, then
    // IRE (and CFI in xAPIC mode).
    void setup(unsigned s = 7, bool eime = false, bool cfi = false)
    {
        table = h.alloc_page();
        for (unsigned i = 1; i < (2u << s) * 16 / PAGE; i++)
            h.alloc_page();  // contiguous, zeroed
        h.w64(IRTA, table | (eime ? EIME : 0) | s);
        h.w32(GCMD, h.gcmd_shadow | SIRTP);
        h.gcmd_shadow |= IRE | (cfi ? CFI : 0);
        h.w32(GCMD, h.gcmd_shadow);
    }
    void put(unsigned index, const Entry &e) { put_raw(index, e.lo(), e.hi()); }
    void put_raw(unsigned index, uint64_t lo, uint64_t hi)
    {
        h.put64(table + index * 16, lo);
        h.put64(table + index * 16 + 8, hi);
    }
    VtdIrResult remap(uint64_t addr, uint32_t data = 0, VtdInterrupt *out = nullptr,
                      uint16_t sid = SID, bool record = true)
    {
        VtdInterrupt tmp{};
        return vtd_engine_remap_interrupt(h.e, sid, addr, data, record, out ? out : &tmp);
    }
    VtdFaultReason fault_of(uint64_t addr, uint32_t data = 0, uint16_t sid = SID)
    {
        VtdInterrupt out{};
        VtdIrResult r = remap(addr, data, &out, sid);
        if (r != VTD_IR_BLOCKED)
            return VTD_FR_NONE;
        return out.fault;
    }
    uint64_t frcd_lo(unsigned i) { return h.mmio64(h.frcd + i * 16); }
    uint64_t frcd_hi(unsigned i) { return h.mmio64(h.frcd + i * 16 + 8); }
    unsigned records()
    {
        unsigned n = 0;
        for (unsigned i = 0; i < 8; i++)
            n += frcd_hi(i) >> 63;
        return n;
    }
    uint64_t stat(const std::string &section, const std::string &key)
    {
        return json_counter(h.stats(), section, key);
    }
};

struct IrX2apic : Ir {
    IrX2apic() : Ir(ir_config(true, true)) {}
};

struct IrOff : Ir {
    IrOff() : Ir(ir_config(false)) {}
};

}  // namespace

// --- capabilities and registers ---

TEST(IrRegisters, CapabilitiesFollowTheConfiguration)
{
    FakeHost off;
    EXPECT_FALSE(off.ecap & (1 << 3)) << "IR off by default";
    EXPECT_FALSE(off.ecap & (1 << 4)) << "EIM off by default";
    FakeHost ir(8 << 20, ir_config(true, false));
    EXPECT_TRUE(ir.ecap & (1 << 3));
    EXPECT_FALSE(ir.ecap & (1 << 4));
    EXPECT_TRUE(ir.ecap & 2) << "QI, which IEC invalidation needs";
    // Linux's alloc_irte() refuses a block of 2^n IRTEs (multi-vector MSI)
    // when n exceeds MHMV.
    EXPECT_EQ((ir.ecap >> 20) & 0xf, 0xfu) << "MHMV";
    EXPECT_EQ((off.ecap >> 20) & 0xf, 0u) << "MHMV is reserved without IR";
    FakeHost eim(8 << 20, ir_config(true, true));
    EXPECT_TRUE(eim.ecap & (1 << 3));
    EXPECT_TRUE(eim.ecap & (1 << 4));
    EXPECT_NE(eim.stats().find("\"intremap\":true,\"eim\":true"), std::string::npos);
    EXPECT_NE(off.stats().find("\"intremap\":false,\"eim\":false"), std::string::npos);

    VtdConfig bad = ir_config(false, true);
    VtdHostOps ops{};
    ops.mem_read = [](void *, uint64_t, void *, size_t) { return -1; };
    ops.mem_write = [](void *, uint64_t, const void *, size_t) { return -1; };
    ops.msi = [](void *, uint64_t, uint32_t) {};
    char err[128] = "";
    EXPECT_EQ(vtd_engine_new(&bad, &ops, nullptr, err, sizeof(err)), nullptr);
    EXPECT_NE(std::string(err).find("eim"), std::string::npos) << err;
}

TEST_F(Ir, IrtaWritableBitsAndHalves)
{
    EXPECT_EQ(h.mmio64(IRTA), 0u);
    h.w64(IRTA, ~uint64_t{0});
    // address bits 63:48 (from the host address width up) read 0
    EXPECT_EQ(h.mmio64(IRTA), 0xfffffffff00full) << "EIME reserved without ECAP.EIM; 10:4 "
                                                    "reserved";
    h.w32(IRTA, 0x12345ff7);
    EXPECT_EQ(h.mmio64(IRTA), 0xffff12345007ull);
    h.w32(IRTA + 4, 0x9);
    EXPECT_EQ(h.mmio64(IRTA), 0x912345007ull);
    EXPECT_EQ(h.mmio32(IRTA + 4), 0x9u);
}

TEST_F(IrX2apic, EimeWritableWithEim)
{
    h.w64(IRTA, 0x5000 | EIME | 3);
    EXPECT_EQ(h.mmio64(IRTA), 0x5000 | EIME | 3);
}

TEST_F(IrOff, WithoutEcapIrEverythingIsIgnored)
{
    h.w64(IRTA, 0x5000 | 3);
    EXPECT_EQ(h.mmio64(IRTA), 0u) << "IRTA reserved without ECAP.IR";
    h.w32(GCMD, SIRTP | IRE | CFI);
    EXPECT_EQ(h.mmio32(GSTS), 0u);
    VtdInterrupt out{};
    EXPECT_EQ(remap(remappable(5), 0, &out), VTD_IR_PASS_THROUGH);
    EXPECT_EQ(out.addr, remappable(5)) << "delivered as written";
    EXPECT_EQ(records(), 0u);
}

TEST_F(Ir, SirtpLatchesAndIrtpsReportsIt)
{
    EXPECT_EQ(h.mmio32(GSTS), 0u) << "IRTPS clear at reset";
    uint64_t a = h.alloc_page(), b = h.alloc_page();
    Entry e;
    table = a;
    e.vector = 0x31;
    put(0, e);
    table = b;
    e.vector = 0x32;
    put(0, e);

    h.w64(IRTA, a | 0);
    EXPECT_EQ(h.mmio32(GSTS) & IRTPS, 0u) << "an IRTA write alone latches nothing";
    h.w32(GCMD, SIRTP);
    EXPECT_EQ(h.mmio32(GSTS), IRTPS);
    EXPECT_EQ(h.mmio32(GCMD), 0u) << "GCMD is write-only; SIRTP is not sticky";
    h.w32(GCMD, IRE);
    EXPECT_EQ(h.mmio32(GSTS), IRTPS | IRES);

    VtdInterrupt out{};
    ASSERT_EQ(remap(remappable(0), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0x31);
    // A new IRTA value does not take effect until the next SIRTP...
    h.w64(IRTA, b | 0);
    vtd_engine_stats_reset(h.e);
    ASSERT_EQ(remap(remappable(0), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0x31);
    // ...which also drops what the IEC held from the old table.
    h.w32(GCMD, IRE | SIRTP);
    EXPECT_EQ(h.mmio32(GSTS), IRTPS | IRES);
    ASSERT_EQ(remap(remappable(0), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0x32);
    EXPECT_EQ(stat("iec", "invalidations_sirtp"), 1u);
    EXPECT_EQ(stat("iec", "entries_dropped"), 1u);
    // Writes without SIRTP leave the latch alone; IRTPS stays set.
    h.w32(GCMD, IRE);
    EXPECT_EQ(h.mmio32(GSTS), IRTPS | IRES);
}

TEST_F(Ir, TableSizeIsTwoToThePowerSPlusOne)
{
    for (unsigned s : {0u, 3u, 15u}) {
        SCOPED_TRACE(s);
        vtd_engine_reset(h.e);
        h.gcmd_shadow = 0;
        setup(s);
        uint32_t entries = 2u << s;
        put(entries - 1, Entry{});
        EXPECT_EQ(remap(remappable(entries - 1)), VTD_IR_REMAPPED);
        if (entries < 65536) {
            EXPECT_EQ(fault_of(remappable(entries)), VTD_FR_IR_INDEX_OVER);
        }
    }
}

TEST_F(Ir, IreTogglesIresAndDisabledPassesThrough)
{
    setup();
    put(4, Entry{});
    EXPECT_EQ(h.mmio32(GSTS) & IRES, IRES);
    EXPECT_EQ(remap(remappable(4)), VTD_IR_REMAPPED);
    h.gcmd_shadow &= ~IRE;
    h.w32(GCMD, h.gcmd_shadow);
    EXPECT_EQ(h.mmio32(GSTS), IRTPS) << "IRES clear, the latched table stays";
    // Remapping disabled: every request is processed as compatibility
    // format, whatever its format bit says, and CFIS does not matter.
    VtdInterrupt out{};
    EXPECT_EQ(remap(remappable(4), 0x7, &out), VTD_IR_PASS_THROUGH);
    EXPECT_EQ(out.addr, remappable(4));
    EXPECT_EQ(out.data, 0x7u);
    EXPECT_EQ(remap(COMPAT_ADDR, COMPAT_DATA), VTD_IR_PASS_THROUGH);
    EXPECT_EQ(records(), 0u);
    EXPECT_EQ(stat("interrupt_remapping", "disabled_pass_through"), 2u);
    h.gcmd_shadow |= IRE;
    h.w32(GCMD, h.gcmd_shadow);
    EXPECT_EQ(remap(remappable(4)), VTD_IR_REMAPPED) << "re-enabled on the latched table";
}

TEST_F(Ir, IreWithoutLatchedTableFaultsRemappableRequests)
{
    h.w32(FECTL, 0);
    h.w32(GCMD, IRE | CFI);
    EXPECT_EQ(h.mmio32(GSTS), IRES | CFIS) << "IRE acts; IRTPS stays clear";
    EXPECT_EQ(fault_of(remappable(1)), VTD_FR_IR_ROOT_INV);
    EXPECT_EQ((frcd_hi(0) >> 32) & 0xff, uint64_t{VTD_FR_IR_ROOT_INV});
    EXPECT_EQ(remap(COMPAT_ADDR, COMPAT_DATA), VTD_IR_PASS_THROUGH) << "CFIS set, no EIME";
    // Latching a table later makes the same request work.
    table = h.alloc_page();
    put(1, Entry{});
    h.w64(IRTA, table);
    h.w32(GCMD, IRE | CFI | SIRTP);
    EXPECT_EQ(remap(remappable(1)), VTD_IR_REMAPPED);
}

TEST_F(Ir, IreWithQueuedInvalidationOff)
{
    // No rule ties IRE to QIE: remapping works with QI off, and IRE can be
    // toggled at will (QI is only needed to invalidate the IEC).
    setup();
    EXPECT_EQ(h.mmio32(GSTS) & QIE, 0u);
    put(2, Entry{});
    for (int i = 0; i < 3; i++) {
        h.w32(GCMD, 0);
        EXPECT_EQ(h.mmio32(GSTS), IRTPS);
        EXPECT_EQ(remap(remappable(2)), VTD_IR_PASS_THROUGH);
        h.w32(GCMD, IRE);
        EXPECT_EQ(h.mmio32(GSTS), IRTPS | IRES);
        EXPECT_EQ(remap(remappable(2)), VTD_IR_REMAPPED);
    }
    EXPECT_EQ(records(), 0u);
}

TEST_F(Ir, CompatibilityFormatFollowsCfisAndEime)
{
    h.w32(FECTL, 0);
    setup(7, false, false);
    EXPECT_EQ(h.mmio32(GSTS) & CFIS, 0u);
    VtdInterrupt out{};
    EXPECT_EQ(remap(COMPAT_ADDR, COMPAT_DATA, &out), VTD_IR_BLOCKED);
    EXPECT_EQ(out.fault, VTD_FR_IR_REQ_COMPAT);
    EXPECT_EQ(frcd_lo(0), 0u) << "no interrupt_index for a compatibility request";
    EXPECT_EQ((frcd_hi(0) >> 32) & 0xff, uint64_t{VTD_FR_IR_REQ_COMPAT});

    h.gcmd_shadow |= CFI;
    h.w32(GCMD, h.gcmd_shadow);
    EXPECT_EQ(h.mmio32(GSTS), IRTPS | IRES | CFIS);
    EXPECT_EQ(remap(COMPAT_ADDR, COMPAT_DATA, &out), VTD_IR_PASS_THROUGH);
    EXPECT_EQ(out.addr, COMPAT_ADDR);
    EXPECT_EQ(out.data, COMPAT_DATA);
    EXPECT_EQ(stat("compatibility", "passed_through"), 1u);
    EXPECT_EQ(stat("compatibility", "blocked"), 1u);

    h.gcmd_shadow &= ~CFI;
    h.w32(GCMD, h.gcmd_shadow);
    EXPECT_EQ(h.mmio32(GSTS), IRTPS | IRES);
    EXPECT_EQ(fault_of(COMPAT_ADDR, COMPAT_DATA), VTD_FR_IR_REQ_COMPAT);
}

TEST_F(IrX2apic, CompatibilityFormatBlockedUnderEimeEvenWithCfis)
{
    setup(7, true, true);
    EXPECT_EQ(h.mmio32(GSTS), IRTPS | IRES | CFIS);
    EXPECT_EQ(fault_of(COMPAT_ADDR, COMPAT_DATA), VTD_FR_IR_REQ_COMPAT);
    // EIME is part of the latch: clearing it in IRTA changes nothing until SIRTP.
    h.w64(IRTA, table | 7);
    EXPECT_EQ(fault_of(COMPAT_ADDR, COMPAT_DATA), VTD_FR_IR_REQ_COMPAT);
    h.w32(GCMD, h.gcmd_shadow | SIRTP);
    EXPECT_EQ(remap(COMPAT_ADDR, COMPAT_DATA), VTD_IR_PASS_THROUGH);
}

TEST_F(Ir, ResetClearsInterruptRemappingState)
{
    setup(7, false, true);
    put(0, Entry{});
    EXPECT_EQ(remap(remappable(0)), VTD_IR_REMAPPED);
    vtd_engine_reset(h.e);
    EXPECT_EQ(h.mmio32(GSTS), 0u);
    EXPECT_EQ(h.mmio64(IRTA), 0u);
    EXPECT_EQ(remap(remappable(0)), VTD_IR_PASS_THROUGH);
    EXPECT_EQ(json_counter(h.stats(), "iec", "entries"), 0u);
}

TEST_F(Ir, EveryGcmdCombinationKeepsGstsConsistent)
{
    table = h.alloc_page();
    h.w64(IRTA, table);
    for (uint32_t combo = 0; combo < 512; combo++) {
        uint32_t v = combo << 23;
        bool latched_before = h.mmio32(GSTS) & IRTPS;
        h.w32(GCMD, v);
        uint32_t gsts = h.mmio32(GSTS);
        EXPECT_EQ(gsts & ~(TE | SRTP | QIE | IRES | IRTPS | CFIS), 0u);
        EXPECT_EQ(bool(gsts & IRES), bool(v & IRE));
        EXPECT_EQ(bool(gsts & CFIS), bool(v & CFI));
        EXPECT_EQ(bool(gsts & IRTPS), latched_before || (v & SIRTP));
        remap(remappable(combo % 256));
        remap(COMPAT_ADDR, COMPAT_DATA);
    }
}

// --- the remapped interrupt: every IRTE field ---

TEST_F(Ir, RemappedInterruptXapic)
{
    setup();
    Entry e;
    e.vector = 0xa5;
    e.dest = 0x7c;
    e.dlm = 1;
    e.dm = true;
    e.rh = true;
    e.tm = true;
    put(0x42, e);
    VtdInterrupt out{};
    ASSERT_EQ(remap(remappable(0x42), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0xa5);
    EXPECT_EQ(out.dest, 0x7cu);
    EXPECT_EQ(out.delivery_mode, 1);
    EXPECT_TRUE(out.dest_logical);
    EXPECT_TRUE(out.redir_hint);
    EXPECT_TRUE(out.level);
    EXPECT_EQ(out.index, 0x42);
    EXPECT_EQ(out.fault, VTD_FR_NONE);
    EXPECT_EQ(out.addr, 0xfee7c00cu) << "dest in 19:12, RH bit 3, DM bit 2";
    EXPECT_EQ(out.data, 0xc1a5u) << "vector, delivery mode 1, level asserted";

    e = Entry{};
    e.vector = 0x22;
    e.dest = 3;
    put(0x43, e);
    ASSERT_EQ(remap(remappable(0x43), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.addr, 0xfee03000u);
    EXPECT_EQ(out.data, 0x22u) << "fixed, edge";
    EXPECT_FALSE(out.level || out.dest_logical || out.redir_hint);
    // The software-available bits 11:8 are ignored.
    put_raw(0x44, e.lo() | 0xf00, e.hi());
    ASSERT_EQ(remap(remappable(0x44), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.data, 0x22u);
}

TEST_F(IrX2apic, RemappedInterruptX2apicDestination)
{
    setup(7, true);
    Entry e;
    e.x2apic = true;
    e.dest = 0x12345678;
    e.vector = 0x61;
    put(9, e);
    VtdInterrupt out{};
    ASSERT_EQ(remap(remappable(9), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.dest, 0x12345678u);
    EXPECT_EQ(out.addr, 0x12345600fee78000ull) << "dest[31:8] in address bits 63:40";
    EXPECT_EQ(out.data, 0x61u);
    e.dest = 0x1ff;  // an APIC ID above 255
    put(10, e);
    ASSERT_EQ(remap(remappable(10), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.dest, 0x1ffu);
    EXPECT_EQ(out.addr, 0x100feeff000ull);
}

TEST_F(Ir, XapicModeUsesOnlyDstBits15To8)
{
    setup();
    Entry e;
    e.dest = 0xfe;
    put(1, e);
    VtdInterrupt out{};
    ASSERT_EQ(remap(remappable(1), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.dest, 0xfeu);
    EXPECT_EQ(out.addr >> 32, 0u);
}

TEST_F(Ir, DeliveryModesAndTheirTriggerMode)
{
    setup();
    struct {
        unsigned dlm;
        bool level;  // with TM set
    } modes[] = {{0, true}, {1, true}, {2, false}, {4, false}, {5, false}, {7, false}};
    unsigned index = 0;
    for (auto m : modes) {
        SCOPED_TRACE(m.dlm);
        Entry e;
        e.dlm = m.dlm;
        e.tm = true;
        put(index, e);
        VtdInterrupt out{};
        ASSERT_EQ(remap(remappable(index), 0, &out), VTD_IR_REMAPPED);
        EXPECT_EQ(out.delivery_mode, m.dlm);
        EXPECT_EQ(out.level, m.level) << "SMI, NMI, INIT and ExtINT are edge-triggered";
        EXPECT_EQ((out.data >> 8) & 7, m.dlm);
        EXPECT_EQ(bool(out.data & (1u << 15)), m.level);
        index++;
    }
    for (unsigned reserved : {3u, 6u}) {
        Entry e;
        e.dlm = reserved;
        put(index, e);
        EXPECT_EQ(fault_of(remappable(index)), VTD_FR_IR_IRTE_RSVD) << reserved;
        index++;
    }
}

TEST_F(Ir, EveryReservedIrteBitFaults)
{
    setup(8);
    h.w32(FECTL, 0);
    std::vector<std::pair<uint64_t, uint64_t>> bad;
    for (unsigned b : {12u, 13u, 14u, 15u})  // 15: IM, the posted format (no CAP.PI)
        bad.push_back({uint64_t{1} << b, 0});
    for (unsigned b = 24; b < 32; b++)
        bad.push_back({uint64_t{1} << b, 0});
    for (unsigned b = 32; b < 40; b++)  // xAPIC: DST[7:0]
        bad.push_back({uint64_t{1} << b, 0});
    for (unsigned b = 48; b < 64; b++)  // xAPIC: DST[31:16]
        bad.push_back({uint64_t{1} << b, 0});
    for (unsigned b = 20; b < 64; b++)
        bad.push_back({0, uint64_t{1} << b});
    bad.push_back({0, uint64_t{3} << 18});  // SVT 11b
    ASSERT_LT(bad.size(), 512u);
    Entry good;
    unsigned index = 0;
    for (auto [lo, hi] : bad) {
        SCOPED_TRACE(testing::Message() << std::hex << lo << " " << hi);
        put_raw(index, good.lo() | lo, good.hi() | hi);
        VtdInterrupt out{};
        EXPECT_EQ(remap(remappable(index), 0, &out), VTD_IR_BLOCKED);
        EXPECT_EQ(out.fault, VTD_FR_IR_IRTE_RSVD);
        EXPECT_EQ(out.index, index);
        index++;
    }
    EXPECT_EQ(json_counter(h.stats(), "blocked_by_reason", "ir_entry_reserved"), bad.size());
    EXPECT_EQ(json_counter(h.stats(), "iec", "entries"), 0u) << "malformed entries not cached";
}

TEST_F(IrX2apic, FullDestinationIsNotReservedUnderEime)
{
    setup(7, true);
    Entry e;
    e.x2apic = true;
    e.dest = 0xffffffff;
    put(0, e);
    EXPECT_EQ(remap(remappable(0)), VTD_IR_REMAPPED);
    // Without EIME latched the same entry is malformed.
    h.w64(IRTA, table | 7);
    h.w32(GCMD, h.gcmd_shadow | SIRTP);
    EXPECT_EQ(fault_of(remappable(0)), VTD_FR_IR_IRTE_RSVD);
}

// --- source-id validation ---

TEST_F(Ir, SourceValidationSidAndQualifier)
{
    setup();
    h.w32(FECTL, 0);
    const uint16_t sid = 0x0312;  // 03:02.2
    struct {
        unsigned sq;
        uint16_t passes, fails;
    } cases[] = {
        {0, 0x0312, 0x0313},  // all 16 bits
        {1, 0x0316, 0x0310},  // function bit 2 ignored
        {2, 0x0314, 0x0313},  // bits 2:1 ignored
        {3, 0x0317, 0x031a},  // bits 2:0 ignored
    };
    unsigned index = 0;
    for (auto c : cases) {
        SCOPED_TRACE(c.sq);
        Entry e;
        e.svt = 1;
        e.sq = c.sq;
        e.sid = sid;
        put(index, e);
        EXPECT_EQ(remap(remappable(index), 0, nullptr, sid), VTD_IR_REMAPPED);
        EXPECT_EQ(remap(remappable(index), 0, nullptr, c.passes), VTD_IR_REMAPPED);
        EXPECT_EQ(fault_of(remappable(index), 0, c.fails), VTD_FR_IR_SID_ERR);
        index++;
    }
    // SVT 0: no verification, SID and SQ are ignored.
    Entry any;
    any.sid = 0xffff;
    any.sq = 3;
    put(index, any);
    EXPECT_EQ(remap(remappable(index), 0, nullptr, 0x0000), VTD_IR_REMAPPED);
    EXPECT_EQ(remap(remappable(index), 0, nullptr, 0xfff8), VTD_IR_REMAPPED);
}

TEST_F(Ir, SourceValidationBusRange)
{
    setup();
    Entry e;
    e.svt = 2;
    e.sid = 0x0406;  // buses 4..6, as Linux programs a device behind a bridge
    put(3, e);
    for (uint16_t sid : {0x0400, 0x0500, 0x06ff})
        EXPECT_EQ(remap(remappable(3), 0, nullptr, sid), VTD_IR_REMAPPED) << sid;
    for (uint16_t sid : {0x03ff, 0x0700, 0x0000})
        EXPECT_EQ(fault_of(remappable(3), 0, sid), VTD_FR_IR_SID_ERR) << sid;
    // An empty range (start above end) lets nothing through.
    e.sid = 0x0604;
    put(4, e);
    EXPECT_EQ(fault_of(remappable(4), 0, 0x0500), VTD_FR_IR_SID_ERR);
}

// --- the request: handle, SHV, subhandle ---

TEST_F(Ir, HandleSubhandleAndReservedRequestBits)
{
    setup(15);  // 64K entries: the whole handle space
    Entry e;
    e.vector = 0x50;
    put(0x8001, e);
    VtdInterrupt out{};
    ASSERT_EQ(remap(remappable(0x8001), 0xffffffff, &out), VTD_IR_REMAPPED)
        << "handle[15] from address bit 2; data ignored without SHV";
    EXPECT_EQ(out.index, 0x8001);
    // SHV: interrupt_index = handle + subhandle (a multi-vector MSI).
    e.vector = 0x51;
    put(0x8003, e);
    ASSERT_EQ(remap(remappable(0x8001, true), 2, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.index, 0x8003);
    EXPECT_EQ(out.vector, 0x51);
    ASSERT_EQ(remap(remappable(0, true), 0x8001, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0x50);
    // With SHV set, data bits 31:16 are reserved.
    h.w32(FECTL, 0);
    EXPECT_EQ(remap(remappable(0x8001, true), 0x10000, &out), VTD_IR_BLOCKED);
    EXPECT_EQ(out.fault, VTD_FR_IR_REQ_RSVD);
    EXPECT_EQ(frcd_lo(0) >> 48, 0x8001u) << "FI: the handle";
    // handle + subhandle past 64K is beyond any table.
    EXPECT_EQ(fault_of(remappable(0xffff, true), 1), VTD_FR_IR_INDEX_OVER);
    // Address bits 1:0 are ignored.
    EXPECT_EQ(remap(remappable(0x8001) | 3), VTD_IR_REMAPPED);
}

TEST_F(Ir, OutsideTheInterruptWindowIsNotAnInterrupt)
{
    setup();
    for (uint64_t addr : {uint64_t{0xfef00010}, uint64_t{0xfed00010}, uint64_t{0x1fee00010},
                          uint64_t{0}, ~uint64_t{0}}) {
        VtdInterrupt out{};
        EXPECT_EQ(remap(addr, 0, &out), VTD_IR_NOT_INTERRUPT) << std::hex << addr;
        EXPECT_EQ(out.fault, VTD_FR_NONE);
    }
    EXPECT_EQ(records(), 0u);
    EXPECT_EQ(stat("interrupt_remapping", "not_interrupt"), 5u);
}

// --- fault reasons and their recording ---

TEST_F(Ir, FaultRecordsCarryReasonIndexAndSource)
{
    setup(3);  // 16 entries
    h.w32(FEDATA, 0x44);
    h.w32(FEADDR, 0xfee00000);
    h.w32(FECTL, 0);
    Entry absent;
    absent.present = false;
    put(7, absent);
    EXPECT_EQ(fault_of(remappable(7)), VTD_FR_IR_ENTRY_P);
    uint64_t hi = frcd_hi(0);
    EXPECT_EQ(hi >> 63, 1u) << "F";
    EXPECT_EQ((hi >> 62) & 1, 0u) << "T: an interrupt request is a write";
    EXPECT_EQ((hi >> 32) & 0xff, uint64_t{VTD_FR_IR_ENTRY_P});
    EXPECT_EQ(hi & 0xffff, Ir::SID);
    EXPECT_EQ(frcd_lo(0), uint64_t{7} << 48) << "FI: interrupt_index in 63:48, 47:12 clear";
    ASSERT_EQ(h.msis.size(), 1u) << "a fault event";
    EXPECT_EQ(h.msis[0].data, 0x44u);
    EXPECT_EQ(h.mmio32(FSTS) & 2, 2u) << "PPF";

    EXPECT_EQ(fault_of(remappable(16)), VTD_FR_IR_INDEX_OVER);
    EXPECT_EQ((frcd_hi(1) >> 32) & 0xff, uint64_t{VTD_FR_IR_INDEX_OVER});
    EXPECT_EQ(frcd_lo(1), uint64_t{16} << 48);
    EXPECT_EQ(h.msis.size(), 1u) << "PPF already pending";
}

TEST_F(Ir, FpdSuppressesOnlyQualifiedFaults)
{
    setup(3);
    h.w32(FECTL, 0);
    Entry e;
    e.fpd = true;
    e.present = false;
    put(0, e);  // 22h
    e.present = true;
    put_raw(1, e.lo() | (1u << 12), e.hi());  // 24h
    e.svt = 1;
    e.sid = 0x0101;
    put(2, e);  // 26h for SID
    EXPECT_EQ(fault_of(remappable(0)), VTD_FR_IR_ENTRY_P);
    EXPECT_EQ(fault_of(remappable(1)), VTD_FR_IR_IRTE_RSVD);
    EXPECT_EQ(fault_of(remappable(2)), VTD_FR_IR_SID_ERR);
    EXPECT_EQ(records(), 0u);
    EXPECT_EQ(stat("faults", "suppressed_fpd"), 3u);
    EXPECT_TRUE(h.msis.empty());
    // The unqualified ones are recorded whatever the entries say.
    EXPECT_EQ(fault_of(remappable(16)), VTD_FR_IR_INDEX_OVER);
    EXPECT_EQ(fault_of(remappable(0, true), 0x10000), VTD_FR_IR_REQ_RSVD);
    EXPECT_EQ(fault_of(COMPAT_ADDR, COMPAT_DATA), VTD_FR_IR_REQ_COMPAT);
    EXPECT_EQ(records(), 3u);
    // The same entries with FPD clear are recorded.
    e = Entry{};
    e.present = false;
    put(0, e);
    EXPECT_EQ(fault_of(remappable(0)), VTD_FR_IR_ENTRY_P);
    EXPECT_EQ(records(), 4u);
}

TEST_F(Ir, NotRecordedWhenAskedNotTo)
{
    setup(3);
    Entry absent;
    absent.present = false;
    put(0, absent);
    VtdInterrupt out{};
    EXPECT_EQ(remap(remappable(0), 0, &out, Ir::SID, false), VTD_IR_BLOCKED);
    EXPECT_EQ(out.fault, VTD_FR_IR_ENTRY_P);
    EXPECT_EQ(remap(remappable(99), 0, &out, Ir::SID, false), VTD_IR_BLOCKED);
    EXPECT_EQ(out.fault, VTD_FR_IR_INDEX_OVER);
    EXPECT_EQ(records(), 0u);
    EXPECT_EQ(stat("faults", "not_recorded"), 2u);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
}

TEST_F(Ir, TableOutsideRamFaults)
{
    h.w32(FECTL, 0);
    h.w64(IRTA, 0x7fff000000ull | 7);  // far above the fake's 8 MiB
    h.w32(GCMD, SIRTP);
    h.w32(GCMD, IRE);
    EXPECT_EQ(fault_of(remappable(5)), VTD_FR_IR_ROOT_INV);
    EXPECT_EQ((frcd_hi(0) >> 32) & 0xff, uint64_t{VTD_FR_IR_ROOT_INV});
    EXPECT_EQ(frcd_lo(0), uint64_t{5} << 48);
    // A table straddling the end of RAM: entries inside work, beyond fault.
    table = h.ram.size() - PAGE;
    put(0, Entry{});
    h.w64(IRTA, table | 15);
    h.w32(GCMD, IRE | SIRTP);
    EXPECT_EQ(remap(remappable(0)), VTD_IR_REMAPPED);
    EXPECT_EQ(fault_of(remappable(256)), VTD_FR_IR_ROOT_INV);
}

TEST_F(Ir, TableAddressWrappingFaultsInsteadOfReadingLowMemory)
{
    // A valid entry at guest address 0 must not be reached by wrapping
    // around the top of the address space.
    table = 0;
    put(0, Entry{});
    h.w64(IRTA, 0xfffffffffffff000ull | 15);
    h.w32(GCMD, SIRTP);
    h.w32(GCMD, IRE);
    EXPECT_EQ(fault_of(remappable(0x100)), VTD_FR_IR_ROOT_INV);
    EXPECT_EQ(fault_of(remappable(0)), VTD_FR_IR_ROOT_INV);
}

TEST_F(Ir, PostedFormatEntryIsReservedWithoutPostedInterrupts)
{
    // 27h (posted-interrupt descriptor access) needs CAP.PI, which is not
    // offered: an IRTE asking for the posted format (IM) is malformed.
    setup();
    EXPECT_FALSE(h.cap & (1ull << 59)) << "CAP.PI";
    Entry e;
    put_raw(0, e.lo() | (1u << 15), e.hi());
    EXPECT_EQ(fault_of(remappable(0)), VTD_FR_IR_IRTE_RSVD);
}

TEST_F(Ir, HostileGuestFuzzNeverCrashes)
{
    // Random IRTEs, requests and register writes: every result is one of
    // the four outcomes and a blocked one carries an IR fault reason.
    setup(4);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    auto rng = [&x] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    };
    h.w32(FECTL, 0);
    for (int i = 0; i < 4000; i++) {
        unsigned index = rng() % 40;
        if (index < 32)
            put_raw(index, rng() & (rng() | 0xffffffff00ff00ffull), rng() & 0xfffff);
        if (i % 97 == 0)
            h.w64(IRTA, (rng() % 3 ? table : rng()) | (rng() & 0xfff));
        if (i % 89 == 0)
            h.w32(GCMD, static_cast<uint32_t>(rng()) & (IRE | SIRTP | CFI));
        if (i % 61 == 0)
            for (unsigned r = 0; r < 8; r++)
                h.w32(h.frcd + r * 16 + 12, 1u << 31);
        uint64_t addr = 0xfee00000 | (rng() & 0xfffff);
        VtdInterrupt out{};
        VtdIrResult r =
            remap(addr, static_cast<uint32_t>(rng()), &out, static_cast<uint16_t>(rng()));
        ASSERT_TRUE(r == VTD_IR_REMAPPED || r == VTD_IR_PASS_THROUGH || r == VTD_IR_BLOCKED);
        if (r == VTD_IR_BLOCKED) {
            EXPECT_GE(out.fault, VTD_FR_IR_REQ_RSVD);
            EXPECT_LE(out.fault, VTD_FR_IR_SID_ERR);
        } else {
            EXPECT_EQ(out.fault, VTD_FR_NONE);
        }
    }
    const std::string j = h.stats();
    EXPECT_EQ(json_counter(j, "interrupt_remapping", "requests"), 4000u);
    EXPECT_EQ(json_counter(j, "interrupt_remapping", "not_interrupt") +
                  json_counter(j, "interrupt_remapping", "disabled_pass_through") +
                  json_counter(j, "remappable", "remapped") +
                  json_counter(j, "remappable", "blocked") +
                  json_counter(j, "compatibility", "passed_through") +
                  json_counter(j, "compatibility", "blocked"),
              4000u)
        << "every request counted once, by outcome";
    uint64_t by_reason = 0;
    for (const char *r : {"ir_request_reserved", "ir_index_beyond_table", "ir_entry_not_present",
                          "ir_table_invalid", "ir_entry_reserved", "ir_compatibility_blocked",
                          "ir_source_id", "ir_posted_descriptor_invalid"})
        by_reason += json_counter(j, "blocked_by_reason", r);
    EXPECT_EQ(by_reason, json_counter(j, "remappable", "blocked") +
                             json_counter(j, "compatibility", "blocked"));
    EXPECT_GT(by_reason, 0u);
}

// --- the interrupt entry cache ---

TEST_F(Ir, IecHoldsEntriesUntilInvalidated)
{
    setup();
    h.enable_qi();
    Entry e;
    e.vector = 0x40;
    put(6, e);
    VtdInterrupt out{};
    ASSERT_EQ(remap(remappable(6), 0, &out), VTD_IR_REMAPPED);
    ASSERT_EQ(remap(remappable(6), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(stat("iec", "misses"), 1u);
    EXPECT_EQ(stat("iec", "hits"), 1u);
    EXPECT_EQ(stat("iec", "entries"), 1u);
    // Software changes the IRTE: the cached copy is used until the IEC is
    // invalidated, as the specification allows.
    e.vector = 0x41;
    put(6, e);
    ASSERT_EQ(remap(remappable(6), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0x40);
    h.submit(iec_global(), 0);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    ASSERT_EQ(remap(remappable(6), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0x41);
    EXPECT_EQ(stat("iec", "invalidations_global"), 1u);
    EXPECT_EQ(stat("iec", "entries_dropped"), 1u);
    EXPECT_EQ(json_counter(h.stats(), "descriptors", "interrupt_entry_cache"), 1u);
}

TEST_F(Ir, IecIndexSelectiveWithIndexMask)
{
    setup(8);
    h.enable_qi();
    Entry e;
    for (unsigned i = 0; i < 16; i++) {
        e.vector = static_cast<uint8_t>(0x40 + i);
        put(i, e);
        remap(remappable(i));
    }
    for (unsigned i = 0; i < 16; i++) {
        e.vector = static_cast<uint8_t>(0x80 + i);
        put(i, e);
    }
    // IM = 2 at index 5: indexes 4..7 (the low two bits ignored).
    h.submit(iec_index(5, 2), 0);
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    for (unsigned i = 0; i < 16; i++) {
        VtdInterrupt out{};
        ASSERT_EQ(remap(remappable(i), 0, &out), VTD_IR_REMAPPED);
        bool dropped = i >= 4 && i <= 7;
        EXPECT_EQ(out.vector, (dropped ? 0x80 : 0x40) + i) << i;
    }
    EXPECT_EQ(stat("iec", "invalidations_index"), 1u);
    EXPECT_EQ(stat("iec", "entries_dropped"), 4u);
    // IM = 0: exactly one index.
    h.submit(iec_index(9, 0), 0);
    VtdInterrupt out{};
    remap(remappable(9), 0, &out);
    EXPECT_EQ(out.vector, 0x89);
    remap(remappable(10), 0, &out);
    EXPECT_EQ(out.vector, 0x4a);
    // An index mask beyond the index width covers everything.
    h.submit(iec_index(0x1234, 31), 0);
    remap(remappable(10), 0, &out);
    EXPECT_EQ(out.vector, 0x8a);
    // Reserved bits make the descriptor invalid.
    h.submit(iec_index(0, 0) | (1ull << 5), 0);
    EXPECT_EQ(h.mmio32(FSTS) & 0x10, 0x10u) << "IQE";
}

TEST_F(Ir, FaultingEntriesAreNotCached)
{
    setup();
    Entry e;
    e.present = false;
    put(1, e);
    EXPECT_EQ(fault_of(remappable(1)), VTD_FR_IR_ENTRY_P);
    e.present = true;
    put(1, e);
    EXPECT_EQ(remap(remappable(1)), VTD_IR_REMAPPED) << "no invalidation needed after a fault";
    // A cached entry still goes through source validation on every request.
    e.svt = 1;
    e.sid = Ir::SID;
    put(2, e);
    EXPECT_EQ(remap(remappable(2)), VTD_IR_REMAPPED);
    EXPECT_EQ(fault_of(remappable(2), 0, Ir::SID + 1), VTD_FR_IR_SID_ERR);
    EXPECT_EQ(stat("iec", "hits"), 1u);
}

TEST_F(Ir, FullIecEvictsOneEntryNeverFlushes)
{
    setup(11);  // 4096 entries
    const uint64_t capacity = stat("iec", "capacity");
    ASSERT_GT(capacity, 0u);
    ASSERT_LT(capacity, 4096u);
    for (unsigned i = 0; i < 4096; i++)
        put(i, Entry{});
    for (unsigned i = 0; i < capacity; i++)
        remap(remappable(i));
    EXPECT_EQ(stat("iec", "entries"), capacity);
    EXPECT_EQ(stat("iec", "evictions"), 0u);
    for (unsigned i = capacity; i < 4096; i++) {
        remap(remappable(i));
        ASSERT_EQ(stat("iec", "entries"), capacity) << "full, and stays full: " << i;
    }
    EXPECT_EQ(stat("iec", "evictions"), 4096 - capacity);
    // The most recent entries are still there.
    vtd_engine_stats_reset(h.e);
    for (unsigned i = 4096 - 64; i < 4096; i++)
        remap(remappable(i));
    EXPECT_EQ(stat("iec", "hits"), 64u);
    EXPECT_EQ(stat("iec", "misses"), 0u);
}

// Remaps on other threads race IRTE updates and their invalidations.  For
// every interleaving: a remap that starts after an invalidation completed
// sees that update or a later one, never an entry cached from before it.
// Step counts, not timing, make the workers run between the rounds: before
// each update the main thread waits until every worker has finished a
// remap begun after the previous invalidation completed.
TEST_F(Ir, InvalidationRacingRemapsNeverServesStaleEntries)
{
    setup(3);
    h.enable_qi();
    constexpr unsigned ROUNDS = 200, INDEXES = 8, WORKERS = 2;
    auto vector_of = [](unsigned round) { return static_cast<uint8_t>(0x20 + round); };
    Entry e;
    e.vector = vector_of(0);
    for (unsigned i = 0; i < INDEXES; i++)
        put(i, e);
    std::atomic<unsigned> published{0};
    std::atomic<bool> done{false};
    std::atomic<uint64_t> stale{0}, remapped{0};
    // Per worker: 1 + the round published when its latest remap began.
    std::array<std::atomic<unsigned>, WORKERS> reached{};
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < WORKERS; t++) {
        workers.emplace_back([&, t] {
            unsigned i = t;
            while (!done.load(std::memory_order_acquire)) {
                unsigned seen = published.load(std::memory_order_acquire);
                VtdInterrupt out{};
                VtdIrResult r = remap(remappable(i++ % INDEXES), 0, &out);
                reached[t].store(seen + 1, std::memory_order_release);
                if (r != VTD_IR_REMAPPED)
                    continue;
                remapped.fetch_add(1);
                if (out.vector < vector_of(seen))
                    stale.fetch_add(1);
            }
        });
    }
    for (unsigned round = 1; round <= ROUNDS; round++) {
        for (unsigned t = 0; t < WORKERS; t++)
            while (reached[t].load(std::memory_order_acquire) < round)
                std::this_thread::yield();
        e.vector = vector_of(round);
        for (unsigned i = 0; i < INDEXES; i++)
            put(i, e);
        h.submit(round % 2 ? iec_global() : iec_index(0, 3), 0);
        published.store(round, std::memory_order_release);
    }
    done.store(true, std::memory_order_release);
    for (auto &w : workers)
        w.join();
    EXPECT_EQ(h.mmio32(FSTS), 0u);
    EXPECT_EQ(stale.load(), 0u);
    EXPECT_GE(remapped.load(), uint64_t{WORKERS} * ROUNDS) << "a remap by each worker per round";
    EXPECT_EQ(stat("remappable", "remapped"), remapped.load());
    VtdInterrupt out{};
    ASSERT_EQ(remap(remappable(5), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, vector_of(ROUNDS));
}

// The interleaving the race test above can only hope for, forced: the
// guest updates the IRTE and invalidates the IEC after the engine read the
// old entry and before it cached it.  The old entry must not be cached.
TEST_F(Ir, InvalidationBetweenIrteReadAndFillIsNotUndone)
{
    setup(3);
    h.enable_qi();
    Entry e;
    e.vector = 0x40;
    put(2, e);
    const uint64_t irte = table + 2 * 16;
    for (bool global : {true, false}) {
        SCOPED_TRACE(global);
        h.submit(iec_global(), 0);  // the first remap reads the IRTE
        bool once = true;
        h.after_read = [&](uint64_t gpa, size_t) {
            if (gpa != irte || !once)
                return;
            once = false;
            e.vector++;
            put(2, e);
            h.submit(global ? iec_global() : iec_index(2, 0), 0);
        };
        VtdInterrupt out{};
        ASSERT_EQ(remap(remappable(2), 0, &out), VTD_IR_REMAPPED);
        EXPECT_EQ(out.vector, e.vector - 1) << "the request itself used what it read";
        h.after_read = nullptr;
        ASSERT_EQ(remap(remappable(2), 0, &out), VTD_IR_REMAPPED);
        EXPECT_EQ(out.vector, e.vector) << "the next one sees the update";
    }
    // The same with SIRTP to a new table in between.
    uint64_t second = h.alloc_page();
    h.put64(second + 2 * 16, Entry{.vector = 0x77}.lo());
    h.put64(second + 2 * 16 + 8, 0);
    h.submit(iec_global(), 0);
    bool once = true;
    h.after_read = [&](uint64_t gpa, size_t) {
        if (gpa != irte || !once)
            return;
        once = false;
        h.w64(IRTA, second | 3);
        h.w32(GCMD, h.gcmd_shadow | SIRTP);
    };
    VtdInterrupt out{};
    ASSERT_EQ(remap(remappable(2), 0, &out), VTD_IR_REMAPPED);
    h.after_read = nullptr;
    ASSERT_EQ(remap(remappable(2), 0, &out), VTD_IR_REMAPPED);
    EXPECT_EQ(out.vector, 0x77);
}

TEST_F(Ir, HostIsToldWhenInterruptAnswersMayChange)
{
    auto last = [&] { return h.ir_invals.back(); };
    table = h.alloc_page();
    h.w64(IRTA, table | 7);
    EXPECT_TRUE(h.ir_invals.empty()) << "an IRTA write alone changes nothing";
    h.w32(GCMD, SIRTP);
    ASSERT_EQ(h.ir_invals.size(), 1u);
    EXPECT_TRUE(last().global);
    h.w32(GCMD, IRE);
    ASSERT_EQ(h.ir_invals.size(), 2u) << "IRES set";
    h.w32(GCMD, IRE);
    EXPECT_EQ(h.ir_invals.size(), 2u) << "no change, no call";
    h.w32(GCMD, IRE | CFI);
    EXPECT_EQ(h.ir_invals.size(), 3u) << "CFIS set";
    h.gcmd_shadow = IRE | CFI;
    h.enable_qi();  // writes the shadow with QIE: IRE and CFI unchanged
    size_t n = h.ir_invals.size();
    EXPECT_EQ(n, 3u);
    h.w32(GCMD, QIE);
    EXPECT_EQ(h.ir_invals.size(), 4u) << "IRES and CFIS cleared: one call";
    h.w32(GCMD, h.gcmd_shadow);
    n = h.ir_invals.size();
    h.submit(iec_global(), 0);
    ASSERT_EQ(h.ir_invals.size(), n + 1);
    EXPECT_TRUE(last().global);
    h.submit(iec_index(0x1237, 2), 0);
    ASSERT_EQ(h.ir_invals.size(), n + 2);
    EXPECT_FALSE(last().global);
    EXPECT_EQ(last().index, 0x1234) << "aligned to the mask";
    EXPECT_EQ(last().mask, 2);
    h.submit(iec_index(0x1237, 20), 0);
    EXPECT_EQ(last().index, 0u);
    EXPECT_EQ(last().mask, 16) << "clamped to the index width";
    // Requests themselves never call it.
    n = h.ir_invals.size();
    remap(remappable(3));
    remap(COMPAT_ADDR, COMPAT_DATA);
    EXPECT_EQ(h.ir_invals.size(), n);
}

TEST_F(Ir, IecDescriptorWithoutIrIsStillAccepted)
{
    FakeHost off;
    off.enable_qi();
    off.submit(iec_global(), 0);
    off.submit(iec_index(3, 1), 0);
    EXPECT_EQ(off.mmio32(FSTS), 0u);
}

// --- statistics ---

TEST_F(Ir, StatisticsByFormatReasonAndSource)
{
    setup(3, false, true);
    Entry e;
    put(0, e);
    e.present = false;
    put(1, e);
    remap(remappable(0), 0, nullptr, 0x0100);
    remap(remappable(0), 0, nullptr, 0x0100);
    remap(remappable(1), 0, nullptr, 0x0200);
    remap(remappable(20), 0, nullptr, 0x0200);
    remap(COMPAT_ADDR, COMPAT_DATA, nullptr, 0x0300);
    const std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "interrupt_remapping", "requests"), 5u);
    EXPECT_EQ(json_counter(s, "remappable", "remapped"), 2u);
    EXPECT_EQ(json_counter(s, "remappable", "blocked"), 2u);
    EXPECT_EQ(json_counter(s, "compatibility", "passed_through"), 1u);
    EXPECT_EQ(json_counter(s, "compatibility", "blocked"), 0u);
    EXPECT_EQ(json_counter(s, "blocked_by_reason", "ir_entry_not_present"), 1u);
    EXPECT_EQ(json_counter(s, "blocked_by_reason", "ir_index_beyond_table"), 1u);
    EXPECT_EQ(json_counter(s, "blocked_by_reason", "ir_source_id"), 0u);
    EXPECT_EQ(json_counter(s, "by_reason", "ir_entry_not_present"), 1u);
    EXPECT_EQ(json_counter(s, "by_reason", "context_entry_not_present"), 0u)
        << "IR reasons do not alias DMA ones";
    EXPECT_NE(s.find("{\"sid\":256,\"remapped\":2,\"passed_through\":0,\"blocked\":0}"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("{\"sid\":512,\"remapped\":0,\"passed_through\":0,\"blocked\":2}"),
              std::string::npos);
    EXPECT_NE(s.find("{\"sid\":768,\"remapped\":0,\"passed_through\":1,\"blocked\":0}"),
              std::string::npos);
    vtd_engine_stats_reset(h.e);
    const std::string r = h.stats();
    EXPECT_EQ(json_counter(r, "interrupt_remapping", "requests"), 0u);
    EXPECT_EQ(r.find("\"sid\":256"), std::string::npos) << "sources start afresh";
}
