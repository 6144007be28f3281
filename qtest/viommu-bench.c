/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Translated-DMA throughput of viommu-vtd and intel-iommu, driven by
 * viommu-dma through qtest (/viommu/bench/dma-throughput), and the cost of
 * each invalidation kind (/viommu/bench/invalidation-cost, described
 * further down).  Not a test: it prints figures (see docs/qtest-bench.rst
 * and docs/performance.rst).
 *
 * Both machines run in the same process, batches interleaved, so both see
 * the same host load.  For every row a working set of W 4K IOVA pages is
 * mapped in one domain (sequential or random page order; before each
 * batch nothing, a domain-selective or 64 page-selective IOTLB
 * invalidations).  A batch is NQ rings of 4095 COPY descriptors each
 * (default 1 KiB, reading one working-set page and writing another), all
 * started by back-to-back doorbells, so the device runs NQ * 4095
 * descriptors without a qtest round trip in between.  Only the device's
 * processing is timed: from the first doorbell to every HEAD reaching its
 * TAIL (descriptors are written and invalidations done before).
 *
 * Per row: the median batch of each device, as descriptors/s, translated
 * DMA MB/s and IOMMU translations/s (ring fetch + status write + one per
 * page-bounded data chunk each way), and the ratio viommu-vtd/intel-iommu.
 *
 * $VIOMMU_BENCH_BATCHES  timed batches per row (default 7)
 * $VIOMMU_BENCH_PAGES    only rows with this working set (pages)
 * $VIOMMU_BENCH_INV      only rows with this invalidation (none, dom, page)
 * $VIOMMU_BENCH_LEN      bytes per descriptor (default 1024, max 65536)
 * $VIOMMU_BENCH_VTD_OPTS options for viommu-vtd, e.g. ",iotlb-entries=4096"
 * $VIOMMU_BENCH_BASELINE_VTD_OPTS  compare against viommu-vtd with these
 *                        options instead of intel-iommu, e.g.
 *                        ",x-ram-cache=off" (the "int" columns are then
 *                        that machine's)
 *
 * Besides wall-clock time, each row reports the device's own CPU time per
 * descriptor (viommu-dma's BH_NS: the thread CPU time of its bottom half,
 * i.e. descriptor fetch, translations, memory core and copies, without the
 * main loop, the qtest polling or other host work) and its ratio
 * intel-iommu/viommu-vtd (cpu-r, above 1: viommu-vtd cheaper).
 *
 * The last column is viommu-vtd's page walks per 1000 translations during
 * the timed batches (from its statistics): 0 means every translation hit.
 */
#include "qemu/osdep.h"
#include <math.h>
#include <sched.h>

#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "qapi/error.h"
#include "viommu-test-env.h"

#define RING        4096
#define BATCH       (RING - 1)
#define NQ          3                   /* queues 1..3; 0 belongs to vt_start */
#define NPAGEINV    64                  /* page-selective invalidations */
#define WIN         0x100000000ULL      /* IOVA window at 4 GiB, 1 GiB */
#define NFRAMES     512
#define MAXLEN      65536
#define XFER_CHUNK  (64 * 1024)

static const char *const iommus[] = { "viommu-vtd", "intel-iommu" };

typedef struct Mach {
    VtEnv e;
    VtdDomain *d;
    uint64_t ring[NQ];
    uint64_t frames;
    uint64_t l2;                        /* level-2 table of the window */
    uint64_t l1[128];                   /* up to 64K pages */
    int mapped;                         /* pages mapped so far */
} Mach;

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void big_write(QTestState *qts, uint64_t gpa, const uint8_t *p,
                      size_t len)
{
    for (size_t o = 0; o < len; o += XFER_CHUNK) {
        qtest_bufwrite(qts, gpa + o, p + o, MIN(XFER_CHUNK, len - o));
    }
}

static void mach_start(Mach *m, const char *iommu, const char *opts)
{
    VtdGuest *g;
    VdmaDev *dev;

    memset(m, 0, sizeof(*m));
    vt_start(&m->e, iommu, opts, 1, 512, NULL);
    g = &m->e.g;
    dev = &m->e.dma[0];
    vtd_set_root_table(g);
    vtd_qi_enable(g, 0);
    m->d = vtd_domain_new(g, 1, 4);
    vt_map_rings(&m->e, m->d, 0);
    for (int q = 0; q < NQ; q++) {
        m->ring[q] = vtd_alloc(g, RING * VIOMMU_DMA_DESC_SIZE, 4096);
        vtd_map(m->d, m->ring[q], m->ring[q], RING * VIOMMU_DMA_DESC_SIZE,
                VTD_PTE_RW, VTD_PAGE_4K);
    }
    m->frames = vtd_alloc(g, NFRAMES * 4096ULL, 4096);
    vtd_map(m->d, WIN, m->frames, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    m->l2 = vtd_pte_gpa(m->d, WIN, 2);
    g_assert(m->l2);
    vtd_attach(m->d, vt_sid(0));
    vtd_flush_all(g);
    vtd_enable_translation(g);
    for (int q = 0; q < NQ; q++) {
        g_assert_true(vdma_queue_setup(dev, q + 1, m->ring[q], m->ring[q],
                                       RING));
    }
}

/* map IOVA pages [0, pages) of the window, page i -> frame i % NFRAMES */
static void mach_map(Mach *m, int pages)
{
    QTestState *qts = m->e.qts;
    uint64_t tbl[512];

    int need = MAX(pages, 512) / 512;

    for (int t = m->mapped / 512; t < need; t++) {
        m->l1[t] = vtd_alloc(&m->e.g, 4096, 4096);
        for (int i = 0; i < 512; i++) {
            uint64_t page = t * 512 + i;
            tbl[i] = cpu_to_le64((m->frames + (page % NFRAMES) * 4096) |
                                 VTD_PTE_RW);
        }
        big_write(qts, m->l1[t], (uint8_t *)tbl, sizeof(tbl));
        qtest_writeq(qts, m->l2 + t * 8, m->l1[t] | VTD_PTE_RW);
    }
    m->mapped = MAX(m->mapped, need * 512);
    vtd_flush_all(&m->e.g);
}

static uint32_t xlen = 1024;            /* bytes per descriptor */

/* descriptor i of queue q copies src[q][i] to dst[q][i] (page numbers) */
static void write_rings(Mach *m, uint32_t src[NQ][RING], uint32_t dst[NQ][RING])
{
    g_autofree uint8_t *buf = g_malloc0(RING * VIOMMU_DMA_DESC_SIZE);

    for (int q = 0; q < NQ; q++) {
        for (int i = 0; i < RING; i++) {
            uint8_t *d = buf + i * VIOMMU_DMA_DESC_SIZE;
            d[VIOMMU_DMA_DESC_OP] = VIOMMU_DMA_OP_COPY;
            stl_le_p(d + VIOMMU_DMA_DESC_LEN, xlen);
            stq_le_p(d + VIOMMU_DMA_DESC_SRC, WIN + src[q][i] * 4096ULL);
            stq_le_p(d + VIOMMU_DMA_DESC_DST,
                     WIN + dst[q][i] * 4096ULL + 2048);
        }
        big_write(m->e.qts, m->ring[q], buf, RING * VIOMMU_DMA_DESC_SIZE);
    }
}

/*
 * IOMMU translations per descriptor: the descriptor fetch, the status
 * write, and per data chunk one for the read and one for the write
 * (viommu-dma splits at every 4 KiB boundary of either address, and the
 * memory core translates every access once per IOMMU page).
 */
static unsigned translations_per_desc(void)
{
    uint64_t src = 0, dst = 2048;
    unsigned chunks = 0;

    for (uint32_t off = 0; off < xlen; chunks++) {
        uint32_t n = MIN(xlen - off, 4096 - ((dst + off) & 4095));
        n = MIN(n, 4096 - ((src + off) & 4095));
        off += n;
    }
    return 2 + 2 * chunks;
}

#define POLL_NS         (10 * 1000000000LL)

/*
 * Make n[q] more descriptors available on each queue q + 1 (a ring of
 * size[q] slots) with back-to-back doorbells and wait until the device
 * has completed them.  Returns the wall-clock ns from the first doorbell,
 * or -1 with a message if a queue halted, a descriptor failed or POLL_NS
 * passed.
 */
static int64_t rings_run(Mach *m, const uint32_t n[NQ], const uint32_t size[NQ])
{
    VdmaDev *dev = &m->e.dma[0];
    uint32_t tail[NQ], errs[NQ];
    int64_t t0, deadline;

    for (int q = 0; q < NQ; q++) {
        uint32_t qb = VIOMMU_DMA_Q_BASE(q + 1);

        tail[q] = (vdma_reg_read(dev, qb + VIOMMU_DMA_Q_HEAD) + n[q]) % size[q];
        errs[q] = vdma_reg_read(dev, qb + VIOMMU_DMA_Q_ERRS);
    }
    t0 = g_get_monotonic_time();
    deadline = t0 + POLL_NS / 1000;
    for (int q = 0; q < NQ; q++) {
        if (n[q]) {
            vdma_reg_write(dev, VIOMMU_DMA_Q_BASE(q + 1) + VIOMMU_DMA_Q_TAIL,
                           tail[q]);
        }
    }
    /* the queues are served round-robin: the last one finishes last */
    for (int q = NQ - 1; q >= 0; q--) {
        uint32_t qb = VIOMMU_DMA_Q_BASE(q + 1);

        while (vdma_reg_read(dev, qb + VIOMMU_DMA_Q_HEAD) != tail[q]) {
            if (vdma_reg_read(dev, qb + VIOMMU_DMA_Q_STATUS) &
                VIOMMU_DMA_QSTS_HALTED) {
                g_test_message("%s: viommu-dma queue %d halted", m->e.iommu,
                               q + 1);
                return -1;
            }
            if (g_get_monotonic_time() > deadline) {
                g_test_message("%s: viommu-dma queue %d did not finish",
                               m->e.iommu, q + 1);
                return -1;
            }
            g_usleep(20);   /* leave the main loop to the device */
        }
    }
    t0 = g_get_monotonic_time() - t0;
    /* every descriptor must have succeeded: no faults in the figures */
    for (int q = 0; q < NQ; q++) {
        if (vdma_reg_read(dev, VIOMMU_DMA_Q_BASE(q + 1) +
                          VIOMMU_DMA_Q_ERRS) != errs[q]) {
            g_test_message("%s: viommu-dma descriptors failed on queue %d",
                           m->e.iommu, q + 1);
            return -1;
        }
    }
    return t0 * 1000;
}

/*
 * Run one batch (NQ rings of BATCH descriptors); returns the wall-clock ns
 * and stores in *cpu_ns the device's own CPU time for it (BH_NS).
 */
static int64_t run_batch(Mach *m, int64_t *cpu_ns)
{
    VdmaDev *dev = &m->e.dma[0];
    uint64_t cpu0 = vdma_counter(dev, VIOMMU_DMA_REG_BH_NS);
    uint32_t n[NQ], size[NQ];
    int64_t ns;

    for (int q = 0; q < NQ; q++) {
        n[q] = BATCH;
        size[q] = RING;
    }
    ns = rings_run(m, n, size);
    g_assert_cmpint(ns, >=, 0);
    *cpu_ns = vdma_counter(dev, VIOMMU_DMA_REG_BH_NS) - cpu0;
    return ns;
}

/* viommu-vtd's translate.page_walks, or 0 for intel-iommu (no statistics) */
static uint64_t vtd_walks(Mach *m)
{
    QDict *resp, *stats, *tr;
    uint64_t n;

    resp = qtest_qmp(m->e.qts, "{'execute': 'qom-get', 'arguments': "
                     "{'path': '/machine/peripheral/vtd0', "
                     "'property': 'stats'}}");
    g_assert(qdict_haskey(resp, "return"));
    stats = qobject_to(QDict, qobject_from_json(qdict_get_str(resp, "return"),
                                                &error_abort));
    tr = qdict_get_qdict(stats, "translate");
    n = qdict_get_int(tr, "page_walks");
    qobject_unref(stats);
    qobject_unref(resp);
    return n;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

enum { INV_NONE, INV_DOMAIN, INV_PAGES, INV_KINDS };
static const char *const inv_names[] = { "none", "dom", "page" };

/*
 * One row: batches alternate between the machines (same descriptors on
 * both) so host noise hits both alike; the figure is the median batch,
 * in descriptors per second.
 */
static void run_row(Mach *m, int pages, bool random, int inv, int batches,
                    double tp[2], double cpu[2], uint64_t *walks)
{
    static uint32_t src[NQ][RING], dst[NQ][RING];
    uint32_t seq = 0;
    g_autofree int64_t *ns0 = g_new(int64_t, batches);
    g_autofree int64_t *ns1 = g_new(int64_t, batches);
    g_autofree int64_t *cpu0 = g_new(int64_t, batches);
    g_autofree int64_t *cpu1 = g_new(int64_t, batches);
    int64_t *ns[2] = { ns0, ns1 };
    int64_t *cns[2] = { cpu0, cpu1 };
    /* long descriptors run past their first page: stay inside the set */
    uint32_t span = (xlen + 2048 + 4095) / 4096;
    uint32_t range = pages > span ? pages - span + 1 : 1;
    int warm = 1 + range / (2 * NQ * BATCH);

    for (int i = 0; i < 2; i++) {
        mach_map(&m[i], MAX(pages, span));
    }
    /*
     * Warm-up batches (b < 0) walk the whole working set in order, so the
     * timed batches measure the steady state, not first touches.
     */
    for (int b = -warm; b < batches; b++) {
        uint64_t inv_pages[NPAGEINV];

        for (int q = 0; q < NQ; q++) {
            for (int i = 0; i < RING; i++) {
                if (random && b >= 0) {
                    src[q][i] = rnd() % range;
                    dst[q][i] = rnd() % range;
                } else {
                    src[q][i] = seq % range;
                    dst[q][i] = (seq + range / 2) % range;
                    seq++;
                }
            }
        }
        for (int k = 0; k < NPAGEINV; k++) {
            inv_pages[k] = rnd() % range;
        }
        if (b == 0) {
            *walks = vtd_walks(&m[0]);
        }
        for (int i = 0; i < 2; i++) {
            int64_t t, c;

            write_rings(&m[i], src, dst);
            if (inv == INV_DOMAIN) {
                vtd_flush_domain(&m[i].e.g, 1);
            } else if (inv == INV_PAGES) {
                for (int k = 0; k < NPAGEINV; k++) {
                    vtd_flush_page(&m[i].e.g, 1, WIN + inv_pages[k] * 4096, 0);
                }
            }
            t = run_batch(&m[i], &c);
            if (b >= 0) {
                ns[i][b] = t;
                cns[i][b] = c;
            }
        }
    }
    *walks = vtd_walks(&m[0]) - *walks;
    for (int i = 0; i < 2; i++) {
        qsort(ns[i], batches, sizeof(int64_t), cmp_i64);
        qsort(cns[i], batches, sizeof(int64_t), cmp_i64);
        tp[i] = (double)NQ * BATCH / (ns[i][batches / 2] / 1e9);
        cpu[i] = (double)cns[i][batches / 2] / (NQ * BATCH);
    }
}

static void bench(void)
{
    static const int sets[] = { 64, 256, 1024, 2048, 4096, 16384, 65536 };
    const char *b = getenv("VIOMMU_BENCH_BATCHES");
    const char *only = getenv("VIOMMU_BENCH_PAGES");
    const char *only_inv = getenv("VIOMMU_BENCH_INV");
    const char *len = getenv("VIOMMU_BENCH_LEN");
    const char *vopts = getenv("VIOMMU_BENCH_VTD_OPTS");
    const char *bopts = getenv("VIOMMU_BENCH_BASELINE_VTD_OPTS");
    g_autofree char *opts = g_strdup_printf(",id=vtd0%s", vopts ? vopts : "");
    const char *base[2] = { iommus[0], bopts ? "viommu-vtd" : iommus[1] };
    int batches = MAX(b ? atoi(b) : 7, 1);
    unsigned tpd;
    Mach m[2];
    /* [0]: wall clock, [1]: device CPU time */
    double geo[2] = { 0 }, geo_big[2] = { 0 }, worst_big[2] = { INFINITY,
                                                             INFINITY };
    int rows = 0, rows_big = 0;

    if (len) {
        xlen = CLAMP(atoi(len), 1, MAXLEN);
    }
    tpd = translations_per_desc();
    rng_state = 1;
    for (int i = 0; i < 2; i++) {
        mach_start(&m[i], base[i], i ? bopts : opts);
    }
    printf("# viommu-dma COPY %u B/descriptor, %d x %d descriptors per "
           "batch, median of %d batches per row\n", xlen, NQ, BATCH, batches);
    printf("# %u IOMMU translations per descriptor; vtd = viommu-vtd%s, "
           "int = %s%s\n", tpd, vopts ? vopts : "", base[1],
           bopts ? bopts : "");
    printf("# wall clock: desc/s, MB/s, Mt/s (translations), ratio; device "
           "CPU time: ns/desc, cpu-r\n");
    printf("%-6s %-4s %-4s %10s %10s %8s %8s %7s %7s %6s %6s %6s %6s %6s\n",
           "pages", "ord", "inv", "vtd-desc/s", "int-desc/s", "vtd-MB/s",
           "int-MB/s", "vtd-Mt/s", "int-Mt/s", "ratio", "vtd-ns", "int-ns",
           "cpu-r", "walk/k");
    for (int s = 0; s < ARRAY_SIZE(sets); s++) {
        if (only && atoi(only) != sets[s]) {
            continue;
        }
        for (int r = 0; r < 2; r++) {
            for (int inv = 0; inv < INV_KINDS; inv++) {
                double tp[2], cpu[2], ratio[2];
                uint64_t walks = 0;

                if (only_inv && strcmp(only_inv, inv_names[inv])) {
                    continue;
                }

                run_row(m, sets[s], r, inv, batches, tp, cpu, &walks);
                ratio[0] = tp[0] / tp[1];
                ratio[1] = cpu[1] / cpu[0];
                printf("%-6d %-4s %-4s %10.0f %10.0f %8.1f %8.1f %7.2f %7.2f "
                       "%6.2f %6.0f %6.0f %6.2f %6.1f\n", sets[s],
                       r ? "rand" : "seq", inv_names[inv], tp[0], tp[1],
                       tp[0] * xlen / 1e6, tp[1] * xlen / 1e6,
                       tp[0] * tpd / 1e6, tp[1] * tpd / 1e6, ratio[0],
                       cpu[0], cpu[1], ratio[1],
                       walks * 1000.0 / ((double)batches * NQ * BATCH * tpd));
                fflush(stdout);
                rows++;
                if (sets[s] > 1024) {
                    rows_big++;
                }
                for (int k = 0; k < 2; k++) {
                    geo[k] += log(ratio[k]);
                    if (sets[s] > 1024) {
                        geo_big[k] += log(ratio[k]);
                        worst_big[k] = MIN(worst_big[k], ratio[k]);
                    }
                }
            }
        }
    }
    if (!rows) {
        printf("# no row matches VIOMMU_BENCH_PAGES (64, 256, 1024, 2048, "
               "4096, 16384, 65536) and VIOMMU_BENCH_INV (none, dom, page)\n");
        g_test_fail();
    }
    for (int k = 0; k < 2; k++) {
        const char *what = k ? "device CPU time" : "wall clock";

        if (rows) {
            printf("# %s: geometric mean ratio %s/%s: %.2f "
                   "(%d rows)\n", what, base[0], bopts ? "baseline" : base[1],
                   exp(geo[k] / rows), rows);
        }
        if (rows_big) {
            printf("# %s: geometric mean ratio, working sets above 1024 "
                   "pages: %.2f (%d rows), worst row %.2f\n", what,
                   exp(geo_big[k] / rows_big), rows_big, worst_big[k]);
        }
    }
    for (int i = 0; i < 2; i++) {
        g_free(m[i].d);
        vt_stop(&m[i].e);
    }
}

/*
 * Invalidation cost through QEMU (/viommu/bench/invalidation-cost).
 *
 * Each working set of P pages has its own viommu-vtd and intel-iommu
 * machines, all four run in turn.  Before every timed invalidation, the
 * machine translates the P pages, so that it faces a full IOTLB: COPY
 * descriptors of 64 bytes straddling page pairs (source pages 4i, 4i+1,
 * destination 4i+2, 4i+3) on queues 1 and 2.  viommu-vtd keeps all P.
 * intel-iommu empties its IOTLB when an insertion finds 1024 entries, so
 * what it holds after the working set depends on where that happened:
 * queue 3 then runs a top-up over TOPUP_PAGES pages three times, from a
 * ring of 8 pages.  A run that empties the table is followed by one that
 * cannot (at most 1000 + 8 keys), so the table ends with the top-up pages
 * and at least one ring page: 1001-1024 entries.
 *
 * The timed part is one IQT write (qtest) that makes the IOMMU process an
 * invalidation descriptor and a status-write wait descriptor, both written
 * to the queue beforehand.  Both IOMMUs process the queue synchronously in
 * the MMIO write, on QEMU's main thread, which also serves qtest; a qtest
 * round trip costs more than most invalidations, so the figure is that
 * thread's CPU time (schedstat) across the write, minus the same for a
 * submission of the wait descriptor alone in the same repetition.  This
 * process and all the main threads share one CPU (inv_pin).
 */
#define INV_SETS        2               /* working sets, 1024 and 16384 */
#define INV_PAGES_MAX   16384           /* P / 8 descriptors per queue */
#define INV_REPS        101
#define TOPUP_PAGES     1000            /* 250 descriptors */
#define TOPUP_DESCS     256             /* 250 + 6 repeated */
#define TOPUP_RING      512             /* queue 3: 8 ring pages */

enum {
    IK_WAIT, IK_IOTLB_GLOBAL, IK_IOTLB_DOMAIN, IK_IOTLB_PAGE, IK_IOTLB_AM9,
    IK_CC_GLOBAL, IK_KINDS
};
static const char *const ik_names[] = {
    "wait", "iotlb-glob", "iotlb-dom", "iotlb-page", "iotlb-am9", "cc-glob",
};

typedef struct ThreadClock {
    int sched_fd, stat_fd;
} ThreadClock;

static bool proc_read(int fd, char *buf, size_t size)
{
    ssize_t n = pread(fd, buf, size - 1, 0);

    if (n <= 0) {
        return false;
    }
    buf[n] = 0;
    return true;
}

static bool tclock_open(ThreadClock *c, pid_t pid)
{
    g_autofree char *sched = g_strdup_printf("/proc/%d/task/%d/schedstat",
                                             pid, pid);
    g_autofree char *stat = g_strdup_printf("/proc/%d/task/%d/stat", pid, pid);

    c->sched_fd = open(sched, O_RDONLY);
    c->stat_fd = open(stat, O_RDONLY);
    if (c->sched_fd < 0 || c->stat_fd < 0) {
        g_test_message("cannot open %s or %s: %s", sched, stat,
                       strerror(errno));
        return false;
    }
    return true;
}

static void tclock_close(ThreadClock *c)
{
    if (c->sched_fd >= 0) {
        close(c->sched_fd);
    }
    if (c->stat_fd >= 0) {
        close(c->stat_fd);
    }
}

/*
 * The thread's CPU time (schedstat's first field, ns).  The kernel brings
 * it up to date when the thread is switched out, not while it runs, and
 * QEMU may still be finishing its main-loop iteration after the qtest
 * reply: take the value only when the thread was asleep between two
 * identical reads (pcount, the third field, counts its runs).
 */
static bool tclock_read(ThreadClock *c, uint64_t *ns)
{
    char a[128], b[128], st[1024];

    for (int i = 0; i < 100000; i++) {
        const char *p;

        if (!proc_read(c->sched_fd, a, sizeof(a)) ||
            !proc_read(c->stat_fd, st, sizeof(st)) ||
            !proc_read(c->sched_fd, b, sizeof(b))) {
            g_test_message("reading QEMU's schedstat failed: %s",
                           strerror(errno));
            return false;
        }
        p = strrchr(st, ')');
        if (p && p[1] == ' ' && p[2] == 'S' && !strcmp(a, b)) {
            *ns = g_ascii_strtoull(a, NULL, 10);
            return true;
        }
        if (i > 16) {
            g_usleep(10);
        }
    }
    g_test_message("QEMU's main thread never went to sleep");
    return false;
}

static uint32_t inv_ring_size(int q)
{
    return q == NQ - 1 ? TOPUP_RING : RING;
}

/* fill every slot of queue q's ring; slot s does descriptor s % period */
static void inv_write_ring(Mach *m, int q, int period, uint32_t first,
                           uint32_t npages)
{
    uint32_t size = inv_ring_size(q);
    g_autofree uint8_t *buf = g_malloc0(size * VIOMMU_DMA_DESC_SIZE);

    for (int s = 0; s < size; s++) {
        uint8_t *d = buf + s * VIOMMU_DMA_DESC_SIZE;
        uint64_t page = first + (4ULL * (s % period)) % npages;

        /* 64 bytes across pages page, page+1 to page+2, page+3 */
        d[VIOMMU_DMA_DESC_OP] = VIOMMU_DMA_OP_COPY;
        stl_le_p(d + VIOMMU_DMA_DESC_LEN, 64);
        stq_le_p(d + VIOMMU_DMA_DESC_SRC, WIN + page * 4096 + 4064);
        stq_le_p(d + VIOMMU_DMA_DESC_DST, WIN + (page + 2) * 4096 + 4064);
    }
    big_write(m->e.qts, m->ring[q], buf, size * VIOMMU_DMA_DESC_SIZE);
}

/* run n[q] descriptors on each queue q + 1; false (and a message) on error */
static bool inv_run(Mach *m, const uint32_t n[NQ])
{
    uint32_t size[NQ];

    for (int q = 0; q < NQ; q++) {
        size[q] = inv_ring_size(q);
    }
    return rings_run(m, n, size) >= 0;
}

/* the working set, then the top-up three times (see above) */
static bool inv_populate(Mach *m, int pages)
{
    const uint32_t set[NQ] = { pages / 8, pages / 8, 0 };
    const uint32_t topup[NQ] = { 0, 0, TOPUP_DESCS };

    return inv_run(m, set) && inv_run(m, topup) && inv_run(m, topup) &&
           inv_run(m, topup);
}

/*
 * One timed submission: desc (none for IK_WAIT) and a status-write wait
 * are queued, then IQT is written.  Returns the main thread's CPU time
 * for the write in *ns; the wait must be complete when the write returns.
 */
static bool inv_timed(Mach *m, ThreadClock *c, int kind, VtdDesc desc,
                      uint64_t *ns)
{
    VtdGuest *g = &m->e.g;
    uint32_t seq;
    uint64_t t0, t1;
    int64_t deadline;

    /*
     * An untimed wait-only submission first: whatever ran before (another
     * machine, a larger working set) leaves the qtest and queue paths
     * equally warm for every kind.
     */
    if (!vtd_qi_sync(g)) {
        g_test_message("%s: wait descriptor failed (%s)", m->e.iommu,
                       ik_names[kind]);
        return false;
    }
    seq = ++g->wait_seq;
    qtest_writel(g->qts, g->wait_status, 0);
    if (kind != IK_WAIT) {
        vtd_qi_push(g, desc);
    }
    vtd_qi_push(g, vtd_desc_wait(true, false, false, seq, g->wait_status));
    if (!tclock_read(c, &t0)) {
        return false;
    }
    vtd_qi_kick(g);
    if (!tclock_read(c, &t1)) {
        return false;
    }
    *ns = t1 - t0;
    if (qtest_readl(g->qts, g->wait_status) == seq) {
        return true;
    }
    /* the timed write did not cover the processing: find out why */
    deadline = g_get_monotonic_time() + POLL_NS / 1000;
    while (qtest_readl(g->qts, g->wait_status) != seq) {
        if (vtd_readl(g, VTD_FSTS) & VTD_FSTS_IQE) {
            g_test_message("%s: invalidation queue error (%s)", m->e.iommu,
                           ik_names[kind]);
            return false;
        }
        if (g_get_monotonic_time() > deadline) {
            g_test_message("%s: wait descriptor never completed (%s)",
                           m->e.iommu, ik_names[kind]);
            return false;
        }
        g_usleep(20);
    }
    g_test_message("%s: the queue completed after the IQT write returned: "
                   "the figures would miss that work", m->e.iommu);
    return false;
}

/*
 * Median of v (sorted in place) and in *half the half-width of its
 * distribution-free 95% confidence interval: order statistics
 * n/2 -+ 0.98 sqrt(n).
 */
static double median_ci(int64_t *v, int n, double *half)
{
    int d = ceil(0.98 * sqrt(n));
    int lo = MAX(n / 2 - d, 0), hi = MIN(n / 2 + d, n - 1);

    qsort(v, n, sizeof(*v), cmp_i64);
    *half = (v[hi] - v[lo]) / 2.0;
    return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* map and write the rings of one machine, and translate its working set */
static bool inv_setup(Mach *m, int pages)
{
    mach_map(m, pages);
    if (!vdma_queue_setup(&m->e.dma[0], NQ, m->ring[NQ - 1], m->ring[NQ - 1],
                          TOPUP_RING)) {
        g_test_message("%s: viommu-dma queue %d setup failed", m->e.iommu,
                       NQ);
        return false;
    }
    inv_write_ring(m, 0, pages / 8, 0, pages);
    inv_write_ring(m, 1, pages / 8, pages / 2, pages);
    inv_write_ring(m, 2, TOPUP_DESCS, 0, TOPUP_PAGES);
    /* first touches happen here, not in the timed repetitions */
    return inv_populate(m, pages);
}

static VtdDesc inv_desc(int kind, int pages)
{
    uint64_t page = rnd() % pages, block = rnd() % (pages / 512);

    switch (kind) {
    case IK_IOTLB_GLOBAL:
        return vtd_desc_iotlb(VTD_GRAN_GLOBAL, 0, 0, 0, false);
    case IK_IOTLB_DOMAIN:
        return vtd_desc_iotlb(VTD_GRAN_DOMAIN, 1, 0, 0, false);
    case IK_IOTLB_PAGE:
        return vtd_desc_iotlb(VTD_GRAN_PAGE, 1, WIN + page * 4096, 0, false);
    case IK_IOTLB_AM9:
        return vtd_desc_iotlb(VTD_GRAN_PAGE, 1, WIN + block * VTD_PAGE_2M, 9,
                              false);
    case IK_CC_GLOBAL:
        return vtd_desc_cc(VTD_GRAN_GLOBAL, 0, 0, 0);
    }
    return (VtdDesc) { 0, 0 };
}

/*
 * Pin this process and the QEMU main threads of n machines to one CPU
 * (want: that CPU, -1: none, -2: the last one this process may use).
 * Other work on the host then disturbs all machines alike, not the one
 * that happens to share its CPU; and the CPU does not go idle between a
 * qtest command and QEMU's processing of it.  (On the VM this was written
 * on, QEMU woken on an idle CPU took twice the CPU time for the same work;
 * unpinned, the two wait-only rows differed by up to 2.5x.)  *saved
 * receives this process's affinity.  Returns the CPU, or -1.
 */
static int inv_pin(Mach *m, int n, int want, cpu_set_t *saved)
{
    cpu_set_t set;
    int cpu = want;

    if (want == -1 || sched_getaffinity(0, sizeof(*saved), saved)) {
        return -1;
    }
    if (want == -2) {
        for (int i = 0; i < CPU_SETSIZE; i++) {
            if (CPU_ISSET(i, saved)) {
                cpu = i;
            }
        }
    }
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    for (int i = 0; i < n; i++) {
        if (sched_setaffinity(qtest_pid(m[i].e.qts), sizeof(set), &set)) {
            g_test_message("cannot pin QEMU to CPU %d: %s", cpu,
                           strerror(errno));
            return -1;
        }
    }
    if (sched_setaffinity(0, sizeof(set), &set)) {
        g_test_message("cannot pin the benchmark to CPU %d: %s", cpu,
                       strerror(errno));
    }
    return cpu;
}

/*
 * Every working set has its own pair of machines (m[2 * set + device]);
 * repetitions go through all sets, kinds and devices in turn, so all see
 * the same host load.  The CPU times land in
 * ns[((2 * set + device) * IK_KINDS + kind) * reps + repetition].
 */
static bool inv_measure(Mach *m, ThreadClock *c, const int *set, int nsets,
                        int reps, int64_t *ns)
{
    for (int i = 0; i < 2 * nsets; i++) {
        if (!inv_setup(&m[i], set[i / 2])) {
            return false;
        }
    }
    for (int r = 0; r < reps; r++) {
        int order[IK_KINDS];

        /* a new order every time: no kind always follows the same one */
        for (int k = 0; k < IK_KINDS; k++) {
            int j = rnd() % (k + 1);

            order[k] = order[j];
            order[j] = k;
        }
        for (int s = 0; s < nsets; s++) {
            for (int o = 0; o < IK_KINDS; o++) {
                int k = order[o];
                VtdDesc desc = inv_desc(k, set[s]);

                for (int j = 0; j < 2; j++) {
                    int i = 2 * s + (r & 1 ? 1 - j : j);
                    uint64_t t;

                    if (!inv_populate(&m[i], set[s]) ||
                        !inv_timed(&m[i], &c[i], k, desc, &t)) {
                        return false;
                    }
                    ns[(i * IK_KINDS + k) * reps + r] = t;
                }
            }
        }
    }
    return true;
}

static void bench_invalidation(void)
{
    static const int sets[INV_SETS] = { 1024, 16384 };
    const char *only = getenv("VIOMMU_BENCH_INV_PAGES");
    const char *r = getenv("VIOMMU_BENCH_INV_REPS");
    const char *cpu_env = getenv("VIOMMU_BENCH_INV_CPU");
    const char *vopts = getenv("VIOMMU_BENCH_VTD_OPTS");
    g_autofree char *opts = g_strdup_printf(",id=vtd0%s", vopts ? vopts : "");
    int reps = MAX(r ? atoi(r) : INV_REPS, 1);
    int nsets = INV_SETS, cpu;
    int set[INV_SETS];
    ThreadClock c[2 * INV_SETS];
    Mach m[2 * INV_SETS];
    g_autofree int64_t *ns = NULL;
    cpu_set_t affinity;
    bool ok = true;

    if (only) {
        int p = atoi(only);

        if (p < 1024 || p > INV_PAGES_MAX || (p & (p - 1))) {
            g_test_message("VIOMMU_BENCH_INV_PAGES must be a power of 2 "
                           "from 1024 to %d", INV_PAGES_MAX);
            g_test_fail();
            return;
        }
        set[0] = p;
        nsets = 1;
    } else {
        memcpy(set, sets, sizeof(sets));
    }
    ns = g_new(int64_t, 2 * nsets * IK_KINDS * reps);
    rng_state = 2;
    for (int i = 0; i < 2 * nsets; i++) {
        c[i] = (ThreadClock) { -1, -1 };
        mach_start(&m[i], iommus[i % 2], i % 2 ? NULL : opts);
        ok = ok && tclock_open(&c[i], qtest_pid(m[i].e.qts));
    }
    cpu = inv_pin(m, 2 * nsets, cpu_env ? atoi(cpu_env) : -2, &affinity);
    printf("# invalidation cost through QEMU: QEMU main-thread CPU time "
           "(schedstat) of one IQT write that runs one descriptor + a wait\n");
    printf("# before each: the P-page working set translated (intel-iommu "
           "keeps 1001-1024 entries); median of %d\n", reps);
    if (cpu >= 0) {
        printf("# this process and all QEMU main threads pinned to CPU "
               "%d\n", cpu);
    }
    printf("# vtd-ns, int-ns: ns per invalidation above the wait-only "
           "submission (row wait: that submission); +-: 95%% CI of the "
           "median\n");
    printf("# ratio = int-ns / vtd-ns (above 1: viommu-vtd cheaper; "
           "\">\": vtd-ns within its CI, bound from its upper end)\n");
    printf("%-6s %-10s %8s %6s %8s %6s %7s\n", "pages", "kind", "vtd-ns",
           "+-", "int-ns", "+-", "ratio");
    ok = ok && inv_measure(m, c, set, nsets, reps, ns);
    for (int s = 0; ok && s < nsets; s++) {
        double med[2][IK_KINDS], ci[2][IK_KINDS], sum[2] = { 0, 0 };
        int cheaper = 0;

        /*
         * Each repetition's wait-only submission is subtracted from the
         * same repetition's invalidations: slow changes of host load
         * cancel out.  The wait row is sorted last.
         */
        for (int i = 0; i < 2; i++) {
            int64_t *wait = &ns[(2 * s + i) * IK_KINDS * reps];

            for (int k = IK_KINDS - 1; k >= 0; k--) {
                int64_t *v = &wait[k * reps];

                for (int n = 0; k != IK_WAIT && n < reps; n++) {
                    v[n] -= wait[n];
                }
                med[i][k] = median_ci(v, reps, &ci[i][k]);
            }
        }
        for (int k = 0; k < IK_KINDS; k++) {
            char ratio[16];

            if (k == IK_WAIT || med[0][k] > ci[0][k]) {
                snprintf(ratio, sizeof(ratio), "%.2f", med[1][k] / med[0][k]);
            } else {
                double bound = med[1][k] / (MAX(med[0][k], 0) + ci[0][k]);

                snprintf(ratio, sizeof(ratio), bound < 10 ? ">%.1f" : ">%.0f",
                         bound);
            }
            printf("%-6d %-10s %8.0f %6.0f %8.0f %6.0f %7s\n", set[s],
                   ik_names[k], med[0][k], ci[0][k], med[1][k], ci[1][k],
                   ratio);
            if (k != IK_WAIT) {
                sum[0] += med[0][k];
                sum[1] += med[1][k];
                cheaper += med[0][k] < med[1][k];
            }
        }
        printf("# %d pages: one invalidation of each kind: viommu-vtd %.1f us, "
               "intel-iommu %.1f us (ratio %.2f); viommu-vtd cheaper in %d "
               "of %d kinds\n", set[s], sum[0] / 1000, sum[1] / 1000,
               sum[1] / sum[0], cheaper, IK_KINDS - 1);
    }
    fflush(stdout);
    if (!ok) {
        g_test_fail();
    }
    if (cpu >= 0) {
        sched_setaffinity(0, sizeof(affinity), &affinity);
    }
    for (int i = 0; i < 2 * nsets; i++) {
        tclock_close(&c[i]);
        g_free(m[i].d);
        vt_stop(&m[i].e);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!vt_have_device("viommu-vtd") || !vt_have_device("intel-iommu")) {
        printf("# needs both viommu-vtd and intel-iommu\n");
        return 0;
    }
    qtest_add_func("/viommu/bench/dma-throughput", bench);
    qtest_add_func("/viommu/bench/invalidation-cost", bench_invalidation);
    return g_test_run();
}
