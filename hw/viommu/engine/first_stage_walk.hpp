// SPDX-License-Identifier: GPL-2.0-or-later
// First-stage page-table walks (PGTT first-stage and nested): tables in
// the x86-64 paging format, 4-level (48-bit canonical input) or 5-level
// (57-bit), 4 KiB pages, 2 MiB pages and 1 GiB pages (CAP.FS1GP).
//
// Entries: P (0), R/W (1), U/S (2), A (5), D (6, leaves), PS (7), the
// extended-accessed flag EA (10, with EAFE), the address (51:12) and XD
// (63, execute-disable: no execute requests are offered, so it never
// denies anything).  Permissions: a user request (every request without
// PASID, and a request with PASID without the privileged bit) needs U/S
// in every entry; a write needs R/W in every entry, except that a
// supervisor request with WPE clear writes anyway (CR0.WP clear).
//
// The walk sets A (and EA with EAFE) in every entry it uses and D in the
// leaf of a permitted write, as a CPU does: with an atomic
// compare-and-swap on the entry in guest memory (VtdHostOps.mem_cmpxchg64),
// so a guest CPU editing the entry at the same time loses nothing.  An
// entry that changes under the swap is evaluated again, at most
// MAX_AD_RETRIES times; then the walk faults (VTD_FR_SM_FS_ENTRY_INV).
//
// Nested translation: FSPTPTR and every table address in a first-stage
// entry are guest-physical addresses that the second stage translates
// before the entry is read (and must let it be written for an A/D
// update), and so is the output address.
//
// The walk reads at most one entry per level, so a table that points to
// itself (a loop) ends at level 1 like any other: it terminates.
#pragma once

#include <cstdint>

#include "features.hpp"
#include "host.hpp"
#include "iotlb.hpp"
#include "page_walk.hpp"
#include "root_context.hpp"
#include "viommu/vtd.h"

namespace viommu::vtd {

namespace fs_entry {
constexpr uint64_t P = bit(0), RW = bit(1), US = bit(2), A = bit(5), D = bit(6), PS = bit(7),
                   EA = bit(10), XD = bit(63);
constexpr uint64_t ADDR = mask(51, 12);
}  // namespace fs_entry

struct FsWalkResult {
    VtdFaultReason fault = VTD_FR_NONE;
    // The translation of the input page, both stages combined (nested):
    // level min(first-stage leaf, second-stage leaf).  R, and W only when
    // writes are permitted and the leaf's D flag is set (a write to a clean
    // page walks again, to set it).
    Leaf leaf;
    unsigned levels_read = 0;   // first-stage entries read
    unsigned nested_walks = 0;  // second-stage walks (nested)
    unsigned accessed_set = 0;  // entries whose A flag the walk set
    unsigned dirty_set = 0;     // leaves whose D flag the walk set
    unsigned ad_retries = 0;    // swaps that found the entry changed
};

constexpr unsigned MAX_AD_RETRIES = 16;

// Translate `addr` for a request of `access` (VTD_PERM_NONE: what the
// tables allow, setting no flag) with `supervisor` privilege through the
// first stage of `ctx` (and its second stage when nested).
FsWalkResult walk_first_stage(const Host &host, const Features &f, const Context &ctx,
                              uint64_t addr, unsigned access, bool supervisor);

// Replay (MAP notifiers): visit every first-stage leaf intersecting
// [start, end) that a request without PASID (a user request) can use, with
// the permissions such a request gets: R, and W when R/W is set at every
// level and the leaf's D flag is set (a write to a clean page would walk
// again to set D, as the IOTLB's leaves say).  An entry without U/S at any
// level serves no user request: the range below it is skipped.  Upper-half
// (sign-extended) addresses are those of top-level entries 256-511.
//
// Nested: table addresses are translated by the second stage (read
// permission needed; write permission too where the entry's A flag, or EA
// with EAFE, is clear, as a translation would set it), and each first-stage
// leaf's output range is walked in the second stage: every piece is
// reported at the IOVA it serves, of the smaller of the two page sizes,
// with the AND of both stages' permissions.
//
// Reads only: no A/D flag is set.  Not-present entries, entries with
// reserved bits, and tables the host cannot read (beyond guest memory) or
// the second stage does not map are skipped, like the addresses they would
// translate, which fault.  At most `entry_budget` entries are read, both
// stages together (tables may share subtrees or point to themselves).
struct FsRangeResult {
    // The top table unusable (not readable: FSPTPTR beyond guest memory;
    // nested: its second-stage translation faults): nothing was visited.
    VtdFaultReason fault = VTD_FR_NONE;
    bool complete = true;  // false: the entry budget ran out
};
FsRangeResult walk_first_stage_range(const Host &host, const Features &f, const Context &ctx,
                                     uint64_t start, uint64_t end, uint64_t entry_budget,
                                     const LeafVisitor &visit);

}  // namespace viommu::vtd
