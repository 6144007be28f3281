// SPDX-License-Identifier: GPL-2.0-or-later
#include "first_stage_walk.hpp"

#include <algorithm>
#include <optional>

#include "page_walk.hpp"
#include "registers.hpp"

namespace viommu::vtd {

namespace {

unsigned index_at(uint64_t addr, unsigned level)
{
    return (addr >> level_shift(level)) & ((1u << LEVEL_STRIDE) - 1);
}

bool is_leaf(uint64_t pte, unsigned level)
{
    return level == 1 || ((pte & fs_entry::PS) && level <= 3);
}

// Reserved bits of a present entry at `level`: address bits above the
// host address width, PS where the level cannot map a page (PML5E, PML4E;
// a PDPTE without CAP.FS1GP), and the low address bits of a large page
// (bit 12 of a large page is PAT, ignored).
uint64_t reserved_bits(const Features &f, uint64_t pte, unsigned level)
{
    uint64_t rsvd = f.above_haw() & mask(51, 0);
    if (level >= 4 || (level == 3 && !f.fs1gp))
        rsvd |= fs_entry::PS;
    else if (level > 1 && (pte & fs_entry::PS))
        rsvd |= mask(level_shift(level) - 1, PAGE_SHIFT + 1);
    return pte & rsvd;
}

struct Walker {
    const Host &host;
    const Features &f;
    const Context &ctx;
    FsWalkResult r;

    // Nested: the second-stage translation of the first-stage table
    // address `gpa`, for reading it (and writing it when `write`).
    // Returns the host address, or sets the fault.
    std::optional<uint64_t> table_address(uint64_t gpa, bool top, bool write, uint8_t *perm)
    {
        if (ctx.pgtt != Pgtt::Nested) {
            *perm = VTD_PERM_RW;
            return gpa;
        }
        r.nested_walks++;
        WalkResult w = walk_address(host, f, ctx, gpa, VTD_PERM_READ);
        if (w.fault == VTD_FR_NONE && !(w.leaf.perm & VTD_PERM_READ)) {
            w.fault = VTD_FR_READ;
            w.not_present = false;
        }
        if (w.fault != VTD_FR_NONE) {
            switch (w.fault) {
            case VTD_FR_ADDR_BEYOND_MGAW:
                r.fault = VTD_FR_SM_NESTED_FS_BEYOND_AW;
                break;
            case VTD_FR_READ:
            case VTD_FR_WRITE:  // not present: no read permission either
                r.fault = top ? VTD_FR_SM_NESTED_FS_TOP_READ : VTD_FR_SM_NESTED_FS_READ;
                break;
            default:
                r.fault = sm_second_stage_fault(w, ctx.levels);
                break;
            }
            return std::nullopt;
        }
        if (write && !(w.leaf.perm & VTD_PERM_WRITE)) {
            r.fault = VTD_FR_SM_NESTED_FS_WRITE;
            return std::nullopt;
        }
        *perm = w.leaf.perm;
        return w.leaf.phys + (gpa & ((uint64_t{1} << level_shift(w.leaf.level)) - 1));
    }

    void walk(uint64_t addr, unsigned access, bool supervisor)
    {
        const unsigned levels = ctx.fs_levels;
        // Canonical: bits 63 down to the top translated bit all equal.
        const int64_t upper = static_cast<int64_t>(addr) >> (level_aw(levels) - 1);
        if (upper != 0 && upper != -1) {
            r.fault = VTD_FR_SM_FS_NON_CANONICAL;
            return;
        }
        const bool write = access & VTD_PERM_WRITE;
        uint64_t table = ctx.fsptptr;
        bool user_ok = true, write_ok = true;
        for (unsigned level = levels; level >= 1; level--) {
            const bool top = level == levels;
            const uint64_t gpa = table + index_at(addr, level) * 8;
            uint8_t table_perm = 0;
            auto hpa = table_address(gpa, top, false, &table_perm);
            if (!hpa)
                return;
            r.levels_read++;
            auto pte = host.read_u64(*hpa);
            const VtdFaultReason access_error = top ? VTD_FR_SM_FS_TOP_INV : VTD_FR_SM_FS_ENTRY_INV;
            if (!pte) {
                r.fault = access_error;
                return;
            }
            bool leaf = false, writable = false;
            for (unsigned tries = 0;; tries++) {
                if (!(*pte & fs_entry::P)) {
                    r.fault = VTD_FR_SM_FS_ENTRY_P;
                    return;
                }
                if (reserved_bits(f, *pte, level)) {
                    r.fault = VTD_FR_SM_FS_ENTRY_RSVD;
                    return;
                }
                leaf = is_leaf(*pte, level);
                writable = (write_ok && (*pte & fs_entry::RW)) || (supervisor && !ctx.wpe);
                if (leaf) {
                    // Checked before the leaf's flags change: a denied
                    // access sets neither A nor D there.
                    if (!supervisor && !(user_ok && (*pte & fs_entry::US))) {
                        r.fault = VTD_FR_SM_FS_USER;
                        return;
                    }
                    if (write && !writable) {
                        r.fault = VTD_FR_SM_WRITE;
                        return;
                    }
                }
                uint64_t want = *pte;
                if (access != VTD_PERM_NONE) {
                    want |= fs_entry::A | (ctx.eafe ? fs_entry::EA : 0);
                    if (leaf && write)
                        want |= fs_entry::D;
                }
                if (want == *pte)
                    break;
                if (ctx.pgtt == Pgtt::Nested && !(table_perm & VTD_PERM_WRITE)) {
                    r.fault = VTD_FR_SM_NESTED_FS_WRITE;
                    return;
                }
                auto found = host.cmpxchg_u64(*hpa, *pte, want);
                if (!found) {
                    r.fault = access_error;
                    return;
                }
                if (*found == *pte) {
                    r.accessed_set += !(*pte & fs_entry::A);
                    r.dirty_set += (want & ~*pte & fs_entry::D) != 0;
                    *pte = want;
                    break;
                }
                r.ad_retries++;
                if (tries + 1 >= MAX_AD_RETRIES) {
                    r.fault = access_error;
                    return;
                }
                *pte = *found;  // the guest changed it: evaluate it again
            }
            user_ok = user_ok && (*pte & fs_entry::US);
            write_ok = write_ok && (*pte & fs_entry::RW);
            const uint64_t next = *pte & fs_entry::ADDR & ~f.above_haw();
            if (!leaf) {
                table = next;
                continue;
            }
            const uint64_t page_mask = (uint64_t{1} << level_shift(level)) - 1;
            uint8_t perm = VTD_PERM_READ;
            if (writable && (*pte & fs_entry::D))
                perm |= VTD_PERM_WRITE;
            r.leaf = {next & ~page_mask, static_cast<uint8_t>(level), perm};
            if (ctx.pgtt == Pgtt::Nested)
                nested_output(addr, access, page_mask);
            return;
        }
        r.fault = VTD_FR_SM_FS_ENTRY_INV;  // not reached: level 1 is always a leaf
    }

    // Nested: the first stage's output is a guest-physical address; the
    // second stage translates it with the request's access.
    void nested_output(uint64_t addr, unsigned access, uint64_t fs_mask)
    {
        const uint64_t gpa = r.leaf.phys | (addr & fs_mask);
        r.nested_walks++;
        WalkResult w = walk_address(host, f, ctx, gpa, access);
        if (w.fault != VTD_FR_NONE) {
            r.fault = sm_second_stage_fault(w, ctx.levels);
            return;
        }
        if (access & ~w.leaf.perm & VTD_PERM_RW) {
            r.fault = sm_access_fault(check_access(w.leaf.perm, access));
            return;
        }
        const unsigned level = std::min<unsigned>(r.leaf.level, w.leaf.level);
        const uint64_t ss_mask = (uint64_t{1} << level_shift(w.leaf.level)) - 1;
        const uint64_t mask_c = (uint64_t{1} << level_shift(level)) - 1;
        r.leaf = {w.leaf.phys + (gpa & ss_mask & ~mask_c), static_cast<uint8_t>(level),
                  static_cast<uint8_t>(r.leaf.perm & w.leaf.perm)};
    }
};

// Replay's range walk (walk_first_stage_range).
struct RangeWalker {
    const Host &host;
    const Features &f;
    const Context &ctx;
    uint64_t start, last;  // inclusive bounds
    uint64_t budget;
    const LeafVisitor &visit;
    FsRangeResult r;

    bool spend(uint64_t entries)
    {
        if (budget < entries) {
            budget = 0;
            r.complete = false;
            return false;
        }
        budget -= entries;
        return true;
    }

    // The host address of the first-stage table at `gpa` and the
    // permissions the second stage grants on it (nested; one translation
    // serves the whole 4 KiB table), or nullopt with `why`.
    std::optional<uint64_t> table_address(uint64_t gpa, uint8_t *perm, VtdFaultReason *why)
    {
        *perm = VTD_PERM_RW;
        if (ctx.pgtt != Pgtt::Nested)
            return gpa;
        WalkResult w = walk_address(host, f, ctx, gpa, VTD_PERM_READ);
        if (!spend(w.levels_read))
            return std::nullopt;
        if (w.fault == VTD_FR_NONE && (w.leaf.perm & VTD_PERM_READ)) {
            *perm = w.leaf.perm;
            return w.leaf.phys + (gpa & ((uint64_t{1} << level_shift(w.leaf.level)) - 1));
        }
        switch (w.fault) {
        case VTD_FR_ADDR_BEYOND_MGAW:
            *why = VTD_FR_SM_NESTED_FS_BEYOND_AW;
            break;
        case VTD_FR_NONE:  // mapped without read permission
        case VTD_FR_READ:
        case VTD_FR_WRITE:
            *why = VTD_FR_SM_NESTED_FS_TOP_READ;
            break;
        default:
            *why = sm_second_stage_fault(w, ctx.levels);
            break;
        }
        return std::nullopt;
    }

    // Input address of entry `index` of a table at `level` covering from
    // `table_iova`; top-level entries of the upper half are sign-extended.
    uint64_t entry_iova(uint64_t table_iova, unsigned index, unsigned level) const
    {
        uint64_t iova = table_iova + (uint64_t{index} << level_shift(level));
        if (level == ctx.fs_levels) {
            const unsigned unused = 64 - level_aw(level);
            iova = static_cast<uint64_t>(static_cast<int64_t>(iova << unused) >> unused);
        }
        return iova;
    }

    // Returns false once the budget ran out.
    bool table(uint64_t gpa, uint64_t table_iova, unsigned level, bool write_ok)
    {
        const bool top = level == ctx.fs_levels;
        uint8_t table_perm = 0;
        VtdFaultReason why = VTD_FR_NONE;
        auto hpa = table_address(gpa, &table_perm, &why);
        if (!hpa) {
            if (top && r.complete)
                r.fault = why;
            return r.complete;
        }
        const uint64_t span = uint64_t{1} << level_shift(level);
        for (unsigned i = 0; i < (1u << LEVEL_STRIDE); i++) {
            const uint64_t iova = entry_iova(table_iova, i, level);
            if (iova > last)
                break;
            if (iova + (span - 1) < start)
                continue;
            if (!spend(1))
                return false;
            auto pte = host.read_u64(*hpa + i * 8);
            if (!pte) {
                if (top)
                    r.fault = VTD_FR_SM_FS_TOP_INV;
                return true;  // the rest of this table is unreadable too
            }
            if (!(*pte & fs_entry::P) || reserved_bits(f, *pte, level) || !(*pte & fs_entry::US))
                continue;
            // Nested: a translation sets A (and EA) through the second
            // stage, which must let it write the table.
            const bool needs_update = !(*pte & fs_entry::A) || (ctx.eafe && !(*pte & fs_entry::EA));
            if (needs_update && !(table_perm & VTD_PERM_WRITE))
                continue;
            const bool writable = write_ok && (*pte & fs_entry::RW);
            const uint64_t next = *pte & fs_entry::ADDR & ~f.above_haw();
            if (!is_leaf(*pte, level)) {
                if (!table(next, iova, level - 1, writable))
                    return false;
                continue;
            }
            uint8_t perm = VTD_PERM_READ;
            if (writable && (*pte & fs_entry::D))
                perm |= VTD_PERM_WRITE;
            const Leaf leaf{next & ~(span - 1), static_cast<uint8_t>(level), perm};
            if (ctx.pgtt != Pgtt::Nested)
                visit(iova, leaf);
            else if (!nested_leaf(iova, leaf))
                return false;
        }
        return true;
    }

    // Nested: the second stage's leaves under a first-stage leaf's output.
    bool nested_leaf(uint64_t iova, const Leaf &fs)
    {
        const uint64_t gpa = fs.phys;
        const uint64_t span = uint64_t{1} << level_shift(fs.level);
        const bool complete = walk_range_shared(
            host, f, ctx, gpa, gpa + span, budget, [&](uint64_t ss_iova, const Leaf &ss) {
                const uint64_t from = std::max(ss_iova, gpa);
                const uint8_t perm = fs.perm & ss.perm;
                if (perm == VTD_PERM_NONE)
                    return;
                visit(iova + (from - gpa),
                      {ss.phys + (from - ss_iova), std::min(fs.level, ss.level), perm});
            });
        if (!complete)
            r.complete = false;
        return complete;
    }
};

}  // namespace

FsRangeResult walk_first_stage_range(const Host &host, const Features &f, const Context &ctx,
                                     uint64_t start, uint64_t end, uint64_t entry_budget,
                                     const LeafVisitor &visit)
{
    RangeWalker w{host, f, ctx, start, end - 1, entry_budget, visit, {}};
    if (start < end)
        w.table(ctx.fsptptr, 0, ctx.fs_levels, true);
    return w.r;
}

FsWalkResult walk_first_stage(const Host &host, const Features &f, const Context &ctx,
                              uint64_t addr, unsigned access, bool supervisor)
{
    Walker w{host, f, ctx, {}};
    w.walk(addr, access & VTD_PERM_RW, supervisor);
    return w.r;
}

}  // namespace viommu::vtd
