// SPDX-License-Identifier: GPL-2.0-or-later
// Scalable-mode root and context entries (RTADDR.TTM = 01b): from a
// source-id, and a PASID where the request has one, to the PASID-table
// entry that says how the request is translated.
//
// A scalable-mode root entry has two halves: the lower context-table
// pointer (LP, LCTP) for device functions 0..127 and the upper one (UP,
// UCTP) for 128..255; their context tables hold 128 entries of 256 bits.
// A scalable-mode context entry points to the device's PASID directory
// (PASIDDIRPTR, 2^(PDTS + 7) entries) and names RID_PASID, the PASID that
// requests without PASID are translated with (pasid_table.hpp).
#pragma once

#include <cstdint>
#include <optional>

#include "features.hpp"
#include "host.hpp"
#include "root_context.hpp"
#include "viommu/vtd.h"

namespace viommu::vtd {

struct ScalableContextEntry {
    bool fpd = false;
    bool dte = false;     // device-TLB (ATS) enable
    bool paside = false;  // requests with PASID allowed
    uint64_t pasid_dir = 0;
    unsigned pdts = 0;  // PASID directory size: 2^(pdts + 7) entries
    uint32_t rid_pasid = 0;
};

// Field layout, VT-d "Scalable-Mode Context Entry" (bits 127:0; 255:128
// are reserved) and "Scalable-Mode Root Entry".
namespace sm_entry {
constexpr uint64_t ROOT_RSVD = mask(11, 1);  // in either half
constexpr uint64_t CTX_LO_FPD = bit(1), CTX_LO_DTE = bit(2), CTX_LO_PASIDE = bit(3),
                   CTX_LO_PRE = bit(4), CTX_LO_RSVD = mask(8, 5), CTX_LO_PDTS = mask(11, 9);
constexpr uint64_t CTX_HI_RID_PASID = mask(19, 0), CTX_HI_RSVD = mask(63, 20);  // RID_PRIV: no
}  // namespace sm_entry

// Read and check the root and context entries of `sid` in the
// scalable-mode root table at `rta`.  `fpd` is set once a context entry
// with FPD was read, present or not (it suppresses recording of the fault).
VtdFaultReason read_scalable_context(const Host &host, const Features &f, uint64_t rta,
                                     uint16_t sid, ScalableContextEntry &out, bool &fpd,
                                     unsigned &entries_read);

// The whole lookup: context entry, then the PASID directory and table
// entries of `pasid` (a request with PASID) or of RID_PASID (nullopt).
ContextLookup load_scalable_context(const Host &host, const Features &f, uint64_t rta, uint16_t sid,
                                    std::optional<uint32_t> pasid);

}  // namespace viommu::vtd
