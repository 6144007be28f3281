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

}  // namespace

FsWalkResult walk_first_stage(const Host &host, const Features &f, const Context &ctx,
                              uint64_t addr, unsigned access, bool supervisor)
{
    Walker w{host, f, ctx, {}};
    w.walk(addr, access & VTD_PERM_RW, supervisor);
    return w.r;
}

}  // namespace viommu::vtd
