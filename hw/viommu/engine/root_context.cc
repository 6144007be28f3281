// SPDX-License-Identifier: GPL-2.0-or-later
#include "root_context.hpp"

#include "scalable_context.hpp"

namespace viommu::vtd {

static constexpr uint64_t ENTRY_SIZE = 16;

ContextLookup load_context(const Host &host, const Features &f, uint64_t rta, uint16_t sid)
{
    if (rta & rtaddr::TTM_SCALABLE)
        return load_scalable_context(host, f, rta & entry::ADDR, sid, std::nullopt);
    ContextLookup r;
    const uint8_t bus = sid >> 8, devfn = sid & 0xff;

    r.entries_read++;
    auto root = host.read_u128((rta & entry::ADDR) + bus * ENTRY_SIZE);
    if (!root) {
        r.fault = VTD_FR_ROOT_TABLE_INV;
        return r;
    }
    auto [root_lo, root_hi] = *root;
    if (!(root_lo & entry::PRESENT)) {
        r.fault = VTD_FR_ROOT_ENTRY_P;
        return r;
    }
    // The upper half is reserved in legacy mode.
    if ((root_lo & (entry::ROOT_LO_RSVD | f.above_haw())) || root_hi) {
        r.fault = VTD_FR_ROOT_ENTRY_RSVD;
        return r;
    }

    r.entries_read++;
    auto ce = host.read_u128((root_lo & entry::ADDR) + devfn * ENTRY_SIZE);
    if (!ce) {
        r.fault = VTD_FR_CONTEXT_TABLE_INV;
        return r;
    }
    auto [lo, hi] = *ce;
    // FPD is evaluated whatever P says: it may suppress 0x2 too.
    r.fpd = lo & entry::CTX_LO_FPD;
    if (!(lo & entry::PRESENT)) {
        r.fault = VTD_FR_CONTEXT_ENTRY_P;
        return r;
    }
    if ((lo & (entry::CTX_LO_RSVD | f.above_haw())) || (hi & entry::CTX_HI_RSVD)) {
        r.fault = VTD_FR_CONTEXT_ENTRY_RSVD;
        return r;
    }

    Context &c = r.ctx;
    c.fpd = r.fpd;
    c.tt = static_cast<TranslationType>(field(lo, 3, 2));
    c.did = field(hi, 23, entry::CTX_HI_DID);
    switch (c.tt) {
    case TranslationType::Untranslated:
        break;
    case TranslationType::DeviceTlb:
        if (!f.device_iotlb)
            r.fault = VTD_FR_CONTEXT_ENTRY_INV;
        break;
    case TranslationType::PassThrough:
        // SLPTPTR is ignored; AW still bounds the addresses that pass.
        if (!f.pass_through)
            r.fault = VTD_FR_CONTEXT_ENTRY_INV;
        break;
    case TranslationType::Reserved:
        r.fault = VTD_FR_CONTEXT_ENTRY_INV;
        break;
    }
    if (r.fault != VTD_FR_NONE)
        return r;
    unsigned levels = (hi & entry::CTX_HI_AW) + 2;
    if (levels < 3 || levels > 5 || !f.levels_supported(levels)) {
        r.fault = VTD_FR_CONTEXT_ENTRY_INV;
        return r;
    }
    c.levels = levels;
    if (c.tt != TranslationType::PassThrough)
        c.slptptr = lo & entry::ADDR;
    return r;
}

}  // namespace viommu::vtd
