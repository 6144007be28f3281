// SPDX-License-Identifier: GPL-2.0-or-later
// The PASID directory and the scalable-mode PASID table: from a PASID to
// its 512-bit PASID-table entry, which selects the translation (PGTT:
// first-stage, second-stage, nested or pass-through), the domain-id and
// the page tables.
//
// A PASID directory entry (64 bits) maps 64 PASIDs: PASID >> 6 indexes
// the directory, PASID & 63 the PASID table it points to (SMPTBLPTR).
#pragma once

#include <cstdint>

#include "features.hpp"
#include "host.hpp"
#include "registers.hpp"
#include "root_context.hpp"
#include "scalable_context.hpp"
#include "viommu/vtd.h"

namespace viommu::vtd {

// Field layout, VT-d "Scalable-Mode PASID Directory Entry" and
// "Scalable-Mode PASID Table Entry" (words 0..7 of 64 bits).
namespace pasid_entry {
constexpr unsigned PASIDS_PER_TABLE_SHIFT = 6;
constexpr uint64_t DIR_FPD = bit(1), DIR_RSVD = mask(11, 2);
// Word 0: P, FPD, AW, SSEE, PGTT, SSADE, SSPTPTR.
constexpr uint64_t W0_FPD = bit(1), W0_AW = mask(4, 2), W0_SSEE = bit(5), W0_PGTT = mask(8, 6),
                   W0_SSADE = bit(9), W0_RSVD = mask(11, 10);
// Word 1: DID; PWSNP (bit 23) is accepted (ECAP.SMPWC), and so is PGSNP
// (bit 24), although without ECAP.SC the specification reserves it:
// Linux 5.13 to 5.18 set it in the entries of domains managed outside the
// kernel whatever ECAP.SC says (commit 6c00612d0cba), and every DMA here
// snoops anyway.  The memory-type fields are reserved (no ECAP.MTS).
constexpr uint64_t W1_DID = mask(15, 0), W1_PGSNP = bit(24),
                   W1_RSVD = (mask(22, 16) | mask(63, 24)) & ~W1_PGSNP;
// Word 2: SRE, FSPM, WPE, EAFE, FSPTPTR; ERE (bit 1) is reserved (no
// ECAP.ERS).  Bit 5 (bit 133 of the entry) is accepted and ignored: the
// VT-d 3.0 revision defined it as NXE (No-Execute Enable, XD honoured in
// first-stage entries), and Linux (6.1) sets it in every first-stage
// entry it writes; XD is honoured either way.
constexpr uint64_t W2_SRE = bit(0), W2_FSPM = mask(3, 2), W2_WPE = bit(4), W2_NXE = bit(5),
                   W2_EAFE = bit(7), W2_RSVD = bit(1) | bit(6) | mask(11, 8);
}  // namespace pasid_entry

// Read the PASID directory entry and PASID-table entry of `pasid` under the
// context entry `ce` and decode the entry into `ctx`.  `fpd` is set once an
// entry with FPD was read, present or not.
VtdFaultReason load_pasid_entry(const Host &host, const Features &f, const ScalableContextEntry &ce,
                                uint32_t pasid, Context &ctx, bool &fpd, unsigned &entries_read);

// Decode a PASID-table entry (words 0..7, present) read for `pasid`.
VtdFaultReason decode_pasid_entry(const Features &f, const std::array<uint64_t, 8> &w,
                                  uint32_t pasid, Context &ctx);

}  // namespace viommu::vtd
