// SPDX-License-Identifier: GPL-2.0-or-later
// Scalable-mode translation: requests without PASID whose RID_PASID entry
// is second-stage, first-stage or nested (from Engine::translate), and
// requests with PASID (Engine::translate_pasid).
#include "engine.hpp"
#include "events.hpp"
#include "first_stage_walk.hpp"
#include "page_walk.hpp"
#include "registers.hpp"
#include "scalable_context.hpp"

namespace viommu::vtd {

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
// of requests without PASID (those of RID_PASID) under the address space
// of (domain-id, RID_PASID) (sm_insert); a request with PASID walks every
// time.  A cached leaf
// that does not permit the access is walked again rather than faulted:
// the leaf of a clean page caches no write permission, and the walk that
// a write needs sets its D flag.
VtdFaultReason Engine::translate_first_stage(uint16_t sid, std::optional<uint32_t> pasid,
                                             bool supervisor, uint64_t addr, unsigned access,
                                             bool record, const Context &ctx, DomainStats &ds,
                                             uint64_t epoch, unsigned shard, VtdTranslation &out)
{
    DomainStats::Hot &ds_hot = ds.hot[shard];
    const bool cached = !pasid;
    Iotlb::FillToken token{};
    Iotlb::Slot stale;
    if (cached) {
        if (auto leaf = sm_lookup(ctx, addr, &stale);
            leaf && check_access(leaf->perm, access) == VTD_FR_NONE) {
            stats_.add(Counter::IotlbHits, 1, shard);
            ds_hot.bump(DomainStats::Hot::IotlbHits, shard);
            uint64_t size_mask = (uint64_t{1} << level_shift(leaf->level)) - 1;
            out = {addr & ~size_mask, leaf->phys, size_mask, leaf->perm, ctx.did};
            remember_scalable(sid, addr, epoch, out, ds, ctx.pgtt);
            return VTD_FR_NONE;
        }
        stats_.add(Counter::IotlbMisses, 1, shard);
        ds_hot.bump(DomainStats::Hot::IotlbMisses, shard);
        token = sm_prepare_fill(ctx);
    }
    FsWalkResult w = walk_first_stage(host_, f_, ctx, addr, access, supervisor);
    stats_.add(Counter::PageWalks, 1, shard);
    stats_.add(Counter::WalkLevelsRead, w.levels_read, shard);
    stats_.add(addr >> 32 ? Counter::WalksAbove4G : Counter::WalksBelow4G, 1, shard);
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
    ds_hot.bump(DomainStats::Hot::PageWalks, shard);
    host_.event([&] {
        return ev::page_walk(sid, ctx.did, addr, access, ctx.fs_levels, w.levels_read, w.fault,
                             w.leaf);
    });
    if (w.fault != VTD_FR_NONE)
        return fault(sid, addr, access, record, w.fault, ctx.fpd, &ds, pasid);
    if (cached) {
        auto ins = sm_insert(ctx, addr, w.leaf, token, stale);
        if (ins.inserted)
            stats_.add(Counter::IotlbInserts, 1, shard);
        if (ins.evicted)
            stats_.add(Counter::IotlbEvictions, 1, shard);
        if (ins.evicted_live)
            translations_changed();
    }
    if (VtdFaultReason r = check_access(w.leaf.perm, access); r != VTD_FR_NONE)
        return fault(sid, addr, access, record, sm_access_fault(r), ctx.fpd, &ds, pasid);
    uint64_t size_mask = (uint64_t{1} << level_shift(w.leaf.level)) - 1;
    out = {addr & ~size_mask, w.leaf.phys, size_mask, w.leaf.perm, ctx.did};
    if (cached)
        remember_scalable(sid, addr, epoch, out, ds, ctx.pgtt);
    return VTD_FR_NONE;
}

// PGTT second-stage.  The domain's second stage is the same for every
// PASID that names its domain-id (the specification requires it), so
// requests with and without PASID share the IOTLB's entries; only those
// without PASID go to the per-thread cache (keyed by source-id).
VtdFaultReason Engine::translate_second_stage(uint16_t sid, std::optional<uint32_t> pasid,
                                              uint64_t addr, unsigned access, bool record,
                                              const Context &ctx, DomainStats &ds, uint64_t epoch,
                                              unsigned shard, VtdTranslation &out)
{
    DomainStats::Hot &ds_hot = ds.hot[shard];
    if (addr >> level_aw(ctx.levels))
        return fault(sid, addr, access, record, VTD_FR_SM_ADDR_BEYOND_AW, ctx.fpd, &ds, pasid);
    Iotlb::Slot stale;
    auto leaf = sm_lookup(ctx, addr, &stale);
    if (leaf) {
        stats_.add(Counter::IotlbHits, 1, shard);
        ds_hot.bump(DomainStats::Hot::IotlbHits, shard);
    } else {
        stats_.add(Counter::IotlbMisses, 1, shard);
        ds_hot.bump(DomainStats::Hot::IotlbMisses, shard);
        // Sampled before the walk, as in translate(): an invalidation
        // after this point makes the fill below a no-op.
        Iotlb::FillToken token = sm_prepare_fill(ctx);
        WalkResult w = walk_address(host_, f_, ctx, addr, access);
        stats_.add(Counter::PageWalks, 1, shard);
        stats_.add(Counter::WalkLevelsRead, w.levels_read, shard);
        stats_.add(addr >> 32 ? Counter::WalksAbove4G : Counter::WalksBelow4G, 1, shard);
        ds_hot.bump(DomainStats::Hot::PageWalks, shard);
        host_.event([&] {
            return ev::page_walk(sid, ctx.did, addr, access, ctx.levels, w.levels_read, w.fault,
                                 w.leaf);
        });
        if (w.fault != VTD_FR_NONE)
            return fault(sid, addr, access, record, sm_second_stage_fault(w, ctx.levels), ctx.fpd,
                         &ds, pasid);
        leaf = w.leaf;
        auto ins = sm_insert(ctx, addr, *leaf, token, stale);
        if (ins.inserted)
            stats_.add(Counter::IotlbInserts, 1, shard);
        if (ins.evicted)
            stats_.add(Counter::IotlbEvictions, 1, shard);
        if (ins.evicted_live)
            translations_changed();
    }
    if (VtdFaultReason r = check_access(leaf->perm, access); r != VTD_FR_NONE)
        return fault(sid, addr, access, record, sm_access_fault(r), ctx.fpd, &ds, pasid);
    uint64_t size_mask = (uint64_t{1} << level_shift(leaf->level)) - 1;
    out = {addr & ~size_mask, leaf->phys, size_mask, leaf->perm, ctx.did};
    if (!pasid)
        remember_scalable(sid, addr, epoch, out, ds, ctx.pgtt);
    return VTD_FR_NONE;
}

// The IOTLB in scalable mode: every scalable-mode fill and lookup goes
// through these three, keyed by the (domain-id, PASID) address space that
// the PASID-based invalidations (P_IOTLB) select; the IOTLB's domain-wide
// invalidations reach every space of the domain.
Iotlb::FillToken Engine::sm_prepare_fill(const Context &ctx)
{
    return iotlb_.prepare_fill(iotlb_.space(ctx.did, ctx.pasid));
}

std::optional<Leaf> Engine::sm_lookup(const Context &ctx, uint64_t addr, Iotlb::Slot *stale)
{
    std::optional<Iotlb::Space> space = iotlb_.find_space(ctx.did, ctx.pasid);
    if (!space)
        return std::nullopt;
    return iotlb_.lookup(*space, addr, stale);
}

Iotlb::InsertResult Engine::sm_insert(const Context &ctx, uint64_t addr, const Leaf &leaf,
                                      const Iotlb::FillToken &token, const Iotlb::Slot &stale)
{
    return iotlb_.insert(iotlb_.space(ctx.did, ctx.pasid), addr, leaf, token,
                         ctx.pgtt == Pgtt::Nested, stale);
}

// A request with PASID: resolved from the tables each time (no PASID
// cache yet), never through the per-thread caches, which are keyed by
// source-id.
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
    // Fault records name the PASID when the unit has PASIDs (ECAP.PASID).
    const std::optional<uint32_t> tag =
        f_.pasid_bits ? std::optional<uint32_t>(pasid) : std::nullopt;
    const uint64_t rta = root_table_.load(std::memory_order_acquire);
    if (!(rta & rtaddr::TTM_SCALABLE))
        return fault(sid, addr, access, record, VTD_FR_SM_TTM0_PASID, false, nullptr, tag);
    stats_.add(Counter::SmWithPasid, 1, shard);
    ContextLookup cl;
    if (!f_.pasid_bits || pasid >> f_.pasid_bits)  // a PASID the unit cannot have
        cl.fault = VTD_FR_SM_PASID_BEYOND_PDTS;
    else
        cl = load_scalable_context(host_, f_, rta & entry::ADDR, sid, pasid);
    stats_.add(Counter::ContextEntriesRead, cl.entries_read, shard);
    stats_.add(Counter::SmPasidEntriesRead, cl.entries_read, shard);
    host_.event([&] { return ev::context_miss(sid, cl); });
    if (cl.fault != VTD_FR_NONE)
        return fault(sid, addr, access, record, cl.fault, cl.fpd, nullptr, tag);
    const Context &ctx = cl.ctx;
    DomainStats &ds = stats_.domain(ctx.did);
    ds.hot[shard].bump(DomainStats::Hot::Translations, shard);
    switch (ctx.pgtt) {
    case Pgtt::PassThrough:
        stats_.add(Counter::SmPassThrough, 1, shard);
        stats_.add(Counter::PassThrough, 1, shard);
        identity(addr, ctx.did, out);
        return VTD_FR_NONE;
    case Pgtt::SecondStage:
        // Privilege means nothing to second-stage tables (no U/S).
        stats_.add(Counter::SmSecondStage, 1, shard);
        return translate_second_stage(sid, tag, addr, access, record, ctx, ds, epoch, shard, out);
    case Pgtt::FirstStage:
    case Pgtt::Nested:
        stats_.add(ctx.pgtt == Pgtt::Nested ? Counter::SmNested : Counter::SmFirstStage, 1, shard);
        if (privileged && !ctx.sre)
            return fault(sid, addr, access, record, VTD_FR_SM_PASID_ENTRY_SRE, ctx.fpd, &ds, tag);
        return translate_first_stage(sid, tag, privileged, addr, access, record, ctx, ds, epoch,
                                     shard, out);
    case Pgtt::Legacy:
        break;
    }
    return fault(sid, addr, access, record, VTD_FR_SM_PASID_ENTRY_INV, ctx.fpd, &ds, tag);
}

}  // namespace viommu::vtd
