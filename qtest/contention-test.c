/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Contention cases with the device in the loop (docs/contention-qtests.rst).
 *
 * Each case replays the per-CPU step streams (include/viommu/sim.h) of a
 * case file (cases/NAME.json, read through the simulator's C API) round-robin
 * over its simulated CPUs.  IOVAs come from the real allocator
 * library (guest/iova) with the case's variant, flush policy and dma mode;
 * page tables are built in guest memory, the flush policy's invalidations
 * go through viommu-vtd's invalidation queue, and viommu-dma does DMA on
 * the mapped IOVAs.  Checked:
 *  - no IOVA is live twice: a new mapping may only overlap ranges whose
 *    unmap was followed by a completed invalidation;
 *  - data written by DMA through a mapping lands in the guest pages it maps;
 *  - after an invalidation covering an unmapped IOVA completed, a DMA read
 *    of that IOVA faults and returns nothing (every IOVA written by DMA
 *    while mapped is probed; its translation was in the IOTLB);
 *  - viommu-vtd's statistics agree with the invalidations sent, and show
 *    the flush policy's signature (strict: one page-selective request per
 *    unmap; deferred: batched global or domain requests, no page ones);
 *  - the 64K-granule NIC case exhausts the 32-bit space: the allocator
 *    counts failed 32-bit attempts.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqtest.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "qobject/qnum.h"
#include "qobject/qstring.h"
#include "qapi/error.h"
#include "viommu-test-env.h"
#include "viommu/iova.h"
#include "viommu/sim.h"

#define CT_DID              1
/* IOVAs below 1 MiB are the test's own: rings and the probe buffer. */
#define CT_RESERVED         0x100000ULL
#define CT_RING_IOVA(i)     (0x10000ULL * (1 + (i)))
#define CT_SCRATCH_IOVA     0xc0000ULL
#define CT_MSI_BASE         0xfee00000ULL
#define CT_MSI_SIZE         0x100000ULL
#define CT_POOL_PAGES       2048u           /* 8 MiB of DMA target pages */
#define CT_PROBE_LEN        64
#define CT_MARKER           0x5aULL
#define CT_SETUP_DMA_FIRST  8
#define CT_MAX_STEPS        4096
#define CT_RAM_MB           512

typedef enum CtFlushKind {
    CT_FLUSH_GLOBAL,        /* 2008..4.7 intel-iommu flush_unmaps() */
    CT_FLUSH_DOMAIN,        /* 4.14+ flush queue: domain-selective */
} CtFlushKind;

typedef struct CtCase {
    const char *path;       /* test path below /x86_64/viommu/contention/ */
    const char *workload;   /* case file name (cases/NAME.json) */
    const char *variant;
    const char *policy;
    const char *dma;
    unsigned cpus;          /* 0: the workload's default */
    unsigned rounds;        /* transactions per CPU after setup */
    unsigned dma_every;     /* DMA through every n-th mapping at setup */
    unsigned dma_every_run; /* ... and after setup */
    bool exhausts_32bit;    /* the setup fills the 32-bit IOVA space */
} CtCase;

static const CtCase ct_cases[] = {
    /* the case file's own setup; variant, policy, dma and CPUs set here */
    { "memcached-16cpu-xl710/linux-4.4/global-list", "memcached-16cpu-xl710",
      "linux-4.4", "global-list", "sac", 16, 200, 23, 23, false },
    { "memcached-16cpu-xl710/linux-4.7/percpu-defer", "memcached-16cpu-xl710",
      "linux-4.7", "percpu-defer", "sac", 16, 200, 23, 23, false },
    { "ovs-forward-64b/linux-4.4/global-list", "ovs-forward-64b", "linux-4.4",
      "global-list", "sac", 16, 200, 23, 23, false },
    /* 64K granule NIC, 32-bit space exhausted at interface up; strict
     * unmap, the failed 32-bit attempt flushes the rcaches */
    { "cx4-64k-32bit-exhausted/linux-4.15/strict", "cx4-64k-32bit-exhausted",
      "linux-4.15", "strict", "sac-flush", 32, 12, 97, 2, true },
    { "cx4-64k-32bit-exhausted/linux-4.4/strict", "cx4-64k-32bit-exhausted",
      "linux-4.4", "strict", "sac-flush", 32, 12, 97, 2, true },
    /* nginx, cross-CPU TX completions, flush queue */
    { "nginx-rbtree-regression/linux-5.13/flush-queue", "nginx-rbtree-regression",
      "linux-5.13", "flush-queue", "sac", 16, 200, 23, 23, false },
    { "nginx-rbtree-regression/linux-6.7/flush-queue", "nginx-rbtree-regression",
      "linux-6.7", "flush-queue", "sac", 16, 200, 23, 23, false },
    /* NVMe at queue depth 128, strict invalidation */
    { "nvme-smmuv3-cmdq/linux-5.13/strict", "nvme-smmuv3-cmdq", "linux-5.13",
      "strict", "sac", 4, 100, 17, 17, false },
    /* viommu-lab's allocator on the same streams */
    { "memcached-16cpu-xl710/viommu-lab/flush-queue", "memcached-16cpu-xl710",
      "viommu-lab", "flush-queue", "sac", 16, 200, 23, 23, false },
    { "cx4-64k-32bit-exhausted/viommu-lab/strict", "cx4-64k-32bit-exhausted",
      "viommu-lab", "strict", "sac", 32, 12, 97, 2, true },
};

typedef enum CtState {
    CT_LIVE,                /* mapped */
    CT_UNMAPPED,            /* PTEs cleared, no invalidation completed yet */
    CT_INVALIDATED,         /* an invalidation covering it completed */
} CtState;

typedef struct CtMap {
    uint64_t iova, extent, bytes;
    uint64_t serial;
    uint32_t pool;          /* first target page in the pool */
    uint8_t dev;
    uint8_t state;
    bool dma;               /* written by DMA while mapped: probe it */
} CtMap;

typedef struct CtRegion {   /* one leaf table (2 MiB of IOVA), shadowed */
    uint64_t table;
    int lo, hi;             /* dirty entries, lo > hi when clean */
    uint64_t pte[512];
} CtRegion;

typedef struct CtRun {
    const CtCase *c;
    VtEnv e;
    VtdDomain *d;
    ViommuIova *h;
    ViommuSimWorkload *w;
    unsigned ncpus, nslots, ndev, shift;
    uint64_t mask[VT_MAX_DMA];
    uint64_t top;           /* 1 << MGAW */
    unsigned mamv;
    CtFlushKind all_kind;
    GTree *maps;            /* iova -> CtMap: every range not known free */
    GHashTable *regions;    /* iova >> 21 -> CtRegion */
    GPtrArray *dirty;
    GPtrArray *pending;     /* CT_UNMAPPED mappings */
    CtMap **slots;          /* ncpus * nslots */
    GQueue *mailbox;        /* per CPU */
    uint64_t pool_gpa, scratch_gpa;
    uint32_t pool_next;
    uint64_t serial;
    bool in_flush;
    bool in_unmap;          /* inside viommu_iova_unmap() */
    bool carried;           /* the last flush ran inside an unmap */
    bool in_setup;
    bool skip_invalidation; /* $VIOMMU_CT_SKIP_INVALIDATION: break it */
    unsigned setup_maps_cpu[256];
    /* what the test did */
    uint64_t steps, nmaps, nunmaps, reused, dmas, pages_checked, probes;
    uint64_t live, max_live;
    uint64_t psi, psi_pages, dsi, gsi, waits, pte_writes;
    uint64_t flush_range_calls, flush_all_calls, flush_all_batch_max;
} CtRun;

/* The library's calls either succeed or name their status. */
#define CT_OK(call)                                                         \
    do {                                                                    \
        ViommuIovaStatus st_ = (call);                                      \
        if (st_ != VIOMMU_IOVA_OK) {                                        \
            g_test_message("%s: %s", #call, viommu_iova_status_name(st_));  \
            g_assert_cmpint(st_, ==, VIOMMU_IOVA_OK);                       \
        }                                                                   \
    } while (0)

static gint ct_cmp_u64(gconstpointer a, gconstpointer b, gpointer opaque)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Page tables: a host-side shadow of each leaf table, written to guest
 * memory before anything can read it (DMA, invalidation). */

static CtRegion *ct_region(CtRun *r, uint64_t iova)
{
    uint64_t key = iova >> 21;
    CtRegion *reg = g_hash_table_lookup(r->regions, &key);

    if (!reg) {
        uint64_t *k = g_new(uint64_t, 1);
        uint64_t base = key << 21;

        /* vtd_map() builds the missing upper levels and the leaf table;
         * the shadow (all zero) then overwrites that one entry. */
        reg = g_new0(CtRegion, 1);
        vtd_map(r->d, base, r->pool_gpa, 4096, VTD_PTE_RW, VTD_PAGE_4K);
        reg->table = vtd_pte_gpa(r->d, base, 1);
        g_assert(reg->table);
        reg->lo = 0;
        reg->hi = 0;
        g_ptr_array_add(r->dirty, reg);
        *k = key;
        g_hash_table_insert(r->regions, k, reg);
    }
    return reg;
}

static void ct_set_pte(CtRun *r, uint64_t iova, uint64_t pte)
{
    CtRegion *reg = ct_region(r, iova);
    int i = (iova >> 12) & 511;

    if (reg->lo > reg->hi) {
        reg->lo = reg->hi = i;
        g_ptr_array_add(r->dirty, reg);
    } else {
        reg->lo = MIN(reg->lo, i);
        reg->hi = MAX(reg->hi, i);
    }
    reg->pte[i] = cpu_to_le64(pte);
}

static void ct_sync_ptes(CtRun *r)
{
    for (guint i = 0; i < r->dirty->len; i++) {
        CtRegion *reg = g_ptr_array_index(r->dirty, i);

        if (reg->lo <= reg->hi) {
            qtest_memwrite(r->e.qts, reg->table + reg->lo * 8,
                           &reg->pte[reg->lo], (reg->hi - reg->lo + 1) * 8);
            r->pte_writes++;
            reg->lo = 1;
            reg->hi = 0;
        }
    }
    g_ptr_array_set_size(r->dirty, 0);
}

static uint64_t ct_target(CtRun *r, const CtMap *m, uint64_t page)
{
    return r->pool_gpa + ((m->pool + page) % CT_POOL_PAGES) * 4096;
}

/* Probes and invalidation callbacks */

static void ct_probe(CtRun *r, CtMap *m)
{
    uint8_t buf[CT_PROBE_LEN], marker[CT_PROBE_LEN];
    uint32_t st;

    memset(marker, CT_MARKER, sizeof(marker));
    qtest_memwrite(r->e.qts, r->scratch_gpa, marker, sizeof(marker));
    st = vdma_copy(&r->e.dma[m->dev], m->iova, CT_SCRATCH_IOVA,
                   CT_PROBE_LEN, NULL);
    if (st != VIOMMU_DMA_ST_READ_FAULT) {
        g_test_message("DMA read of IOVA 0x%" PRIx64 " (mapping #%" PRIu64
                       ", %" PRIu64 " bytes) after its invalidation "
                       "completed: status 0x%x, expected a read fault",
                       m->iova, m->serial, m->bytes, st);
        g_test_fail();
    }
    qtest_memread(r->e.qts, r->scratch_gpa, buf, sizeof(buf));
    g_assert_cmpmem(buf, sizeof(buf), marker, sizeof(marker));
    r->probes++;
}

static void ct_invalidated(CtRun *r, uint64_t start, uint64_t end)
{
    /* Everything unmapped before the invalidation and inside it is now
     * unreachable; probe what DMA used while it was mapped. */
    for (guint i = 0; i < r->pending->len; ) {
        CtMap *m = g_ptr_array_index(r->pending, i);

        if (m->iova < end && m->iova + m->extent > start) {
            m->state = CT_INVALIDATED;
            if (m->dma) {
                ct_probe(r, m);
                m->dma = false;
            }
            g_ptr_array_remove_index_fast(r->pending, i);
        } else {
            i++;
        }
    }
}

/* Queue an IOTLB invalidation (not with $VIOMMU_CT_SKIP_INVALIDATION, which
 * shows that the probes catch a missing one: the run must fail). */
static void ct_push_iotlb(CtRun *r, int gran, uint16_t did, uint64_t addr,
                          unsigned am)
{
    if (!r->skip_invalidation) {
        vtd_qi_push(&r->e.g, vtd_desc_iotlb(gran, did, addr, am, false));
    }
}

static void ct_wait(CtRun *r)
{
    g_assert_true(vtd_qi_sync(&r->e.g));
    r->waits++;
}

static void ct_flush_range(void *opaque, uint64_t iova, uint64_t bytes)
{
    CtRun *r = opaque;
    uint64_t end = iova + bytes;
    unsigned am = 0;
    uint64_t base;

    g_assert_false(r->in_flush);
    r->in_flush = true;
    r->flush_range_calls++;
    ct_sync_ptes(r);
    /* The smallest naturally aligned 2^am pages covering the range. */
    for (;;) {
        base = iova & ~((4096ULL << am) - 1);
        if (base + (4096ULL << am) >= end) {
            break;
        }
        am++;
    }
    if (am <= r->mamv) {
        ct_push_iotlb(r, VTD_GRAN_PAGE, CT_DID, base, am);
        r->psi++;
        r->psi_pages += 1ULL << am;
    } else {
        ct_push_iotlb(r, VTD_GRAN_DOMAIN, CT_DID, 0, 0);
        r->dsi++;
        base = 0;
        end = r->top;
        am = 0;
    }
    ct_wait(r);
    ct_invalidated(r, base, am ? base + (4096ULL << am) : MAX(end, base + 4096));
    r->in_flush = false;
}

static void ct_flush_all(void *opaque, uint64_t ranges)
{
    CtRun *r = opaque;

    g_assert_false(r->in_flush);
    r->in_flush = true;
    r->flush_all_calls++;
    /* @ranges: what the policy frees after this flush.  An unmap that
     * triggers a flush has cleared its PTEs already, so the test counts
     * its range as invalidated by it, while the policy queues that range
     * after the flush, for the next one ("carried").  The async list
     * frees exactly what was unmapped since its last flush; the flush
     * queue also entries an earlier flush covered that are not freed yet. */
    if (!strcmp(r->c->policy, "global-list")) {
        g_assert_cmpuint(ranges + r->in_unmap, ==, r->pending->len + r->carried);
    } else if (!strcmp(r->c->policy, "percpu-defer")) {
        /* one flush per non-empty queue, each of them global: after the
         * first, the test has nothing pending that the next one covers */
        g_assert_cmpuint(ranges, >, 0);
    } else {
        g_assert_cmpuint(ranges + r->in_unmap, >=, r->pending->len);
    }
    r->carried = r->in_unmap;
    r->flush_all_batch_max = MAX(r->flush_all_batch_max, r->pending->len);
    ct_sync_ptes(r);
    if (r->all_kind == CT_FLUSH_GLOBAL) {
        ct_push_iotlb(r, VTD_GRAN_GLOBAL, 0, 0, 0);
        r->gsi++;
    } else {
        ct_push_iotlb(r, VTD_GRAN_DOMAIN, CT_DID, 0, 0);
        r->dsi++;
    }
    ct_wait(r);
    ct_invalidated(r, 0, r->top);
    r->in_flush = false;
}

static const ViommuIovaFlushOps ct_ops = {
    .flush_range = ct_flush_range,
    .flush_all = ct_flush_all,
};

/* Map and unmap */

/* The ranges in r->maps never overlap (a new mapping replaces the
 * invalidated ranges it overlaps), so a binary search finds any overlap. */
typedef struct CtRange {
    uint64_t start, end;
} CtRange;

static gint ct_overlap_cmp(gconstpointer key, gconstpointer data)
{
    const CtMap *m = container_of(key, CtMap, iova);
    const CtRange *q = data;

    if (m->iova >= q->end) {
        return -1;
    }
    return m->iova + m->extent <= q->start ? 1 : 0;
}

static CtMap *ct_map(CtRun *r, unsigned cpu, unsigned dev, uint64_t bytes)
{
    uint64_t iova = 0, extent;
    CtRange q;
    CtMap *m, *o;
    ViommuIovaStatus rc;

    g_assert_cmpuint(dev, <, r->ndev);
    CT_OK(viommu_iova_set_cpu(r->h, cpu));
    rc = viommu_iova_map_dev(r->h, dev, r->mask[dev], bytes, &iova);
    if (rc) {
        g_test_message("CPU %u: map of %" PRIu64 " bytes for device %u "
                       "failed (%s) after %" PRIu64 " maps, %" PRIu64
                       " live", cpu, bytes, dev, viommu_iova_status_name(rc),
                       r->nmaps, r->live);
        g_assert_cmpint(rc, ==, VIOMMU_IOVA_OK);
    }
    extent = viommu_iova_map_extent(r->h, bytes);
    g_assert_cmphex(iova % 4096, ==, 0);
    g_assert_cmphex(iova, >=, CT_RESERVED);
    g_assert_cmphex(iova + extent - 1, <=, r->mask[dev]);
    g_assert_cmphex(iova + extent, <=, r->top);
    g_assert_false(iova < CT_MSI_BASE + CT_MSI_SIZE &&
                   iova + extent > CT_MSI_BASE);

    q.start = iova;
    q.end = iova + extent;
    while ((o = g_tree_search(r->maps, ct_overlap_cmp, &q))) {
        if (o->state != CT_INVALIDATED) {
            g_test_message("CPU %u: IOVA [0x%" PRIx64 ", 0x%" PRIx64 ") "
                           "handed out while mapping #%" PRIu64 " [0x%" PRIx64
                           ", 0x%" PRIx64 ") is %s", cpu, iova, iova + extent,
                           o->serial, o->iova, o->iova + o->extent,
                           o->state == CT_LIVE ? "live" :
                           "unmapped and not yet invalidated");
            g_assert_cmpint(o->state, ==, CT_INVALIDATED);
        }
        r->reused++;
        g_tree_remove(r->maps, &o->iova);
    }

    m = g_new0(CtMap, 1);
    m->iova = iova;
    m->extent = extent;
    m->bytes = bytes;
    m->serial = ++r->serial;
    m->dev = dev;
    m->state = CT_LIVE;
    m->pool = r->pool_next;
    r->pool_next = (r->pool_next + extent / 4096) % CT_POOL_PAGES;
    g_tree_insert(r->maps, &m->iova, m);
    for (uint64_t p = 0; p < extent / 4096; p++) {
        ct_set_pte(r, iova + p * 4096, ct_target(r, m, p) | VTD_PTE_RW);
    }
    r->nmaps++;
    r->live++;
    r->max_live = MAX(r->max_live, r->live);

    /* At setup also the first mappings of each CPU: rings refill oldest
     * first, so those are the ones a short run unmaps (and probes). */
    if (m->serial % (r->in_setup ? r->c->dma_every : r->c->dma_every_run) == 0 ||
        (r->in_setup && r->setup_maps_cpu[cpu]++ < CT_SETUP_DMA_FIRST)) {
        /* DMA through the new mapping: each page must receive it. */
        uint64_t pattern = 0xc0de000000000000ULL | m->serial;
        uint32_t len = MIN(bytes, 65536);

        ct_sync_ptes(r);
        g_assert_cmphex(vdma_fill(&r->e.dma[dev], iova, len, pattern, NULL),
                        ==, VIOMMU_DMA_ST_OK);
        for (uint64_t off = 0; off < len; off += 4096) {
            g_assert_cmphex(qtest_readq(r->e.qts, ct_target(r, m, off / 4096)),
                            ==, pattern);
            r->pages_checked++;
        }
        m->dma = true;
        r->dmas++;
    }
    return m;
}

static void ct_unmap(CtRun *r, unsigned cpu, CtMap *m)
{
    g_assert_cmpint(m->state, ==, CT_LIVE);
    for (uint64_t p = 0; p < m->extent / 4096; p++) {
        ct_set_pte(r, m->iova + p * 4096, 0);
    }
    m->state = CT_UNMAPPED;
    g_ptr_array_add(r->pending, m);
    r->nunmaps++;
    r->live--;
    CT_OK(viommu_iova_set_cpu(r->h, cpu));
    r->in_unmap = true;
    CT_OK(viommu_iova_unmap(r->h, m->iova, m->bytes));
    r->in_unmap = false;
}

static void ct_run_steps(CtRun *r, unsigned cpu, const ViommuSimStep *s,
                         int n)
{
    for (int i = 0; i < n; i++, s++) {
        CtMap **slot;

        r->steps++;
        switch (s->kind) {
        case VIOMMU_SIM_WORK:
            /* the CPUs run in parallel: the clock moves by 1/N of it */
            CT_OK(viommu_iova_set_cpu(r->h, cpu));
            CT_OK(viommu_iova_advance(r->h, s->value / r->ncpus));
            break;
        case VIOMMU_SIM_MAP:
            g_assert_cmpuint(s->arg, <, r->nslots);
            slot = &r->slots[cpu * r->nslots + s->arg];
            g_assert_null(*slot);       /* rings unmap a slot first */
            *slot = ct_map(r, cpu, s->device, s->value);
            break;
        case VIOMMU_SIM_UNMAP:
            g_assert_cmpuint(s->arg, <, r->nslots);
            slot = &r->slots[cpu * r->nslots + s->arg];
            if (*slot) {
                ct_unmap(r, cpu, *slot);
                *slot = NULL;
            }
            break;
        case VIOMMU_SIM_UNMAP_POST:
            /* the completion runs on CPU value: its mailbox unmaps it */
            g_assert_cmpuint(s->arg, <, r->nslots);
            slot = &r->slots[cpu * r->nslots + s->arg];
            if (*slot) {
                g_queue_push_tail(&r->mailbox[s->value % r->ncpus], *slot);
                *slot = NULL;
            }
            break;
        case VIOMMU_SIM_MAP_POST:
            g_queue_push_tail(&r->mailbox[s->arg % r->ncpus],
                              ct_map(r, cpu, s->device, s->value));
            break;
        case VIOMMU_SIM_UNMAP_MAILBOX: {
            GQueue *box = &r->mailbox[cpu];
            uint64_t k = s->value ? MIN(s->value, box->length) : box->length;

            while (k--) {
                ct_unmap(r, cpu, g_queue_pop_head(box));
            }
            break;
        }
        default:
            g_assert_not_reached();
        }
    }
}

/* viommu-vtd statistics */

static QDict *ct_stats(CtRun *r)
{
    QDict *resp = qtest_qmp(r->e.qts, "{'execute': 'qom-get', 'arguments': "
                            "{'path': '/machine/peripheral/viommu0', "
                            "'property': 'stats'}}");
    QDict *stats;

    g_assert(qdict_haskey(resp, "return"));
    stats = qobject_to(QDict, qobject_from_json(qdict_get_str(resp, "return"),
                                                &error_abort));
    g_assert(stats);
    qobject_unref(resp);
    return stats;
}

static uint64_t ct_stat(QDict *stats, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    QDict *d = stats;
    int i;

    for (i = 0; parts[i + 1]; i++) {
        d = qdict_get_qdict(d, parts[i]);
        g_assert_nonnull(d);
    }
    g_assert(qdict_haskey(d, parts[i]));
    return qnum_get_uint(qobject_to(QNum, qdict_get(d, parts[i])));
}

typedef struct CtDev {
    uint64_t gsi, dsi, psi, psi_pages, unmapped, waits, faults_read,
             recorded, suppressed;
} CtDev;

static void ct_dev_stats(CtRun *r, CtDev *s)
{
    QDict *st = ct_stats(r);

    s->gsi = ct_stat(st, "invalidations.iotlb.global");
    s->dsi = ct_stat(st, "invalidations.iotlb.domain");
    s->psi = ct_stat(st, "invalidations.iotlb.page");
    s->psi_pages = ct_stat(st, "invalidations.iotlb.pages");
    s->unmapped = ct_stat(st, "pages.unmapped");
    s->waits = ct_stat(st, "queue.waits.status_write");
    s->faults_read = ct_stat(st, "faults.by_reason.read");
    s->recorded = ct_stat(st, "faults.recorded");
    s->suppressed = ct_stat(st, "faults.suppressed_fpd");
    qobject_unref(st);
}

/* The case */

static void ct_start(CtRun *r)
{
    VtEnv *e = &r->e;
    uint64_t cap;

    vt_start(e, "viommu-vtd", ",id=viommu0", r->ndev, CT_RAM_MB, NULL);
    cap = e->g.cap;
    r->top = 1ULL << VTD_CAP_MGAW(cap);
    r->mamv = VTD_CAP_MAMV(cap);
    g_assert_true(cap & VTD_CAP_PSI);
    g_assert_true(e->g.ecap & VTD_ECAP_QI);
    vtd_set_root_table(&e->g);
    vtd_qi_enable(&e->g, 0);
    r->d = vtd_domain_new(&e->g, CT_DID, (VTD_CAP_SAGAW(cap) & 4) ? 4 : 3);
    if (r->d->levels == 3) {
        r->top = MIN(r->top, 1ULL << 39);
    }
    r->pool_gpa = vtd_alloc(&e->g, CT_POOL_PAGES * 4096ULL, 4096);
    r->scratch_gpa = vtd_alloc(&e->g, 4096, 4096);

    /* rings and the probe buffer at reserved IOVAs below 1 MiB */
    for (unsigned i = 0; i < r->ndev; i++) {
        uint64_t len = ROUND_UP(VT_RING_SIZE * VIOMMU_DMA_DESC_SIZE, 4096);

        for (uint64_t off = 0; off < len; off += 4096) {
            ct_set_pte(r, CT_RING_IOVA(i) + off,
                       (e->ring[i] + off) | VTD_PTE_RW);
        }
        vdma_queue_disable(&e->dma[i], 0);
        g_assert_true(vdma_queue_setup(&e->dma[i], 0, e->ring[i],
                                       CT_RING_IOVA(i), VT_RING_SIZE));
    }
    ct_set_pte(r, CT_SCRATCH_IOVA, r->scratch_gpa | VTD_PTE_RW);
    ct_sync_ptes(r);
    for (unsigned i = 0; i < r->ndev; i++) {
        /* FPD: the probes fault on purpose; count, do not record them */
        vtd_attach(r->d, vt_sid(i));
        vtd_set_context_raw(&e->g, vt_sid(i),
                            qtest_readq(e->qts, e->g.ctx[0] + vt_sid(i) * 16) |
                            VTD_CTX_FPD,
                            qtest_readq(e->qts,
                                        e->g.ctx[0] + vt_sid(i) * 16 + 8));
    }
    vtd_flush_all(&e->g);
    vtd_enable_translation(&e->g);
}

static void ct_test(const void *opaque)
{
    const CtCase *c = opaque;
    g_autofree ViommuSimStep *steps = g_new(ViommuSimStep, CT_MAX_STEPS);
    CtRun r = { .c = c };
    ViommuIovaConfig icfg = { 0 };
    CtDev before, after;
    uint64_t failed32, retries, rflush, unmaps_iova, flushes_iova, fastfail;
    uint64_t setup_maps;

    r.skip_invalidation = getenv("VIOMMU_CT_SKIP_INVALIDATION") != NULL;
    {
        ViommuSimParams *p = viommu_sim_params_new();
        g_autofree char *cpus = g_strdup_printf("%u", c->cpus);
        char err[256];

        g_assert_nonnull(p);
        if (viommu_sim_params_load_case(p, c->workload, NULL, err, sizeof(err)) ||
            viommu_sim_params_set(p, "cpus", cpus, err, sizeof(err)) ||
            viommu_sim_params_set(p, "sockets", "1", err, sizeof(err)) ||
            viommu_sim_params_set(p, "seed", "1", err, sizeof(err))) {
            g_test_message("case %s (in %s): %s", c->workload,
                           viommu_sim_cases_dir(), err);
            g_assert_not_reached();
        }
        r.w = viommu_sim_workload_from_params(p);
        viommu_sim_params_free(p);
    }
    g_assert_nonnull(r.w);
    r.ncpus = viommu_sim_workload_cpus(r.w);
    r.nslots = viommu_sim_workload_slots(r.w);
    r.ndev = viommu_sim_workload_device_count(r.w);
    r.shift = viommu_sim_workload_granule_shift(r.w);
    g_assert_cmpuint(r.ndev, >=, 1);
    g_assert_cmpuint(r.ndev, <=, 8);
    g_assert_cmpuint(r.ncpus, <=, G_N_ELEMENTS(r.setup_maps_cpu));
    for (unsigned i = 0; i < r.ndev; i++) {
        r.mask[i] = viommu_sim_workload_device_mask(r.w, i);
    }
    r.all_kind = !strcmp(c->policy, "flush-queue") ? CT_FLUSH_DOMAIN
                                                   : CT_FLUSH_GLOBAL;
    r.maps = g_tree_new_full(ct_cmp_u64, NULL, NULL, g_free);
    r.regions = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                      g_free);
    r.dirty = g_ptr_array_new();
    r.pending = g_ptr_array_new();
    r.slots = g_new0(CtMap *, (size_t)r.ncpus * r.nslots);
    r.mailbox = g_new0(GQueue, r.ncpus);

    ct_start(&r);
    icfg.variant = c->variant;
    icfg.flush_policy = c->policy;
    icfg.sac_flush = !strcmp(c->dma, "sac-flush");
    icfg.sac_once = !strcmp(c->dma, "sac-once");
    icfg.forcedac = !strcmp(c->dma, "forcedac");
    g_assert_true(icfg.sac_flush || icfg.sac_once || icfg.forcedac ||
                  !strcmp(c->dma, "sac"));
    icfg.granule_shift = r.shift;
    icfg.ncpus = r.ncpus;
    icfg.start_pfn = CT_RESERVED >> r.shift;
    icfg.end_pfn = r.top >> r.shift;
    icfg.stats = true;
    icfg.manual_clock = true;
    icfg.flush_ops = &ct_ops;
    icfg.flush_opaque = &r;
    CT_OK(viommu_iova_new(&icfg, &r.h));
    /* DMA writes to 0xfee00000-0xfeefffff are interrupt requests, never
     * translated: Linux reserves the window in every DMA domain */
    CT_OK(viommu_iova_reserve(r.h, CT_MSI_BASE >> r.shift,
                              (CT_MSI_BASE + CT_MSI_SIZE - 1) >> r.shift));
    ct_dev_stats(&r, &before);

    r.in_setup = true;
    for (unsigned cpu = 0; cpu < r.ncpus; cpu++) {
        int n = viommu_sim_workload_setup(r.w, cpu, steps, CT_MAX_STEPS);

        g_assert_cmpint(n, >=, 0);
        g_assert_cmpint(n, <=, CT_MAX_STEPS);
        ct_run_steps(&r, cpu, steps, n);
    }
    setup_maps = r.nmaps;
    r.in_setup = false;
    if (c->exhausts_32bit) {
        /* the setup alone filled the 32-bit space */
        g_assert_cmpuint(viommu_iova_counter(r.h, "failed_32bit"), >, 0);
    }
    for (unsigned round = 0; round < c->rounds; round++) {
        for (unsigned cpu = 0; cpu < r.ncpus; cpu++) {
            int n = viommu_sim_workload_next(r.w, cpu, steps, CT_MAX_STEPS);

            g_assert_cmpint(n, >=, 0);
            g_assert_cmpint(n, <=, CT_MAX_STEPS);
            ct_run_steps(&r, cpu, steps, n);
        }
    }
    /* what the policy still holds is flushed, probed and freed */
    viommu_iova_drain(r.h);
    g_assert_cmpuint(r.pending->len, ==, 0);
    g_assert_cmpuint(viommu_iova_pending(r.h), ==, 0);
    ct_dev_stats(&r, &after);

    failed32 = viommu_iova_counter(r.h, "failed_32bit");
    retries = viommu_iova_counter(r.h, "retries");
    rflush = viommu_iova_counter(r.h, "rcache_flush_all");
    fastfail = viommu_iova_counter(r.h, "fast_fail_32bit");
    unmaps_iova = viommu_iova_counter(r.h, "unmaps");
    flushes_iova = viommu_iova_counter(r.h, "unmap_flushes");

    g_test_message("%s: %u CPUs, %" PRIu64 " steps, %" PRIu64 " maps (%"
                   PRIu64 " at setup, %" PRIu64 " live at most, %" PRIu64
                   " reused after invalidation), %" PRIu64 " unmaps",
                   c->path, r.ncpus, r.steps, r.nmaps, setup_maps, r.max_live,
                   r.reused, r.nunmaps);
    g_test_message("  viommu-vtd: IOTLB invalidations global %" PRIu64
                   ", domain %" PRIu64 ", page %" PRIu64 " (%" PRIu64
                   " pages, %" PRIu64 " seen unmapped), %" PRIu64 " waits",
                   after.gsi - before.gsi, after.dsi - before.dsi,
                   after.psi - before.psi, after.psi_pages - before.psi_pages,
                   after.unmapped - before.unmapped,
                   after.waits - before.waits);
    g_test_message("  DMA: %" PRIu64 " writes through new mappings (%" PRIu64
                   " pages checked), %" PRIu64 " probes of invalidated IOVAs "
                   "(all faulted: %" PRIu64 " read faults)", r.dmas,
                   r.pages_checked, r.probes,
                   after.faults_read - before.faults_read);
    g_test_message("  allocator %s/%s/%s: failed_32bit %" PRIu64 ", retries %"
                   PRIu64 ", rcache_flush_all %" PRIu64 ", fast_fail_32bit %"
                   PRIu64 ", unmap_flushes %" PRIu64 " (largest batch %"
                   PRIu64 ")", c->variant, c->policy, c->dma, failed32,
                   retries, rflush, fastfail, flushes_iova,
                   r.flush_all_batch_max);

    /* the workload really ran: every step kind it uses happened */
    g_assert_cmpuint(r.nmaps, >, setup_maps);
    g_assert_cmpuint(r.nunmaps, >, 0);
    g_assert_cmpuint(r.dmas, >, 0);
    g_assert_cmpuint(r.probes, >, 0);
    g_assert_cmpuint(unmaps_iova, ==, r.nunmaps);

    /* the device saw exactly the invalidations sent */
    g_assert_cmpuint(after.gsi - before.gsi, ==, r.gsi);
    g_assert_cmpuint(after.dsi - before.dsi, ==, r.dsi);
    g_assert_cmpuint(after.psi - before.psi, ==, r.psi);
    g_assert_cmpuint(after.psi_pages - before.psi_pages, ==, r.psi_pages);
    g_assert_cmpuint(after.waits - before.waits, ==, r.waits);
    /* every probe faulted on a read, none was recorded (FPD) */
    g_assert_cmpuint(after.faults_read - before.faults_read, >=, r.probes);
    g_assert_cmpuint(after.recorded, ==, before.recorded);
    g_assert_cmpuint(after.suppressed - before.suppressed, >=, r.probes);

    /* the flush policy's signature */
    if (!strcmp(c->policy, "strict")) {
        /* one page-selective invalidation per unmap, after the unmap */
        g_assert_cmpuint(r.flush_range_calls, ==, r.nunmaps);
        g_assert_cmpuint(r.flush_all_calls, ==, 0);
        g_assert_cmpuint(after.psi - before.psi, ==, r.nunmaps - r.dsi);
        g_assert_cmpuint(after.gsi - before.gsi, ==, 0);
        g_assert_cmpuint(after.unmapped - before.unmapped, ==,
                         after.psi_pages - before.psi_pages);
    } else {
        /* batched: no page-selective requests, one global (async list,
         * per-CPU deferred) or domain (flush queue) request per batch */
        g_assert_cmpuint(r.flush_range_calls, ==, 0);
        g_assert_cmpuint(after.psi - before.psi, ==, 0);
        if (r.all_kind == CT_FLUSH_GLOBAL) {
            g_assert_cmpuint(after.gsi - before.gsi, ==, r.flush_all_calls);
            g_assert_cmpuint(after.dsi - before.dsi, ==, 0);
        } else {
            g_assert_cmpuint(after.dsi - before.dsi, ==, r.flush_all_calls);
            g_assert_cmpuint(after.gsi - before.gsi, ==, 0);
        }
        g_assert_cmpuint(r.flush_all_calls, >, 0);
        g_assert_cmpuint(r.flush_all_batch_max, >, 1);
        g_assert_cmpuint(r.flush_all_calls * 10, <, r.nunmaps);
    }

    /* the exhausted 32-bit space in the allocator's counters */
    if (c->exhausts_32bit) {
        g_assert_cmpuint(failed32, >, 0);
        g_assert_cmpuint(retries, >=, failed32);
        if (!strcmp(c->dma, "sac-flush") && strcmp(c->variant, "linux-4.4")) {
            /* the failed attempt flushed every CPU's cache */
            g_assert_cmpuint(rflush, >=, failed32);
        }
    }

    /* the reserved window was never handed out, nor freed */
    g_assert_cmpuint(viommu_iova_counter(r.h, "reserves"), ==, 1);
    g_assert_cmpuint(viommu_iova_counter(r.h, "bad_free"), ==, 0);
    viommu_iova_destroy(r.h);
    viommu_sim_workload_free(r.w);
    vt_stop(&r.e);
    g_free(r.d);
    g_tree_destroy(r.maps);
    g_hash_table_destroy(r.regions);
    g_ptr_array_free(r.dirty, true);
    g_ptr_array_free(r.pending, true);
    g_free(r.slots);
    for (unsigned i = 0; i < r.ncpus; i++) {
        g_queue_clear(&r.mailbox[i]);
    }
    g_free(r.mailbox);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!vt_have_device("viommu-vtd") || !vt_have_device("viommu-dma")) {
        g_test_message("viommu-vtd or viommu-dma missing from this QEMU");
        return g_test_run();
    }
    for (size_t i = 0; i < G_N_ELEMENTS(ct_cases); i++) {
        g_autofree char *path =
            g_strdup_printf("viommu/contention/%s", ct_cases[i].path);

        qtest_add_data_func(path, &ct_cases[i], ct_test);
    }
    return g_test_run();
}
