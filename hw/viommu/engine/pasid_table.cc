// SPDX-License-Identifier: GPL-2.0-or-later
#include "pasid_table.hpp"

namespace viommu::vtd {

static constexpr uint64_t DIR_ENTRY_SIZE = 8;
static constexpr uint64_t PASID_ENTRY_SIZE = 64;
static constexpr unsigned PDTS_BASE = 7;  // 2^(PDTS + 7) directory entries

VtdFaultReason decode_pasid_entry(const Features &f, const std::array<uint64_t, 8> &w,
                                  uint32_t pasid, Context &ctx)
{
    using namespace pasid_entry;
    if ((w[0] & W0_RSVD) || (w[1] & W1_RSVD) || w[3] || w[4] || w[5] || w[6] || w[7])
        return VTD_FR_SM_PASID_ENTRY_RSVD;
    ctx = {};
    ctx.pasid = pasid;
    ctx.did = static_cast<uint16_t>(w[1] & W1_DID);
    ctx.pgtt = static_cast<Pgtt>(field(w[0], 8, 6));
    bool ok = false;
    switch (ctx.pgtt) {
    case Pgtt::FirstStage:
        ok = f.first_stage;
        break;
    case Pgtt::SecondStage:
        ok = f.second_stage;
        break;
    case Pgtt::Nested:
        ok = f.nested;
        break;
    case Pgtt::PassThrough:
        ok = f.pass_through;
        break;
    case Pgtt::Legacy:
        break;
    }
    if (!ok)  // not offered, or a reserved encoding (000b, 101b..111b)
        return VTD_FR_SM_PASID_ENTRY_INV;
    // SRE, in every PGTT: reserved without ECAP.SRS.
    if ((w[2] & W2_SRE) && !f.supervisor)
        return VTD_FR_SM_PASID_ENTRY_RSVD;
    ctx.sre = w[2] & W2_SRE;
    if (ctx.pgtt == Pgtt::PassThrough) {
        ctx.tt = TranslationType::PassThrough;
        return VTD_FR_NONE;  // the stages' fields are ignored
    }
    if (ctx.pgtt == Pgtt::SecondStage || ctx.pgtt == Pgtt::Nested) {
        // SSEE needs execute requests (ECAP.ERS), SSADE second-stage
        // accessed/dirty flags (ECAP.SSADS): neither is offered.
        if (w[0] & (W0_SSEE | W0_SSADE | f.above_haw()))
            return VTD_FR_SM_PASID_ENTRY_RSVD;
        unsigned levels = static_cast<unsigned>(field(w[0], 4, 2)) + 2;
        if (levels < 3 || levels > 5 || !f.levels_supported(levels))
            return VTD_FR_SM_PASID_ENTRY_INV;
        ctx.levels = static_cast<uint8_t>(levels);
        ctx.slptptr = w[0] & entry::ADDR;
    }
    if (ctx.pgtt == Pgtt::FirstStage || ctx.pgtt == Pgtt::Nested) {
        if (w[2] & (W2_RSVD | f.above_haw()))
            return VTD_FR_SM_PASID_ENTRY_RSVD;
        switch (field(w[2], 3, 2)) {
        case 0:
            ctx.fs_levels = 4;
            break;
        case 1:
            if (!f.fs5lp)
                return VTD_FR_SM_PASID_ENTRY_INV;
            ctx.fs_levels = 5;
            break;
        default:
            return VTD_FR_SM_PASID_ENTRY_INV;
        }
        ctx.fsptptr = w[2] & entry::ADDR;
        ctx.wpe = w[2] & W2_WPE;
        ctx.eafe = w[2] & W2_EAFE;
    }
    return VTD_FR_NONE;
}

VtdFaultReason load_pasid_entry(const Host &host, const Features &f, const ScalableContextEntry &ce,
                                uint32_t pasid, Context &ctx, bool &fpd, unsigned &entries_read)
{
    using namespace pasid_entry;
    const uint64_t index = pasid >> PASIDS_PER_TABLE_SHIFT;
    if (index >> (ce.pdts + PDTS_BASE))
        return VTD_FR_SM_PASID_BEYOND_PDTS;
    entries_read++;
    auto de = host.read_u64(ce.pasid_dir + index * DIR_ENTRY_SIZE);
    if (!de)
        return VTD_FR_SM_PASID_DIR_INV;
    // FPD counts whatever P says, in both entries (Linux clears an entry
    // to FPD alone to have the faults of DMA still in flight ignored).
    fpd = fpd || (*de & DIR_FPD);
    if (!(*de & entry::PRESENT))
        return VTD_FR_SM_PASID_DIR_P;
    if (*de & (DIR_RSVD | f.above_haw()))
        return VTD_FR_SM_PASID_DIR_RSVD;

    entries_read++;
    const uint64_t slot = pasid & ((1u << PASIDS_PER_TABLE_SHIFT) - 1);
    auto pe = host.read_qwords<8>((*de & entry::ADDR) + slot * PASID_ENTRY_SIZE);
    if (!pe)
        return VTD_FR_SM_PASID_ENTRY_INV_ACCESS;
    fpd = fpd || ((*pe)[0] & W0_FPD);
    if (!((*pe)[0] & entry::PRESENT))
        return VTD_FR_SM_PASID_ENTRY_P;
    VtdFaultReason r = decode_pasid_entry(f, *pe, pasid, ctx);
    ctx.fpd = fpd;
    return r;
}

}  // namespace viommu::vtd
