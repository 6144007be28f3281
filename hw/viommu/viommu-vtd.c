/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: a VT-d compatible DMA remapping unit for q35.
 *
 * The architecture (registers, tables, caches, invalidation, faults) lives in
 * the viommu-lab engine behind include/viommu/vtd.h; this file is the QOM
 * glue.  The device subclasses intel-iommu only so that q35 accepts it and
 * the DMAR ACPI table describes it; none of intel-iommu's code runs.
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "exec/address-spaces.h"
#include "hw/i386/pc.h"
#include "hw/pci/pci.h"
#include "hw/pci/pci_bus.h"
#include "hw/pci-host/q35.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "viommu/vtd.h"
#include "viommu-vtd.h"
#include "trace.h"

#define VIOMMU_VTD_MSI_BASE     0xfee00000ULL
#define VIOMMU_VTD_MSI_SIZE     0x100000ULL
#define VIOMMU_VTD_PENDING_MAX  32
#define VIOMMU_VTD_BLOB_MAX     (1 << 20)

typedef struct ViommuVtdAS ViommuVtdAS;

struct ViommuVtdAS {
    ViommuVtdState *s;
    PCIBus *bus;
    uint8_t devfn;
    bool bypass;                    /* nodmar alias in use, not the IOMMU MR */
    int32_t fixed_sid;              /* on a root bus: its fixed sid, else -1 */
    int32_t domain;                 /* last domain translate saw, -1 unknown */
    IOMMUNotifierFlag notifier_flags;
    QLIST_ENTRY(ViommuVtdAS) next;  /* in ViommuVtdState.notified */
    IOMMUMemoryRegion iommu;
    MemoryRegion root;
    MemoryRegion nodmar;
    MemoryRegion msi;
    AddressSpace as;
};

typedef struct ViommuVtdKey {
    PCIBus *bus;
    int devfn;
} ViommuVtdKey;

typedef struct ViommuVtdInv {
    bool all;
    uint16_t id;                    /* domain id, or source-id */
    uint16_t mask;                  /* source-id mask */
    uint64_t iova;
    uint64_t size;
} ViommuVtdInv;

/* A device-IOTLB invalidation: source-id and untranslated range. */
typedef struct ViommuVtdDevInv {
    uint16_t sid;
    hwaddr first, last;
} ViommuVtdDevInv;

struct ViommuVtdClass {
    X86IOMMUClass parent_class;
    DeviceRealize parent_realize;
};

struct ViommuVtdState {
    IntelIOMMUState parent_obj;

    VtdEngine *engine;
    MemoryRegion mmio;
    GHashTable *spaces;             /* ViommuVtdKey -> ViommuVtdAS */
    QLIST_HEAD(, ViommuVtdAS) notified;
    bool dmar_enabled;

    /*
     * Invalidations the engine reports while it handles a register write;
     * acted on once the write returns, so that the engine is never
     * re-entered from its own callbacks.  An overflow degrades to "all".
     */
    ViommuVtdInv inv[VIOMMU_VTD_PENDING_MAX];
    unsigned n_inv;
    bool inv_all;
    ViommuVtdInv ctx[VIOMMU_VTD_PENDING_MAX];
    unsigned n_ctx;
    bool ctx_all;
    ViommuVtdDevInv dev[VIOMMU_VTD_PENDING_MAX];
    unsigned n_dev;
    bool dev_all;

    uint8_t *blob;                  /* engine state, only while migrating */
    uint32_t blob_len;

    uint32_t iotlb_entries;
    uint32_t context_entries;
    uint16_t fault_records;
    bool superpage_1g;
};

static inline uint64_t viommu_vtd_limit(ViommuVtdState *s)
{
    return (1ULL << s->parent_obj.aw_bits) - 1;
}

static inline const char *viommu_vtd_name(ViommuVtdAS *vas)
{
    return memory_region_name(MEMORY_REGION(&vas->iommu));
}

/*
 * A root bus has a fixed number, so its devices' source-ids are computed
 * once (pci_bus_num() is a QOM-checked call: too slow for every DMA);
 * behind a bridge the guest programs the bus number, so ask every time.
 */
static inline uint16_t viommu_vtd_sid(ViommuVtdAS *vas)
{
    if (vas->fixed_sid >= 0) {
        return vas->fixed_sid;
    }
    return PCI_BUILD_BDF(pci_bus_num(vas->bus), vas->devfn);
}

/* Host services for the engine */

/*
 * Host addresses of the guest RAM pages the engine read lately (page
 * tables, context tables, queue pages), per thread and direct-mapped: a
 * page-walk read is then a memcpy instead of a memory-core lookup.  An
 * entry is valid while viommu_vtd_ram_gen is the value it was filled
 * under.  A memory listener bumps the generation at the beginning and at
 * the end of every memory transaction, so no entry filled before a RAM
 * layout change is used after it; and a RAM block removed from the
 * layout is freed only after an RCU grace period, while every use of a
 * cached pointer happens inside the RCU critical section that checked the
 * generation.
 */
#define VIOMMU_VTD_RAMC_SIZE 256
#define VIOMMU_VTD_RAMC_PAGE 4096

typedef struct ViommuVtdRamc {
    uint64_t gen;
    uint64_t page;
    uint8_t *host;
} ViommuVtdRamc;

static __thread ViommuVtdRamc viommu_vtd_ramc[VIOMMU_VTD_RAMC_SIZE];
static uint64_t viommu_vtd_ram_gen = 1;

static void viommu_vtd_ram_changed(MemoryListener *listener)
{
    qatomic_inc(&viommu_vtd_ram_gen);
}

static MemoryListener viommu_vtd_ram_listener = {
    .name = "viommu-vtd-ram",
    .begin = viommu_vtd_ram_changed,
    .commit = viommu_vtd_ram_changed,
};

/*
 * The host address of the plain-RAM page holding gpa, or NULL when the
 * whole page is not plain RAM.  Call under RCU.
 */
static uint8_t *viommu_vtd_ram_page(uint64_t gpa)
{
    uint64_t page = gpa / VIOMMU_VTD_RAMC_PAGE;
    ViommuVtdRamc *c = &viommu_vtd_ramc[page % VIOMMU_VTD_RAMC_SIZE];
    uint64_t gen = qatomic_load_acquire(&viommu_vtd_ram_gen);
    hwaddr xlat, l = VIOMMU_VTD_RAMC_PAGE;
    MemoryRegion *mr;

    if (c->gen == gen && c->page == page) {
        return c->host;
    }
    /* sampled before the lookup: a change meanwhile makes the entry stale */
    mr = address_space_translate(&address_space_memory,
                                 page * VIOMMU_VTD_RAMC_PAGE, &xlat, &l,
                                 false, MEMTXATTRS_UNSPECIFIED);
    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        l < VIOMMU_VTD_RAMC_PAGE) {
        return NULL;
    }
    c->host = qemu_map_ram_ptr(mr->ram_block, xlat);
    c->page = page;
    c->gen = gen;
    return c->host;
}

static int viommu_vtd_ram_rw(uint64_t gpa, void *buf, size_t len, bool write)
{
    uint8_t *p = buf;

    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr;

        /*
         * Reads (page-table and context entries, descriptors: the page
         * walk's hot path) copy straight from RAM, through the cache of
         * host pages when the page is plain RAM.
         */
        if (!write) {
            uint64_t off = gpa % VIOMMU_VTD_RAMC_PAGE;
            uint8_t *host = viommu_vtd_ram_page(gpa);

            if (host) {
                l = MIN(len, VIOMMU_VTD_RAMC_PAGE - off);
                memcpy(p, host + off, l);
                gpa += l;
                p += l;
                len -= l;
                continue;
            }
        }
        mr = address_space_translate(&address_space_memory, gpa, &xlat, &l,
                                     write, MEMTXATTRS_UNSPECIFIED);
        /* Only RAM: tables pointing at MMIO (our own registers) must fail. */
        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (write && mr->readonly) || !l) {
            trace_viommu_vtd_mem_error(gpa, len, write);
            return -1;
        }
        /*
         * Writes (wait-descriptor status) are rare and go through
         * address_space_rw() for dirty tracking and code invalidation.
         */
        if (!write) {
            memcpy(p, qemu_map_ram_ptr(mr->ram_block, xlat), l);
        } else if (address_space_rw(&address_space_memory, gpa,
                                    MEMTXATTRS_UNSPECIFIED, p, l,
                                    true) != MEMTX_OK) {
            trace_viommu_vtd_mem_error(gpa, len, write);
            return -1;
        }
        gpa += l;
        p += l;
        len -= l;
    }
    return 0;
}

static int viommu_vtd_mem_read(void *opaque, uint64_t gpa, void *buf,
                               size_t len)
{
    return viommu_vtd_ram_rw(gpa, buf, len, false);
}

static int viommu_vtd_mem_write(void *opaque, uint64_t gpa, const void *buf,
                                size_t len)
{
    return viommu_vtd_ram_rw(gpa, (void *)buf, len, true);
}

static void viommu_vtd_msi(void *opaque, uint64_t addr, uint32_t data)
{
    if (addr < VIOMMU_VTD_MSI_BASE ||
        addr >= VIOMMU_VTD_MSI_BASE + VIOMMU_VTD_MSI_SIZE) {
        trace_viommu_vtd_msi_dropped(addr, data);
        return;
    }
    trace_viommu_vtd_msi(addr, data);
    address_space_stl_le(&address_space_memory, addr, data,
                         MEMTXATTRS_UNSPECIFIED, NULL);
}

static void viommu_vtd_invalidated(void *opaque, bool all_domains,
                                   uint16_t domain_id, uint64_t iova,
                                   uint64_t size)
{
    ViommuVtdState *s = opaque;

    trace_viommu_vtd_invalidated(all_domains, domain_id, iova, size);
    if (QLIST_EMPTY(&s->notified) || s->inv_all) {
        return;
    }
    if (s->n_inv == VIOMMU_VTD_PENDING_MAX) {
        s->inv_all = true;
        return;
    }
    s->inv[s->n_inv++] = (ViommuVtdInv) {
        .all = all_domains, .id = domain_id, .iova = iova, .size = size,
    };
}

static void viommu_vtd_context_invalidated(void *opaque, bool all,
                                           uint16_t sid, uint16_t mask)
{
    ViommuVtdState *s = opaque;

    trace_viommu_vtd_context_invalidated(all, sid, mask);
    if (s->ctx_all) {
        return;
    }
    if (all || s->n_ctx == VIOMMU_VTD_PENDING_MAX) {
        s->ctx_all = true;
        return;
    }
    s->ctx[s->n_ctx++] = (ViommuVtdInv) { .id = sid, .mask = mask };
}

static void viommu_vtd_device_iotlb_invalidated(void *opaque, uint16_t sid,
                                                uint16_t pfsid, uint8_t mip,
                                                uint64_t first, uint64_t last)
{
    ViommuVtdState *s = opaque;

    trace_viommu_vtd_device_iotlb_invalidated(sid, pfsid, mip, first, last);
    if (QLIST_EMPTY(&s->notified) || s->dev_all) {
        return;
    }
    if (s->n_dev == VIOMMU_VTD_PENDING_MAX) {
        s->dev_all = true;
        return;
    }
    s->dev[s->n_dev++] = (ViommuVtdDevInv) {
        .sid = sid, .first = first, .last = last,
    };
}

/* A hint from the engine: start loading gpa's cache line if it is RAM. */
static void viommu_vtd_prefetch(void *opaque, uint64_t gpa)
{
    uint8_t *host;

    RCU_READ_LOCK_GUARD();
    host = viommu_vtd_ram_page(gpa);
    if (host) {
        __builtin_prefetch(host + gpa % VIOMMU_VTD_RAMC_PAGE);
    }
}

static uint64_t viommu_vtd_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
}

static const VtdHostOps viommu_vtd_host_ops = {
    .mem_read = viommu_vtd_mem_read,
    .mem_write = viommu_vtd_mem_write,
    .msi = viommu_vtd_msi,
    .invalidated = viommu_vtd_invalidated,
    .context_invalidated = viommu_vtd_context_invalidated,
    .now_ns = viommu_vtd_now_ns,
    .device_iotlb_invalidated = viommu_vtd_device_iotlb_invalidated,
    .prefetch = viommu_vtd_prefetch,
};

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
 * Bring one notifier in line with the guest's tables over [first, last]:
 * UNMAP the range, then (MAP notifiers only) MAP what the tables hold.
 */
static void viommu_vtd_sync_notifier(ViommuVtdAS *vas, IOMMUNotifier *n,
                                     hwaddr first, hwaddr last)
{
    ViommuVtdState *s = vas->s;
    ViommuVtdWalk w = { .vas = vas, .n = n };
    int ret;

    last = MIN(last, viommu_vtd_limit(s));
    viommu_vtd_notify_unmap(vas, n, first, last);
    if (!(n->notifier_flags & IOMMU_NOTIFIER_MAP) || vas->bypass) {
        return;
    }
    w.first = MAX(first, n->start);
    w.last = MIN(last, n->end);
    if (w.first > w.last) {
        return;
    }
    ret = vtd_engine_walk(s->engine, viommu_vtd_sid(vas), w.first, w.last + 1,
                          viommu_vtd_walk_map, &w);
    trace_viommu_vtd_replay(viommu_vtd_name(vas), viommu_vtd_sid(vas),
                            w.first, w.last, ret);
}

/*
 * An IOTLB invalidation reaches the UNMAP and MAP notifiers.  A device
 * whose notifier takes DEVIOTLB_UNMAP events instead (vhost once the guest
 * enabled ATS on it) caches translations in its own device-TLB, which only
 * device-IOTLB invalidations address: see viommu_vtd_device_tlb_notify().
 */
static void viommu_vtd_sync_as(ViommuVtdAS *vas, hwaddr first, hwaddr last)
{
    IOMMUNotifier *n;

    IOMMU_NOTIFIER_FOREACH(n, &vas->iommu) {
        if (n->notifier_flags & IOMMU_NOTIFIER_IOTLB_EVENTS) {
            viommu_vtd_sync_notifier(vas, n, first, last);
        }
    }
}

/* A device-IOTLB invalidation: DEVIOTLB_UNMAP of exactly its range. */
static void viommu_vtd_device_tlb_notify(ViommuVtdAS *vas, hwaddr first,
                                         hwaddr last)
{
    IOMMUNotifier *n;

    IOMMU_NOTIFIER_FOREACH(n, &vas->iommu) {
        if (n->notifier_flags & IOMMU_NOTIFIER_DEVIOTLB_UNMAP) {
            viommu_vtd_notify_unmap(vas, n, first, last);
        }
    }
}

static int viommu_vtd_notify_flag_changed(IOMMUMemoryRegion *iommu,
                                          IOMMUNotifierFlag old_flags,
                                          IOMMUNotifierFlag new_flags,
                                          Error **errp)
{
    ViommuVtdAS *vas = container_of(iommu, ViommuVtdAS, iommu);

    if ((new_flags & IOMMU_NOTIFIER_DEVIOTLB_UNMAP) &&
        !X86_IOMMU_DEVICE(vas->s)->dt_supported) {
        error_setg(errp, "viommu-vtd: device %02x.%x needs device-IOTLB "
                   "notifications; start viommu-vtd with device-iotlb=on",
                   PCI_SLOT(vas->devfn), PCI_FUNC(vas->devfn));
        return -EINVAL;
    }
    if ((new_flags & IOMMU_NOTIFIER_MAP) && !vas->s->parent_obj.caching_mode) {
        error_setg(errp, "viommu-vtd: device %02x.%x needs MAP notifications "
                   "(device assignment); start viommu-vtd with caching-mode=on",
                   PCI_SLOT(vas->devfn), PCI_FUNC(vas->devfn));
        return -EINVAL;
    }
    trace_viommu_vtd_notify_flag_changed(viommu_vtd_name(vas), old_flags,
                                         new_flags);
    if (old_flags == IOMMU_NOTIFIER_NONE && new_flags != IOMMU_NOTIFIER_NONE) {
        QLIST_INSERT_HEAD(&vas->s->notified, vas, next);
    } else if (old_flags != IOMMU_NOTIFIER_NONE &&
               new_flags == IOMMU_NOTIFIER_NONE) {
        QLIST_REMOVE(vas, next);
    }
    vas->notifier_flags = new_flags;
    return 0;
}

static void viommu_vtd_replay(IOMMUMemoryRegion *iommu, IOMMUNotifier *n)
{
    ViommuVtdAS *vas = container_of(iommu, ViommuVtdAS, iommu);

    viommu_vtd_sync_notifier(vas, n, 0, viommu_vtd_limit(vas->s));
}

/* Address spaces */

/*
 * A device bypasses the IOMMU region while remapping is off or its context
 * is pass-through.  A context only stops being pass-through after a context
 * cache invalidation, which re-evaluates this.
 */
static void viommu_vtd_as_refresh(ViommuVtdAS *vas)
{
    ViommuVtdState *s = vas->s;
    uint16_t sid = viommu_vtd_sid(vas);
    bool bypass = !s->dmar_enabled ||
                  vtd_engine_is_pass_through(s->engine, sid);

    qatomic_set(&vas->domain, -1);
    /*
     * Whatever a notifier learned under the old context is stale: drop it
     * all, and re-map from the tables if the IOMMU region stays in use.  A
     * region coming into use gets its notifiers (and their replay) from
     * the memory listeners that register them.
     */
    if (vas->notifier_flags && (bypass || !vas->bypass)) {
        IOMMUNotifier *n;

        IOMMU_NOTIFIER_FOREACH(n, &vas->iommu) {
            if (bypass) {
                viommu_vtd_notify_unmap(vas, n, 0, viommu_vtd_limit(s));
            } else {
                viommu_vtd_sync_notifier(vas, n, 0, viommu_vtd_limit(s));
            }
        }
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

static void viommu_vtd_process_pending(ViommuVtdState *s)
{
    bool enabled = vtd_engine_translation_enabled(s->engine);
    ViommuVtdAS *vas;
    unsigned i;

    if (enabled != s->dmar_enabled || s->ctx_all) {
        if (enabled != s->dmar_enabled) {
            trace_viommu_vtd_translation_enabled(enabled);
        }
        s->dmar_enabled = enabled;
        viommu_vtd_refresh_all(s);
    } else if (s->n_ctx) {
        GHashTableIter it;

        g_hash_table_iter_init(&it, s->spaces);
        while (g_hash_table_iter_next(&it, NULL, (void **)&vas)) {
            uint16_t sid = viommu_vtd_sid(vas);

            for (i = 0; i < s->n_ctx; i++) {
                uint16_t keep = ~s->ctx[i].mask;

                if ((sid & keep) == (s->ctx[i].id & keep)) {
                    viommu_vtd_as_refresh(vas);
                    break;
                }
            }
        }
    }

    if (s->inv_all) {
        s->n_inv = 1;
        s->inv[0] = (ViommuVtdInv) { .all = true, .size = 0 };
    }
    for (i = 0; i < s->n_inv; i++) {
        ViommuVtdInv *inv = &s->inv[i];
        hwaddr first = inv->iova, last;

        if (inv->size == 0 || inv->iova + inv->size - 1 < inv->iova) {
            first = 0;
            last = HWADDR_MAX;
        } else {
            last = inv->iova + inv->size - 1;
        }
        QLIST_FOREACH(vas, &s->notified, next) {
            int32_t d = qatomic_read(&vas->domain);

            if (vas->bypass || (!inv->all && d >= 0 && d != inv->id)) {
                continue;
            }
            viommu_vtd_sync_as(vas, first, last);
        }
    }

    if (s->dev_all) {
        s->n_dev = 1;
        s->dev[0] = (ViommuVtdDevInv) { .first = 0, .last = HWADDR_MAX };
    }
    for (i = 0; i < s->n_dev; i++) {
        QLIST_FOREACH(vas, &s->notified, next) {
            if (s->dev_all || viommu_vtd_sid(vas) == s->dev[i].sid) {
                viommu_vtd_device_tlb_notify(vas, s->dev[i].first,
                                             s->dev[i].last);
            }
        }
    }
    s->n_inv = s->n_ctx = s->n_dev = 0;
    s->inv_all = s->ctx_all = s->dev_all = false;
}

static IOMMUTLBEntry viommu_vtd_translate(IOMMUMemoryRegion *iommu, hwaddr addr,
                                          IOMMUAccessFlags flag, int iommu_idx)
{
    ViommuVtdAS *vas = container_of(iommu, ViommuVtdAS, iommu);
    uint16_t sid = viommu_vtd_sid(vas);
    VtdTranslation t;
    VtdFaultReason fr;

    fr = vtd_engine_translate(vas->s->engine, sid, addr, flag & IOMMU_RW,
                              flag != IOMMU_NONE, &t);
    if (fr != VTD_FR_NONE) {
        trace_viommu_vtd_translate_fault(sid, addr, flag, fr);
        return (IOMMUTLBEntry) {
            .target_as = &address_space_memory,
            .iova = addr & ~0xfffULL,
            .addr_mask = 0xfff,
            .perm = IOMMU_NONE,
        };
    }
    qatomic_set(&vas->domain, t.domain_id);
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

static AddressSpace *viommu_vtd_get_as(PCIBus *bus, void *opaque, int devfn)
{
    ViommuVtdState *s = opaque;
    ViommuVtdKey key = { .bus = bus, .devfn = devfn };
    ViommuVtdAS *vas = g_hash_table_lookup(s->spaces, &key);
    g_autofree char *name = NULL;
    g_autofree char *iommu_name = NULL;

    if (vas) {
        return &vas->as;
    }
    vas = g_new0(ViommuVtdAS, 1);
    vas->s = s;
    vas->bus = bus;
    vas->devfn = devfn;
    vas->domain = -1;
    vas->bypass = true;
    vas->fixed_sid = pci_bus_is_root(bus) ?
                     PCI_BUILD_BDF(pci_bus_num(bus), devfn) : -1;
    name = g_strdup_printf("viommu-vtd-%02x.%x", PCI_SLOT(devfn),
                           PCI_FUNC(devfn));
    iommu_name = g_strdup_printf("%s-dmar", name);

    memory_region_init(&vas->root, OBJECT(s), name, UINT64_MAX);
    memory_region_init_iommu(&vas->iommu, sizeof(vas->iommu),
                             TYPE_VIOMMU_VTD_IOMMU_MEMORY_REGION, OBJECT(s),
                             iommu_name, UINT64_MAX);
    memory_region_init_alias(&vas->nodmar, OBJECT(s), "viommu-vtd-nodmar",
                             get_system_memory(), 0,
                             memory_region_size(get_system_memory()));
    /* The interrupt address range is never remapped (VT-d 3.14). */
    memory_region_init_alias(&vas->msi, OBJECT(s), "viommu-vtd-msi",
                             get_system_memory(), VIOMMU_VTD_MSI_BASE,
                             VIOMMU_VTD_MSI_SIZE);
    memory_region_set_enabled(MEMORY_REGION(&vas->iommu), false);
    memory_region_add_subregion_overlap(&vas->root, 0,
                                        MEMORY_REGION(&vas->iommu), 0);
    memory_region_add_subregion_overlap(&vas->root, 0, &vas->nodmar, 0);
    memory_region_add_subregion_overlap(&vas->root, VIOMMU_VTD_MSI_BASE,
                                        &vas->msi, 1);
    address_space_init(&vas->as, &vas->root, name);
    g_hash_table_insert(s->spaces, g_memdup2(&key, sizeof(key)), vas);
    if (s->dmar_enabled) {
        viommu_vtd_as_refresh(vas);
    }
    return &vas->as;
}

static const PCIIOMMUOps viommu_vtd_pci_ops = {
    .get_address_space = viommu_vtd_get_as,
};

/* Registers */

static uint64_t viommu_vtd_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    ViommuVtdState *s = opaque;
    uint64_t val = vtd_engine_mmio_read(s->engine, addr, size);

    trace_viommu_vtd_mmio_read(addr, size, val);
    return val;
}

static void viommu_vtd_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                                  unsigned size)
{
    ViommuVtdState *s = opaque;

    trace_viommu_vtd_mmio_write(addr, size, val);
    vtd_engine_mmio_write(s->engine, addr, val, size);
    viommu_vtd_process_pending(s);
}

static const MemoryRegionOps viommu_vtd_mmio_ops = {
    .read = viommu_vtd_mmio_read,
    .write = viommu_vtd_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
    .valid = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
};

/* Device */

static char *viommu_vtd_get_stats(Object *obj, Error **errp)
{
    ViommuVtdState *s = VIOMMU_VTD(obj);
    char *json, *ret;

    if (!s->engine) {
        error_setg(errp, "viommu-vtd is not realized");
        return NULL;
    }
    json = vtd_engine_stats_json(s->engine);
    if (!json) {
        error_setg(errp, "viommu-vtd: statistics are not available");
        return NULL;
    }
    ret = g_strdup(json);
    free(json);
    return ret;
}

/*
 * Inherited intel-iommu properties for features the engine does not model:
 * a value other than `ok` is an error, never ignored.
 */
static const struct {
    const char *name;
    size_t offset;                  /* bool in IntelIOMMUState */
    bool ok;
    const char *why;
} viommu_vtd_unsupported[] = {
    { "x-scalable-mode", offsetof(IntelIOMMUState, scalable_mode), false,
      "scalable mode is not implemented (legacy mode only)" },
    { "x-flts", offsetof(IntelIOMMUState, flts), false,
      "first-stage translation is not implemented" },
    { "x-pasid-mode", offsetof(IntelIOMMUState, pasid), false,
      "PASID is not implemented" },
    { "snoop-control", offsetof(IntelIOMMUState, snoop_control), false,
      "snoop control (ECAP.SC) is not implemented" },
    { "stale-tm", offsetof(IntelIOMMUState, stale_tm), false,
      "transient mappings are reserved since VT-d 3.2 and not implemented "
      "(machine types before 9.2 set stale-tm=on: use a newer q35)" },
    { "x-buggy-eim", offsetof(IntelIOMMUState, buggy_eim), false,
      "extended interrupt mode needs interrupt remapping, "
      "which is not implemented" },
    { "dma-drain", offsetof(IntelIOMMUState, dma_drain), true,
      "read/write draining is always advertised (DMA is synchronous)" },
    { "dma-translation", offsetof(IntelIOMMUState, dma_translation), true,
      "DMA translation is the device's only function" },
    { "fs1gp", offsetof(IntelIOMMUState, fs1gp), true,
      "first-stage translation is not implemented" },
};

static bool viommu_vtd_check_config(ViommuVtdState *s, Error **errp)
{
    IntelIOMMUState *is = &s->parent_obj;
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(viommu_vtd_unsupported); i++) {
        bool v = *(bool *)((char *)is + viommu_vtd_unsupported[i].offset);

        if (v != viommu_vtd_unsupported[i].ok) {
            error_setg(errp, "viommu-vtd does not support %s=%s: %s",
                       viommu_vtd_unsupported[i].name, v ? "on" : "off",
                       viommu_vtd_unsupported[i].why);
            return false;
        }
    }
    if (is->intr_eim == ON_OFF_AUTO_ON) {
        error_setg(errp, "viommu-vtd does not support eim=on: extended "
                   "interrupt mode needs interrupt remapping, which is not "
                   "implemented");
        return false;
    }
    if (is->version) {
        error_setg(errp, "viommu-vtd does not support version=%" PRIu32
                   ": the engine reports its own VER_REG", is->version);
        return false;
    }
    if (is->aw_bits != VTD_HOST_AW_39BIT && is->aw_bits != VTD_HOST_AW_48BIT) {
        error_setg(errp, "viommu-vtd does not support aw-bits=%u: "
                   "supported values are %d and %d", is->aw_bits,
                   VTD_HOST_AW_39BIT, VTD_HOST_AW_48BIT);
        return false;
    }
    return true;
}

/* DeviceClass realize: runs before x86-iommu decides intremap=auto. */
static void viommu_vtd_device_realize(DeviceState *dev, Error **errp)
{
    X86IOMMUState *x86 = X86_IOMMU_DEVICE(dev);

    if (x86->intr_supported == ON_OFF_AUTO_ON) {
        error_setg(errp, "viommu-vtd does not support intremap=on: interrupt "
                   "remapping is not implemented; leave intremap unset (or "
                   "off) and use -M q35,kernel-irqchip=split");
        return;
    }
    x86->intr_supported = ON_OFF_AUTO_OFF;
    VIOMMU_VTD_GET_CLASS(dev)->parent_realize(dev, errp);
}

/* X86IOMMUClass realize, called by x86-iommu once the machine is checked. */
static void viommu_vtd_realize(DeviceState *dev, Error **errp)
{
    ViommuVtdState *s = VIOMMU_VTD(dev);
    IntelIOMMUState *is = &s->parent_obj;
    X86IOMMUState *x86 = X86_IOMMU_DEVICE(dev);
    PCMachineState *pcms = PC_MACHINE(qdev_get_machine());
    VtdConfig cfg;
    char err[256] = "";

    if (!viommu_vtd_check_config(s, errp)) {
        return;
    }
    vtd_config_default(&cfg);
    cfg.aw_bits = is->aw_bits;
    cfg.pass_through = x86->pt_supported;
    cfg.caching_mode = is->caching_mode;
    cfg.device_iotlb = x86->dt_supported;
    cfg.superpage_1g = s->superpage_1g;
    cfg.iotlb_entries = s->iotlb_entries;
    cfg.context_entries = s->context_entries;
    cfg.fault_records = s->fault_records;
    s->engine = vtd_engine_new(&cfg, &viommu_vtd_host_ops, s, err, sizeof(err));
    if (!s->engine) {
        error_setg(errp, "viommu-vtd: %s",
                   err[0] ? err : "invalid configuration");
        return;
    }

    /*
     * One listener for the host-page cache of all instances (never
     * removed: the IOMMU cannot be unplugged).
     */
    if (!viommu_vtd_ram_listener.address_space) {
        memory_listener_register(&viommu_vtd_ram_listener,
                                 &address_space_memory);
    }

    memory_region_init_io(&s->mmio, OBJECT(s), &viommu_vtd_mmio_ops, s,
                          "viommu-vtd", VTD_MMIO_SIZE);
    memory_region_add_subregion(get_system_memory(), Q35_HOST_BRIDGE_IOMMU_ADDR,
                                &s->mmio);
    s->spaces = g_hash_table_new_full(viommu_vtd_key_hash, viommu_vtd_key_equal,
                                      g_free, NULL);
    QLIST_INIT(&s->notified);
    pci_setup_iommu(pcms->pcibus, &viommu_vtd_pci_ops, s);
    trace_viommu_vtd_realize(cfg.aw_bits, cfg.caching_mode, cfg.pass_through,
                             cfg.device_iotlb);
}

static void viommu_vtd_reset_exit(Object *obj, ResetType type)
{
    ViommuVtdState *s = VIOMMU_VTD(obj);

    if (!s->engine) {
        return;
    }
    trace_viommu_vtd_reset();
    vtd_engine_reset(s->engine);
    s->n_inv = s->n_ctx = s->n_dev = 0;
    s->inv_all = s->dev_all = false;
    s->ctx_all = true;
    viommu_vtd_process_pending(s);
}

static void viommu_vtd_finalize(Object *obj)
{
    ViommuVtdState *s = VIOMMU_VTD(obj);

    vtd_engine_free(s->engine);
    g_free(s->blob);
}

/* Migration: the engine's architectural state as one opaque blob. */

static int viommu_vtd_pre_save(void *opaque)
{
    ViommuVtdState *s = opaque;
    size_t len = 0;
    uint8_t *buf = vtd_engine_save(s->engine, &len);

    if (!buf || len > VIOMMU_VTD_BLOB_MAX) {
        free(buf);
        return -EINVAL;
    }
    g_free(s->blob);
    s->blob = g_memdup2(buf, len);
    s->blob_len = len;
    free(buf);
    return 0;
}

static int viommu_vtd_post_save(void *opaque)
{
    ViommuVtdState *s = opaque;

    g_clear_pointer(&s->blob, g_free);
    s->blob_len = 0;
    return 0;
}

static int viommu_vtd_pre_load(void *opaque)
{
    return viommu_vtd_post_save(opaque);
}

static bool viommu_vtd_blob_len_ok(void *opaque, int version_id)
{
    ViommuVtdState *s = opaque;

    return s->blob_len <= VIOMMU_VTD_BLOB_MAX;
}

static int viommu_vtd_post_load(void *opaque, int version_id)
{
    ViommuVtdState *s = opaque;
    int ret = vtd_engine_load(s->engine, s->blob, s->blob_len);

    trace_viommu_vtd_post_load(s->blob_len, ret);
    viommu_vtd_post_save(s);
    s->n_inv = s->n_ctx = s->n_dev = 0;
    s->inv_all = s->dev_all = false;
    s->ctx_all = true;
    viommu_vtd_process_pending(s);
    return ret ? -EINVAL : 0;
}

static const VMStateDescription viommu_vtd_vmstate = {
    .name = TYPE_VIOMMU_VTD,
    .version_id = 1,
    .minimum_version_id = 1,
    .priority = MIG_PRI_IOMMU,
    .pre_save = viommu_vtd_pre_save,
    .post_save = viommu_vtd_post_save,
    .pre_load = viommu_vtd_pre_load,
    .post_load = viommu_vtd_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(blob_len, ViommuVtdState),
        VMSTATE_VALIDATE("engine state size", viommu_vtd_blob_len_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(blob, ViommuVtdState, 0, NULL, blob_len),
        VMSTATE_END_OF_LIST()
    }
};

static const Property viommu_vtd_properties[] = {
    DEFINE_PROP_UINT32("iotlb-entries", ViommuVtdState, iotlb_entries, 0),
    DEFINE_PROP_UINT32("context-entries", ViommuVtdState, context_entries, 0),
    DEFINE_PROP_UINT16("fault-records", ViommuVtdState, fault_records, 0),
    DEFINE_PROP_BOOL("superpage-1g", ViommuVtdState, superpage_1g, true),
};

static void viommu_vtd_class_init(ObjectClass *oc, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    X86IOMMUClass *xc = X86_IOMMU_DEVICE_CLASS(oc);
    ResettableClass *rc = RESETTABLE_CLASS(oc);

    device_class_set_parent_realize(dc, viommu_vtd_device_realize,
                                    &VIOMMU_VTD_CLASS(oc)->parent_realize);
    xc->realize = viommu_vtd_realize;
    xc->int_remap = NULL;
    rc->phases.exit = viommu_vtd_reset_exit;
    dc->vmsd = &viommu_vtd_vmstate;
    device_class_set_props(dc, viommu_vtd_properties);
    object_class_property_set_description(oc, "iotlb-entries",
        "IOTLB capacity in entries (0: engine default)");
    object_class_property_set_description(oc, "context-entries",
        "context-cache capacity in entries (0: engine default)");
    object_class_property_set_description(oc, "fault-records",
        "number of fault recording registers, 1..256 (0: default 8)");
    object_class_property_set_description(oc, "superpage-1g",
        "advertise 1 GiB second-level pages (CAP.SLLPS)");
    object_class_property_add_str(oc, "stats", viommu_vtd_get_stats, NULL);
    object_class_property_set_description(oc, "stats",
        "remapping statistics as a JSON document (read-only)");
    dc->hotpluggable = false;
    dc->desc = "VT-d compatible DMA remapping unit (viommu-lab engine)";
}

static void viommu_vtd_iommu_mr_class_init(ObjectClass *oc, void *data)
{
    IOMMUMemoryRegionClass *imrc = IOMMU_MEMORY_REGION_CLASS(oc);

    imrc->translate = viommu_vtd_translate;
    imrc->notify_flag_changed = viommu_vtd_notify_flag_changed;
    imrc->replay = viommu_vtd_replay;
}

static const TypeInfo viommu_vtd_types[] = {
    {
        .name = TYPE_VIOMMU_VTD,
        .parent = TYPE_INTEL_IOMMU_DEVICE,
        .instance_size = sizeof(ViommuVtdState),
        .instance_finalize = viommu_vtd_finalize,
        .class_size = sizeof(ViommuVtdClass),
        .class_init = viommu_vtd_class_init,
    }, {
        .name = TYPE_VIOMMU_VTD_IOMMU_MEMORY_REGION,
        .parent = TYPE_IOMMU_MEMORY_REGION,
        .class_init = viommu_vtd_iommu_mr_class_init,
    },
};

DEFINE_TYPES(viommu_vtd_types)
