// SPDX-License-Identifier: GPL-2.0-or-later
// The register file: dispatch of 32- and 64-bit MMIO accesses.  Every
// access is handled as one or two dword accesses (a 64-bit write is its low
// dword, then its high dword), so a 64-bit register may also be written in
// halves; commands (CCMD.ICC, IOTLB.IVT) act when the dword holding the
// command bit is written.  The exception: a 64-bit read of a fault record
// half is one read of the recorder's quadword (the same value as its two
// dwords; what software polls).  Reads have no side effects.
#include "engine.hpp"

#include "events.hpp"
#include "registers.hpp"

namespace viommu::vtd {

// TTM (11:10): bit 10 (scalable mode) with ECAP.SMTS; 10b and 11b are
// not offered, so bit 11 reads as zero.
uint64_t rtaddr_writable(const Features &f)
{
    return (mask(63, 12) & ~f.above_haw()) | (f.scalable_mode ? rtaddr::TTM_SCALABLE : 0);
}
static constexpr uint64_t IVA_WRITABLE = iva::ADDR | iva::IH | iva::AM;

static uint32_t half(uint64_t v, uint32_t offset)
{
    return (offset & 4) ? v >> 32 : static_cast<uint32_t>(v);
}

static uint64_t with_half(uint64_t v, uint32_t offset, uint32_t value)
{
    return (offset & 4) ? (v & 0xffffffffull) | uint64_t{value} << 32
                        : (v & ~0xffffffffull) | value;
}

static bool valid_access(uint64_t offset, unsigned size)
{
    return (size == 4 || size == 8) && offset < VTD_MMIO_SIZE && size <= VTD_MMIO_SIZE - offset &&
           offset % size == 0;
}

uint64_t Engine::mmio_read(uint64_t offset, unsigned size)
{
    if (!valid_access(offset, size))
        return 0;
    if (size == 8 && faults_.handles_record(static_cast<uint32_t>(offset)))
        return faults_.read_record64(static_cast<uint32_t>(offset));
    uint64_t v = read32(offset);
    if (size == 8)
        v |= uint64_t{read32(offset + 4)} << 32;
    return v;
}

void Engine::mmio_write(uint64_t offset, uint64_t value, unsigned size)
{
    if (!valid_access(offset, size))
        return;
    write32(offset, static_cast<uint32_t>(value));
    if (size == 8)
        write32(offset + 4, value >> 32);
}

uint32_t Engine::read32(uint32_t offset)
{
    switch (offset & ~4u) {
    case reg::CAP:
        return half(f_.cap, offset);
    case reg::ECAP:
        return half(f_.ecap, offset);
    case reg::RTADDR:
        return half(rtaddr_, offset);
    case reg::CCMD:
        return half(ccmd_, offset);
    case reg::IVA:
        return half(iva_, offset);
    case reg::IOTLB:
        return half(iotlb_reg_, offset);
    }
    switch (offset) {
    case reg::VER:
        return VERSION;
    case reg::GCMD:
        return 0;  // write-only
    case reg::GSTS:
        return gsts_ | ir_.status();
    }
    if (faults_.handles(offset))
        return faults_.read32(offset);
    if (queue_.handles(offset))
        return queue_.read32(offset);
    if (ir_.handles(offset))
        return ir_.read32(offset);
    // PMEN/PLMBASE/... (CAP.PLMR/PHMR clear), AFLOG (no CAP.AFL), IRTA (no
    // ECAP.IR) and everything else: reserved, read as zero.
    return 0;
}

void Engine::write32(uint32_t offset, uint32_t value)
{
    switch (offset) {
    case reg::GCMD:
        global_command(value);
        return;
    case reg::RTADDR:
    case reg::RTADDR + 4:
        rtaddr_ = with_half(rtaddr_, offset, value) & rtaddr_writable(f_);
        return;
    case reg::CCMD:
    case reg::CCMD + 4:
        ccmd_ = (with_half(ccmd_, offset, value) & ccmd::WRITABLE) | (ccmd_ & mask(60, ccmd::CAIG));
        if (ccmd_ & ccmd::ICC)
            run_context_command();
        return;
    case reg::IVA:
    case reg::IVA + 4:
        iva_ = with_half(iva_, offset, value) & IVA_WRITABLE;
        return;
    case reg::IOTLB:
    case reg::IOTLB + 4:
        iotlb_reg_ = (with_half(iotlb_reg_, offset, value) & iotlb_reg::WRITABLE) |
                     (iotlb_reg_ & mask(58, iotlb_reg::IAIG));
        if (iotlb_reg_ & iotlb_reg::IVT)
            run_iotlb_command();
        return;
    }
    if (faults_.handles(offset)) {
        bool iqe_before = faults_.status() & fsts::IQE;
        faults_.write32(offset, value);
        if (iqe_before && !(faults_.status() & fsts::IQE))
            queue_.process();  // the queue resumes at IQH
        return;
    }
    if (queue_.handles(offset))
        queue_.write32(offset, value);
    else if (ir_.handles(offset))
        ir_.write32(offset, value);
}

// GCMD: TE and QIE carry the desired state (software writes the shadow of
// its enabled bits with every command); SRTP and WBF act on every write of
// 1.  IRE, SIRTP and CFI go to interrupt remapping (ignored without
// ECAP.IR); SFL and EAFL are unsupported and ignored.
void Engine::global_command(uint32_t value)
{
    const uint32_t before = gsts_ | ir_.status();
    if (value & gcmd::SRTP) {
        // The table and its format (TTM) are latched together, except that
        // the format does not change while translation is enabled.
        // Software must not change RTADDR.TTM while GSTS.TES is set (VT-d
        // 11.4.5) and the specification leaves what happens undefined; the
        // unit keeps translating in the mode it is in (the new table is
        // read in that mode) until an SRTP with TES clear.
        uint64_t ttm = rtaddr_ & rtaddr::TTM_SCALABLE;
        if (translation_enabled())
            ttm = root_table_.load(std::memory_order_relaxed) & rtaddr::TTM_SCALABLE;
        root_table_.store((rtaddr_ & entry::ADDR) | ttm, std::memory_order_release);
        flush_caches(VTD_CACHE_RESET_ROOT_TABLE);
        gsts_ |= gcmd::SRTP;  // RTPS: set when the pointer is latched
    }
    // WBF: CAP.RWBF is clear and the write buffer is always flushed, so
    // WBFS never reads as busy.
    bool te = value & gcmd::TE;
    if (te != translation_enabled()) {
        gsts_ = te ? gsts_ | gcmd::TE : gsts_ & ~gcmd::TE;
        te_.store(te, std::memory_order_release);
        translations_changed();
        host_.context_invalidated(true, 0, 0);  // every address space switches
    }
    bool qie = value & gcmd::QIE;
    if (qie != queue_.enabled()) {
        gsts_ = qie ? gsts_ | gcmd::QIE : gsts_ & ~gcmd::QIE;
        queue_.set_enabled(qie);
    }
    ir_.command(value);
    // The fault recording index resets when both remappings go off.
    const uint32_t enabled = gcmd::TE | gcmd::IRE;
    if ((before & enabled) && !((gsts_ | ir_.status()) & enabled))
        faults_.reset_index();
    host_.event([&] {
        return ev::global_command(value, before, gsts_ | ir_.status(), root_table_.load(),
                                  queue_.save().iqa);
    });
}

void Engine::run_context_command()
{
    ccmd_ &= ~(ccmd::ICC | mask(60, ccmd::CAIG));
    if (queue_.enabled()) {  // register-based invalidation is off while QI is on
        stats_.add(Counter::RegIgnoredQi);
        return;
    }
    auto g = static_cast<Granularity>(field(ccmd_, 62, ccmd::CIRG));
    // With RTADDR.TTM not legacy the request is an incorrect one.
    if (g == Granularity::Invalid || (rtaddr_ & rtaddr::TTM_SCALABLE)) {
        stats_.add(Counter::RegInvalid);
        return;  // CAIG = 0 reports the invalid request
    }
    stats_.add(Counter::RegCcmd);
    invalidate_context({g, static_cast<uint16_t>(field(ccmd_, 15, ccmd::DID)),
                        static_cast<uint16_t>(field(ccmd_, 31, ccmd::SID)),
                        static_cast<uint8_t>(field(ccmd_, 33, ccmd::FM))});
    ccmd_ |= uint64_t{static_cast<uint8_t>(g)} << ccmd::CAIG;
}

void Engine::run_iotlb_command()
{
    iotlb_reg_ &= ~(iotlb_reg::IVT | mask(58, iotlb_reg::IAIG));
    if (queue_.enabled()) {
        stats_.add(Counter::RegIgnoredQi);
        return;
    }
    auto g = static_cast<Granularity>(field(iotlb_reg_, 61, iotlb_reg::IIRG));
    uint8_t am = g == Granularity::Selective ? iva_ & iva::AM : 0;
    if (g == Granularity::Invalid || (g == Granularity::Selective && am > f_.mamv) ||
        (rtaddr_ & rtaddr::TTM_SCALABLE)) {
        stats_.add(Counter::RegInvalid);
        return;  // IAIG = 0 reports the invalid request
    }
    stats_.add(Counter::RegIotlb);
    // IVA bits at and above MGAW are ignored.
    invalidate_iotlb({g, static_cast<uint16_t>(field(iotlb_reg_, 47, iotlb_reg::DID)),
                      iva_ & mask(f_.aw_bits - 1, PAGE_SHIFT + am), am, (iva_ & iva::IH) != 0});
    // IAIG: the granularity it was done at (a large page range may be
    // done as the domain's).
    if (g == Granularity::Selective && last_pages_as_domain_)
        g = Granularity::Domain;
    iotlb_reg_ |= uint64_t{static_cast<uint8_t>(g)} << iotlb_reg::IAIG;
}

}  // namespace viommu::vtd
