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

struct Context {
    TranslationType tt = TranslationType::Untranslated;
    bool fpd = false;
    uint8_t levels = 0;    // second-level paging levels (3..5); 0 for pass-through
    uint64_t slptptr = 0;  // second-level page table pointer
    uint16_t did = 0;
};

struct ContextLookup {
    VtdFaultReason fault = VTD_FR_NONE;
    // Whether the context entry was present with FPD set, which
    // suppresses recording of `fault`.
    bool fpd = false;
    Context ctx;
    unsigned entries_read = 0;
};

// Read root entry `sid >> 8` of the table at `rta` and the context entry it
// points to; validate both.
ContextLookup load_context(const Host &host, const Features &f, uint64_t rta, uint16_t sid);

}  // namespace viommu::vtd
