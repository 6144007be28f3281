// SPDX-License-Identifier: GPL-2.0-or-later
#include "interrupt_remapping.hpp"

namespace viommu::vtd {

VtdFaultReason check_irte(const Irte &e, bool eime)
{
    const unsigned mode = field(e.lo, 7, irte::DLM);
    // IM set asks for the posted format, which needs CAP.PI: not offered,
    // so the bit is reserved.  Delivery modes 011b and 110b are reserved.
    if ((e.lo & (irte::LO_RSVD | irte::IM)) || (!eime && (e.lo & irte::LO_XAPIC_RSVD)) ||
        mode == 3 || mode == 6 || (e.hi & irte::HI_RSVD) || field(e.hi, 19, irte::SVT) == 3)
        return VTD_FR_IR_IRTE_RSVD;
    return VTD_FR_NONE;
}

bool source_valid(const Irte &e, uint16_t sid)
{
    const uint16_t want = e.hi & 0xffff;
    switch (field(e.hi, 19, irte::SVT)) {
    case svt::NONE:
        return true;
    case svt::SID_SQ: {
        // SQ: which low bits of the function number are ignored.
        static constexpr uint16_t sq_mask[4] = {0xffff, 0xfffb, 0xfff9, 0xfff8};
        const uint16_t m = sq_mask[field(e.hi, 17, irte::SQ)];
        return (sid & m) == (want & m);
    }
    case svt::BUS_RANGE: {
        // SID[15:8] is the first bus, SID[7:0] the last.
        const unsigned bus = sid >> 8;
        return bus >= (want >> 8u) && bus <= (want & 0xffu);
    }
    }
    return false;  // reserved: check_irte refuses it first
}

InterruptRemapping::InterruptRemapping(const Host &host, const Features &f, Stats &stats,
                                       FaultRecorder &faults)
    : host_(host), f_(f), stats_(stats), faults_(faults), iec_(f.iec_entries)
{
    reset();
}

void InterruptRemapping::reset()
{
    irta_ = 0;
    latched_.store(0);
    status_.store(0);
    iec_.invalidate_all();
}

bool InterruptRemapping::valid(const State &st) const
{
    if (!f_.intremap)
        return !st.irta && !st.latched && !st.status;
    // A table is latched only by SIRTP, which sets IRTPS for good.
    return !(st.irta & ~writable()) && !(st.latched & ~writable()) && !(st.status & ~STATUS_BITS) &&
           ((st.status & gcmd::SIRTP) || !st.latched);
}

void InterruptRemapping::load(const State &st)
{
    irta_ = st.irta;
    latched_.store(st.latched);
    status_.store(st.status);
    iec_.invalidate_all();
}

uint32_t InterruptRemapping::read32(uint32_t offset) const
{
    return (offset & 4) ? irta_ >> 32 : static_cast<uint32_t>(irta_);
}

void InterruptRemapping::write32(uint32_t offset, uint32_t value)
{
    uint64_t v = (offset & 4) ? (irta_ & 0xffffffffull) | uint64_t{value} << 32
                              : (irta_ & ~0xffffffffull) | value;
    irta_ = v & writable();
}

void InterruptRemapping::command(uint32_t gcmd)
{
    if (!f_.intremap)
        return;
    uint32_t st = status_.load(std::memory_order_relaxed);
    const uint32_t before = st;
    if (gcmd & gcmd::SIRTP) {
        // The table pointer and EIME take effect now, never on an IRTA
        // write; IRTPS reports the latch (synchronously: it never reads
        // as clear after a SIRTP).  Entries cached from the old table are
        // dropped with it.
        latched_.store(irta_, std::memory_order_release);
        st |= gcmd::SIRTP;
        stats_.add(Counter::IecSirtp);
        stats_.add(Counter::IecEntriesDropped, iec_.invalidate_all());
    }
    st = (st & ~(gcmd::IRE | gcmd::CFI)) | (gcmd & (gcmd::IRE | gcmd::CFI));
    status_.store(st, std::memory_order_release);
    // Interrupt routes the host derived from earlier answers may be stale.
    if ((gcmd & gcmd::SIRTP) || ((before ^ st) & (gcmd::IRE | gcmd::CFI)))
        host_.interrupts_invalidated(true, 0, 0);
}

void InterruptRemapping::invalidate(const IecInvalidation &req)
{
    size_t dropped = 0;
    if (req.global) {
        stats_.add(Counter::IecGlobal);
        dropped = iec_.invalidate_all();
        host_.interrupts_invalidated(true, 0, 0);
    } else {
        stats_.add(Counter::IecIndex);
        // IM names the low index bits ignored: 2^IM entries, aligned.
        const unsigned im = req.im < 16 ? req.im : 16;
        const uint32_t count = uint32_t{1} << im;
        dropped = iec_.invalidate_range(req.index & ~(count - 1), count);
        host_.interrupts_invalidated(false, static_cast<uint16_t>(req.index & ~(count - 1)),
                                     static_cast<uint8_t>(im));
    }
    stats_.add(Counter::IecEntriesDropped, dropped);
}

VtdIrResult InterruptRemapping::block(uint16_t sid, uint32_t index, VtdFaultReason r,
                                      bool qualified, bool fpd, bool record, bool compat,
                                      SourceStats &ss, VtdInterrupt &out)
{
    stats_.fault(r);
    stats_.add(compat ? Counter::IrCompatBlocked : Counter::IrRemappableBlocked);
    ss.blocked.fetch_add(1, std::memory_order_relaxed);
    // FRCD's fault info holds interrupt_index in bits 63:48 (bits 47:12
    // clear); interrupt requests are writes.
    if (!record)
        stats_.add(Counter::FaultsNotRecorded);
    else if (qualified && fpd)
        stats_.add(Counter::FaultsSuppressedFpd);
    else
        faults_.record(sid, uint64_t{index & 0xffff} << 48, r, true);
    out.index = static_cast<uint16_t>(index);
    out.fault = r;
    return VTD_IR_BLOCKED;
}

VtdIrResult InterruptRemapping::remap(uint16_t sid, uint64_t addr, uint32_t data, bool record,
                                      VtdInterrupt &out)
{
    out = {};
    out.addr = addr;
    out.data = data;
    out.fault = VTD_FR_NONE;
    stats_.add(Counter::IrRequests);
    if ((addr & msi::WINDOW_MASK) != msi::WINDOW) {
        stats_.add(Counter::IrNotInterrupt);
        return VTD_IR_NOT_INTERRUPT;
    }
    SourceStats &ss = stats_.source(sid);
    // Sampled before the table pointer: a SIRTP after this point makes
    // whatever this call reads from the old table fail to enter the IEC.
    const auto token = iec_.prepare_fill();
    const uint32_t st = status_.load(std::memory_order_acquire);
    if (!(st & gcmd::IRE)) {
        // Remapping disabled: every request is compatibility format.
        stats_.add(Counter::IrDisabled);
        ss.passed.fetch_add(1, std::memory_order_relaxed);
        return VTD_IR_PASS_THROUGH;
    }
    const uint64_t table = (st & gcmd::SIRTP) ? latched_.load(std::memory_order_acquire) : 0;
    const bool eime = table & irta::EIME;

    if (!(addr & msi::FORMAT)) {
        if (eime || !(st & gcmd::CFI))
            return block(sid, 0, VTD_FR_IR_REQ_COMPAT, false, false, record, true, ss, out);
        stats_.add(Counter::IrCompatPassed);
        ss.passed.fetch_add(1, std::memory_order_relaxed);
        return VTD_IR_PASS_THROUGH;
    }

    const uint32_t handle =
        static_cast<uint32_t>(field(addr, 19, 5)) | ((addr & msi::HANDLE_15) ? 1u << 15 : 0);
    const bool shv = addr & msi::SHV;
    if (shv && (data & msi::DATA_RSVD_SHV))
        return block(sid, handle, VTD_FR_IR_REQ_RSVD, false, false, record, false, ss, out);
    const uint32_t index = shv ? handle + (data & 0xffff) : handle;
    // IRE set before any SIRTP: there is no table to read.
    if (!(st & gcmd::SIRTP))
        return block(sid, index, VTD_FR_IR_ROOT_INV, false, false, record, false, ss, out);
    if (index >= (uint32_t{2} << (table & irta::S)))
        return block(sid, index, VTD_FR_IR_INDEX_OVER, false, false, record, false, ss, out);

    Irte e;
    if (auto cached = iec_.lookup(static_cast<uint16_t>(index))) {
        stats_.add(Counter::IecHits);
        e = *cached;
    } else {
        stats_.add(Counter::IecMisses);
        const uint64_t base = table & irta::ADDR;
        const uint64_t gpa = base + uint64_t{index} * 16;
        auto raw = gpa >= base ? host_.read_u128(gpa) : std::nullopt;
        if (!raw)
            return block(sid, index, VTD_FR_IR_ROOT_INV, false, false, record, false, ss, out);
        e = {(*raw)[0], (*raw)[1]};
        if (!(e.lo & irte::P))
            return block(sid, index, VTD_FR_IR_ENTRY_P, true, e.lo & irte::FPD, record, false, ss,
                         out);
        if (check_irte(e, eime) != VTD_FR_NONE)
            return block(sid, index, VTD_FR_IR_IRTE_RSVD, true, e.lo & irte::FPD, record, false, ss,
                         out);
        // Only present, well-formed entries are cached: a faulting one is
        // read again, so the guest's fix is seen without an invalidation.
        auto ins = iec_.insert(static_cast<uint16_t>(index), e, token);
        if (ins.inserted)
            stats_.add(Counter::IecInserts);
        if (ins.evicted)
            stats_.add(Counter::IecEvictions);
    }
    if (!source_valid(e, sid))
        return block(sid, index, VTD_FR_IR_SID_ERR, true, e.lo & irte::FPD, record, false, ss, out);

    const unsigned mode = field(e.lo, 7, irte::DLM);
    const uint32_t dest = eime ? static_cast<uint32_t>(e.lo >> irte::DST)
                               : static_cast<uint32_t>(field(e.lo, 47, 40));
    // SMI, NMI, INIT and ExtINT are edge-triggered whatever TM says.
    const bool level = (e.lo & irte::TM) && (mode == dlm::FIXED || mode == dlm::LOWEST);
    out.dest = dest;
    out.vector = static_cast<uint8_t>(field(e.lo, 23, irte::VECTOR));
    out.delivery_mode = static_cast<uint8_t>(mode);
    out.level = level;
    out.dest_logical = e.lo & irte::DM;
    out.redir_hint = e.lo & irte::RH;
    out.index = static_cast<uint16_t>(index);
    out.addr = msi::WINDOW | uint64_t{dest & 0xff} << 12 | (out.redir_hint ? bit(3) : 0) |
               (out.dest_logical ? bit(2) : 0) | uint64_t{dest & 0xffffff00u} << 32;
    out.data = out.vector | uint32_t{mode} << 8 | (level ? (1u << 15 | 1u << 14) : 0);
    stats_.add(Counter::IrRemapped);
    ss.remapped.fetch_add(1, std::memory_order_relaxed);
    return VTD_IR_REMAPPED;
}

}  // namespace viommu::vtd
