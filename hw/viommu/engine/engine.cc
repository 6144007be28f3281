// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine.hpp"

#include <array>
#include <cstddef>

#include "events.hpp"
#include "first_stage_walk.hpp"
#include "page_walk.hpp"
#include "root_context.hpp"
#include "scalable_context.hpp"

namespace viommu::vtd {

namespace {

// The recent-translation cache: per thread, direct-mapped, in front of the
// context cache and the IOTLB.  An entry is a successful translation of
// one 4 KiB input page for one source-id, valid while its engine's epoch
// is the one it was filled under.  A hit costs no lock and no shared
// write besides the statistics, and counts as the context-cache and IOTLB
// hit it stands for.
struct RecentEntry {
    uint64_t engine = 0;  // Engine::id_; 0: empty
    uint64_t epoch = 0;
    uint64_t vpn = 0;
    uint64_t iova_base = 0, phys_base = 0, size_mask = 0;
    DomainStats *ds = nullptr;  // did's statistics, which live as long as the engine
    uint16_t sid = 0, did = 0;
    uint8_t perm = 0;
    Pgtt pgtt = Pgtt::Legacy;  // scalable mode: for the statistics by PGTT
};

constexpr unsigned RECENT_ENTRIES = 64;

constinit thread_local std::array<RecentEntry, RECENT_ENTRIES> recent{};

// The context the calling thread resolved last, valid under the same rule
// as the recent translations: a translation that misses those skips the
// context cache and the domain-statistics lookup when it comes from the
// same source-id.
struct ContextMemo {
    uint64_t engine = 0;  // Engine::id_; 0: empty
    uint64_t epoch = 0;
    uint16_t sid = 0;
    Context ctx;
    DomainStats *ds = nullptr;
};

constinit thread_local ContextMemo context_memo{};

// Whether the calling thread's last IOTLB lookup missed.  Misses come in
// runs (a domain just invalidated, a working set larger than the IOTLB),
// so the next lookup starts loading its page-table entry first.
constinit thread_local bool last_lookup_missed = false;

std::atomic<uint64_t> next_engine_id{1};

RecentEntry &recent_slot(uint16_t sid, uint64_t vpn)
{
    return recent[(vpn ^ (vpn >> 6) ^ (uint64_t{sid} * 0x9e37)) % RECENT_ENTRIES];
}

}  // namespace

std::unique_ptr<Engine> Engine::create(const VtdConfig &cfg, const VtdHostOps &ops, void *opaque,
                                       std::string &err)
{
    if (!ops.mem_read || !ops.mem_write || !ops.msi) {
        err = "mem_read, mem_write and msi callbacks are mandatory";
        return nullptr;
    }
    auto f = Features::from_config(cfg, err);
    if (!f)
        return nullptr;
    if (f->first_stage && !ops.mem_cmpxchg64) {
        err = "first_stage needs the mem_cmpxchg64 callback (accessed/dirty flag updates)";
        return nullptr;
    }
    return std::make_unique<Engine>(*f, ops, opaque);
}

Engine::Engine(const Features &f, const VtdHostOps &ops, void *opaque)
    : f_(f), host_(ops, opaque), faults_(host_, stats_, f_.fault_records),
      queue_(host_, f_, stats_, faults_, *this), iotlb_(f_.iotlb_entries),
      contexts_(f_.context_entries), pasids_(PasidCache::DEFAULT_ENTRIES),
      ir_(host_, f_, stats_, faults_), id_(next_engine_id.fetch_add(1))
{
    reset();
}

void Engine::reset()
{
    te_.store(false);
    root_table_.store(0);
    gsts_ = 0;
    rtaddr_ = ccmd_ = iva_ = iotlb_reg_ = 0;
    faults_.reset();
    queue_.reset();
    ir_.reset();
    flush_caches(VTD_CACHE_RESET_RESET);
}

void Engine::flush_caches(VtdCacheResetReason why)
{
    contexts_.clear();
    pasids_.clear();
    iotlb_.flush();
    translations_changed();
    host_.event([&] { return ev::cache_reset(why); });
}

ContextLookup Engine::resolve_context(uint16_t sid)
{
    if (auto ctx = contexts_.lookup(sid)) {
        stats_.add(Counter::ContextHits);
        ContextLookup r;
        r.fpd = ctx->fpd;
        r.ctx = *ctx;
        return r;
    }
    stats_.add(Counter::ContextMisses);
    uint64_t gen = contexts_.generation();
    const uint64_t rta = root_table_.load(std::memory_order_acquire);
    ContextLookup r = rta & rtaddr::TTM_SCALABLE
                          ? resolve_scalable(sid, std::nullopt, rta, Stats::thread_shard())
                          : load_context(host_, f_, rta, sid);
    stats_.add(Counter::ContextEntriesRead, r.entries_read);
    host_.event([&] { return ev::context_miss(sid, r); });
    if (r.fault == VTD_FR_NONE) {
        if (contexts_.insert(sid, r.ctx, gen)) {
            stats_.add(Counter::ContextEvictions);
            translations_changed();
        }
        if (r.ctx.second_stage_only()) {
            DomainStats &ds = stats_.domain(r.ctx.did);
            ds.slptptr.store(r.ctx.slptptr, std::memory_order_relaxed);
            ds.levels.store(r.ctx.levels, std::memory_order_relaxed);
        }
    }
    return r;
}

VtdFaultReason Engine::fault(uint16_t sid, uint64_t addr, unsigned access, bool record,
                             VtdFaultReason reason, bool fpd, DomainStats *ds,
                             std::optional<FaultPasid> pasid)
{
    stats_.fault(reason);
    if (ds)
        ds->faults.fetch_add(1, std::memory_order_relaxed);
    const bool write = access & VTD_PERM_WRITE;
    host_.event([&] {
        return ev::fault(sid, addr, reason, write,
                         !record ? VTD_FAULT_NOT_REQUESTED
                         : fpd   ? VTD_FAULT_SUPPRESSED
                                 : 0);
    });
    if (!record)
        stats_.add(Counter::FaultsNotRecorded);
    else if (fpd)
        stats_.add(Counter::FaultsSuppressedFpd);
    else
        faults_.record(sid, addr, reason, write, pasid);
    return reason;
}

void Engine::identity(uint64_t addr, uint16_t did, VtdTranslation &out)
{
    out = {addr & ~(PAGE_SIZE - 1), addr & ~(PAGE_SIZE - 1), PAGE_SIZE - 1, VTD_PERM_RW, did};
}

// Both inline into translate(): they run on every translation.
inline bool Engine::translate_recent(uint16_t sid, uint64_t addr, unsigned access, uint64_t epoch,
                                     unsigned shard, VtdTranslation &out)
{
    uint64_t vpn = addr >> PAGE_SHIFT;
    const RecentEntry &e = recent_slot(sid, vpn);
    if (e.engine != id_ || e.epoch != epoch || e.vpn != vpn || e.sid != sid ||
        check_access(e.perm, access) != VTD_FR_NONE)
        return false;
    stats_.add(Counter::ContextHits, 1, shard);
    DomainStats::Hot &hot = e.ds->hot[shard];
    hot.bump(DomainStats::Hot::Translations, shard);
    count_lookup(true, hot, shard);
    if (e.pgtt != Pgtt::Legacy) [[unlikely]]
        count_pgtt(e.pgtt, shard);
    out = {e.iova_base, e.phys_base, e.size_mask, e.perm, e.did};
    return true;
}

inline void Engine::remember(uint16_t sid, uint64_t addr, uint64_t epoch, const VtdTranslation &t,
                             DomainStats &ds, Pgtt pgtt)
{
    uint64_t vpn = addr >> PAGE_SHIFT;
    recent_slot(sid, vpn) = {id_, epoch, vpn,         t.iova_base, t.phys_base, t.addr_mask,
                             &ds, sid,   t.domain_id, t.perm,      pgtt};
}

VtdFaultReason Engine::translate(uint16_t sid, uint64_t addr, unsigned access, bool record,
                                 VtdTranslation &out)
{
    const unsigned shard = Stats::thread_shard();
    stats_.add(Counter::Translations, 1, shard);
    access &= VTD_PERM_RW;
    // Sampled before any cache is read: a change that completes after this
    // point makes whatever this call remembers stale.
    uint64_t epoch = xlat_epoch_.load(std::memory_order_acquire);
    if (translate_recent(sid, addr, access, epoch, shard, out))
        return VTD_FR_NONE;
    if (!translation_enabled()) {
        stats_.add(Counter::TranslationDisabled, 1, shard);
        identity(addr, 0, out);
        return VTD_FR_NONE;
    }
    ContextMemo &memo = context_memo;
    if (memo.engine != id_ || memo.epoch != epoch || memo.sid != sid) {
        ContextLookup cl = resolve_context(sid);
        if (cl.fault != VTD_FR_NONE)
            return fault(sid, addr, access, record, cl.fault, cl.fpd, nullptr);
        memo = {id_, epoch, sid, cl.ctx, &stats_.domain(cl.ctx.did)};
    } else {
        stats_.add(Counter::ContextHits, 1, shard);
    }
    const Context ctx = memo.ctx;  // a copy: the walk below calls the host
    DomainStats &ds = *memo.ds;
    DomainStats::Hot &ds_hot = ds.hot[shard];
    ds_hot.bump(DomainStats::Hot::Translations, shard);
    const bool sm = ctx.scalable();
    if (sm) [[unlikely]]
        count_pgtt(ctx.pgtt, shard);
    if (ctx.tt == TranslationType::PassThrough) {
        // A legacy pass-through entry's AW bounds what passes (scalable
        // mode's PGTT pass-through has no width of its own).
        if (!sm && (addr >> level_aw(ctx.levels)))
            return fault(sid, addr, access, record, VTD_FR_ADDR_BEYOND_MGAW, ctx.fpd, &ds);
        stats_.add(Counter::PassThrough, 1, shard);
        identity(addr, ctx.did, out);
        return VTD_FR_NONE;
    }
    if (sm) [[unlikely]] {
        return ctx.uses_first_stage()
                   ? translate_first_stage(sid, std::nullopt, false, addr, access, record, ctx, ds,
                                           epoch, shard, out)
                   : translate_second_stage(sid, std::nullopt, addr, access, record, ctx, ds, epoch,
                                            shard, out);
    }
    if (addr >> level_aw(ctx.levels))
        return fault(sid, addr, access, record, VTD_FR_ADDR_BEYOND_MGAW, ctx.fpd, &ds);

    // The walk after a miss reads the level-1 entry through a cached
    // paging-structure entry; when a miss is likely, ask the host to load
    // that entry's line now, so it overlaps the IOTLB probe instead of
    // following it.  The fill token is sampled before the paging-structure
    // lookup either way, so an invalidation in between is never missed.
    std::optional<Iotlb::FillToken> token;
    std::optional<Iotlb::Pde> pde;
    if (last_lookup_missed) {
        token = iotlb_.prepare_fill(ctx.did);
        pde = iotlb_.lookup_pde(ctx.did, addr);
        if (pde)
            host_.prefetch(entry_gpa(pde->table, addr, 1));
    }
    Iotlb::Slot stale;
    auto leaf = iotlb_.lookup(ctx.did, addr, &stale);
    last_lookup_missed = !leaf;
    count_lookup(leaf.has_value(), ds_hot, shard);
    if (!leaf) {
        if (!token) {
            token = iotlb_.prepare_fill(ctx.did);
            pde = iotlb_.lookup_pde(ctx.did, addr);
        }
        WalkResult w = pde ? walk_level1(host_, f_, pde->table, pde->perm, addr, access)
                           : walk_address(host_, f_, ctx, addr, access);
        if (!pde)
            w.fault = legacy_walk_fault(w, ctx.levels);
        // Only successful walks fill it: a faulting one may be about to be
        // fixed by the guest, and a fresh walk then sees every level.
        if (!pde && w.has_l1 && w.fault == VTD_FR_NONE)
            iotlb_.insert_pde(ctx.did, addr, {w.l1_table, w.l1_perm}, *token);
        count_walk(addr, w.levels_read, ds_hot, shard);
        host_.event([&] {
            return ev::page_walk(sid, ctx.did, addr, access, pde ? 1 : ctx.levels, w.levels_read,
                                 w.fault, w.leaf);
        });
        if (w.fault != VTD_FR_NONE)
            return fault(sid, addr, access, record, w.fault, ctx.fpd, &ds);
        leaf = w.leaf;
        count_fill(iotlb_.insert(ctx.did, addr, *leaf, *token, stale), shard);
    }
    return map_leaf(sid, addr, access, record, *leaf, ctx, ds, std::nullopt, true, epoch, out);
}

// After an IOTLB fill: the statistics, and the epoch when a live entry
// went.  A dead entry was dropped by its invalidation already, which
// bumped the epoch; only evicting a live one changes what hits.
void Engine::count_fill(const Iotlb::InsertResult &ins, unsigned shard)
{
    if (ins.inserted)
        stats_.add(Counter::IotlbInserts, 1, shard);
    if (ins.evicted)
        stats_.add(Counter::IotlbEvictions, 1, shard);
    if (ins.evicted_live)
        translations_changed();
}

// Every translate path ends here with the leaf that maps addr: the access
// is checked against it (a fault in the reason of the context's mode),
// then `out` is the leaf's page, remembered per thread where `recent`.
// `pasid`: the request with PASID the fault record names.
inline VtdFaultReason Engine::map_leaf(uint16_t sid, uint64_t addr, unsigned access, bool record,
                                       const Leaf &leaf, const Context &ctx, DomainStats &ds,
                                       std::optional<FaultPasid> pasid, bool recent, uint64_t epoch,
                                       VtdTranslation &out)
{
    if (VtdFaultReason r = check_access(leaf.perm, access); r != VTD_FR_NONE)
        return fault(sid, addr, access, record, ctx.scalable() ? sm_access_fault(r) : r, ctx.fpd,
                     &ds, pasid);
    uint64_t size_mask = (uint64_t{1} << level_shift(leaf.level)) - 1;
    out = {addr & ~size_mask, leaf.phys, size_mask, leaf.perm, ctx.did};
    // A request that translates into the interrupt address range is
    // blocked (it would reach the APICs unremapped); the rest of a large
    // leaf that covers the range is handed out a page at a time.
    if (leaf.phys <= INTERRUPT_RANGE_LAST && leaf.phys + size_mask >= INTERRUPT_RANGE_FIRST)
        [[unlikely]] {
        const uint64_t phys = leaf.phys | (addr & size_mask);
        if (phys >= INTERRUPT_RANGE_FIRST && phys <= INTERRUPT_RANGE_LAST)
            return fault(sid, addr, access, record,
                         ctx.scalable() ? VTD_FR_SM_INTERRUPT_ADDR : VTD_FR_INTERRUPT_ADDR, ctx.fpd,
                         &ds, pasid);
        size_mask = PAGE_SIZE - 1;
        out = {addr & ~size_mask, phys & ~size_mask, size_mask, leaf.perm, ctx.did};
    }
    if (recent)
        remember(sid, addr, epoch, out, ds, ctx.pgtt);
    return VTD_FR_NONE;
}

// For the scalable-mode paths (scalable_translate.cc), which are kept out
// of this file so that the legacy path's IOTLB lookup stays inlined.
void Engine::remember_scalable(uint16_t sid, uint64_t addr, uint64_t epoch, const VtdTranslation &t,
                               DomainStats &ds, Pgtt pgtt)
{
    remember(sid, addr, epoch, t, ds, pgtt);
}

VtdFaultReason Engine::map_leaf_scalable(uint16_t sid, uint64_t addr, unsigned access, bool record,
                                         const Leaf &leaf, const Context &ctx, DomainStats &ds,
                                         std::optional<FaultPasid> pasid, bool recent,
                                         uint64_t epoch, VtdTranslation &out)
{
    return map_leaf(sid, addr, access, record, leaf, ctx, ds, pasid, recent, epoch, out);
}

bool Engine::is_pass_through(uint16_t sid)
{
    if (!translation_enabled())
        return false;
    ContextLookup cl = resolve_context(sid);
    return cl.fault == VTD_FR_NONE && cl.ctx.tt == TranslationType::PassThrough;
}

bool Engine::device_context(uint16_t sid, VtdDeviceContext &out)
{
    out = {};
    if (!translation_enabled())
        return false;
    const ContextLookup cl = resolve_context(sid);
    const bool sm = root_table_.load(std::memory_order_acquire) & rtaddr::TTM_SCALABLE;
    out.fault = static_cast<uint8_t>(cl.fault);
    out.scalable = sm;
    if (cl.fault != VTD_FR_NONE) {
        // 50h-5Dh: RID_PASID's directory or table entry (the context
        // entry was usable).
        out.pasid_entry_fault =
            sm && cl.fault >= VTD_FR_SM_PASID_DIR_INV && cl.fault <= VTD_FR_SM_PASID_ENTRY_SRE;
        return true;
    }
    out.pass_through = cl.ctx.tt == TranslationType::PassThrough;
    out.did = cl.ctx.did;
    out.pasid = sm ? cl.ctx.pasid : 0;
    return true;
}

int Engine::walk(uint16_t sid, uint64_t start, uint64_t end, VtdWalkFn cb, void *cb_ctx)
{
    if (!translation_enabled() || !cb)
        return 0;
    stats_.add(Counter::WalksForReplay);
    ContextLookup cl = load_context(host_, f_, root_table_.load(std::memory_order_acquire), sid);
    if (cl.fault != VTD_FR_NONE || cl.ctx.tt == TranslationType::PassThrough) {
        host_.event([&] { return ev::replay(sid, cl, start, end, 0, false); });
        // Pass-through: nothing to replay, the host bypasses translation.
        return cl.fault;
    }
    uint64_t leaves = 0;
    const LeafVisitor visit = [&](uint64_t iova, const Leaf &leaf) {
        uint64_t size_mask = (uint64_t{1} << level_shift(leaf.level)) - 1;
        VtdTranslation t{iova, leaf.phys, size_mask, leaf.perm, cl.ctx.did};
        leaves++;
        cb(cb_ctx, &t);
    };
    bool complete = true;
    if (cl.ctx.uses_first_stage()) {
        // First-stage and nested: the leaves a request without PASID
        // (user privilege) can use, nested ones translated by the second
        // stage (first_stage_walk.hpp); a top table that cannot be read
        // makes the context unusable.
        const FsRangeResult r =
            walk_first_stage_range(host_, f_, cl.ctx, start, end, REPLAY_ENTRY_BUDGET, visit);
        cl.fault = r.fault;
        complete = r.complete;
    } else {
        complete = walk_range(host_, f_, cl.ctx, start, end, REPLAY_ENTRY_BUDGET, visit);
    }
    stats_.add(Counter::ReplayLeaves, leaves);
    if (!complete)
        stats_.add(Counter::ReplayTruncated);
    host_.event([&] { return ev::replay(sid, cl, start, end, leaves, !complete); });
    if (cl.fault == VTD_FR_NONE && !complete)
        return VTD_WALK_TRUNCATED;
    return cl.fault;
}

void Engine::invalidate_context(const ContextInvalidation &req)
{
    // Scalable mode: the PASID-cache entries came through the context
    // entries (their PASID directory), so those of the invalidated context
    // entries go too: a device's for a device-selective invalidation, all
    // for the others (a scalable-mode context entry names no domain).
    if (f_.scalable_mode) {
        if (req.granularity == Granularity::Selective) {
            unsigned fm = req.function_mask & 3;
            pasids_.invalidate_source(req.sid, ((1u << fm) - 1) << (3 - fm));
        } else if (req.granularity != Granularity::Invalid) {
            pasids_.invalidate_all();
        }
    }
    size_t dropped = 0;
    switch (req.granularity) {
    case Granularity::Global:
        stats_.add(Counter::CcGlobal);
        contexts_.invalidate_all();
        translations_changed();
        host_.context_invalidated(true, 0, 0);
        break;
    case Granularity::Domain:
        // Which source-ids use the domain is known only for cached
        // contexts, so the host re-evaluates every device.  The cache
        // tags a scalable-mode context by its RID_PASID entry's domain,
        // not one the context entry names: all of them go.
        stats_.add(Counter::CcDomain);
        if (root_table_.load(std::memory_order_acquire) & rtaddr::TTM_SCALABLE)
            contexts_.invalidate_all();
        else
            contexts_.invalidate_domain(req.did);
        translations_changed();
        host_.context_invalidated(true, 0, 0);
        break;
    case Granularity::Selective: {
        stats_.add(Counter::CcDevice);
        unsigned fm = req.function_mask & 3;
        uint16_t sid_mask = ((1u << fm) - 1) << (3 - fm);
        dropped = contexts_.invalidate_device(req.sid, sid_mask);
        translations_changed();
        host_.context_invalidated(false, req.sid & ~sid_mask, sid_mask);
        break;
    }
    case Granularity::Invalid:
        return;
    }
    stats_.add(Counter::ContextEntriesDropped, dropped);
    host_.event([&] {
        unsigned fm = req.function_mask & 3;
        uint16_t sid_mask =
            req.granularity == Granularity::Selective ? ((1u << fm) - 1) << (3 - fm) : 0;
        return ev::context_invalidation(queue_.enabled(), req.granularity, req.did, req.sid,
                                        sid_mask, dropped);
    });
}

uint64_t Engine::invalidate_iotlb(const IotlbInvalidation &req)
{
    const uint64_t whole = uint64_t{1} << f_.aw_bits;
    size_t dropped = 0;
    uint64_t probes = 0;
    switch (req.granularity) {
    case Granularity::Global:
        stats_.add(Counter::IotlbGlobal);
        iotlb_.invalidate_all();
        translations_changed();
        host_.invalidated(true, 0, 0, whole);
        break;
    case Granularity::Domain:
        stats_.add(Counter::IotlbDomain);
        if (DomainStats *ds = stats_.find_domain(req.did))
            ds->inv_domain.fetch_add(1, std::memory_order_relaxed);
        iotlb_.invalidate_domain(req.did);
        translations_changed();
        host_.invalidated(false, req.did, 0, whole);
        break;
    case Granularity::Selective: {
        // Leaf entries are dropped either way; without IH the domain's
        // cached paging-structure entries go too (see iotlb.hpp).
        uint64_t pages = uint64_t{1} << req.am;
        stats_.add(Counter::IotlbPage);
        stats_.add(Counter::IotlbPagesInvalidated, pages);
        stats_.add(req.addr >> 32 ? Counter::PagesInvalidatedAbove4G
                                  : Counter::PagesInvalidatedBelow4G,
                   pages);
        if (DomainStats *ds = stats_.find_domain(req.did))
            ds->inv_page.fetch_add(1, std::memory_order_relaxed);
        bool as_domain = false;
        // The IOTLB's sets load while the classifying walk reads the
        // guest's tables (neither depends on the other).
        iotlb_.prefetch_pages(req.did, req.addr);
        classify_pages(req.did, req.addr, pages);
        dropped = iotlb_.invalidate_pages(req.did, req.addr, pages, req.ih, as_domain, &probes);
        if (as_domain)
            stats_.add(Counter::IotlbPageAsDomain);
        last_pages_as_domain_ = as_domain;
        translations_changed();
        host_.invalidated(false, req.did, req.addr, pages << PAGE_SHIFT);
        break;
    }
    case Granularity::Invalid:
        return 0;
    }
    stats_.add(Counter::IotlbEntriesDropped, dropped);
    host_.event([&] {
        return ev::iotlb_invalidation(queue_.enabled(), req.granularity, req.did, req.addr, req.am,
                                      req.ih, dropped);
    });
    return probes;
}

// A page-selective invalidation follows a map (caching mode) or an unmap.
// Tell them apart by whether the range's first page is mapped now.  Only
// for domains with statistics: the page tables are known from a context.
void Engine::classify_pages(uint16_t did, uint64_t addr, uint64_t pages)
{
    DomainStats *found = stats_.find_domain(did);
    if (!found)
        return;
    DomainStats &ds = *found;
    Context ctx;
    ctx.levels = ds.levels.load(std::memory_order_relaxed);
    ctx.slptptr = ds.slptptr.load(std::memory_order_relaxed);
    ctx.did = did;
    if (ctx.levels < 3)
        return;  // never translated through: nothing to compare against
    bool mapped = walk_address(host_, f_, ctx, addr, VTD_PERM_NONE).fault == VTD_FR_NONE;
    stats_.add(mapped ? Counter::PagesMapped : Counter::PagesUnmapped, pages);
    (mapped ? ds.pages_mapped : ds.pages_unmapped).fetch_add(pages, std::memory_order_relaxed);
}

void Engine::count_notify(VtdNotifyKind kind, uint64_t events)
{
    switch (kind) {
    case VTD_NOTIFY_UNMAP:
        stats_.add(Counter::NotifyUnmap, events);
        return;
    case VTD_NOTIFY_MAP:
        stats_.add(Counter::NotifyMap, events);
        return;
    case VTD_NOTIFY_DEVIOTLB_UNMAP:
        stats_.add(Counter::NotifyDeviotlbUnmap, events);
        return;
    }
}

std::string Engine::stats_json()
{
    return stats_.to_json({f_.aw_bits, f_.caching_mode, iotlb_.capacity(), iotlb_.size(),
                           contexts_.capacity(), contexts_.size(), f_.fault_records, f_.intremap,
                           f_.eim, ir_.cache_capacity(), ir_.cache_size()});
}

}  // namespace viommu::vtd
