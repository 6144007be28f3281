// SPDX-License-Identifier: GPL-2.0-or-later
// Interrupt remapping (VT-d specification, chapter 5): the Interrupt Remap
// Table Address register, the GCMD/GSTS interrupt-remapping bits (SIRTP /
// IRTPS, IRE / IRES, CFI / CFIS), the interrupt-remapping table entries
// (IRTE, remapped format) behind the interrupt entry cache, and the remap
// of one interrupt request.
//
// Threading: remap() runs on any thread, concurrently with one MMIO thread
// that owns the registers.  What remap() reads of them (the latched table
// and the status bits) is atomic; the IEC has its own locks; faults go
// through the fault recorder's lock.
#pragma once

#include <atomic>
#include <cstdint>

#include "fault_recording.hpp"
#include "features.hpp"
#include "host.hpp"
#include "interrupt_entry_cache.hpp"
#include "invalidation.hpp"
#include "registers.hpp"
#include "stats.hpp"

namespace viommu::vtd {

// The IRTE in remapped format (IM = 0), VT-d 9.9.
namespace irte {
constexpr uint64_t P = bit(0), FPD = bit(1), DM = bit(2), RH = bit(3), TM = bit(4);
constexpr unsigned DLM = 5, VECTOR = 16, DST = 32;
constexpr uint64_t IM = bit(15);  // posted format (9.10): needs CAP.PI
constexpr uint64_t LO_RSVD = mask(14, 12) | mask(31, 24);
// Destination bits the xAPIC mode (IRTA.EIME clear) leaves reserved: the
// 8-bit APIC ID sits in DST[15:8].
constexpr uint64_t LO_XAPIC_RSVD = mask(39, 32) | mask(63, 48);
constexpr unsigned SQ = 16, SVT = 18;
constexpr uint64_t HI_RSVD = mask(63, 20);
}  // namespace irte

namespace dlm {
constexpr unsigned FIXED = 0, LOWEST = 1, SMI = 2, NMI = 4, INIT = 5, EXTINT = 7;
}

// Source validation type (IRTE SVT).
namespace svt {
constexpr unsigned NONE = 0, SID_SQ = 1, BUS_RANGE = 2;
}

// Interrupt request in remappable format (address bits; VT-d 5.1.2.2).
namespace msi {
constexpr uint64_t WINDOW = 0xfee00000, WINDOW_MASK = ~uint64_t{0xfffff};
constexpr uint64_t FORMAT = bit(4), SHV = bit(3), HANDLE_15 = bit(2);
constexpr uint32_t DATA_RSVD_SHV = 0xffff0000;  // reserved when SHV is set
}  // namespace msi

// Why an IRTE is malformed (24h), or VTD_FR_NONE.
VtdFaultReason check_irte(const Irte &e, bool eime);
// Whether `sid` passes the IRTE's source validation (SVT, SQ, SID).
bool source_valid(const Irte &e, uint16_t sid);

class InterruptRemapping {
public:
    InterruptRemapping(const Host &host, const Features &f, Stats &stats, FaultRecorder &faults);

    void reset();

    // Migration: the registers and what SIRTP latched; GSTS's IRTPS, IRES
    // and CFIS.  load() refuses what the unit could never hold (and then
    // changes nothing); an accepted state starts with an empty IEC.
    struct State {
        uint64_t irta = 0, latched = 0;
        uint32_t status = 0;
    };
    State save() const { return {irta_, latched_.load(), status_.load()}; }
    bool valid(const State &st) const;
    void load(const State &st);

    bool handles(uint32_t offset) const { return f_.intremap && (offset & ~4u) == reg::IRTA; }
    uint32_t read32(uint32_t offset) const;
    void write32(uint32_t offset, uint32_t value);

    // A GCMD write: SIRTP acts when written as 1; IRE and CFI carry the
    // desired state.  Ignored without ECAP.IR.
    void command(uint32_t gcmd);
    // GSTS.IRTPS, IRES and CFIS.
    uint32_t status() const { return status_.load(std::memory_order_acquire); }

    void invalidate(const IecInvalidation &req);

    VtdIrResult remap(uint16_t sid, uint64_t addr, uint32_t data, bool record, VtdInterrupt &out);

    size_t cache_capacity() const { return iec_.capacity(); }
    size_t cache_size() const { return iec_.size(); }

    static constexpr uint32_t STATUS_BITS = gcmd::IRE | gcmd::SIRTP | gcmd::CFI;

private:
    // address bits from the host address width up read 0 (so the table
    // cannot wrap past 2^64)
    uint64_t writable() const
    {
        return (irta::ADDR & ~f_.above_haw()) | irta::S | (f_.eim ? irta::EIME : 0);
    }
    VtdIrResult block(uint16_t sid, uint32_t index, VtdFaultReason r, bool qualified, bool fpd,
                      bool record, bool compat, SourceStats &ss, VtdInterrupt &out);

    const Host &host_;
    const Features &f_;
    Stats &stats_;
    FaultRecorder &faults_;
    InterruptEntryCache iec_;

    uint64_t irta_ = 0;                 // the register, MMIO thread only
    std::atomic<uint64_t> latched_{0};  // IRTA as of the last SIRTP
    std::atomic<uint32_t> status_{0};   // IRTPS | IRES | CFIS
};

}  // namespace viommu::vtd
