// SPDX-License-Identifier: GPL-2.0-or-later
#include "scalable_context.hpp"

#include "pasid_table.hpp"
#include "registers.hpp"

namespace viommu::vtd {

static constexpr uint64_t ROOT_ENTRY_SIZE = 16;
static constexpr uint64_t CONTEXT_ENTRY_SIZE = 32;
static constexpr unsigned UPPER_DEVFN = 128;

VtdFaultReason read_scalable_context(const Host &host, const Features &f, uint64_t rta,
                                     uint16_t sid, ScalableContextEntry &out, bool &fpd,
                                     unsigned &entries_read)
{
    const unsigned bus = sid >> 8, devfn = sid & 0xff;
    entries_read++;
    auto root = host.read_u128(rta + bus * ROOT_ENTRY_SIZE);
    if (!root)
        return VTD_FR_SM_ROOT_ENTRY_INV;
    // Only the half this function uses counts: the other may be absent.
    const uint64_t half = devfn < UPPER_DEVFN ? (*root)[0] : (*root)[1];
    if (!(half & entry::PRESENT))
        return VTD_FR_SM_ROOT_ENTRY_P;
    if (half & (sm_entry::ROOT_RSVD | f.above_haw()))
        return VTD_FR_SM_ROOT_ENTRY_RSVD;

    entries_read++;
    auto ce =
        host.read_qwords<4>((half & entry::ADDR) + (devfn % UPPER_DEVFN) * CONTEXT_ENTRY_SIZE);
    if (!ce)
        return VTD_FR_SM_CONTEXT_ENTRY_INV_ACCESS;
    const uint64_t lo = (*ce)[0], hi = (*ce)[1];
    // FPD is evaluated whatever P says: it may suppress 0x41 too.
    fpd = lo & sm_entry::CTX_LO_FPD;
    if (!(lo & entry::PRESENT))
        return VTD_FR_SM_CONTEXT_ENTRY_P;
    // PRE needs page requests (ECAP.PRS), DTE device-TLBs (ECAP.DT),
    // PASIDE requests with PASID (ECAP.PASID): reserved without them.
    uint64_t lo_rsvd = sm_entry::CTX_LO_RSVD | sm_entry::CTX_LO_PRE | f.above_haw();
    if (!f.device_iotlb)
        lo_rsvd |= sm_entry::CTX_LO_DTE;
    if (!f.pasid_bits)
        lo_rsvd |= sm_entry::CTX_LO_PASIDE;
    if ((lo & lo_rsvd) || (hi & sm_entry::CTX_HI_RSVD) || (*ce)[2] || (*ce)[3])
        return VTD_FR_SM_CONTEXT_ENTRY_RSVD;
    out.fpd = fpd;
    out.dte = lo & sm_entry::CTX_LO_DTE;
    out.paside = lo & sm_entry::CTX_LO_PASIDE;
    out.pdts = static_cast<unsigned>(field(lo, 11, 9));
    out.pasid_dir = lo & entry::ADDR;
    out.rid_pasid = static_cast<uint32_t>(hi & sm_entry::CTX_HI_RID_PASID);
    // Without ECAP.RPS requests without PASID use PASID 0; with it,
    // RID_PASID must be a PASID the unit supports.
    if (f.pasid_bits ? out.rid_pasid >> f.pasid_bits : out.rid_pasid)
        return VTD_FR_SM_RID_PASID_INV;
    return VTD_FR_NONE;
}

ContextLookup load_scalable_context(const Host &host, const Features &f, uint64_t rta, uint16_t sid,
                                    std::optional<uint32_t> pasid)
{
    ContextLookup r;
    ScalableContextEntry ce;
    r.fault = read_scalable_context(host, f, rta, sid, ce, r.fpd, r.entries_read);
    if (r.fault != VTD_FR_NONE)
        return r;
    if (pasid && !ce.paside) {
        r.fault = VTD_FR_SM_CONTEXT_PASIDE;
        return r;
    }
    r.fault =
        load_pasid_entry(host, f, ce, pasid.value_or(ce.rid_pasid), r.ctx, r.fpd, r.entries_read);
    return r;
}

}  // namespace viommu::vtd
