// SPDX-License-Identifier: GPL-2.0-or-later
// Scalable-mode translation: requests without PASID whose RID_PASID entry
// is second-stage, first-stage or nested (from Engine::translate), and
// requests with PASID (Engine::translate_pasid).
#include "engine.hpp"
#include "events.hpp"
#include "first_stage_walk.hpp"
#include "page_walk.hpp"
#include "pasid_table.hpp"
#include "registers.hpp"
#include "scalable_context.hpp"

namespace viommu::vtd {

namespace {

// PasidEntry::flags as this file fills them: the entry's single-bit
// fields, FPD of any entry on the way, and whether the context entry
// allowed requests with PASID (PASIDE) when the entry was filled.
constexpr uint32_t PE_FPD = 1, PE_SRE = 2, PE_WPE = 4, PE_EAFE = 8, PE_PASIDE = 16;

PasidEntry to_pasid_entry(const Context &c, bool paside)
{
    PasidEntry e;
    e.did = c.did;
    e.pgtt = static_cast<uint8_t>(c.pgtt);
    e.fs_levels = c.fs_levels;
    e.sl_levels = c.levels;
    e.flags = (c.fpd ? PE_FPD : 0) | (c.sre ? PE_SRE : 0) | (c.wpe ? PE_WPE : 0) |
              (c.eafe ? PE_EAFE : 0) | (paside ? PE_PASIDE : 0);
    e.fsptptr = c.fsptptr;
    e.slptptr = c.slptptr;
    return e;
}

Context to_context(const PasidEntry &e, uint32_t pasid)
{
    Context c;
    c.pasid = pasid;
    c.did = e.did;
    c.pgtt = static_cast<Pgtt>(e.pgtt);
    c.tt =
        c.pgtt == Pgtt::PassThrough ? TranslationType::PassThrough : TranslationType::Untranslated;
    c.fs_levels = e.fs_levels;
    c.levels = e.sl_levels;
    c.fpd = e.flags & PE_FPD;
    c.sre = e.flags & PE_SRE;
    c.wpe = e.flags & PE_WPE;
    c.eafe = e.flags & PE_EAFE;
    c.fsptptr = e.fsptptr;
    c.slptptr = e.slptptr;
    return c;
}

}  // namespace

// The PASID-table entry of (sid, pasid), or of RID_PASID for a request
// without PASID, through the PASID cache.  A request with PASID that hits
// reads nothing from guest memory: the entry was filled through a context
// entry that allowed PASIDs, and the context-cache invalidation that a
// change of that entry needs retires the source-id's PASID-cache entries
// (invalidate_context).  A request without PASID reads the context entry
// for RID_PASID (the context cache in front of this holds the result);
// on a hit the PASID directory and table are not read.  Only valid
// entries are cached: a fault is looked up again next time.
ContextLookup Engine::resolve_scalable(uint16_t sid, std::optional<uint32_t> pasid, uint64_t rta,
                                       unsigned shard)
{
    ContextLookup r;
    if (pasid) {
        if (auto e = pasids_.lookup(sid, *pasid); e && (e->flags & PE_PASIDE)) {
            stats_.add(Counter::PasidCacheHits, 1, shard);
            r.ctx = to_context(*e, *pasid);
            r.fpd = r.ctx.fpd;
            return r;
        }
    }
    // Sampled before the context entry is read: an invalidation of either
    // entry after this point refuses the fill below.
    const uint64_t gen = pasids_.generation();
    ScalableContextEntry ce;
    r.fault = read_scalable_context(host_, f_, rta & entry::ADDR, sid, ce, r.fpd, r.entries_read);
    if (r.fault != VTD_FR_NONE)
        return r;
    if (pasid && !ce.paside) {
        r.fault = VTD_FR_SM_CONTEXT_PASIDE;
        return r;
    }
    const uint32_t p = pasid.value_or(ce.rid_pasid);
    if (!pasid) {
        if (auto e = pasids_.lookup(sid, p)) {
            stats_.add(Counter::PasidCacheHits, 1, shard);
            r.ctx = to_context(*e, p);
            r.fpd = r.ctx.fpd;
            return r;
        }
    }
    stats_.add(Counter::PasidCacheMisses, 1, shard);
    r.fault = load_pasid_entry(host_, f_, ce, p, r.ctx, r.fpd, r.entries_read);
    if (r.fault != VTD_FR_NONE)
        return r;
    bool evicted = false;
    if (pasids_.insert(sid, p, to_pasid_entry(r.ctx, ce.paside), gen, &evicted)) {
        stats_.add(Counter::PasidCacheInserts, 1, shard);
        if (evicted)
            stats_.add(Counter::PasidCacheEvictions, 1, shard);
    }
    return r;
}

void Engine::count_pgtt(Pgtt pgtt, unsigned shard)
{
    stats_.add(Counter::SmWithoutPasid, 1, shard);
    switch (pgtt) {
    case Pgtt::FirstStage:
        stats_.add(Counter::SmFirstStage, 1, shard);
        return;
    case Pgtt::SecondStage:
        stats_.add(Counter::SmSecondStage, 1, shard);
        return;
    case Pgtt::Nested:
        stats_.add(Counter::SmNested, 1, shard);
        return;
    case Pgtt::PassThrough:
        stats_.add(Counter::SmPassThrough, 1, shard);
        return;
    case Pgtt::Legacy:
        return;
    }
}

// First-stage and nested translation.  The IOTLB holds the translations
// of user-level requests under the address space of (domain-id, PASID)
// (sm_insert; RID_PASID for requests without PASID), and those of
// supervisor requests (with PASID and privilege) under a space of their
// own, since a first-stage leaf's permissions depend on the privilege
// level (SPACE_SUPERVISOR; invalidations of the PASID cover both).  Only
// requests without PASID go to the per-thread caches (keyed by
// source-id).  A cached leaf
// that does not permit the access is walked again rather than faulted:
// the leaf of a clean page caches no write permission, and the walk that
// a write needs sets its D flag.
VtdFaultReason Engine::translate_first_stage(uint16_t sid, std::optional<FaultPasid> pasid,
                                             bool supervisor, uint64_t addr, unsigned access,
                                             bool record, const Context &ctx, DomainStats &ds,
                                             uint64_t epoch, unsigned shard, VtdTranslation &out)
{
    DomainStats::Hot &ds_hot = ds.hot[shard];
    Iotlb::Slot stale;
    if (auto leaf = sm_lookup(ctx, addr, &stale, supervisor);
        leaf && check_access(leaf->perm, access) == VTD_FR_NONE) {
        count_lookup(true, ds_hot, shard);
        // map_leaf blocks an output in the interrupt range, hit or miss.
        return map_leaf_scalable(sid, addr, access, record, *leaf, ctx, ds, pasid, !pasid, epoch,
                                 out);
    }
    count_lookup(false, ds_hot, shard);
    const Iotlb::FillToken token = sm_prepare_fill(ctx, supervisor);
    FsWalkResult w = walk_first_stage(host_, f_, ctx, addr, access, supervisor);
    count_walk(addr, w.levels_read, ds_hot, shard);
    stats_.add(Counter::SmFsWalks, 1, shard);
    stats_.add(Counter::SmFsEntriesRead, w.levels_read, shard);
    if (w.nested_walks)
        stats_.add(Counter::SmNestedWalks, w.nested_walks, shard);
    if (w.accessed_set)
        stats_.add(Counter::SmAccessedSet, w.accessed_set, shard);
    if (w.dirty_set)
        stats_.add(Counter::SmDirtySet, w.dirty_set, shard);
    if (w.ad_retries)
        stats_.add(Counter::SmAdRetries, w.ad_retries, shard);
    host_.event([&] {
        return ev::page_walk(sid, ctx.did, addr, access, ctx.fs_levels, w.levels_read, w.fault,
                             w.leaf);
    });
    if (w.fault != VTD_FR_NONE)
        return fault(sid, addr, access, record, w.fault, ctx.fpd, &ds, pasid);
    count_fill(sm_insert(ctx, addr, w.leaf, token, stale, supervisor), shard);
    return map_leaf_scalable(sid, addr, access, record, w.leaf, ctx, ds, pasid, !pasid, epoch, out);
}

// PGTT second-stage.  The domain's second stage is the same for every
// PASID that names its domain-id (the specification requires it), so
// requests with and without PASID share the IOTLB's entries; only those
// without PASID go to the per-thread cache (keyed by source-id).
VtdFaultReason Engine::translate_second_stage(uint16_t sid, std::optional<FaultPasid> pasid,
                                              uint64_t addr, unsigned access, bool record,
                                              const Context &ctx, DomainStats &ds, uint64_t epoch,
                                              unsigned shard, VtdTranslation &out)
{
    DomainStats::Hot &ds_hot = ds.hot[shard];
    if (addr >> level_aw(ctx.levels))
        return fault(sid, addr, access, record, VTD_FR_SM_ADDR_BEYOND_AW, ctx.fpd, &ds, pasid);
    Iotlb::Slot stale;
    auto leaf = sm_lookup(ctx, addr, &stale);
    count_lookup(leaf.has_value(), ds_hot, shard);
    if (!leaf) {
        // Sampled before the walk, as in translate(): an invalidation
        // after this point makes the fill below a no-op.
        Iotlb::FillToken token = sm_prepare_fill(ctx);
        WalkResult w = walk_address(host_, f_, ctx, addr, access);
        count_walk(addr, w.levels_read, ds_hot, shard);
        host_.event([&] {
            return ev::page_walk(sid, ctx.did, addr, access, ctx.levels, w.levels_read, w.fault,
                                 w.leaf);
        });
        if (w.fault != VTD_FR_NONE)
            return fault(sid, addr, access, record, sm_second_stage_fault(w, ctx.levels), ctx.fpd,
                         &ds, pasid);
        leaf = w.leaf;
        count_fill(sm_insert(ctx, addr, *leaf, token, stale), shard);
    }
    return map_leaf_scalable(sid, addr, access, record, *leaf, ctx, ds, pasid, !pasid, epoch, out);
}

// The IOTLB in scalable mode: every scalable-mode fill and lookup goes
// through these three, keyed by the (domain-id, PASID) address space that
// the PASID-based invalidations (P_IOTLB) select; the IOTLB's domain-wide
// invalidations reach every space of the domain.
static uint32_t space_pasid(const Context &ctx, bool supervisor)
{
    return ctx.pasid | (supervisor ? SPACE_SUPERVISOR : 0);
}

// The (DID, PASID) tag of a context's space; a tag taken from another
// space drops that space's entries (counted).
Iotlb::Space Engine::sm_space(const Context &ctx, bool supervisor)
{
    size_t recycled = 0;
    Iotlb::Space space = iotlb_.space(ctx.did, space_pasid(ctx, supervisor), &recycled);
    if (recycled)
        stats_.add(Counter::IotlbSpacesRecycled, recycled);
    return space;
}

Iotlb::FillToken Engine::sm_prepare_fill(const Context &ctx, bool supervisor)
{
    return iotlb_.prepare_fill(sm_space(ctx, supervisor));
}

std::optional<Leaf> Engine::sm_lookup(const Context &ctx, uint64_t addr, Iotlb::Slot *stale,
                                      bool supervisor)
{
    std::optional<Iotlb::Space> space = iotlb_.find_space(ctx.did, space_pasid(ctx, supervisor));
    if (!space)
        return std::nullopt;
    return iotlb_.lookup(*space, addr, stale);
}

Iotlb::InsertResult Engine::sm_insert(const Context &ctx, uint64_t addr, const Leaf &leaf,
                                      const Iotlb::FillToken &token, const Iotlb::Slot &stale,
                                      bool supervisor)
{
    return iotlb_.insert(sm_space(ctx, supervisor), addr, leaf, token, ctx.pgtt == Pgtt::Nested,
                         stale);
}

// A request with PASID: resolved through the PASID cache
// (resolve_scalable), never through the per-thread caches, which are
// keyed by source-id.
VtdFaultReason Engine::translate_pasid(uint16_t sid, uint32_t pasid, bool privileged, uint64_t addr,
                                       unsigned access, bool record, VtdTranslation &out)
{
    const unsigned shard = Stats::thread_shard();
    stats_.add(Counter::Translations, 1, shard);
    access &= VTD_PERM_RW;
    if (!translation_enabled()) {
        stats_.add(Counter::TranslationDisabled, 1, shard);
        identity(addr, 0, out);
        return VTD_FR_NONE;
    }
    const uint64_t epoch = xlat_epoch_.load(std::memory_order_acquire);
    // Fault records name the PASID and the privilege requested when the
    // unit has PASIDs (ECAP.PASID).
    const std::optional<FaultPasid> tag =
        f_.pasid_bits ? std::optional<FaultPasid>({pasid, privileged}) : std::nullopt;
    const uint64_t rta = root_table_.load(std::memory_order_acquire);
    if (!(rta & rtaddr::TTM_SCALABLE))
        return fault(sid, addr, access, record, VTD_FR_SM_TTM0_PASID, false, nullptr, tag);
    ContextLookup cl;
    if (!f_.pasid_bits || pasid >> f_.pasid_bits) {  // a PASID the unit cannot have
        cl.fault = VTD_FR_SM_PASID_BEYOND_PDTS;
    } else {
        stats_.add(Counter::SmWithPasid, 1, shard);
        cl = resolve_scalable(sid, pasid, rta, shard);
    }
    if (cl.entries_read || cl.fault != VTD_FR_NONE) {
        stats_.add(Counter::ContextEntriesRead, cl.entries_read, shard);
        stats_.add(Counter::SmPasidEntriesRead, cl.entries_read, shard);
        host_.event([&] { return ev::context_miss(sid, cl); });
    }
    if (cl.fault != VTD_FR_NONE)
        return fault(sid, addr, access, record, cl.fault, cl.fpd, nullptr, tag);
    const Context &ctx = cl.ctx;
    DomainStats &ds = stats_.domain(ctx.did);
    ds.hot[shard].bump(DomainStats::Hot::Translations, shard);
    // A supervisor request needs SRE, whatever the PGTT.
    if (privileged && !ctx.sre && ctx.pgtt != Pgtt::Legacy)
        return fault(sid, addr, access, record, VTD_FR_SM_PASID_ENTRY_SRE, ctx.fpd, &ds, tag);
    switch (ctx.pgtt) {
    case Pgtt::PassThrough:
        stats_.add(Counter::SmPassThrough, 1, shard);
        // A request with PASID to the interrupt range is a DMA request
        // like any other; passed through, its output would be there.
        if (addr >= INTERRUPT_RANGE_FIRST && addr <= INTERRUPT_RANGE_LAST)
            return fault(sid, addr, access, record, VTD_FR_SM_INTERRUPT_ADDR, ctx.fpd, &ds, tag);
        stats_.add(Counter::PassThrough, 1, shard);
        identity(addr, ctx.did, out);
        return VTD_FR_NONE;
    case Pgtt::SecondStage:
        // Privilege means nothing more to second-stage tables (no U/S).
        stats_.add(Counter::SmSecondStage, 1, shard);
        return translate_second_stage(sid, tag, addr, access, record, ctx, ds, epoch, shard, out);
    case Pgtt::FirstStage:
    case Pgtt::Nested:
        stats_.add(ctx.pgtt == Pgtt::Nested ? Counter::SmNested : Counter::SmFirstStage, 1, shard);
        return translate_first_stage(sid, tag, privileged, addr, access, record, ctx, ds, epoch,
                                     shard, out);
    case Pgtt::Legacy:
        break;
    }
    return fault(sid, addr, access, record, VTD_FR_SM_PASID_ENTRY_INV, ctx.fpd, &ds, tag);
}

}  // namespace viommu::vtd
