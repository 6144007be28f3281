// SPDX-License-Identifier: GPL-2.0-or-later
// Second-level page-table walks (legacy mode): 3-, 4- or 5-level tables of
// 512 eight-byte entries, 2 MiB and 1 GiB superpages.
#pragma once

#include <cstdint>
#include <functional>

#include "features.hpp"
#include "host.hpp"
#include "iotlb.hpp"
#include "root_context.hpp"

namespace viommu::vtd {

struct WalkResult {
    VtdFaultReason fault = VTD_FR_NONE;
    Leaf leaf;  // valid when fault == VTD_FR_NONE
    unsigned levels_read = 0;
    // With a fault: whether an entry was not present (R and W clear), and
    // the level of the entry that faulted.
    bool not_present = false;
    unsigned fault_level = 0;
    // The level-1 table the walk reached (for the paging-structure cache)
    // and the AND of the permissions above it.
    bool has_l1 = false;
    uint8_t l1_perm = 0;
    uint64_t l1_table = 0;
};

// Translate one address.  A not-present entry (R and W clear) at any level
// faults as a write or read according to `access`; permissions are the AND
// of every level's R/W, and checking them against the request is the
// caller's job (the same check applies to IOTLB hits).
WalkResult walk_address(const Host &host, const Features &f, const Context &ctx, uint64_t addr,
                        unsigned access);

// Guest-physical address of the entry for `addr` in the level-`level`
// table at `table`.
uint64_t entry_gpa(uint64_t table, uint64_t addr, unsigned level);

// The last step of walk_address(), from a cached level-1 table whose
// upper levels granted `perm`.
WalkResult walk_level1(const Host &host, const Features &f, uint64_t table, uint8_t perm,
                       uint64_t addr, unsigned access);

// Visit every present, well-formed leaf intersecting [start, end).
// Malformed entries and unreadable tables are skipped.  At most
// `entry_budget` entries are read (a hostile guest can make tables share
// subtrees or form cycles); returns false if the budget ran out.
using LeafVisitor = std::function<void(uint64_t iova, const Leaf &leaf)>;
bool walk_range(const Host &host, const Features &f, const Context &ctx, uint64_t start,
                uint64_t end, uint64_t entry_budget, const LeafVisitor &visit);
// The same with the budget shared with the caller: `budget` is what is left
// afterwards (nested replay walks the second stage under each first-stage
// leaf from one budget).
bool walk_range_shared(const Host &host, const Features &f, const Context &ctx, uint64_t start,
                       uint64_t end, uint64_t &budget, const LeafVisitor &visit);

// The legacy-mode reason for a walk's fault in a table of `levels`
// levels: a failed read of the table SLPTPTR names is the context entry's
// (0x3, "invalid programming of a context-entry"); 0x7 is for tables an
// entry's ADDR names.
inline VtdFaultReason legacy_walk_fault(const WalkResult &w, unsigned levels)
{
    if (w.fault == VTD_FR_PAGING_ENTRY_INV && w.fault_level == levels)
        return VTD_FR_CONTEXT_ENTRY_INV;
    return w.fault;
}

// The scalable-mode reason for a second-stage walk's fault (PGTT
// second-stage, and nested second-stage translation of the output) in a
// table of `levels` levels.
inline VtdFaultReason sm_second_stage_fault(const WalkResult &w, unsigned levels)
{
    if (w.not_present)
        return VTD_FR_SM_SS_ENTRY_P;
    switch (w.fault) {
    case VTD_FR_ADDR_BEYOND_MGAW:
        return VTD_FR_SM_ADDR_BEYOND_AW;
    case VTD_FR_PAGING_ENTRY_INV:
        return w.fault_level == levels ? VTD_FR_SM_SS_TOP_INV : VTD_FR_SM_SS_ENTRY_INV;
    case VTD_FR_PAGING_ENTRY_RSVD:
        return VTD_FR_SM_SS_ENTRY_RSVD;
    default:
        return w.fault;
    }
}

// The scalable-mode form of a permission fault from check_access().
inline VtdFaultReason sm_access_fault(VtdFaultReason r)
{
    return r == VTD_FR_WRITE ? VTD_FR_SM_WRITE : r == VTD_FR_READ ? VTD_FR_SM_READ : r;
}

// Permission fault for a request of `access` against `perm`, or VTD_FR_NONE.
// Inline: every translation checks it.
inline VtdFaultReason check_access(uint8_t perm, unsigned access)
{
    if ((access & VTD_PERM_WRITE) && !(perm & VTD_PERM_WRITE))
        return VTD_FR_WRITE;
    if ((access & VTD_PERM_READ) && !(perm & VTD_PERM_READ))
        return VTD_FR_READ;
    if (access == VTD_PERM_NONE && perm == VTD_PERM_NONE)
        return VTD_FR_READ;
    return VTD_FR_NONE;
}

}  // namespace viommu::vtd
