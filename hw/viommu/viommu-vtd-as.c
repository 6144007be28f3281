/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: one address space per PCI device, translate, the IOMMU
 * notifiers (vhost, VFIO) and the invalidations pending for them.
 *
 * A device's address space holds the IOMMU region while DMA remapping is
 * on and its context is not pass-through, and an alias of system memory
 * (nodmar) otherwise; the interrupt window is never remapped.
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "exec/address-spaces.h"
#include "viommu-vtd-internal.h"
#include "trace.h"

typedef struct ViommuVtdKey {
    PCIBus *bus;
    int devfn;
} ViommuVtdKey;

static inline const char *viommu_vtd_name(ViommuVtdAS *vas)
{
    return memory_region_name(MEMORY_REGION(&vas->iommu));
}

/* Pending invalidations */

/*
 * The invalidation that stands for all others of its kind, once a list
 * overflows or the engine reports a global one: every domain, every
 * source-id, every address.
 */
static const ViommuVtdInv viommu_vtd_inv_everything = {
    .all_domains = true, .mask = 0xffff, .first = 0, .last = HWADDR_MAX,
};

static void viommu_vtd_pending_add(ViommuVtdPending *p, bool all,
                                   const ViommuVtdInv *inv)
{
    if (p->all) {
        return;
    }
    if (all || p->n == VIOMMU_VTD_PENDING_MAX) {
        p->all = true;
        return;
    }
    p->inv[p->n++] = *inv;
}

/* The pending invalidations of one kind, in *inv; returns how many. */
static unsigned viommu_vtd_pending_get(const ViommuVtdPending *p,
                                       const ViommuVtdInv **inv)
{
    if (p->all) {
        *inv = &viommu_vtd_inv_everything;
        return 1;
    }
    *inv = p->inv;
    return p->n;
}

static bool viommu_vtd_inv_sid_match(const ViommuVtdInv *inv, uint16_t sid)
{
    uint16_t keep = ~inv->mask;

    return (sid & keep) == (inv->id & keep);
}

/* An IOTLB invalidation concerns an address space last seen in domain d
 * (-1: not known yet). */
static bool viommu_vtd_inv_domain_match(const ViommuVtdInv *inv, int32_t d)
{
    return inv->all_domains || d < 0 || d == inv->id;
}

void viommu_vtd_invalidated(void *opaque, bool all_domains,
                            uint16_t domain_id, uint64_t iova, uint64_t size)
{
    ViommuVtdState *s = opaque;
    ViommuVtdInv inv = { .all_domains = all_domains, .id = domain_id };

    trace_viommu_vtd_invalidated(all_domains, domain_id, iova, size);
    if (QLIST_EMPTY(&s->notified)) {
        return;
    }
    if (size == 0 || iova + size - 1 < iova) {
        inv.first = 0;
        inv.last = HWADDR_MAX;
    } else {
        inv.first = iova;
        inv.last = iova + size - 1;
    }
    viommu_vtd_pending_add(&s->pending[VIOMMU_VTD_INV_IOTLB], false, &inv);
}

void viommu_vtd_context_invalidated(void *opaque, bool all, uint16_t sid,
                                    uint16_t mask)
{
    ViommuVtdState *s = opaque;
    ViommuVtdInv inv = { .id = sid, .mask = mask };

    trace_viommu_vtd_context_invalidated(all, sid, mask);
    viommu_vtd_pending_add(&s->pending[VIOMMU_VTD_INV_CONTEXT], all, &inv);
}

void viommu_vtd_pasid_cache_invalidated(void *opaque, uint8_t granularity,
                                        uint16_t domain_id, uint32_t pasid)
{
    ViommuVtdState *s = opaque;
    ViommuVtdInv inv = {
        .all_domains = granularity == VTD_GRAN_GLOBAL,
        .all_pasids = granularity != VTD_GRAN_SELECTIVE,
        .id = domain_id,
        .pasid = pasid,
    };

    trace_viommu_vtd_pasid_cache_invalidated(granularity, domain_id, pasid);
    viommu_vtd_pending_add(&s->pending[VIOMMU_VTD_INV_PASID_CACHE], false,
                           &inv);
}

void viommu_vtd_device_iotlb_invalidated(void *opaque, uint16_t sid,
                                         uint16_t pfsid, uint8_t mip,
                                         uint64_t first, uint64_t last)
{
    ViommuVtdState *s = opaque;
    ViommuVtdInv inv = { .id = sid, .first = first, .last = last };

    trace_viommu_vtd_device_iotlb_invalidated(sid, pfsid, mip, first, last);
    if (QLIST_EMPTY(&s->notified)) {
        return;
    }
    viommu_vtd_pending_add(&s->pending[VIOMMU_VTD_INV_DEVICE_IOTLB], false,
                           &inv);
}

/* IOMMU notifiers */

static void viommu_vtd_notify_unmap(ViommuVtdAS *vas, IOMMUNotifier *n,
                                    hwaddr first, hwaddr last)
{
    IOMMUTLBEvent ev = {
        .type = n->notifier_flags & IOMMU_NOTIFIER_UNMAP ?
                IOMMU_NOTIFIER_UNMAP : IOMMU_NOTIFIER_DEVIOTLB_UNMAP,
        .entry.target_as = &address_space_memory,
        .entry.perm = IOMMU_NONE,
    };

    first = MAX(first, n->start);
    last = MIN(last, n->end);
    if (first > last) {
        return;
    }
    ev.entry.iova = first;
    ev.entry.addr_mask = last - first;
    trace_viommu_vtd_notify_unmap(viommu_vtd_name(vas), ev.type, first,
                                  last - first);
    memory_region_notify_iommu_one(n, &ev);
    vtd_engine_count_notify(vas->s->engine,
                            ev.type == IOMMU_NOTIFIER_UNMAP ?
                            VTD_NOTIFY_UNMAP : VTD_NOTIFY_DEVIOTLB_UNMAP, 1);
}

typedef struct ViommuVtdWalk {
    ViommuVtdAS *vas;
    IOMMUNotifier *n;
    hwaddr first, last;
} ViommuVtdWalk;

/* MAP a leaf, cropped to the notifier's window in power-of-two pieces. */
static void viommu_vtd_walk_map(void *opaque, const VtdTranslation *t)
{
    ViommuVtdWalk *w = opaque;
    IOMMUTLBEvent ev = {
        .type = IOMMU_NOTIFIER_MAP,
        .entry.target_as = &address_space_memory,
        .entry.perm = t->perm & IOMMU_RW,
    };
    hwaddr a = MAX(t->iova_base, w->first);
    hwaddr b = MIN(t->iova_base + t->addr_mask, w->last);

    if (ev.entry.perm == IOMMU_NONE) {
        return;
    }
    while (a <= b) {
        hwaddr size = a ? a & -a : 1ULL << 63;

        while (size - 1 > b - a) {
            size >>= 1;
        }
        ev.entry.iova = a;
        ev.entry.translated_addr = t->phys_base + (a - t->iova_base);
        ev.entry.addr_mask = size - 1;
        trace_viommu_vtd_notify_map(viommu_vtd_name(w->vas), a,
                                    ev.entry.translated_addr, size - 1,
                                    ev.entry.perm);
        memory_region_notify_iommu_one(w->n, &ev);
        vtd_engine_count_notify(w->vas->s->engine, VTD_NOTIFY_MAP, 1);
        if (b - a == size - 1) {
            break;
        }
        a += size;
    }
}

/*
 * MAP notifiers (VFIO) mirror the guest's tables into the host's, and a
 * host mapping that is unmapped and mapped again faults the assigned
 * device's DMA in between.  So the leaves the MAP notifiers were told are
 * kept, and an invalidated range is brought in line by difference: a leaf
 * the tables no longer hold, or hold otherwise, is unmapped, a new one
 * mapped, and one they hold unchanged left alone.  Every MAP notifier of
 * an address space is told the same leaves, each cropped to its window.
 */
typedef struct ViommuVtdMapped {
    IntervalTreeNode node;          /* the leaf's IOVAs */
    hwaddr phys;
    IOMMUAccessFlags perm;
} ViommuVtdMapped;

/*
 * The guest decides how many leaves its tables declare (tables that share
 * lower levels declare 2^27 from four pages), so the leaves kept for MAP
 * notifiers are bounded, unit-wide: about 80 MiB of host memory.  A leaf
 * past the limit is not told (the assigned device's DMA there faults),
 * as VFIO itself refuses mappings past its dma_entry_limit (65535 by
 * default).  A walk collects no more than the limit either.
 */
#define VIOMMU_VTD_MAPPED_MAX (1u << 20)

static void viommu_vtd_map_notifiers(ViommuVtdAS *vas, IOMMUNotifier *only,
                                     const VtdTranslation *t)
{
    IOMMUNotifier *n;

    IOMMU_NOTIFIER_FOREACH(n, &vas->iommu) {
        if ((n->notifier_flags & IOMMU_NOTIFIER_MAP) && (!only || n == only)) {
            ViommuVtdWalk w = { .vas = vas, .n = n, .first = n->start,
                                .last = n->end };

            viommu_vtd_walk_map(&w, t);
        }
    }
}

/* UNMAP [first, last] from the notifiers that take `flag` events. */
static void viommu_vtd_unmap_notifiers(ViommuVtdAS *vas,
                                       IOMMUNotifierFlag flag, hwaddr first,
                                       hwaddr last)
{
    IOMMUNotifier *n;

    IOMMU_NOTIFIER_FOREACH(n, &vas->iommu) {
        if (n->notifier_flags & flag) {
            viommu_vtd_notify_unmap(vas, n, first, last);
        }
    }
}

static VtdTranslation viommu_vtd_mapped_leaf(const ViommuVtdMapped *m)
{
    return (VtdTranslation) {
        .iova_base = m->node.start,
        .phys_base = m->phys,
        .addr_mask = m->node.last - m->node.start,
        .perm = m->perm,
    };
}

/* Forget every leaf told: the MAP notifiers were told to unmap them. */
static void viommu_vtd_mapped_clear(ViommuVtdAS *vas)
{
    IntervalTreeNode *node;

    while ((node = interval_tree_iter_first(&vas->mapped, 0, UINT64_MAX))) {
        interval_tree_remove(node, &vas->mapped);
        g_free(container_of(node, ViommuVtdMapped, node));
        vas->s->mapped_leaves--;
    }
    vas->mapped_valid = false;
}

typedef struct ViommuVtdCollect {
    GArray *leaves;
    bool full;                      /* more leaves than the limit */
} ViommuVtdCollect;

static void viommu_vtd_collect_leaf(void *opaque, const VtdTranslation *t)
{
    ViommuVtdCollect *c = opaque;

    if (!(t->perm & IOMMU_RW)) {
        return;
    }
    if (c->leaves->len >= VIOMMU_VTD_MAPPED_MAX) {
        c->full = true;
        return;
    }
    g_array_append_val(c->leaves, *t);
}

static gint viommu_vtd_leaf_cmp(gconstpointer a, gconstpointer b)
{
    const VtdTranslation *x = a, *y = b;

    return x->iova_base < y->iova_base ? -1 : x->iova_base > y->iova_base;
}

typedef struct ViommuVtdRamLeaves {
    GArray *leaves;
    hwaddr first, last;
} ViommuVtdRamLeaves;

/* Guest RAM (and ROM, read-only) in [first, last] as identity leaves. */
static bool viommu_vtd_ram_leaf(Int128 start, Int128 len,
                                const MemoryRegion *mr, hwaddr offset,
                                void *opaque)
{
    ViommuVtdRamLeaves *r = opaque;
    hwaddr a = int128_get64(start);
    hwaddr b = int128_get64(int128_sub(int128_add(start, len), int128_one()));

    if (memory_region_is_ram((MemoryRegion *)mr) && a <= r->last &&
        b >= r->first) {
        VtdTranslation t;

        a = MAX(a, r->first);
        b = MIN(b, r->last);
        t = (VtdTranslation) {
            .iova_base = a, .phys_base = a, .addr_mask = b - a,
            .perm = mr->readonly || memory_region_is_romd((MemoryRegion *)mr) ?
                    VTD_PERM_READ : VTD_PERM_RW,
        };
        g_array_append_val(r->leaves, t);
    }
    return false;
}

/*
 * The guest's leaves over [first, last], sorted by IOVA.  A pass-through
 * context (one that keeps the IOMMU region in use: x-pasid-mode=on) maps
 * guest RAM one to one, so that is what its MAP notifiers are told.
 * *known is false when a walk that ran out of its entry budget (looping
 * or shared tables) reported nothing; otherwise the leaves are all there
 * are over [first, *known_last].
 */
static GArray *viommu_vtd_walk_leaves(ViommuVtdAS *vas, hwaddr first,
                                      hwaddr last, bool *known,
                                      hwaddr *known_last)
{
    GArray *leaves = g_array_new(false, false, sizeof(VtdTranslation));
    ViommuVtdCollect collect = { .leaves = leaves };
    uint16_t sid = viommu_vtd_sid(vas);
    VtdDeviceContext c;
    int ret;

    *known = true;
    *known_last = last;
    if (vtd_engine_device_context(vas->s->engine, sid, &c) &&
        c.fault == VTD_FR_NONE && c.pass_through) {
        ViommuVtdRamLeaves r = { .leaves = leaves, .first = first,
                                 .last = last };

        RCU_READ_LOCK_GUARD();
        flatview_for_each_range(address_space_to_flatview(&address_space_memory),
                                viommu_vtd_ram_leaf, &r);
        trace_viommu_vtd_replay_pass_through(viommu_vtd_name(vas), sid, first,
                                             last, leaves->len);
        return leaves;
    }
    ret = vtd_engine_walk(vas->s->engine, sid, first, last + 1,
                          viommu_vtd_collect_leaf, &collect);
    trace_viommu_vtd_replay(viommu_vtd_name(vas), sid, first, last, ret);
    g_array_sort(leaves, viommu_vtd_leaf_cmp);
    /* leaves come in IOVA order: those collected are all up to the last */
    if (ret == VTD_WALK_TRUNCATED || (ret == 0 && collect.full)) {
        const VtdTranslation *t;

        *known = leaves->len > 0;
        if (*known) {
            t = &g_array_index(leaves, VtdTranslation, leaves->len - 1);
            *known_last = MIN(last, t->iova_base + t->addr_mask);
        }
    }
    return leaves;
}

static bool viommu_vtd_same_leaf(const ViommuVtdMapped *m,
                                 const VtdTranslation *t)
{
    return m->node.start == t->iova_base &&
           m->node.last == t->iova_base + t->addr_mask &&
           m->phys == t->phys_base && m->perm == (t->perm & IOMMU_RW);
}

/* Bring the MAP notifiers in line with the tables over [first, last]. */
static void viommu_vtd_sync_mapped(ViommuVtdAS *vas, hwaddr first,
                                   hwaddr last)
{
    g_autoptr(GPtrArray) stale = g_ptr_array_new();
    g_autoptr(GArray) leaves = NULL;
    IntervalTreeNode *node;
    hwaddr lo = first, hi = last, known_last;
    bool known;
    unsigned over = 0;

    /* whole leaves: those told that overlap the range are walked again */
    for (node = interval_tree_iter_first(&vas->mapped, first, last); node;
         node = interval_tree_iter_next(node, first, last)) {
        lo = MIN(lo, node->start);
        hi = MAX(hi, node->last);
    }
    leaves = viommu_vtd_walk_leaves(vas, lo, hi, &known, &known_last);
    /*
     * A walk cut short says nothing past its last leaf: what was told
     * there stays (a looping table only keeps the guest's own stale
     * mappings; a table too large for the budget keeps its good ones).
     */
    if (!known) {
        trace_viommu_vtd_replay_kept(viommu_vtd_name(vas), lo, hi);
        return;
    }
    if (known_last < hi) {
        trace_viommu_vtd_replay_kept(viommu_vtd_name(vas), known_last + 1, hi);
        hi = known_last;
    }
    for (node = interval_tree_iter_first(&vas->mapped, lo, hi); node;
         node = interval_tree_iter_next(node, lo, hi)) {
        ViommuVtdMapped *m = container_of(node, ViommuVtdMapped, node);
        VtdTranslation key = { .iova_base = node->start };
        guint at;

        if (!g_array_binary_search(leaves, &key, viommu_vtd_leaf_cmp, &at) ||
            !viommu_vtd_same_leaf(m, &g_array_index(leaves, VtdTranslation,
                                                    at))) {
            g_ptr_array_add(stale, m);
        }
    }
    for (guint i = 0; i < stale->len; i++) {
        ViommuVtdMapped *m = g_ptr_array_index(stale, i);

        viommu_vtd_unmap_notifiers(vas, IOMMU_NOTIFIER_MAP, m->node.start,
                                   m->node.last);
        interval_tree_remove(&m->node, &vas->mapped);
        g_free(m);
        vas->s->mapped_leaves--;
    }
    for (guint i = 0; i < leaves->len; i++) {
        const VtdTranslation *t = &g_array_index(leaves, VtdTranslation, i);
        hwaddr t_last = t->iova_base + t->addr_mask;
        ViommuVtdMapped *m;

        if (interval_tree_iter_first(&vas->mapped, t->iova_base, t_last)) {
            continue;   /* told already, unchanged (what changed went above) */
        }
        if (vas->s->mapped_leaves >= VIOMMU_VTD_MAPPED_MAX) {
            over++;
            continue;
        }
        vas->s->mapped_leaves++;
        m = g_new0(ViommuVtdMapped, 1);
        m->node.start = t->iova_base;
        m->node.last = t_last;
        m->phys = t->phys_base;
        m->perm = t->perm & IOMMU_RW;
        interval_tree_insert(&m->node, &vas->mapped);
        viommu_vtd_map_notifiers(vas, NULL, t);
    }
    if (over) {
        trace_viommu_vtd_notify_map_over_limit(viommu_vtd_name(vas), lo, hi,
                                               over);
        error_report_once("viommu-vtd: %s: the guest's tables hold more than "
                          "%u leaves for MAP notifiers (device assignment); "
                          "those past the limit are not mapped",
                          viommu_vtd_name(vas), VIOMMU_VTD_MAPPED_MAX);
    }
}

/*
 * A new MAP notifier is told what the others were (those are what the
 * unit holds: a leaf the guest has not invalidated yet is not), or, as the
 * first, what the tables hold.
 */
static void viommu_vtd_replay_mapped(ViommuVtdAS *vas, IOMMUNotifier *n)
{
    IntervalTreeNode *node;

    if (!vas->mapped_valid) {
        viommu_vtd_mapped_clear(vas);
        vas->mapped_valid = true;
        viommu_vtd_sync_mapped(vas, 0, viommu_vtd_limit(vas->s));
        return;
    }
    for (node = interval_tree_iter_first(&vas->mapped, 0, UINT64_MAX); node;
         node = interval_tree_iter_next(node, 0, UINT64_MAX)) {
        VtdTranslation t =
            viommu_vtd_mapped_leaf(container_of(node, ViommuVtdMapped, node));

        viommu_vtd_map_notifiers(vas, n, &t);
    }
}

/*
 * An IOTLB invalidation reaches the UNMAP and MAP notifiers: UNMAP-only
 * ones (vhost's IOTLB) drop the whole range, MAP ones are brought in line
 * with the tables.  A device whose notifier takes DEVIOTLB_UNMAP events
 * instead (vhost once the guest enabled ATS on it) caches translations in
 * its own device-TLB, which only device-IOTLB invalidations address
 * (viommu_vtd_process_pending()).
 */
static void viommu_vtd_sync_as(ViommuVtdAS *vas, hwaddr first, hwaddr last)
{
    IOMMUNotifier *n;

    last = MIN(last, viommu_vtd_limit(vas->s));
    IOMMU_NOTIFIER_FOREACH(n, &vas->iommu) {
        if ((n->notifier_flags & IOMMU_NOTIFIER_IOTLB_EVENTS) ==
            IOMMU_NOTIFIER_UNMAP) {
            viommu_vtd_notify_unmap(vas, n, first, last);
        }
    }
    if ((vas->notifier_flags & IOMMU_NOTIFIER_MAP) && vas->mapped_valid &&
        !vas->bypass) {
        viommu_vtd_sync_mapped(vas, first, last);
    }
}

/* Every notifier drops everything it learned. */
static void viommu_vtd_unmap_all(ViommuVtdAS *vas)
{
    IOMMUNotifier *n;

    IOMMU_NOTIFIER_FOREACH(n, &vas->iommu) {
        viommu_vtd_notify_unmap(vas, n, 0, viommu_vtd_limit(vas->s));
    }
    viommu_vtd_mapped_clear(vas);
}


/*
 * The device behind an address space, for messages: its QOM path (bus
 * numbers are the guest's to assign, so they may not tell devices apart
 * yet) and where it sits.
 */
static char *viommu_vtd_device_desc(ViommuVtdAS *vas)
{
    PCIDevice *dev = vas->bus ? vas->bus->devices[vas->devfn] : NULL;
    g_autofree char *path = dev ? object_get_canonical_path(OBJECT(dev)) : NULL;

    return g_strdup_printf("%s (%02x:%02x.%x)", path ? path : "device",
                           vas->bus ? pci_bus_num(vas->bus) : 0,
                           PCI_SLOT(vas->devfn), PCI_FUNC(vas->devfn));
}

static int viommu_vtd_notify_flag_changed(IOMMUMemoryRegion *iommu,
                                          IOMMUNotifierFlag old_flags,
                                          IOMMUNotifierFlag new_flags,
                                          Error **errp)
{
    ViommuVtdAS *vas = container_of(iommu, ViommuVtdAS, iommu);

    if ((new_flags & IOMMU_NOTIFIER_DEVIOTLB_UNMAP) &&
        !X86_IOMMU_DEVICE(vas->s)->dt_supported) {
        g_autofree char *desc = viommu_vtd_device_desc(vas);

        error_setg(errp, "viommu-vtd: %s needs device-IOTLB notifications; "
                   "start viommu-vtd with device-iotlb=on", desc);
        return -EINVAL;
    }
    if ((new_flags & IOMMU_NOTIFIER_MAP) && !vas->s->parent_obj.caching_mode) {
        g_autofree char *desc = viommu_vtd_device_desc(vas);

        error_setg(errp, "viommu-vtd: %s needs MAP notifications (device "
                   "assignment); start viommu-vtd with caching-mode=on", desc);
        return -EINVAL;
    }
    /*
     * A MAP notifier mirrors the guest's tables into the host's (VFIO):
     * the replay walk (vtd_engine_walk()) follows RID_PASID's entry of any
     * PGTT, first-stage and nested tables as the combined translation.
     */
    trace_viommu_vtd_notify_flag_changed(viommu_vtd_name(vas), old_flags,
                                         new_flags);
    if (old_flags == IOMMU_NOTIFIER_NONE && new_flags != IOMMU_NOTIFIER_NONE) {
        QLIST_INSERT_HEAD(&vas->s->notified, vas, next);
    } else if (old_flags != IOMMU_NOTIFIER_NONE &&
               new_flags == IOMMU_NOTIFIER_NONE) {
        QLIST_REMOVE(vas, next);
    }
    vas->notifier_flags = new_flags;
    if (!(new_flags & IOMMU_NOTIFIER_MAP)) {
        viommu_vtd_mapped_clear(vas);  /* no one left to remember for */
    }
    return 0;
}

static void viommu_vtd_replay(IOMMUMemoryRegion *iommu, IOMMUNotifier *n)
{
    ViommuVtdAS *vas = container_of(iommu, ViommuVtdAS, iommu);

    if (vas->bypass) {
        return;
    }
    if (n->notifier_flags & IOMMU_NOTIFIER_MAP) {
        viommu_vtd_replay_mapped(vas, n);
    } else {
        viommu_vtd_notify_unmap(vas, n, 0, viommu_vtd_limit(vas->s));
    }
}

/* Address spaces */

/*
 * File the address space under what its RID_PASID entry was found to be
 * (ViommuVtdCtxKind), for the PASID-cache invalidations to come.
 */
static void viommu_vtd_as_set_ctx(ViommuVtdAS *vas, bool have,
                                  const VtdDeviceContext *c)
{
    ViommuVtdState *s = vas->s;
    ViommuVtdCtxKind kind = VIOMMU_VTD_CTX_NONE;
    ViommuVtdDomainSpaces *d;
    gpointer key;

    if (have && c->scalable && c->fault == VTD_FR_NONE) {
        kind = VIOMMU_VTD_CTX_PASID_ENTRY;
    } else if (have && c->scalable && c->pasid_entry_fault) {
        kind = VIOMMU_VTD_CTX_PASID_FAULT;
    }
    if (kind == vas->ctx_kind && (kind != VIOMMU_VTD_CTX_PASID_ENTRY ||
                                  vas->ctx_did == c->did)) {
        vas->ctx_pasid = c->pasid;
        return;
    }
    if (vas->ctx_kind != VIOMMU_VTD_CTX_NONE) {
        QLIST_REMOVE(vas, ctx_next);
    }
    if (vas->ctx_kind == VIOMMU_VTD_CTX_PASID_ENTRY) {
        key = GUINT_TO_POINTER(vas->ctx_did);
        d = g_hash_table_lookup(s->by_domain, key);
        if (QLIST_EMPTY(&d->spaces)) {
            g_hash_table_remove(s->by_domain, key);
        }
    }
    vas->ctx_kind = kind;
    if (kind == VIOMMU_VTD_CTX_PASID_ENTRY) {
        vas->ctx_did = c->did;
        vas->ctx_pasid = c->pasid;
        key = GUINT_TO_POINTER(c->did);
        d = g_hash_table_lookup(s->by_domain, key);
        if (!d) {
            d = g_new0(ViommuVtdDomainSpaces, 1);
            QLIST_INIT(&d->spaces);
            g_hash_table_insert(s->by_domain, key, d);
        }
        QLIST_INSERT_HEAD(&d->spaces, vas, ctx_next);
    } else if (kind == VIOMMU_VTD_CTX_PASID_FAULT) {
        QLIST_INSERT_HEAD(&s->pasid_faulted, vas, ctx_next);
    }
}

/*
 * A device bypasses the IOMMU region while remapping is off or its context
 * is pass-through.  A context only stops being pass-through after a context
 * cache invalidation or (scalable mode) a PASID-cache invalidation of its
 * RID_PASID entry, which re-evaluate this.  With PASIDs
 * (x-pasid-mode=on) a pass-through RID_PASID says nothing about the
 * device's requests with PASID, which the IOMMU region must see: such a
 * device bypasses only while remapping is off.
 */
static void viommu_vtd_as_refresh(ViommuVtdAS *vas)
{
    ViommuVtdState *s = vas->s;
    uint16_t sid = viommu_vtd_sid(vas);
    VtdDeviceContext c = { 0 };
    bool have = s->dmar_enabled &&
                vtd_engine_device_context(s->engine, sid, &c);
    bool bypass = !s->dmar_enabled ||
                  (!s->parent_obj.pasid && have && c.fault == VTD_FR_NONE &&
                   c.pass_through);

    vas->mark = s->mark;
    viommu_vtd_as_set_ctx(vas, have, &c);
    trace_viommu_vtd_as_refresh(sid, vas->ctx_kind, vas->ctx_did,
                                vas->ctx_pasid, bypass);
    qatomic_set(&vas->domain, -1);
    /*
     * What a notifier learned under the old context may be stale.  A
     * region going out of use drops it all; one that stays in use drops it
     * for UNMAP-only notifiers and brings MAP notifiers in line with the
     * tables.  A region coming into use gets its notifiers (and their
     * replay) from the memory listeners that register them.
     */
    if (vas->notifier_flags && bypass) {
        viommu_vtd_unmap_all(vas);
    } else if (vas->notifier_flags && !vas->bypass) {
        viommu_vtd_sync_as(vas, 0, viommu_vtd_limit(s));
    }
    if (bypass != vas->bypass) {
        trace_viommu_vtd_switch_as(sid, bypass);
        memory_region_transaction_begin();
        memory_region_set_enabled(MEMORY_REGION(&vas->iommu), !bypass);
        memory_region_set_enabled(&vas->nodmar, bypass);
        vas->bypass = bypass;
        memory_region_transaction_commit();
    }
}

static void viommu_vtd_refresh_all(ViommuVtdState *s)
{
    GHashTableIter it;
    ViommuVtdAS *vas;

    g_hash_table_iter_init(&it, s->spaces);
    while (g_hash_table_iter_next(&it, NULL, (void **)&vas)) {
        viommu_vtd_as_refresh(vas);
    }
}

/* Add vas to a once unless this round of pending work saw it already. */
static void viommu_vtd_collect(GPtrArray *a, ViommuVtdAS *vas)
{
    if (vas->mark != vas->s->mark) {
        vas->mark = vas->s->mark;
        g_ptr_array_add(a, vas);
    }
}

/*
 * The address spaces a PASID-cache invalidation can change: those whose
 * RID_PASID entry was in its domain (and, PASID-selective, was that
 * PASID), or in any domain for a global one, and those whose RID_PASID
 * entry was unusable (software names the new entry's domain after making
 * a not-present entry present, under caching mode).  A scalable-mode
 * context entry names no domain, and PASID-cache invalidations do not
 * cover it: devices whose context entry was unusable stay as they are,
 * and legacy-mode contexts too.
 */
static void viommu_vtd_pasid_cache_affected(ViommuVtdState *s,
                                            const ViommuVtdInv *inv,
                                            GPtrArray *a)
{
    ViommuVtdDomainSpaces *d;
    ViommuVtdAS *vas;

    QLIST_FOREACH(vas, &s->pasid_faulted, ctx_next) {
        viommu_vtd_collect(a, vas);
    }
    if (inv->all_domains) {
        GHashTableIter it;

        g_hash_table_iter_init(&it, s->by_domain);
        while (g_hash_table_iter_next(&it, NULL, (void **)&d)) {
            QLIST_FOREACH(vas, &d->spaces, ctx_next) {
                viommu_vtd_collect(a, vas);
            }
        }
        return;
    }
    d = g_hash_table_lookup(s->by_domain, GUINT_TO_POINTER(inv->id));
    if (!d) {
        return;
    }
    QLIST_FOREACH(vas, &d->spaces, ctx_next) {
        if (inv->all_pasids || vas->ctx_pasid == inv->pasid) {
            viommu_vtd_collect(a, vas);
        }
    }
}

/*
 * Act on what the engine reported: a change of the translation-enable
 * state, a context invalidation or a PASID-cache invalidation re-decides
 * which address spaces bypass the IOMMU region (those it selects); IOTLB
 * and device-IOTLB invalidations reach the notifiers of the address spaces
 * they select.
 */
void viommu_vtd_process_pending(ViommuVtdState *s)
{
    bool enabled = vtd_engine_translation_enabled(s->engine);
    ViommuVtdPending *ctx = &s->pending[VIOMMU_VTD_INV_CONTEXT];
    const ViommuVtdInv *inv;
    ViommuVtdAS *vas;
    unsigned i, n;

    s->mark++;
    if (enabled != s->dmar_enabled || ctx->all) {
        if (enabled != s->dmar_enabled) {
            trace_viommu_vtd_translation_enabled(enabled);
        }
        s->dmar_enabled = enabled;
        viommu_vtd_refresh_all(s);
    } else {
        g_autoptr(GPtrArray) a = g_ptr_array_new();

        if (ctx->n) {
            GHashTableIter it;

            g_hash_table_iter_init(&it, s->spaces);
            while (g_hash_table_iter_next(&it, NULL, (void **)&vas)) {
                uint16_t sid = viommu_vtd_sid(vas);

                for (i = 0; i < ctx->n; i++) {
                    if (viommu_vtd_inv_sid_match(&ctx->inv[i], sid)) {
                        viommu_vtd_collect(a, vas);
                        break;
                    }
                }
            }
        }
        n = viommu_vtd_pending_get(&s->pending[VIOMMU_VTD_INV_PASID_CACHE],
                                   &inv);
        for (i = 0; s->dmar_enabled && i < n; i++) {
            viommu_vtd_pasid_cache_affected(s, &inv[i], a);
        }
        /* refreshing moves address spaces between the lists walked above */
        for (i = 0; i < a->len; i++) {
            viommu_vtd_as_refresh(g_ptr_array_index(a, i));
        }
    }

    /*
     * Each address space once per range that concerns it, or once in all
     * when one of them is its whole space (a domain-selective or global
     * invalidation subsumes the rest: a guest's queue of them costs one
     * walk, not one per descriptor).
     */
    n = viommu_vtd_pending_get(&s->pending[VIOMMU_VTD_INV_IOTLB], &inv);
    QLIST_FOREACH(vas, &s->notified, next) {
        int32_t d = qatomic_read(&vas->domain);
        bool whole = false;

        if (vas->bypass) {
            continue;
        }
        for (i = 0; i < n && !whole; i++) {
            whole = viommu_vtd_inv_domain_match(&inv[i], d) &&
                    inv[i].first == 0 && inv[i].last >= viommu_vtd_limit(s);
        }
        for (i = 0; i < n; i++) {
            if (!viommu_vtd_inv_domain_match(&inv[i], d)) {
                continue;
            }
            viommu_vtd_sync_as(vas, whole ? 0 : inv[i].first,
                               whole ? HWADDR_MAX : inv[i].last);
            if (whole) {
                break;
            }
        }
    }

    n = viommu_vtd_pending_get(&s->pending[VIOMMU_VTD_INV_DEVICE_IOTLB], &inv);
    for (i = 0; i < n; i++) {
        QLIST_FOREACH(vas, &s->notified, next) {
            if (viommu_vtd_inv_sid_match(&inv[i], viommu_vtd_sid(vas))) {
                /* DEVIOTLB_UNMAP of exactly its range */
                viommu_vtd_unmap_notifiers(vas, IOMMU_NOTIFIER_DEVIOTLB_UNMAP,
                                           inv[i].first, inv[i].last);
            }
        }
    }
    memset(s->pending, 0, sizeof(s->pending));
    viommu_vtd_ir_process_pending(s);
}

/*
 * Forget what was pending and bring every address space in line with the
 * engine's state (after a reset or an incoming migration).
 */
void viommu_vtd_resync(ViommuVtdState *s)
{
    memset(s->pending, 0, sizeof(s->pending));
    s->pending[VIOMMU_VTD_INV_CONTEXT].all = true;
    if (s->intremap) {
        viommu_vtd_interrupts_invalidated(s, true, 0, 0);
    }
    viommu_vtd_process_pending(s);
}

/*
 * Requests with PASID.  QEMU 10.0's PCI layer looks address spaces up by
 * requester-id only (PCIIOMMUOps.get_address_space has no PASID), so a
 * device tags each access instead: MemTxAttrs.pid holds the PASID (8 bits,
 * as the RISC-V IOMMU reads it) and MemTxAttrs.user is clear for a
 * privileged request.  The memory core turns the attributes into the
 * index it passes to translate: 0 for a request without PASID (unspecified
 * attributes, or pid 0: MSI writes carry a requester-id and nothing else),
 * 2 * pid + privileged otherwise.
 */
#define VIOMMU_VTD_IDX_NO_PASID 0
#define VIOMMU_VTD_IDX_PASIDS   512     /* 2 * 256 */

static int viommu_vtd_attrs_to_index(IOMMUMemoryRegion *iommu,
                                     MemTxAttrs attrs)
{
    if (attrs.unspecified || !attrs.pid) {
        return VIOMMU_VTD_IDX_NO_PASID;
    }
    return attrs.pid * 2 + !attrs.user;
}

static int viommu_vtd_num_indexes(IOMMUMemoryRegion *iommu)
{
    return VIOMMU_VTD_IDX_PASIDS;
}

static IOMMUTLBEntry viommu_vtd_translate(IOMMUMemoryRegion *iommu, hwaddr addr,
                                          IOMMUAccessFlags flag, int iommu_idx)
{
    ViommuVtdAS *vas = container_of(iommu, ViommuVtdAS, iommu);
    uint16_t sid = viommu_vtd_sid(vas);
    VtdTranslation t;
    VtdFaultReason fr;

    if (iommu_idx != VIOMMU_VTD_IDX_NO_PASID) {
        fr = vtd_engine_translate_pasid(vas->s->engine, sid, iommu_idx / 2,
                                        iommu_idx & 1, addr, flag & IOMMU_RW,
                                        flag != IOMMU_NONE, &t);
    } else {
        fr = vtd_engine_translate(vas->s->engine, sid, addr, flag & IOMMU_RW,
                                  flag != IOMMU_NONE, &t);
    }
    if (fr != VTD_FR_NONE) {
        trace_viommu_vtd_translate_fault(sid, addr, flag, fr);
        return (IOMMUTLBEntry) {
            .target_as = &address_space_memory,
            .iova = addr & ~0xfffULL,
            .addr_mask = 0xfff,
            .perm = IOMMU_NONE,
        };
    }
    /* the domain the notifiers follow is RID_PASID's */
    if (iommu_idx == VIOMMU_VTD_IDX_NO_PASID) {
        qatomic_set(&vas->domain, t.domain_id);
    }
    trace_viommu_vtd_translate(sid, addr, t.phys_base, t.addr_mask, t.perm);
    return (IOMMUTLBEntry) {
        .target_as = &address_space_memory,
        .iova = t.iova_base,
        .translated_addr = t.phys_base,
        .addr_mask = t.addr_mask,
        .perm = t.perm & IOMMU_RW,
    };
}

static guint viommu_vtd_key_hash(gconstpointer v)
{
    const ViommuVtdKey *k = v;

    return g_direct_hash(k->bus) ^ k->devfn;
}

static gboolean viommu_vtd_key_equal(gconstpointer a, gconstpointer b)
{
    const ViommuVtdKey *x = a, *y = b;

    return x->bus == y->bus && x->devfn == y->devfn;
}

GHashTable *viommu_vtd_spaces_new(void)
{
    return g_hash_table_new_full(viommu_vtd_key_hash, viommu_vtd_key_equal,
                                 g_free, NULL);
}

/*
 * A new address space, bypassing the IOMMU region until refreshed.  The
 * interrupt window is never remapped as DMA (VT-d 3.14): it holds an alias
 * of system memory (the APIC) without interrupt remapping, and with it the
 * region that hands every write to the engine (viommu-vtd-ir.c).
 */
ViommuVtdAS *viommu_vtd_as_new(ViommuVtdState *s, PCIBus *bus, int devfn,
                               int32_t fixed_sid, const char *name)
{
    ViommuVtdAS *vas = g_new0(ViommuVtdAS, 1);
    g_autofree char *iommu_name = g_strdup_printf("%s-dmar", name);

    vas->s = s;
    vas->bus = bus;
    vas->devfn = devfn;
    vas->domain = -1;
    vas->bypass = true;
    vas->fixed_sid = fixed_sid;

    memory_region_init(&vas->root, OBJECT(s), name, UINT64_MAX);
    memory_region_init_iommu(&vas->iommu, sizeof(vas->iommu),
                             TYPE_VIOMMU_VTD_IOMMU_MEMORY_REGION, OBJECT(s),
                             iommu_name, UINT64_MAX);
    memory_region_init_alias(&vas->nodmar, OBJECT(s), "viommu-vtd-nodmar",
                             get_system_memory(), 0,
                             memory_region_size(get_system_memory()));
    if (s->intremap) {
        viommu_vtd_ir_window_init(vas);
    } else {
        memory_region_init_alias(&vas->msi, OBJECT(s), "viommu-vtd-msi",
                                 get_system_memory(), VIOMMU_VTD_MSI_BASE,
                                 VIOMMU_VTD_MSI_SIZE);
    }
    memory_region_set_enabled(MEMORY_REGION(&vas->iommu), false);
    memory_region_add_subregion_overlap(&vas->root, 0,
                                        MEMORY_REGION(&vas->iommu), 0);
    memory_region_add_subregion_overlap(&vas->root, 0, &vas->nodmar, 0);
    memory_region_add_subregion_overlap(&vas->root, VIOMMU_VTD_MSI_BASE,
                                        &vas->msi, 1);
    address_space_init(&vas->as, &vas->root, name);
    return vas;
}

static AddressSpace *viommu_vtd_get_as(PCIBus *bus, void *opaque, int devfn)
{
    ViommuVtdState *s = opaque;
    ViommuVtdKey key = { .bus = bus, .devfn = devfn };
    ViommuVtdAS *vas = g_hash_table_lookup(s->spaces, &key);
    g_autofree char *name = NULL;

    if (vas) {
        return &vas->as;
    }
    name = g_strdup_printf("viommu-vtd-%02x.%x", PCI_SLOT(devfn),
                           PCI_FUNC(devfn));
    vas = viommu_vtd_as_new(s, bus, devfn,
                            pci_bus_is_root(bus) ?
                            PCI_BUILD_BDF(pci_bus_num(bus), devfn) : -1, name);
    g_hash_table_insert(s->spaces, g_memdup2(&key, sizeof(key)), vas);
    if (s->dmar_enabled) {
        viommu_vtd_as_refresh(vas);
    }
    return &vas->as;
}

/*
 * A bridge's secondary bus is freed with the bridge, and the address
 * spaces of its devices (gone before it) would read it whenever their
 * source-id is asked: forget them when a device with a PCI bus goes.  The
 * bus number can no longer be read then (it is the bridge's config space,
 * freed by its unrealize), so they keep source-id ffff; they stay
 * allocated, as the memory core may still be finishing an access through
 * one of them.  A new bus at the same address gets address spaces of its
 * own.
 */
static void viommu_vtd_bus_removed(ViommuVtdState *s, PCIBus *bus)
{
    const VtdDeviceContext none = { 0 };
    GHashTableIter it;
    gpointer key;
    ViommuVtdAS *vas;

    g_hash_table_iter_init(&it, s->spaces);
    while (g_hash_table_iter_next(&it, &key, (gpointer *)&vas)) {
        if (vas->bus != bus) {
            continue;
        }
        vas->fixed_sid = 0xffff;
        trace_viommu_vtd_as_removed(vas->devfn);
        viommu_vtd_as_set_ctx(vas, false, &none);
        vas->bus = NULL;
        g_hash_table_iter_remove(&it);
    }
}

void viommu_vtd_device_unrealized(DeviceListener *listener, DeviceState *dev)
{
    ViommuVtdState *s = container_of(listener, ViommuVtdState, bridges);
    BusState *bus;

    QLIST_FOREACH(bus, &dev->child_bus, sibling) {
        PCIBus *pci = (PCIBus *)object_dynamic_cast(OBJECT(bus), TYPE_PCI_BUS);

        if (pci) {
            viommu_vtd_bus_removed(s, pci);
        }
    }
}

const PCIIOMMUOps viommu_vtd_pci_ops = {
    .get_address_space = viommu_vtd_get_as,
};

void viommu_vtd_iommu_mr_class_init(ObjectClass *oc, void *data)
{
    IOMMUMemoryRegionClass *imrc = IOMMU_MEMORY_REGION_CLASS(oc);

    imrc->translate = viommu_vtd_translate;
    imrc->attrs_to_index = viommu_vtd_attrs_to_index;
    imrc->num_indexes = viommu_vtd_num_indexes;
    imrc->notify_flag_changed = viommu_vtd_notify_flag_changed;
    imrc->replay = viommu_vtd_replay;
}
