// SPDX-License-Identifier: GPL-2.0-or-later
#include "page_walk.hpp"

#include "registers.hpp"

namespace viommu::vtd {

static constexpr uint64_t ENTRY_SIZE = 8;

static VtdFaultReason not_present(unsigned access)
{
    return (access & VTD_PERM_WRITE) ? VTD_FR_WRITE : VTD_FR_READ;
}

static bool is_leaf(const Features &f, uint64_t pte, unsigned level)
{
    return level == 1 || ((pte & entry::SL_PS) && (level == 2 || (level == 3 && f.superpage_1g)));
}

// Reserved bits of a present entry at `level`.  SNP belongs to leaves and
// is reserved without ECAP.SC, except on a unit that offers scalable mode:
// Linux 5.13 to 5.18 set it in every leaf they map for a coherent device
// once scalable mode is on, whatever ECAP.SC says (commit 6c00612d0cba);
// intel-iommu accepts it there too.  Every DMA here snoops, so a leaf's
// SNP changes nothing.
static uint64_t reserved_bits(const Features &f, uint64_t pte, unsigned level)
{
    bool leaf = is_leaf(f, pte, level);
    uint64_t rsvd = (leaf && (f.snoop_control || f.scalable_mode) ? 0 : entry::SL_SNP) |
                    (f.above_haw() & ~entry::SL_IGNORED);
    if (leaf && f.device_iotlb)
        rsvd &= ~entry::SL_TM;
    if (!leaf && level > 1)
        rsvd |= entry::SL_PS;  // PS where this level cannot map a page
    if (leaf && level > 1)
        rsvd |= mask(level_shift(level) - 1, PAGE_SHIFT);
    return pte & rsvd;
}

static unsigned index_at(uint64_t addr, unsigned level)
{
    return (addr >> level_shift(level)) & ((1u << LEVEL_STRIDE) - 1);
}

uint64_t entry_gpa(uint64_t table, uint64_t addr, unsigned level)
{
    return table + index_at(addr, level) * ENTRY_SIZE;
}

// The table or page an entry points to: bits HAW-1:12; the ignored bits
// above are not address.
static uint64_t entry_address(const Features &f, uint64_t pte)
{
    return pte & entry::ADDR & ~f.above_haw();
}

// Walk from `table` at `level` down to the leaf, `perm` being the AND of
// the levels above.  Records the level-1 table when the walk reaches it.
static WalkResult walk_from(const Host &host, const Features &f, uint64_t table, unsigned top,
                            uint8_t perm, uint64_t addr, unsigned access)
{
    WalkResult r;
    for (unsigned level = top; level >= 1; level--) {
        if (level == 1) {
            r.l1_table = table;
            r.l1_perm = perm;
            r.has_l1 = true;
        }
        r.levels_read++;
        r.fault_level = level;
        auto pte = host.read_u64(entry_gpa(table, addr, level));
        if (!pte) {
            r.fault = VTD_FR_PAGING_ENTRY_INV;
            return r;
        }
        uint8_t entry_perm = *pte & (entry::SL_R | entry::SL_W);
        if (!entry_perm) {
            r.fault = not_present(access);
            r.not_present = true;
            return r;
        }
        if (reserved_bits(f, *pte, level)) {
            r.fault = VTD_FR_PAGING_ENTRY_RSVD;
            return r;
        }
        perm &= entry_perm;
        if (is_leaf(f, *pte, level)) {
            r.leaf = {entry_address(f, *pte), static_cast<uint8_t>(level), perm};
            return r;
        }
        table = entry_address(f, *pte);
    }
    r.fault = VTD_FR_PAGING_ENTRY_INV;  // not reached: level 1 is always a leaf
    return r;
}

WalkResult walk_address(const Host &host, const Features &f, const Context &ctx, uint64_t addr,
                        unsigned access)
{
    if (addr >> level_aw(ctx.levels)) {
        WalkResult r;
        r.fault = VTD_FR_ADDR_BEYOND_MGAW;
        return r;
    }
    return walk_from(host, f, ctx.slptptr, ctx.levels, VTD_PERM_RW, addr, access);
}

WalkResult walk_level1(const Host &host, const Features &f, uint64_t table, uint8_t perm,
                       uint64_t addr, unsigned access)
{
    return walk_from(host, f, table, 1, perm, addr, access);
}

namespace {

struct RangeWalk {
    const Host &host;
    const Features &f;
    uint64_t start, last;  // inclusive bounds
    uint64_t &budget;
    const LeafVisitor &visit;

    bool table(uint64_t base, uint64_t table_iova, unsigned level, uint8_t perm)
    {
        uint64_t span = uint64_t{1} << level_shift(level);
        for (unsigned i = 0; i < (1u << LEVEL_STRIDE); i++) {
            uint64_t iova = table_iova + i * span;
            if (iova > last)
                break;
            if (iova + (span - 1) < start)
                continue;
            if (budget == 0)
                return false;
            budget--;
            auto pte = host.read_u64(base + i * ENTRY_SIZE);
            if (!pte)
                return true;  // the rest of this table is unreadable too
            uint8_t entry_perm = *pte & (entry::SL_R | entry::SL_W);
            if (!entry_perm || reserved_bits(f, *pte, level))
                continue;
            uint8_t p = perm & entry_perm;
            if (is_leaf(f, *pte, level)) {
                if (p)
                    visit(iova, {entry_address(f, *pte), static_cast<uint8_t>(level), p});
            } else if (!table(entry_address(f, *pte), iova, level - 1, p)) {
                return false;
            }
        }
        return true;
    }
};

}  // namespace

bool walk_range_shared(const Host &host, const Features &f, const Context &ctx, uint64_t start,
                       uint64_t end, uint64_t &budget, const LeafVisitor &visit)
{
    uint64_t limit = uint64_t{1} << level_aw(ctx.levels);
    if (end > limit)
        end = limit;
    if (start >= end)
        return true;
    RangeWalk w{host, f, start, end - 1, budget, visit};
    return w.table(ctx.slptptr, 0, ctx.levels, VTD_PERM_RW);
}

bool walk_range(const Host &host, const Features &f, const Context &ctx, uint64_t start,
                uint64_t end, uint64_t entry_budget, const LeafVisitor &visit)
{
    return walk_range_shared(host, f, ctx, start, end, entry_budget, visit);
}

}  // namespace viommu::vtd
