/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Randomized differential test: viommu-vtd against intel-iommu against a
 * host-side model.
 *
 * Two machines run side by side, one per IOMMU, each with NDEV viommu-dma
 * devices.  A seeded generator produces one sequence of operations that is
 * applied to both: page-table changes (4K leaves, 2M superpages, tables
 * replaced by superpages and back, read-only/read-write/not-present),
 * queued invalidations (IOTLB global, domain, page-selective with an
 * address mask, context-cache global/domain/device) always closed by a
 * status-write wait, moves of a device to another domain, and DMA (copy,
 * fill, compare of 1 byte .. 3 pages at any alignment).
 *
 * The model tracks which translations the specification fixes: a change is
 * "dirty" until an invalidation that covers it has completed (for a moved
 * device: context-cache invalidation, then an IOTLB invalidation of its old
 * domain).  DMA is generated only over clean translations, so a stale
 * IOTLB entry is never a legitimate answer; each DMA's status, stop
 * offset, fault record (reason, page, source-id, type) and the bytes it
 * wrote must match the model on both machines.
 *
 * Avoided on purpose (docs/intel-iommu-deviations.rst): a write to a
 * read-only page that may be in intel-iommu's IOTLB (D1), wait descriptors
 * without SW (D2) or with SW+IF (aborts intel-iommu).
 *
 * $VIOMMU_SEED sets the seed (default: random, printed); $VIOMMU_DIFF_OPS
 * the operations per sequence; $VIOMMU_DIFF_VERBOSE=1 logs every op.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "viommu-test-env.h"

#define NDEV        3
#define NDOM        3
#define NSLOT       8                   /* 2M slots per domain */
#define WIN         0x40000000ULL       /* data IOVA window */
#define SLOT_SZ     VTD_PAGE_2M
#define PPS         512                 /* 4K pages per slot */
#define N4K         256                 /* 4K frame pool */
#define N2M         3                   /* 2M frame pool */
#define NSEQ        4
#define DEF_OPS     2500                /* per sequence: 10,000 per run */

enum { ST_EMPTY, ST_LEAF2M, ST_TABLE };

typedef struct Page {
    uint64_t gpa;                       /* 0: not present */
    uint8_t perm;                       /* VTD_PTE_R / VTD_PTE_RW */
    bool dirty;                         /* changed, not yet invalidated */
    bool touched;                       /* accessed since invalidated */
} Page;

typedef struct Slot {
    int kind;
    uint64_t gpa2m;
    uint8_t perm2m;
    bool sdirty;                        /* level-2 entry changed */
    bool stouched;                      /* 2M leaf accessed since then */
    uint64_t l1;                        /* this slot's 4K table (GPA) */
    Page pg[PPS];
} Slot;

typedef struct Model {
    uint64_t l2[NDOM];                  /* GPA of the window's L2 table */
    Slot slot[NDOM][NSLOT];
    int dom[NDEV];
    int ctx_stage[NDEV];                /* 0 clean, 1 needs cc, 2 needs IOTLB */
    int old_dom[NDEV];
    uint64_t pool4k, pool2m;            /* GPAs */
    uint8_t *mem4k, *mem2m;             /* model of the pools' contents */
} Model;

typedef struct Side {
    VtEnv e;
    VtdDomain *d[NDOM];
} Side;

typedef struct Diff {
    uint64_t seed, rng;
    /* dry runs mark pages touched too, and undo it afterwards */
    bool *undo[64];
    int nundo;
    /* time per operation kind, for the summary */
    int64_t t_dma, t_map, t_inv;
    unsigned op, nops;
    bool verbose;
    bool superpages;
    unsigned max_am;
    Model m;
    Side s[2];
    const char *name[2];
    /* stats */
    unsigned n_dma, n_fault, n_map, n_inv, n_ctx, n_reject;
} Diff;

static uint64_t rnd(Diff *t)
{
    /* splitmix64: reproducible on every host */
    uint64_t z = (t->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint32_t rn(Diff *t, uint32_t n)
{
    return rnd(t) % n;
}

#define FAIL(t, fmt, ...) \
    do { \
        g_test_message("FAIL seed 0x%" PRIx64 " (VIOMMU_SEED=0x%" PRIx64 \
                       " to reproduce) op %u: " fmt, (t)->seed, \
                       (t)->seed, (t)->op, ## __VA_ARGS__); \
        g_test_fail(); \
        return false; \
    } while (0)

static void vlog(Diff *t, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void vlog(Diff *t, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *s = NULL;

    if (!t->verbose) {
        return;
    }
    va_start(ap, fmt);
    s = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_test_message("op %u: %s", t->op, s);
}

static uint8_t *model_mem(Model *m, uint64_t gpa)
{
    if (gpa >= m->pool4k && gpa < m->pool4k + N4K * 4096ULL) {
        return m->mem4k + (gpa - m->pool4k);
    }
    g_assert(gpa >= m->pool2m && gpa < m->pool2m + N2M * SLOT_SZ);
    return m->mem2m + (gpa - m->pool2m);
}

/*
 * qtest scans its input line for the newline at every read, so one huge
 * b64write/b64read is quadratic: move big buffers in 64 KiB pieces.
 */
#define XFER_CHUNK  (64 * 1024)

static void big_write(QTestState *qts, uint64_t gpa, const uint8_t *p,
                      size_t len)
{
    for (size_t o = 0; o < len; o += XFER_CHUNK) {
        qtest_bufwrite(qts, gpa + o, p + o, MIN(XFER_CHUNK, len - o));
    }
}

static void big_read(QTestState *qts, uint64_t gpa, uint8_t *p, size_t len)
{
    for (size_t o = 0; o < len; o += XFER_CHUNK) {
        qtest_bufread(qts, gpa + o, p + o, MIN(XFER_CHUNK, len - o));
    }
}

/* ---- page-table changes, applied to both machines ------------------- */

static void both_writeq(Diff *t, uint64_t gpa, uint64_t v)
{
    for (int i = 0; i < 2; i++) {
        qtest_writeq(t->s[i].e.qts, gpa, v);
    }
}

static uint64_t random_frame(Diff *t)
{
    /* 4K frames from the 4K pool or inside a 2M frame (aliasing) */
    if (rn(t, 4) == 0) {
        return t->m.pool2m + rn(t, N2M * PPS) * 4096ULL;
    }
    return t->m.pool4k + rn(t, N4K) * 4096ULL;
}

static void slot_all_dirty(Slot *sl)
{
    sl->sdirty = true;
    for (int p = 0; p < PPS; p++) {
        sl->pg[p].dirty = true;
    }
}

static void op_map(Diff *t)
{
    int d = rn(t, NDOM), s = rn(t, NSLOT);
    Slot *sl = &t->m.slot[d][s];
    uint64_t l2e = t->m.l2[d] + s * 8;
    uint32_t r = rn(t, 100);

    t->n_map++;
    if (r < 6 && t->superpages) {
        /* the slot becomes a 2M superpage */
        sl->kind = ST_LEAF2M;
        sl->gpa2m = t->m.pool2m + rn(t, N2M) * SLOT_SZ;
        sl->perm2m = rn(t, 3) ? VTD_PTE_RW : VTD_PTE_R;
        slot_all_dirty(sl);
        both_writeq(t, l2e, sl->gpa2m | VTD_PTE_PS | sl->perm2m);
        vlog(t, "dom %d slot %d -> 2M 0x%" PRIx64 " perm %d", d, s,
             sl->gpa2m, sl->perm2m);
    } else if (r < 10) {
        sl->kind = ST_EMPTY;
        slot_all_dirty(sl);
        both_writeq(t, l2e, 0);
        vlog(t, "dom %d slot %d -> empty", d, s);
    } else if (r < 16 || sl->kind != ST_TABLE) {
        /* a fresh, empty 4K table */
        for (int i = 0; i < 2; i++) {
            qtest_memset(t->s[i].e.qts, sl->l1, 0, 4096);
        }
        sl->kind = ST_TABLE;
        slot_all_dirty(sl);
        for (int p = 0; p < PPS; p++) {
            sl->pg[p].gpa = 0;
        }
        both_writeq(t, l2e, sl->l1 | VTD_PTE_RW);
        vlog(t, "dom %d slot %d -> table", d, s);
    } else {
        /* change a run of 4K leaves */
        int p0 = rn(t, PPS), n = 1 + rn(t, rn(t, 2) ? 4 : 64);

        for (int p = p0; p < MIN(PPS, p0 + n); p++) {
            Page *pg = &sl->pg[p];
            uint32_t k = rn(t, 10);

            if (k < 1) {
                pg->gpa = 0;
            } else {
                pg->gpa = random_frame(t);
                pg->perm = k < 4 ? VTD_PTE_R : VTD_PTE_RW;
            }
            pg->dirty = true;
            both_writeq(t, sl->l1 + p * 8, pg->gpa ? pg->gpa | pg->perm : 0);
        }
        vlog(t, "dom %d slot %d pages %d+%d changed", d, s, p0, n);
    }
}

/* ---- invalidations ---------------------------------------------------- */

typedef struct Inv {
    int kind;                           /* 0 global, 1 domain, 2 page, 3 cc */
    int gran;                           /* cc: global/domain/device */
    int dom, dev;
    uint64_t addr;
    unsigned am;
} Inv;

static void model_iotlb_inv(Diff *t, const Inv *v)
{
    for (int d = 0; d < NDOM; d++) {
        if (v->kind == 1 && d != v->dom) {
            continue;
        }
        if (v->kind == 2 && d != v->dom) {
            continue;
        }
        for (int s = 0; s < NSLOT; s++) {
            Slot *sl = &t->m.slot[d][s];
            uint64_t sbase = WIN + s * SLOT_SZ;

            for (int p = 0; p < PPS; p++) {
                uint64_t iova = sbase + p * 4096ULL;
                if (v->kind == 2 &&
                    (iova >> (12 + v->am)) != (v->addr >> (12 + v->am))) {
                    continue;
                }
                sl->pg[p].dirty = false;
                sl->pg[p].touched = false;
            }
            if (v->kind != 2 || (v->am >= 9 &&
                (sbase >> (12 + v->am)) == (v->addr >> (12 + v->am)))) {
                sl->sdirty = false;
                sl->stouched = false;
            }
        }
    }
    /* a moved device whose context cache entry was invalidated */
    for (int i = 0; i < NDEV; i++) {
        if (t->m.ctx_stage[i] == 2 &&
            (v->kind == 0 || (v->kind == 1 && v->dom == t->m.old_dom[i]))) {
            t->m.ctx_stage[i] = 0;
        }
    }
}

static void model_cc_inv(Diff *t, const Inv *v)
{
    for (int i = 0; i < NDEV; i++) {
        if (t->m.ctx_stage[i] != 1) {
            continue;
        }
        if (v->gran == VTD_GRAN_GLOBAL ||
            (v->gran == VTD_GRAN_DOMAIN && v->dom == t->m.old_dom[i]) ||
            (v->gran == VTD_GRAN_DEVICE && v->dev == i)) {
            t->m.ctx_stage[i] = 2;
        }
    }
}

static uint16_t did_of(int d)
{
    return d + 1;
}

static bool op_invalidate(Diff *t)
{
    Inv v[4];
    int n = 1 + rn(t, 3);

    for (int k = 0; k < n; k++) {
        uint32_t r = rn(t, 100);

        memset(&v[k], 0, sizeof(v[k]));
        v[k].dom = rn(t, NDOM);
        v[k].dev = rn(t, NDEV);
        if (r < 8) {
            v[k].kind = 0;
        } else if (r < 25) {
            v[k].kind = 1;
        } else if (r < 80) {
            v[k].kind = 2;
            v[k].am = rn(t, t->max_am + 1);
            v[k].addr = (WIN + rnd(t) % (NSLOT * SLOT_SZ)) &
                        ~((4096ULL << v[k].am) - 1);
        } else {
            static const int g[] = { VTD_GRAN_GLOBAL, VTD_GRAN_DOMAIN,
                                     VTD_GRAN_DEVICE };
            v[k].kind = 3;
            v[k].gran = g[rn(t, 3)];
        }
    }
    for (int i = 0; i < 2; i++) {
        VtdGuest *g = &t->s[i].e.g;
        for (int k = 0; k < n; k++) {
            switch (v[k].kind) {
            case 0:
                vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_GLOBAL, 0, 0, 0,
                                              false));
                break;
            case 1:
                vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_DOMAIN,
                                              did_of(v[k].dom), 0, 0, false));
                break;
            case 2:
                vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_PAGE,
                                              did_of(v[k].dom), v[k].addr,
                                              v[k].am, false));
                break;
            case 3:
                vtd_qi_push(g, vtd_desc_cc(v[k].gran, did_of(v[k].dom),
                                           vt_sid(v[k].dev), 0));
                break;
            }
        }
        if (!vtd_qi_sync(g)) {
            FAIL(t, "%s: invalidation wait did not complete (FSTS 0x%x)",
                 t->name[i], vtd_readl(g, VTD_FSTS));
        }
    }
    for (int k = 0; k < n; k++) {
        vlog(t, "inv kind %d gran %d dom %d dev %d addr 0x%" PRIx64 " am %u",
             v[k].kind, v[k].gran, v[k].dom, v[k].dev, v[k].addr, v[k].am);
        if (v[k].kind == 3) {
            model_cc_inv(t, &v[k]);
        } else {
            model_iotlb_inv(t, &v[k]);
        }
    }
    t->n_inv += n;
    return true;
}

static void op_move(Diff *t)
{
    int i = rn(t, NDEV), d = rn(t, NDOM);

    if (t->m.ctx_stage[i] || t->m.dom[i] == d) {
        return;
    }
    t->m.old_dom[i] = t->m.dom[i];
    t->m.dom[i] = d;
    t->m.ctx_stage[i] = 1;
    for (int k = 0; k < 2; k++) {
        vtd_attach(t->s[k].d[d], vt_sid(i));
    }
    t->n_ctx++;
    vlog(t, "dev %d -> dom %d", i, d);
}

/* ---- DMA ---------------------------------------------------------------- */

typedef struct Xlat {
    bool ok;
    uint64_t gpa;
    uint8_t reason;
} Xlat;

typedef struct Expect {
    uint32_t status, result;
    bool fault;
    uint64_t fault_page;
    bool fault_read;
    uint8_t reason;
    int nw;
    uint64_t wgpa[8];
    uint32_t wlen[8];
} Expect;

/*
 * Translate for the model.  Returns false if the answer is not fixed by
 * the specification (dirty) or would hit a known intel-iommu deviation.
 */
static bool model_xlat(Diff *t, int dev, uint64_t iova, bool write,
                       bool commit, Xlat *x)
{
    int d = t->m.dom[dev];
    uint64_t off = iova - WIN;
    Slot *sl;
    Page *pg;
    uint8_t perm;
    uint64_t gpa;

    g_assert(iova >= WIN && off < NSLOT * SLOT_SZ);
    sl = &t->m.slot[d][off / SLOT_SZ];
    pg = &sl->pg[(off % SLOT_SZ) / 4096];
    if (sl->sdirty || pg->dirty) {
        return false;
    }
    if (sl->kind == ST_LEAF2M) {
        gpa = sl->gpa2m + off % SLOT_SZ;
        perm = sl->perm2m;
    } else if (sl->kind == ST_TABLE && pg->gpa) {
        gpa = pg->gpa + (iova & 0xfff);
        perm = pg->perm;
    } else {
        gpa = 0;
        perm = 0;
    }
    /*
     * D1: a write to a read-only page intel-iommu may have cached (it
     * caches a superpage as one entry, so track those per slot).
     */
    if (write && (perm & VTD_PTE_R) && !(perm & VTD_PTE_W) &&
        (sl->kind == ST_LEAF2M ? sl->stouched : pg->touched)) {
        return false;
    }
    if (!commit) {
        if (!pg->touched && t->nundo < ARRAY_SIZE(t->undo)) {
            t->undo[t->nundo++] = &pg->touched;
        }
        if (sl->kind == ST_LEAF2M && !sl->stouched &&
            t->nundo < ARRAY_SIZE(t->undo)) {
            t->undo[t->nundo++] = &sl->stouched;
        }
    }
    pg->touched = true;
    sl->stouched |= sl->kind == ST_LEAF2M;
    x->ok = perm & (write ? VTD_PTE_W : VTD_PTE_R);
    x->gpa = gpa;
    x->reason = write ? VTD_FR_WRITE : VTD_FR_READ;
    return true;
}

/*
 * Run the operation on the model exactly as viommu-dma chunks it.  With
 * commit false nothing changes and false means "not a valid test".
 */
static bool model_dma(Diff *t, int dev, const VdmaDesc *ds, bool commit,
                      Expect *ex)
{
    static uint8_t a[4096], b[4096];
    uint32_t off = 0;
    Xlat xs, xd;

    memset(ex, 0, sizeof(*ex));
    for (uint32_t i = 0; i < 8 && ds->op == VIOMMU_DMA_OP_FILL; i++) {
        a[i] = ds->pattern >> (8 * i);
    }
    while (off < ds->len) {
        uint64_t d = ds->dst + off, s = ds->src + off;
        uint32_t n = MIN(ds->len - off, 4096 - (d & 4095));

        if (ds->op != VIOMMU_DMA_OP_FILL) {
            n = MIN(n, 4096 - (s & 4095));
        }
        ex->result = off;
        if (ds->op != VIOMMU_DMA_OP_FILL) {
            if (!model_xlat(t, dev, s, false, commit, &xs)) {
                return false;
            }
            if (!xs.ok) {
                ex->status = VIOMMU_DMA_ST_READ_FAULT;
                ex->fault = true;
                ex->fault_page = s & ~0xfffULL;
                ex->fault_read = true;
                ex->reason = xs.reason;
                return true;
            }
        }
        if (!model_xlat(t, dev, d, ds->op != VIOMMU_DMA_OP_COMPARE, commit,
                        &xd)) {
            return false;
        }
        if (!xd.ok) {
            ex->status = ds->op == VIOMMU_DMA_OP_COMPARE ?
                VIOMMU_DMA_ST_READ_FAULT : VIOMMU_DMA_ST_WRITE_FAULT;
            ex->fault = true;
            ex->fault_page = d & ~0xfffULL;
            ex->fault_read = ds->op == VIOMMU_DMA_OP_COMPARE;
            ex->reason = xd.reason;
            return true;
        }
        switch (ds->op) {
        case VIOMMU_DMA_OP_COPY:
            memcpy(a, model_mem(&t->m, xs.gpa), n);
            if (commit) {
                memcpy(model_mem(&t->m, xd.gpa), a, n);
            }
            break;
        case VIOMMU_DMA_OP_FILL:
            for (uint32_t i = 0; i < n; i++) {
                b[i] = a[(off + i) % 8];
            }
            if (commit) {
                memcpy(model_mem(&t->m, xd.gpa), b, n);
            }
            break;
        case VIOMMU_DMA_OP_COMPARE: {
            uint8_t *p = model_mem(&t->m, xs.gpa), *q = model_mem(&t->m,
                                                                  xd.gpa);
            for (uint32_t i = 0; i < n; i++) {
                if (p[i] != q[i]) {
                    ex->result = off + i;
                    ex->status = VIOMMU_DMA_ST_MISMATCH;
                    return true;
                }
            }
            break;
        }
        }
        if (ds->op != VIOMMU_DMA_OP_COMPARE && ex->nw < 8) {
            ex->wgpa[ex->nw] = xd.gpa;
            ex->wlen[ex->nw++] = n;
        }
        off += n;
    }
    ex->status = VIOMMU_DMA_ST_OK;
    ex->result = ds->len;
    return true;
}

/* mostly inside mapped pages of dev's domain, sometimes anywhere */
static uint64_t random_iova(Diff *t, int dev, uint32_t len)
{
    uint64_t span = NSLOT * SLOT_SZ - len, iova = 0;
    int d = t->m.dom[dev];

    if (rn(t, 8)) {
        for (int tries = 0; tries < 8 && !iova; tries++) {
            int s = rn(t, NSLOT), p0 = rn(t, PPS);
            Slot *sl = &t->m.slot[d][s];

            for (int k = 0; k < PPS && !iova; k++) {
                int p = (p0 + k) % PPS;
                if (sl->kind == ST_LEAF2M ||
                    (sl->kind == ST_TABLE && sl->pg[p].gpa &&
                     !sl->pg[p].dirty)) {
                    iova = WIN + s * SLOT_SZ + p * 4096ULL;
                }
            }
        }
    }
    if (!iova) {
        iova = WIN + rn(t, NSLOT * PPS) * 4096ULL;
    }
    /* start near the beginning or the end of the page */
    iova += rn(t, 2) ? rn(t, 64) : 4095 - rn(t, 64);
    return MIN(iova, WIN + span);
}

static bool check_side(Diff *t, int i, int dev, const Expect *ex,
                       uint32_t st, uint32_t res)
{
    Side *sd = &t->s[i];
    VtdGuest *g = &sd->e.g;
    uint32_t fsts = vtd_readl(g, VTD_FSTS);
    VtdFault f;

    if (st != ex->status || res != ex->result) {
        FAIL(t, "%s: status 0x%x result %u, model 0x%x result %u",
             t->name[i], st, res, ex->status, ex->result);
    }
    if (!ex->fault) {
        if (fsts & (VTD_FSTS_PPF | VTD_FSTS_PFO)) {
            FAIL(t, "%s: unexpected fault, FSTS 0x%x", t->name[i], fsts);
        }
    } else {
        if (!vtd_fault_pop(g, &f)) {
            FAIL(t, "%s: no fault record, FSTS 0x%x", t->name[i], fsts);
        }
        if (f.reason != ex->reason || f.addr != ex->fault_page ||
            f.sid != vt_sid(dev) || f.is_read != ex->fault_read) {
            FAIL(t, "%s: fault reason %d addr 0x%" PRIx64 " sid 0x%x read %d,"
                 " model reason %d addr 0x%" PRIx64 " sid 0x%x read %d",
                 t->name[i], f.reason, f.addr, f.sid, f.is_read, ex->reason,
                 ex->fault_page, vt_sid(dev), ex->fault_read);
        }
        /* One failing access is one fault (repeats collapse into it). */
        if (vtd_fault_pop(g, &f)) {
            FAIL(t, "%s: second fault record: reason %d addr 0x%" PRIx64
                 " sid 0x%x", t->name[i], f.reason, f.addr, f.sid);
        }
        vtd_fault_clear_all(g);
    }
    for (int w = 0; w < ex->nw; w++) {
        uint8_t buf[4096];

        qtest_memread(sd->e.qts, ex->wgpa[w], buf, ex->wlen[w]);
        if (memcmp(buf, model_mem(&t->m, ex->wgpa[w]), ex->wlen[w])) {
            FAIL(t, "%s: data written at GPA 0x%" PRIx64 " (+%u) differs "
                 "from the model", t->name[i], ex->wgpa[w], ex->wlen[w]);
        }
    }
    return true;
}

static bool op_dma(Diff *t)
{
    VdmaDesc ds = { 0 };
    Expect ex;
    int dev = rn(t, NDEV);
    uint32_t r = rn(t, 100), len;
    uint32_t st[2], res[2], idx[2];

    if (t->m.ctx_stage[dev]) {
        return true;
    }
    ds.op = r < 55 ? VIOMMU_DMA_OP_COPY : r < 80 ? VIOMMU_DMA_OP_FILL :
            VIOMMU_DMA_OP_COMPARE;
    r = rn(t, 100);
    len = r < 40 ? 1 + rn(t, 64) : r < 85 ? 1 + rn(t, 4096) :
          1 + rn(t, 3 * 4096);
    ds.len = len;
    ds.pattern = rnd(t);
    for (int tries = 0; ; tries++) {
        ds.src = ds.op == VIOMMU_DMA_OP_FILL ? 0 : random_iova(t, dev, len);
        ds.dst = random_iova(t, dev, len);
        if (ds.op == VIOMMU_DMA_OP_COMPARE && rn(t, 2)) {
            /* compare what a copy made equal more often than not */
            ds.dst = ds.src;
        }
        bool ok;

        t->nundo = 0;
        ok = model_dma(t, dev, &ds, false, &ex);
        while (t->nundo) {
            *t->undo[--t->nundo] = false;
        }
        if (ok) {
            break;
        }
        if (tries == 8) {
            t->n_reject++;
            return true;
        }
    }
    g_assert_true(model_dma(t, dev, &ds, true, &ex));
    vlog(t, "dev %d op %d len %u src 0x%" PRIx64 " dst 0x%" PRIx64
         " -> st 0x%x res %u", dev, ds.op, ds.len, ds.src, ds.dst,
         ex.status, ex.result);
    /* start both, then wait for both */
    for (int i = 0; i < 2; i++) {
        idx[i] = vdma_push(&t->s[i].e.dma[dev], 0, &ds);
        vdma_ring_doorbell(&t->s[i].e.dma[dev], 0);
    }
    for (int i = 0; i < 2; i++) {
        st[i] = vdma_wait(&t->s[i].e.dma[dev], 0, idx[i], &res[i]);
    }
    for (int i = 0; i < 2; i++) {
        if (!check_side(t, i, dev, &ex, st[i], res[i])) {
            return false;
        }
    }
    t->n_dma++;
    t->n_fault += ex.fault;
    return true;
}

/* whole-pool comparison of both machines with the model */
static bool check_memory(Diff *t)
{
    g_autofree uint8_t *buf = g_malloc(N2M * SLOT_SZ);

    for (int i = 0; i < 2; i++) {
        big_read(t->s[i].e.qts, t->m.pool4k, buf, N4K * 4096);
        if (memcmp(buf, t->m.mem4k, N4K * 4096)) {
            FAIL(t, "%s: 4K pool differs from the model", t->name[i]);
        }
        big_read(t->s[i].e.qts, t->m.pool2m, buf, N2M * SLOT_SZ);
        if (memcmp(buf, t->m.mem2m, N2M * SLOT_SZ)) {
            FAIL(t, "%s: 2M pool differs from the model", t->name[i]);
        }
    }
    return true;
}

/* ---- setup ------------------------------------------------------------ */

static void side_start(Diff *t, int i)
{
    Side *sd = &t->s[i];
    VtdGuest *g;

    vt_start(&sd->e, t->name[i], NULL, NDEV, 512, NULL);
    g = &sd->e.g;
    vtd_set_root_table(g);
    vtd_qi_enable(g, 0);
    for (int d = 0; d < NDOM; d++) {
        sd->d[d] = vtd_domain_new(g, did_of(d), 4);
        for (int k = 0; k < NDEV; k++) {
            vt_map_rings(&sd->e, sd->d[d], k);
        }
    }
}

static void diff_setup(Diff *t)
{
    Model *m = &t->m;
    uint64_t cap[2];

    for (int i = 0; i < 2; i++) {
        side_start(t, i);
        cap[i] = t->s[i].e.g.cap;
    }
    t->superpages = (VTD_CAP_SLLPS(cap[0]) & VTD_CAP_SLLPS(cap[1]) & 1);
    t->max_am = MIN(9, MIN(VTD_CAP_MAMV(cap[0]), VTD_CAP_MAMV(cap[1])));
    g_assert_true(cap[0] & cap[1] & VTD_CAP_PSI);

    /* identical allocations on both sides: take GPAs from side 0 */
    for (int i = 0; i < 2; i++) {
        VtdGuest *g = &t->s[i].e.g;
        uint64_t p4 = vtd_alloc(g, N4K * 4096ULL, 4096);
        uint64_t p2 = vtd_alloc(g, N2M * SLOT_SZ, SLOT_SZ);

        for (int d = 0; d < NDOM; d++) {
            VtdDomain *dom = t->s[i].d[d];
            uint64_t l2;

            /* build the path down to the window's level-2 table */
            vtd_map(dom, WIN, p4, 4096, VTD_PTE_R, VTD_PAGE_4K);
            l2 = vtd_pte_gpa(dom, WIN, 2);
            g_assert(l2);
            qtest_writeq(g->qts, l2, 0);
            if (i == 0) {
                m->l2[d] = l2;
            } else {
                g_assert_cmphex(m->l2[d], ==, l2);
            }
            for (int s = 0; s < NSLOT; s++) {
                uint64_t l1 = vtd_alloc(g, 4096, 4096);
                if (i == 0) {
                    m->slot[d][s].l1 = l1;
                } else {
                    g_assert_cmphex(m->slot[d][s].l1, ==, l1);
                }
            }
        }
        if (i == 0) {
            m->pool4k = p4;
            m->pool2m = p2;
        } else {
            g_assert_cmphex(m->pool4k, ==, p4);
            g_assert_cmphex(m->pool2m, ==, p2);
        }
    }
    m->mem4k = g_malloc(N4K * 4096);
    m->mem2m = g_malloc(N2M * SLOT_SZ);
    for (size_t k = 0; k < N4K * 4096; k += 8) {
        stq_le_p(m->mem4k + k, rnd(t));
    }
    for (size_t k = 0; k < N2M * SLOT_SZ; k += 8) {
        stq_le_p(m->mem2m + k, rnd(t));
    }
    for (int i = 0; i < 2; i++) {
        QTestState *qts = t->s[i].e.qts;

        big_write(qts, m->pool4k, m->mem4k, N4K * 4096);
        big_write(qts, m->pool2m, m->mem2m, N2M * SLOT_SZ);
        for (int k = 0; k < NDEV; k++) {
            m->dom[k] = k % NDOM;
            vtd_attach(t->s[i].d[m->dom[k]], vt_sid(k));
        }
        vtd_flush_all(&t->s[i].e.g);
        vtd_enable_translation(&t->s[i].e.g);
    }
    for (int d = 0; d < NDOM; d++) {
        for (int s = 0; s < NSLOT; s++) {
            m->slot[d][s].kind = ST_EMPTY;
        }
    }
}

static void diff_teardown(Diff *t)
{
    for (int i = 0; i < 2; i++) {
        for (int d = 0; d < NDOM; d++) {
            g_free(t->s[i].d[d]);
        }
        vt_stop(&t->s[i].e);
    }
    g_free(t->m.mem4k);
    g_free(t->m.mem2m);
}

static bool diff_run(Diff *t)
{
    for (t->op = 0; t->op < t->nops; t->op++) {
        uint32_t r = rn(t, 100);
        int64_t t0 = g_get_monotonic_time();

        if (r < 30) {
            op_map(t);
            t->t_map += g_get_monotonic_time() - t0;
        } else if (r < 45) {
            if (!op_invalidate(t)) {
                return false;
            }
            t->t_inv += g_get_monotonic_time() - t0;
        } else if (r < 48) {
            op_move(t);
        } else {
            if (!op_dma(t)) {
                return false;
            }
            t->t_dma += g_get_monotonic_time() - t0;
        }
        if (t->op % 1000 == 999 && !check_memory(t)) {
            return false;
        }
    }
    return check_memory(t);
}

static uint64_t base_seed;

static void test_diff(const void *data)
{
    Diff *t = g_new0(Diff, 1);
    const char *ops = getenv("VIOMMU_DIFF_OPS");

    t->seed = base_seed + (uintptr_t)data;
    t->rng = t->seed;
    t->nops = ops ? strtoul(ops, NULL, 0) : DEF_OPS;
    t->verbose = getenv("VIOMMU_DIFF_VERBOSE") != NULL;
    t->name[0] = "viommu-vtd";
    t->name[1] = "intel-iommu";
    g_test_message("seed 0x%" PRIx64 " (VIOMMU_SEED=0x%" PRIx64 "), %u ops",
                   t->seed, t->seed, t->nops);
    diff_setup(t);
    if (diff_run(t)) {
        g_test_message("%u DMA (%u faulting), %u map changes, %u "
                       "invalidations, %u domain moves, %u rejected",
                       t->n_dma, t->n_fault, t->n_map, t->n_inv, t->n_ctx,
                       t->n_reject);
        g_test_message("time: DMA %" PRId64 " ms, maps %" PRId64 " ms, "
                       "invalidations %" PRId64 " ms", t->t_dma / 1000,
                       t->t_map / 1000, t->t_inv / 1000);
        g_assert_cmpuint(t->n_dma, >, t->nops / 4);
        g_assert_cmpuint(t->n_fault, >, 0);
        g_assert_cmpuint(t->n_fault, <, t->n_dma);
    }
    diff_teardown(t);
    g_free(t);
}

int main(int argc, char **argv)
{
    const char *s = getenv("VIOMMU_SEED");
    int nseq = NSEQ;

    g_test_init(&argc, &argv, NULL);
    if (!vt_have_device("viommu-vtd") || !vt_have_device("intel-iommu")) {
        g_test_message("needs both viommu-vtd and intel-iommu");
        return g_test_run();
    }
    if (s && *s) {
        base_seed = strtoull(s, NULL, 0);
        nseq = 1;               /* reproduce exactly that sequence */
    } else {
        base_seed = g_random_int() | (uint64_t)g_random_int() << 32;
    }
    for (int i = 0; i < nseq; i++) {
        g_autofree char *path = g_strdup_printf("/viommu/diff/random-%d", i);
        qtest_add_data_func(path, (void *)(uintptr_t)i, test_diff);
    }
    return g_test_run();
}
