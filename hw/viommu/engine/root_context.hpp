// SPDX-License-Identifier: GPL-2.0-or-later
// Root- and context-entry decoding (legacy mode): from a source-id to the
// context that says how its requests are translated.
#pragma once

#include <cstdint>

#include "features.hpp"
#include "host.hpp"
#include "registers.hpp"
#include "viommu/vtd.h"

namespace viommu::vtd {

// The PASID-granular translation type of a scalable-mode PASID-table
// entry (PGTT); Legacy for a legacy-mode context entry.
enum class Pgtt : uint8_t {
    Legacy = 0,
    FirstStage = 1,
    SecondStage = 2,
    Nested = 3,
    PassThrough = 4,
};

// How requests of one source-id (and, in scalable mode, one PASID) are
// translated.  In scalable mode it is the PASID-table entry's: `did`, the
// second stage in `levels`/`slptptr` (second-stage and nested), `tt`
// PassThrough for PGTT pass-through; `fpd` is that of any entry on the way.
// Packed into 32 bytes: the translate path copies it.
struct Context {
    uint64_t slptptr = 0;  // second-level page table pointer
    uint64_t fsptptr = 0;  // first-stage page table pointer
    uint32_t pasid = 0;    // the PASID-table entry's PASID
    uint16_t did = 0;
    TranslationType tt = TranslationType::Untranslated;
    bool fpd = false;
    uint8_t levels = 0;  // second-level paging levels (3..5); 0 for pass-through
    Pgtt pgtt = Pgtt::Legacy;
    uint8_t fs_levels = 0;  // first stage (first-stage and nested): 4 or 5
    bool sre = false;       // supervisor requests enabled
    bool wpe = false;       // write protect: supervisor writes honour R/W
    bool eafe = false;      // extended-accessed flag (bit 10) set with A

    bool scalable() const { return pgtt != Pgtt::Legacy; }
    bool uses_first_stage() const { return pgtt == Pgtt::FirstStage || pgtt == Pgtt::Nested; }
    // Whether `levels`/`slptptr` translate input addresses (legacy mode,
    // PGTT second-stage): what replay and invalidation classification walk.
    bool second_stage_only() const
    {
        return (pgtt == Pgtt::Legacy || pgtt == Pgtt::SecondStage) &&
               tt != TranslationType::PassThrough;
    }
};
static_assert(sizeof(Context) == 32);

struct ContextLookup {
    VtdFaultReason fault = VTD_FR_NONE;
    // Whether the context entry was present with FPD set, which
    // suppresses recording of `fault`.
    bool fpd = false;
    Context ctx;
    unsigned entries_read = 0;
};

// Read root entry `sid >> 8` of the table at `rta` and the context entry it
// points to; validate both.  `rta` carries RTADDR.TTM as latched: in
// scalable mode this is the context of requests without PASID (the
// PASID-table entry of RID_PASID, scalable_context.hpp).
ContextLookup load_context(const Host &host, const Features &f, uint64_t rta, uint16_t sid);

}  // namespace viommu::vtd
